//! Memory footprint of a kernel launch: which memories it may read or write, and which
//! elements of each (docs/footprint.md).
//!
//! The Vulkan executor places a pipeline barrier between two commands only where their
//! footprints conflict (one writes bytes the other touches), so the analysis must be
//! sound: it may report more than a launch touches, never less. Element indices are
//! bounded by interval arithmetic over `i128` seeded with the launch geometry; an interval
//! that leaves its type's range means the kernel's arithmetic may wrap, and the value is
//! unknown from there on. An access whose index is unknown or may be negative covers the
//! whole memory.

mod interval;
mod launch;
mod must;

pub use must::surely_written;

use crate::arena::{Arena, Handle};
use crate::graph::Launch;
use crate::kernel::{
    BinaryOp, Body, Function, Kernel, KernelBody, MemBase, OpKind, Region, UnaryOp, ValueDef, ValueType, V,
};
use crate::module::MemoryObject;
use crate::types::{LitValue, ScalarType, Type};
use interval::{type_range, Interval};
use launch::{builtin, launch_is_empty};
use std::collections::BTreeMap;

/// How much of one memory a launch may touch, in elements of the memory's element type,
/// counted from the argument's base pointer (for a device global: from its start).
///
/// An `Elems` extent may run past the end of the memory (a bound can come from the index's
/// type alone, e.g. `rem %j, 512`); users intersect it with the memory the argument binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// Elements [lo, hi) (hi exclusive; lo < hi).
    Elems {
        /// First element.
        lo: u64,
        /// One past the last element.
        hi: u64,
    },
    /// Unknown: the whole memory the argument points into.
    Whole,
}

impl Extent {
    /// The smallest extent covering both (`Whole` absorbs).
    pub fn hull(self, other: Extent) -> Extent {
        match (self, other) {
            (Extent::Elems { lo: a, hi: b }, Extent::Elems { lo: c, hi: d }) => {
                Extent::Elems { lo: a.min(c), hi: b.max(d) }
            }
            _ => Extent::Whole,
        }
    }
}

/// How a launch may touch one memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemAccess {
    /// Some load or atomic may read it.
    pub read: bool,
    /// Some store or atomic may write it.
    pub write: bool,
    /// Which elements.
    pub extent: Extent,
}

impl MemAccess {
    /// Both accesses as one: flags OR-ed, extents hulled.
    pub fn merge(self, other: MemAccess) -> MemAccess {
        MemAccess {
            read: self.read || other.read,
            write: self.write || other.write,
            extent: self.extent.hull(other.extent),
        }
    }
}

/// A memory a launch touches, named from the kernel's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// A `buf<..>` parameter by index.
    Param(u32),
    /// A module-level memory object (device_global) the body names.
    Global(Handle<MemoryObject>),
}

/// Everything a launch may touch.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Footprint {
    /// One entry per place touched, sorted by place; places never touched are absent.
    pub accesses: Vec<(Place, MemAccess)>,
}

impl Footprint {
    /// The access to `place`, if the launch touches it.
    pub fn get(&self, place: Place) -> Option<MemAccess> {
        self.accesses.iter().find(|(p, _)| *p == place).map(|(_, a)| *a)
    }
}

/// Deepest region nesting followed (docs/ir.md's limit); past it the input is malformed and
/// the analysis gives up (every buffer whole, read and written).
const MAX_DEPTH: usize = 256;

/// The footprint of `kernel` launched as `launch`, with the calls it makes to `functions`
/// (the module's) inlined first. Holds for this launch only: a changed range (or nd_range)
/// needs a new footprint. Scalar arguments are never used, since they can be updated
/// after the footprint is taken.
pub fn kernel_footprint(functions: &Arena<Function>, kernel: &Kernel, launch: &Launch) -> Footprint {
    if launch_is_empty(launch) {
        // No work-item runs, so nothing is touched.
        return Footprint::default();
    }
    match crate::inline::inlined_kernel(functions, kernel) {
        Ok(Some(inlined)) => return kernel_footprint(functions, &inlined, launch),
        Ok(None) => {}
        // Only a module that does not verify has calls that cannot be inlined.
        Err(_) => return external(kernel),
    }
    let body = match &kernel.body {
        KernelBody::Ir(body) => body,
        // An untranslated shader is opaque too (verification refuses it anyway).
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => return external(kernel),
    };
    let mut a =
        Analysis { body, launch, values: vec![None; body.values.len()], places: BTreeMap::new(), broken: false };
    a.region(&body.entry, 0);
    if a.broken {
        a.give_up(kernel);
    }
    Footprint { accesses: a.places.into_iter().collect() }
}

/// An external SPIR-V kernel is opaque: every buffer, whole, read, and written if its
/// access mode allows it.
fn external(kernel: &Kernel) -> Footprint {
    let mut fp = Footprint::default();
    for (i, p) in kernel.params.iter().enumerate() {
        if let (crate::kernel::ParamType::Buffer { access, .. }, Ok(i)) = (p.ty, u32::try_from(i)) {
            fp.accesses
                .push((Place::Param(i), MemAccess { read: true, write: access.writes(), extent: Extent::Whole }));
        }
    }
    fp
}

/// The walk over one kernel body.
struct Analysis<'a> {
    body: &'a Body,
    launch: &'a Launch,
    /// Interval of each value by index; `None`: unknown.
    values: Vec<Option<Interval>>,
    places: BTreeMap<Place, MemAccess>,
    /// Something unexpected was met (a dangling handle, too deep a nesting): the result is
    /// widened to everything the kernel could name.
    broken: bool,
}

impl Analysis<'_> {
    /// What is known of `v`: its interval, else every value of its integer type (which
    /// still bounds `and`, `rem`, `min`, shifts and loop variables).
    fn get(&self, v: V) -> Option<Interval> {
        self.known(v).or_else(|| type_range(self.int_type(v)?))
    }

    /// The interval of `v` only where it says more than its type does.
    fn known(&self, v: V) -> Option<Interval> {
        self.values.get(v.index()).copied().flatten()
    }

    /// The scalar integer type of `v`, if it has one.
    fn int_type(&self, v: V) -> Option<ScalarType> {
        match self.body.values.try_get(v)?.ty {
            ValueType::Data(Type { scalar, lanes: 1 }) if scalar.is_integer() => Some(scalar),
            _ => None,
        }
    }

    /// Records `iv` for `v`, dropped unless it fits `v`'s type (the op may have wrapped),
    /// and dropped when it is the whole type, so that unknown has one representation.
    fn set(&mut self, v: V, iv: Option<Interval>) {
        let ty = self.int_type(v);
        let iv = iv.zip(ty).and_then(|(iv, ty)| iv.fit(ty)).filter(|&iv| Some(iv) != ty.and_then(type_range));
        if let Some(slot) = self.values.get_mut(v.index()) {
            *slot = iv;
        }
    }

    /// Every op of `region` in order; regions nested in `for` and `if` count as executed.
    fn region(&mut self, region: &Region, depth: usize) {
        if depth > MAX_DEPTH {
            self.broken = true;
            return;
        }
        for &h in &region.ops {
            let Some(op) = self.body.ops.try_get(h) else {
                self.broken = true;
                continue;
            };
            let result = op.results.first().copied();
            let iv = match &op.kind {
                OpKind::Load { mem, index } => {
                    self.access(*mem, *index, true, false);
                    None
                }
                OpKind::Store { mem, index, .. } => {
                    self.access(*mem, *index, false, true);
                    None
                }
                OpKind::Atomic { mem, index, .. } => {
                    self.access(*mem, *index, true, true);
                    None
                }
                OpKind::For { var, lo, hi, body, .. } => {
                    // Both the interpreter and codegen run the body only while `lo <= var
                    // < hi`, and never wrap `var + step` (a non-positive step runs no
                    // iteration on the device), so the step does not matter.
                    let var_iv = self.get(*lo).zip(self.get(*hi)).and_then(|(l, h)| {
                        // A loop that cannot run gets any interval: its body never executes.
                        Interval::new(l.lo, (h.hi - 1).max(l.lo))
                    });
                    self.set(*var, var_iv);
                    // Carried values change from one iteration to the next: unknown
                    // (their slots start as `None` and are never set).
                    self.region(body, depth + 1);
                    // `for` results are the final carried values: unknown.
                    continue;
                }
                OpKind::Loop { body, .. } => {
                    // Carried values and results stay unknown (their type's range), as
                    // for `for`; the body runs at least once, and counting it as executed
                    // is what the footprint needs (a superset is sound).
                    self.region(body, depth + 1);
                    continue;
                }
                OpKind::If { then_region, else_region, .. } => {
                    self.region(then_region, depth + 1);
                    let then_yield = self.yields(then_region);
                    let else_yield = else_region.as_ref().and_then(|r| {
                        self.region(r, depth + 1);
                        self.yields(r)
                    });
                    for (i, &r) in op.results.iter().enumerate() {
                        let pick = |y: &Option<Vec<V>>| y.as_ref().and_then(|y| y.get(i).copied());
                        let iv = match (pick(&then_yield), pick(&else_yield)) {
                            (Some(a), Some(b)) => self.get(a).zip(self.get(b)).map(|(a, b)| a.hull(b)),
                            _ => None,
                        };
                        self.set(r, iv);
                    }
                    continue;
                }
                kind => self.value_of(kind),
            };
            if let Some(r) = result {
                self.set(r, iv);
            }
        }
    }

    /// The operands of the `yield` ending `region`.
    fn yields(&self, region: &Region) -> Option<Vec<V>> {
        match &self.body.ops.try_get(*region.ops.last()?)?.kind {
            OpKind::Yield(vs) => Some(vs.clone()),
            _ => None,
        }
    }

    /// The interval of the result of an op without regions or memory.
    fn value_of(&self, kind: &OpKind) -> Option<Interval> {
        match kind {
            OpKind::Const(lit, ty) => match lit.value {
                LitValue::Int(v) if ty.lanes == 1 => Some(Interval::exact(v)),
                _ => None,
            },
            OpKind::Builtin(b, d) => builtin(self.launch, *b, *d),
            OpKind::Unary(u, a) => {
                let (x, ty) = (self.get(*a)?, self.int_type(*a)?);
                match u {
                    UnaryOp::Neg => x.neg(),
                    UnaryOp::Not => x.not(ty),
                    UnaryOp::Abs => x.abs(),
                    _ => None,
                }
            }
            OpKind::Binary(b, a, c) => {
                let (x, y, ty) = (self.get(*a)?, self.get(*c)?, self.int_type(*a)?);
                match b {
                    BinaryOp::Add => x.add(y),
                    BinaryOp::Sub => x.sub(y),
                    BinaryOp::Mul => x.mul(y),
                    BinaryOp::Div => x.div(y),
                    BinaryOp::Rem => x.rem(y),
                    BinaryOp::Min => Some(x.min(y)),
                    BinaryOp::Max => Some(x.max(y)),
                    BinaryOp::And => x.and(y),
                    BinaryOp::Or => x.or_xor(y, true),
                    BinaryOp::Xor => x.or_xor(y, false),
                    BinaryOp::Shl => x.shl(y, ty),
                    BinaryOp::Shr => x.shr(y, ty),
                    BinaryOp::Pow => None,
                }
            }
            OpKind::Select(_, a, b) => Some(self.get(*a)?.hull(self.get(*b)?)),
            OpKind::Cast(x, _) => match self.body.values.try_get(*x)?.ty {
                // `bool` converts to 0 or 1 whatever it is.
                ValueType::Data(Type { scalar: ScalarType::Bool, lanes: 1 }) => Interval::new(0, 1),
                // Integer to integer keeps the value when it fits the target (`set` checks).
                _ => self.int_type(*x).and(self.get(*x)),
            },
            _ => None,
        }
    }

    /// Records one load, store or atomic.
    fn access(&mut self, mem: MemBase, index: V, read: bool, write: bool) {
        let place = match mem {
            MemBase::Global(g) => Place::Global(g),
            MemBase::Value(v) => match self.body.values.try_get(v).map(|val| (val.ty, val.def)) {
                // Work-group memory lives and dies with the launch: no other command sees it.
                Some((ValueType::Local { .. }, _)) => return,
                Some((ValueType::Buffer { .. }, ValueDef::Param(i))) => Place::Param(i),
                _ => {
                    self.broken = true;
                    return;
                }
            },
        };
        // A negative index is out of bounds of the base, so it says nothing about which
        // elements are touched; an index past `u64` cannot be written as an extent.
        let extent = match (self.int_type(index), self.known(index)) {
            (Some(_), Some(iv)) if iv.lo >= 0 => match (u64::try_from(iv.lo), u64::try_from(iv.hi + 1)) {
                (Ok(lo), Ok(hi)) => Extent::Elems { lo, hi },
                _ => Extent::Whole,
            },
            _ => Extent::Whole,
        };
        let new = MemAccess { read, write, extent };
        self.places.entry(place).and_modify(|a| *a = a.merge(new)).or_insert(new);
    }

    /// After something unexpected: every buffer parameter (and every global any op names)
    /// is read, written where its mode allows, and whole.
    fn give_up(&mut self, kernel: &Kernel) {
        let mut all = external(kernel).accesses;
        for (_, op) in self.body.ops.iter() {
            if let OpKind::Load { mem: MemBase::Global(g), .. }
            | OpKind::Store { mem: MemBase::Global(g), .. }
            | OpKind::Atomic { mem: MemBase::Global(g), .. } = op.kind
            {
                all.push((Place::Global(g), MemAccess { read: true, write: true, extent: Extent::Whole }));
            }
        }
        for (place, new) in all {
            self.places.entry(place).and_modify(|a| *a = a.merge(new)).or_insert(new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprint_extent_hull() {
        let a = Extent::Elems { lo: 4, hi: 8 };
        assert_eq!(a.hull(Extent::Elems { lo: 0, hi: 2 }), Extent::Elems { lo: 0, hi: 8 });
        assert_eq!(a.hull(Extent::Whole), Extent::Whole);
    }

    /// A body whose region names an op that does not exist (never produced by the parser)
    /// still gets a sound answer: every buffer whole.
    #[test]
    fn footprint_dangling_op_widens_to_every_buffer() {
        use crate::kernel::{Param, ParamType, Value};
        use crate::types::Access;
        let mut body = Body::default();
        let mut params = Vec::new();
        for (i, access) in [Access::Read, Access::NoInit].into_iter().enumerate() {
            let ty = ParamType::Buffer { elem: Type::F32, access };
            params.push(Param { name: format!("p{i}"), ty });
            let value = Value { name: format!("p{i}"), ty: ty.into(), def: ValueDef::Param(i as u32) };
            body.values.append(value, crate::span::Span::UNDEFINED);
        }
        body.entry.ops.push(Handle::from_usize(7).unwrap());
        let kernel = Kernel {
            name: "k".into(),
            params,
            body: KernelBody::Ir(body),
            comments: Default::default(),
            param_spans: Default::default(),
        };
        let whole = |write| MemAccess { read: true, write, extent: Extent::Whole };
        assert_eq!(
            kernel_footprint(&Arena::new(), &kernel, &Launch::Range(vec![4])).accesses,
            vec![(Place::Param(0), whole(false)), (Place::Param(1), whole(true))]
        );
        // No work-item, no access.
        assert_eq!(kernel_footprint(&Arena::new(), &kernel, &Launch::Range(vec![0])), Footprint::default());
    }
}
