//! `cmdgraph_ir::diff`: equal modules give an empty diff, each kind of change is detected
//! and named, the report is deterministic, the DOT picture is well formed, and the update
//! check agrees with topological identity. Properties over generated modules: `diff(m, m)`
//! is empty and a mutation of `m` is reported.

mod gen;

use cmdgraph_ir::diff::update::{check_update, UpdateResult};
use cmdgraph_ir::diff::{diff_modules, to_dot, DiffOptions, Entry, ModuleDiff, Subject};
use cmdgraph_ir::graph::{EdgeKind, Node, NodeKind};
use cmdgraph_ir::span::Span;
use cmdgraph_ir::text::{parse, print};
use cmdgraph_ir::{diag, Module};
use proptest::prelude::*;
use std::path::Path;

fn parse_ok(src: &str) -> Module {
    parse(src).unwrap_or_else(|d| panic!("does not parse:\n{}", diag::render_all(&d, "test.cgir", src)))
}

fn diff(a: &str, b: &str) -> ModuleDiff {
    diff_modules(&parse_ok(a), &parse_ok(b), &DiffOptions::default())
}

fn lines(d: &ModuleDiff) -> Vec<String> {
    d.to_string().lines().map(str::to_string).collect()
}

fn changed(subject: Subject, attr: &str, old: &str, new: &str) -> Entry {
    Entry::Changed { subject, attr: attr.into(), old: old.into(), new: new.into() }
}

fn node(name: &str) -> Subject {
    Subject::Node(name.into())
}

fn examples() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).unwrap_or_default()))
        .collect();
    out.sort();
    assert!(out.len() >= 7, "examples are missing: {out:?}");
    out
}

const BASE: &str = r#"
kernel @k(%x: buf<f32, read_write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %s
  store %x[%i], %r
}

usm @x : f32[64]
usm @y : f32[64]

graph @g properties(updatable) {
  queue @q
  dyn %s = 2.0 : f32
  %a = kernel @k range(64) args(@x, %s) on @q
  %b = memcpy @y, @x, 256 after(%a)
  %c = empty after(%b)
  edge %a -> %c
}
"#;

#[test]
fn every_example_equals_itself_and_its_reprint() {
    for (name, text) in examples() {
        let m = parse_ok(&text);
        let d = diff_modules(&m, &m, &DiffOptions::default());
        assert!(d.is_empty(), "{name}: {d}");
        assert_eq!(lines(&d), vec!["summary: no differences"], "{name}");
        let reprinted = parse_ok(&print(&m));
        assert!(diff_modules(&m, &reprinted, &DiffOptions::default()).is_empty(), "{name}");
    }
}

#[test]
fn comments_and_layout_do_not_count() {
    let commented = BASE.replace("%r = mul %v, %s", "// scaled\n  %r = mul %v, %s // by s").replace("  %c", "\n\n  %c");
    assert!(diff(BASE, &commented).is_empty());
}

#[test]
fn node_attributes_are_named_one_by_one() {
    let b = BASE
        .replace("range(64) args(@x, %s) on @q", "range(32) args(@y, %s)")
        .replace("memcpy @y, @x, 256", "memcpy @y + 16, @x, 128");
    let d = diff(BASE, &b);
    let entries = &d.graphs[0].entries;
    assert_eq!(
        entries,
        &vec![
            changed(node("a"), "launch", "range(64)", "range(32)"),
            // Named by the kernel's parameter, not by position.
            changed(node("a"), "arg %x", "@x", "@y"),
            changed(node("a"), "queue", "@q", "(none)"),
            changed(node("b"), "dst", "@y", "@y + 16"),
            changed(node("b"), "bytes", "256", "128"),
        ]
    );
    let text = lines(&d);
    assert!(text.contains(&"~ %a: launch range(64) -> range(32)".to_string()), "{text:?}");
    assert!(text.contains(&"~ %a: arg %x: @x -> @y".to_string()), "{text:?}");
    assert_eq!(d.summary().nodes.changed, 2);
}

#[test]
fn a_different_command_is_one_change_with_both_statements() {
    let d = diff(BASE, &BASE.replace("%c = empty", "%c = memset @x, 0, 16"));
    assert_eq!(d.graphs[0].entries, vec![changed(node("c"), "command", "empty", "memset @x, 0, 16")]);
}

#[test]
fn added_and_removed_nodes_keep_creation_order() {
    let b = BASE.replace("  %c = empty after(%b)\n", "  %n1 = empty\n  %c = empty after(%b)\n  %n2 = empty\n");
    let b = b
        .replace("%b = memcpy @y, @x, 256 after(%a)", "%b2 = memcpy @y, @x, 256 after(%a)")
        .replace("after(%b)", "after(%b2)");
    let text = lines(&diff(BASE, &b));
    let body: Vec<&str> =
        text.iter().map(String::as_str).filter(|l| !l.starts_with("@@") && !l.starts_with("summary")).collect();
    assert_eq!(
        body,
        vec![
            "- %b = memcpy @y, @x, 256",
            "+ %b2 = memcpy @y, @x, 256",
            "+ %n1 = empty",
            "+ %n2 = empty",
            "- edge %a -> %b (via depends_on)",
            "- edge %b -> %c (via depends_on)",
            "+ edge %a -> %b2 (via depends_on)",
            "+ edge %b2 -> %c (via depends_on)",
        ]
    );
}

#[test]
fn edge_provenance_changes_are_changes() {
    let b = BASE.replace("  %c = empty after(%b)\n  edge %a -> %c\n", "  %c = empty after(%b, %a)\n");
    let d = diff(BASE, &b);
    let edge = Subject::Edge { from: "a".into(), to: "c".into() };
    assert_eq!(d.graphs[0].entries, vec![changed(edge, "provenance", "via make_edge", "via depends_on")]);
    assert_eq!(d.summary().edges.changed, 1);
}

#[test]
fn graph_dynamic_kernel_and_memory_changes_are_named() {
    let b = BASE
        .replace("properties(updatable)", "properties(updatable, enable_profiling)")
        .replace("dyn %s = 2.0 : f32", "dyn %s = 4.0 : f32")
        .replace("%r = mul %v, %s", "%r = add %v, %s")
        .replace("usm @y : f32[64]", "usm @y : f32[64] host")
        .replace("queue @q", "queue @q in_order");
    let d = diff(BASE, &b);
    assert_eq!(
        d.module,
        vec![
            Entry::Body {
                subject: Subject::Kernel("k".into()),
                removed: 1,
                added: 1,
                hunks: [
                    "@@ -2,5 +2,5 @@",
                    "   %i = global_id 0",
                    "   %v = load %x[%i]",
                    "-  %r = mul %v, %s",
                    "+  %r = add %v, %s",
                    "   store %x[%i], %r",
                    " }",
                ]
                .map(String::from)
                .to_vec(),
            },
            changed(Subject::Memory("y".into()), "kind", "usm device", "usm host"),
        ]
    );
    assert_eq!(
        d.graphs[0].entries,
        vec![
            changed(Subject::Graph("g".into()), "properties", "(updatable)", "(updatable, enable_profiling)"),
            changed(Subject::Queue("q".into()), "in_order", "false", "true"),
            changed(Subject::DynParam("s".into()), "value", "2.0 : f32", "4.0 : f32"),
        ]
    );
}

#[test]
fn dynamic_command_groups_report_index_and_alternatives() {
    let a = "kernel @k(%x: buf<f32, read_write>) {\n  %i = global_id 0\n  %v = load %x[%i]\n  store %x[%i], %v\n}\n\nusm @x : f32[8]\n\ngraph @g {\n  dcg %d active(0) {\n    kernel @k range(8) args(@x)\n    kernel @k range(4) args(@x)\n  }\n  %n = dynamic %d\n}\n";
    let b = a.replace("active(0)", "active(1)").replace("range(4)", "range(2)");
    let d = diff(a, &b);
    let dcg = || Subject::Dcg("d".into());
    assert_eq!(
        d.graphs[0].entries,
        vec![
            changed(dcg(), "active", "0", "1"),
            changed(dcg(), "alternative 1", "kernel @k range(4) args(@x)", "kernel @k range(2) args(@x)"),
        ]
    );
}

#[test]
fn inlined_nodes_name_their_sub_graph_node() {
    let a = "graph @child {\n  %x = empty\n}\n\ngraph @g {\n  %s = subgraph @child\n}\n";
    let b = "graph @child {\n  %x = empty\n}\n\ngraph @g {\n  %s.x = empty\n}\n";
    let d = diff(a, b);
    let g = d.graphs.iter().find(|g| g.a.as_deref() == Some("g")).expect("graph g");
    assert_eq!(
        g.entries,
        vec![
            Entry::Removed {
                subject: node("s"),
                text: "%s = subgraph @child".into(),
                note: Some("inlined as 1 node(s)".into())
            },
            Entry::Added {
                subject: node("s.x"),
                text: "%s.x = empty".into(),
                note: Some("inlined from %s: @child %x".into())
            },
        ]
    );
}

#[test]
fn graph_option_and_renames_pair_graphs() {
    let a = "graph @one {\n  %a = empty\n}\n\ngraph @two {\n  %b = empty\n}\n";
    let b = "graph @one {\n  %a = empty\n  %z = empty\n}\n\ngraph @three {\n  %b = empty\n}\n";
    let all = diff(a, b);
    assert_eq!(all.graphs.len(), 2);
    assert_eq!((all.graphs[1].a.as_deref(), all.graphs[1].b.as_deref()), (Some("two"), Some("three")));
    assert!(!all.graphs[1].is_empty(), "a rename is a difference");
    let one = diff_modules(&parse_ok(a), &parse_ok(b), &DiffOptions { graph: Some("@two".into()) });
    assert_eq!(one.graphs.len(), 1);
    assert!(one.graphs[0].entries.is_empty());
}

#[test]
fn output_is_deterministic() {
    let b = BASE.replace("range(64)", "range(8)").replace("%c = empty", "%c = empty\n  %d = empty");
    let (ma, mb) = (parse_ok(BASE), parse_ok(&b));
    let first = diff_modules(&ma, &mb, &DiffOptions::default());
    for _ in 0..3 {
        let again = diff_modules(&parse_ok(BASE), &parse_ok(&b), &DiffOptions::default());
        assert_eq!(again.to_string(), first.to_string());
        assert_eq!(to_dot(&ma, &mb, &again), to_dot(&ma, &mb, &first));
    }
}

#[test]
fn dot_picture_colours_each_status() {
    let b = BASE
        .replace("range(64)", "range(8)")
        .replace("  %c = empty after(%b)\n  edge %a -> %c\n", "  %d = empty after(%b)\n");
    let (ma, mb) = (parse_ok(BASE), parse_ok(&b));
    let dot = to_dot(&ma, &mb, &diff_modules(&ma, &mb, &DiffOptions::default()));
    assert!(dot.starts_with("// cmdgraph diff\ndigraph"), "{dot}");
    assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
    assert!(dot.contains("\"legend/added\""), "{dot}");
    assert!(
        dot.contains(
            "[label=\"~ %a\\lkernel @k range(8) args(@x, %s)\\l~ launch range(64) -> range(8)\\l\", color=\"#ef6c00\""
        ),
        "{dot}"
    );
    assert!(dot.contains("[label=\"- %c\\lempty\\l\", color=\"#c62828\""), "{dot}");
    assert!(dot.contains("[label=\"+ %d\\lempty\\l\", color=\"#2e7d32\""), "{dot}");
    assert!(dot.contains("[label=\"%b\\lmemcpy @y, @x, 256\\l\", color=\"#9e9e9e\""), "{dot}");
}

#[test]
fn update_check_follows_topological_identity() {
    // Whole-graph update sources take no memcpy: the base graph with an empty node instead.
    let updatable = |s: &str| parse_ok(&s.replace("%b = memcpy @y, @x, 256", "%b = empty"));
    let m = updatable(BASE);
    let g = m.graph_by_name("g").expect("g");
    let same = check_update(&m, g, &m, g);
    assert_eq!(same.verdict, Ok(()));
    assert!(same.changes.is_empty());

    let with_copy = parse_ok(BASE);
    let err = check_update(&m, g, &with_copy, g).verdict.expect_err("memcpy in source");
    assert_eq!((err.result, err.source_node.map(|h| h.index())), (UpdateResult::ErrorNotSupported, Some(1)));
    // The other way round the memcpy pairs with an empty node: the node type changed.
    let copy_source = parse_ok(&BASE.replace("%b = memcpy @y, @x, 256", "%b = barrier"));
    let err = check_update(&with_copy, g, &copy_source, g).verdict.expect_err("node type");
    assert_eq!((err.result, err.exec_node.map(|h| h.index())), (UpdateResult::ErrorNodeTypeChanged, Some(1)));

    let s = updatable(&BASE.replace("dyn %s = 2.0 : f32", "dyn %s = 3.0 : f32"));
    let report = check_update(&m, g, &s, g);
    assert_eq!(report.verdict, Ok(()));
    assert_eq!(report.changes.len(), 1);
    assert_eq!((report.changes[0].attr.as_str(), report.changes[0].old.as_str()), ("arg %s", "2.0 : f32"));
    // A possible update is a success: what it writes is listed under a note, not as warnings.
    let text = report.render((&m, g), (&s, g), None);
    assert!(
        text.starts_with(
            "ok: @g can be updated from @g\nnote: the update would change 1 parameter(s) on 1 node(s):\n  \
             %a: arg %s: 2.0 : f32 -> 3.0 : f32\n"
        ),
        "{text}"
    );
    assert!(!text.contains("warning"), "{text}");
}

#[test]
fn kernel_bodies_differ_by_a_unified_diff_with_every_hunk() {
    // Two changes far apart (two hunks) and a signature change.
    let long = |first: &str, last: &str, ty: &str| {
        let mut k = format!("kernel @k(%x: buf<f32, read_write>, %s: {ty}) {{\n  %i = global_id 0\n");
        k.push_str(&format!("  %v0 = load %x[%i]\n  %a0 = {first} %v0, %v0\n"));
        for i in 1..12 {
            k.push_str(&format!("  %a{i} = add %a{}, %v0\n", i - 1));
        }
        k.push_str(&format!("  %z = {last} %a11, %v0\n  store %x[%i], %z\n}}\n"));
        k
    };
    let d = diff(&long("mul", "sub", "f32"), &long("div", "max", "u32"));
    assert_eq!(
        d.module[0],
        changed(
            Subject::Kernel("k".into()),
            "signature",
            "kernel @k(%x: buf<f32, read_write>, %s: f32)",
            "kernel @k(%x: buf<f32, read_write>, %s: u32)"
        )
    );
    let Entry::Body { removed, added, hunks, .. } = &d.module[1] else { panic!("{:?}", d.module) };
    assert_eq!((removed, added), (&2, &2));
    let headers: Vec<&str> = hunks.iter().map(String::as_str).filter(|h| h.starts_with("@@")).collect();
    assert_eq!(headers, ["@@ -2,6 +2,6 @@", "@@ -13,6 +13,6 @@"]);
    assert!(hunks.contains(&"-  %z = sub %a11, %v0".to_string()), "{hunks:?}");
    assert!(hunks.contains(&"+  %z = max %a11, %v0".to_string()), "{hunks:?}");
    let text = d.to_string();
    assert!(
        text.contains("~ kernel @k: body: -2 +2 line(s)\n    @@ -2,6 +2,6 @@\n       %i = global_id 0\n"),
        "{text}"
    );
    // One changed kernel in the summary, however many lines.
    assert_eq!(d.summary().other.changed, 1);
}

#[test]
fn a_fused_node_lists_only_edges_that_existed() {
    let a = r#"
kernel @k(%in: buf<f32, read>, %out: buf<f32, write>) {
  %i = global_id 0
  %v = load %in[%i]
  store %out[%i], %v
}
kernel @fused.k0.k1(%in: buf<f32, read>, %out: buf<f32, write>) {
  %i = global_id 0
  %v = load %in[%i]
  store %out[%i], %v
}
usm @x : f32[64]
usm @y : f32[64]
graph @g {
  %a = empty
  %t = async_malloc f32[64]
  %k0 = kernel @k range(64) args(@x, %t) after(%a, %t)
  %k1 = kernel @k range(64) args(%t, @y) after(%k0)
  %f = async_free %t after(%k1)
}
"#;
    let b = r#"
kernel @fused.k0.k1(%in: buf<f32, read>, %out: buf<f32, write>) {
  %i = global_id 0
  %v = load %in[%i]
  store %out[%i], %v
}
usm @x : f32[64]
usm @y : f32[64]
graph @g {
  %a = empty
  %k1 = kernel @fused.k0.k1 range(64) args(@x, @y) after(%a)
}
"#;
    let d = diff(a, b);
    let edges: Vec<String> = d.graphs[0]
        .entries
        .iter()
        .filter(|e| matches!(e.subject(), Subject::Edge { .. }))
        .map(|e| e.to_string())
        .collect();
    // The removed edges are listed as A had them: `%t -> %k1`, the fused node's view of A's
    // `%t -> %k0`, never existed. `%k0 -> %k1` is inside the fusion and `%a -> %k0` is B's
    // `%a -> %k1`: neither is listed.
    assert_eq!(
        edges,
        ["- edge %t -> %k0 (via depends_on)  // %k0 was fused into %k1", "- edge %k1 -> %f (via depends_on)",]
    );
    let dot = to_dot(&parse_ok(a), &parse_ok(b), &d);
    assert!(!dot.contains("%t -> %k1"), "{dot}");
}

/// Appends an empty node to the first graph that has a node, named so that no generated
/// name can clash. Returns its name.
fn add_node(m: &mut Module) -> Option<String> {
    let (_, g) = m.graphs.iter_mut().next()?;
    let name = "zz added node".to_string();
    let h = g.nodes.append(
        Node { device: None, name: name.clone(), kind: NodeKind::Empty, queue: None, comments: Default::default() },
        Span::UNDEFINED,
    );
    g.body.push(cmdgraph_ir::graph::Stmt::Node(h));
    Some(name)
}

/// Changes the provenance of the last edge of the first graph that has one.
fn flip_edge(m: &mut Module) -> Option<(String, String, EdgeKind, EdgeKind)> {
    for (_, g) in m.graphs.iter_mut() {
        let Some(h) = g.edges.handles().last() else { continue };
        let e = g.edges[h];
        let new = if e.kind == EdgeKind::Barrier { EdgeKind::Transitive } else { EdgeKind::Barrier };
        g.edges[h].kind = new;
        let name = |n| g.nodes.try_get(n).map_or("?".to_string(), |n: &Node| n.name.clone());
        return Some((name(e.from), name(e.to), e.kind, new));
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_generated_module_equals_itself(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let m = gen::module(&bytes);
        let d = diff_modules(&m, &m, &DiffOptions::default());
        prop_assert!(d.is_empty(), "diff(m, m) not empty:\n{}\nfor:\n{}", d, print(&m));
        let dot = to_dot(&m, &m, &d);
        prop_assert_eq!(dot.matches("color=\"#2e7d32\"").count(), 1, "only the legend is green");
    }

    #[test]
    fn an_added_node_is_reported_alone(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let a = gen::module(&bytes);
        let mut b = a.clone();
        if let Some(name) = add_node(&mut b) {
            let d = diff_modules(&a, &b, &DiffOptions::default());
            let all: Vec<&Entry> = d.graphs.iter().flat_map(|g| &g.entries).collect();
            prop_assert_eq!(all.len(), 1, "{}", d);
            prop_assert!(matches!(all[0], Entry::Added { subject: Subject::Node(n), .. } if *n == name), "{}", d);
            prop_assert!(d.module.is_empty());
            let back = diff_modules(&b, &a, &DiffOptions::default());
            prop_assert_eq!(back.summary().nodes.removed, 1);
        }
    }

    #[test]
    fn a_changed_edge_provenance_is_reported(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let a = gen::module(&bytes);
        let mut b = a.clone();
        if let Some((from, to, old, new)) = flip_edge(&mut b) {
            let d = diff_modules(&a, &b, &DiffOptions::default());
            let all: Vec<&Entry> = d.graphs.iter().flat_map(|g| &g.entries).collect();
            prop_assert_eq!(all.len(), 1, "{}", d);
            let want = changed(
                Subject::Edge { from, to },
                "provenance",
                &format!("via {}", old.keyword()),
                &format!("via {}", new.keyword()),
            );
            prop_assert_eq!(all[0], &want);
        }
    }
}
