//! Parser tests: errors (exact code, message and position), resolution, spans, comments
//! and value types.

use super::*;
use crate::diag::line_col;
use crate::graph::{Arg, ArgValue, EdgeKind, MemRef, NodeKind, Site, Stmt};
use crate::kernel::{KernelBody, OpKind, ValueDef, ValueType};
use crate::module::{Home, Item};

/// (code, message, line, column) of each error.
fn errors(src: &str) -> Vec<(&'static str, String, usize, usize)> {
    match parse_module(src) {
        Ok(_) => panic!("expected errors for:\n{src}"),
        Err(es) => es
            .iter()
            .map(|e| {
                let (l, c) = line_col(src, e.span().start as usize);
                (e.code(), e.message(), l, c)
            })
            .collect(),
    }
}

/// The single error of `src`.
fn error(src: &str) -> (&'static str, String, usize, usize) {
    let mut es = errors(src);
    assert_eq!(es.len(), 1, "{es:?}");
    es.remove(0)
}

fn ok(src: &str) -> Module {
    match parse_module(src) {
        Ok(m) => m,
        Err(es) => panic!("{}", es.iter().map(|e| format!("{e}\n")).collect::<String>()),
    }
}

fn e(code: &'static str, msg: &str, line: usize, col: usize) -> (&'static str, String, usize, usize) {
    (code, msg.to_string(), line, col)
}

const SAXPY: &str = "kernel @k(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {\n}\n";

#[test]
fn unexpected_token_says_what_was_expected_and_how_to_write_it() {
    let src = "usm @x f32[4]";
    assert_eq!(error(src), e("E0010", "expected `:`, found `f32`", 1, 8));
    let d = parse_module(src).unwrap_err()[0].to_diagnostic();
    assert!(d.help.as_deref().unwrap_or("").starts_with("memory is declared as `usm @x : f32[N]"), "{d:?}");
    assert_eq!(error("graph @g {\n  kernel @k\n}"), e("E0010", "expected a graph statement, found `kernel`", 2, 3));
    assert_eq!(
        error("42"),
        e(
            "E0010",
            "expected an item (`kernel`, `func`, `usm`, `buffer`, `device_global` or `graph`), found integer `42`",
            1,
            1
        )
    );
}

#[test]
fn unknown_keywords_list_the_allowed_ones() {
    assert_eq!(error("graph @g {\n  %a = bogus\n}"), e("E0011", "unknown command `bogus`", 2, 8));
    let d = parse_module("graph @g {\n  %a = bogus\n}").unwrap_err()[0].to_diagnostic();
    assert!(d.help.as_deref().unwrap_or("").starts_with("expected one of: empty, kernel, memcpy"), "{d:?}");
    assert_eq!(error("usm @x : f33[4]"), e("E0011", "unknown type `f33`", 1, 10));
    assert_eq!(
        error("graph @g {\n  %a = empty\n  %b = empty after(%a via make_edge)\n}"),
        e("E0011", "unknown edge provenance `make_edge`", 3, 27)
    );
    assert_eq!(error("kernel @k() {\n  %a = frob\n}"), e("E0011", "unknown op `frob`", 2, 8));
    assert_eq!(error("graph @g properties(fast) {\n}"), e("E0011", "unknown graph property `fast`", 1, 21));
    assert_eq!(error("module @m"), e("E0011", "unknown item `module`", 1, 1));
}

#[test]
fn an_unclosed_body_is_reported_at_its_brace() {
    // The next item at the start of a line, or the end of the file, ends the body.
    let kernel = "kernel @k() {\n  %i = global_id 0\n\ngraph @g {\n}\n";
    assert_eq!(
        error(kernel),
        e("E0015", "missing `}`: the body of kernel `@k` is still open at `graph` on line 4", 1, 13)
    );
    assert_eq!(
        error("graph @g {\n  %a = empty\n"),
        e("E0015", "missing `}`: the body of graph `@g` is still open at end of file", 1, 10)
    );
    assert_eq!(
        error("graph @g {\n  %a = empty\nusm @x : f32[4]\n"),
        e("E0015", "missing `}`: the body of graph `@g` is still open at `usm` on line 3", 1, 10)
    );
    let d = parse_module(kernel).unwrap_err()[0].to_diagnostic();
    assert_eq!(d.secondary.first().map(|s| s.0), Some(Span::new(34, 39)), "{d:?}");
    // Indented, the same word is a misplaced statement or op.
    assert_eq!(error("kernel @k() {\n  graph\n}"), e("E0011", "unknown op `graph`", 2, 3));
}

#[test]
fn undefined_graph_names() {
    assert_eq!(error("graph @g {\n  %a = empty after(%b)\n}"), e("E0101", "undefined node `%b`", 2, 20));
    assert_eq!(error("graph @g {\n  %a = empty on @q\n}"), e("E0101", "undefined queue `@q`", 2, 17));
    assert_eq!(error("graph @g {\n  %a = dynamic %d\n}"), e("E0101", "undefined dynamic command group `%d`", 2, 16));
    assert_eq!(error("graph @g {\n  %a = memset %t, 0, 4\n}"), e("E0101", "undefined allocation `%t`", 2, 15));
    // Defined later is not defined: graph-local names must come first, and the error says
    // where the definition is.
    let later = errors("graph @g {\n  edge %a -> %b\n  %a = empty\n  %b = empty\n}");
    assert_eq!(
        later,
        [e("E0101", "`%a` is defined later, on line 3", 2, 8), e("E0101", "`%b` is defined later, on line 4", 2, 14)]
    );
    let src = "graph @g {\n  %x = empty\n  %a = empty on @q after(%ab)\n  queue @q\n  %ab = empty\n}";
    let found = parse_module(src).unwrap_err();
    assert_eq!(
        found.iter().map(|e| e.message()).collect::<Vec<_>>(),
        ["`@q` is defined later, on line 4", "`%ab` is defined later, on line 5"]
    );
    let d = found[1].to_diagnostic();
    assert!(!d.help.as_deref().unwrap_or("").contains("did you mean"), "{d:?}");
    assert_eq!(d.secondary.first().map(|s| s.0), Some(Span::new(67, 70)), "{d:?}");
    assert_eq!(
        error(&format!("{SAXPY}graph @g {{\n  %k = kernel @k single_task args(%p)\n}}")),
        e("E0101", "undefined dynamic parameter or allocation `%p`", 4, 35)
    );
}

#[test]
fn duplicate_definitions_point_at_both() {
    let src = "graph @g {\n  %a = empty\n  %a = empty\n}";
    assert_eq!(error(src), e("E0102", "`%a` is defined twice", 3, 3));
    let d = parse_module(src).unwrap_err()[0].to_diagnostic();
    assert_eq!(d.secondary.len(), 1);
    assert_eq!(line_col(src, d.secondary[0].0.start as usize), (2, 3));
    // One namespace for nodes, dynamic parameters and command groups.
    assert_eq!(error("graph @g {\n  dyn %a = 1 : u32\n  %a = empty\n}").0, "E0102");
    assert_eq!(error("graph @g {\n  queue @q\n  queue @q\n}"), e("E0102", "`@q` is defined twice", 3, 9));
    // One namespace for kernels, memory and graphs.
    assert_eq!(error("usm @x : f32[4]\ngraph @x {\n}"), e("E0102", "`@x` is defined twice", 2, 7));
    assert_eq!(error("kernel @k(%a: f32, %a: f32) {\n}"), e("E0102", "`%a` is defined twice", 1, 20));
    assert_eq!(error("kernel @k(%a: f32) {\n  %a = const 1 : f32\n}"), e("E0102", "`%a` is defined twice", 2, 3));
    // SSA: once per kernel, even in sibling regions.
    let src = "kernel @k(%c: bool) {\n  if %c {\n    %v = const 1 : f32\n  } else {\n    %v = const 2 : f32\n  }\n}";
    assert_eq!(error(src), e("E0102", "`%v` is defined twice", 5, 5));
}

#[test]
fn names_of_the_wrong_kind() {
    let src = "graph @g {\n  dyn %p = 1 : u32\n  %f = async_free %p\n}";
    assert_eq!(error(src), e("E0103", "`%p` is a dynamic parameter, but a node is expected here", 3, 19));
    let src = format!("{SAXPY}graph @g {{\n  %e = empty\n  %n = kernel @k range(4) args(%e)\n}}");
    assert_eq!(
        error(&src),
        e("E0103", "`%e` is a node, but a dynamic parameter or an async_malloc node is expected here", 5, 32)
    );
    let src = "usm @x : f32[4]\ngraph @g {\n  dyn %p = @x\n  %c = memcpy %p, @x, 4\n}";
    assert_eq!(
        error(src),
        e(
            "E0103",
            "`%p` is a dynamic parameter, but memory (`@name` or an `async_malloc` node) is expected here",
            4,
            15
        )
    );
    let src = "graph @g {\n  %e = empty\n  %d = dynamic %e\n}";
    assert_eq!(error(src), e("E0103", "`%e` is a node, but a dynamic command group is expected here", 3, 16));
    let src = "usm @x : f32[4]\ngraph @g {\n  %a = kernel @x single_task args()\n}";
    assert_eq!(error(src), e("E0103", "`@x` is a memory object, but a kernel is expected here", 3, 15));
    let src = "graph @g {\n  %a = subgraph @k\n}\nkernel @k() {\n}";
    assert_eq!(error(src), e("E0103", "`@k` is a kernel, but a graph is expected here", 2, 17));
}

#[test]
fn undefined_module_names_are_reported_at_their_first_use() {
    let src = "graph @g {\n  %a = kernel @nope single_task args()\n  %b = kernel @nope single_task args()\n  %c = memcpy @m, @m, 4\n}";
    assert_eq!(
        errors(src),
        [e("E0101", "undefined kernel `@nope`", 2, 15), e("E0101", "undefined memory object `@m`", 4, 15)]
    );
    let src = "kernel @k(%i: u32) {\n  %v = load @g[%i]\n}";
    assert_eq!(error(src), e("E0101", "undefined memory object `@g`", 2, 13));
}

#[test]
fn module_names_may_be_used_before_their_definition() {
    let src = "graph @main {\n  %k = kernel @k range(4) args(@x)\n  %s = subgraph @inner\n}\n\
               graph @inner {\n}\nkernel @k(%x: buf<f32, read>) {\n}\nusm @x : f32[4]\n";
    let m = ok(src);
    let main = &m.graphs[m.graph_by_name("main").unwrap()];
    let nodes: Vec<_> = main.nodes.iter().map(|(_, n)| &n.kind).collect();
    let NodeKind::Kernel(cmd) = nodes[0] else { panic!() };
    assert_eq!(cmd.kernel, m.kernel_by_name("k").unwrap());
    assert_eq!(
        cmd.args,
        [Arg::Value(ArgValue::Pointer(crate::graph::Pointer {
            base: MemRef::Memory(m.memory_by_name("x").unwrap()),
            offset: 0
        }))]
    );
    assert_eq!(nodes[1], &NodeKind::Subgraph { graph: m.graph_by_name("inner").unwrap() });
    assert_eq!(m.items.len(), 4);
    assert!(matches!(m.items[3], Item::Memory(_)));
}

#[test]
fn values_out_of_their_region_are_not_visible() {
    let src = "kernel @k(%n: u32) {\n  for %i = %n to %n step %n {\n    %v = add %i, %i\n  }\n  %w = add %v, %i\n}";
    assert_eq!(
        errors(src),
        [e("E0104", "value `%v` is not visible here", 5, 12), e("E0104", "value `%i` is not visible here", 5, 16)]
    );
    // A value cannot be used before its definition, nor a result inside its own op.
    let src = "kernel @k(%n: u32) {\n  %a = add %b, %n\n  %b = add %n, %n\n}";
    assert_eq!(errors(src)[0], e("E0101", "`%b` is defined later, on line 3", 2, 12));
    let src = "kernel @k(%n: u32) {\n  %r = for %i = %n to %n step %n carry(%c = %n) {\n    yield %r\n  }\n}";
    assert_eq!(error(src), e("E0104", "value `%r` is not visible here", 3, 11));
}

#[test]
fn result_counts_are_checked() {
    let src = "kernel @k(%b: buf<u32, write>, %i: u32) {\n  %r = store %b[%i], %i\n}";
    assert_eq!(error(src), e("E0013", "`store` produces no result, but 1 result name is written", 2, 3));
    let src = "kernel @k(%i: u32) {\n  add %i, %i\n}";
    assert_eq!(error(src), e("E0013", "`add` produces 1 result, but 0 result names are written", 2, 3));
    let src = "kernel @k(%b: buf<u32, read_write>, %i: u32) {\n  %a, %c = atomic add %b[%i], %i\n}";
    assert_eq!(error(src), e("E0013", "`atomic` produces at most 1 result, but 2 result names are written", 2, 3));
    let src =
        "kernel @k(%n: u32) {\n  %a = for %i = %n to %n step %n carry(%x = %n, %y = %n) {\n    yield %x, %y\n  }\n}";
    assert_eq!(
        error(src),
        e("E0013", "`for` produces 2 results (one per carried value), but 1 result name is written", 2, 3)
    );
    let src = "kernel @k(%c: bool) {\n  %a = if %c {\n  }\n}";
    assert_eq!(
        error(src),
        e("E0013", "`if` produces no result (it declares no `-> T`), but 1 result name is written", 2, 3)
    );
}

#[test]
fn integers_out_of_their_field_range() {
    let g = |stmt: &str| format!("usm @x : f32[4]\ngraph @g {{\n  {stmt}\n}}");
    assert_eq!(error(&g("%m = memset @x, 256, 4")), e("E0012", "a byte value must be in 0..=255", 3, 19));
    assert_eq!(
        error(&g("%m = memset @x, 0, -4")),
        e("E0012", "a byte count must be in 0..=18446744073709551615", 3, 22)
    );
    assert_eq!(error(&g("%m = memadvise @x, 4, 2147483648")).0, "E0012");
    assert_eq!(
        error("graph @g device(4294967296) {\n}"),
        e("E0012", "a device index must be in 0..=4294967295", 1, 17)
    );
    assert_eq!(error("kernel @k() {\n  %i = global_id 3\n}"), e("E0012", "a dimension must be in 0..=2", 2, 18));
    assert_eq!(error("kernel @k(%v: vec4<f32>) {\n  %i = extract %v, 256\n}").0, "E0012");
}

#[test]
fn attributes_and_properties_written_twice() {
    assert_eq!(
        error("graph @g properties(updatable, updatable) {\n}"),
        e("E0014", "`updatable` is written twice", 1, 32)
    );
    assert_eq!(error("graph @g device(1) device(2) {\n}"), e("E0014", "`device` is written twice", 1, 20));
    let src = "device_global @d : u32[1] properties(init_mode(reset), init_mode(reprogram))";
    assert_eq!(error(src), e("E0014", "`init_mode` is written twice", 1, 56));
}

#[test]
fn dynamic_scalars_need_their_type() {
    assert_eq!(
        error("graph @g {\n  dyn %a = 2.0\n}"),
        e("E0010", "expected `:` and the scalar's type, found `}` on line 3", 2, 15)
    );
    // On one line, the token itself is where the type should start.
    assert_eq!(
        error("graph @g {\n  dyn %a = 2.0 %b\n}"),
        e("E0010", "expected `:` and the scalar's type, found name `%b`", 2, 16)
    );
}

#[test]
fn several_errors_are_collected_until_the_first_syntax_error() {
    let src =
        "graph @g {\n  %a = empty after(%x)\n  %b = empty after(%y)\n  %c = empty after(\n  %d = empty after(%z)\n}";
    assert_eq!(
        errors(src),
        [
            e("E0101", "undefined node `%x`", 2, 20),
            e("E0101", "undefined node `%y`", 3, 20),
            // The `)` missing at the end of line 4 is one error: the next statement is not
            // read as one more dependency.
            e("E0010", "expected `)`, found name `%d` on line 5", 4, 20),
        ]
    );
}

#[test]
fn a_bad_argument_reports_one_error_not_two() {
    let src = format!("{SAXPY}graph @g {{\n  %k = kernel @k single_task args(%nope + 8, 1.0)\n}}");
    assert_eq!(error(&src).0, "E0101");
}

/// A kernel with `depth` nested `for` loops.
fn nested_loops(depth: usize) -> String {
    let mut s = String::from("kernel @deep(%n: u32) {\n");
    for d in 0..depth {
        s.push_str(&format!("for %i{d} = %n to %n step %n {{\n"));
    }
    s.push_str(&"}\n".repeat(depth + 1));
    s
}

#[test]
fn regions_nest_up_to_the_limit() {
    // The kernel's braces are one level; 255 loops reach the limit of 256 (and must not
    // exhaust a test thread's stack).
    let m = ok(&nested_loops(MAX_NESTING_FOR_TEST));
    let KernelBody::Ir(body) = &m.kernels.iter().next().unwrap().1.body else { panic!() };
    assert_eq!(body.ops.len(), MAX_NESTING_FOR_TEST);
    let errs = errors(&nested_loops(MAX_NESTING_FOR_TEST + 1));
    let last = errs.last().map(|e| (e.0, e.1.as_str(), e.2));
    assert_eq!(last, Some(("E0008", "brackets and regions nested deeper than the limit of 256", 257)));
}

const MAX_NESTING_FOR_TEST: usize = crate::text::MAX_NESTING - 1;

#[test]
fn a_local_argument_is_a_dynamic_parameter_or_an_allocation() {
    let src = format!("{SAXPY}graph @g {{\n  dyn %a = 2.0 : f32\n  %t = async_malloc f32[4]\n  %k = kernel @k range(4) args(%t + 8, %t, %a)\n}}");
    let m = ok(&src);
    let g = &m.graphs.iter().next().unwrap().1;
    let t = g.node_by_name("t").unwrap();
    let k = g.node_by_name("k").unwrap();
    let NodeKind::Kernel(cmd) = &g.nodes[k].kind else { panic!() };
    assert_eq!(
        cmd.args,
        [
            Arg::Value(ArgValue::Pointer(crate::graph::Pointer { base: MemRef::Alloc(t), offset: 8 })),
            Arg::Value(ArgValue::Pointer(crate::graph::Pointer { base: MemRef::Alloc(t), offset: 0 })),
            Arg::Dyn(g.dyn_params.handles().next().unwrap()),
        ]
    );
}

#[test]
fn spans_cover_items_statements_arguments_and_values() {
    let src = "kernel @k(%x: buf<f32, read>, %a: f32) {\n  %i = global_id 0\n}\n\
               usm @x : f32[4]\n\
               graph @g {\n  dyn %a = 2.0 : f32\n  %e = empty\n  \
               %n = kernel @k nd_range(global(8), local(4)) args(@x + 4, %a) after(%e via event)\n  \
               %h = host_task \"cb\" access(@x read, @x write)\n  \
               dcg %d active(0) {\n    kernel @k range(4) args(@x, 1.0)\n  }\n  \
               edge %e -> %h\n}\n";
    let m = ok(src);
    let text = |span: Span| &src[span.range()];
    let (kh, k) = m.kernels.iter().next().unwrap();
    assert!(text(m.kernels.span(kh)).starts_with("kernel @k(") && text(m.kernels.span(kh)).ends_with("}"));
    assert_eq!(text(k.param_spans.get(&0)), "%x: buf<f32, read>");
    assert_eq!(text(k.param_spans.get(&1)), "%a: f32");
    let KernelBody::Ir(body) = &k.body else { panic!() };
    let (op, _) = body.ops.iter().next().unwrap();
    assert_eq!(text(body.ops.span(op)), "%i = global_id 0");
    let names: Vec<&str> = body.values.handles().map(|v| text(body.values.span(v))).collect();
    assert_eq!(names, ["%x", "%a", "%i"]);
    let mh = m.memories.handles().next().unwrap();
    assert_eq!(text(m.memories.span(mh)), "usm @x : f32[4]");

    let (gh, g) = m.graphs.iter().next().unwrap();
    assert!(text(m.graphs.span(gh)).starts_with("graph @g {"));
    let n = g.node_by_name("n").unwrap();
    assert_eq!(
        text(g.nodes.span(n)),
        "%n = kernel @k nd_range(global(8), local(4)) args(@x + 4, %a) after(%e via event)"
    );
    assert_eq!(text(g.spans.get(&Site::NodeLaunch(n))), "nd_range(global(8), local(4))");
    assert_eq!(text(g.spans.get(&Site::NodeArg(n, 0))), "@x + 4");
    assert_eq!(text(g.spans.get(&Site::NodeArg(n, 1))), "%a");
    let h = g.node_by_name("h").unwrap();
    assert_eq!(text(g.spans.get(&Site::NodeListItem(h, 1))), "@x write");
    let d = g.dcgs.handles().next().unwrap();
    assert_eq!(text(g.spans.get(&Site::Alt(d, 0))), "kernel @k range(4) args(@x, 1.0)");
    assert_eq!(text(g.spans.get(&Site::AltArg(d, 0, 1))), "1.0");
    assert_eq!(text(g.dcgs.span(d)), "dcg %d active(0) {\n    kernel @k range(4) args(@x, 1.0)\n  }");
    let edges: Vec<&str> = g.edges.handles().map(|e| text(g.edges.span(e))).collect();
    assert_eq!(edges, ["%e via event", "edge %e -> %h"]);
    assert_eq!(g.edges.iter().map(|(_, e)| e.kind).collect::<Vec<_>>(), [EdgeKind::Event, EdgeKind::MakeEdge]);
    let p = g.dyn_params.handles().next().unwrap();
    assert_eq!(text(g.dyn_params.span(p)), "dyn %a = 2.0 : f32");
}

#[test]
fn comments_attach_to_what_follows_or_precedes_them() {
    let src = "// file header\nusm @x : f32[4] // about x\n\n\
               graph @g { // moved into the body\n  // before e\n  %e = empty // after e\n  \
               %k = empty after(%e, // inside a statement\n    %e)\n  // before edge\n  edge %e -> %k // edge tail\n  \
               // closing\n} // graph tail\n// end 1\n//end 2\n";
    let m = ok(src);
    let x = m.memories.iter().next().unwrap().1;
    assert_eq!(x.comments.leading, [" file header"]);
    assert_eq!(x.comments.trailing.as_deref(), Some(" about x"));
    let g = m.graphs.iter().next().unwrap().1;
    assert_eq!(g.comments.trailing.as_deref(), Some(" graph tail"));
    let e = &g.nodes[g.node_by_name("e").unwrap()];
    assert_eq!(e.comments.leading, [" moved into the body", " before e"]);
    assert_eq!(e.comments.trailing.as_deref(), Some(" after e"));
    let k = &g.nodes[g.node_by_name("k").unwrap()];
    assert_eq!(k.comments.leading, [" inside a statement"]);
    assert_eq!(k.comments.trailing, None);
    let Some(Stmt::MakeEdge(edge)) = g.body.last() else { panic!() };
    let c = &g.edge_comments[edge];
    assert_eq!(c.leading, [" before edge"]);
    assert_eq!(c.trailing.as_deref(), Some(" edge tail"));
    assert_eq!(g.closing_comments, [" closing"]);
    assert_eq!(m.trailing_comments, [" end 1", "end 2"]);
}

#[test]
fn kernel_comments_attach_to_ops_and_regions() {
    let src = "kernel @k(%n: u32) { // header\n  // lead\n  %a = add %n, %n // tail\n  \
               for %i = %n to %n step %n {\n    // only closing\n  } // for tail\n  // kernel closing\n}\n";
    let m = ok(src);
    let KernelBody::Ir(body) = &m.kernels.iter().next().unwrap().1.body else { panic!() };
    let ops: Vec<_> = body.ops.iter().map(|(_, o)| o).collect();
    assert_eq!(ops[0].comments.leading, [" header", " lead"]);
    assert_eq!(ops[0].comments.trailing.as_deref(), Some(" tail"));
    assert_eq!(ops[1].comments.trailing.as_deref(), Some(" for tail"));
    let OpKind::For { body: region, .. } = &ops[1].kind else { panic!() };
    assert_eq!(region.closing_comments, [" only closing"]);
    assert_eq!(body.entry.closing_comments, [" kernel closing"]);
}

#[test]
fn value_types_follow_the_definitions() {
    let src = "kernel @k(%b: buf<f16, read>, %l: local<vec2<i32>>, %v: vec4<f32>, %n: u32, %f: f32) {\n\
               %i = global_id 0\n  %x = load %b[%i]\n  %y = load %l[%i]\n  %z = load @g[%i]\n  \
               %s = add %f, %f\n  %c = lt %v, %v\n  %e = extract %v, 1\n  %w = vec %f, %f, %f\n  \
               %k = cast %n to i64\n  %t = local u64[4]\n  %o = atomic add %t[%i], %i\n  \
               %r, %q = for %j = %n to %n step %n carry(%a = %f, %p = %i) {\n    yield %a, %p\n  }\n  \
               %m = if %c -> vec3<u32> {\n    yield %n\n  } else {\n    yield %n\n  }\n}\n\
               device_global @g : vec2<f16>[4]\n";
    let m = ok(src);
    let KernelBody::Ir(body) = &m.kernels.iter().next().unwrap().1.body else { panic!() };
    let ty = |name: &str| body.values.iter().find(|(_, v)| v.name == name).map(|(_, v)| v.ty).unwrap();
    use crate::types::{ScalarType as S, Type};
    let data = |s, lanes| ValueType::Data(Type::vector(s, lanes));
    assert_eq!(ty("i"), data(S::U32, 1));
    assert_eq!(ty("x"), data(S::F16, 1));
    assert_eq!(ty("y"), data(S::I32, 2));
    assert_eq!(ty("z"), data(S::F16, 2));
    assert_eq!(ty("s"), data(S::F32, 1));
    assert_eq!(ty("c"), data(S::Bool, 4));
    assert_eq!(ty("e"), data(S::F32, 1));
    assert_eq!(ty("w"), data(S::F32, 3));
    assert_eq!(ty("k"), data(S::I64, 1));
    assert_eq!(ty("t"), ValueType::Local { elem: Type::scalar(S::U64) });
    assert_eq!(ty("o"), data(S::U64, 1));
    assert_eq!(ty("j"), data(S::U32, 1));
    assert_eq!(ty("a"), data(S::F32, 1));
    assert_eq!(ty("p"), data(S::U32, 1));
    assert_eq!(ty("r"), data(S::F32, 1));
    assert_eq!(ty("q"), data(S::U32, 1));
    assert_eq!(ty("m"), data(S::U32, 3));
    assert_eq!(ty("b"), ValueType::Buffer { elem: Type::scalar(S::F16), access: crate::types::Access::Read });
    // Definitions, in pre-order: the `for`, its results, its variable, its carried values.
    let defs: Vec<ValueDef> = ["r", "q", "j", "a", "p"]
        .iter()
        .map(|n| body.values.iter().find(|(_, v)| v.name == *n).unwrap().1.def)
        .collect();
    let ValueDef::Result(for_op, 0) = defs[0] else { panic!("{defs:?}") };
    assert_eq!(
        defs[1..],
        [
            ValueDef::Result(for_op, 1),
            ValueDef::LoopVar(for_op),
            ValueDef::Carried(for_op, 0),
            ValueDef::Carried(for_op, 1)
        ]
    );
}

#[test]
fn devices_of_nodes_and_homes_of_memory_parse_and_print_back() {
    let src = "usm @a : f32[4]\nusm @b : f32[4] home(2)\nusm @w : f32[4] host replicated\nbuffer @c : f32[4] home(1)\n\n\
               graph @g device(3) {\n  %m = async_malloc f32[4] device device(1)\n  %n = async_malloc f32[4] device(1)\n  \
               %t = memcpy @b, @a, 16 device(2) after(%m)\n  %f = async_free %m device(1) after(%t)\n}\n";
    let m = parse_module(src).unwrap_or_else(|e| panic!("{e:?}"));
    let homes: Vec<Home> = m.memories.iter().map(|(_, x)| x.home).collect();
    assert_eq!(homes, [Home::Graph, Home::Device(2), Home::Replicated, Home::Device(1)]);
    let g = &m.graphs[m.graph_by_name("g").unwrap()];
    let devices: Vec<(Option<u32>, u32)> = g.nodes.iter().map(|(h, n)| (n.device, g.node_device(h))).collect();
    assert_eq!(devices, [(Some(1), 1), (Some(1), 1), (Some(2), 2), (Some(1), 1)]);
    assert!(g.is_multi_device());
    // `device` before `device(N)` is the allocation's kind (the default, not printed).
    let (_, first) = g.nodes.iter().next().unwrap();
    assert!(matches!(first.kind, NodeKind::AsyncMalloc { kind: crate::module::UsmKind::Device, .. }));
    let text = crate::text::print(&m);
    assert!(text.contains("%m = async_malloc f32[4] device(1)\n"), "{text}");
    assert!(text.contains("usm @w : f32[4] host replicated\n") && text.contains("buffer @c : f32[4] home(1)\n"));
    assert_eq!(parse_module(&text).unwrap(), m);
    // `device(N)` takes an index.
    let (code, message, line, _) = error("usm @a : f32[4]\ngraph @g {\n  %k = memset @a, 0, 16 device(x)\n}\n");
    assert_eq!((code, line, message.as_str()), ("E0010", 3, "expected a device index, found `x`"));
}
