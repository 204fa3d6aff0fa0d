//! `cmdgraph compile`: verify, run the pass pipeline, generate SPIR-V for every kernel
//! variant and write the bundle (docs/bundle.md).

use super::compile_emit::{self, EmitKind, Emitted};
use crate::exit::{Failure, Outcome};
use crate::io;
use crate::progress::{self, Progress};
use cmdgraph_codegen::bundle::{compile_module_configured, CompileError, CompileReport, Llvm, Progress as Step};
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_codegen::Options;
use cmdgraph_passes::pipeline::{self, render_timings};
use cmdgraph_passes::{PassInfo, REGISTRY};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const EXAMPLES: &str = "\
Examples:
  cmdgraph compile app.cgir                     writes app.cgb (default pipeline, -O2)
  cmdgraph compile app.cgir -o build/app.cgb -O3
  cmdgraph compile --passes=inline-subgraphs,plan-memory app.cgir -o app.cgb
  cmdgraph compile --time-passes app.cgir -o app.cgb
  cmdgraph compile --emit=spirv-asm app.cgir    print SPIR-V instead of writing a bundle
  cmdgraph compile --sign release.key app.cgir  signed bundle (key from `cmdgraph keygen`)
  cmdgraph compile --bundle-dir bundles/ exported.cgir   bundles/cgk1-<sha256>.cgb, found by key
  cmdgraph inspect app.cgb";

/// Arguments of `cmdgraph compile`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct CompileArgs {
    /// The module to compile; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// Where to write the bundle (replaced only once complete); default FILE with the
    /// extension `.cgb`, or stdout when FILE is `-`. `-o -` writes to stdout.
    #[arg(short, long, value_name = "OUT", conflicts_with = "bundle_dir")]
    pub output: Option<PathBuf>,
    /// Write the bundle into DIR under the module's structural key, `DIR/cgk1-<sha256>.cgb`
    /// (docs/bundle.md, "Keys"): where an application that exported this module
    /// (`CMDGRAPH_EXPORT_DIR`, `ExecutableGraph::export_module`) finds it at finalize.
    #[arg(long, value_name = "DIR", conflicts_with = "emit")]
    pub bundle_dir: Option<PathBuf>,
    /// Comma-separated passes to run in order (default: the default pipeline, see
    /// `cmdgraph opt --list-passes`).
    #[arg(long, value_name = "a,b,c", value_parser = parse_passes)]
    pub passes: Option<PassList>,
    /// LLVM optimization level (-O0 to -O3).
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub opt_level: u8,
    /// Print what code generation makes instead of a bundle: `llvm-ir`, `spirv-asm` (every
    /// kernel variant the graphs launch after the pass pipeline, named as in the bundle), or
    /// `spirv` (the binary of one variant; needs -o).
    #[arg(long, value_name = "WHAT")]
    pub emit: Option<EmitKind>,
    /// With --emit: only this kernel's variants (its name in the bundle, `@` optional).
    #[arg(long, value_name = "NAME", requires = "emit")]
    pub kernel: Option<String>,
    /// Print the wall time of every phase to stderr: reading and parsing, verifying, every
    /// pass, packaging, every kernel variant's code generation, printing and hashing the
    /// bundle, serializing it and writing it.
    #[arg(long)]
    pub time_passes: bool,
    /// Show the phase and its progress on stderr: `auto` when stderr is a terminal and the
    /// compile passes about a second, `always` (one line per step, from the start) or
    /// `never`.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub progress: progress::When,
    /// Verify the module after every pass (as `opt --verify-each`).
    #[arg(long)]
    pub verify_each: bool,
    /// Print, on stderr, why fuse-kernels fused or refused each candidate (as `opt --explain`).
    #[arg(long)]
    pub explain: bool,
    /// Print each pass's statistics on stderr (as `opt --stats`).
    #[arg(long)]
    pub stats: bool,
    /// Let fuse-kernels reassociate and contract floating point (as `opt --fuse-fp-reassoc`).
    #[arg(long)]
    pub fuse_fp_reassoc: bool,
    /// Align the memory plan's offsets to BYTES (as `opt --memory-alignment`).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub memory_alignment: Option<u64>,
    /// Place the nodes of each graph on N devices and split multi-device graphs into the
    /// stage graphs each device runs (as `opt --devices`; docs/multi-device.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub devices: Option<u32>,
    /// Split each graph into one graph per MPI rank (`@g.r0`, `@g.r1`, ...; docs/mpi.md):
    /// nodes placed on N devices as `--devices N` places them (or as written), each device a
    /// rank, transfers made send/receive pairs. Run with `mpiexec -n N cmdgraph run --mpi`
    /// or `cmdgraph run --ranks N`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64), conflicts_with = "devices")]
    pub ranks: Option<u32>,
    /// The bandwidth between devices `place-devices` prices transfers at, in GB/s (default
    /// 10), or `measure`: a transfer timed on this machine's devices.
    #[arg(long, value_name = "GBPS|measure", value_parser = crate::cmd::bandwidth::parse)]
    pub transfer_bandwidth: Option<crate::cmd::bandwidth::TransferBandwidth>,
    /// Sign the bundle with the ed25519 key in SEEDFILE (`cmdgraph keygen` writes one): a
    /// trailer after the content, which `cmdgraph run --trust` requires (docs/bundle.md).
    #[arg(long, value_name = "SEEDFILE", conflicts_with = "emit")]
    pub sign: Option<PathBuf>,
    /// Accept data races between unordered commands (E0280): report them as warnings.
    #[arg(long)]
    pub allow_races: bool,
}

/// A parsed `--passes` value (a newtype so that clap takes it as one value, not a list).
#[derive(Clone, Debug)]
pub struct PassList(pub Vec<&'static PassInfo>);

fn parse_passes(spec: &str) -> Result<PassList, String> {
    pipeline::parse_pipeline(spec, REGISTRY).map(PassList).map_err(|e| e.to_string())
}

/// Runs `cmdgraph compile`.
pub fn run(args: &CompileArgs) -> Outcome {
    let mut shown = Progress::new(args.progress);
    let t = Instant::now();
    shown.update("parse", None);
    let input = io::read_input(&args.input)?;
    // The key is read before the compile, so a wrong key file fails in a moment, not after it.
    let key = args.sign.as_deref().map(super::keygen::read_signing_key).transpose()?;
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify_with(&input, &module, args.allow_races)?);
    // Accepted, but likely not meant (W0290: `updatable` with graph-owned allocations).
    super::print_warnings(&cmdgraph_ir::diag::render_all(
        &cmdgraph_ir::verify::warnings(&module),
        &input.name,
        &input.text,
    ));
    let front = t.elapsed();
    let mut passes: Vec<&'static PassInfo> = match &args.passes {
        Some(p) => p.0.clone(),
        None => cmdgraph_passes::default_pipeline(),
    };
    // A module whose graphs span devices as written needs its stage graphs to run at all:
    // `split-devices` is added with the default pipeline (placement kept as written).
    let spans = module.graphs.iter().any(|(_, g)| cmdgraph_ir::placement::spans_devices(&module, g));
    if args.ranks.is_some() {
        passes = cmdgraph_passes::with_split_ranks(passes);
    } else if args.devices.is_some_and(|d| d > 1) || (spans && args.passes.is_none()) {
        passes = cmdgraph_passes::with_place_devices(passes);
    }
    let options = Options { opt_level: args.opt_level };
    if let Some(what) = args.emit {
        return emit(args, &input, &module, &passes, what);
    }
    let external = externals(&args.input, &input, &module)?;
    let compiler = WithExternal { inner: &Llvm, external: &external };
    let mut on_step = |step: Step<'_>| match step {
        Step::Verify => shown.update("verify", None),
        Step::Pass { index, total, name } => shown.update(name, Some((index, total))),
        Step::Packaging => shown.update("packaging", None),
        Step::Codegen { done, total, kernel } => shown.update(&format!("codegen @{kernel}"), Some((done, total))),
        Step::Finishing => shown.update("printing and hashing the bundle", None),
    };
    let pipeline = pipeline_options(args, &module)?;
    let compiled = compile_module_configured(&module, &passes, &pipeline, &options, &compiler, &mut on_step);
    let (bundle, report) = compiled.map_err(|e| match e {
        // Diagnostics of the source module point into the input: render them there.
        CompileError::Invalid(d) => super::reject(&input, &d),
        e => located(&input, e.diagnostic(), e.is_internal(), &e),
    })?;
    shown.update("serializing", None);
    let t = Instant::now();
    let bytes = match &key {
        Some(key) => bundle.to_bytes_signed(key),
        None => bundle.to_bytes(),
    }
    .map_err(|e| Failure::Rejected(format!("error: {e}\n")))?;
    let serialize = t.elapsed();
    shown.update("writing", None);
    let t = Instant::now();
    let target = match &args.bundle_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::Io(format!("error: cannot create `{}`: {e}", dir.display())))?;
            Some(dir.join(format!("{}.cgb", cmdgraph_ir::bundle::key::graph_key(&module))))
        }
        None => output_path(&args.input, args.output.as_deref()),
    };
    let written = io::write_output_bytes(target.as_deref(), &bytes);
    let write = t.elapsed();
    shown.finish();
    if args.explain {
        if report.remarks.is_empty() {
            eprintln!("explain: no remarks (no graph has a kernel node, or fuse-kernels was not in the pipeline)");
        }
        eprint!("{}", report.remarks.concat());
    }
    if args.time_passes {
        eprint!("{}", render_times(&report, Outer { front, serialize, write }));
    }
    if args.stats {
        eprint!("{}", cmdgraph_passes::pipeline::render_stats(&report.passes));
    }
    written
}

/// The pipeline options `compile` shares with `opt` (one spelling for both).
fn pipeline_options(
    args: &CompileArgs,
    module: &cmdgraph_ir::Module,
) -> Result<cmdgraph_codegen::bundle::PipelineOptions, Failure> {
    // `--ranks N` places on N devices, unless the module is placed as written already.
    let placed = module.graphs.iter().any(|(_, g)| cmdgraph_ir::placement::spans_devices(module, g));
    let devices = args.devices.or(args.ranks.filter(|_| !placed));
    // Measured only where place-devices runs.
    let bandwidth = args.transfer_bandwidth.filter(|_| devices.is_some_and(|d| d > 1));
    Ok(cmdgraph_codegen::bundle::PipelineOptions {
        verify_each: args.verify_each,
        fuse_fp_reassoc: args.fuse_fp_reassoc,
        memory_alignment: args.memory_alignment,
        devices,
        transfer_bytes_per_us: bandwidth.map(|b| b.bytes_per_us()).transpose()?,
        ranks: args.ranks,
    })
}

/// The phases `cmdgraph compile` times around the compiler's own report.
struct Outer {
    /// Reading, parsing and verifying the input (with its diagnostics).
    front: Duration,
    /// Serializing the bundle.
    serialize: Duration,
    /// Writing it.
    write: Duration,
}

/// `--emit`: code generation output of the variants the bundle would hold (the module after
/// `passes`, as `compile` runs them) instead of a bundle, to stdout or `-o` (a binary needs
/// `-o`).
fn emit(
    args: &CompileArgs,
    input: &io::Input,
    module: &cmdgraph_ir::Module,
    passes: &[&'static PassInfo],
    what: EmitKind,
) -> Outcome {
    let optimized = compile_emit::optimize(module, passes, &pipeline_options(args, module)?).map_err(|e| match e {
        CompileError::Invalid(d) => super::reject(input, &d),
        e => located(input, e.diagnostic(), e.is_internal(), &e),
    })?;
    match compile_emit::emit(&optimized, module, args.kernel.as_deref(), args.opt_level, what).map_err(|e| match e {
        compile_emit::EmitError::Usage(text) => Failure::Rejected(text + "\n"),
        compile_emit::EmitError::Codegen(e) => located(input, e.diagnostic(), e.is_internal(), &e),
    })? {
        Emitted::Text(text) => io::write_output(args.output.as_deref(), &text),
        Emitted::Binary(bytes) => match args.output.as_deref() {
            Some(path) if !io::is_stdio(path) => io::write_atomic(path, &bytes)
                .map_err(|e| Failure::Io(format!("error: cannot write `{}`: {e}", path.display()))),
            _ => Err(Failure::Rejected("error: --emit=spirv is binary; give -o FILE\n".to_string())),
        },
    }
}

/// `-o` as given; else FILE with `.cgb`; stdout for stdin.
fn output_path(input: &Path, output: Option<&Path>) -> Option<PathBuf> {
    match output {
        Some(o) => Some(o.to_path_buf()),
        None if io::is_stdio(input) => None,
        None => Some(input.with_extension("cgb")),
    }
}

/// A code generation failure: rendered at its location in the input when it has one (else
/// as text after the file name); an internal compiler error exits 4, anything else 1.
fn located(
    input: &io::Input,
    diagnostic: Option<cmdgraph_ir::diag::Diagnostic>,
    internal: bool,
    e: &dyn std::fmt::Display,
) -> Failure {
    let text = match diagnostic {
        Some(d) => d.render(&input.name, &input.text),
        None => format!("error: {}: {e}\n", input.name),
    };
    if internal {
        Failure::Internal(text)
    } else {
        Failure::Rejected(text)
    }
}

/// The pass timing table, then one line per compiled kernel variant.
fn render_times(report: &CompileReport, outer: Outer) -> String {
    let line = |out: &mut String, what: &str, t: Duration| {
        let _ = writeln!(out, "  {what}: {:.6} s", t.as_secs_f64());
    };
    let mut out = String::new();
    line(&mut out, "read, parse and verify the input", outer.front);
    line(&mut out, "verify (compiler: source and optimized module)", report.verify);
    out.push_str(&render_timings(&report.passes));
    line(&mut out, "packaging (schedule, memory plan, launch tables)", report.packaging);
    for (kernel, wg, t) in &report.kernels {
        let _ = writeln!(out, "  codegen @{kernel} {}x{}x{}: {:.6} s", wg[0], wg[1], wg[2], t.as_secs_f64());
    }
    line(&mut out, "print and hash the bundle", report.finishing);
    line(&mut out, "compile total", report.total);
    line(&mut out, "serialize the bundle", outer.serialize);
    line(&mut out, "write the bundle", outer.write);
    line(&mut out, "total", outer.front + report.total + outer.serialize + outer.write);
    out
}

/// External SPIR-V kernels, read relative to the input's directory (the working directory
/// for stdin), checked against their signatures and reported at their `spirv` clauses
/// before any packaging.
pub(crate) fn externals(
    path: &Path,
    input: &io::Input,
    module: &cmdgraph_ir::Module,
) -> Result<external::Externals, Failure> {
    let base = match path.parent() {
        Some(dir) if !io::is_stdio(path) => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    external::load(module, &base).map_err(|d| {
        let narrowed: Vec<_> = d.into_iter().map(|d| spirv_clause(d, &input.text)).collect();
        super::reject(input, &narrowed)
    })
}

/// Points an external kernel's diagnostic at its `spirv "FILE" entry "NAME"` clause rather
/// than the whole kernel declaration (the IR keeps the declaration's span only).
fn spirv_clause(mut d: cmdgraph_ir::diag::Diagnostic, source: &str) -> cmdgraph_ir::diag::Diagnostic {
    let (start, end) = (d.span.start as usize, d.span.end as usize);
    let Some(decl) = source.get(start..end) else { return d };
    // The clause follows the signature's closing parenthesis; a parameter cannot contain it.
    let Some(at) = decl.rfind(") spirv ").map(|i| i + 2).or_else(|| decl.find("spirv \"")) else { return d };
    d.span = cmdgraph_ir::Span::new(start + at, end);
    d
}

/// The bytes of the bundle `cmdgraph compile FILE` would write for `module` (the default
/// pipeline and options; external kernels read beside `path`): what `run` uses when it is
/// given IR text.
pub(crate) fn bundle_bytes(path: &Path, input: &io::Input, module: &cmdgraph_ir::Module) -> Result<Vec<u8>, Failure> {
    let external = externals(path, input, module)?;
    let compiler = WithExternal { inner: &Llvm, external: &external };
    // A module whose graphs span devices gets its stage graphs (`split-devices`; placement
    // stays as written: `place-devices` places nothing without a device count).
    let spans = module.graphs.iter().any(|(_, g)| cmdgraph_ir::placement::spans_devices(module, g));
    let passes = match spans {
        true => cmdgraph_passes::with_place_devices(cmdgraph_passes::default_pipeline()),
        false => cmdgraph_passes::default_pipeline(),
    };
    let pipeline = cmdgraph_codegen::bundle::PipelineOptions::default();
    let (bundle, _) =
        compile_module_configured(module, &passes, &pipeline, &Options::default(), &compiler, &mut |_| {}).map_err(
            |e| match e {
                CompileError::Invalid(d) => super::reject(input, &d),
                e => located(input, e.diagnostic(), e.is_internal(), &e),
            },
        )?;
    bundle.to_bytes().map_err(|e| Failure::Rejected(format!("error: {e}\n")))
}
