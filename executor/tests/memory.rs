//! Graph-owned memory at planned pool offsets, fills and copies as transfer commands,
//! schedules from the bundle checked against the edges.

mod common;

use cmdgraph_interp::{AllocLayout, Interpreter, PoolLayout};
use cmdgraph_ir::bundle::{GraphPlan, PoolPlan, Segment};
use common::*;

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @out : f32[300]
usm @bytes : u32[3]

graph @g {{
  %t = async_malloc f32[300] device zero_init
  %u = async_malloc f32[300] device
  %fill = memfill %u, 1.5 : f32, 300 after(%t, %u)
  %k = kernel @scale range(300) args(%u, %t, 4.0) after(%fill)
  %odd = memset @bytes + 3, 7, 5
  %copy = memcpy @out, %t, 1200 after(%k)
  %f1 = async_free %u after(%k)
  %f2 = async_free %t after(%copy)
}}
"
    )
}

fn plan(stages: Vec<Vec<&str>>) -> GraphPlan {
    GraphPlan {
        name: "g".into(),
        segments: vec![Segment::Device {
            stages: stages.into_iter().map(|s| s.into_iter().map(String::from).collect()).collect(),
        }],
        memory: PoolPlan {
            size: 2560,
            alignment: 256,
            offsets: vec![("t".into(), 0), ("u".into(), 1280)],
            report: String::new(),
        },
        origins: vec![],
        launches: vec![],
    }
}

#[test]
fn pool_fills_and_copies_match_interpreter() {
    let ir = ir();
    let p = plan(vec![vec!["t", "u", "odd"], vec!["fill"], vec!["k"], vec!["copy", "f1"], vec!["f2"]]);
    let mut ex = executor(bundle(&ir, vec![], vec![p]));
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    let out: Vec<f32> = ex.read_as("out").unwrap();
    let bytes = ex.read("bytes").unwrap();
    no_messages(&ex);

    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    let g = &module.graphs[module.graph_by_name("g").unwrap()];
    let (t, u) = (g.node_by_name("t").unwrap(), g.node_by_name("u").unwrap());
    let layout = PoolLayout { size: 2560, offsets: [(t, 0), (u, 1280)].into_iter().collect() };
    let ie = it.finalize_with("g", AllocLayout::Pool(layout)).unwrap();
    it.run(ie).unwrap();
    assert_eq!(out, it.read_as::<f32>("out").unwrap());
    assert_eq!(bytes, it.read("bytes").unwrap());
    assert_eq!(out[299], 6.0);
    assert_eq!(bytes, vec![0, 0, 0, 7, 7, 7, 7, 7, 0, 0, 0, 0]);
}

#[test]
fn a_schedule_against_an_edge_is_rejected() {
    let ir = ir();
    let p = plan(vec![vec!["t", "u", "odd", "k"], vec!["fill"], vec!["copy", "f1"], vec!["f2"]]);
    // Refused at load, before a device (the loader checks the schedule as finalize does).
    let err = cmdgraph_executor::load::check(bundle(&ir, vec![], vec![p])).unwrap_err().to_string();
    assert!(err.contains("%fill") && err.contains("%k"), "{err}");
}

/// As codegen writes schedules: `async_malloc`/`async_free` (and `empty`, `barrier`) are not
/// listed, and the order through them still holds.
#[test]
fn schedules_may_omit_nodes_that_record_nothing() {
    let ir = ir();
    let p = plan(vec![vec!["odd"], vec!["fill"], vec!["k"], vec!["copy"]]);
    let mut ex = executor(bundle(&ir, vec![], vec![p]));
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    assert_eq!(ex.read_as::<f32>("out").unwrap()[299], 6.0);
    no_messages(&ex);
    // A recorded node left out is an error; so is an order broken through an omitted node
    // (both at load, as finalize would).
    let load = |ir: &str, p| cmdgraph_executor::load::check(bundle(ir, vec![], vec![p])).unwrap_err().to_string();
    let p = plan(vec![vec!["odd"], vec!["fill"], vec!["k"]]);
    let err = load(&ir, p);
    assert!(err.contains("misses %copy"), "{err}");
    let through = ir.replace(
        "%copy = memcpy @out, %t, 1200 after(%k)",
        "%e = empty after(%k)\n  %copy = memcpy @out, %t, 1200 after(%e)",
    );
    let p = plan(vec![vec!["odd"], vec!["fill"], vec!["k", "copy"]]);
    let err = load(&through, p);
    assert!(err.contains("%copy"), "{err}");
}
