//! `cond` (issue 33): a loop whose trip count the GPU decides, driven from the host today,
//! against CUDA's conditional WHILE node and host-driven loops in the same machine session.
//!
//! The loop is a 1-D Jacobi relaxation of N floats (`x[i] = (x[i-1] + x[i+1] + b[i]) / 2`,
//! the ends fixed), three kernels per iteration, the same three as scripts/cuda_cond.py
//! writes in CUDA: the sweep into `@xn`; one work-group of 256 that reduces the residual
//! `max |xn - x|` over the interior (a strided pass, then a tree in work-group memory),
//! counts the iteration and writes whether to go on (`residual > tol` and `count < limit`,
//! both read on the device) into `@flag`; the commit of `@xn` into `@x`. With `tol = 0` and
//! `limit` = 10, 100, 1000 the count is data on the device and known. Compiled with the
//! default pipeline at each of `--n` (1024 and 4096): at 1024 `fuse-stages` makes the three
//! kernels one dispatch (small kernels), at 4096 they stay three.
//!
//! *host loop*: one graph of the three kernels, `run` + `wait` + a read of `@flag` per
//! iteration (what a Vulkan application that loops until a residual is small does). *while
//! node*: graph `@loop`, a `while` node over that graph, one `run` + `wait` for the whole
//! loop (docs/conditional.md). Checked: the iteration count and the final iterate against
//! the same relaxation computed on the host in f32, in the kernels' operation order (exact:
//! additions and a halving only). The branch: an `if` choosing between two small kernels per
//! launch against the first kernel alone, both arms checked.

use super::harness::{self, Common, Phase};
use clap::Args as ClapArgs;
use std::fmt::Write as _;
use std::time::Instant;

/// Command-line arguments of `cmdgraph-bench cond`.
#[derive(ClapArgs, Clone, Debug)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Floats in the relaxed vector, one set of rows each: at 1024 and below the default
    /// pipeline's `fuse-stages` makes the three kernels one dispatch (small kernels), at 4096
    /// they stay three.
    #[arg(long, value_delimiter = ',', default_values_t = [1024u32, 4096])]
    pub n: Vec<u32>,
    /// Iteration limits (the loop's data-dependent trip counts).
    #[arg(long, value_delimiter = ',', default_values_t = [10u32, 100, 1000])]
    pub limits: Vec<u32>,
}

/// Graph `@unrolled_{k}`: the reset, then `k` copies of `@g`'s three kernels in a chain, what
/// the loop is when its trip count is known on the host (no loop machinery).
fn unrolled_text(n: u32, k: u32) -> String {
    let mut s = format!(
        "graph @unrolled_{k} {{
  %start = memcpy @x, @x0, {bytes}
  %zero = memfill @count, 0 : u32, 1
",
        bytes = 4 * u64::from(n)
    );
    let mut prev = "%start, %zero".to_string();
    for i in 0..k {
        let _ = write!(
            s,
            "  %s{i} = kernel @jacobi range({n}) args(@x, @b, @xn, {n}) after({prev})
  %r{i} = kernel @resid nd_range(global(256), local(256)) args(@x, @xn, @r, @count, @limit, @flag, {n}, 0.0) after(%s{i})
  %c{i} = kernel @commit range({n}) args(@x, @xn, {n}) after(%r{i})
"
        );
        prev = format!("%c{i}");
    }
    s.push_str("}\n");
    s
}

/// The module with [`module_text`]'s graphs and `@unrolled_{k}` for each of `limits`.
pub fn module_with_unrolled(n: u32, limits: &[u32]) -> String {
    let mut s = module_text(n);
    for &k in limits {
        s.push('\n');
        s.push_str(&unrolled_text(n, k.max(1)));
    }
    s
}

/// The three kernels and graph `@g` (one iteration) over vectors of `n` floats.
pub fn module_text(n: u32) -> String {
    let mut tree = String::new();
    let mut st = 128;
    while st >= 1 {
        let _ = write!(
            tree,
            "  %st{st} = const {st} : u32
  %on{st} = lt %t, %st{st}
  if %on{st} {{
    %p{st} = add %t, %st{st}
    %a{st} = load %s[%t]
    %b{st} = load %s[%p{st}]
    %mx{st} = max %a{st}, %b{st}
    store %s[%t], %mx{st}
  }}
  group_barrier
"
        );
        st /= 2;
    }
    format!(
        "kernel @jacobi(%x: buf<f32, read>, %b: buf<f32, read>, %xn: buf<f32, write>, %n: u32) {{
  %i = global_id 0
  %one = const 1 : u32
  %last = sub %n, %one
  %lo = ge %i, %one
  %hi = lt %i, %last
  %inside = and %lo, %hi
  if %inside {{
    %im = sub %i, %one
    %ip = add %i, %one
    %xl = load %x[%im]
    %xr = load %x[%ip]
    %bi = load %b[%i]
    %s = add %xl, %xr
    %s2 = add %s, %bi
    %half = const 0.5 : f32
    %v = mul %s2, %half
    store %xn[%i], %v
  }}
}}

kernel @resid(%x: buf<f32, read>, %xn: buf<f32, read>, %r: buf<f32, write>, %count: buf<u32, read_write>, %limit: buf<u32, read>, %flag: buf<u32, write>, %n: u32, %tol: f32) {{
  %s = local f32[256]
  %t = local_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %last = sub %n, %one
  %start = add %t, %one
  %stride = const 256 : u32
  %fz = const 0.0 : f32
  %m = for %i = %start to %last step %stride carry(%m0 = %fz) {{
    %a = load %xn[%i]
    %c = load %x[%i]
    %d = sub %a, %c
    %ad = abs %d
    %m1 = max %m0, %ad
    yield %m1
  }}
  store %s[%t], %m
  group_barrier
{tree}  %first = eq %t, %zero
  if %first {{
    %res = load %s[%zero]
    %c0 = load %count[%zero]
    %cn = add %c0, %one
    store %count[%zero], %cn
    store %r[%zero], %res
    %lim = load %limit[%zero]
    %g1 = gt %res, %tol
    %g2 = lt %cn, %lim
    %more = and %g1, %g2
    %mu = select %more, %one, %zero
    store %flag[%zero], %mu
  }}
}}

kernel @commit(%x: buf<f32, write>, %xn: buf<f32, read>, %n: u32) {{
  %i = global_id 0
  %one = const 1 : u32
  %last = sub %n, %one
  %lo = ge %i, %one
  %hi = lt %i, %last
  %inside = and %lo, %hi
  if %inside {{
    %v = load %xn[%i]
    store %x[%i], %v
  }}
}}

usm @x : f32[{n}]
usm @x0 : f32[{n}]
usm @b : f32[{n}]
usm @xn : f32[{n}]
usm @r : f32[1]
usm @count : u32[1]
usm @limit : u32[1]
usm @flag : u32[1]

graph @g {{
  %sweep = kernel @jacobi range({n}) args(@x, @b, @xn, {n})
  %res = kernel @resid nd_range(global(256), local(256)) args(@x, @xn, @r, @count, @limit, @flag, {n}, 0.0) after(%sweep)
  %keep = kernel @commit range({n}) args(@x, @xn, {n}) after(%res)
}}

graph @reset {{
  %start = memcpy @x, @x0, {bytes}
  %zero = memfill @count, 0 : u32, 1
}}

graph @loop {{
  %start = memcpy @x, @x0, {bytes}
  %zero = memfill @count, 0 : u32, 1
  %go = memfill @flag, 1 : u32, 1
  %w = while @flag do @g after(%start, %zero, %go)
}}

{BRANCH}",
        bytes = 4 * u64::from(n)
    )
}

/// The IF/ELSE workload: an `if` on a word in memory choosing between two small kernels
/// (as scripts/cuda_cond.py's branch: add 1 or double 1024 floats), and `@plain`, the first
/// kernel alone.
const BRANCH: &str = "kernel @add_one(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}

kernel @double(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %two = const 2.0 : f32
  %r = mul %v, %two
  store %x[%i], %r
}

usm @out : f32[1024]
usm @arm : u32[1]

graph @then_arm {
  %a = kernel @add_one range(1024) args(@out)
}

graph @else_arm {
  %d = kernel @double range(1024) args(@out)
}

graph @plain {
  %a = kernel @add_one range(1024) args(@out)
}

graph @branch {
  %i = if @arm then @then_arm else @else_arm
}
";

/// The starting iterate and the right-hand side (SplitMix64, full-precision floats in [0, 1)
/// and [0, 1e-3)).
fn inputs(n: u32) -> (Vec<f32>, Vec<f32>) {
    let mut s = 7u64;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 24) as f32
    };
    let x: Vec<f32> = (0..n).map(|_| next()).collect();
    let b: Vec<f32> = (0..n).map(|_| next() * 1e-3).collect();
    (x, b)
}

/// The loop on the host, in the kernels' operation order: the final iterate and the count.
pub fn reference(x0: &[f32], b: &[f32], limit: u32) -> (Vec<f32>, u32) {
    let n = x0.len();
    let mut x = x0.to_vec();
    let mut xn = vec![0f32; n];
    let mut count = 0;
    loop {
        for i in 1..n.saturating_sub(1) {
            xn[i] = (x[i - 1] + x[i + 1] + b[i]) * 0.5;
        }
        let resid = (1..n.saturating_sub(1)).map(|i| (xn[i] - x[i]).abs()).fold(0f32, f32::max);
        x[1..n.saturating_sub(1)].copy_from_slice(&xn[1..n.saturating_sub(1)]);
        count += 1;
        if !(resid > 0.0 && count < limit) {
            return (x, count);
        }
    }
}

/// One limit's medians, in seconds, and the CUDA peers' (ms in their JSON).
struct Row {
    /// Floats in the relaxed vector.
    n: u32,
    /// Dispatches of one iteration (kernel nodes of the optimized `@g`).
    dispatches: usize,
    /// Who makes each round's successor predicate: the body's kernel itself (a loop
    /// predicate, docs/abi.md) or a predicate dispatch (`Executor::conditional_paths`).
    next_by_kernel: bool,
    limit: u32,
    host_loop: f64,
    /// The `while` node: one `run` + `wait` for the whole loop.
    while_node: f64,
    /// `@unrolled_{limit}`: one `run` + `wait` of the reset and `limit` iterations' kernels.
    unrolled: f64,
    /// The `while` node compiled without [`ITERATED`], where that pass rewrote it.
    unbatched: Option<f64>,
    cuda: Option<[f64; 3]>,
}

/// The IF/ELSE workload's medians per launch, in seconds: the kernel alone, the `if`.
struct Branch {
    plain: f64,
    if_else: f64,
    /// CUDA's (µs in its JSON): the kernel alone, the condition kernel and IF/ELSE node.
    cuda: Option<[f64; 2]>,
}

/// Runs the suite.
pub fn main(args: &Args) -> Result<(), String> {
    let phase = Phase::of(&args.common, "cond")?;
    let r = run(args, &phase);
    phase.cleanup();
    r
}

/// The pass the IF/ELSE workload's second bundle is compiled with: the `if` node, whose
/// arms are one kernel each, becomes one kernel that branches on the word.
const MERGED: &str = "merge-branches";

/// The pass the loop's third bundle leaves out of the default pipeline: with it a body of one
/// kernel on one work-group runs up to 16 iterations a launch (at n = 1024; the three kernels
/// at n = 4096 are refused), without it each iteration is a dispatch.
const ITERATED: &str = "iterate-in-kernel";

fn run(args: &Args, phase: &Phase) -> Result<(), String> {
    let sizes: Vec<u32> = if args.n.is_empty() { vec![4096] } else { args.n.iter().map(|&n| n.max(3)).collect() };
    let limits: Vec<String> = args.limits.iter().map(|l| l.max(&1).to_string()).collect();
    let name_of = |n: u32| format!("cond_{n}_{}", limits.join("_"));
    let (first, name) = (sizes[0], name_of(sizes[0]));
    if phase.prepares() {
        for &n in &sizes {
            // What an application gets from `cmdgraph compile`: the default pipeline.
            let (bundle, _) =
                harness::compile(&module_with_unrolled(n, &args.limits), cmdgraph_passes::DEFAULT_PIPELINE)?;
            harness::save(phase.dir(), &name_of(n), &bundle)?;
            let pipeline: Vec<&str> =
                cmdgraph_passes::DEFAULT_PIPELINE.iter().copied().filter(|&p| p != ITERATED).collect();
            let (bundle, _) = harness::compile(&module_text(n), &pipeline)?;
            // Saved only where the default pipeline's pass rewrote the loop: elsewhere the
            // row would measure the default bundle again.
            let (_, report) = harness::compile(&module_text(n), cmdgraph_passes::DEFAULT_PIPELINE)?;
            if report.remarks.iter().any(|r| r.contains("@loop: %w runs up to")) {
                harness::save(phase.dir(), &format!("{}_unbatched", name_of(n)), &bundle)?;
            }
        }
        let (bundle, report) = harness::compile(&module_text(first), &[MERGED])?;
        // The branch must really be one kernel, or the row measures the `if` node again.
        if !report.remarks.iter().any(|r| r.contains("@branch: %i is one kernel")) {
            return Err(format!("cond: {MERGED} left @branch's `if` as it was: {:?}", report.remarks));
        }
        harness::save(phase.dir(), &format!("{name}_merged"), &bundle)?;
    }
    if !phase.runs() {
        return Ok(());
    }
    let cuda = harness::torch(&args.common)?;
    let missing = harness::torch_missing(&cuda);
    let reps = args.common.runs.max(1);
    let mut rows = Vec::new();
    for &n in sizes.iter().rev() {
        let mut ex = harness::executor(&harness::bundle_bytes(phase.dir(), &name_of(n))?, &args.common)?;
        let mut these = loops(&mut ex, n, &args.limits, reps, cuda.as_ref())?;
        drop(ex);
        if let Ok(bytes) = harness::bundle_bytes(phase.dir(), &format!("{}_unbatched", name_of(n))) {
            let mut ex = harness::executor(&bytes, &args.common)?;
            for (row, t) in these.iter_mut().zip(unbatched(&mut ex, n, &args.limits, reps)?) {
                row.unbatched = Some(t);
            }
        }
        rows.splice(0..0, these);
    }
    let mut ex = harness::executor(&harness::bundle_bytes(phase.dir(), &name)?, &args.common)?;
    let device = ex.context().device_name().to_string();
    let branch = branch(&mut ex, reps, cuda.as_ref())?;
    drop(ex);
    let mut ex = harness::executor(&harness::bundle_bytes(phase.dir(), &format!("{name}_merged"))?, &args.common)?;
    let merged = self::branch(&mut ex, reps, None)?;
    let body = section(&rows, [&branch, &merged], &device, &args.common, missing.as_deref());
    harness::finish(&args.common, "cond", &body)
}

/// The loop rows: per limit, the host loop, the `while` node and the unrolled floor, each
/// checked.
fn loops(
    ex: &mut cmdgraph_executor::Executor,
    n: u32,
    limits: &[u32],
    reps: usize,
    cuda: Option<&serde_json::Value>,
) -> Result<Vec<Row>, String> {
    let err = |e: cmdgraph_executor::ExecError| e.to_string();
    let dispatches = ex
        .module()
        .graph_by_name("g")
        .map(|h| {
            ex.module().graphs[h]
                .nodes
                .iter()
                .filter(|(_, nd)| matches!(nd.kind, cmdgraph_ir::NodeKind::Kernel(_)))
                .count()
        })
        .unwrap_or(0);
    let g = ex.finalize("g").map_err(err)?;
    let lp = ex.finalize("loop").map_err(err)?;
    let paths = ex.conditional_paths(lp).map_err(err)?;
    let next_by_kernel = paths.iter().any(|(_, p)| p.contains("writes the next round's predicate itself"));
    eprintln!("cond: n {n}: {}", paths.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>().join("; "));
    let reset = ex.finalize("reset").map_err(err)?;
    let (x0, b) = inputs(n);
    ex.bind_as("b", &b).map_err(err)?;
    ex.bind_as("x0", &x0).map_err(err)?;
    let mut rows = Vec::new();
    for &limit in limits {
        let limit = limit.max(1);
        ex.bind_as("limit", &[limit]).map_err(err)?;
        let host_loop = |ex: &mut cmdgraph_executor::Executor| -> Result<u32, String> {
            ex.run(reset).map_err(err)?;
            let mut iterations = 0;
            loop {
                ex.run(g).map_err(err)?;
                ex.wait(g).map_err(err)?;
                iterations += 1;
                if ex.read_as::<u32>("flag").map_err(err)?.first() != Some(&1) {
                    return Ok(iterations);
                }
            }
        };
        let iterations = host_loop(ex)?;
        let (want, want_count) = reference(&x0, &b, limit);
        let count = ex.read_as::<u32>("count").map_err(err)?;
        if iterations != want_count || count.first() != Some(&want_count) {
            return Err(format!(
                "cond limit {limit}: {iterations} iterations (count {count:?}), expected {want_count}"
            ));
        }
        harness::same(&format!("cond limit {limit}"), &ex.read_as::<f32>("x").map_err(err)?, &want)?;
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            host_loop(ex)?;
            times.push(t.elapsed().as_secs_f64());
        }
        // The `while` node: the same loop in one run, no host round trip per iteration.
        let while_node = |ex: &mut cmdgraph_executor::Executor| run_and_wait(ex, lp);
        while_node(ex)?;
        let count = ex.read_as::<u32>("count").map_err(err)?;
        if count.first() != Some(&want_count) {
            return Err(format!("cond limit {limit}: the while node counted {count:?}, expected {want_count}"));
        }
        harness::same(&format!("cond while limit {limit}"), &ex.read_as::<f32>("x").map_err(err)?, &want)?;
        let mut wtimes = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            while_node(ex)?;
            wtimes.push(t.elapsed().as_secs_f64());
        }
        let unrolled = time_unrolled(ex, limit, want_count, &want, reps)?;
        let peer = cuda.and_then(|c| cuda_row(c, n, limit));
        let (host_loop, while_node) = (harness::median(&times), harness::median(&wtimes));
        rows.push(Row {
            n,
            dispatches,
            next_by_kernel,
            limit,
            host_loop,
            while_node,
            unrolled,
            unbatched: None,
            cuda: peer,
        });
        eprintln!(
            "cond: n {n}, limit {limit}: host loop {:.3} ms, while node {:.3} ms, unrolled {:.3} ms",
            host_loop * 1e3,
            while_node * 1e3,
            unrolled * 1e3
        );
    }
    Ok(rows)
}

/// Per limit, the median seconds of one `run` + `wait` of `@loop` from the bundle compiled
/// without [`ITERATED`], checked as the default bundle's loop is.
fn unbatched(ex: &mut cmdgraph_executor::Executor, n: u32, limits: &[u32], reps: usize) -> Result<Vec<f64>, String> {
    let err = |e: cmdgraph_executor::ExecError| e.to_string();
    let lp = ex.finalize("loop").map_err(err)?;
    let (x0, b) = inputs(n);
    ex.bind_as("b", &b).map_err(err)?;
    ex.bind_as("x0", &x0).map_err(err)?;
    let mut out = Vec::with_capacity(limits.len());
    for &limit in limits {
        let limit = limit.max(1);
        ex.bind_as("limit", &[limit]).map_err(err)?;
        let (want, want_count) = reference(&x0, &b, limit);
        run_and_wait(ex, lp)?;
        let count = ex.read_as::<u32>("count").map_err(err)?;
        if count.first() != Some(&want_count) {
            return Err(format!("cond without {ITERATED}, limit {limit}: counted {count:?}, expected {want_count}"));
        }
        let what = format!("cond without {ITERATED}, limit {limit}");
        harness::same(&what, &ex.read_as::<f32>("x").map_err(err)?, &want)?;
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            run_and_wait(ex, lp)?;
            times.push(t.elapsed().as_secs_f64());
        }
        let t = harness::median(&times);
        eprintln!("cond: n {n}, limit {limit}: while node without {ITERATED}: {:.3} ms", t * 1e3);
        out.push(t);
    }
    Ok(out)
}

/// One `run` of `id` and its `wait`.
fn run_and_wait(ex: &mut cmdgraph_executor::Executor, id: cmdgraph_executor::ExecId) -> Result<(), String> {
    ex.run(id).map_err(|e| e.to_string())?;
    ex.wait(id).map_err(|e| e.to_string())
}

/// The median seconds of one `run` + `wait` of `@unrolled_{limit}` (the same kernels, the
/// trip count known on the host, no loop machinery), checked against the loop's result.
fn time_unrolled(
    ex: &mut cmdgraph_executor::Executor,
    limit: u32,
    want_count: u32,
    want: &[f32],
    reps: usize,
) -> Result<f64, String> {
    let err = |e: cmdgraph_executor::ExecError| e.to_string();
    let id = ex.finalize(&format!("unrolled_{limit}")).map_err(err)?;
    let whole = |ex: &mut cmdgraph_executor::Executor| run_and_wait(ex, id);
    whole(ex)?;
    let count = ex.read_as::<u32>("count").map_err(err)?;
    if count.first() != Some(&limit) || want_count != limit {
        return Err(format!("cond unrolled {limit}: counted {count:?}, the loop {want_count}"));
    }
    harness::same(&format!("cond unrolled {limit}"), &ex.read_as::<f32>("x").map_err(err)?, want)?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        whole(ex)?;
        times.push(t.elapsed().as_secs_f64());
    }
    ex.drop_exec(id).map_err(err)?;
    Ok(harness::median(&times))
}

/// Launches per timed repetition of the IF/ELSE workload (as scripts/cuda_cond.py).
const LAUNCHES: usize = 1000;

/// The IF/ELSE workload: both arms checked, then `@plain` and `@branch` timed per launch
/// (wall time of back-to-back runs and one wait, over [`LAUNCHES`]).
fn branch(
    ex: &mut cmdgraph_executor::Executor,
    reps: usize,
    cuda: Option<&serde_json::Value>,
) -> Result<Branch, String> {
    let err = |e: cmdgraph_executor::ExecError| e.to_string();
    let (plain, cond) = (ex.finalize("plain").map_err(err)?, ex.finalize("branch").map_err(err)?);
    let start: Vec<f32> = (0..1024).map(|i| i as f32 * 0.375 + 0.1).collect();
    for (arm, f) in [(1u32, (|v: f32| v + 1.0) as fn(f32) -> f32), (0, |v: f32| v * 2.0)] {
        ex.bind_as("out", &start).map_err(err)?;
        ex.bind_as("arm", &[arm]).map_err(err)?;
        ex.run(cond).map_err(err)?;
        ex.wait(cond).map_err(err)?;
        let want: Vec<f32> = start.iter().map(|&v| f(v)).collect();
        harness::same(&format!("cond branch arm {arm}"), &ex.read_as::<f32>("out").map_err(err)?, &want)?;
    }
    ex.bind_as("arm", &[1u32]).map_err(err)?;
    let mut per_launch = |id| -> Result<f64, String> {
        let mut ts = Vec::with_capacity(reps);
        for _ in 0..reps {
            ex.wait(id).map_err(err)?;
            let t = Instant::now();
            for _ in 0..LAUNCHES {
                ex.run(id).map_err(err)?;
            }
            ex.wait(id).map_err(err)?;
            ts.push(t.elapsed().as_secs_f64() / LAUNCHES as f64);
        }
        Ok(harness::median(&ts))
    };
    let (plain, if_else) = (per_launch(plain)?, per_launch(cond)?);
    let peer = cuda.and_then(|c| c.get("branch")).and_then(|b| {
        let get = |k: &str| b.get(k).and_then(|v| v.as_f64());
        Some([get("plain_us")?, get("if_else_us")?])
    });
    eprintln!("cond: branch: plain {:.2} us/launch, if/else {:.2} us/launch", plain * 1e6, if_else * 1e6);
    Ok(Branch { plain, if_else, cuda: peer })
}

/// The CUDA peers' wall ms for `n` floats and `limit` iterations: eager, graph per iteration,
/// WHILE node (rows without their own `n` have the file's).
fn cuda_row(json: &serde_json::Value, n: u32, limit: u32) -> Option<[f64; 3]> {
    let file_n = json.get("n").and_then(|v| v.as_u64());
    let row = json.get("loop")?.as_array()?.iter().find(|r| {
        let row_n = r.get("n").and_then(|v| v.as_u64()).or(file_n);
        r.get("limit").and_then(|l| l.as_u64()) == Some(limit.into()) && row_n == Some(n.into())
    })?;
    let get = |k: &str| row.get(k).and_then(|v| v.as_f64());
    Some([get("eager_ms")?, get("graph_per_iteration_ms")?, get("while_node_ms")?])
}

fn section(
    rows: &[Row],
    [branch, merged]: [&Branch; 2],
    device: &str,
    common: &Common,
    missing: Option<&str>,
) -> String {
    let how = "wall time of the whole loop (resetting the iterate and the count on the device, as the CUDA peers \
               do, then every iteration's `run` + `wait` + read of `@flag` for the host loop; one `run` + `wait` \
               of a graph that resets and loops for the `while` node), median of the repetitions after one checked \
               run; the branch: wall time of 1000 back-to-back runs and one wait, per run";
    let mut s = harness::header("Loops and branches decided on the GPU (issue 33)", device, common, how);
    let _ = write!(
        s,
        "Input (bench/src/runtime/cond.rs): a 1-D Jacobi relaxation of n floats, three kernels per iteration \
         (the sweep; one work-group reducing the residual, counting the iteration and writing whether to go on: \
         `residual > 0` and `count < limit`, both on the device; the commit), run until the device says stop, \
         compiled with the default pipeline (what `cmdgraph compile` gives: at n = 1024 `fuse-stages` makes the \
         three kernels one dispatch, the sweep and the commit looped 4 items per work-item inside the \
         residual's work-group of 256, small kernels; at n = 4096 they would loop 16 items and stay three \
         dispatches, column *dispatches*; column *next predicate*: who computes each round's successor \
         predicate, the body's one kernel at its end (a loop predicate, docs/abi.md: a one-group dispatch) or \
         a predicate dispatch after the body); \
         the count and the final iterate checked against the host (exact), for each cmdgraph row. *host loop*: \
         one cmdgraph graph of the three kernels, `run` + `wait` + a read of `@flag` per iteration. *while node*: \
         graph `@loop`, a `while @flag do @g` node (docs/conditional.md: the body's kernels are predicated \
         variants that return at once after the loop ends; a submission holds as many rounds as the last run \
         took, counted on the device, so the timed runs, which repeat the checked one, make one submission and \
         one wait; the first run of an executable submits 16 rounds, then doubling), one `run` + `wait`. CUDA peers (scripts/cuda_cond.py, the same three kernels in CUDA, same machine \
         session): *eager*: launched from the host, the flag read back per iteration; *graph per iteration*: a \
         CUDA Graph of one iteration, replayed per iteration, the flag read back; *WHILE*: a CUDA Graph whose \
         WHILE conditional node runs the three until the residual kernel clears the condition, one launch. \
         Targets (the issue): the while node ≥ 5x faster than the host loop at 100 iterations, within 1.5x of \
         CUDA's WHILE node. *unrolled* (a floor, not a loop): graph `@unrolled_k`, the reset and k \
         copies of the three kernels in one chain, what the loop costs with its trip count known on the host \
         and no loop machinery, one `run` + `wait` (checked the same way). The default pipeline holds \
         `{ITERATED}` (docs/passes.md: a body of one kernel on one work-group runs up to 16 iterations a \
         launch; it fires at n = 1024, the three kernels at n = 4096 are refused); *without `{ITERATED}`*: the \
         `while` node compiled without it, one dispatch an iteration, where it fired, checked the same way.\n\n\
         | n | dispatches | next predicate | limit (iterations) | cmdgraph host loop ms | cmdgraph while node ms | host loop / while node | cmdgraph unrolled ms | while node / unrolled | CUDA eager ms | CUDA Graph per iteration ms | CUDA WHILE node ms | while node / CUDA WHILE | without `{ITERATED}` ms | host loop / it | it / CUDA WHILE |\n\
         |---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    let na = missing.unwrap_or("n/a");
    for r in rows {
        let (e, g, w, ratio) = match r.cuda {
            Some([e, g, w]) => (
                format!("{e:.3}"),
                format!("{g:.3}"),
                format!("{w:.3}"),
                format!("{:.2}x", r.while_node * 1e3 / w.max(1e-9)),
            ),
            None => (na.to_string(), na.to_string(), na.to_string(), "—".to_string()),
        };
        let (it, it_host, it_cuda) = match (r.unbatched, r.cuda) {
            (Some(t), cuda) => (
                format!("{:.3}", t * 1e3),
                format!("{:.1}x", r.host_loop / t.max(1e-12)),
                cuda.map_or("—".to_string(), |[_, _, w]| format!("{:.2}x", t * 1e3 / w.max(1e-9))),
            ),
            (None, _) => ("—".to_string(), "—".to_string(), "—".to_string()),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:.1}x | {:.3} | {:.2}x | {e} | {g} | {w} | {ratio} | {it} | {it_host} | {it_cuda} |",
            r.n,
            r.dispatches,
            if r.next_by_kernel { "kernel" } else { "dispatch" },
            r.limit,
            r.host_loop * 1e3,
            r.while_node * 1e3,
            r.host_loop / r.while_node.max(1e-12),
            r.unrolled * 1e3,
            r.while_node / r.unrolled.max(1e-12)
        );
    }
    let _ = write!(
        s,
        "\nThe branch (IF/ELSE): graph `@branch`, an `if @arm then @then_arm else @else_arm` node whose arms \
         add 1 to or double 1024 floats (both arms checked), against `@plain`, the first kernel alone; CUDA's \
         (scripts/cuda_cond.py): a kernel that reads the flag and sets the condition, then an IF/ELSE node, \
         against a graph of the kernel alone (CUDA events over 1000 launches). Target (the issue): the \
         IF/ELSE overhead over an unconditional node ≤ 2 µs. *cmdgraph, `{MERGED}`*: the same module \
         compiled with that pass (docs/passes.md): the `if` node, whose arms are one kernel each, is one \
         kernel reading the word and branching (both arms checked the same way).\n\n\
         | per launch | plain µs | IF/ELSE µs | overhead µs |\n|---|---:|---:|---:|\n\
         | cmdgraph | {:.2} | {:.2} | {:.2} |\n\
         | cmdgraph, `{MERGED}` | {:.2} | {:.2} | {:.2} |\n",
        branch.plain * 1e6,
        branch.if_else * 1e6,
        (branch.if_else - branch.plain) * 1e6,
        merged.plain * 1e6,
        merged.if_else * 1e6,
        (merged.if_else - merged.plain) * 1e6
    );
    match branch.cuda {
        Some([p, c]) => {
            let _ = writeln!(s, "| CUDA Graph | {p:.2} | {c:.2} | {:.2} |", c - p);
        }
        None => {
            let _ = writeln!(s, "| CUDA Graph | {na} | {na} | — |");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_stops_at_the_limit_and_relaxes() {
        let (x0, b) = inputs(64);
        let (x, count) = reference(&x0, &b, 10);
        assert_eq!(count, 10);
        assert_eq!((x[0], x[63]), (x0[0], x0[63]), "the ends stay");
        assert_ne!(x[1..63], x0[1..63]);
        assert_eq!(reference(&x0, &b, 1).1, 1, "the body runs once before the condition is read");
    }

    #[test]
    fn the_module_runs_the_loop_on_the_interpreter() {
        let m = cmdgraph_ir::text::parse(&module_text(64)).expect("parses");
        cmdgraph_ir::verify::verify(&m).expect("verifies");
        let (x0, b) = inputs(64);
        let mut it = cmdgraph_interp::Interpreter::new(&m).expect("interpreter");
        it.bind_as::<f32>("x", &x0).unwrap();
        it.bind_as::<f32>("b", &b).unwrap();
        it.bind_as::<u32>("limit", &[5]).unwrap();
        let e = it.finalize("g").unwrap();
        let mut iterations = 0;
        loop {
            it.run(e).unwrap();
            iterations += 1;
            if it.read("flag").unwrap() != 1u32.to_le_bytes() {
                break;
            }
        }
        let (want, count) = reference(&x0, &b, 5);
        assert_eq!(iterations, count);
        let got: Vec<f32> =
            it.read("x").unwrap().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(got, want);
        // The `while` node's graph: the same loop in one run, from `@x0`.
        it.bind_as::<f32>("x0", &x0).unwrap();
        let e = it.finalize("loop").unwrap();
        it.run(e).unwrap();
        let got: Vec<f32> =
            it.read("x").unwrap().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!((got, it.read("count").unwrap().to_vec()), (want.clone(), count.to_le_bytes().to_vec()));
        // The unrolled floor: the same iterate and count without a loop.
        let m = cmdgraph_ir::text::parse(&module_with_unrolled(64, &[5])).expect("parses");
        cmdgraph_ir::verify::verify(&m).expect("verifies");
        let mut it = cmdgraph_interp::Interpreter::new(&m).expect("interpreter");
        it.bind_as::<f32>("x0", &x0).unwrap();
        it.bind_as::<f32>("b", &b).unwrap();
        it.bind_as::<u32>("limit", &[5]).unwrap();
        let e = it.finalize("unrolled_5").unwrap();
        it.run(e).unwrap();
        let got: Vec<f32> =
            it.read("x").unwrap().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!((got, it.read("count").unwrap().to_vec()), (want, count.to_le_bytes().to_vec()));
    }
}
