//! `cmdgraph-bench memory`: memory planning on generated model-shaped graphs and on the
//! MiniMalloc benchmark instances, side by side with the lower bound, the naive sum and
//! DPC++'s exact-size reuse, and the planning time.

use cmdgraph_passes::memory::lifetimes::Problem;
use cmdgraph_passes::memory::parallel::Threads;
use cmdgraph_passes::memory::workloads::{intervals_text, parse_minimalloc_csv, Shape, Sizes, Spec};
use cmdgraph_passes::memory::{dpcpp, lower_bound, order, planner, DEFAULT_ALIGNMENT};
use std::path::Path;
use std::time::{Duration, Instant};

/// One workload's results.
pub struct Row {
    /// Workload name.
    pub name: String,
    /// Whether its sizes are mixed (the DPC++ target applies).
    pub mixed: bool,
    /// Allocations.
    pub allocs: usize,
    /// Conflicting pairs.
    pub conflicts: usize,
    /// Bytes: pool, bound, naive, DPC++.
    pub pool: u64,
    /// Lower bound in bytes.
    pub bound: u64,
    /// Naive sum in bytes.
    pub naive: u64,
    /// DPC++ exact-size reuse in bytes.
    pub dpcpp: u64,
    /// Planning: lifetimes + conflicts + placement (best of the runs), on the threads
    /// available.
    pub plan: Duration,
    /// The same on one thread, for inputs where the planner splits work (`None` otherwise:
    /// it would be the same run).
    pub plan_one: Option<Duration>,
    /// The lower bound's min-flow.
    pub bound_time: Duration,
    /// Which order won.
    pub strategy: String,
}

/// The generated workloads: (name, spec, whether sizes are mixed).
pub fn generated(max_allocs: usize) -> Vec<(String, Spec)> {
    let mixed = Sizes::Mixed { max_factor: 256 };
    let mut out = Vec::new();
    let mut add = |name: &str, shape: Shape, ops: usize, queues: usize, sizes: Sizes, seed: u64| {
        if ops <= max_allocs {
            out.push((format!("{name} {}", pow10(ops)), Spec { shape, ops, queues, base: 256, sizes, seed }));
        }
    };
    for (ops, seed) in [(100, 1), (1_000, 2), (10_000, 3), (100_000, 4)] {
        add("residual stack, 2 queues", Shape::LayerStack { skip: 3 }, ops, 2, mixed, seed);
    }
    for (ops, seed) in [(100, 5), (1_000, 6), (10_000, 7), (100_000, 8)] {
        add("encoder/decoder (U-Net)", Shape::EncoderDecoder { levels: 5 }, ops, 1, mixed, seed);
    }
    for (ops, seed) in [(100, 9), (1_000, 10), (10_000, 11), (100_000, 12)] {
        add("random DAG, 3 queues", Shape::RandomDag { window: 8 }, ops, 3, mixed, seed);
    }
    add("residual stack, uniform sizes", Shape::LayerStack { skip: 3 }, 1_000, 2, Sizes::Uniform, 13);
    out
}

fn pow10(n: usize) -> String {
    match n {
        100 => "10^2".into(),
        1_000 => "10^3".into(),
        10_000 => "10^4".into(),
        100_000 => "10^5".into(),
        _ => n.to_string(),
    }
}

/// Plans one problem `runs` times; the best time counts. Where the planner splits work over
/// threads, each run also plans on one thread, and the two plans must be identical.
pub fn measure(name: String, mixed: bool, text: &str, alignment: u64, runs: usize) -> Result<Row, String> {
    let module = cmdgraph_ir::text::parse(text).map_err(|d| format!("{name}: generated text does not parse: {d:?}"))?;
    let g = module.graph_by_name("g").ok_or_else(|| format!("{name}: no graph @g"))?;
    let graph = module.graphs.try_get(g).ok_or("bad graph handle")?;
    let all = Threads::available();
    let mut best = [Duration::MAX; 2];
    let mut result = None;
    let mut split = false;
    for _ in 0..runs.max(1) {
        for (k, threads) in [all, Threads::ONE].into_iter().enumerate() {
            if k == 1 && !split {
                continue;
            }
            let t = Instant::now();
            let problem = Problem::from_graph_with(graph, threads)?;
            let t1 = t.elapsed();
            let conflicts = order::conflicts_with(&problem, threads)?;
            let t2 = t.elapsed();
            // The planner stops searching at the lower bound; the bound then counts as
            // planning time. Above LARGE allocations the planner does not search, so it gets
            // no bound.
            let target = (problem.allocs.len() <= planner::LARGE)
                .then(|| lower_bound::lower_bound(&problem, &conflicts, &planner::units(&problem, alignment)));
            let placement = planner::plan_with(&problem, &conflicts, alignment, target, threads);
            best[k] = best[k].min(t.elapsed());
            eprintln!(
                "  {} thread(s): lifetimes {} ms, conflicts {} ms ({} chains with frees), bound (small inputs) + placement {} ms",
                threads.get(),
                ms(t1),
                ms(t2 - t1),
                conflicts.chains,
                ms(t.elapsed() - t2)
            );
            split = planner::splits(&problem, all);
            let run = (problem, conflicts, placement);
            if k == 0 {
                result = Some(run);
            } else if result.as_ref() != Some(&run) {
                return Err(format!("{name}: the plan on one thread differs from the plan on {}", all.get()));
            }
        }
    }
    let (problem, conflicts, placement) = result.ok_or("no run")?;
    let units = planner::units(&problem, alignment);
    let t = Instant::now();
    let bound = lower_bound::lower_bound(&problem, &conflicts, &units).saturating_mul(alignment);
    let bound_time = t.elapsed();
    let naive = units.iter().sum::<u64>().saturating_mul(alignment);
    let dpcpp = dpcpp::exact_size_reuse(&problem, &conflicts, alignment);
    Ok(Row {
        name,
        mixed,
        allocs: problem.allocs.len(),
        conflicts: conflicts.pairs(),
        pool: placement.pool,
        bound,
        naive,
        dpcpp,
        plan: best[0],
        plan_one: split.then_some(best[1]),
        bound_time,
        strategy: placement.strategy,
    })
}

/// Every row: generated workloads, then the MiniMalloc instances under `data`.
pub fn rows(max_allocs: usize, runs: usize, only: &str, data: &Path) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (name, spec) in generated(max_allocs) {
        if !name.contains(only) {
            continue;
        }
        let mixed = matches!(spec.sizes, Sizes::Mixed { .. });
        eprintln!("memory: {name}");
        rows.push(measure(name, mixed, &spec.program().to_text(), DEFAULT_ALIGNMENT, runs)?);
    }
    let mut files: Vec<_> = std::fs::read_dir(data)
        .map_err(|e| format!("cannot read {}: {e}", data.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        let intervals = parse_minimalloc_csv(&text).map_err(|e| format!("{}: {e}", f.display()))?;
        let stem = f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if !format!("MiniMalloc {stem}").contains(only) {
            continue;
        }
        eprintln!("memory: minimalloc {stem}");
        // Alignment 1: the instances' sizes are in their own units, the capacity too.
        rows.push(measure(format!("MiniMalloc {stem}"), true, &intervals_text(&intervals), 1, runs)?);
    }
    Ok(rows)
}

fn mib(b: u64) -> String {
    format!("{:.2}", b as f64 / (1u64 << 20) as f64)
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The markdown table and the summary against the targets.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| workload | allocations | conflicting pairs | pool MiB | lower bound MiB | pool / bound | naive / pool | DPC++ / pool | plan ms | plan ms, 1 thread | bound ms | winning order |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let r = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.3} | {:.2} | {:.2} | {} | {} | {} | {} |\n",
            row.name,
            row.allocs,
            row.conflicts,
            mib(row.pool),
            mib(row.bound),
            r(row.pool, row.bound),
            r(row.naive, row.pool),
            r(row.dpcpp, row.pool),
            ms(row.plan),
            row.plan_one.map_or("same".to_string(), ms),
            ms(row.bound_time),
            row.strategy
        ));
    }
    let ratios: Vec<f64> = rows.iter().map(|x| r(x.pool, x.bound)).collect();
    let worst = ratios.iter().copied().fold(1.0, f64::max);
    let dp: Vec<f64> = rows.iter().filter(|x| x.mixed).map(|x| r(x.dpcpp, x.pool)).collect();
    let gen_dp: Vec<f64> =
        rows.iter().filter(|x| x.mixed && !x.name.starts_with("MiniMalloc")).map(|x| r(x.dpcpp, x.pool)).collect();
    let big = rows.iter().filter(|x| x.allocs >= 100_000).map(|x| x.plan).max();
    let big_one = rows.iter().filter(|x| x.allocs >= 100_000).map(|x| x.plan_one.unwrap_or(x.plan)).max();
    out.push_str(&format!(
        "\nAgainst the targets: pool / bound median {:.3} (target ≤ 1.05), worst {:.3} (target ≤ 1.15); \
         DPC++ / pool median {:.2} on mixed sizes, {:.2} on the generated mixed-size graphs, lowest {:.2} (target ≥ 2); \
         planning 10^5 allocations: {} on {} thread(s), {} on one (target ≤ 100 ms).\n",
        median(ratios),
        worst,
        median(dp),
        median(gen_dp.clone()),
        gen_dp.iter().copied().fold(f64::INFINITY, f64::min),
        big.map_or("not run".to_string(), |d| format!("{} ms at most", ms(d))),
        Threads::available().get(),
        big_one.map_or("not run".to_string(), |d| format!("{} ms", ms(d)))
    ));
    out
}
