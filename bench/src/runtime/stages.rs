//! The `latency` suite's stage chains (issue 32, item 2, "then past the floor"): a chain of N
//! one-group kernels whose dependences stay inside the work-group, compiled with
//! `fuse-stages` (one dispatch of N stages) and with no passes (N dispatches), each
//! `run` + `wait` against CUDA Graph replay + synchronize of a chain of N small kernels.
//!
//! Each kernel rotates 64 floats in place by one (`x[l] = x[(l + 1) mod 64]`, a work-group
//! barrier between its load and its store), so every stage reads what another work-item
//! wrote in the stage before: the fused kernel is right only if its barriers are. From
//! `x[i] = i` the output after N stages is `x[l] = (l + N) mod 64`, checked for both bundles.

use super::harness::{self, Common};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The target: the fused chain's `run` + `wait` within 1.5x CUDA Graph's chain of N kernels.
pub const TARGET: f64 = 1.5;

const ELEMS: usize = 64;

const KERNEL: &str = "kernel @rot(%x: buf<f32, read_write>) {
  %l = local_id 0
  %one = const 1 : u32
  %mask = const 63 : u32
  %n = add %l, %one
  %j = and %n, %mask
  %v = load %x[%j]
  group_barrier
  store %x[%l], %v
}
";

/// The module: `@g` and its profiled twin `@gp`, chains of `n` `@rot` launches.
pub fn module_text(n: usize) -> String {
    let mut s = format!("{KERNEL}\nusm @x : f32[{ELEMS}]\n");
    for (name, props) in [("g", ""), ("gp", " properties(enable_profiling)")] {
        let _ = writeln!(s, "\ngraph @{name}{props} {{");
        for i in 0..n {
            let after = if i > 0 { format!(" after(%k{})", i - 1) } else { String::new() };
            let _ = writeln!(s, "  %k{i} = kernel @rot nd_range(global({ELEMS}), local({ELEMS})) args(@x){after}");
        }
        s.push_str("}\n");
    }
    s
}

fn expected(n: usize) -> Vec<f32> {
    (0..ELEMS).map(|l| ((l + n) % ELEMS) as f32).collect()
}

fn bundle_name(n: usize, fused: bool) -> String {
    format!("stages_{n}_{}", if fused { "fused" } else { "unfused" })
}

/// Compiles both bundles of every size into the phase directory.
pub fn prepare(dir: &std::path::Path, sizes: &[usize]) -> Result<(), String> {
    for &n in sizes {
        for fused in [true, false] {
            let passes: &[&str] = if fused { &["fuse-stages"] } else { &[] };
            let (bundle, _) = harness::compile(&module_text(n), passes)?;
            let dispatches = bundle.graphs.iter().find(|g| g.name == "g").map_or(0, |g| g.launches.len());
            let want = if fused { 1 } else { n };
            if dispatches != want {
                return Err(format!("stages N={n}: {dispatches} launches, expected {want}"));
            }
            harness::save(dir, &bundle_name(n, fused), &bundle)?;
        }
    }
    Ok(())
}

/// One size's medians, in seconds.
pub struct Row {
    /// Kernels in the chain.
    pub n: usize,
    /// `run` + `wait` of the fused bundle, and of the unfused one.
    pub fused: f64,
    /// The same without `fuse-stages`.
    pub unfused: f64,
    /// GPU time (profile start to end) of each, when timestamps exist.
    pub fused_gpu: Option<f64>,
    /// The unfused bundle's.
    pub unfused_gpu: Option<f64>,
    /// CUDA Graph replay + synchronize of a chain of `n` kernels.
    pub cuda: Option<f64>,
}

impl Row {
    fn ratio(&self) -> Option<f64> {
        Some(self.fused / self.cuda?.max(1e-12))
    }
}

/// Measures every size: each bundle in turn, on its own executor, the other one dropped (two
/// Vulkan devices alive in one process time-slice the GPU between their contexts, which
/// costs a context switch per run).
pub fn measure(dir: &std::path::Path, common: &Common, sizes: &[usize]) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for &n in sizes {
        let samples = common.runs.max(1) * 100;
        let mut walls = [0.0; 2];
        let mut gpus = [None; 2];
        for (i, fused) in [true, false].into_iter().enumerate() {
            let name = bundle_name(n, fused);
            let bytes = harness::bundle_bytes(dir, &name)?;
            let mut ex = harness::executor(&bytes, common)?;
            let err = |e: cmdgraph_executor::ExecError| format!("{name}: {e}");
            let (g, gp) = (ex.finalize("g").map_err(err)?, ex.finalize("gp").map_err(err)?);
            let start: Vec<f32> = (0..ELEMS).map(|i| i as f32).collect();
            ex.bind_as("x", &start).map_err(err)?;
            ex.run(g).map_err(err)?;
            ex.wait(g).map_err(err)?;
            harness::same(&name, &ex.read_as::<f32>("x").map_err(err)?, &expected(n))?;
            let (mut wall, mut gpu) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
            for _ in 0..samples {
                let t = Instant::now();
                ex.run(g).map_err(err)?;
                ex.wait(g).map_err(err)?;
                wall.push(t.elapsed().as_secs_f64());
            }
            for _ in 0..samples {
                ex.run(gp).map_err(err)?;
                ex.wait(gp).map_err(err)?;
                if let Ok(p) = ex.profile(gp) {
                    gpu.push(p.end_ns.saturating_sub(p.start_ns) as f64 * 1e-9);
                }
            }
            walls[i] = harness::median(&wall);
            gpus[i] = (!gpu.is_empty()).then(|| harness::median(&gpu));
        }
        rows.push(Row { n, fused: walls[0], unfused: walls[1], fused_gpu: gpus[0], unfused_gpu: gpus[1], cuda: None });
    }
    Ok(rows)
}

/// The table and its verdict, appended to `latency`'s section.
pub fn section(rows: &[Row], spin: Duration, missing: Option<&str>) -> String {
    let mut s = format!(
        "\n### Stage chains: `fuse-stages` against CUDA Graphs\n\n\
         A chain of N one-group kernels, each rotating 64 floats in place by one with a work-group barrier \
         between its load and its store (bench/src/runtime/stages.rs), so every kernel reads what other \
         work-items wrote in the one before. *fused*: compiled with `fuse-stages`, one dispatch of N stages \
         with a `group_barrier` between them; *unfused*: no passes, N dispatches. Both `run` + `wait` (the \
         wait polls for {} µs, then blocks); outputs checked from `x[i] = i`. *CUDA Graph*: the same rotations \
         captured from PyTorch (scripts/torch_replay.py `--stages`: N `index_select` kernels between two \
         64-float buffers, each element read from its neighbour's result of the kernel before), replay + \
         synchronize, output checked.\n\n\
         | N | fused µs | unfused µs | CUDA Graph µs | fused / CUDA | fused GPU µs | unfused GPU µs |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
        spin.as_micros()
    );
    let us = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.1}", v * 1e6));
    for r in rows {
        let cuda = r.cuda.map_or(missing.unwrap_or("n/a").to_string(), |c| format!("{:.1}", c * 1e6));
        let ratio = r.ratio().map_or("—".to_string(), |x| format!("{x:.2}x"));
        let _ = writeln!(
            s,
            "| {} | {:.1} | {:.1} | {cuda} | {ratio} | {} | {} |",
            r.n,
            r.fused * 1e6,
            r.unfused * 1e6,
            us(r.fused_gpu),
            us(r.unfused_gpu)
        );
    }
    let judged: Vec<&Row> = rows.iter().filter(|r| r.cuda.is_some()).collect();
    let verdict = if judged.is_empty() {
        "not judged (no CUDA Graph rows in this run)".to_string()
    } else {
        let missed: Vec<String> = judged
            .iter()
            .filter_map(|r| r.ratio().filter(|&x| x > TARGET).map(|x| format!("N={} ({x:.2}x)", r.n)))
            .collect();
        if missed.is_empty() {
            "**met**".to_string()
        } else {
            format!("**missed** on {}", missed.join(", "))
        }
    };
    let _ = writeln!(s, "\nTarget (fused ≤ {TARGET}x CUDA Graph, every N): {verdict}.");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_judges_only_rows_with_cuda() {
        let row = |n, fused, cuda| Row { n, fused, unfused: 2.0, fused_gpu: None, unfused_gpu: None, cuda };
        let s = section(&[row(10, 1.6e-5, Some(1e-5)), row(100, 2e-5, Some(9e-5))], Duration::ZERO, None);
        assert!(s.contains("**missed** on N=10 (1.60x)"), "{s}");
        assert!(!s.contains("N=100 ("), "{s}");
        let s = section(&[row(10, 1.6e-5, None)], Duration::ZERO, Some("n/a (no CUDA)"));
        assert!(s.contains("not judged"), "{s}");
        assert!(s.contains("n/a (no CUDA)"), "{s}");
    }

    #[test]
    fn the_stage_chain_fuses_into_one_launch_and_rotates() {
        let dir = std::env::temp_dir().join(format!("cmdgraph-stages-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        prepare(&dir, &[3]).expect("compiles to 1 and 3 launches");
        assert_eq!(expected(3)[0], 3.0);
        assert_eq!(expected(3)[63], 2.0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
