//! `inline-calls`: replace every `call` in a kernel by the body of the function it calls,
//! and remove the functions.
//!
//! The passes after it (fusion, `tile-contractions`, the footprint analysis that race
//! checks and `plan-memory` use) then see each kernel whole, and codegen gets kernels
//! without calls (it inlines any left itself). The inliner is `cmdgraph_ir::inline`; the
//! interpreter runs calls as calls, so the semantic checks compare the two.

use crate::{PassContext, PassError, PassInfo};
use cmdgraph_ir::Module;

/// Registry entry.
pub const INFO: PassInfo = PassInfo {
    name: "inline-calls",
    summary: "inline every function call into its kernel and remove the functions",
    statistics: &[
        ("calls-inlined", "calls replaced by the callee's body, nested ones included"),
        ("functions-removed", "function definitions removed (all of them, once inlined)"),
    ],
    preserves: "every graph and kernel signature as it is; only kernel bodies change",
    run,
};

fn run(module: &mut Module, ctx: &mut PassContext) -> Result<(), PassError> {
    let functions = module.functions.len() as u64;
    let calls = cmdgraph_ir::inline::inline_module(module).map_err(|e| PassError::Failed {
        pass: INFO.name,
        graph: String::new(),
        node: None,
        message: e.to_string(),
    })?;
    ctx.bump("calls-inlined", calls as u64);
    ctx.bump("functions-removed", functions);
    Ok(())
}
