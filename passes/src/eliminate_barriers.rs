//! `eliminate-barriers` (placeholder until its helper lands; not registered as done).

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::Module;

/// Registry entry.
pub const INFO: PassInfo =
    PassInfo { name: "eliminate-barriers", summary: "TODO", statistics: &[], preserves: "TODO", run };

fn run(_module: &mut Module, _ctx: &mut PassContext) -> Result<(), PassError> {
    Ok(())
}
