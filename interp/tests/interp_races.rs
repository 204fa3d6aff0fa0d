//! The race detector and randomized schedules.

mod interp_support;

use cmdgraph_interp::{AccessKind, AllocLayout, Order, PoolLayout, Race, RunOptions};
use interp_support::*;

const KERNELS: &str = r#"
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %a
  store %y[%i], %r
}
kernel @addc(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = add %v, %a
  store %y[%i], %r
}
usm @x : f32[64]
usm @y : f32[64]
usm @z : f32[64]
"#;

/// The producer/consumer pair with the edge planted (`after`) or missing.
fn pair(with_edge: bool) -> String {
    let after = if with_edge { " after(%w)" } else { "" };
    format!(
        "{KERNELS}graph @g {{\n  %w = kernel @scale range(64) args(@x, @y, 2.0)\n  \
         %r = kernel @addc range(64) args(@y, @z, 1.0){after}\n}}\n"
    )
}

fn checked(order: Order) -> RunOptions {
    RunOptions { order, check_races: true, fuel: None, ..RunOptions::default() }
}

/// A missing edge between a writer and a reader of @y is found, naming both nodes, the
/// memory and the bytes; with the edge the detector is silent.
#[test]
fn missing_edge_is_found_and_present_edge_is_silent() {
    let mut interp = interp(&pair(false));
    let exec = interp.finalize("g").unwrap();
    let stats = interp.run_with(exec, &checked(Order::Creation)).unwrap();
    assert_eq!(
        stats.races,
        vec![Race {
            first: "w".into(),
            second: "r".into(),
            memory: "@y".into(),
            range: 0..256,
            kinds: (AccessKind::Write, AccessKind::Read),
        }]
    );
    let text = stats.races[0].to_string();
    assert!(text.contains("%w") && text.contains("%r") && text.contains("@y"), "{text}");

    let mut interp = interp_support::interp(&pair(true));
    let exec = interp.finalize("g").unwrap();
    for seed in 0..8 {
        let stats = interp.run_with(exec, &checked(Order::Random(seed))).unwrap();
        assert!(stats.races.is_empty(), "{:?}", stats.races);
    }
}

/// On the racy graph different seeds give different outputs; on the ordered graph every
/// seed gives the output a plain Rust computation predicts.
#[test]
fn random_schedules_expose_the_race() {
    let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.5).collect();
    let y0 = vec![100f32; 64];
    let ordered: Vec<f32> = x.iter().map(|v| v * 2.0 + 1.0).collect();
    let stale: Vec<f32> = y0.iter().map(|v| v + 1.0).collect();
    let mut outcomes = std::collections::BTreeSet::new();
    for (with_edge, seeds) in [(false, 0..32u64), (true, 0..32u64)] {
        let mut interp = interp(&pair(with_edge));
        let exec = interp.finalize("g").unwrap();
        for seed in seeds {
            interp.bind_as("x", &x).unwrap();
            interp.bind_as("y", &y0).unwrap();
            interp
                .run_with(
                    exec,
                    &RunOptions { order: Order::Random(seed), check_races: false, fuel: None, ..RunOptions::default() },
                )
                .unwrap();
            let z: Vec<f32> = interp.read_as("z").unwrap();
            if with_edge {
                assert_eq!(z, ordered, "seed {seed}");
            } else {
                assert!(z == ordered || z == stale, "seed {seed}: {z:?}");
                outcomes.insert(z.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            }
        }
    }
    assert_eq!(outcomes.len(), 2, "both orders of the racy pair should occur over 32 seeds");
}

/// Only the overlapping bytes are reported; reads never race with reads; write/write races
/// are found; ordering through a chain (transitively) counts.
#[test]
fn overlap_precision_and_transitive_order() {
    let mut interp = interp(&format!(
        "{KERNELS}{}",
        r#"
graph @g {
  %lo = kernel @scale range(32) args(@x, @y, 2.0)
  %mid = kernel @addc range(32) args(@x + 64, @y + 64, 1.0)
  %hi = kernel @addc range(32) args(@y + 32, @z, 1.0)
  %r1 = kernel @addc range(64) args(@x, @z + 0, 0.0) after(%hi)
  %e = empty after(%r1)
  %r2 = kernel @scale range(64) args(@z, @x, 1.0) after(%e)
}
"#
    ));
    let exec = interp.finalize("g").unwrap();
    let stats = interp.run_with(exec, &checked(Order::Creation)).unwrap();
    let w = AccessKind::Write;
    let r = AccessKind::Read;
    let race = |a: &str, b: &str, mem: &str, range: std::ops::Range<u64>, kinds| Race {
        first: a.into(),
        second: b.into(),
        memory: mem.into(),
        range,
        kinds,
    };
    assert_eq!(
        stats.races,
        vec![
            // %mid writes y[16..48] (bytes 64..192), overlapping %lo's writes of y[0..32].
            race("lo", "mid", "@y", 64..128, (w, w)),
            // %lo writes y[0..32] (bytes 0..128); %hi reads y[8..40] (bytes 32..160).
            race("lo", "hi", "@y", 32..128, (w, r)),
            // %lo reads x[0..32], %r2 writes all of x: no path between them.
            race("lo", "r2", "@x", 0..128, (r, w)),
            race("mid", "hi", "@y", 64..160, (w, r)),
            race("mid", "r2", "@x", 64..192, (r, w)),
        ]
    );
    // r1 and r2 are ordered through %e; %hi -> %r1 -> %e -> %r2 orders %hi and %r2.
    assert!(!stats.races.iter().any(|r| r.first == "r1" || r.second == "r1"));
}

/// A parent node and a node inside a sub-graph that the DAG leaves unordered race.
#[test]
fn races_reach_into_subgraphs() {
    let mut interp = interp(&format!(
        "{KERNELS}{}",
        r#"
graph @child {
  %c = kernel @addc range(64) args(@y, @z, 1.0)
}
graph @parent {
  %p = kernel @scale range(64) args(@x, @y, 2.0)
  %sg = subgraph @child
  %q = kernel @scale range(64) args(@x, @y, 3.0) after(%sg)
}
"#
    ));
    let exec = interp.finalize("parent").unwrap();
    let stats = interp.run_with(exec, &checked(Order::Creation)).unwrap();
    let pairs: Vec<(String, String, AccessKind, AccessKind)> =
        stats.races.iter().map(|r| (r.first.clone(), r.second.clone(), r.kinds.0, r.kinds.1)).collect();
    assert_eq!(
        pairs,
        vec![
            ("p".into(), "sg/c".into(), AccessKind::Write, AccessKind::Read),
            ("p".into(), "q".into(), AccessKind::Write, AccessKind::Write),
        ]
    );
}

/// A node that uses an allocation without being ordered after its async_malloc (or before
/// its async_free) races with it, even when the schedule happened to work.
#[test]
fn allocation_lifetime_races() {
    let mut interp = interp(&format!(
        "{KERNELS}{}",
        r#"
graph @g {
  %t = async_malloc f32[64]
  %k = kernel @scale range(64) args(@x, %t, 2.0)
  %u = kernel @addc range(64) args(%t, @z, 1.0) after(%k)
  %f = async_free %t after(%t)
  edge %k -> %f
}
"#
    ));
    let exec = interp.finalize("g").unwrap();
    let stats = interp.run_with(exec, &checked(Order::Creation)).unwrap();
    let got: Vec<(String, String, AccessKind, AccessKind)> =
        stats.races.iter().map(|r| (r.first.clone(), r.second.clone(), r.kinds.0, r.kinds.1)).collect();
    assert_eq!(
        got,
        vec![
            // Neither %k nor %u is ordered after the malloc ...
            ("t".into(), "k".into(), AccessKind::Alloc, AccessKind::Write),
            ("t".into(), "u".into(), AccessKind::Alloc, AccessKind::Read),
            // ... and %u is not ordered before the free (%k is, through the edge).
            ("u".into(), "f".into(), AccessKind::Read, AccessKind::Free),
        ]
    );
    assert!(stats.races.iter().all(|r| r.memory == "%t" && r.range == (0..256)));
}

const POOLED: &str = r#"
graph @seq {
  %a = async_malloc f32[64]
  %k1 = kernel @scale range(64) args(@x, %a, 2.0) after(%a)
  %k2 = kernel @addc range(64) args(%a, @y, 1.0) after(%k1)
  %fa = async_free %a after(%k2)
  %b = async_malloc f32[64] after(%fa)
  %k3 = kernel @scale range(64) args(@x, %b, 3.0) after(%b)
  %k4 = kernel @addc range(64) args(%b, @z, 1.0) after(%k3)
  %fb = async_free %b after(%k4)
}
graph @par {
  %a = async_malloc f32[64]
  %b = async_malloc f32[64]
  %k1 = kernel @scale range(64) args(@x, %a, 2.0) after(%a)
  %k3 = kernel @scale range(64) args(@x, %b, 3.0) after(%b, %k1)
  %k2 = kernel @addc range(64) args(%a, @y, 1.0) after(%k3)
  %k4 = kernel @addc range(64) args(%b, @z, 1.0) after(%k2)
  %fa = async_free %a after(%k4)
  %fb = async_free %b after(%k4)
}
"#;

fn pooled_races(graph: &str, a: u64, b: u64) -> Vec<Race> {
    let mut interp = interp(&format!("{KERNELS}{POOLED}"));
    let g = interp.module().graph_by_name(graph).unwrap();
    let g = &interp.module().graphs[g];
    let mut pool = PoolLayout { size: 512, ..Default::default() };
    pool.offsets.insert(g.node_by_name("a").unwrap(), a);
    pool.offsets.insert(g.node_by_name("b").unwrap(), b);
    let exec = interp.finalize_with(graph, AllocLayout::Pool(pool)).unwrap();
    interp.run_with(exec, &checked(Order::Creation)).unwrap().races
}

/// In pool mode the detector checks the memory plan: two allocations on shared bytes need
/// one's free to happen before the other's malloc.
#[test]
fn pool_plans_are_checked() {
    assert!(pooled_races("seq", 0, 0).is_empty());
    assert!(pooled_races("seq", 0, 128).is_empty());
    assert!(pooled_races("par", 0, 256).is_empty());
    // %a at 0..256 and %b at 128..384 while both are live: the plan conflict itself, and
    // the unordered accesses it causes in pool bytes (%b's malloc against %k1's writes of
    // %a, and the two frees).
    let races = pooled_races("par", 0, 128);
    let pool = |first: &str, second: &str, kinds| Race {
        first: first.into(),
        second: second.into(),
        memory: "pool (%a, %b)".into(),
        range: 128..256,
        kinds,
    };
    assert_eq!(
        races,
        vec![
            pool("a", "b", (AccessKind::Alloc, AccessKind::Alloc)),
            pool("b", "k1", (AccessKind::Alloc, AccessKind::Write)),
            pool("fa", "fb", (AccessKind::Free, AccessKind::Free)),
        ]
    );
}

/// Host tasks are checked with the bytes they actually touched.
#[test]
fn host_task_accesses_are_tracked() {
    let mut interp = interp(&format!(
        "{KERNELS}{}",
        r#"
graph @g {
  %w = kernel @scale range(4) args(@x, @y, 2.0)
  %h = host_task "peek" access(@y read, @z write)
  %h2 = host_task "poke" access(@z write)
}
"#
    ));
    interp.register_callback("peek", |ctx| {
        let y = ctx.read_bytes("y", 4, 8)?;
        ctx.write("z", 0, &y)
    });
    interp.register_callback("poke", |ctx| ctx.write("z", 4, &[1; 8]));
    let exec = interp.finalize("g").unwrap();
    let stats = interp.run_with(exec, &checked(Order::Creation)).unwrap();
    let got: Vec<(String, String, String, std::ops::Range<u64>)> =
        stats.races.iter().map(|r| (r.first.clone(), r.second.clone(), r.memory.clone(), r.range.clone())).collect();
    assert_eq!(got, vec![("w".into(), "h".into(), "@y".into(), 4..12), ("h".into(), "h2".into(), "@z".into(), 4..8)]);
}
