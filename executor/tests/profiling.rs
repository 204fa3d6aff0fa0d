//! Profiling with `enable_profiling`: per-node timestamps (only with
//! `RecordOptions::node_profiling`) nest inside the run's start and end and follow the
//! schedule; without the option only the run is stamped; a graph without the property
//! refuses (row 61).

mod common;

use common::*;

fn ir(props: &str) -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[4096]
usm @b : f32[4096]
usm @out : f32[4096]

graph @g {props} {{
  %fa = kernel @ramp range(4096) args(@a)
  %fb = kernel @ramp range(4096) args(@b)
  %k = kernel @add2 range(4096) args(@a, @b, @out) after(%fa, %fb)
  %c = memcpy @b, @out, 1024 after(%k)
  %e = empty after(%c)
  %h = host_task \"noop\" access(@out read) after(%e)
  %k2 = kernel @scale range(4096) args(@out, @a, 2.0) after(%h)
}}
"
    )
}

#[test]
fn profile_nodes_nest_in_the_run_and_are_monotone() {
    let mut ex = executor(bundle(&ir("properties(enable_profiling)"), vec![], vec![]));
    ex.register_callback("noop", |_| Ok(()));
    let bits = ex.context().timestamp_bits();
    let period = ex.context().timestamp_period();
    eprintln!("{}: timestampValidBits {bits}, timestampPeriod {period} ns", ex.context().device_name());
    ex.set_record_options(cmdgraph_executor::RecordOptions { node_profiling: true, ..Default::default() });
    let e = ex.finalize("g").unwrap();
    let err = ex.profile(e).unwrap_err().to_string();
    assert!(err.contains("has not run"), "{err}");
    ex.run(e).unwrap();
    ex.run(e).unwrap();
    if bits == 0 {
        // The only case the ordering checks are skipped: the device says it has no timestamps.
        let err = ex.profile(e).unwrap_err().to_string();
        assert!(err.contains("timestampValidBits"), "{err}");
        return;
    }
    assert!(period > 0.0, "a device with timestamps reports a period");
    let p = ex.profile(e).unwrap();
    let names: Vec<&str> = p.nodes.iter().map(|n| n.node.as_str()).collect();
    // Empty and host-task nodes record no device command.
    assert_eq!(names.len(), 5, "{names:?}");
    for n in ["fa", "fb", "k", "c", "k2"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    assert!(p.start_ns <= p.end_ns);
    let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
    for n in &p.nodes {
        assert!(p.start_ns <= n.start_ns && n.start_ns <= n.end_ns && n.end_ns <= p.end_ns, "{n:?} in {p:?}");
    }
    // Stage order: %k after both ramps, %c after %k, %k2 (after the host task) last.
    let k = &p.nodes[pos("k")];
    for before in ["fa", "fb"] {
        assert!(p.nodes[pos(before)].end_ns <= k.start_ns, "{before} ends before %k starts: {p:?}");
    }
    assert!(k.end_ns <= p.nodes[pos("c")].start_ns);
    assert!(p.nodes[pos("c")].end_ns <= p.nodes[pos("k2")].start_ns);
    assert!(p.nodes[pos("k")].duration_ns() > 0 || period < 1.0, "a 4096-item kernel takes time");
    no_messages(&ex);
}

/// By default a profiled graph stamps only its segments: the run's start and end, no node.
#[test]
fn nodes_are_stamped_only_when_asked() {
    let mut ex = executor(bundle(&ir("properties(enable_profiling)"), vec![], vec![]));
    ex.register_callback("noop", |_| Ok(()));
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    if ex.context().timestamp_bits() == 0 {
        return;
    }
    let p = ex.profile(e).unwrap();
    assert!(p.nodes.is_empty(), "{p:?}");
    assert!(0 < p.start_ns && p.start_ns < p.end_ns, "{p:?}");
    no_messages(&ex);
}

/// Spec §22 row 61: profiling information of a graph without `enable_profiling`.
#[test]
fn profiling_without_the_property_is_an_error() {
    let mut ex = executor(bundle(&ir(""), vec![], vec![]));
    ex.register_callback("noop", |_| Ok(()));
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    let err = ex.profile(e).unwrap_err().to_string();
    assert!(err.contains("enable_profiling") && err.contains("row 61"), "{err}");
    no_messages(&ex);
}
