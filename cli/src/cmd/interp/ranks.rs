//! `cmdgraph interp --ranks N`: a module's rank graphs (`@g.r0`, `@g.r1`, ...; docs/mpi.md)
//! on the reference interpreter, every rank with its own memory on a thread of its own,
//! their communication nodes meeting in the simulated communicator
//! (`cmdgraph_ir::comm::local`): the oracle `cmdgraph run --ranks` and `--mpi` are checked
//! against. `{rank}` in an `--input`/`--output` file is the rank.

use super::{pick_rank_base, run_on, Binding, Done, InterpArgs};
use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_ir::comm::{self, local, SharedCommunicator};
use cmdgraph_ir::Module;
use std::path::PathBuf;
use std::time::Duration;

/// How long a rank waits for another. The simulation sees every rank, so a rank that waits
/// on one that cannot answer fails at once; this bounds only a slow peer.
const TIMEOUT: Duration = Duration::from_secs(600);

fn for_rank(list: &[Binding], rank: u32) -> Vec<Binding> {
    let at = |p: &PathBuf| PathBuf::from(p.to_string_lossy().replace("{rank}", &rank.to_string()));
    list.iter().map(|b| Binding { name: b.name.clone(), path: at(&b.path) }).collect()
}

pub(super) fn run(args: &InterpArgs, input: &io::Input, module: &Module, size: u32) -> Outcome {
    let base = pick_rank_base(module, args.graph.as_deref(), &input.name)?;
    let one = |rank: u32, comm: SharedCommunicator| {
        let mine =
            InterpArgs { inputs: for_rank(&args.inputs, rank), outputs: for_rank(&args.outputs, rank), ..args.clone() };
        let graph = comm::graph_for_rank(module, &base, rank);
        run_on(&mine, input, module, &graph, Some(&comm)).map_err(|f| match f {
            Failure::Rejected(t) => Failure::Rejected(format!("rank {rank} of {size}: {t}")),
            other => other,
        })
    };
    let results: Vec<Result<Done, Failure>> = local::run(size, TIMEOUT, one)
        .into_iter()
        .map(|r| r.unwrap_or_else(|_| Err(Failure::Rejected("error: a rank panicked".into()))))
        .collect();
    let mut all = Done { summary: String::new(), files: Vec::new(), races: 0, differ: Vec::new(), compared: 0 };
    let mut errors = Vec::new();
    for (rank, r) in results.into_iter().enumerate() {
        match r {
            Ok(done) => {
                for line in done.summary.lines() {
                    all.summary.push_str(&format!("rank {rank}: {line}\n"));
                }
                all.files.extend(done.files);
                all.races += done.races;
            }
            Err(Failure::Rejected(t)) => errors.push(t),
            Err(other) => return Err(other),
        }
    }
    if !errors.is_empty() {
        return Err(Failure::Rejected(errors.join("\n")));
    }
    all.finish()
}
