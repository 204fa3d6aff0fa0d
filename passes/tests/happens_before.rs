//! Property test of `eliminate-empty-nodes`, `eliminate-barriers`, `transitive-reduction`
//! and their combination on random recorded graphs: kernels reading and writing user
//! buffers (race-free by construction), empty nodes and barriers on a queue. After each
//! pass the verifier accepts the module, the happens-before relation among the remaining
//! nodes is the one before, and the reference interpreter computes the same bytes in every
//! user buffer.

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{text, verify, Graph, Module, NodeKind};
use cmdgraph_passes::{lookup, PassContext};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use std::collections::{BTreeMap, BTreeSet};

const BUFFERS: usize = 4;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Kernel,
    Empty,
    Barrier,
}

/// A random graph: node kinds, and for each node its predecessors (earlier nodes).
#[derive(Clone, Debug)]
struct Shape {
    kinds: Vec<Kind>,
    preds: Vec<Vec<usize>>,
    /// Per node: which buffer choice and scalar to try (kernels only).
    picks: Vec<(usize, usize, u8, bool)>,
    /// Per barrier: how many of its predecessors to list in `wait(...)`.
    waits: Vec<usize>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (2usize..26).prop_flat_map(|n| {
        let kind = prop_oneof![2 => Just(Kind::Kernel), 1 => Just(Kind::Empty), 1 => Just(Kind::Barrier)];
        (
            proptest::collection::vec(kind, n),
            proptest::collection::vec(proptest::collection::vec(any::<prop::sample::Index>(), 0..4), n),
            proptest::collection::vec((0..BUFFERS, 0..BUFFERS, 1u8..9, any::<bool>()), n),
            proptest::collection::vec(0usize..3, n),
        )
            .prop_map(|(kinds, raw, picks, waits)| {
                let preds = raw
                    .iter()
                    .enumerate()
                    .map(|(j, list)| {
                        let mut p: Vec<usize> =
                            if j == 0 { Vec::new() } else { list.iter().map(|i| i.index(j)).collect() };
                        p.sort_unstable();
                        p.dedup();
                        p
                    })
                    .collect();
                Shape { kinds, preds, picks, waits }
            })
    })
}

/// The module text: kernels get buffers so that every two accesses of a buffer with a
/// write are ordered (a kernel with no race-free choice becomes an empty node).
fn module_text(s: &Shape) -> String {
    let n = s.kinds.len();
    // reach[j] = nodes that reach j (strict ancestors).
    let mut reach: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for j in 0..n {
        for &p in &s.preds[j] {
            let up = reach[p].clone();
            reach[j].extend(up);
            reach[j].insert(p);
        }
    }
    let mut writers: Vec<Vec<usize>> = vec![Vec::new(); BUFFERS];
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); BUFFERS];
    let mut out = String::from(
        "kernel @addc(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {\n  %i = global_id 0\n  %v = load %x[%i]\n  %r = add %v, %a\n  store %y[%i], %r\n}\n\
         kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {\n  %i = global_id 0\n  %v = load %x[%i]\n  %r = mul %v, %a\n  store %y[%i], %r\n}\n",
    );
    for b in 0..BUFFERS {
        out.push_str(&format!("usm @b{b} : f32[4]\n"));
    }
    out.push_str("graph @g {\n  queue @q\n");
    for (j, ancestors) in reach.iter().enumerate() {
        let ordered = |list: &Vec<usize>| list.iter().all(|i| ancestors.contains(i));
        let mut kind = s.kinds[j];
        let (r0, w0, a, scale) = s.picks[j];
        let mut args = None;
        if let Kind::Kernel = kind {
            // Readable: every writer ordered before; writable: every access ordered before.
            'search: for dr in 0..BUFFERS {
                for dw in 0..BUFFERS {
                    let (r, w) = ((r0 + dr) % BUFFERS, (w0 + dw) % BUFFERS);
                    if r != w && ordered(&writers[r]) && ordered(&writers[w]) && ordered(&readers[w]) {
                        args = Some((r, w));
                        break 'search;
                    }
                }
            }
            if args.is_none() {
                kind = Kind::Empty;
            }
        }
        let via = |p: usize| match (s.kinds[p], kind) {
            (Kind::Barrier, _) | (_, Kind::Barrier) => "barrier",
            _ => "event",
        };
        let command = match (kind, args) {
            (Kind::Kernel, Some((r, w))) => {
                readers[r].push(j);
                writers[w].push(j);
                let k = if scale { "scale" } else { "addc" };
                format!("kernel @{k} range(4) args(@b{r}, @b{w}, {a}.0)")
            }
            (Kind::Barrier, _) => {
                let listed: Vec<String> = s.preds[j].iter().take(s.waits[j]).map(|p| format!("%n{p}")).collect();
                if listed.is_empty() {
                    "barrier".to_string()
                } else {
                    format!("barrier wait({})", listed.join(", "))
                }
            }
            _ => "empty".to_string(),
        };
        let after: Vec<String> = s.preds[j].iter().map(|&p| format!("%n{p} via {}", via(p))).collect();
        let after = if after.is_empty() { String::new() } else { format!(" after({})", after.join(", ")) };
        out.push_str(&format!("  %n{j} = {command} on @q{after}\n"));
    }
    out.push_str("}\n");
    out
}

/// Reachability among nodes by name: (from, to) for every path of one or more edges.
fn happens_before(g: &Graph) -> BTreeSet<(String, String)> {
    let n = g.nodes.len();
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (_, e) in g.edges.iter() {
        succ[e.from.index()].push(e.to.index());
    }
    let names: Vec<&str> = g.nodes.iter().map(|(_, n)| n.name.as_str()).collect();
    let mut out = BTreeSet::new();
    for s in 0..n {
        let mut seen = vec![false; n];
        let mut stack = succ[s].clone();
        while let Some(v) = stack.pop() {
            if !std::mem::replace(&mut seen[v], true) {
                out.insert((names[s].to_string(), names[v].to_string()));
                stack.extend_from_slice(&succ[v]);
            }
        }
    }
    out
}

/// Every user buffer after one run of `@g`, with fixed inputs.
fn outputs(m: &Module) -> BTreeMap<String, Vec<u8>> {
    let mut interp = Interpreter::new(m).expect("interpreter");
    for b in 0..BUFFERS {
        let values: Vec<f32> = (0..4).map(|i| (b * 4 + i) as f32 * 0.5 - 1.0).collect();
        interp.bind_as(&format!("b{b}"), &values).expect("bind");
    }
    let exec = interp.finalize("g").expect("finalize");
    interp.run(exec).expect("run");
    (0..BUFFERS).map(|b| (format!("b{b}"), interp.read(&format!("b{b}")).expect("read").to_vec())).collect()
}

fn graph(m: &Module) -> &Graph {
    m.graphs.iter().next().map(|(_, g)| g).expect("one graph")
}

fn run_passes(m: &mut Module, names: &[&str]) {
    let mut ctx = PassContext::default();
    for name in names {
        let pass = lookup(name).expect("registered");
        (pass.run)(m, &mut ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(d) = verify::verify(m) {
            let printed = text::print(m);
            panic!("{name} output rejected:\n{}", cmdgraph_ir::diag::render_all(&d, "out.cgir", &printed));
        }
    }
}

/// Checks one pipeline on one input.
fn check(src: &str, names: &[&str]) -> Result<(), TestCaseError> {
    let before =
        text::parse(src).map_err(|d| TestCaseError::fail(cmdgraph_ir::diag::render_all(&d, "in.cgir", src)))?;
    if let Err(d) = verify::verify(&before) {
        return Err(TestCaseError::fail(format!("{}\n{src}", cmdgraph_ir::diag::render_all(&d, "in.cgir", src))));
    }
    let mut after = before.clone();
    run_passes(&mut after, names);
    let (g0, g1) = (graph(&before), graph(&after));
    let kept: BTreeSet<String> = g1.nodes.iter().map(|(_, n)| n.name.clone()).collect();
    let expected: BTreeSet<_> =
        happens_before(g0).into_iter().filter(|(a, b)| kept.contains(a) && kept.contains(b)).collect();
    prop_assert_eq!(happens_before(g1), expected, "{:?} changed happens-before\n{}", names, src);
    prop_assert_eq!(outputs(&after), outputs(&before), "{:?} changed outputs\n{}", names, src);
    // Every node that stays is one of the input's, with its command unchanged.
    for (_, node) in g1.nodes.iter() {
        let h = g0.node_by_name(&node.name);
        prop_assert!(h.is_some_and(|h| g0.nodes[h].kind.node_type() == node.kind.node_type()));
    }
    let empties = |g: &Graph| g.nodes.iter().filter(|(_, n)| matches!(n.kind, NodeKind::Empty)).count();
    let barriers = |g: &Graph| g.nodes.iter().filter(|(_, n)| matches!(n.kind, NodeKind::Barrier { .. })).count();
    if names.contains(&"eliminate-empty-nodes") || names.contains(&"eliminate-barriers") {
        prop_assert!(g1.edges.len() <= g0.edges.len(), "elimination grew the edge count\n{}", src);
    }
    if names.contains(&"transitive-reduction") {
        prop_assert!(is_reduced(g1), "a redundant edge is left\n{}", text::print(&after));
    }
    if names == ["transitive-reduction"] {
        prop_assert_eq!(g1.nodes.len(), g0.nodes.len());
    }
    if names == ["eliminate-empty-nodes"] {
        prop_assert_eq!(barriers(g1), barriers(g0));
    }
    if names == ["eliminate-barriers"] {
        prop_assert_eq!(empties(g1), empties(g0));
    }
    Ok(())
}

/// No edge is implied by another path, and no edge is doubled.
fn is_reduced(g: &Graph) -> bool {
    let hb = happens_before(g);
    let names: Vec<&str> = g.nodes.iter().map(|(_, n)| n.name.as_str()).collect();
    let mut seen = BTreeSet::new();
    for (_, e) in g.edges.iter() {
        let (a, b) = (e.from.index(), e.to.index());
        if !seen.insert((a, b)) {
            return false;
        }
        let implied = g.edges.iter().any(|(_, f)| {
            f.from.index() == a
                && f.to.index() != b
                && hb.contains(&(names[f.to.index()].to_string(), names[b].to_string()))
        });
        if implied {
            return false;
        }
    }
    true
}

const PIPELINES: &[&[&str]] = &[
    &["eliminate-empty-nodes"],
    &["eliminate-barriers"],
    &["transitive-reduction"],
    &["eliminate-empty-nodes", "eliminate-barriers", "transitive-reduction"],
    &["transitive-reduction", "eliminate-barriers", "eliminate-empty-nodes", "transitive-reduction"],
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn passes_keep_happens_before_and_outputs(s in shape()) {
        let src = module_text(&s);
        for names in PIPELINES {
            check(&src, names)?;
        }
    }
}

/// The generator makes inputs with something to remove (a test of the test).
#[test]
fn generated_graphs_exercise_every_pass() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut empties, mut barriers, mut redundant) = (0, 0, 0);
    for _ in 0..64 {
        let s = shape().new_tree(&mut runner).expect("a value").current();
        let m = text::parse(&module_text(&s)).expect("parses");
        let mut reduced = m.clone();
        run_passes(&mut reduced, &["transitive-reduction"]);
        redundant += graph(&m).edges.len() - graph(&reduced).edges.len();
        let mut stripped = m.clone();
        run_passes(&mut stripped, &["eliminate-empty-nodes", "eliminate-barriers"]);
        let count = |g: &Graph, f: fn(&NodeKind) -> bool| g.nodes.iter().filter(|(_, n)| f(&n.kind)).count();
        empties += count(graph(&m), |k| matches!(k, NodeKind::Empty))
            - count(graph(&stripped), |k| matches!(k, NodeKind::Empty));
        barriers += count(graph(&m), |k| matches!(k, NodeKind::Barrier { .. }))
            - count(graph(&stripped), |k| matches!(k, NodeKind::Barrier { .. }));
    }
    assert!(empties > 20 && barriers > 20 && redundant > 20, "{empties} {barriers} {redundant}");
}
