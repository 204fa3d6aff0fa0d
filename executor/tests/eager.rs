//! Eager mode (`run_eager`): one command buffer and one submission per command, in order,
//! computes what the replayed graph computes, with validation and synchronization
//! validation silent.

mod common;

use cmdgraph_interp::Interpreter;
use common::*;

/// Kernels, an empty join, a copy and a fill in a graph of several stages.
fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @x : f32[1000]
usm @y : f32[1000]
usm @z : f32[1000]
usm @out : f32[1000]
usm @copy : f32[1000]

graph @main {{
  %fill_x = kernel @ramp range(1000) args(@x)
  %fill_y = kernel @ramp range(1000) args(@y)
  %ready = empty after(%fill_x, %fill_y)
  %scale = kernel @scale range(1000) args(@x, @z, 2.0) after(%ready)
  %sum = kernel @add2 range(1000) args(@z, @y, @out) after(%scale)
  %zero = memset @z, 0, 4000 after(%sum)
  %again = kernel @add2 range(1000) args(@out, @out, @out) after(%zero)
  %cp = memcpy @copy, @out, 4000 after(%again)
}}
"
    )
}

fn read_all(ex: &cmdgraph_executor::Executor) -> Vec<Vec<f32>> {
    ["x", "y", "z", "out", "copy"].iter().map(|n| ex.read_as(n).unwrap()).collect()
}

#[test]
fn eager_matches_replay_and_interpreter() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("main").unwrap();
    // Seven commands (the empty join records nothing): seven submissions.
    assert_eq!(ex.run_eager(e).unwrap(), 7);
    let eager = read_all(&ex);
    no_messages(&ex);
    // Zero the outputs so the replay has to recompute them.
    for n in ["x", "y", "z", "out", "copy"] {
        ex.bind_as(n, &[0f32; 1000]).unwrap();
    }
    ex.run(e).unwrap();
    let replay = read_all(&ex);
    no_messages(&ex);
    assert_eq!(eager, replay);

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut interp = Interpreter::new(&module).unwrap();
    let ie = interp.finalize("main").unwrap();
    interp.run(ie).unwrap();
    let want: Vec<f32> = interp.read_as("copy").unwrap();
    assert_eq!(eager[4], want);
    assert_eq!(want[999], 2.0 * 3.0 * 999.0);
    // Eager mode records nothing into the executable.
    assert_eq!(ex.recorded(e).unwrap(), 1);
}

#[test]
fn eager_and_replay_interleave_in_order() {
    // Each run doubles @acc twice through %acc2 = %acc + %acc; mixing the two modes must
    // keep queue order: 5 runs give 4^5 times the start.
    let ir = format!(
        "{KERNELS_IR}
usm @acc : f32[256]
usm @tmp : f32[256]

graph @g {{
  %a = kernel @add2 range(256) args(@acc, @acc, @tmp)
  %b = kernel @add2 range(256) args(@tmp, @tmp, @acc) after(%a)
}}
"
    );
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.bind_as("acc", &[1f32; 256]).unwrap();
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    ex.run_eager(e).unwrap();
    ex.run(e).unwrap();
    ex.run(e).unwrap();
    ex.run_eager(e).unwrap();
    let acc: Vec<f32> = ex.read_as("acc").unwrap();
    no_messages(&ex);
    assert!(acc.iter().all(|&v| v == 1024.0), "{:?}", &acc[..4]);
}

#[test]
fn eager_refuses_host_tasks_and_leaves_the_executable_working() {
    let ir = format!(
        "{KERNELS_IR}
usm @a : f32[256]
usm @h : f32[256]

graph @g {{
  %fa = kernel @ramp range(256) args(@a)
  %host = host_task \"copy\" access(@a read, @h write) after(%fa)
}}
"
    );
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.register_callback("copy", |ctx| {
        let a: Vec<f32> = ctx.read_as("a")?;
        ctx.write_as("h", 0, &a)
    });
    let e = ex.finalize("g").unwrap();
    let err = ex.run_eager(e).unwrap_err().to_string();
    assert!(err.contains("%host") && err.contains("host task"), "{err}");
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    let h: Vec<f32> = ex.read_as("h").unwrap();
    no_messages(&ex);
    assert_eq!(h[255], 255.0);
}
