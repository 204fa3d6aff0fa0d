//! Host tasks split a run into segments ordered by a timeline semaphore; their callbacks
//! see the device's results and their writes reach later kernels.

mod common;

use cmdgraph_ir::interp::{HostError, Interpreter};
use common::*;

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[256]
usm @h : f32[256]
usm @out : f32[256]

graph @g {{
  %fa = kernel @ramp range(256) args(@a)
  %host = host_task \"negate\" access(@a read, @h write) after(%fa)
  %k = kernel @scale range(256) args(@h, @out, 3.0) after(%host)
}}
"
    )
}

#[test]
fn host_task_between_device_segments_matches_interpreter() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.register_callback("negate", |ctx| {
        let a: Vec<f32> = ctx.read_as("a")?;
        let neg: Vec<f32> = a.iter().map(|v| -v).collect();
        ctx.write_as("h", 0, &neg)
    });
    let e = ex.finalize("g").unwrap();
    // Two device segments around the host task: two command buffers.
    assert_eq!(ex.recorded(e).unwrap(), 2);
    ex.run(e).unwrap();
    ex.run(e).unwrap();
    let got: Vec<f32> = ex.read_as("out").unwrap();
    no_messages(&ex);

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.register_callback("negate", |ctx| {
        let a: Vec<f32> = ctx.read_as("a")?;
        let neg: Vec<f32> = a.iter().map(|v| -v).collect();
        ctx.write_as("h", 0, &neg).map_err(|e: HostError| e)
    });
    let ie = it.finalize("g").unwrap();
    it.run(ie).unwrap();
    it.run(ie).unwrap();
    let want: Vec<f32> = it.read_as("out").unwrap();
    assert_eq!(got, want);
    assert_eq!(got[5], -15.0);
}

#[test]
fn host_task_errors_name_the_node() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let err = ex.run(e).unwrap_err().to_string();
    assert!(err.contains("%host") && err.contains("negate"), "{err}");
    ex.register_callback("negate", |ctx| ctx.write_as("a", 0, &[1.0f32]));
    let err = ex.run(e).unwrap_err().to_string();
    assert!(err.contains("declared"), "{err}");
    ex.wait(e).unwrap();
    no_messages(&ex);
}
