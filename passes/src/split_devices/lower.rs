//! Transfers as device commands. A transfer `%t = memcpy @b, @a, N` from device 0 to device
//! 1 becomes two copies through host memory every device reaches (`home(host)`, imported
//! into each device by the runtime): `%t.out = memcpy @g.t.via, @a, N` on device 0 and
//! `%t.in = memcpy @b, @g.t.via, N` on device 1, after it. Neither is a transfer any more,
//! so the stages put the first with its device's work and the second in a later stage of
//! the other device: the devices move the data themselves, and the host only orders the
//! stages.

use super::unused_name;
use cmdgraph_ir::graph::{Edge, EdgeKind, Graph, MemRef, Node, NodeKind, Pointer, Stmt};
use cmdgraph_ir::module::{Home, Item, MemoryKind, MemoryObject, UsmKind};
use cmdgraph_ir::placement::transfer;
use cmdgraph_ir::types::Type;
use cmdgraph_ir::{Handle, Module, Span};

/// `graph` (of `module`) with every transfer made two copies through a `home(host)` memory
/// object added to `module` (its bytes rounded up to whole `u32`s); counted in `lowered`.
pub fn transfers(module: &mut Module, graph: &Graph, lowered: &mut u64) -> Graph {
    let mut w = graph.clone();
    let found: Vec<Handle<Node>> = graph.nodes.handles().filter(|&h| transfer(module, graph, h).is_some()).collect();
    for t in found {
        let Some((from, to)) = transfer(module, graph, t) else { continue };
        let NodeKind::Memcpy { dst, src, bytes } = graph.nodes[t].kind.clone() else { continue };
        let name = unused_name(module, &format!("{}.{}.via", graph.name, graph.nodes[t].name));
        let object = MemoryObject {
            name,
            elem: Type::U32,
            count: bytes.div_ceil(4).max(1),
            kind: MemoryKind::Usm(UsmKind::Host),
            home: Home::Host,
            comments: Default::default(),
        };
        let via = module.memories.append(object, Span::UNDEFINED);
        let at = module.items.iter().rposition(|i| matches!(i, Item::Memory(_))).map_or(0, |i| i + 1);
        module.items.insert(at, Item::Memory(via));
        let via = Pointer { base: MemRef::Memory(via), offset: 0 };
        let base = w.nodes[t].name.clone();
        let out = &mut w.nodes[t];
        out.name = format!("{base}.out");
        out.kind = NodeKind::Memcpy { dst: via, src, bytes };
        out.device = Some(from);
        let copy_in = Node {
            name: format!("{base}.in"),
            kind: NodeKind::Memcpy { dst, src: via, bytes },
            queue: None,
            device: Some(to),
            comments: Default::default(),
        };
        let span = graph.nodes.span(t);
        let t_in = w.nodes.append(copy_in, span);
        // Everything after the transfer comes after the copy in.
        for (_, e) in w.edges.iter_mut() {
            if e.from == t {
                e.from = t_in;
            }
        }
        w.edges.append(Edge { from: t, to: t_in, kind: EdgeKind::DependsOn }, Span::UNDEFINED);
        w.body.push(Stmt::Node(t_in));
        *lowered += 1;
    }
    w
}
