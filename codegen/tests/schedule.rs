//! The schedule: hand-made cases with known answers, and over random DAGs of device nodes,
//! host tasks and ordering-only nodes, that every happens-before pair keeps its order, every
//! node that does work appears once, and each device segment has as few stages as its
//! longest chain allows.

use cmdgraph_codegen::schedule::{barrier_count, role, schedule, Role};
use cmdgraph_ir::bundle::Segment;
use cmdgraph_ir::Graph;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn graph(body: &str) -> cmdgraph_ir::Module {
    let text = format!("usm @x : u32[64]\ngraph @g {{\n{body}}}\n");
    cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "t", &text)))
}

fn only(m: &cmdgraph_ir::Module) -> &Graph {
    m.graphs.iter().next().map(|(_, g)| g).expect("one graph")
}

fn dev(stages: &[&[&str]]) -> Segment {
    Segment::Device { stages: stages.iter().map(|s| s.iter().map(|n| n.to_string()).collect()).collect() }
}

fn host(node: &str) -> Segment {
    Segment::Host { node: node.to_string() }
}

#[test]
fn independent_nodes_share_a_stage_and_a_chain_takes_one_stage_each() {
    let m = graph(
        "  %a = memset @x, 0, 4\n  %b = memset @x + 4, 0, 4\n  %c = memset @x + 8, 0, 4 after(%a, %b)\n  %d = memset @x + 12, 0, 4 after(%c)\n",
    );
    let s = schedule(only(&m)).expect("schedules");
    assert_eq!(s, vec![dev(&[&["a", "b"], &["c"], &["d"]])]);
    assert_eq!(barrier_count(&s), 2);
}

#[test]
fn host_tasks_split_segments_and_independent_work_runs_before_them() {
    // %late depends on the host task; %free does not and goes before it, in a segment of
    // its own after %a's: the host task waits only for %a.
    let m = graph(
        "  %a = memset @x, 0, 4\n  %h = host_task \"cb\" after(%a)\n  %late = memset @x, 1, 4 after(%h)\n  %free = memset @x + 8, 0, 4\n",
    );
    assert_eq!(
        schedule(only(&m)).expect("schedules"),
        vec![dev(&[&["a"]]), dev(&[&["free"]]), host("h"), dev(&[&["late"]])]
    );
}

#[test]
fn work_a_host_task_does_not_need_is_split_off_and_restaged() {
    // A halo exchange: %edge feeds the send, %inner (after %prev, as %edge is) does not.
    // Without the split one segment would hold [prev], [edge, inner], and the send would
    // wait for %inner; split, the rest is one stage of its own, submitted before the send.
    let m = graph(concat!(
        "  %prev = memset @x, 0, 4\n",
        "  %edge = memset @x + 4, 0, 4 after(%prev)\n",
        "  %inner = memset @x + 8, 0, 4 after(%prev)\n",
        "  %deep = memset @x + 12, 0, 4 after(%inner)\n",
        "  %loose = memset @x + 16, 0, 4\n",
        "  %send = host_task \"send\" after(%edge)\n",
        "  %next = memset @x + 4, 1, 4 after(%send, %deep)\n",
    ));
    let s = schedule(only(&m)).expect("schedules");
    assert_eq!(
        s,
        vec![dev(&[&["prev"], &["edge"]]), dev(&[&["inner", "loose"], &["deep"]]), host("send"), dev(&[&["next"]])]
    );
    // A group whose device work all leads to its host tasks stays one segment.
    let m = graph("  %a = memset @x, 0, 4\n  %b = memset @x + 4, 0, 4 after(%a)\n  %h = host_task \"cb\" after(%b)\n");
    assert_eq!(schedule(only(&m)).expect("schedules"), vec![dev(&[&["a"], &["b"]]), host("h")]);
}

#[test]
fn ordering_only_nodes_are_not_scheduled_but_carry_order() {
    // a -> empty -> barrier -> c: two stages; the empty node and the barrier are not listed.
    let m = graph(
        "  %a = memset @x, 0, 4\n  %e = empty after(%a)\n  %bar = barrier after(%e)\n  %c = memset @x, 1, 4 after(%bar)\n",
    );
    assert_eq!(schedule(only(&m)).expect("schedules"), vec![dev(&[&["a"], &["c"]])]);
}

#[test]
fn independent_host_tasks_are_one_segment_each_in_creation_order() {
    let m = graph("  %h2 = host_task \"two\"\n  %h1 = host_task \"one\"\n  %a = memset @x, 0, 4 after(%h1, %h2)\n");
    assert_eq!(schedule(only(&m)).expect("schedules"), vec![host("h2"), host("h1"), dev(&[&["a"]])]);
}

#[test]
fn an_empty_graph_has_no_segments() {
    let m = graph("  %e = empty\n");
    assert_eq!(schedule(only(&m)).expect("schedules"), Vec::<Segment>::new());
}

/// A random DAG: node `i` is a device node, a host task or an empty node, with edges from
/// earlier nodes.
fn random_body(kinds: &[u8], edges: &[(usize, usize)]) -> String {
    let mut preds: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(a, b) in edges {
        let (lo, hi) = (a.min(b), a.max(b));
        if lo != hi && hi < kinds.len() {
            preds.entry(hi).or_default().push(lo);
        }
    }
    let mut body = String::new();
    for (i, k) in kinds.iter().enumerate() {
        let cmd = match k % 4 {
            0 | 1 => format!("memset @x + {}, 0, 4", (i % 16) * 4),
            2 => "host_task \"cb\"".to_string(),
            _ => "empty".to_string(),
        };
        let mut ps = preds.remove(&i).unwrap_or_default();
        ps.sort_unstable();
        ps.dedup();
        let after = if ps.is_empty() {
            String::new()
        } else {
            format!(" after({})", ps.iter().map(|p| format!("%n{p}")).collect::<Vec<_>>().join(", "))
        };
        body.push_str(&format!("  %n{i} = {cmd}{after}\n"));
    }
    body
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn schedules_of_random_dags_keep_order_and_are_minimal(
        kinds in proptest::collection::vec(0u8..4, 1..30),
        edges in proptest::collection::vec((0usize..30, 0usize..30), 0..60),
    ) {
        let m = graph(&random_body(&kinds, &edges));
        let g = only(&m);
        let segments = schedule(g).expect("a DAG schedules");
        prop_assert_eq!(&schedule(g).expect("again"), &segments, "deterministic");

        // Position of every scheduled node: (segment, stage).
        let mut pos: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for (si, seg) in segments.iter().enumerate() {
            match seg {
                Segment::Host { node } => prop_assert!(pos.insert(node.clone(), (si, 0)).is_none()),
                Segment::Device { stages } => {
                    prop_assert!(!stages.is_empty());
                    for (st, nodes) in stages.iter().enumerate() {
                        prop_assert!(!nodes.is_empty());
                        for n in nodes {
                            prop_assert!(pos.insert(n.clone(), (si, st)).is_none(), "{} twice", n);
                        }
                    }
                }
            }
        }
        let handles: Vec<_> = g.nodes.iter().map(|(h, _)| h).collect();
        for &h in &handles {
            let scheduled = pos.contains_key(&g.nodes[h].name);
            prop_assert_eq!(scheduled, role(g, h) != Role::OrderingOnly, "%{}", &g.nodes[h].name);
        }
        // Reachability (node indices are a topological order here: edges go forward).
        let n = handles.len();
        let mut reach = vec![vec![false; n]; n];
        for i in (0..n).rev() {
            for j in g.successors(handles[i]) {
                let j = j.index();
                reach[i][j] = true;
                let below = reach[j].clone();
                for (r, b) in reach[i].iter_mut().zip(below) {
                    *r |= b;
                }
            }
        }
        for i in 0..n {
            for j in 0..n {
                let (Some(&pi), Some(&pj)) = (pos.get(&g.nodes[handles[i]].name), pos.get(&g.nodes[handles[j]].name)) else {
                    continue;
                };
                if reach[i][j] {
                    prop_assert!(pi < pj, "%n{} -> %n{} but at {:?} and {:?}", i, j, pi, pj);
                }
                if pi == pj && i != j {
                    prop_assert!(!reach[i][j] && !reach[j][i], "stage mates %n{} %n{} are ordered", i, j);
                }
            }
        }
        // Minimal stages: a device segment's stage count is its longest chain of device nodes.
        for (si, seg) in segments.iter().enumerate() {
            let Segment::Device { stages } = seg else { continue };
            let members: Vec<usize> = (0..n).filter(|&i| pos.get(&g.nodes[handles[i]].name).is_some_and(|p| p.0 == si)).collect();
            let mut chain = vec![1usize; n];
            for &j in &members {
                for &i in &members {
                    if i < j && reach[i][j] {
                        chain[j] = chain[j].max(chain[i] + 1);
                    }
                }
            }
            let longest = members.iter().map(|&i| chain[i]).max().unwrap_or(0);
            prop_assert_eq!(stages.len(), longest);
        }
    }
}
