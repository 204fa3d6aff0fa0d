//! The memory effect of each recorded command (docs/executor.md, "Barriers"): which bytes of
//! which backing buffer it reads and writes. Copies and fills from their byte ranges;
//! kernels from their arguments and the footprint of their index expressions
//! (`cmdgraph_ir::footprint`, docs/footprint.md): an index interval gives exactly those
//! elements from the pointer, anything else the whole memory object the pointer is into.

use super::{Executable, KNode};
use crate::args::Target;
use crate::barriers::{Effect, Span, Work};
use crate::error::{ExecError, Result};
use crate::exec::Executor;
use cmdgraph_ir::footprint::{kernel_footprint, Extent, Place};
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::{ArgValue, Graph, Handle, MemRef, Node, NodeKind};
use std::borrow::Cow;

impl Executor {
    /// What node `h` does to memory when recorded, or `None` if it records no command.
    /// A `dynamic` node records every kernel alternative (inactive ones dispatch nothing),
    /// so its effect is theirs together: switching alternatives never moves a barrier.
    /// A kernel node without other alternatives lends its prepared effect (no copy: this
    /// runs for every node at finalize).
    pub(crate) fn node_effect<'e>(
        &self,
        exe: &'e Executable,
        graph: &Graph,
        h: Handle<Node>,
    ) -> Result<Option<Cow<'e, Effect>>> {
        let n = &graph.nodes[h];
        if let Some(k) = exe.kernels.get(&h.index()) {
            let not_prepared = || ExecError::Invalid(format!("%{}: not prepared", n.name));
            let mut spares = exe.spare.range((h.index(), 0)..=(h.index(), u32::MAX)).map(|(_, k)| k).peekable();
            if spares.peek().is_none() {
                return Ok(Some(Cow::Borrowed(k.effect.as_ref().ok_or_else(not_prepared)?)));
            }
            let mut all = Effect { work: Work::Compute, reads: Vec::new(), writes: Vec::new() };
            for k in std::iter::once(k).chain(spares) {
                let e = k.effect.as_ref().ok_or_else(not_prepared)?;
                all.reads.extend(e.reads.iter().cloned());
                all.writes.extend(e.writes.iter().cloned());
            }
            return Ok(Some(Cow::Owned(all)));
        }
        // A copy the copy kernel makes is compute work on the same byte ranges.
        let work = if self.kernel_copy(exe, graph, h)?.is_some() { Work::Compute } else { Work::Transfer };
        let transfer = |reads: Vec<Span>, writes: Vec<Span>| Ok(Some(Cow::Owned(Effect { work, reads, writes })));
        match &n.kind {
            NodeKind::Memcpy { dst, src, bytes } if *bytes > 0 => {
                let (d, s) = (exe.place(self, dst.base, dst.offset)?, exe.place(self, src.base, src.offset)?);
                let span = |p: crate::args::Place| Span {
                    target: p.target,
                    lo: p.offset,
                    hi: p.offset.saturating_add(*bytes),
                };
                transfer(vec![span(s)], vec![span(d)])
            }
            NodeKind::Memset { dst, bytes, .. } if *bytes > 0 => {
                let d = exe.place(self, dst.base, dst.offset)?;
                transfer(Vec::new(), vec![Span { target: d.target, lo: d.offset, hi: d.offset.saturating_add(*bytes) }])
            }
            NodeKind::Memfill { dst, .. } => {
                // The byte count as record_node computes it; a fill of nothing records nothing.
                let d = exe.place(self, dst.base, dst.offset)?;
                match super::copies::fill_pattern(n).1 {
                    0 => Ok(None),
                    total => transfer(
                        Vec::new(),
                        vec![Span { target: d.target, lo: d.offset, hi: d.offset.saturating_add(total) }],
                    ),
                }
            }
            NodeKind::Conditional { .. } => self.conditional_effect(exe, h).map(|e| Some(Cow::Owned(e))),
            NodeKind::Native(_) => {
                Ok(Some(Cow::Owned(Effect { work: Work::Native, reads: Vec::new(), writes: Vec::new() })))
            }
            _ => Ok(None),
        }
    }

    /// A conditional node's effect: it reads its condition word, and whatever its bodies
    /// (their executables, nested nodes included) read and write; ordered against everything,
    /// as a native command is, when a body holds one.
    fn conditional_effect(&self, exe: &Executable, h: Handle<Node>) -> Result<Effect> {
        let c = exe.cond.as_ref().and_then(|s| s.nodes.get(&h.index()));
        let c = c.ok_or_else(|| ExecError::Invalid("a conditional node without its resources".into()))?;
        let (target, offset) = c.cond_place.clone();
        let mut all = Effect {
            work: Work::Compute,
            reads: vec![Span { target, lo: offset, hi: offset + 4 }],
            writes: Vec::new(),
        };
        for &id in &c.bodies {
            let body = self.exec_ref(id)?;
            let graph = &self.loaded.module.graphs[body.graph];
            for seg in &body.sched {
                let crate::schedule::Seg::Device(stages) = seg else { continue };
                for &b in stages.iter().flatten() {
                    let Some(e) = self.node_effect(body, graph, b)? else { continue };
                    if e.work != Work::Compute {
                        return Ok(Effect { work: Work::Native, reads: Vec::new(), writes: Vec::new() });
                    }
                    all.reads.extend(e.reads.iter().cloned());
                    all.writes.extend(e.writes.iter().cloned());
                }
            }
        }
        Ok(all)
    }

    /// The effect of kernel resources `k` with the arguments they hold now.
    pub(crate) fn kernel_effect(&self, exe: &Executable, k: &KNode) -> Result<Effect> {
        let kernel = self
            .loaded
            .module
            .kernels
            .try_get(k.cmd.kernel)
            .ok_or_else(|| ExecError::Ir("bad kernel handle".into()))?;
        let args = exe.args_of(&k.cmd)?;
        let key = (k.cmd.kernel.index(), k.cmd.launch.clone());
        let cached = exe.footprints.borrow().get(&key).cloned();
        let fp = match cached {
            Some(fp) => fp,
            None => {
                let fp = std::sync::Arc::new(kernel_footprint(&self.loaded.module.functions, kernel, &k.cmd.launch));
                exe.footprints.borrow_mut().insert(key, fp.clone());
                fp
            }
        };
        let mut e = Effect { work: Work::Compute, reads: Vec::new(), writes: Vec::new() };
        for (place, access) in &fp.accesses {
            let span = match *place {
                Place::Param(i) => {
                    let (Some(param), Some(arg)) = (kernel.params.get(i as usize), args.get(i as usize)) else {
                        return Err(ExecError::Invalid(format!("@{}: footprint of a missing parameter", kernel.name)));
                    };
                    let ParamType::Buffer { elem, .. } = param.ty else { continue };
                    self.arg_span(exe, arg, elem.size(), access.extent)?
                }
                Place::Global(h) => {
                    let obj = self
                        .loaded
                        .module
                        .memories
                        .try_get(h)
                        .ok_or_else(|| ExecError::Ir("bad memory handle".into()))?;
                    Span { target: Target::Global(obj.name.clone()), lo: 0, hi: u64::MAX }
                }
            };
            if access.read {
                e.reads.push(span.clone());
            }
            if access.write {
                e.writes.push(span);
            }
        }
        Ok(e)
    }

    /// The bytes a `buf` argument's accesses may reach: `extent` elements of `elem` bytes
    /// from where it points, or the whole memory object it points into.
    fn arg_span(&self, exe: &Executable, arg: &ArgValue, elem: u64, extent: Extent) -> Result<Span> {
        let (base, offset, range) = match arg {
            ArgValue::Pointer(p) => (p.base, p.offset, None),
            ArgValue::Accessor(a) => (a.buffer, 0, a.range),
            _ => return Err(ExecError::Invalid("a buffer parameter given a value".into())),
        };
        let at = exe.place(self, base, offset)?;
        // An accessor's range counts elements of its buffer from the buffer's start.
        let ptr = at.offset.saturating_add(range.map_or(0, |(lo, _)| lo.saturating_mul(at.elem)));
        let (object_lo, object_hi) = match base {
            MemRef::Alloc(n) => {
                let (_, lo, size) =
                    exe.allocs.get(&n.index()).ok_or_else(|| ExecError::Invalid("unknown allocation".into()))?;
                (*lo, lo.saturating_add(*size))
            }
            MemRef::Memory(_) => (0, at.buffer_size),
        };
        let (lo, hi) = match extent {
            Extent::Elems { lo, hi } => {
                (ptr.saturating_add(lo.saturating_mul(elem)), ptr.saturating_add(hi.saturating_mul(elem)))
            }
            Extent::Whole => (object_lo, object_hi),
        };
        // Interval bounds come from the index types and may run past the memory; an access
        // past it is out of bounds (undefined), so only the memory itself can conflict.
        let (lo, hi) = (lo.clamp(object_lo, object_hi), hi.clamp(object_lo, object_hi));
        Ok(Span { target: at.target, lo, hi })
    }
}
