//! DOT writer tests on modules built through the API; every output is also fed to
//! graphviz (`dot -Tsvg`), which must accept it without a warning.

use super::{to_dot, DotOptions};
use crate::graph::*;
use crate::kernel::{Kernel, KernelBody, Param, ParamType};
use crate::module::{Comments, MemoryKind, MemoryObject, Module, UsmKind};
use crate::span::{Span, SpanTable};
use crate::types::{Access, LitValue, Literal, ScalarType, Type};
use crate::Handle;
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `dot -Tsvg` on `text` and fails on a non-zero exit or any warning. Without graphviz
/// the check is skipped, except under CI (`CI=true`), where it must be there.
fn assert_graphviz_accepts(text: &str) {
    let child =
        Command::new("dot").arg("-Tsvg").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "graphviz `dot` is not on PATH (CI=true): run scripts/setup.sh"
            );
            eprintln!("note: graphviz `dot` not on PATH, DOT not rendered");
            return;
        }
        Err(e) => panic!("cannot run dot: {e}"),
    };
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = text.to_string();
    // Write from another thread: dot may fill its stdout pipe before reading all input.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("dot runs");
    writer.join().expect("writer thread").expect("write to dot");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "dot -Tsvg failed: {stderr}\n{text}");
    assert!(stderr.trim().is_empty(), "dot -Tsvg warned: {stderr}\n{text}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("<svg"), "no SVG from dot");
}

fn both_modes(module: &Module) -> (String, String) {
    let plain = to_dot(module, &DotOptions::default());
    let verbose = to_dot(module, &DotOptions { verbose: true, graph: None, ..Default::default() });
    assert_graphviz_accepts(&plain);
    assert_graphviz_accepts(&verbose);
    (plain, verbose)
}

fn f32_lit(v: f64, typed: bool) -> Literal {
    Literal { value: LitValue::Float(v), ty: typed.then_some(ScalarType::F32) }
}

fn usm(module: &mut Module, name: &str) -> Handle<MemoryObject> {
    let mem = MemoryObject {
        home: Default::default(),
        name: name.into(),
        elem: Type::F32,
        count: 1024,
        kind: MemoryKind::Usm(UsmKind::Device),
        comments: Comments::default(),
    };
    module.memories.append(mem, Span::UNDEFINED)
}

fn kernel(module: &mut Module, name: &str, params: usize) -> Handle<Kernel> {
    let params = (0..params)
        .map(|i| Param { name: format!("p{i}"), ty: ParamType::Buffer { elem: Type::F32, access: Access::ReadWrite } })
        .collect();
    let body = KernelBody::Spirv { path: "k.spv".into(), entry: "main".into(), interface: Default::default() };
    let k =
        Kernel { name: name.into(), params, body, comments: Comments::default(), param_spans: SpanTable::default() };
    module.kernels.append(k, Span::UNDEFINED)
}

fn graph(name: &str) -> Graph {
    Graph { name: name.into(), ..Graph::default() }
}

fn node(g: &mut Graph, name: &str, kind: NodeKind) -> Handle<Node> {
    let h = g.nodes.append(
        Node { device: None, name: name.into(), kind, queue: None, comments: Comments::default() },
        Span::UNDEFINED,
    );
    g.body.push(Stmt::Node(h));
    h
}

fn edge(g: &mut Graph, from: Handle<Node>, to: Handle<Node>, kind: EdgeKind) {
    g.edges.append(Edge { from, to, kind }, Span::UNDEFINED);
}

fn ptr(mem: Handle<MemoryObject>, offset: u64) -> Pointer {
    Pointer { base: MemRef::Memory(mem), offset }
}

/// One graph with every node type, every edge provenance, a queue, a dynamic parameter and
/// a dynamic command group, plus a child graph drawn through a `subgraph` node.
fn every_feature() -> Module {
    let mut m = Module::default();
    let x = usm(&mut m, "x");
    let y = usm(&mut m, "y");
    let scale = kernel(&mut m, "scale", 3);
    let relu = kernel(&mut m, "relu", 2);
    let gelu = kernel(&mut m, "gelu", 2);

    let mut inner = graph("inner");
    node(&mut inner, "i0", NodeKind::Empty);
    let inner = m.graphs.append(inner, Span::UNDEFINED);

    let mut g = graph("main");
    g.properties.updatable = true;
    g.device = 1;
    let q = g.queues.append(
        Queue { name: "q0".into(), in_order: true, discard_events: false, comments: Comments::default() },
        Span::UNDEFINED,
    );
    let alpha = g.dyn_params.append(
        DynParam { name: "alpha".into(), value: ArgValue::Scalar(f32_lit(2.0, true)), comments: Comments::default() },
        Span::UNDEFINED,
    );
    let alt = |k, a| {
        Alternative::Kernel(KernelCommand {
            kernel: k,
            launch: Launch::Range(vec![4096]),
            args: vec![Arg::Value(ArgValue::Pointer(ptr(x, 0))), a],
        })
    };
    let act = g.dcgs.append(
        DynCommandGroup {
            name: "act".into(),
            active: 1,
            alternatives: vec![alt(relu, Arg::Dyn(alpha)), alt(gelu, Arg::Value(ArgValue::Pointer(ptr(y, 0))))],
            comments: Comments::default(),
        },
        Span::UNDEFINED,
    );
    let t = node(
        &mut g,
        "t",
        NodeKind::AsyncMalloc { elem: Type::F32, count: 4096, kind: UsmKind::Device, zero_init: true },
    );
    let launch = Launch::NdRange { global: vec![1024, 1024], local: vec![16, 16], offset: vec![] };
    let args = vec![
        Arg::Value(ArgValue::Pointer(ptr(x, 64))),
        Arg::Value(ArgValue::Pointer(Pointer { base: MemRef::Alloc(t), offset: 0 })),
        Arg::Dyn(alpha),
    ];
    let k0 = node(&mut g, "k0", NodeKind::Kernel(KernelCommand { kernel: scale, launch, args }));
    g.nodes[k0].queue = Some(q);
    let c = node(&mut g, "c", NodeKind::Memcpy { dst: ptr(y, 0), src: ptr(x, 16), bytes: 4096 });
    let s = node(&mut g, "s", NodeKind::Memset { dst: ptr(y, 0), value: 7, bytes: 128 });
    let f = node(&mut g, "f", NodeKind::Memfill { dst: ptr(x, 0), pattern: f32_lit(1.5, true), count: 1024 });
    let p = node(&mut g, "p", NodeKind::Prefetch { ptr: ptr(x, 0), bytes: 4096 });
    let a = node(&mut g, "a", NodeKind::Memadvise { ptr: ptr(x, 0), bytes: 4096, advice: 2 });
    let b = node(&mut g, "b", NodeKind::Barrier { wait: vec![k0, c] });
    g.nodes[b].queue = Some(q);
    let access = vec![MemAccess { mem: MemRef::Memory(x), mode: Access::Read }];
    let h = node(&mut g, "h", NodeKind::HostTask(HostTaskCommand { callback: "log_stats".into(), access }));
    let n = node(&mut g, "n", NodeKind::Native(HostTaskCommand { callback: "gemm".into(), access: vec![] }));
    let sg = node(&mut g, "sg", NodeKind::Subgraph { graph: inner });
    let d = node(&mut g, "d", NodeKind::Dynamic { dcg: act });
    let free = node(&mut g, "free", NodeKind::AsyncFree { alloc: t });
    let e = node(&mut g, "e", NodeKind::Empty);
    edge(&mut g, t, k0, EdgeKind::DependsOn);
    edge(&mut g, k0, c, EdgeKind::InOrder);
    edge(&mut g, c, s, EdgeKind::Accessor);
    edge(&mut g, s, f, EdgeKind::Event);
    edge(&mut g, f, p, EdgeKind::Transitive);
    edge(&mut g, k0, b, EdgeKind::Barrier);
    edge(&mut g, b, h, EdgeKind::AllLeaves);
    edge(&mut g, h, n, EdgeKind::MakeEdge);
    edge(&mut g, n, sg, EdgeKind::DependsOn);
    edge(&mut g, sg, d, EdgeKind::DependsOn);
    edge(&mut g, d, free, EdgeKind::DependsOn);
    edge(&mut g, a, e, EdgeKind::MakeEdge);
    m.graphs.append(g, Span::UNDEFINED);
    m
}

#[test]
fn default_mode_labels_name_type_and_kernel() {
    let (plain, _) = both_modes(&every_feature());
    assert!(plain.contains("\"main/%k0\" [label=\"%k0\\nkernel\\n@scale\", style=bold];"), "{plain}");
    assert!(plain.contains("\"main/%b\" [label=\"%b\\next_oneapi_barrier\", shape=octagon];"), "{plain}");
    assert!(plain.contains("\"main/%d\" [label=\"%d\\nkernel\\n@gelu\", style=bold, peripheries=2];"), "{plain}");
    assert!(plain.contains("\"main/%sg\" [label=\"%sg\\nsubgraph\\n@inner\", shape=box3d];"), "{plain}");
    assert!(plain.contains("\"main/%n\" [label=\"%n\\nnative_command\""), "{plain}");
    // No operands and no provenance labels without --verbose.
    assert!(!plain.contains("args("), "{plain}");
    assert!(!plain.contains("label=\"depends_on\""), "{plain}");
}

#[test]
fn every_graph_is_a_cluster_and_subgraph_nodes_link_to_the_child_cluster() {
    let (plain, _) = both_modes(&every_feature());
    assert!(plain.contains("subgraph \"cluster_main\" {"), "{plain}");
    assert!(plain.contains("subgraph \"cluster_inner\" {"), "{plain}");
    assert!(plain.contains("compound=true;"), "{plain}");
    assert!(
        plain.contains(
            "\"main/%sg\" -> \"inner/%i0\" [style=dashed, arrowhead=empty, color=gray40, lhead=\"cluster_inner\"];"
        ),
        "{plain}"
    );
}

#[test]
fn make_edge_is_plain_and_other_provenances_are_styled() {
    let (plain, verbose) = both_modes(&every_feature());
    assert!(plain.contains("    \"main/%h\" -> \"main/%n\";\n"), "{plain}");
    assert!(plain.contains("\"main/%t\" -> \"main/%k0\" [style=dashed];"), "{plain}");
    assert!(plain.contains("\"main/%k0\" -> \"main/%b\" [style=bold, color=red];"), "{plain}");
    assert!(plain.contains("\"main/%c\" -> \"main/%s\" [style=dotted, color=darkgreen];"), "{plain}");
    assert!(verbose.contains("\"main/%h\" -> \"main/%n\" [label=\"make_edge\"];"), "{verbose}");
    assert!(
        verbose.contains("\"main/%k0\" -> \"main/%c\" [style=bold, color=gray50, label=\"in_order\"];"),
        "{verbose}"
    );
    // Edges keep creation order.
    let first = plain.find("\"main/%t\" -> \"main/%k0\"").unwrap_or(usize::MAX);
    let last = plain.find("\"main/%a\" -> \"main/%e\"").unwrap_or(0);
    assert!(first < last, "{plain}");
}

#[test]
fn verbose_mode_shows_the_operands_of_every_command() {
    let (_, v) = both_modes(&every_feature());
    let expect = [
        "%k0\\lkernel\\l@scale\\lnd_range(global(1024, 1024), local(16, 16))\\largs(@x + 64, %t, %alpha)\\ldyn %alpha = 2.0 : f32 -> arg 2\\lon @q0 in_order\\l",
        "dst: @y\\lsrc: @x + 16\\lsize: 4096 bytes\\l",
        "dst: @y\\lvalue: 7\\lsize: 128 bytes\\l",
        "pattern: 1.5 : f32\\lcount: 1024\\l",
        "ptr: @x\\lsize: 4096 bytes\\ladvice: 2\\l",
        "wait(%k0, %c)\\lon @q0 in_order\\l",
        "callback: \\\"log_stats\\\"\\laccess(@x read)\\l",
        "alloc: f32[4096] (16384 bytes)\\lzero_init: true\\l",
        "frees: %t\\l",
        "dcg %act active(1)\\l  [0] kernel @relu range(4096) args(@x, %alpha)\\l* [1] kernel @gelu range(4096) args(@x, @y)\\ldyn %alpha = 2.0 : f32 -> alt 0, arg 1\\l",
        "label=\"@main\\ldevice(1) context(0)\\lproperties(updatable)\\lqueue @q0 in_order\\ldyn %alpha = 2.0 : f32\\l\"",
    ];
    for e in expect {
        assert!(v.contains(e), "missing {e}\n{v}");
    }
}

#[test]
fn selecting_a_graph_draws_only_that_graph() {
    let m = every_feature();
    for name in ["inner", "@inner"] {
        let text = to_dot(&m, &DotOptions { verbose: false, graph: Some(name.into()), ..Default::default() });
        assert_graphviz_accepts(&text);
        assert!(text.contains("cluster_inner"), "{text}");
        assert!(!text.contains("cluster_main"), "{text}");
    }
    // The parent alone keeps its subgraph node but has no link to an undrawn cluster.
    let text = to_dot(&m, &DotOptions { verbose: false, graph: Some("main".into()), ..Default::default() });
    assert_graphviz_accepts(&text);
    assert!(text.contains("\"main/%sg\""), "{text}");
    assert!(!text.contains("lhead"), "{text}");
    let none = to_dot(&m, &DotOptions { verbose: false, graph: Some("nope".into()), ..Default::default() });
    assert_graphviz_accepts(&none);
    assert!(!none.contains("subgraph"), "{none}");
}

#[test]
fn output_is_deterministic() {
    let m = every_feature();
    let opts = DotOptions { verbose: true, graph: None, ..Default::default() };
    assert_eq!(to_dot(&m, &opts), to_dot(&m.clone(), &opts));
}

#[test]
fn hostile_names_are_escaped_and_graphviz_accepts_them() {
    let mut m = Module::default();
    let k = kernel(&mut m, "k\"\\é", 1);
    let x = usm(&mut m, "x&amp;\\");
    let mut g = graph("g\"/\\ünï\u{1}");
    let cmd =
        KernelCommand { kernel: k, launch: Launch::SingleTask, args: vec![Arg::Value(ArgValue::Pointer(ptr(x, 0)))] };
    let a = node(&mut g, "a\"\\", NodeKind::Kernel(cmd));
    let b = node(&mut g, "\\", NodeKind::HostTask(HostTaskCommand { callback: "cb\"\\\n".into(), access: vec![] }));
    let c = node(&mut g, "日本\\n", NodeKind::Empty);
    edge(&mut g, a, b, EdgeKind::MakeEdge);
    edge(&mut g, b, c, EdgeKind::DependsOn);
    m.graphs.append(g, Span::UNDEFINED);
    let (plain, verbose) = both_modes(&m);
    assert!(plain.contains("subgraph \"cluster_g\\\"\\/\\\\ünï\\u{0001}\""), "{plain}");
    assert!(plain.contains("label=\"%a\\\"\\\\\\nkernel\\n@k\\\"\\\\é\""), "{plain}");
    assert!(verbose.contains("args(@x&amp;amp;\\\\)"), "{verbose}");
    assert!(verbose.contains("callback: \\\"cb\\\\\\\"\\\\\\\\\\\\n\\\""), "{verbose}");
}

#[test]
fn duplicate_names_and_empty_graphs_still_give_distinct_nodes() {
    let mut m = Module::default();
    let mut g = graph("g");
    let a = node(&mut g, "a", NodeKind::Empty);
    let a2 = node(&mut g, "a", NodeKind::Empty);
    edge(&mut g, a, a2, EdgeKind::MakeEdge);
    m.graphs.append(g, Span::UNDEFINED);
    let empty = m.graphs.append(graph("g"), Span::UNDEFINED);
    let mut parent = graph("p");
    node(&mut parent, "sg", NodeKind::Subgraph { graph: empty });
    m.graphs.append(parent, Span::UNDEFINED);
    let (plain, _) = both_modes(&m);
    assert!(plain.contains("\"g/%a\" -> \"g/%a#2\";"), "{plain}");
    assert!(plain.contains("subgraph \"cluster_g#2\""), "{plain}");
    assert!(plain.contains("\"g#2/\" [label=\"(empty graph)\", shape=plaintext];"), "{plain}");
    assert!(plain.contains("\"p/%sg\" -> \"g#2/\" ["), "{plain}");
}

#[test]
fn dangling_handles_do_not_panic() {
    let mut m = Module::default();
    let mut g = graph("g");
    let bogus_kernel = Handle::from_usize(7).expect("small index");
    let bogus_node = Handle::from_usize(9).expect("small index");
    let cmd = KernelCommand { kernel: bogus_kernel, launch: Launch::Range(vec![1]), args: vec![] };
    let k = node(&mut g, "k", NodeKind::Kernel(cmd));
    node(&mut g, "f", NodeKind::AsyncFree { alloc: bogus_node });
    node(&mut g, "s", NodeKind::Subgraph { graph: Handle::from_usize(5).expect("small index") });
    node(&mut g, "d", NodeKind::Dynamic { dcg: Handle::from_usize(3).expect("small index") });
    edge(&mut g, k, bogus_node, EdgeKind::MakeEdge);
    m.graphs.append(g, Span::UNDEFINED);
    let (plain, verbose) = both_modes(&m);
    assert!(plain.contains("%k\\nkernel\\n@?"), "{plain}");
    assert!(verbose.contains("frees: %?"), "{verbose}");
    assert!(!plain.contains("->"), "{plain}");
}

#[test]
fn every_example_renders_in_both_modes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("examples/ exists") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_none_or(|e| e != "cgir") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("example is readable");
        let module = crate::text::parse(&source).unwrap_or_else(|d| panic!("{}: {d:?}", path.display()));
        let (plain, verbose) = both_modes(&module);
        // Every node of every graph is drawn, under an ID made from its name.
        for (_, graph) in module.graphs.iter() {
            for (_, node) in graph.nodes.iter() {
                let id = format!("\"{}/%{}\" [label=", graph.name, node.name);
                assert!(plain.contains(&id) && verbose.contains(&id), "{}: {id} missing", path.display());
            }
        }
        seen += 1;
    }
    assert!(seen > 0, "no examples found in {}", dir.display());
}
