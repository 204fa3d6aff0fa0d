//! Graphs of element-wise kernels, copies and fills on Vulkan (validation on) against the
//! reference interpreter.

mod common;

use cmdgraph_interp::Interpreter;
use common::*;

fn pipeline_ir() -> String {
    format!(
        "{KERNELS_IR}
usm @x : f32[1000]
usm @y : f32[1000]
usm @z : f32[1000]
usm @out : f32[1000]
usm @host : f32[1000] host

graph @main {{
  %fill_x = kernel @ramp range(1000) args(@x)
  %fill_y = kernel @ramp range(1000) args(@y)
  %ready = empty after(%fill_x, %fill_y)
  %scale = kernel @scale range(1000) args(@x, @z, 2.0) after(%ready)
  %sum = kernel @add2 range(1000) args(@z, @y, @out) after(%scale)
  %copy = memcpy @host, @out, 4000 after(%sum)
}}
"
    )
}

#[test]
fn pipeline_matches_interpreter() {
    let ir = pipeline_ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("main").unwrap();
    ex.run(e).unwrap();
    let host: Vec<f32> = ex.read_as("host").unwrap();
    no_messages(&ex);

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut interp = Interpreter::new(&module).unwrap();
    let ie = interp.finalize("main").unwrap();
    interp.run(ie).unwrap();
    let want: Vec<f32> = interp.read_as("host").unwrap();
    assert_eq!(host, want);
    assert_eq!(host[999], 3.0 * 999.0);
    // One device segment: one command buffer recorded at finalize.
    assert_eq!(ex.recorded(e).unwrap(), 1);
}
