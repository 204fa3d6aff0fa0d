//! `dead-node-elimination`: what it removes, what it must keep, and the same results.

mod support;

const KERNELS: &str = "\
kernel @addk(%a: buf<f32, read>, %b: buf<f32, read_write>) {
  %i = global_id 0
  %va = load %a[%i]
  %vb = load %b[%i]
  %s = add %va, %vb
  store %b[%i], %s
}

kernel @declared_write(%a: buf<f32, read>, %b: buf<f32, write>) {
  %i = global_id 0
  %v = load %a[%i]
}

kernel @count(%dg: buf<f32, read>) {
  %i = global_id 0
  %v = load %dg[%i]
  store @hits[%i], %v
}

usm @x : f32[8]
usm @y : f32[8]
device_global @hits : f32[8]
";

fn names(m: &cmdgraph_ir::Module, graph: &str) -> Vec<String> {
    let g = m.graph_by_name(graph).unwrap();
    m.graphs[g].nodes.iter().map(|(_, n)| n.name.clone()).collect()
}

fn run(body: &str) -> (cmdgraph_ir::Module, std::collections::BTreeMap<&'static str, u64>) {
    let text = format!("{KERNELS}\ngraph @g {{\n{body}}}\n");
    let after = support::check_semantics(&text, "dead-node-elimination");
    let mut m = support::module(&text);
    let mut ctx = cmdgraph_passes::PassContext::default();
    (cmdgraph_passes::lookup("dead-node-elimination").unwrap().run)(&mut m, &mut ctx).unwrap();
    (after, ctx.stats)
}

#[test]
fn removes_a_dead_temporary_chain_and_its_allocation() {
    let (after, stats) = run("  %t = async_malloc f32[8]\n  %u = async_malloc f32[8]\n  %init = memset %t, 0, 32 after(%t)\n\
         \x20 %acc = kernel @addk range(8) args(@x, %t) after(%init)\n  %copy = memcpy %u, %t, 32 after(%acc, %u)\n\
         \x20 %keep = kernel @addk range(8) args(@x, @y)\n  %ft = async_free %t after(%copy)\n  %fu = async_free %u after(%copy)\n");
    assert_eq!(names(&after, "g"), ["keep"]);
    assert_eq!(stats.get("commands-removed"), Some(&3), "{stats:?}");
    assert_eq!(stats.get("allocations-removed"), Some(&2), "{stats:?}");
}

#[test]
fn keeps_writes_that_are_read_later_or_in_the_next_run() {
    // %rezero writes %t after its last reader: the next execution reads it (graph-owned
    // memory persists across runs), so it stays.
    let (after, _) = run("  %t = async_malloc f32[8] zero_init\n  %acc = kernel @addk range(8) args(@x, %t) after(%t)\n\
         \x20 %out = memcpy @y, %t, 32 after(%acc)\n  %rezero = memset %t, 0, 32 after(%out)\n  %ft = async_free %t after(%rezero)\n");
    assert_eq!(names(&after, "g"), ["t", "acc", "out", "rezero", "ft"]);
}

#[test]
fn kernel_effects_come_from_the_body_not_the_parameter_mode() {
    // @declared_write declares `write` on @y but stores nothing: dead. @count stores into a
    // device_global: kept.
    let (after, _) =
        run("  %w = kernel @declared_write range(8) args(@x, @y)\n  %c = kernel @count range(8) args(@x)\n");
    assert_eq!(names(&after, "g"), ["c"]);
}

#[test]
fn keeps_host_tasks_hints_dynamic_parameters_and_user_memory_writes() {
    let (after, _) = run("  %t = async_malloc f32[8]\n  %a = memset %t, 0, 32 after(%t)\n\
         \x20 %h = host_task \"look\" access(%t read) after(%a)\n  %b = memset @x, 1, 32\n\
         \x20 %v = async_malloc f32[8]\n  %pf = prefetch %v, 32 after(%v)\n  %fv = async_free %v after(%pf)\n\
         \x20 %ft = async_free %t after(%h)\n  %w = async_malloc f32[8]\n  dyn %p = %w\n\
         \x20 %k = kernel @addk range(8) args(@y, %p) after(%w)\n  %fw = async_free %w after(%k)\n");
    assert_eq!(names(&after, "g"), ["t", "a", "h", "b", "v", "pf", "fv", "ft", "w", "k", "fw"]);
}

#[test]
fn removal_keeps_ordering_among_remaining_nodes() {
    let (after, _) =
        run("  %t = async_malloc f32[8]\n  %first = memset @x, 1, 32\n  %dead = memset %t, 0, 32 after(%first, %t)\n\
         \x20 %second = memcpy @y, @x, 32 after(%dead)\n  %ft = async_free %t after(%dead)\n");
    let text = support::graph_text(&after, "g");
    assert!(text.contains("edge %first -> %second"), "{text}");
    assert_eq!(names(&after, "g"), ["first", "second"]);
}
