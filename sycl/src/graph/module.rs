//! Writing a whole IR module for a graph: the context's kernels and memory objects, the
//! executable graphs used as sub-graphs (each embedded as a graph of the module), then
//! the graph itself.
//!
//! A sub-graph node of a graph under construction refers to its child by slot (the
//! index in `GraphInner::children`); assembly maps slots to module graph handles.

use crate::platform::ContextInner;
use cmdgraph_ir::{Graph, Handle, Item, Module, NodeKind};
use std::collections::BTreeSet;

/// An executable graph embedded as a sub-graph: its snapshot module (whose last graph is
/// the child itself) and the identity of the executable graph and version it came from.
#[derive(Clone)]
pub(crate) struct Child {
    pub(crate) exec: std::rc::Weak<crate::exec::ExecShared>,
    pub(crate) version: u64,
    pub(crate) module: Module,
    pub(crate) root: Handle<Graph>,
}

/// Rewrites every sub-graph and conditional-body reference of `g` through `map`.
fn remap(g: &mut Graph, map: impl Fn(Handle<Graph>) -> Option<Handle<Graph>>) {
    for (_, node) in g.nodes.iter_mut() {
        let children: &mut [Handle<Graph>] = match &mut node.kind {
            NodeKind::Subgraph { graph } => std::slice::from_mut(graph),
            NodeKind::Conditional { bodies, .. } => bodies,
            _ => continue,
        };
        for graph in children {
            if let Some(new) = map(*graph) {
                *graph = new;
            }
        }
    }
}

/// A name for an embedded graph that no kernel, memory object or graph uses yet.
fn fresh_name(base: &str, taken: &mut BTreeSet<String>) -> String {
    if taken.insert(base.to_string()) {
        return base.to_string();
    }
    let mut n = 1usize;
    loop {
        let candidate = format!("{base}.{n}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

/// The module of `graph` (with sub-graph slots resolved against `children`) in context
/// `ctx`, and the handle of `graph` in it (always the last graph).
pub(crate) fn assemble(ctx: &ContextInner, children: &[Child], graph: &Graph) -> (Module, Handle<Graph>) {
    let mut module = Module {
        kernels: ctx.kernels.clone(),
        // Kernels from text are registered with their calls inlined (kernel.rs).
        functions: Default::default(),
        memories: ctx.memories.clone(),
        graphs: Default::default(),
        items: ctx.items.clone(),
        trailing_comments: Vec::new(),
    };
    let mut taken: BTreeSet<String> = module.kernels.iter().map(|(_, k)| k.name.clone()).collect();
    taken.extend(module.memories.iter().map(|(_, m)| m.name.clone()));
    taken.insert(graph.name.clone());

    let mut roots = Vec::with_capacity(children.len());
    for child in children {
        let offset = module.graphs.len();
        let mut root = None;
        for (h, g) in child.module.graphs.iter() {
            let mut g = g.clone();
            g.name = fresh_name(&g.name, &mut taken);
            remap(&mut g, |old| Handle::from_usize(old.index() + offset));
            let new = module.graphs.append(g, cmdgraph_ir::Span::UNDEFINED);
            module.items.push(Item::Graph(new));
            if h == child.root {
                root = Some(new);
            }
        }
        roots.push(root);
    }

    let mut g = graph.clone();
    remap(&mut g, |slot| roots.get(slot.index()).copied().flatten());
    let handle = module.graphs.append(g, cmdgraph_ir::Span::UNDEFINED);
    module.items.push(Item::Graph(handle));
    (module, handle)
}
