//! `load`, `store` and `atomic`: bounds-checked element accesses, one active lane at a time
//! in lane order.
//!
//! Element `i` of a window lives at `start + i * size(T)` (vec3 elements are 16 bytes apart,
//! std430) and the access touches only the element's lanes (12 bytes for a vec3). The index
//! may be any integer type; a negative index or one at or past the window's element count is
//! an out-of-bounds fault naming the work-item and the index.

use super::super::access::{AccessKind, IntervalSet};
use super::super::error::FaultKind;
use super::super::error::InterpError;
use super::super::scalar;
use super::super::value::{elem_data_bytes, int_of, read_elem, write_elem, Lanes};
use super::bind::MemSlot;
use super::simt::{first, Exec, Slot};
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::kernel::{AtomicOp, MemBase, Op, V};
use cmdgraph_ir::types::{Access, Type};

/// One resolved memory operand: the bytes, the window, and where to record accesses.
struct Target<'m> {
    bytes: &'m mut [u8],
    start: u64,
    end: u64,
    elem: Type,
    name: &'m str,
    /// Recorder and the offset from window bytes to recorded bytes.
    record: Option<(&'m mut IntervalSet, u64)>,
}

impl Target<'_> {
    /// Calls `f(lane, element bytes)` for each active lane in order.
    fn each(
        &mut self,
        idx: &Lanes,
        mask: &[bool],
        mut f: impl FnMut(usize, &mut [u8]),
    ) -> Result<(), (usize, FaultKind)> {
        let stride = self.elem.size();
        let data = elem_data_bytes(self.elem);
        let len = (self.end.saturating_sub(self.start)) / stride.max(1);
        for (lane, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
            let i = idx.data.get(lane).and_then(|&b| int_of(b, idx.ty.scalar)).unwrap_or(-1);
            let oob = || (lane, FaultKind::IndexOutOfBounds { memory: self.name.to_string(), index: i, len });
            if i < 0 || i >= len as i128 {
                return Err(oob());
            }
            let off = self.start + i as u64 * stride;
            let Some(elem) = self.bytes.get_mut(off as usize..(off + data) as usize) else {
                return Err(oob());
            };
            f(lane, elem);
            if let Some((set, base)) = self.record.as_mut() {
                set.add(*base + off, *base + off + data);
            }
        }
        Ok(())
    }
}

impl Exec<'_, '_, '_> {
    /// The memory a memory operand names: a `buf`/`local` value's slot or a device global's
    /// prepared view.
    fn mem_slot(&self, h: Handle<Op>, mask: &[bool], base: MemBase) -> Result<MemSlot, InterpError> {
        match base {
            MemBase::Value(v) => match self.slots.get(v.index()) {
                Some(Slot::Mem(m)) => Ok(*m),
                _ => Err(self.fault_at(h, mask, format!("{} is not memory", self.vname(v)))),
            },
            MemBase::Global(g) => match self.prep.dg_views.get(&g) {
                Some(&i) => Ok(MemSlot::Global(i)),
                None => Err(self.fault_at(h, mask, "device_global was not prepared".to_string())),
            },
        }
    }

    /// Runs `f` over the memory operand `base` with the index lanes of `index`, after checking
    /// the access mode and lifetime. `f` gets the target, the index lanes and the slots.
    #[allow(clippy::too_many_arguments)]
    fn with_target<R>(
        &mut self,
        h: Handle<Op>,
        mask: &[bool],
        base: MemBase,
        index: V,
        kind: AccessKind,
        attempted: &'static str,
        f: impl FnOnce(&mut Target<'_>, &Lanes, &[Slot]) -> Result<R, (usize, FaultKind)>,
    ) -> Result<R, InterpError> {
        let slot = self.mem_slot(h, mask, base)?;
        match self.slots.get(index.index()) {
            Some(Slot::Data(l)) if l.ty.lanes == 1 && l.ty.scalar.is_integer() => {}
            Some(Slot::Data(l)) => {
                return Err(self.fault_at(
                    h,
                    mask,
                    format!("index {} is a {}, not an integer", self.vname(index), l.ty),
                ))
            }
            _ => return Err(self.fault_at(h, mask, format!("value {} is not defined here", self.vname(index)))),
        }
        let active = mask.iter().any(|&m| m);
        let lane0 = first(mask);
        let Exec { slots, mem, log, prep, .. } = self;
        let idx = match slots.get(index.index()) {
            Some(Slot::Data(l)) => l,
            _ => return Err(InterpError::api("unreachable: index checked above")),
        };
        let result = match slot {
            MemSlot::Global(i) => {
                let Some(view) = prep.views.get(i) else {
                    return Err(InterpError::api("memory view out of range"));
                };
                let allowed = match attempted {
                    "read" => view.access.reads(),
                    "write" => view.access.writes(),
                    _ => view.access == Access::ReadWrite,
                };
                let failure = if !allowed {
                    Some(FaultKind::AccessMode { memory: view.name.clone(), attempted, allowed: view.access })
                } else if active {
                    mem.check_live(view.space).err()
                } else {
                    None
                };
                match failure {
                    Some(kind) => Err((lane0, kind)),
                    None => match mem.bytes_mut(view.space) {
                        Err(kind) => Err((lane0, kind)),
                        Ok(bytes) => {
                            let (loc, base_off) = view.loc;
                            let record = log.as_deref_mut().map(|l| (l.set(loc, kind), base_off));
                            let mut target = Target {
                                bytes,
                                start: view.start,
                                end: view.end,
                                elem: view.elem,
                                name: &view.name,
                                record,
                            };
                            f(&mut target, idx, slots)
                        }
                    },
                }
            }
            MemSlot::Local(i) => match prep.locals.get_mut(i) {
                None => Err((lane0, FaultKind::Other("local memory out of range".to_string()))),
                Some(local) => {
                    let end = local.bytes.len() as u64;
                    let mut target = Target {
                        bytes: &mut local.bytes,
                        start: 0,
                        end,
                        elem: local.elem,
                        name: &local.name,
                        record: None,
                    };
                    f(&mut target, idx, slots)
                }
            },
        };
        result.map_err(|(lane, kind)| self.fault(h, lane, kind))
    }

    /// `len`: the element count of `base` (the window a buffer argument sees, a work-group
    /// array's size, a device global's count), the same for every work-item.
    pub fn len(&self, h: Handle<Op>, mask: &[bool], base: MemBase) -> Result<Lanes, InterpError> {
        let slot = self.mem_slot(h, mask, base)?;
        let (bytes, elem) = match slot {
            MemSlot::Global(i) => match self.prep.views.get(i) {
                Some(v) => (v.end.saturating_sub(v.start), v.elem),
                None => return Err(InterpError::api("memory view out of range")),
            },
            MemSlot::Local(i) => match self.prep.locals.get(i) {
                Some(l) => (l.bytes.len() as u64, l.elem),
                None => return Err(InterpError::api("local memory out of range")),
            },
        };
        let count = bytes / elem.size().max(1);
        // Launch checks keep every buffer a kernel sees below 2^32 elements (docs/abi.md).
        let count = u32::try_from(count).map_err(|_| self.fault_at(h, mask, format!("{count} elements")))?;
        Ok(Lanes::splat(Type::U32, &[u64::from(count)], self.ids.n))
    }

    /// `load mem[index]`.
    pub fn load(&mut self, h: Handle<Op>, mask: &[bool], base: MemBase, index: V) -> Result<Lanes, InterpError> {
        let n = self.ids.n;
        self.with_target(h, mask, base, index, AccessKind::Read, "read", |t, idx, _| {
            let mut out = Lanes::zeros(t.elem, n);
            let w = t.elem.lanes as usize;
            t.each(idx, mask, |lane, bytes| read_elem(bytes, out.ty, &mut out.data[lane * w..(lane + 1) * w]))?;
            Ok(out)
        })
    }

    /// `store mem[index], value`.
    pub fn store(
        &mut self,
        h: Handle<Op>,
        mask: &[bool],
        base: MemBase,
        index: V,
        value: V,
    ) -> Result<(), InterpError> {
        let lane0 = first(mask);
        let vname = self.vname(value);
        self.with_target(h, mask, base, index, AccessKind::Write, "write", |t, idx, slots| {
            let value = match slots.get(value.index()) {
                Some(Slot::Data(l)) if l.ty == t.elem => l,
                _ => {
                    let msg = format!("stored value {vname} is not a defined {}", t.elem);
                    return Err((lane0, FaultKind::Other(msg)));
                }
            };
            let w = value.width();
            t.each(idx, mask, |lane, bytes| write_elem(bytes, value.ty, &value.data[lane * w..(lane + 1) * w]))
        })
    }

    /// `atomic op mem[index], value` and `atomic cmpxchg mem[index], expected, value`.
    #[allow(clippy::too_many_arguments)]
    pub fn atomic(
        &mut self,
        h: Handle<Op>,
        mask: &[bool],
        op: AtomicOp,
        base: MemBase,
        index: V,
        value: V,
        expected: Option<V>,
    ) -> Result<Lanes, InterpError> {
        let n = self.ids.n;
        let lane0 = first(mask);
        let names = (self.vname(value), expected.map(|e| self.vname(e)));
        if (op == AtomicOp::CompareExchange) != expected.is_some() {
            return Err(self.fault_at(h, mask, "`cmpxchg` (and only it) takes an expected value".to_string()));
        }
        self.with_target(h, mask, base, index, AccessKind::Write, "atomic", |t, idx, slots| {
            let scalar_ty = t.elem.scalar;
            let bad = |what: String| Err((lane0, FaultKind::Other(what)));
            if t.elem.lanes != 1 {
                return bad(format!("atomics need a scalar element, not {}", t.elem));
            }
            let operand = |v: V, name: &str| match slots.get(v.index()) {
                Some(Slot::Data(l)) if l.ty == t.elem => Ok(l),
                _ => Err((lane0, FaultKind::Other(format!("atomic operand {name} is not a defined {}", t.elem)))),
            };
            let value = operand(value, &names.0)?;
            let expected = match (expected, &names.1) {
                (Some(e), Some(name)) => Some(operand(e, name)?),
                _ => None,
            };
            let rmw: scalar::Fn2 = match op {
                AtomicOp::CompareExchange if scalar_ty.is_integer() => |_, new| new,
                _ => match scalar::atomic(op, scalar_ty) {
                    Some(f) => f,
                    None => return bad(format!("`atomic {}` does not apply to {}", op.keyword(), t.elem)),
                },
            };
            let mut out = Lanes::zeros(t.elem, n);
            let elem = t.elem;
            t.each(idx, mask, |lane, bytes| {
                let mut old = [0u64; 1];
                read_elem(bytes, elem, &mut old);
                out.data[lane] = old[0];
                let operand = value.data[lane];
                let swap = expected.is_none_or(|e| e.data[lane] == old[0]);
                if swap {
                    write_elem(bytes, elem, &[rmw(old[0], operand)]);
                }
            })?;
            Ok(out)
        })
    }
}
