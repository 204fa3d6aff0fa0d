//! Several ranks in one process: the oracle of communication nodes (docs/mpi.md).
//!
//! Each rank gets an [`Interpreter`] of its own, so its own memory, as each MPI process
//! has, and runs on a thread of its own; their communication nodes meet in
//! [`cmdgraph_ir::comm::local`], which matches messages as MPI does and combines
//! all-reduces in rank order. A rank that fails ends its communicator, so the ranks waiting
//! on it fail too (naming it) instead of hanging.

use crate::{InterpError, Interpreter, RunOptions};
use cmdgraph_ir::comm::{self, local, SharedCommunicator};
use cmdgraph_ir::module::Module;
use std::time::Duration;

/// How one simulation runs.
pub struct Simulation<'a> {
    /// The module of every rank.
    pub module: &'a Module,
    /// The graph: rank `r` runs `@graph.rR`, or `@graph` when the module has no such graph.
    pub graph: &'a str,
    /// How many ranks.
    pub size: u32,
    /// Runs of each rank's executable graph.
    pub runs: u64,
    /// The options of every run (with `check_races`, a race fails the rank).
    pub options: RunOptions,
    /// How long a rank waits for another before it fails.
    pub timeout: Duration,
}

/// A rank's setup before its graph is finalized: binds its inputs, registers its callbacks.
pub type Setup<'s> = dyn Fn(u32, &mut Interpreter) -> Result<(), InterpError> + Sync + 's;

/// Runs every rank of `sim` to the end, each set up by `setup`; returns each rank's
/// interpreter (to read its memory), or the error that ended it, rank 0 first.
pub fn simulate(sim: &Simulation<'_>, setup: &Setup<'_>) -> Vec<Result<Interpreter, InterpError>> {
    local::run(sim.size, sim.timeout, |rank, comm| run_rank(sim, setup, rank, comm))
        .into_iter()
        .map(|r| r.unwrap_or_else(|_| Err(InterpError::api("a rank's thread panicked"))))
        .collect()
}

fn run_rank(
    sim: &Simulation<'_>,
    setup: &Setup<'_>,
    rank: u32,
    comm: SharedCommunicator,
) -> Result<Interpreter, InterpError> {
    let mut interp = Interpreter::new(sim.module)?;
    interp.set_communicator(&comm);
    setup(rank, &mut interp)?;
    let exec = interp.finalize(&comm::graph_for_rank(sim.module, sim.graph, rank))?;
    for _ in 0..sim.runs {
        let stats = interp.run_with(exec, &sim.options)?;
        // With `check_races`, a race is the simulation's failure: its outputs would depend
        // on an order the graph does not fix.
        if let Some(race) = stats.races.first() {
            return Err(InterpError::api(format!("rank {rank}: {race}")));
        }
    }
    Ok(interp)
}
