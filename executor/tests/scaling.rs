//! Finalize at scale: the Vulkan objects an executable of a 10^4-node graph holds grow with
//! its segments, variants and kernel launches, never with a per-node pool, buffer,
//! allocation or command buffer (issue 17; docs/executor.md, "Cost at scale").

mod common;

use cmdgraph_executor::{load, ContextOptions, CopyPolicy, Executor, RecordOptions};
use common::*;

/// A graph of `blocks` blocks of five nodes: a temporary, two kernels, a memcpy and the
/// temporary's free; with `host`, a host task after every 1000th block (a segment each).
fn graph(blocks: usize, host: bool) -> String {
    let mut g = format!("{KERNELS_IR}\nusm @x : f32[64]\nusm @y : f32[64]\ngraph @g {{\n");
    let mut last = String::new();
    for b in 0..blocks {
        let after = if last.is_empty() { String::new() } else { format!(" after({last})") };
        g.push_str(&format!("  %t{b} = async_malloc f32[64]{after}\n"));
        g.push_str(&format!("  %r{b} = kernel @ramp range(64) args(%t{b}) after(%t{b})\n"));
        g.push_str(&format!("  %s{b} = kernel @scale range(64) args(%t{b}, @x, 2.0) after(%r{b})\n"));
        g.push_str(&format!("  %c{b} = memcpy @y, @x, 256 after(%s{b})\n"));
        g.push_str(&format!("  %f{b} = async_free %t{b} after(%c{b})\n"));
        last = format!("%f{b}");
        if host && b % 1000 == 999 {
            g.push_str(&format!("  %h{b} = host_task \"cb\" access(@y read) after(%f{b})\n"));
            last = format!("%h{b}");
        }
    }
    g.push_str("}\n");
    g
}

#[test]
fn objects_per_finalize_do_not_grow_with_nodes() {
    for host in [false, true] {
        let blocks = 2000;
        let loaded = load::check(bundle(&graph(blocks, host), vec![], vec![])).expect("loads");
        let nodes = loaded.module.graphs.iter().next().map(|(_, g)| g.nodes.len()).unwrap_or(0);
        assert!(nodes >= 10_000, "{nodes} nodes");
        let mut ex = Executor::new(loaded, &ContextOptions::default()).expect("Vulkan device (llvmpipe)");
        if host {
            ex.register_callback("cb", |_| Ok(()));
        }
        // The copy command for the memcpys whatever CMDGRAPH_COPIES says: the copy kernel's
        // sets and pipelines are counted in copy_kernels.rs.
        ex.set_record_options(RecordOptions { copies: CopyPolicy::Transfer, ..ex.record_options() });
        let e = ex.finalize("g").expect("finalizes");
        let o = ex.vulkan_objects(e).expect("objects");
        let segments = if host { 2 * (blocks / 1000) } else { 1 };
        let launches = 2 * blocks;
        // Command buffers: two copies per device segment (one with host tasks), not per node.
        assert!(o.command_buffers <= 2 * segments, "{host}: {o:?}");
        // Buffers and allocations: a fixed handful per executable.
        assert!(o.buffers <= 5 && o.memory_allocations <= 5, "{host}: {o:?}");
        // Descriptor pools: the first is sized for every launch.
        assert_eq!(o.descriptor_pools, 1, "{host}: {o:?}");
        // One set per kernel launch (binding 0 is the launch's own argument block).
        assert_eq!(o.descriptor_sets, launches, "{host}: {o:?}");
        // Pipelines: one per compiled variant (three in these bundles).
        assert_eq!(o.pipelines, 3, "{host}: {o:?}");
        ex.run(e).expect("runs");
        ex.wait(e).expect("waits");
        assert_eq!(ex.recorded(e).expect("recorded"), segments as u64 - u64::from(host) * (blocks / 1000) as u64);
        let y: Vec<f32> = ex.read_as("y").expect("reads");
        assert_eq!(y[3], 6.0, "{host}");
    }
}

/// `blocks` launches of `@scale` in place over 2^20 elements each, in a chain, the last one
/// doubling: a run takes llvmpipe tens of milliseconds, and each run doubles `@big`.
fn slow_graph(blocks: usize) -> String {
    let mut g = format!("{KERNELS_IR}\nusm @big : f32[1048576]\ngraph @g {{\n");
    for b in 0..blocks {
        let after = if b == 0 { String::new() } else { format!(" after(%s{})", b - 1) };
        let factor = if b + 1 == blocks { "2.0" } else { "1.0" };
        g.push_str(&format!("  %s{b} = kernel @scale range(1048576) args(@big, @big, {factor}){after}\n"));
    }
    g.push_str("}\n");
    g
}

#[test]
fn the_second_copy_is_recorded_only_when_a_run_overlaps_the_previous_one() {
    let loaded = load::check(bundle(&slow_graph(40), vec![], vec![])).expect("loads");
    let mut ex = Executor::new(loaded, &ContextOptions::default()).expect("Vulkan device (llvmpipe)");
    let start: Vec<f32> = (0..1 << 20).map(|i| (i % 1000) as f32 + 0.3125).collect();
    ex.bind_as("big", &start).expect("binds");
    let e = ex.finalize("g").expect("finalizes");
    let buffers = |ex: &Executor| ex.vulkan_objects(e).expect("objects").command_buffers;
    assert_eq!(buffers(&ex), 1, "finalize records one copy");
    // Runs that never overlap keep using the first copy.
    for _ in 0..3 {
        ex.run(e).expect("runs");
        ex.wait(e).expect("waits");
    }
    assert_eq!(buffers(&ex), 1, "no overlapping run, no second copy");
    // The second run is submitted while the first (40 launches of 2^20 items) is in flight.
    ex.run(e).expect("runs");
    ex.run(e).expect("runs");
    assert_eq!(buffers(&ex), 2, "an overlapping run records the second copy");
    for _ in 0..4 {
        ex.run(e).expect("runs");
    }
    ex.wait(e).expect("waits");
    assert_eq!(buffers(&ex), 2);
    // Nine runs, each doubling once: a copy missing a launch, or a run lost, shows.
    let big: Vec<f32> = ex.read_as("big").expect("reads");
    let wrong = big.iter().zip(&start).position(|(&v, &s)| v != s * 512.0);
    assert_eq!(wrong, None, "element {wrong:?}");
    assert_eq!(ex.recorded(e).expect("recorded"), 1, "the second copy is not a re-recording");
}
