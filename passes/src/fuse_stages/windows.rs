//! Which bytes of which memory each work-group of a kernel node touches.
//!
//! Stage fusion may put two kernels of a launch with several work-groups into one dispatch
//! only if no work-group of one touches, writing on either side, what another work-group of
//! the other touches: a `group_barrier` orders the work-items of one group, never two groups.
//! This module proves the common shape of that: every access to a memory indexes
//! `S · group_id + x` with `0 ≤ x < S`, so work-group `G` stays inside the window
//! `[offset + G·S·size, offset + (G+1)·S·size)` of the memory. `global_id` is
//! `L · group_id + local_id`, so element-wise kernels have such windows too, and so do
//! row-wise kernels whose work-group walks one row (`group_id · C + j` for a loop
//! `j in [0, C)` with `C` a literal).
//!
//! Integer values are tracked as `g · group_id + [lo, hi]` through constants, the id and
//! size builtins of dimension 0, literal scalar arguments, `+ - *` and shifts by constants,
//! division, remainder and masks by constants, `min`, `max`, `select`, integer casts and
//! `for` induction variables. A value whose range over every work-group does not fit its
//! type (it could wrap) is unknown; so is everything else. An access whose index is unknown
//! has no window, which refuses the fusion only if the memory is written by one of the two
//! kernels.

use cmdgraph_ir::graph::{Arg, ArgValue, KernelCommand, MemRef};
use cmdgraph_ir::kernel::{BinaryOp, Body, Builtin, MemBase, OpKind, Region, ValueDef, ValueType, V};
use cmdgraph_ir::types::{LitValue, Type};
use cmdgraph_ir::Module;
use std::collections::BTreeMap;

/// The bytes work-group `G` touches: `[offset + G·stride, offset + (G+1)·stride)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Byte offset of work-group 0's window.
    pub offset: u64,
    /// Bytes per work-group.
    pub stride: u64,
}

/// How one kernel node touches one memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    /// The window every access stays in; `None` when some access has none.
    pub window: Option<Window>,
    /// Whether it stores or runs atomics there.
    pub writes: bool,
}

/// A memory's identity as a map key ([`crate::fuse::legality::key`]).
pub type MemKey = (bool, usize);

/// A 1-D launch of `groups` work-groups of `local` work-items, offset 0.
#[derive(Clone, Copy, Debug)]
pub struct Groups {
    /// Work-items per group.
    pub local: u64,
    /// Work-groups.
    pub groups: u64,
}

/// `g · group_id + x`, `x ∈ [lo, hi]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lin {
    g: i128,
    lo: i128,
    hi: i128,
}

impl Lin {
    fn constant(c: i128) -> Lin {
        Lin { g: 0, lo: c, hi: c }
    }

    fn as_const(self) -> Option<i128> {
        (self.g == 0 && self.lo == self.hi).then_some(self.lo)
    }

    /// The value's smallest and largest value over every work-group.
    fn extent(self, groups: u64) -> (i128, i128) {
        let top = self.g * (groups.saturating_sub(1) as i128);
        (self.lo + top.min(0), self.hi + top.max(0))
    }

    fn scale(self, c: i128) -> Lin {
        if c >= 0 {
            Lin { g: self.g * c, lo: self.lo * c, hi: self.hi * c }
        } else {
            Lin { g: self.g * c, lo: self.hi * c, hi: self.lo * c }
        }
    }
}

/// Every memory `cmd` touches (through `body`, the body of its kernel), keyed by
/// [`MemKey`], under the launch `groups`; `Err` names an argument the analysis cannot follow
/// (a dynamic pointer).
pub fn touches(
    module: &Module,
    cmd: &KernelCommand,
    body: &Body,
    groups: Groups,
) -> Result<BTreeMap<MemKey, Touch>, String> {
    let mut walk = Walk { module, cmd, body, groups, vals: vec![None; body.values.len()], out: BTreeMap::new() };
    for (i, arg) in cmd.args.iter().enumerate() {
        if let Arg::Value(ArgValue::Scalar(lit)) = arg {
            if let (LitValue::Int(c), Some(v)) = (lit.value, param_value(body, i)) {
                walk.set(v, Some(Lin::constant(c)));
            }
        }
    }
    walk.region(&body.entry)?;
    Ok(walk.out)
}

fn param_value(body: &Body, i: usize) -> Option<V> {
    body.values.iter().find(|(_, v)| v.def == ValueDef::Param(i as u32)).map(|(h, _)| h)
}

struct Walk<'a> {
    module: &'a Module,
    cmd: &'a KernelCommand,
    body: &'a Body,
    groups: Groups,
    vals: Vec<Option<Lin>>,
    out: BTreeMap<MemKey, Touch>,
}

impl Walk<'_> {
    fn get(&self, v: V) -> Option<Lin> {
        self.vals.get(v.index()).copied().flatten()
    }

    /// Records `v`'s form if it fits `v`'s type over every work-group.
    fn set(&mut self, v: V, lin: Option<Lin>) {
        let fits = |l: Lin| {
            let Some(ValueType::Data(Type { scalar, lanes: 1 })) = self.body.values.try_get(v).map(|x| x.ty) else {
                return false;
            };
            let Some((min, max)) = scalar.int_range() else { return false };
            let (lo, hi) = l.extent(self.groups.groups);
            lo >= min && hi <= max && l.lo <= l.hi
        };
        if let Some(slot) = self.vals.get_mut(v.index()) {
            *slot = lin.filter(|&l| fits(l));
        }
    }

    fn region(&mut self, region: &Region) -> Result<(), String> {
        for &h in &region.ops {
            let Some(op) = self.body.ops.try_get(h) else { continue };
            let result = op.results.first().copied();
            let lin = match &op.kind {
                OpKind::Const(lit, ty) if ty.lanes == 1 => match lit.value {
                    LitValue::Int(c) => Some(Lin::constant(c)),
                    _ => None,
                },
                OpKind::Builtin(b, 0) => Some(self.builtin(*b)),
                OpKind::Binary(op, a, b) => binary(*op, self.get(*a), self.get(*b)),
                OpKind::Cast(a, _) => self.get(*a),
                OpKind::Select(_, a, b) => match (self.get(*a), self.get(*b)) {
                    (Some(a), Some(b)) if a.g == b.g => Some(Lin { g: a.g, lo: a.lo.min(b.lo), hi: a.hi.max(b.hi) }),
                    _ => None,
                },
                OpKind::For { var, lo, hi, body, .. } => {
                    let v = match (self.get(*lo), self.get(*hi)) {
                        (Some(lo), Some(hi)) if lo.g == hi.g => Some(Lin { g: lo.g, lo: lo.lo, hi: hi.hi - 1 }),
                        _ => None,
                    };
                    self.set(*var, v);
                    self.region(body)?;
                    None
                }
                OpKind::If { then_region, else_region, .. } => {
                    self.region(then_region)?;
                    if let Some(r) = else_region {
                        self.region(r)?;
                    }
                    None
                }
                OpKind::Loop { body, .. } => {
                    self.region(body)?;
                    None
                }
                OpKind::Load { mem, index } => {
                    self.access(mem, *index, false)?;
                    None
                }
                OpKind::Store { mem, index, .. } | OpKind::Atomic { mem, index, .. } => {
                    self.access(mem, *index, true)?;
                    None
                }
                _ => None,
            };
            if let Some(r) = result {
                self.set(r, lin);
            }
        }
        Ok(())
    }

    fn builtin(&self, b: Builtin) -> Lin {
        let Groups { local, groups } = self.groups;
        let (local, groups) = (local as i128, groups as i128);
        match b {
            Builtin::GlobalId => Lin { g: local, lo: 0, hi: local - 1 },
            Builtin::LocalId => Lin { g: 0, lo: 0, hi: local - 1 },
            Builtin::GroupId => Lin { g: 1, lo: 0, hi: 0 },
            Builtin::GlobalRange => Lin::constant(local * groups),
            Builtin::LocalRange => Lin::constant(local),
            Builtin::GroupRange => Lin::constant(groups),
        }
    }

    /// Records one access of `mem` at element `index`.
    fn access(&mut self, mem: &MemBase, index: V, writes: bool) -> Result<(), String> {
        let (memory, offset, elem) = match mem {
            MemBase::Global(h) => {
                let elem = self.module.memories.try_get(*h).map_or(0, |m| m.elem.size());
                (MemRef::Memory(*h), 0, elem)
            }
            MemBase::Value(v) => {
                let Some(value) = self.body.values.try_get(*v) else { return Ok(()) };
                let (ValueDef::Param(i), ValueType::Buffer { elem, .. }) = (value.def, value.ty) else {
                    // Work-group memory: private to the group.
                    return Ok(());
                };
                match self.cmd.args.get(i as usize) {
                    Some(Arg::Value(ArgValue::Pointer(p))) => (p.base, p.offset, elem.size()),
                    Some(Arg::Value(ArgValue::Accessor(a))) => {
                        let lo = a.range.map_or(0, |r| r.0);
                        let size = match a.buffer {
                            MemRef::Memory(h) => self.module.memories.try_get(h).map_or(0, |m| m.elem.size()),
                            MemRef::Alloc(_) => elem.size(),
                        };
                        (a.buffer, lo * size, elem.size())
                    }
                    Some(Arg::Dyn(_)) => {
                        return Err(format!("argument {i} is a dynamic pointer (its memory may change)"));
                    }
                    _ => return Err(format!("argument {i} is not memory the analysis can follow")),
                }
            }
        };
        let window = self.get(index).and_then(|l| {
            (l.g > 0 && l.lo >= 0 && l.hi < l.g && elem > 0)
                .then(|| Window { offset, stride: (l.g as u64).saturating_mul(elem) })
        });
        let key = crate::fuse::legality::key(&memory);
        let touch = self.out.entry(key).or_insert(Touch { window, writes: false });
        if touch.window != window {
            touch.window = None;
        }
        touch.writes |= writes;
        Ok(())
    }
}

/// The form of `a op b`, when the analysis follows it.
fn binary(op: BinaryOp, a: Option<Lin>, b: Option<Lin>) -> Option<Lin> {
    let (a, b) = (a?, b?);
    let c = b.as_const();
    match op {
        BinaryOp::Add => Some(Lin { g: a.g + b.g, lo: a.lo + b.lo, hi: a.hi + b.hi }),
        BinaryOp::Sub => Some(Lin { g: a.g - b.g, lo: a.lo - b.hi, hi: a.hi - b.lo }),
        BinaryOp::Mul => match (a.as_const(), c) {
            (_, Some(c)) if c.abs() < 1 << 40 => Some(a.scale(c)),
            (Some(k), _) if k.abs() < 1 << 40 => Some(b.scale(k)),
            _ => None,
        },
        BinaryOp::Shl => c.filter(|c| (0..40).contains(c)).map(|c| a.scale(1 << c)),
        BinaryOp::Div => divide(a, c?),
        BinaryOp::Shr => c.filter(|c| (0..64).contains(c)).and_then(|c| divide(a, 1 << c)),
        BinaryOp::Rem => {
            let c = c.filter(|&c| c > 0)?;
            // (G·g + x) mod c = x mod c when c divides g, for x ≥ 0.
            (a.lo >= 0 && a.g % c == 0).then_some(below(a, c - 1))
        }
        BinaryOp::And => {
            let m = c.filter(|&m| m >= 0 && (m + 1).count_ones() == 1)?;
            (a.lo >= 0 && a.g % (m + 1) == 0).then_some(below(a, m))
        }
        BinaryOp::Xor | BinaryOp::Or => {
            let c = c.filter(|&c| c >= 0)?;
            // Bits below a power-of-two group stride never reach the group part.
            let span =
                if a.g == 0 { u64::try_from(a.hi.max(c) + 1).ok()?.checked_next_power_of_two()? as i128 } else { a.g };
            (a.lo >= 0 && span.count_ones() == 1 && a.hi < span && c < span).then_some(Lin {
                g: a.g,
                lo: 0,
                hi: span - 1,
            })
        }
        BinaryOp::Min | BinaryOp::Max if a.g == b.g => {
            let pick = |x: i128, y: i128| if op == BinaryOp::Min { x.min(y) } else { x.max(y) };
            Some(Lin { g: a.g, lo: pick(a.lo, b.lo), hi: pick(a.hi, b.hi) })
        }
        _ => None,
    }
}

/// The group-free part `x` of `a` reduced to `[0, top]`: `x` itself when it is in range
/// already, else anything in the range.
fn below(a: Lin, top: i128) -> Lin {
    if a.hi <= top {
        Lin { g: 0, ..a }
    } else {
        Lin { g: 0, lo: 0, hi: top }
    }
}

/// `(G·g + x) / c` for `x ≥ 0`: `G·(g/c) + x/c` when `c` divides `g`.
fn divide(a: Lin, c: i128) -> Option<Lin> {
    (c > 0 && a.lo >= 0 && a.g % c == 0).then_some(Lin { g: a.g / c, lo: a.lo / c, hi: a.hi / c })
}
