//! After the scheduler has chosen devices: every node touches only memory of its device, and
//! data crosses devices only through transfers (`memcpy` nodes between two devices), each
//! ordered after the node that wrote what it moves and before every node that reads it.
//!
//! Each memory object keeps its home; a node on another device works on a *mirror*, a `usm`
//! object of the same type and size with `home(d)` (module memory rather than a graph
//! allocation, so that nodes created earlier may name it). Walking the nodes in a
//! topological order, the pass knows which devices hold the current contents of each
//! memory: a node on device `d` that reads or writes memory `d` does not hold gets a transfer
//! into `d` first (a write counts as a read unless the node surely overwrites every byte
//! without reading: `Touch::covers`), and a write leaves only `d` holding it. At the end, memory whose contents are not
//! on its home is transferred home. A graph allocation lives on the device of its first
//! user, and its frees wait for the transfers that read it.
//!
//! The verifier's data-race rule is what makes the walk sound: two nodes touching the same
//! memory, one writing, are ordered, so the last writer seen in topological order is the one
//! every later reader depends on.

use super::cost::{self, Touch};
use cmdgraph_ir::graph::{Edge, EdgeKind, Graph, MemRef, Node, NodeKind, Pointer, Stmt};
use cmdgraph_ir::module::{Home, Item, MemoryKind, MemoryObject, UsmKind};
use cmdgraph_ir::{Handle, Module, Span};
use std::collections::{BTreeMap, BTreeSet};

/// What the rewrite added to one graph.
#[derive(Default)]
pub struct Added {
    /// Transfer nodes, with (memory, from, to, bytes).
    pub transfers: Vec<(String, String, u32, u32, u64)>,
    /// Mirror memory objects.
    pub mirrors: Vec<String>,
}

/// The state of one memory reference during the walk.
#[derive(Default)]
struct State {
    /// Devices whose copy holds the current contents.
    valid: BTreeSet<u32>,
    /// The node that wrote the current contents.
    writer: Option<Handle<Node>>,
    /// The transfer that brought the current contents to a device.
    filled: BTreeMap<u32, Handle<Node>>,
}

struct Rewrite<'a> {
    module: &'a mut Module,
    graph: Handle<Graph>,
    /// The device each memory reference lives on (`None`: replicated).
    homes: BTreeMap<MemRef, Option<u32>>,
    mirrors: BTreeMap<(MemRef, u32), Handle<MemoryObject>>,
    states: BTreeMap<MemRef, State>,
    edges: BTreeSet<(usize, usize)>,
    /// Transfers reading or writing a graph allocation, by the allocating node.
    alloc_users: BTreeMap<Handle<Node>, Vec<Handle<Node>>>,
    added: Added,
}

/// Rewrites graph `gh` of `module` for the devices in `device` (by node index; `None` for
/// nodes that run on none), with `touches` by node index and `order` a topological order.
/// Memory in `floating` (no home written, used by this graph only) moves to the device of
/// its first user.
pub fn rewrite(
    module: &mut Module,
    gh: Handle<Graph>,
    mut device: Vec<Option<u32>>,
    touches: &[Vec<Touch>],
    order: &[u32],
    floating: &BTreeSet<usize>,
) -> Added {
    let graph = &module.graphs[gh];
    let home_device = graph.device;
    // Allocations live on the device of their first user in the walk.
    for &v in order {
        let Some(d) = device[v as usize] else { continue };
        for t in &touches[v as usize] {
            if let MemRef::Alloc(m) = t.mem {
                if device[m.index()].is_none() {
                    device[m.index()] = Some(d);
                }
            }
        }
    }
    for (h, n) in graph.nodes.iter() {
        match &n.kind {
            NodeKind::AsyncMalloc { .. } if device[h.index()].is_none() => device[h.index()] = Some(home_device),
            NodeKind::AsyncFree { alloc } => device[h.index()] = device[alloc.index()],
            _ => {}
        }
    }
    // Floating memory lives where it is first used.
    let mut moved: BTreeMap<usize, u32> = BTreeMap::new();
    for &v in order {
        let Some(d) = device[v as usize] else { continue };
        for t in &touches[v as usize] {
            if let MemRef::Memory(h) = t.mem {
                if floating.contains(&h.index()) {
                    moved.entry(h.index()).or_insert(d);
                }
            }
        }
    }
    let mut homes = BTreeMap::new();
    for list in touches {
        for t in list {
            let home = match t.mem {
                MemRef::Memory(h) => match moved.get(&h.index()) {
                    Some(&d) => Some(d),
                    None => module.memories.try_get(h).and_then(|m| m.home.device_in(home_device)),
                },
                MemRef::Alloc(m) => device[m.index()],
            };
            homes.insert(t.mem, home);
        }
    }
    for (&i, &d) in &moved {
        if d != home_device {
            if let Some(m) = Handle::from_usize(i).and_then(|h| module.memories.try_get_mut(h)) {
                m.home = Home::Device(d);
            }
        }
    }
    let mut rw = Rewrite {
        module,
        graph: gh,
        homes,
        mirrors: BTreeMap::new(),
        states: BTreeMap::new(),
        edges: BTreeSet::new(),
        alloc_users: BTreeMap::new(),
        added: Added::default(),
    };
    for &v in order {
        let (Some(h), Some(d)) = (Handle::from_usize(v as usize), device[v as usize]) else { continue };
        rw.node(h, d, &touches[v as usize]);
    }
    rw.home_again();
    rw.free_edges();
    // Devices: written where they differ from the graph's.
    let graph = &mut rw.module.graphs[gh];
    for (i, d) in device.iter().enumerate() {
        if let (Some(d), Some(h)) = (d, Handle::<Node>::from_usize(i)) {
            if let Some(n) = graph.nodes.try_get_mut(h) {
                // A host task or native command runs beside its memory and names no device.
                let on_host = matches!(n.kind, NodeKind::HostTask(_) | NodeKind::Native(_));
                if n.device.is_none() && *d != home_device && !on_host {
                    n.device = Some(*d);
                }
            }
        }
    }
    let edges = std::mem::take(&mut rw.edges);
    for (from, to) in edges {
        if let (Some(a), Some(b)) = (Handle::from_usize(from), Handle::from_usize(to)) {
            add_edge_once(&mut rw.module.graphs[gh], a, b);
        }
    }
    rw.added
}

/// A `make_edge` edge, unless the graph has one between the two already.
fn add_edge_once(graph: &mut Graph, from: Handle<Node>, to: Handle<Node>) {
    if graph.edges.iter().any(|(_, e)| e.from == from && e.to == to) {
        return;
    }
    let edge = graph.edges.append(Edge { from, to, kind: EdgeKind::MakeEdge }, Span::UNDEFINED);
    graph.body.push(Stmt::MakeEdge(edge));
}

impl Rewrite<'_> {
    fn graph(&self) -> &Graph {
        &self.module.graphs[self.graph]
    }

    /// Node `h` on device `d`, touching `touches`.
    fn node(&mut self, h: Handle<Node>, d: u32, touches: &[Touch]) {
        let mut renames: Vec<(MemRef, MemRef)> = Vec::new();
        for t in touches {
            let Some(home) = self.homes.get(&t.mem).copied().flatten() else { continue };
            let st = self.states.entry(t.mem).or_insert_with(|| State { valid: [home].into(), ..State::default() });
            // A node that overwrites all of it without reading needs no earlier contents.
            if !st.valid.contains(&d) && (t.reads || !t.covers) {
                self.transfer_to(t.mem, d);
            }
            let st = self.states.entry(t.mem).or_default();
            if let Some(&f) = st.filled.get(&d) {
                self.edges.insert((f.index(), h.index()));
            }
            if d != home {
                let mirror = self.mirror(t.mem, d);
                renames.push((t.mem, MemRef::Memory(mirror)));
            }
        }
        for t in touches.iter().filter(|t| t.writes) {
            if self.homes.get(&t.mem).copied().flatten().is_none() {
                continue;
            }
            let st = self.states.entry(t.mem).or_default();
            st.valid = [d].into();
            st.writer = Some(h);
            st.filled.clear();
        }
        if !renames.is_empty() {
            let graph = &mut self.module.graphs[self.graph];
            if let Some(n) = graph.nodes.try_get_mut(h) {
                rename(&mut n.kind, &renames);
            }
        }
    }

    /// Brings the current contents of `mem` to device `d` with a transfer node.
    fn transfer_to(&mut self, mem: MemRef, d: u32) {
        let home = self.homes.get(&mem).copied().flatten().unwrap_or(0);
        let st = self.states.entry(mem).or_default();
        // From home when it holds them, else from the lowest device that does.
        let from = if st.valid.contains(&home) { home } else { st.valid.iter().next().copied().unwrap_or(home) };
        let (writer, source_fill) = (st.writer, st.filled.get(&from).copied());
        let bytes = cost::size_of(self.module, self.graph(), mem);
        let src = self.copy_on(mem, from, home);
        let dst = self.copy_on(mem, d, home);
        let label = self.label(mem);
        let name = self.fresh_node_name(&format!("{label}.to{d}"));
        let kind =
            NodeKind::Memcpy { dst: Pointer { base: dst, offset: 0 }, src: Pointer { base: src, offset: 0 }, bytes };
        let graph_device = self.graph().device;
        let graph = &mut self.module.graphs[self.graph];
        let device = (d != graph_device).then_some(d);
        let t = graph.nodes.append(
            Node { name: name.clone(), kind, queue: None, device, comments: Default::default() },
            Span::UNDEFINED,
        );
        graph.body.push(Stmt::Node(t));
        for before in [writer, source_fill].into_iter().flatten() {
            self.edges.insert((before.index(), t.index()));
        }
        if let MemRef::Alloc(m) = mem {
            // After the allocation exists, and before it is freed.
            self.edges.insert((m.index(), t.index()));
            self.alloc_users.entry(m).or_default().push(t);
        }
        self.added.transfers.push((name, label, from, d, bytes));
        let st = self.states.entry(mem).or_default();
        st.valid.insert(d);
        st.filled.insert(d, t);
    }

    /// Memory whose current contents are not on its home goes home at the end.
    fn home_again(&mut self) {
        let pending: Vec<MemRef> = self
            .states
            .iter()
            .filter(|(m, st)| {
                matches!(m, MemRef::Memory(_))
                    && self.homes.get(m).copied().flatten().is_some_and(|home| !st.valid.contains(&home))
            })
            .map(|(m, _)| *m)
            .collect();
        for mem in pending {
            let home = self.homes.get(&mem).copied().flatten().unwrap_or(0);
            self.transfer_to(mem, home);
        }
    }

    /// A graph allocation's frees wait for the transfers that read or wrote it.
    fn free_edges(&mut self) {
        let frees: Vec<(Handle<Node>, Handle<Node>)> = self
            .graph()
            .nodes
            .iter()
            .filter_map(|(h, n)| match n.kind {
                NodeKind::AsyncFree { alloc } => Some((alloc, h)),
                _ => None,
            })
            .collect();
        for (alloc, free) in frees {
            for &t in self.alloc_users.get(&alloc).into_iter().flatten() {
                self.edges.insert((t.index(), free.index()));
            }
        }
    }

    /// The reference to `mem`'s copy on device `d`: itself on its home, else its mirror.
    fn copy_on(&mut self, mem: MemRef, d: u32, home: u32) -> MemRef {
        if d == home {
            mem
        } else {
            MemRef::Memory(self.mirror(mem, d))
        }
    }

    /// `mem`'s mirror on device `d`, made on first use.
    fn mirror(&mut self, mem: MemRef, d: u32) -> Handle<MemoryObject> {
        if let Some(&m) = self.mirrors.get(&(mem, d)) {
            return m;
        }
        let (elem, count) = match mem {
            MemRef::Memory(h) => {
                let m = &self.module.memories[h];
                (m.elem, m.count)
            }
            MemRef::Alloc(a) => match &self.graph().nodes[a].kind {
                NodeKind::AsyncMalloc { elem, count, .. } => (*elem, *count),
                _ => (
                    cmdgraph_ir::types::Type::scalar(cmdgraph_ir::types::ScalarType::U8),
                    cost::size_of(self.module, self.graph(), mem),
                ),
            },
        };
        let name = self.fresh_memory_name(&format!("{}.on{d}", self.label(mem).trim_start_matches(['@', '%'])));
        let object = MemoryObject {
            name: name.clone(),
            elem,
            count,
            kind: MemoryKind::Usm(UsmKind::Device),
            home: Home::Device(d),
            comments: Default::default(),
        };
        let h = self.module.memories.append(object, Span::UNDEFINED);
        let at = self.module.items.iter().rposition(|i| matches!(i, Item::Memory(_))).map_or(0, |i| i + 1);
        self.module.items.insert(at, Item::Memory(h));
        self.mirrors.insert((mem, d), h);
        self.added.mirrors.push(name);
        h
    }

    /// `@name`, or `%graph.node` for a graph allocation.
    fn label(&self, mem: MemRef) -> String {
        match mem {
            MemRef::Memory(h) => format!("@{}", self.module.memories[h].name),
            MemRef::Alloc(a) => format!("%{}.{}", self.graph().name, self.graph().nodes[a].name),
        }
    }

    fn fresh_memory_name(&self, base: &str) -> String {
        let taken = |s: &str| {
            self.module.memory_by_name(s).is_some()
                || self.module.graph_by_name(s).is_some()
                || self.module.kernels.iter().any(|(_, k)| k.name == s)
        };
        fresh(base, taken)
    }

    fn fresh_node_name(&self, base: &str) -> String {
        let base = base.trim_start_matches(['@', '%']);
        fresh(base, |s| self.graph().node_by_name(s).is_some())
    }
}

fn fresh(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (2u64..).map(|i| format!("{base}.{i}")).find(|s| !taken(s)).unwrap_or_else(|| base.to_string())
}

/// Renames memory references of a command (pointer arguments, copy and fill ends).
fn rename(kind: &mut NodeKind, renames: &[(MemRef, MemRef)]) {
    cmdgraph_ir::edit::memrefs_mut(kind, &mut |r| {
        if let Some((_, to)) = renames.iter().find(|(from, _)| from == r) {
            *r = *to;
        }
    });
}
