//! The bundle writer: source module → passes → schedule, memory plan, kernel variants →
//! [`Bundle`] (docs/bundle.md).
//!
//! [`compile_module`] is the whole of `cmdgraph compile` short of reading and writing files.
//! Kernel code generation goes through the [`KernelCompiler`] trait so that packaging can
//! be tested without LLVM; the real implementation is [`Llvm`].
//!
//! Determinism: every table is built in module order (graphs, nodes in creation order,
//! alternatives in list order) or sorted; kernel variants are compiled in the order of
//! their `(kernel name, work-group size, variant)` key; no time, path or host name goes
//! into the bundle. Timings are returned beside it, in [`CompileReport`].

mod launches;
mod llvm;
mod memory;

pub use llvm::Llvm;

use crate::schedule::{self, ScheduleError};
use crate::{CodegenError, CompiledKernel, Handle, Kernel, Module, Options, Variant};
use cmdgraph_ir::bundle::{Bundle, BundleError, GraphPlan, NodeOrigin, FORMAT_VERSION};
use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::{Arg, Launch, Span};
use cmdgraph_passes::pipeline::{run_pipeline, PipelineEvent, PipelineReport, RunOptions};
use cmdgraph_passes::{PassContext, PassError, PassInfo};
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;
use std::time::{Duration, Instant};

/// Kernel code generation as the bundle writer needs it: pick the variant a launch needs,
/// compile a variant to a validated SPIR-V module.
pub trait KernelCompiler {
    /// The variant of `kernel` that `launch` with `args` needs. Dynamic-parameter
    /// arguments arrive already replaced by their current values.
    fn choose_variant(
        &self,
        module: &Module,
        kernel: Handle<Kernel>,
        launch: &Launch,
        args: &[Arg],
    ) -> Result<Variant, CodegenError>;

    /// One SPIR-V module for `kernel` at `variant`, validated. What LLVM or `spirv-val`
    /// rejects is a [`CodegenError::Internal`] (a bug in the compiler, never in the input).
    fn compile_kernel(
        &self,
        module: &Module,
        kernel: Handle<Kernel>,
        variant: &Variant,
        options: &Options,
    ) -> Result<CompiledKernel, CodegenError>;
}

/// Why a module could not be compiled.
#[derive(Debug)]
pub enum CompileError {
    /// The source module does not verify (callers normally verify first and render these
    /// against the source text).
    Invalid(Vec<Diagnostic>),
    /// A pass failed.
    Pass(PassError),
    /// The pipeline's output does not verify: a bug in a pass.
    InvalidOutput(Vec<Diagnostic>),
    /// A graph cannot be scheduled.
    Schedule(ScheduleError),
    /// Choosing or compiling a kernel variant failed; the error names the kernel.
    Codegen {
        /// Where: `@graph %node` of the first launch that needs the variant.
        at: String,
        /// That launch's statement in the source ([`Span::UNDEFINED`] when unknown).
        at_span: Span,
        /// Why.
        error: CodegenError,
    },
    /// The bundle could not be serialized.
    Bundle(BundleError),
}

impl CompileError {
    /// Whether the failure is a bug in cmdgraph (or LLVM), not in the input: code generation
    /// made something LLVM or `spirv-val` rejects, or a pass made a module that does not
    /// verify. Front ends report these as internal compiler errors.
    pub fn is_internal(&self) -> bool {
        match self {
            CompileError::Codegen { error, .. } => error.is_internal(),
            CompileError::InvalidOutput(_) => true,
            _ => false,
        }
    }

    /// A code generation failure as a diagnostic located in the source module (at the
    /// kernel, the launch that needs the variant as a secondary label), when it has a
    /// location; see [`CodegenError::diagnostic`].
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        match self {
            CompileError::Codegen { at, at_span, error } => {
                let d = error.diagnostic()?;
                Some(if at_span.is_defined() { d.with_secondary(*at_span, format!("{at} launches it")) } else { d })
            }
            _ => None,
        }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Invalid(d) => write!(f, "the module does not verify ({} diagnostics)", d.len()),
            CompileError::Pass(e) => write!(f, "{e}"),
            CompileError::InvalidOutput(d) => {
                let first = d.first().map(|d| d.message.as_str()).unwrap_or("no diagnostic");
                write!(f, "the optimized module does not verify (a bug in a pass): {first}")
            }
            CompileError::Schedule(e) => write!(f, "{e}"),
            CompileError::Codegen { at, error, .. } => write!(f, "{at}: {error}"),
            CompileError::Bundle(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CompileError {}

/// How long each part of a compile took: for `--time-passes`-like output and the
/// compile-time benchmark, never for the bundle.
#[derive(Clone, Debug, Default)]
pub struct CompileReport {
    /// What the passes said about their decisions (`fuse-kernels`' explanations), in order.
    pub remarks: Vec<String>,
    /// Verifying the source module and the optimized one.
    pub verify: Duration,
    /// The pass pipeline.
    pub passes: PipelineReport,
    /// Scheduling, memory planning and launch tables, over all graphs.
    pub packaging: Duration,
    /// Per compiled variant, in bundle order: (kernel, work-group size, wall time).
    pub kernels: Vec<(String, [u32; 3], Duration)>,
    /// Printing the source and optimized IR into the bundle and hashing it.
    pub finishing: Duration,
    /// The whole of [`compile_module`].
    pub total: Duration,
}

/// What [`compile_module_with`] is doing, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress<'a> {
    /// Verifying the source module.
    Verify,
    /// Pass `index` (0-based) of `total`.
    Pass {
        /// Position in the pipeline.
        index: usize,
        /// Passes in the pipeline.
        total: usize,
        /// The pass.
        name: &'static str,
    },
    /// Verifying the optimized module, then scheduling, memory plans and launch tables.
    Packaging,
    /// Generating variant `done` (0-based) of `total`.
    Codegen {
        /// Variants generated so far.
        done: usize,
        /// Variants in all.
        total: usize,
        /// The kernel.
        kernel: &'a str,
    },
    /// Printing the source and optimized IR into the bundle and hashing it.
    Finishing,
}

/// Compiles `source` with `passes` and `compiler`. The module must verify.
pub fn compile_module(
    source: &Module,
    passes: &[&'static PassInfo],
    options: &Options,
    compiler: &dyn KernelCompiler,
) -> Result<(Bundle, CompileReport), CompileError> {
    compile_module_with(source, passes, options, compiler, &mut |_| {})
}

/// How the pass pipeline runs inside [`compile_module_configured`]: what `cmdgraph opt`
/// sets too, so that `cmdgraph compile` builds exactly what `opt` shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PipelineOptions {
    /// Verify the module after every pass (`--verify-each`).
    pub verify_each: bool,
    /// `fuse-kernels` may reassociate and contract floating point (`--fuse-fp-reassoc`).
    pub fuse_fp_reassoc: bool,
    /// Offsets of the memory plan aligned to this (`--memory-alignment`); `None`: the default.
    pub memory_alignment: Option<u64>,
    /// `place-devices`' device count (`--devices`); `None`: the pass changes nothing.
    pub devices: Option<u32>,
    /// `place-devices`' bandwidth between devices in bytes per microsecond.
    pub transfer_bytes_per_us: Option<u64>,
    /// `split-ranks`' rank count (`--ranks`); `None`: as many as `devices`.
    pub ranks: Option<u32>,
}

/// [`compile_module`], telling `progress` what it is doing as it goes.
pub fn compile_module_with(
    source: &Module,
    passes: &[&'static PassInfo],
    options: &Options,
    compiler: &dyn KernelCompiler,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(Bundle, CompileReport), CompileError> {
    compile_module_configured(source, passes, &PipelineOptions::default(), options, compiler, progress)
}

/// [`compile_module_with`] with the pipeline run as `pipeline` says.
pub fn compile_module_configured(
    source: &Module,
    passes: &[&'static PassInfo],
    pipeline: &PipelineOptions,
    options: &Options,
    compiler: &dyn KernelCompiler,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(Bundle, CompileReport), CompileError> {
    let start = Instant::now();
    progress(Progress::Verify);
    verify(source).map_err(CompileError::Invalid)?;
    let unsupported = crate::support::check(source);
    if !unsupported.is_empty() {
        return Err(CompileError::Invalid(unsupported));
    }
    let mut optimized = source.clone();
    let mut ctx = PassContext { memory_alignment: pipeline.memory_alignment, ..PassContext::default() };
    ctx.options.fuse_fp_reassoc = pipeline.fuse_fp_reassoc;
    ctx.options.devices = pipeline.devices;
    ctx.options.transfer_bytes_per_us = pipeline.transfer_bytes_per_us;
    ctx.options.ranks = pipeline.ranks;
    let verify_time = start.elapsed();
    let mut on_event = |event| {
        if let PipelineEvent::PassStarted { index, total, pass } = event {
            progress(Progress::Pass { index, total, name: pass });
        }
    };
    let passes_report = run_pipeline(
        &mut optimized,
        passes,
        &RunOptions { discard_on_error: true, verify_each: pipeline.verify_each, ..RunOptions::default() },
        &mut ctx,
        &mut on_event,
    )
    .map_err(CompileError::Pass)?;
    progress(Progress::Packaging);
    let t = Instant::now();
    verify(&optimized).map_err(CompileError::InvalidOutput)?;
    let verify_time = verify_time + t.elapsed();

    let t = Instant::now();
    let mut needed = launches::collect(&optimized, compiler)?;
    let mut graphs = Vec::new();
    for (_, graph) in optimized.graphs.iter() {
        // Origins are keyed (graph, node), so this graph's are one range of the map; the
        // node names are a set, not a scan of the nodes per origin (issue 17).
        let names: HashSet<&str> = graph.nodes.iter().map(|(_, n)| n.name.as_str()).collect();
        count_work(names.len());
        let origins = ctx
            .origins
            .range((graph.name.clone(), String::new())..)
            .take_while(|((g, _), _)| *g == graph.name)
            .inspect(|_| count_work(1))
            .filter(|((_, n), _)| names.contains(n.as_str()))
            .map(|((_, n), sources)| NodeOrigin { node: n.clone(), sources: sources.clone() })
            .collect();
        graphs.push(GraphPlan {
            name: graph.name.clone(),
            segments: schedule::schedule(graph).map_err(CompileError::Schedule)?,
            memory: memory::pool_plan(graph, ctx.memory_plans.get(&graph.name)),
            origins,
            launches: needed.take_table(&graph.name),
        });
    }
    let packaging = t.elapsed();

    let mut kernels = Vec::with_capacity(needed.variants.len());
    let mut kernel_times = Vec::with_capacity(needed.variants.len());
    for (i, v) in needed.variants.iter().enumerate() {
        progress(Progress::Codegen { done: i, total: needed.variants.len(), kernel: &v.name });
        let t = Instant::now();
        let compiled = compiler
            .compile_kernel(&optimized, v.kernel, &v.variant, options)
            .and_then(|k| launches::check(k, &v.name, &v.variant, optimized.kernels.span(v.kernel)))
            .map_err(|error| CompileError::Codegen { at: v.first_use.clone(), at_span: v.first_use_span, error })?;
        kernel_times.push((v.name.clone(), v.variant.workgroup_size, t.elapsed()));
        kernels.push(compiled);
    }

    progress(Progress::Finishing);
    let t = Instant::now();
    let mut bundle = Bundle {
        format_version: FORMAT_VERSION,
        content_hash: String::new(),
        source: cmdgraph_ir::text::print(source),
        optimized: cmdgraph_ir::text::print(&optimized),
        pipeline: passes.iter().map(|p| p.name).collect::<Vec<_>>().join(","),
        kernels,
        graphs,
    };
    bundle.content_hash = bundle.compute_hash().map_err(CompileError::Bundle)?;
    let finishing = t.elapsed();
    let report = CompileReport {
        remarks: std::mem::take(&mut ctx.remarks),
        verify: verify_time,
        passes: passes_report,
        packaging,
        kernels: kernel_times,
        finishing,
        total: start.elapsed(),
    };
    Ok((bundle, report))
}

thread_local! {
    static PACKAGING_WORK: Cell<u64> = const { Cell::new(0) };
}

/// Counts `items` visited by packaging's per-graph loops (origins, node names, launch uses).
fn count_work(items: usize) {
    PACKAGING_WORK.with(|w| w.set(w.get().saturating_add(items as u64)));
}

/// Items packaging has visited on this thread so far (origins looked at, node names, launch
/// uses): a machine-independent measure of its work, for the test that it stays linear in
/// the module's size (issue 17). Not a timing; never goes into a bundle.
pub fn packaging_work() -> u64 {
    PACKAGING_WORK.with(Cell::get)
}

/// Errors only; warnings do not stop a compile. Data races (E0280) are allowed here: the
/// front end decides on them (`cmdgraph compile --allow-races`), and the compiler neither
/// adds nor removes the orderings of the graphs it packages.
fn verify(module: &Module) -> Result<(), Vec<Diagnostic>> {
    let options = cmdgraph_ir::verify::VerifyOptions { allow_races: true };
    match cmdgraph_ir::verify::verify_with(module, &options) {
        Err(d) if d.iter().any(|d| d.severity == cmdgraph_ir::diag::Severity::Error) => Err(d),
        _ => Ok(()),
    }
}
