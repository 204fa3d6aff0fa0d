//! Barriers follow memory conflicts, not edges (docs/executor.md, "Barriers"): commands whose
//! footprints cannot conflict share one barrier-free stretch of the command buffer, a conflict
//! keeps its barrier with masks from the commands on both sides, and an update that makes
//! memory conflict puts the barrier back. Every graph runs against the interpreter with
//! validation and synchronization validation on, and any message fails: a missing barrier
//! between a kernel and a transfer, or a wrong access mask, is a hazard message. The layer
//! (1.3.239 here) does not report a missing barrier between two dispatches, and llvmpipe
//! runs dispatches one after another, so for those the check is the interpreter's race
//! detector over the order as recorded (cli/tests/vulkan_random.rs, `as_recorded`) and the
//! planner's unit tests (src/barriers/tests.rs).

mod common;

use cmdgraph_executor::{BarrierPolicy, Executor, RecordOptions};
use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{ArgValue, MemRef, Pointer};
use common::*;

/// Runs graph `g` of `ir` on Vulkan (with `policy`) and on the interpreter from the same
/// inputs, compares every named object bit for bit, checks validation is silent, and returns
/// the number of barriers the executor recorded between commands.
fn run_both(ir: &str, inputs: &[(&str, usize)], outputs: &[&str], policy: BarrierPolicy, runs: usize) -> u64 {
    let module = cmdgraph_ir::text::parse(ir).unwrap_or_else(|d| panic!("{d:?}"));
    let mut ex = executor(bundle(ir, vec![], vec![]));
    ex.set_record_options(RecordOptions { barriers: policy, ..Default::default() });
    let mut it = Interpreter::new(&module).unwrap();
    for (i, &(name, n)) in inputs.iter().enumerate() {
        let v = random(n, i as u64 + 1);
        ex.bind_as(name, &v).unwrap();
        it.bind_as(name, &v).unwrap();
    }
    let e = ex.finalize("g").unwrap();
    let ie = it.finalize("g").unwrap();
    for _ in 0..runs {
        ex.run(e).unwrap();
        it.run(ie).unwrap();
    }
    ex.wait(e).unwrap();
    compare(&ex, &it, outputs);
    ex.barriers(e).unwrap()
}

fn compare(ex: &Executor, it: &Interpreter, names: &[&str]) {
    for name in names {
        let got: Vec<u32> = ex.read_as::<f32>(name).unwrap().iter().map(|f| f.to_bits()).collect();
        let want: Vec<u32> = it.read_as::<f32>(name).unwrap().iter().map(|f| f.to_bits()).collect();
        assert_eq!(got, want, "@{name}");
    }
    no_messages(ex);
}

/// A chain of edges over disjoint memory: each command after the previous, none touching
/// what another touches (kernels on disjoint slices of one buffer; the copy and the fill on
/// buffers no kernel touches, as kernels and transfers compare whole buffers). The schedule
/// has one stage per node; no barrier is needed.
const DISJOINT: &str = "
usm @in : f32[1024]
usm @a : f32[1024]
usm @b : u32[256]
usm @e : f32[256]
usm @f : f32[256]

graph @g {
  %s0 = kernel @scale range(256) args(@in, @a, 1.7182818) 
  %s1 = kernel @scale range(256) args(@in + 1024, @a + 1024, -0.3183099) after(%s0)
  %r = kernel @ramp range(256) args(@a + 2048) after(%s1)
  %m = memset @b, 7, 1024 after(%r)
  %c = memcpy @e, @f, 1024 after(%m)
}
";

#[test]
fn unconflicting_commands_share_a_stage() {
    let ir = format!("{KERNELS_IR}{DISJOINT}");
    let (ins, outs) = ([("in", 1024), ("f", 256)], ["a", "in", "e"]);
    assert_eq!(run_both(&ir, &ins, &outs, BarrierPolicy::Conflicts, 3), 0, "no conflicts, no barriers");
    // The same graph with a barrier at every stage boundary computes the same thing.
    assert_eq!(run_both(&ir, &ins, &outs, BarrierPolicy::Stages, 1), 4);
    assert_eq!(run_both(&ir, &ins, &outs, BarrierPolicy::Full, 1), 4);
}

/// Every kind of conflict between compute and transfer commands, and a chain where the
/// memory a command reads was written two barriers earlier by another kind of command (its
/// visibility rides the chain of barriers).
const CONFLICTS: &str = "
usm @in : f32[512]
usm @a : f32[512]
usm @b : f32[512]
usm @c : f32[512]
usm @d : f32[512]

graph @g {
  %k0 = kernel @scale range(512) args(@in, @a, 1.4142135)
  %k1 = kernel @scale range(512) args(@a, @b, 0.5772157) after(%k0)
  %cp = memcpy @c, @b, 2048 after(%k1)
  %k2 = kernel @add2 range(512) args(@a, @c, @d) after(%cp)
  %war = kernel @ramp range(512) args(@a) after(%k2)
  %fill = memfill @b, 2.7182817 : f32, 512 after(%k2)
  %k3 = kernel @add2 range(512) args(@a, @b, @in) after(%war, %fill)
}
";

#[test]
fn a_conflict_keeps_its_barrier() {
    let ir = format!("{KERNELS_IR}{CONFLICTS}");
    let (ins, outs) = ([("in", 512)], ["a", "b", "c", "d", "in"]);
    // k0 | k1 (reads a) | cp (reads b) | k2 (reads c) | war + fill (a and b read by k2) | k3.
    assert_eq!(run_both(&ir, &ins, &outs, BarrierPolicy::Conflicts, 3), 5);
    assert_eq!(run_both(&ir, &ins, &outs, BarrierPolicy::Stages, 1), 5);
}

/// A dynamic pointer moved onto memory another command of the stage writes: the update
/// re-plans the segment and records the barrier the conflict now needs.
#[test]
fn an_update_that_makes_memory_conflict_puts_the_barrier_back() {
    let ir = format!(
        "{KERNELS_IR}
usm @in : f32[512]
usm @a : f32[512]
usm @b : f32[512]

graph @g properties(updatable) {{
  dyn %dst = @b
  %k0 = kernel @scale range(512) args(@in, @a, 3.1415927)
  %k1 = kernel @scale range(512) args(@in, %dst, -1.25) after(%k0)
  %k2 = kernel @scale range(512) args(@a, @in, 0.1) after(%k1)
}}
"
    );
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let mut it = Interpreter::new(&module).unwrap();
    let v = random(512, 9);
    ex.bind_as("in", &v).unwrap();
    it.bind_as("in", &v).unwrap();
    let (e, ie) = (ex.finalize("g").unwrap(), it.finalize("g").unwrap());
    // k0 writes a, k1 writes b: together; k2 reads a and writes in, which both read: one barrier.
    assert_eq!(ex.barriers(e).unwrap(), 1);
    ex.run(e).unwrap();
    it.run(ie).unwrap();
    compare(&ex, &it, &["a", "b", "in"]);
    let recorded = ex.recorded(e).unwrap();
    let a = ArgValue::Pointer(Pointer { base: MemRef::Memory(module.memory_by_name("a").unwrap()), offset: 0 });
    ex.update_param(e, "dst", a.clone()).unwrap();
    it.update_param(ie, "dst", a).unwrap();
    // k1 now writes what k0 writes: a barrier between them, and the segment re-recorded once.
    assert_eq!(ex.barriers(e).unwrap(), 2);
    assert_eq!(ex.recorded(e).unwrap(), recorded + 1);
    for _ in 0..3 {
        ex.run(e).unwrap();
        it.run(ie).unwrap();
    }
    compare(&ex, &it, &["a", "b", "in"]);
    assert_eq!(ex.recorded(e).unwrap(), recorded + 1);
}

/// Runs submitted back to back use the two command-buffer copies in turn; a third run waits
/// for the first's copy. Results stay those of the interpreter after every run.
#[test]
fn back_to_back_runs_alternate_copies() {
    let ir = format!("{KERNELS_IR}{CONFLICTS}");
    let (ins, outs) = ([("in", 512)], ["a", "b", "c", "d", "in"]);
    assert_eq!(run_both(&ir, &ins, &outs, BarrierPolicy::Conflicts, 7), 5);
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.set_record_options(RecordOptions { simultaneous_use: true, ..Default::default() });
    let mut it = Interpreter::new(&module).unwrap();
    let v = random(512, 1);
    ex.bind_as("in", &v).unwrap();
    it.bind_as("in", &v).unwrap();
    let (e, ie) = (ex.finalize("g").unwrap(), it.finalize("g").unwrap());
    for _ in 0..5 {
        ex.run(e).unwrap();
        it.run(ie).unwrap();
    }
    ex.wait(e).unwrap();
    compare(&ex, &it, &outs);
}

/// A launch that grows inside memory no other command of its stretch touches changes no
/// barrier and re-records nothing; growing into another command's bytes adds the barrier.
#[test]
fn a_growing_launch_adds_a_barrier_only_on_conflict() {
    let ir = format!(
        "{KERNELS_IR}
usm @in : f32[512]
usm @a : f32[512]

graph @g properties(updatable) {{
  %k0 = kernel @scale range(128) args(@in, @a, 2.5)
  %k1 = kernel @scale range(128) args(@in + 1024, @a + 1024, 1.5) after(%k0)
}}
"
    );
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let v = random(512, 3);
    ex.bind_as("in", &v).unwrap();
    let e = ex.finalize("g").unwrap();
    assert_eq!(ex.barriers(e).unwrap(), 0, "disjoint slices of @a");
    let recorded = ex.recorded(e).unwrap();
    ex.update_launch(e, "k0", cmdgraph_ir::Launch::Range(vec![256])).unwrap();
    assert_eq!((ex.barriers(e).unwrap(), ex.recorded(e).unwrap()), (0, recorded), "still disjoint");
    ex.run(e).unwrap();
    let a: Vec<f32> = ex.read_as("a").unwrap();
    for i in 0..512 {
        let want = match i {
            0..256 => v[i] * 2.5,
            256..384 => v[i] * 1.5,
            _ => 0.0,
        };
        assert_eq!(a[i].to_bits(), want.to_bits(), "a[{i}]");
    }
    // Now %k0 writes a[0..300), which %k1 writes from 256: the barrier comes back.
    ex.update_launch(e, "k0", cmdgraph_ir::Launch::Range(vec![300])).unwrap();
    assert_eq!((ex.barriers(e).unwrap(), ex.recorded(e).unwrap()), (1, recorded + 1));
    ex.run(e).unwrap();
    let a: Vec<f32> = ex.read_as("a").unwrap();
    for i in 0..512 {
        // %k1 runs after %k0, so it wins on the shared elements.
        let want = match i {
            0..256 => v[i] * 2.5,
            256..384 => v[i] * 1.5,
            384..512 => 0.0,
            _ => unreachable!(),
        };
        assert_eq!(a[i].to_bits(), want.to_bits(), "a[{i}] after the overlap");
    }
    // Shrinking back keeps the (now unneeded) barrier: a footprint within the old one moves
    // nothing.
    ex.update_launch(e, "k0", cmdgraph_ir::Launch::Range(vec![128])).unwrap();
    assert_eq!((ex.barriers(e).unwrap(), ex.recorded(e).unwrap()), (1, recorded + 1));
    no_messages(&ex);
}
