//! `inline-subgraphs`: structure, names, origins, statistics, and the same results.

mod support;

const NESTED: &str = "\
kernel @scale(%p: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %v = load %p[%i]
  %w = mul %v, %a
  store %p[%i], %w
}

usm @x : f32[64]
usm @y : f32[64]

graph @leaf {
  %fill = memset @x, 0, 256
}

graph @empty {
}

graph @mid {
  queue @q in_order
  dyn %alpha = 2.0 : f32
  %a = kernel @scale range(64) args(@x, %alpha)
  %in = subgraph @leaf after(%a)
  %b = memcpy @y, @x, 256 on @q after(%in)
  %c = kernel @scale range(64) args(@y, 3.0) on @q after(%b via in_order)
}

graph @top {
  queue @q0
  %start = memset @y, 1, 256 on @q0
  %run = subgraph @mid on @q0 after(%start)
  %nothing = subgraph @empty after(%run)
  %end = host_task \"done\" access(@y read) after(%nothing)
  edge %run -> %end
}
";

#[test]
fn inlines_nested_subgraphs_with_prefixed_names_and_origins() {
    let after = support::check_semantics(NESTED, "inline-subgraphs");
    let top = support::graph_text(&after, "top");
    assert!(top.contains("queue @run.q in_order"), "{top}");
    assert!(top.contains("dyn %run.alpha = 2.0 : f32"), "{top}");
    assert!(top.contains("%run.a = kernel @scale range(64) args(@x, %run.alpha) after(%start)"), "{top}");
    assert!(top.contains("%run.in.fill = memset @x, 0, 256 after(%run.a)"), "{top}");
    assert!(
        top.contains("%run.c = kernel @scale range(64) args(@y, 3.0) on @run.q after(%run.b via in_order)"),
        "{top}"
    );
    assert!(top.contains("%nothing = empty after(%run.c)"), "{top}");
    assert!(top.contains("edge %run.c -> %end"), "{top}");
    // The children stay graphs of their own; @mid is flat too.
    assert!(support::graph_text(&after, "leaf").contains("%fill = memset"));
    assert!(support::graph_text(&after, "mid").contains("%in.fill = memset @x, 0, 256 after(%a)"));
    let (_, ctx) = support::optimize(&support::module(NESTED), "inline-subgraphs");
    let origin = |g: &str, n: &str| ctx.origins.get(&(g.to_string(), n.to_string())).cloned();
    assert_eq!(origin("top", "run.in.fill"), Some(vec![("leaf".to_string(), "fill".to_string())]));
    assert_eq!(origin("top", "run.a"), Some(vec![("mid".to_string(), "a".to_string())]));
    assert_eq!(origin("mid", "in.fill"), Some(vec![("leaf".to_string(), "fill".to_string())]));
    let pass = cmdgraph_passes::lookup("inline-subgraphs").unwrap();
    let mut m = support::module(NESTED);
    let mut ctx = cmdgraph_passes::PassContext::default();
    (pass.run)(&mut m, &mut ctx).unwrap();
    assert_eq!(ctx.stats.get("subgraphs-inlined"), Some(&3), "{:?}", ctx.stats);
    // @mid: 1 copy; @top: 4 copies of @mid's flat nodes and the `empty` stand-in.
    assert_eq!(ctx.stats.get("nodes-created"), Some(&6), "{:?}", ctx.stats);
}

#[test]
fn taken_names_get_a_numeric_suffix() {
    let text = "usm @x : f32[4]\n\ngraph @c {\n  %a = memset @x, 0, 16\n}\n\n\
                graph @p {\n  %s.a = memset @x, 1, 16\n  %s = subgraph @c after(%s.a)\n}\n";
    let after = support::check_semantics(text, "inline-subgraphs");
    let p = support::graph_text(&after, "p");
    assert!(p.contains("%s.a.1 = memset @x, 0, 16 after(%s.a)"), "{p}");
}

#[test]
fn edges_fan_out_to_every_root_and_in_from_every_leaf() {
    let text = "usm @x : f32[4]\nusm @y : f32[4]\n\ngraph @c {\n  %a = memset @x, 0, 16\n  %b = memset @y, 0, 16\n}\n\n\
                graph @p {\n  %pre = memset @x, 1, 16\n  %pre2 = memset @y, 1, 16\n  %s = subgraph @c after(%pre, %pre2)\n\
                \x20 %post = memcpy @x, @y, 16 after(%s)\n}\n";
    let after = support::check_semantics(text, "inline-subgraphs");
    let p = support::graph_text(&after, "p");
    assert!(p.contains("%s.a = memset @x, 0, 16 after(%pre, %pre2)"), "{p}");
    assert!(p.contains("%s.b = memset @y, 0, 16 after(%pre, %pre2)"), "{p}");
    assert!(p.contains("%post = memcpy @x, @y, 16 after(%s.a, %s.b)"), "{p}");
}

#[test]
fn barrier_waiting_on_a_subgraph_waits_on_its_leaves() {
    let text = "usm @x : f32[4]\nusm @y : f32[4]\n\ngraph @c {\n  %a = memset @x, 0, 16\n  %b = memset @y, 0, 16\n}\n\n\
                graph @p {\n  queue @q\n  %s = subgraph @c on @q\n\
                \x20 %w = barrier wait(%s) on @q after(%s via barrier)\n  %post = memcpy @x, @y, 16 on @q after(%w via barrier)\n}\n";
    let after = support::check_semantics(text, "inline-subgraphs");
    let p = support::graph_text(&after, "p");
    assert!(p.contains("%w = barrier wait(%s.a, %s.b) on @q after(%s.a via barrier, %s.b via barrier)"), "{p}");
}
