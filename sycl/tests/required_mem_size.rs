//! `get_required_mem_size()` is the post-reuse footprint from `plan-memory` (000 §8.4.6):
//! allocations whose lifetimes are ordered share memory, unordered ones do not.

mod common;

use cmdgraph_ir::Type;
use cmdgraph_sycl::*;
use common::*;

/// Builds malloc -> free -> malloc -> free; with `ordered` the second malloc depends on the
/// first free, otherwise the two pairs are independent branches.
fn two_temporaries(ordered: bool) -> u64 {
    let env = Env::new();
    let graph = env.graph(GraphProps::none());
    let mut first = None;
    let a = graph.add(|h| first = Some(h.async_malloc(UsmKind::Device, Type::F32, 1024)), NodeProps::none()).unwrap();
    let first = first.unwrap();
    let free_a = graph.add(|h| h.async_free(&first), NodeProps::depends_on(&[&a])).unwrap();
    let mut second = None;
    let deps = if ordered { NodeProps::depends_on(&[&free_a]) } else { NodeProps::none() };
    let b = graph.add(|h| second = Some(h.async_malloc(UsmKind::Device, Type::F32, 512)), deps).unwrap();
    let second = second.unwrap();
    graph.add(|h| h.async_free(&second), NodeProps::depends_on(&[&b])).unwrap();
    graph.finalize(FinalizeProps::none()).unwrap().get_required_mem_size()
}

#[test]
fn ordered_allocations_share_memory() {
    assert_eq!(two_temporaries(true), 4096);
}

#[test]
fn unordered_allocations_do_not() {
    assert_eq!(two_temporaries(false), 4096 + 2048);
}
