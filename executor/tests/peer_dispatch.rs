//! The hand-recorded dispatch peer (`peer::dispatch`): a chain of 50 dependent `x[i] += 1.0`
//! dispatches on one slice and a wide of 50 on disjoint slices, exact outputs, under
//! validation with synchronization validation; any message fails. (The layer of Debian 12,
//! 1.3.239, reports a transfer → dispatch hazard on the buffer but, tried by hand, not a
//! chain of dispatches with its barriers removed: on llvmpipe the chain's barriers are
//! checked by the layer's masks only, and on a GPU by the exact outputs.)

mod common;

use cmdgraph_executor::peer::dispatch::{Barriers, Dispatch, DispatchPeer};
use cmdgraph_executor::vk::Context;
use cmdgraph_executor::ContextOptions;
use common::{compiled, Elementwise};
use std::sync::Arc;

/// `x[off + i] += 1.0` through the ABI's one-buffer interface.
const INC: Elementwise = Elementwise {
    name: "inc",
    bufs: 1,
    scalar: false,
    compute: "%pl = OpAccessChain %ptr_f32 %b0 %c0 %x0\n%vl = OpLoad %float %pl\n\
              %one = OpConvertUToF %float %uint_1\n%r = OpFAdd %float %vl %one",
};

const N: usize = 50;
/// Elements per dispatch: not a multiple of the work-group size, so tails are exercised.
const ELEMS: u32 = 100;

fn context() -> Arc<Context> {
    let ctx = Context::new(&ContextOptions { validation: true, ..Default::default() })
        .unwrap_or_else(|e| panic!("Vulkan device (llvmpipe) with validation layers: {e}"));
    Arc::new(ctx)
}

fn no_messages(ctx: &Context) {
    let m = ctx.take_messages();
    assert!(m.is_empty(), "validation messages:\n{}", m.join("\n"));
}

/// Runs `runs` times from zeros and returns the buffer.
fn run(ctx: &Arc<Context>, total: u64, ds: &[Dispatch], barriers: Barriers, runs: usize) -> Vec<f32> {
    let kernel = compiled(&INC, 64);
    let mut peer = DispatchPeer::new(Arc::clone(ctx), &kernel, total, ds, barriers).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(peer.dispatches(), ds.len());
    for _ in 0..runs {
        peer.run().unwrap_or_else(|e| panic!("{e}"));
    }
    if ctx.timestamp_bits() > 0 {
        let ns = peer.gpu_ns().unwrap_or_else(|e| panic!("{e}"));
        assert!(ns.is_some_and(|t| t > 0), "timestamps: {ns:?}");
    }
    let out = peer.read_f32().unwrap_or_else(|e| panic!("{e}"));
    peer.bind_zero().unwrap_or_else(|e| panic!("{e}"));
    assert!(peer.read_f32().unwrap_or_else(|e| panic!("{e}")).iter().all(|&v| v == 0.0));
    drop(peer);
    out
}

#[test]
fn chain_and_wide_are_exact_without_validation_messages() {
    let ctx = context();
    // Chain: every dispatch on the same slice, a barrier between consecutive ones; a slice
    // at an offset, so the offset word is used, and elements outside it stay 0.
    let chain = vec![Dispatch { elem_offset: 36, elems: ELEMS }; N];
    let total = 36 + u64::from(ELEMS) + 20;
    let got = run(&ctx, total, &chain, Barriers::Between, 1);
    for (i, v) in got.iter().enumerate() {
        let want = if (36..36 + ELEMS as usize).contains(&i) { N as f32 } else { 0.0 };
        assert_eq!(v.to_bits(), want.to_bits(), "chain element {i}: {v}");
    }
    no_messages(&ctx);

    // Wide: disjoint slices, no barrier between dispatches; two runs (the second's writes
    // ordered after the first's by the opening barrier).
    let wide: Vec<Dispatch> = (0..N as u32).map(|i| Dispatch { elem_offset: i * ELEMS, elems: ELEMS }).collect();
    let got = run(&ctx, N as u64 * u64::from(ELEMS), &wide, Barriers::None, 2);
    assert!(got.iter().all(|&v| v == 2.0), "wide: {:?}", got.iter().position(|&v| v != 2.0));
    no_messages(&ctx);
}

#[test]
fn rounds_and_barrier_counts() {
    assert_eq!(Barriers::None.count(50), 0);
    assert_eq!(Barriers::Between.count(50), 49);
    assert_eq!(Barriers::Every(8).count(1000), 124);
    assert_eq!(Barriers::Every(8).count(16), 1);
    assert_eq!(Barriers::Every(0).count(10), 0);
    let ctx = context();
    // Rounds of 8 on disjoint slices of one buffer, a barrier after each round.
    let ds: Vec<Dispatch> = (0..20u32).map(|i| Dispatch { elem_offset: i * 64, elems: 64 }).collect();
    let got = run(&ctx, 20 * 64, &ds, Barriers::Every(8), 1);
    assert!(got.iter().all(|&v| v == 1.0));
    no_messages(&ctx);
}

#[test]
fn refuses_what_it_cannot_run() {
    let ctx = context();
    let inc = compiled(&INC, 64);
    let one = [Dispatch { elem_offset: 0, elems: 64 }];
    let err = |r: Result<DispatchPeer, cmdgraph_executor::ExecError>| match r {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    let two_buffers = compiled(&common::SCALE, 64);
    let e = err(DispatchPeer::new(Arc::clone(&ctx), &two_buffers, 64, &one, Barriers::None));
    assert!(e.contains("exactly one parameter"), "{e}");
    let past = [Dispatch { elem_offset: 10, elems: 64 }];
    let e = err(DispatchPeer::new(Arc::clone(&ctx), &inc, 64, &past, Barriers::None));
    assert!(e.contains("outside"), "{e}");
    let e = err(DispatchPeer::new(Arc::clone(&ctx), &inc, 64, &[], Barriers::None));
    assert!(e.contains("no dispatches"), "{e}");
    let mut broken = inc.clone();
    broken.spirv.truncate(10);
    assert!(DispatchPeer::new(Arc::clone(&ctx), &broken, 64, &one, Barriers::None).is_err());
    no_messages(&ctx);
}
