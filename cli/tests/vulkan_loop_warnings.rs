//! Issue 28: on llvmpipe, whose shaders stop every loop of an invocation after 65535
//! iterations in all without an error (docs/executor.md), `Executor::warnings` names each
//! kernel whose loops may take more (the module's `loop_back_edges` marker, docs/abi.md):
//! a 1,000,000-iteration loop (125,000 back-edges after codegen's 8x unrolling) is named,
//! a 1000-iteration one is not. On another device there are none.

mod support;

/// A module with the one kernel `@k`: a decaying sum over `trips` iterations per work-item.
fn module(trips: u32) -> cmdgraph_ir::Module {
    let src = format!(
        "kernel @k(%o: buf<f32, write>) {{
  %g = global_id 0
  %zero = const 0 : u32
  %n = const {trips} : u32
  %one = const 1 : u32
  %f0 = const 0.0 : f32
  %d = const 0.99993 : f32
  %acc = for %j = %zero to %n step %one carry(%a = %f0) {{
    %jf = cast %j to f32
    %m = mul %a, %d
    %a2 = add %m, %jf
    yield %a2
  }}
  store %o[%g], %acc
}}
usm @o : f32[4]
graph @g {{
  %k = kernel @k range(4) args(@o)
}}
"
    );
    cmdgraph_ir::text::parse(&src).unwrap_or_else(|d| panic!("parse: {d:?}"))
}

/// The executor's warnings for a bundle of `module(trips)`, and whether the device is llvmpipe.
fn warnings(trips: u32) -> (Vec<String>, bool) {
    let bundle = support::compile(&module(trips), None).expect("compile");
    let ex = support::executor(&bundle).expect("executor");
    let llvmpipe = ex.context().device_name().to_ascii_lowercase().starts_with("llvmpipe");
    (ex.warnings().to_vec(), llvmpipe)
}

#[test]
fn a_million_iteration_loop_is_named_on_llvmpipe() {
    let (w, llvmpipe) = warnings(1_000_000);
    if !llvmpipe {
        assert!(w.is_empty(), "{w:?}");
        return;
    }
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("kernel @k may take more than 65,535 loop iterations in one work-item (up to 125000 "),
        "{}",
        w[0]
    );
    assert!(w[0].contains("llvmpipe stops every loop"), "{}", w[0]);
}

#[test]
fn a_short_loop_gives_no_warning() {
    let (w, _) = warnings(1000);
    assert!(w.is_empty(), "{w:?}");
}
