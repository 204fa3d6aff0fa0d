//! `cmdgraph-bench`: the project's performance suites, each writing its table to
//! docs/performance.md together with the command that produced it.
//!
//! ```text
//! cargo run --release -p cmdgraph-bench -- parse [--sizes 10000,100000,1000000] [--runs 5]
//! cargo run --release -p cmdgraph-bench -- tred [--sizes 10000,30000,100000,1000000] [--petgraph-timeout-secs 60]
//! cargo run --release -p cmdgraph-bench -- barriers [--sizes 100,1000,10000,100000]
//! cargo run --release -p cmdgraph-bench -- memory [--max-allocs 100000] [--runs 3]
//! cargo run --release -p cmdgraph-bench -- compile [--runs 3] [-O 2]
//! cargo run --release -p cmdgraph-bench -- fusion-run [--sizes 1048576,4194304] [--prepare DIR | --from DIR]
//! cargo run --release -p cmdgraph-bench -- mlp [--shapes 8x512x4,64x1024x2] [--prepare DIR | --from DIR]
//! cargo run --release -p cmdgraph-bench -- mlp-f16 [--shapes 8x512x4,256x1024x4] [--prepare DIR | --from DIR]
//! cargo run --release -p cmdgraph-bench -- copy [--sizes 20,24,26] [--prepare DIR | --from DIR]
//! cargo run --release -p cmdgraph-bench -- shader-run [--saxpy N,...] [--matmul N,...] [--prepare DIR | --from DIR]
//! ```

mod barriers;
mod codegen;
mod compile;
mod fusion;
mod generate;
mod measure;
mod memory;
mod report;
mod runtime;
mod tred;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cmdgraph-bench", about = "cmdgraph performance suites")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Code generation time per kernel variant of every example, at -O0 to -O3.
    Codegen {
        /// Compilations per (variant, level); the fastest counts.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
    /// Text front end: parse, verify and print generated graphs of 10^4, 10^5, 10^6 nodes.
    Parse {
        /// Graph sizes in nodes.
        #[arg(long, value_delimiter = ',', default_values_t = [10_000usize, 100_000, 1_000_000])]
        sizes: Vec<usize>,
        /// Runs per stage; the best one counts.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// A stage whose first run takes longer than this many seconds is not repeated.
        #[arg(long, default_value_t = 20.0)]
        budget_secs: f64,
        /// Stages to time (parse, verify, print, total); the others show 0.
        /// Writing docs/performance.md needs them all.
        #[arg(long, value_delimiter = ',', default_values_t = ["parse".to_string(), "verify".into(), "print".into(), "total".into()])]
        stages: Vec<String>,
        /// Time verify (and so parse+verify+print) only for graphs of at most this many
        /// nodes; larger ones get parse and print only.
        #[arg(long)]
        verify_up_to: Option<usize>,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
    /// Transitive reduction of random layered DAGs beside petgraph's.
    Tred {
        /// Graph sizes in nodes.
        #[arg(long, value_delimiter = ',', default_values_t = [10_000u32, 30_000, 100_000, 1_000_000])]
        sizes: Vec<u32>,
        /// Runs of cmdgraph's reduction per size (each in its own process); the fastest counts.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// petgraph runs are stopped after this many seconds.
        #[arg(long, default_value_t = 60)]
        petgraph_timeout_secs: u64,
        /// Address-space cap of each child process, in GiB.
        #[arg(long, default_value_t = 4)]
        mem_cap_gb: u64,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
    /// One reduction in this process (what `tred` runs in its children).
    #[command(hide = true)]
    TredOne {
        /// `cmdgraph` or `petgraph`.
        #[arg(long)]
        algo: String,
        /// Nodes.
        #[arg(long)]
        nodes: u32,
    },
    /// Kernel fusion: chains of K element-wise kernels, the examples, and a 10^4-node graph.
    Fusion {
        /// Chain lengths.
        #[arg(long, value_delimiter = ',', default_values_t = [2usize, 4, 8, 16, 32])]
        chains: Vec<usize>,
        /// Runs per input; the best one counts.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
    /// The barrier curve: record kernels and barriers through cmdgraph_sycl, then optimize.
    Barriers {
        /// Numbers of barriers.
        #[arg(long, value_delimiter = ',', default_values_t = [100usize, 1_000, 10_000, 100_000])]
        sizes: Vec<usize>,
        /// Runs per size; the fastest recording and the fastest optimization count.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
    /// Memory planning: generated graphs of 10^2 to 10^5 allocations and the MiniMalloc
    /// instances, pool against lower bound, naive sum and DPC++'s exact-size reuse.
    Memory {
        /// Skip generated workloads with more allocations than this.
        #[arg(long, default_value_t = 100_000)]
        max_allocs: usize,
        /// Planning runs per workload; the best one counts.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Only workloads whose name contains this (implies --no-write).
        #[arg(long)]
        only: Option<String>,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
    /// Graph replay against eager submission and CUDA Graphs (runtime; docs/performance.md).
    Replay(runtime::replay::Args),
    /// Small-graph `run` + `wait` against the hand program's three waits and CUDA Graphs.
    Latency(runtime::latency::Args),
    /// Executable-graph updates against re-finalizing (runtime).
    Update(runtime::update::Args),
    /// A loop whose trip count the GPU decides, driven from the host, against CUDA's WHILE node (runtime).
    Cond(runtime::cond::Args),
    /// One graph on several GPUs against one GPU; transfers against a hand-written copy (runtime).
    MultiDevice(runtime::multi_device::Args),
    /// A Jacobi stencil over two MPI ranks with halo exchange against one GPU and hand-written MPI (runtime; `mpiexec -n 2`, the `mpi` feature).
    Mpi(runtime::mpi::Args),
    /// Barrier and empty-node elimination at run time (runtime).
    BarrierRun(runtime::barrier_run::Args),
    /// From IR to a running executable: compile per pass against load + finalize (runtime).
    Load(runtime::load::Args),
    /// memcpy, memset and memfill on the executor against hand-recorded transfer commands (runtime).
    Copy(runtime::copy::Args),
    /// WGSL and GLSL shaders translated against the same shaders compiled directly (runtime).
    ShaderRun(runtime::shader_run::Args),
    /// Compile time of every example: passes, packaging and code generation per kernel.
    Compile {
        /// Runs per example; the fastest counts.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// LLVM optimization level.
        #[arg(short = 'O', default_value_t = 2)]
        opt_level: u8,
        /// Print the table only; leave docs/performance.md alone.
        #[arg(long)]
        no_write: bool,
    },
    /// Kernel fusion at run time: chains of K kernels fused and unfused beside a copy, on Vulkan.
    FusionRun {
        #[command(flatten)]
        common: runtime::harness::Common,
        /// Chain lengths.
        #[arg(long, value_delimiter = ',', default_values_t = [2usize, 4, 8, 16, 32])]
        chains: Vec<usize>,
        /// Elements per chain (the H100 run: 16777216,67108864).
        #[arg(long, value_delimiter = ',', default_values_t = [1u64 << 20, 1 << 22])]
        sizes: Vec<u64>,
    },
    /// An MLP block (matmul, bias, GELU, residual, LayerNorm per layer) as one bundle, on Vulkan.
    Mlp {
        #[command(flatten)]
        common: runtime::harness::Common,
        /// Shapes as BATCHxHIDDENxLAYERS (the H100 run: 8x512x4,256x1024x4).
        #[arg(long, value_delimiter = ',', default_values_t = ["8x512x4".to_string(), "64x1024x2".into()])]
        shapes: Vec<String>,
    },
    /// The MLP block in f16 on KHR cooperative matrices (tensor cores), on Vulkan.
    MlpF16 {
        #[command(flatten)]
        common: runtime::harness::Common,
        /// Shapes as BATCHxHIDDENxLAYERS (hidden a multiple of 128).
        #[arg(long, value_delimiter = ',', default_values_t = ["8x512x4".to_string(), "256x1024x4".into()])]
        shapes: Vec<String>,
    },
}

/// Where docs/performance.md is, from the crate's own location.
fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What `cmdgraph-bench parse` was asked to do.
struct ParseRun<'a> {
    sizes: &'a [usize],
    repeat: measure::Repeat,
    stages: &'a [String],
    verify_up_to: Option<usize>,
    write: bool,
}

fn run_parse(run: &ParseRun<'_>) -> Result<(), String> {
    let ParseRun { sizes, repeat, stages: stage_names, verify_up_to, write } = *run;
    let known = ["parse", "verify", "print", "total"];
    if let Some(bad) = stage_names.iter().find(|s| !known.contains(&s.as_str())) {
        return Err(format!("unknown stage `{bad}` (expected one of {})", known.join(", ")));
    }
    let on = |name: &str| stage_names.iter().any(|s| s == name);
    let stages = measure::Stages { parse: on("parse"), verify: on("verify"), print: on("print"), total: on("total") };
    let all = stages.parse && stages.verify && stages.print && stages.total;
    if write && !all {
        return Err("writing docs/performance.md needs every stage: add --no-write or drop --stages".to_string());
    }
    let dir = workspace_root().join("target").join("bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut rows = Vec::new();
    for &nodes in sizes {
        let text = generate::module_text(nodes);
        let nodes = nodes.div_ceil(generate::BLOCK).max(1) * generate::BLOCK;
        // Fewer runs for the largest inputs: each one takes seconds already.
        let repeat =
            measure::Repeat { runs: if nodes >= 1_000_000 { repeat.runs.min(3) } else { repeat.runs }, ..repeat };
        eprintln!("parse: {nodes} nodes, {:.1} MB of text, best of {}", text.len() as f64 / 1e6, repeat.runs);
        let stages = match verify_up_to {
            Some(limit) if nodes > limit => measure::Stages { verify: false, total: false, ..stages },
            _ => stages,
        };
        let timings = measure::measure(nodes, &text, &dir.join(format!("parse_{nodes}.cgir")), repeat, stages)?;
        rows.push(timings);
    }
    let table = report::table(&rows);
    println!("{table}");
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Text front end: parse, verify, print\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}` (`bash scripts/bench.sh` runs every \
         suite this way, pinned to one core with `taskset`; extra arguments are passed on)  \n\
         Date: {}  \n\
         Machine: {}; the benchmark is single-threaded  \n\
         Input: generated graphs (bench/src/generate.rs): blocks of async_malloc, five kernels \
         with pointer and scalar arguments, memcpy, memset, async_free and an empty join, \
         with edges to the previous node, the previous block and a block four back.\n\n\
         Best of {} runs per stage (3 for 10^6; 1 for a stage whose first run took over the \
         --budget-secs, 20 s by default). *read* = `fs::read_to_string` of the same text \
         from the page cache and *scan* = `split_ascii_whitespace().count()` over it: reference \
         stages timed in the same run, so the last two columns are ratios that hold on a noisy \
         machine. `-` marks a stage not timed at that size (`--verify-up-to`). Target: more \
         than 1M nodes/s for parse+verify+print at 10^5 nodes.\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        repeat.runs,
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "parse", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn run_tred(sizes: &[u32], runs: usize, timeout: std::time::Duration, mem_cap: u64, write: bool) -> Result<(), String> {
    let mut rows = Vec::new();
    for &n in sizes {
        let mut ours: Option<tred::Outcome> = None;
        for _ in 0..runs.max(1) {
            let run = tred::spawn("cmdgraph", n, timeout, mem_cap)?
                .ok_or_else(|| format!("cmdgraph's reduction of {n} nodes did not finish"))?;
            if ours.as_ref().is_none_or(|o| run.secs < o.secs) {
                ours = Some(run);
            }
        }
        let ours = ours.ok_or("no run")?;
        eprintln!("tred: {n} nodes, cmdgraph {:.1} ms; petgraph ...", ours.secs * 1e3);
        let theirs = tred::spawn("petgraph", n, timeout, mem_cap)?;
        if let Some(t) = &theirs {
            if t.hash != ours.hash || t.kept != ours.kept {
                eprintln!("tred: {n} nodes: the edge sets DIFFER ({} vs {} edges)", ours.kept, t.kept);
            }
        }
        rows.push(tred::Row { nodes: n, edges: tred::layered(n).len(), ours, theirs });
    }
    let table = tred::table(&rows, timeout, mem_cap);
    println!("{table}");
    if rows.iter().any(|r| r.theirs.as_ref().is_some_and(|t| t.hash != r.ours.hash || t.kept != r.ours.kept)) {
        return Err("cmdgraph and petgraph disagree on an edge set".to_string());
    }
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Transitive reduction\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}` (also run by `bash scripts/bench.sh`)  \n\
         Date: {}  \n\
         Machine: {}; single-threaded  \n\
         Input: random layered DAGs (bench/src/tred.rs `layered`): layers of {} nodes numbered layer by layer, \
         {} edges per node to uniformly chosen nodes of the next {} layers, and one node in 64 one more edge \
         {} layers ahead (past the 512-position bitset window). Same seed every run.\n\n\
         Each reduction runs in a child process under `ulimit -v` ({} GiB) and a {} s timeout; *ms* times the \
         reduction call only (cmdgraph: `reduce::transitive_reduction` on an `analysis::Csr`, topological \
         order included; petgraph: `dag_transitive_reduction_closure` on a toposorted `adj::List`, which also \
         builds the closure). *peak MB* is the child's peak resident memory (`VmHWM`), *input MB* its resident \
         memory just before the call (the generated graph in that algorithm's input form). cmdgraph: best of \
         {} runs. *same edge set*: the sorted kept pairs hash the same. Targets: the same edge set, at least \
         10× faster than petgraph at 10^5 nodes, 10^6 nodes in under 2 s and 2 GB.\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        tred::WIDTH,
        tred::EDGES,
        tred::SPAN,
        tred::LONG_SPAN,
        mem_cap >> 30,
        timeout.as_secs(),
        runs.max(1),
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "tred", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn run_barriers(sizes: &[usize], runs: usize, write: bool) -> Result<(), String> {
    let mut rows = Vec::new();
    for &b in sizes {
        let mut row = barriers::measure(b)?;
        for _ in 1..runs.max(1) {
            let again = barriers::measure(b)?;
            row.record = row.record.min(again.record);
            row.module = row.module.min(again.module);
            row.optimize = row.optimize.min(again.optimize);
        }
        eprintln!("barriers: {b}: record {:.1} ms, optimize {:.1} ms", row.record * 1e3, row.optimize * 1e3);
        rows.push(row);
    }
    let table = barriers::table(&rows);
    println!("{table}");
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Barrier recording and elimination\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}` (also run by `bash scripts/bench.sh`)  \n\
         Date: {}  \n\
         Machine: {}; single-threaded  \n\
         Input (bench/src/barriers.rs): one out-of-order queue records, through `cmdgraph_sycl`, rounds of \
         two `parallel_for` kernels on two USM allocations and an `ext_oneapi_submit_barrier()`; each barrier \
         waits for the two kernels before it and orders the two after it. *optimize* runs \
         `eliminate-barriers` then `transitive-reduction` on the recorded module. Best of {} runs per \
         size; *record* includes `begin_recording` to `end_recording`, nothing else.\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        runs.max(1),
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "barriers", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn run_memory(max_allocs: usize, runs: usize, only: &str, write: bool) -> Result<(), String> {
    let data = workspace_root().join("bench").join("data").join("minimalloc");
    let rows = memory::rows(max_allocs, runs, only, &data)?;
    let table = memory::table(&rows);
    println!("{table}");
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Memory planning: pool against lower bound, naive sum and DPC++\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}`  \n\
         Date: {}  \n\
         Machine: {}; planning on {} thread(s) (the threads this process may run on, at most 16)  \n\
         Input: generated tensor programs recorded from in-order queues \
         (passes/src/memory/workloads.rs; sizes 1 KiB times a log-uniform factor up to 256, \
         alignment 256 B) and the MiniMalloc *challenging* instances (bench/data/minimalloc, \
         alignment 1, converted to graphs by a chain of time ticks).\n\n\
         *pool* = `required_mem_size` of the plan; *lower bound* = heaviest set of pairwise unordered \
         allocations (min-flow; no plan can be smaller); *naive* = sum of the sizes; *DPC++* = \
         exact-size reuse as DPC++'s graph memory pool does it (docs/memory.md). *plan ms* = \
         lifetimes + conflict graph + placement, best of {} runs; *1 thread*: the same on one thread, \
         run alternately with it, for the inputs where the planner splits work (graphs of 16 384 vertices or more; \
         both plans are checked identical); up to 20 000 allocations the planner \
         also computes the bound (to stop its search there), and that is included; *bound ms* = the \
         min-flow alone, once. *winning order*: the order of the greedy that gave the pool, \
         `lowest first` for the lowest-offset-first greedy, `+ search` when the local search improved it.\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        cmdgraph_passes::memory::parallel::Threads::available().get(),
        runs,
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "memory", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn run_codegen(runs: usize, write: bool) -> Result<(), String> {
    let rows = codegen::measure(&workspace_root().join("examples"), runs)?;
    let table = codegen::table(&rows);
    println!("{table}");
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Kernel code generation\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}` (also run by `bash scripts/bench.sh`)  \n\
         Date: {}  \n\
         Machine: {}; single-threaded  \n\
         Input: every (kernel, work-group size) variant the graphs of `examples/*.cgir` launch. One \
         measurement is `codegen::compile_kernel`: lowering to LLVM IR text, parsing, the -O pass pipeline, \
         the SPIR-V backend and `spirv-val` (a child process, a large share at these sizes). Best of {} runs.\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        runs.max(1),
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "codegen", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn run_compile(runs: usize, opt_level: u8, write: bool) -> Result<(), String> {
    let rows = compile::rows(&workspace_root().join("examples"), runs, opt_level)?;
    let table = compile::table(&rows);
    println!("{table}");
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Compile time per example and per kernel\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}` (also run by `bash scripts/bench.sh`)  \n\
         Date: {}  \n\
         Machine: {}; single-threaded  \n\
         Input: every `examples/*.cgir` through `codegen::bundle::compile_module` with the default \
         pipeline and LLVM at -O{opt_level}, best of {} runs by total. *passes* = the pass pipeline; \
         *packaging* = schedule, memory plan and launch tables; *codegen* = all kernel variants \
         (LLVM IR, optimization, SPIR-V emission, spirv-val); *total* includes verifying input and \
         output and printing both modules; *bundle bytes* = the size of the bundle file (binary, LZ4-compressed payload); *hash* = the start of its \
         content hash (tests/golden/bundle-hashes.txt has the full ones).\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        runs.max(1),
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "compile", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn run_fusion(chains: &[usize], runs: usize, write: bool) -> Result<(), String> {
    let mut rows = Vec::new();
    for &k in chains {
        rows.push(fusion::measure(&format!("chain K={k}"), &fusion::chain_text(k, 65_536, 1), runs)?);
    }
    let dir = workspace_root().join("examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        rows.push(fusion::measure(&format!("examples/{name}"), &text, runs)?);
    }
    // 455 chains of 8 kernels (with 7 temporaries each): 10,010 nodes.
    let big = fusion::measure("455 chains of K=8 (10^4 nodes)", &fusion::chain_text(8, 1024, 455), runs)?;
    eprintln!("fusion: 10^4-node graph optimized in {:.1} ms", big.secs * 1e3);
    rows.push(big);
    let table = fusion::table(&rows);
    println!("{table}");
    if !write {
        return Ok(());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let body = format!(
        "## Kernel fusion\n\n\
         Command: `cargo run --release -p cmdgraph-bench -- {}` (also run by `bash scripts/bench.sh`)  \n\
         Date: {}  \n\
         Machine: {}; single-threaded  \n\
         Input (bench/src/fusion.rs): *chain K* is one graph of K element-wise kernels over 65,536 \
         `f32` elements, `x -> t0 -> ... -> y`, each temporary a graph-owned allocation with its \
         `async_malloc`/`async_free`; the examples are examples/*.cgir; the last row is 455 such chains \
         of K = 8 over 1,024 elements side by side. *optimize* is `fuse-kernels` alone on the parsed \
         module (best of {} runs). Modelled bytes: bytes loaded and stored by the element-wise kernels \
         (docs/fusion.md, cost model). E-graph nodes: over all groups after saturation.\n\n{}",
        args.join(" "),
        report::today(),
        report::machine(),
        runs.max(1),
        table
    );
    let path = workspace_root().join("docs").join("performance.md");
    report::write_section(&path, "fusion", &body)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Parse { sizes, runs, budget_secs, stages, verify_up_to, no_write } => {
            let budget =
                std::time::Duration::try_from_secs_f64(budget_secs.max(0.0)).unwrap_or(std::time::Duration::MAX);
            let repeat = measure::Repeat { runs, budget };
            run_parse(&ParseRun { sizes: &sizes, repeat, stages: &stages, verify_up_to, write: !no_write })
        }
        Command::Tred { sizes, runs, petgraph_timeout_secs, mem_cap_gb, no_write } => {
            run_tred(&sizes, runs, std::time::Duration::from_secs(petgraph_timeout_secs), mem_cap_gb << 30, !no_write)
        }
        Command::TredOne { algo, nodes } => tred::run_one(&algo, nodes).map(|line| println!("{line}")),
        Command::Barriers { sizes, runs, no_write } => run_barriers(&sizes, runs, !no_write),
        Command::Compile { runs, opt_level, no_write } => run_compile(runs, opt_level, !no_write),
        Command::Memory { max_allocs, runs, only, no_write } => {
            let write = !no_write && only.is_none();
            run_memory(max_allocs, runs, only.as_deref().unwrap_or(""), write)
        }
        Command::Codegen { runs, no_write } => run_codegen(runs, !no_write),
        Command::Fusion { chains, runs, no_write } => run_fusion(&chains, runs, !no_write),
        Command::Replay(args) => runtime::replay::main(&args),
        Command::Latency(args) => runtime::latency::main(&args),
        Command::Update(args) => runtime::update::main(&args),
        Command::Cond(args) => runtime::cond::main(&args),
        Command::MultiDevice(args) => runtime::multi_device::main(&args),
        Command::Mpi(args) => runtime::mpi::main(&args),
        Command::BarrierRun(args) => runtime::barrier_run::main(&args),
        Command::Load(args) => runtime::load::main(&args),
        Command::Copy(args) => runtime::copy::main(&args),
        Command::ShaderRun(args) => runtime::shader_run::run(&args),
        Command::FusionRun { common, chains, sizes } => runtime::fusion_run::main(&common, &chains, &sizes),
        Command::Mlp { common, shapes } => runtime::mlp::main(&common, &shapes),
        Command::MlpF16 { common, shapes } => runtime::mlp_f16::main(&common, &shapes),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cmdgraph-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
