//! Sub-graph recursion and nesting over the whole module: a graph may not contain itself,
//! directly or through nested `subgraph` nodes or conditional nodes' bodies (the executable child must exist before the
//! parent), and nesting is bounded (every stage that expands sub-graphs, the interpreter
//! included, may recurse once per level).

use super::error::VerifyError;
use super::reach::Adjacency;
use crate::arena::Handle;
use crate::graph::{Graph, NodeKind};
use crate::module::Module;
use crate::span::Span;
use std::collections::BTreeMap;

/// Most levels of sub-graph nesting: a graph and the sub-graphs it contains, through any
/// number of `subgraph` nodes, span at most this many graphs (the outermost is level 1).
/// The same bound as `for`/`if` region nesting (docs/ir.md, Limits).
pub(super) const MAX_SUBGRAPH_LEVELS: usize = 256;

/// Checks recursion (E0265) and nesting depth (E0268).
pub(super) fn check(m: &Module, errors: &mut Vec<VerifyError>) {
    let n = m.graphs.len();
    // For each graph, its children with the first node that names each.
    let mut children: Vec<BTreeMap<usize, Span>> = vec![BTreeMap::new(); n];
    for (gh, g) in m.graphs.iter() {
        for (nh, node) in g.nodes.iter() {
            // A conditional node's bodies run as sub-graphs (docs/conditional.md).
            let kids: &[Handle<Graph>] = match &node.kind {
                NodeKind::Subgraph { graph } => std::slice::from_ref(graph),
                NodeKind::Conditional { bodies, .. } => bodies,
                _ => &[],
            };
            for graph in kids {
                if graph.index() < n {
                    children[gh.index()].entry(graph.index()).or_insert(g.nodes.span(nh));
                }
            }
        }
    }
    let name = |i: usize| {
        Handle::<Graph>::from_usize(i)
            .and_then(|h| m.graphs.try_get(h))
            .map_or_else(|| format!("@<graph {i}>"), |g| format!("@{}", g.name))
    };
    check_recursion(&children, &name, errors);
    check_depth(&children, &name, errors);
}

/// Reports each loop of the sub-graph relation once, at a `subgraph` node of the loop's
/// first graph (in module order).
fn check_recursion(children: &[BTreeMap<usize, Span>], name: &dyn Fn(usize) -> String, errors: &mut Vec<VerifyError>) {
    let pairs: Vec<(usize, usize)> =
        children.iter().enumerate().flat_map(|(p, c)| c.keys().map(move |&k| (p, k))).collect();
    let adj = Adjacency::new(children.len(), &pairs);
    for (parent, kids) in children.iter().enumerate() {
        for (&child, &span) in kids {
            let Some(path) = adj.path(child, parent) else { continue };
            if path.iter().any(|&i| i < parent) {
                continue;
            }
            let mut chain = vec![name(parent)];
            chain.extend(path.iter().map(|&i| name(i)));
            errors.push(VerifyError::SubgraphRecursion { chain, span });
        }
    }
}

/// Reports each chain of sub-graphs deeper than [`MAX_SUBGRAPH_LEVELS`] once, from each
/// graph that starts one (no graph containing it is deeper), at the `subgraph` node that
/// opens the first level past the limit. Edges that close a loop (E0265) are ignored.
fn check_depth(children: &[BTreeMap<usize, Span>], name: &dyn Fn(usize) -> String, errors: &mut Vec<VerifyError>) {
    let n = children.len();
    let kids: Vec<Vec<usize>> = children.iter().map(|c| c.keys().copied().collect()).collect();
    // levels[g]: graphs on the longest chain from g down, g included; next[g]: the child on it.
    let mut levels = vec![0usize; n];
    let mut next: Vec<Option<usize>> = vec![None; n];
    // 0: not visited, 1: on the stack, 2: done. Iterative post-order, so any depth is safe.
    let mut state = vec![0u8; n];
    for root in 0..n {
        if state[root] != 0 {
            continue;
        }
        state[root] = 1;
        let mut stack = vec![(root, 0usize)];
        while let Some((g, i)) = stack.last_mut() {
            let g = *g;
            if let Some(&c) = kids[g].get(*i) {
                *i += 1;
                if state[c] == 0 {
                    state[c] = 1;
                    stack.push((c, 0));
                }
                continue;
            }
            // Children on the stack close a loop: skip them.
            let deepest = kids[g].iter().filter(|&&c| state[c] == 2).max_by_key(|&&c| (levels[c], usize::MAX - c));
            levels[g] = 1 + deepest.map_or(0, |&c| levels[c]);
            next[g] = deepest.copied();
            state[g] = 2;
            stack.pop();
        }
    }
    let mut deepest_parent = vec![0usize; n];
    for (p, ks) in kids.iter().enumerate() {
        for &c in ks {
            deepest_parent[c] = deepest_parent[c].max(levels[p]);
        }
    }
    for top in 0..n {
        if levels[top] <= MAX_SUBGRAPH_LEVELS || deepest_parent[top] > levels[top] {
            continue;
        }
        let mut chain = vec![top];
        while let Some(c) = chain.last().and_then(|&g| next[g]) {
            chain.push(c);
        }
        let node = |level: usize| {
            let (Some(&p), Some(c)) = (chain.get(level), chain.get(level + 1)) else { return Span::UNDEFINED };
            children[p].get(c).copied().unwrap_or(Span::UNDEFINED)
        };
        errors.push(VerifyError::SubgraphNestingTooDeep {
            span: node(MAX_SUBGRAPH_LEVELS - 1),
            outer: node(0),
            chain: chain.into_iter().map(name).collect(),
        });
    }
}
