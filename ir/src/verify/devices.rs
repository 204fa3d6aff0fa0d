//! Where nodes run and memory lives in a multi-device graph (docs/multi-device.md): a node
//! touches only memory of its own device or replicated memory (E0291), replicated memory is
//! only read (E0292), `device(N)` is written only on nodes that run on a device (E0290), and a
//! conditional node's bodies run on its device (E0293). A copy whose two ends live on two
//! devices is a transfer; its node runs on one of them.
//!
//! A graph whose nodes all run on its own device and whose memory has no `home` passes every
//! rule, so single-device modules are unaffected.

use super::error::VerifyError;
use crate::arena::Handle;
use crate::graph::{Arg, ArgValue, Graph, MemRef, Node, NodeKind, Pointer, Site};
use crate::kernel::ParamType;
use crate::module::{MemoryKind, Module};
use crate::span::Span;
use crate::types::Access;
use std::collections::BTreeSet;

/// Checks every graph of `m`.
pub(super) fn check(m: &Module, errors: &mut Vec<VerifyError>) {
    for (_, g) in m.graphs.iter() {
        let mut cx = Cx { m, g, errors };
        for (h, n) in g.nodes.iter() {
            cx.node(h, n);
        }
    }
}

struct Cx<'a> {
    m: &'a Module,
    g: &'a Graph,
    errors: &'a mut Vec<VerifyError>,
}

/// Where a memory reference lives.
enum Place {
    /// On this device.
    On(u32),
    /// A copy on every device (`replicated`).
    Everywhere,
    /// A `device_global`: an instance per device, which only kernels reach (not through
    /// arguments); other rules report other uses.
    PerDevice,
    /// `home(host)`: host memory every device reaches, read and written.
    Host,
}

impl Cx<'_> {
    fn node(&mut self, h: Handle<Node>, n: &Node) {
        let span = self.g.nodes.span(h);
        let device = self.g.node_device(h);
        if n.device.is_some()
            && matches!(
                n.kind,
                NodeKind::Empty
                    | NodeKind::Barrier { .. }
                    | NodeKind::Subgraph { .. }
                    | NodeKind::HostTask(_)
                    | NodeKind::Native(_)
                    | NodeKind::Comm(_)
            )
        {
            self.errors.push(VerifyError::DeviceOnHostNode {
                node: format!("%{}", n.name),
                kind: n.kind.node_type().name(),
                span,
            });
        }
        match &n.kind {
            NodeKind::Kernel(_) | NodeKind::Dynamic { .. } => {
                for (alt, cmd) in self.g.kernel_commands(h) {
                    let params = self.m.kernels.try_get(cmd.kernel).map(|k| k.params.as_slice()).unwrap_or(&[]);
                    for (i, a) in cmd.args.iter().enumerate() {
                        let value = match a {
                            Arg::Value(v) => Some(v),
                            Arg::Dyn(p) => self.g.dyn_params.try_get(*p).map(|p| &p.value),
                        };
                        let (base, writes) = match value {
                            Some(ArgValue::Pointer(p)) => {
                                let writable = matches!(
                                    params.get(i).map(|p| p.ty),
                                    Some(ParamType::Buffer { access, .. }) if access != Access::Read
                                );
                                (p.base, writable)
                            }
                            Some(ArgValue::Accessor(acc)) => (acc.buffer, acc.mode != Access::Read),
                            _ => continue,
                        };
                        let at = match alt {
                            None => self.g.spans.get(&Site::NodeArg(h, i as u32)),
                            Some(_) => span,
                        };
                        let at = if at.is_defined() { at } else { span };
                        self.uses(n, device, base, writes, at, "an argument");
                    }
                }
            }
            NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => {
                self.uses(n, device, dst.base, true, span, "the destination");
            }
            NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => {
                self.uses(n, device, ptr.base, false, span, "the range");
            }
            NodeKind::Memcpy { dst, src, .. } => self.copy(n, device, dst, src, span),
            NodeKind::HostTask(t) | NodeKind::Native(t) => {
                for a in &t.access {
                    if a.mode != Access::Read && matches!(self.place(a.mem), Place::Everywhere) {
                        self.replicated_write(n, a.mem, span);
                    }
                }
            }
            NodeKind::Conditional { cond, bodies, .. } => {
                self.uses(n, device, cond.base, false, span, "the condition");
                let mut seen = BTreeSet::new();
                for &b in bodies {
                    self.body(n, device, b, &mut seen, span);
                }
            }
            _ => {}
        }
    }

    /// A `memcpy`: each end on the node's device, or one of them on another (a transfer).
    fn copy(&mut self, n: &Node, device: u32, dst: &Pointer, src: &Pointer, span: Span) {
        if matches!(self.place(dst.base), Place::Everywhere) {
            self.replicated_write(n, dst.base, span);
            return;
        }
        let on = |p: &Place| match p {
            Place::On(d) => Some(*d),
            _ => None,
        };
        let (s, t) = (self.place(src.base), self.place(dst.base));
        let here = |p: &Place| match p {
            Place::On(d) => *d == device,
            Place::Everywhere | Place::PerDevice | Place::Host => true,
        };
        if here(&s) || here(&t) {
            return;
        }
        let far = on(&t).or(on(&s)).unwrap_or(device);
        self.errors.push(VerifyError::MemoryOnOtherDevice {
            node: format!("%{}", n.name),
            device,
            what: "both ends of the copy",
            memory: format!("{} and {}", self.name(src.base), self.name(dst.base)),
            home: far,
            help: format!(
                "a copy runs on the device of one of its ends: write `device({far})` on it (a copy between two devices is a transfer)"
            ),
            span,
        });
    }

    /// Node `n` on `device` touches `r` (writing when `writes`) at `at`.
    fn uses(&mut self, n: &Node, device: u32, r: MemRef, writes: bool, at: Span, what: &'static str) {
        match self.place(r) {
            Place::On(home) if home != device => {
                let name = self.name(r);
                self.errors.push(VerifyError::MemoryOnOtherDevice {
                    node: format!("%{}", n.name),
                    device,
                    what,
                    memory: name.clone(),
                    home,
                    help: format!(
                        "copy what it needs to device {device} first (a `memcpy` between the two devices is a transfer), run the node with `device({home})`, or declare {name} `replicated` if nodes only read it"
                    ),
                    span: at,
                });
            }
            Place::Everywhere if writes => self.replicated_write(n, r, at),
            _ => {}
        }
    }

    fn replicated_write(&mut self, n: &Node, r: MemRef, span: Span) {
        self.errors.push(VerifyError::ReplicatedWrite { node: format!("%{}", n.name), memory: self.name(r), span });
    }

    /// Every node of body graph `b` (and of what it runs) must run on `device`.
    fn body(&mut self, n: &Node, device: u32, b: Handle<Graph>, seen: &mut BTreeSet<Handle<Graph>>, span: Span) {
        if !seen.insert(b) {
            return;
        }
        let Some(body) = self.m.graphs.try_get(b) else { return };
        for (h, inner) in body.nodes.iter() {
            let runs_on_device = !matches!(
                inner.kind,
                NodeKind::Empty
                    | NodeKind::Barrier { .. }
                    | NodeKind::HostTask(_)
                    | NodeKind::Native(_)
                    | NodeKind::Comm(_)
            );
            let d = body.node_device(h);
            if runs_on_device && d != device {
                self.errors.push(VerifyError::BodyOnOtherDevice {
                    node: format!("%{}", n.name),
                    device,
                    body: format!("@{}", body.name),
                    inner: format!("%{}", inner.name),
                    other: d,
                    span,
                });
                return;
            }
            match &inner.kind {
                NodeKind::Subgraph { graph } => self.body(n, device, *graph, seen, span),
                NodeKind::Conditional { bodies, .. } => {
                    for &c in bodies {
                        self.body(n, device, c, seen, span);
                    }
                }
                _ => {}
            }
        }
    }

    fn place(&self, r: MemRef) -> Place {
        let global = |h| self.m.memories.try_get(h).is_some_and(|m| matches!(m.kind, MemoryKind::DeviceGlobal(_)));
        let host = |h| self.m.memories.try_get(h).is_some_and(|m| m.home == crate::module::Home::Host);
        match crate::placement::memory_device(self.m, self.g, r) {
            Some(d) => Place::On(d),
            None if matches!(r, MemRef::Memory(h) if host(h)) => Place::Host,
            None if matches!(r, MemRef::Memory(h) if global(h)) => Place::PerDevice,
            None => Place::Everywhere,
        }
    }

    fn name(&self, r: MemRef) -> String {
        match r {
            MemRef::Memory(h) => self
                .m
                .memories
                .try_get(h)
                .map_or_else(|| format!("@<memory {}>", h.index()), |m| format!("@{}", m.name)),
            MemRef::Alloc(n) => {
                self.g.nodes.try_get(n).map_or_else(|| format!("%<node {}>", n.index()), |x| format!("%{}", x.name))
            }
        }
    }
}
