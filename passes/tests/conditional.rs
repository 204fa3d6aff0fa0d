//! Passes and conditional nodes (docs/conditional.md): passes run inside body graphs as in
//! any graph, and never move work across a conditional node. Checked on the interpreter
//! (every memory of every graph before and after the default pipeline, in creation order
//! and random orders, race-free) and by what the pipeline did (counted).

mod support;

use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::Module;

const TEXT: &str = "kernel @scale(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %k = const 1.5 : f32
  %r = mul %v, %k
  store %x[%i], %r
}

kernel @shift(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %k = const 0.25 : f32
  %r = add %v, %k
  store %x[%i], %r
}

kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}

usm @x : f32[64]
usm @flags : u32[2]

graph @body {
  %a = kernel @scale range(64) args(@x)
  %b = kernel @shift range(64) args(@x) after(%a)
  %c = kernel @countdown single_task args(@flags) after(%b)
}

graph @tail {
  %e = empty
  %s = kernel @shift range(64) args(@x) after(%e)
}

graph @main {
  %init = memfill @flags, 3 : u32, 1
  %p = kernel @scale range(64) args(@x) after(%init)
  %w = while @flags do @body after(%p)
  %i = if @flags + 4 then @tail after(%w)
  %q = kernel @shift range(64) args(@x) after(%i)
}
";

fn kernels_of(m: &Module, graph: &str) -> Vec<String> {
    let g = &m.graphs[m.graph_by_name(graph).expect("graph")];
    g.nodes
        .iter()
        .filter_map(|(_, n)| match &n.kind {
            NodeKind::Kernel(cmd) => Some(m.kernels[cmd.kernel].name.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn passes_work_inside_bodies_and_never_across_a_conditional_node() {
    let spec = cmdgraph_passes::DEFAULT_PIPELINE.join(",");
    let after = support::check_semantics(TEXT, &spec);
    // Inside the loop body the two element-wise kernels fused; the countdown stays.
    let body = kernels_of(&after, "body");
    assert_eq!(body.len(), 2, "{body:?}");
    assert!(body.iter().any(|k| k.starts_with("fused")), "{body:?}");
    // Inside the `if` body the empty node went.
    let tail = &after.graphs[after.graph_by_name("tail").unwrap()];
    assert_eq!(tail.nodes.len(), 1, "{}", support::graph_text(&after, "tail"));
    // Around the nodes nothing moved: %p and %q are element-wise on @x like the bodies,
    // and would fuse if the conditional nodes were not fences.
    assert_eq!(kernels_of(&after, "main"), ["scale", "shift"]);
    let main = support::graph_text(&after, "main");
    assert!(main.contains("%w = while @flags do @body") && main.contains("%i = if @flags + 4 then @tail"), "{main}");
}
