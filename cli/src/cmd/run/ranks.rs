//! `cmdgraph run --ranks N` and `cmdgraph run --mpi`: a module's rank graphs (`@g.r0`,
//! `@g.r1`, ...; docs/mpi.md), each rank on its own Vulkan device context with its
//! communication nodes running through a communicator.
//!
//! With `--ranks N` every rank runs in this process, one thread each, on the simulated
//! communicator of `cmdgraph_ir::comm::local` (what the interpreter's oracle uses), so a
//! multi-rank graph runs on Vulkan without MPI. With `--mpi` (the `mpi` cargo feature) this
//! process is one rank of an MPI job, `mpiexec -n N cmdgraph run --mpi ...`, and runs the
//! graph of its rank. In both, `{rank}` in an `--input`/`--output` file or in `--device`
//! stands for the rank.

use super::{on_device, pick_rank_base, steps, Files, RunArgs};
use crate::cmd::interp::{read_data, resolve_inputs, resolve_outputs, Binding};
use crate::exit::Failure;
use cmdgraph_executor::DeviceChoice;
use cmdgraph_ir::comm::{self, local, SharedCommunicator};
use cmdgraph_ir::Module;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// How long a rank waits for another when `--timeout` says nothing (the executor's own
/// default deadline).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// What every rank shares: the bundle, its module and the graph's base name.
pub(super) struct Job<'a> {
    pub args: &'a RunArgs,
    pub loaded: &'a cmdgraph_executor::Loaded,
    pub module: &'a Module,
    pub file: &'a str,
    pub options: &'a cmdgraph_executor::load::LoadOptions,
}

/// How long a rank waits for another: nine tenths of `--timeout` (or of its default), so
/// that a peer that never answers is reported by the communicator, naming the peer, the tag
/// and the node, before the executor's own deadline would report only that the host-task
/// thread is still busy. No deadline (0) waits a very long time.
fn timeout(args: &RunArgs) -> Duration {
    match args.timeout {
        Some(t) if t.is_zero() => Duration::from_secs(u32::MAX as u64),
        Some(t) => t.mul_f64(0.9),
        None => DEFAULT_TIMEOUT.mul_f64(0.9),
    }
}

/// `path` with `{rank}` replaced.
fn for_rank(path: &std::path::Path, rank: u32) -> PathBuf {
    PathBuf::from(path.to_string_lossy().replace("{rank}", &rank.to_string()))
}

fn bindings(list: &[Binding], rank: u32) -> Vec<Binding> {
    list.iter().map(|b| Binding { name: b.name.clone(), path: for_rank(&b.path, rank) }).collect()
}

/// Runs rank `rank` of `size` through `comm`: its summary (headed by the rank) and files.
fn run_rank(
    job: &Job<'_>,
    base: &str,
    rank: u32,
    size: u32,
    comm: &SharedCommunicator,
) -> Result<(String, Files), Failure> {
    let args = job.args;
    let graph = comm::graph_for_rank(job.module, base, rank);
    let plan = steps::plan(&args.steps, job.loaded, &graph, job.options)?;
    let inputs = resolve_inputs(job.module, &bindings(&args.inputs, rank), job.file)?;
    let outputs = resolve_outputs(job.module, &graph, &bindings(&args.outputs, rank), job.file, true)?;
    let mut bound = Vec::new();
    for (b, layout) in &inputs {
        bound.push((b.name.clone(), read_data(&b.path, &format!("@{}", b.name), *layout)?));
    }
    let device = args
        .device
        .as_deref()
        .map_or(DeviceChoice::Default, |d| DeviceChoice::parse(&d.replace("{rank}", &rank.to_string())));
    let mut shown = crate::progress::Progress::new(crate::progress::When::Never);
    let loaded = job.loaded.clone();
    let (summary, files) =
        on_device(args, loaded, job.module, &graph, (&bound, &outputs), &plan, &mut shown, device, Some(comm))
            .map_err(|f| match f {
                Failure::Rejected(text) => Failure::Rejected(format!("rank {rank} of {size}: {text}")),
                other => other,
            })?;
    let mut out = String::new();
    for line in summary.lines() {
        let _ = writeln!(out, "rank {rank}: {line}");
    }
    Ok((out, files))
}

/// `--ranks N`: every rank on a thread of this process, on the simulated communicator.
pub(super) fn in_process(job: &Job<'_>, size: u32) -> Result<(String, Files), Failure> {
    let base = pick_rank_base(job.module, job.args.graph.as_deref(), job.file)?;
    let results: Vec<Result<(String, Files), Failure>> =
        local::run(size, timeout(job.args), |rank, comm| run_rank(job, &base, rank, size, &comm))
            .into_iter()
            .map(|r| r.unwrap_or_else(|_| Err(Failure::Rejected("error: a rank's thread panicked".into()))))
            .collect();
    let mut summary = String::new();
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok((s, f)) => {
                summary.push_str(&s);
                files.extend(f);
            }
            Err(Failure::Rejected(text)) => errors.push(text),
            Err(other) => return Err(other),
        }
    }
    if !errors.is_empty() {
        // Every rank's error: the first is usually the cause, the rest its consequences.
        return Err(Failure::Rejected(errors.join("\n")));
    }
    Ok((summary, files))
}

/// This process's rank of an MPI job: rank, size and communicator.
pub(super) struct MpiRank {
    pub rank: u32,
    size: u32,
    comm: SharedCommunicator,
}

impl MpiRank {
    /// `path` with `{rank}` replaced: each rank may load a bundle of its own.
    pub fn bundle(&self, path: &std::path::Path) -> PathBuf {
        for_rank(path, self.rank)
    }
}

/// `--mpi`: this process is one rank of an MPI job; the graph of its rank runs.
pub(super) fn mpi(job: &Job<'_>, me: MpiRank) -> Result<(String, Files), Failure> {
    let base = pick_rank_base(job.module, job.args.graph.as_deref(), job.file)?;
    run_rank(job, &base, me.rank, me.size, &me.comm)
    // The executor is gone; the last reference to the communicator goes with `me`, which
    // delivers queued sends and finalizes MPI.
}

/// Starts MPI for `--mpi` (before the bundle is read: its path may name the rank).
#[cfg(feature = "mpi")]
pub(super) fn start_mpi(args: &RunArgs) -> Result<Option<MpiRank>, Failure> {
    use cmdgraph_ir::comm::Communicator as _;
    if !args.mpi {
        return Ok(None);
    }
    let comm = cmdgraph_mpi::MpiCommunicator::init(timeout(args))
        .map_err(|e| Failure::Rejected(format!("error: cannot start MPI: {e}")))?;
    let (rank, size) = (comm.rank(), comm.size());
    Ok(Some(MpiRank { rank, size, comm: std::sync::Arc::new(std::sync::Mutex::new(comm)) }))
}

/// `--mpi` in a build without MPI.
#[cfg(not(feature = "mpi"))]
pub(super) fn start_mpi(args: &RunArgs) -> Result<Option<MpiRank>, Failure> {
    if !args.mpi {
        return Ok(None);
    }
    Err(Failure::Rejected(
        "error: --mpi: this cmdgraph was built without MPI; build it with `cargo build -p cmdgraph-cli --features mpi` \
         (needs Debian's libmpich-dev and libclang-dev, which scripts/setup.sh installs), or run every rank in one \
         process with --ranks N"
            .into(),
    ))
}
