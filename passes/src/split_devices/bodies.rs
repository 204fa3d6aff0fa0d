//! Bodies of conditional nodes for a stage graph. A conditional node of device 1 in a graph
//! of device 0 has bodies of the graph's device whose nodes name device 1 (E0293); its stage
//! graph is a graph of device 1, and a body must have its parent's device (E0267). So each
//! such body gets a copy for the device, `@<body>.d1`, of device 1 with the nodes' `device`
//! dropped, the bodies it runs copied the same way.

use cmdgraph_ir::graph::{Graph, NodeKind};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Handle, Module};
use std::collections::BTreeMap;

/// Body graphs by (original, device): the graph a stage graph of that device runs instead.
pub type BodyMap = BTreeMap<(Handle<Graph>, u32), Handle<Graph>>;

/// The bodies the conditional nodes `nodes` (each with the device it runs on) run, copied
/// for their devices where they are of another; counted in `copies`.
pub fn for_devices(module: &mut Module, nodes: &[(Vec<Handle<Graph>>, u32)], copies: &mut u64) -> BodyMap {
    let mut map = BodyMap::new();
    for (bodies, d) in nodes {
        for &b in bodies {
            copy(module, b, *d, &mut map, copies);
        }
    }
    map
}

/// The graph device `d` runs for body `b`: `b` itself when it is of `d`, else its copy.
fn copy(module: &mut Module, b: Handle<Graph>, d: u32, map: &mut BodyMap, copies: &mut u64) -> Handle<Graph> {
    if module.graphs.try_get(b).is_none_or(|g| g.device == d) {
        return b;
    }
    if let Some(&c) = map.get(&(b, d)) {
        return c;
    }
    let mut g = module.graphs[b].clone();
    g.name = super::unused_name(module, &format!("{}.d{d}", g.name));
    g.device = d;
    let span = module.graphs.span(b);
    let h = module.graphs.append(g, span);
    map.insert((b, d), h);
    *copies += 1;
    let at = module.items.iter().position(|i| *i == Item::Graph(b)).map_or(module.items.len(), |i| i + 1);
    module.items.insert(at, Item::Graph(h));
    // The nodes run on `d` (E0293 held for the original); what they run is copied too.
    let nodes: Vec<_> = module.graphs[h].nodes.handles().collect();
    for n in nodes {
        module.graphs[h].nodes[n].device = None;
        let inner: Vec<Handle<Graph>> = match &module.graphs[h].nodes[n].kind {
            NodeKind::Subgraph { graph } => vec![*graph],
            NodeKind::Conditional { bodies, .. } => bodies.clone(),
            _ => continue,
        };
        let copied: Vec<Handle<Graph>> = inner.into_iter().map(|c| copy(module, c, d, map, copies)).collect();
        match &mut module.graphs[h].nodes[n].kind {
            NodeKind::Subgraph { graph } => *graph = copied[0],
            NodeKind::Conditional { bodies, .. } => *bodies = copied,
            _ => {}
        }
    }
    h
}
