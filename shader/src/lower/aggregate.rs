//! Struct, fixed-size array and matrix values, and the variables that hold them.
//!
//! The kernel language has no aggregate values, so they are taken apart ("scalar replacement
//! of aggregates"): an aggregate value is a [`Val::Struct`] tree whose leaves are scalars and
//! vectors (a struct's members, an array's elements, a matrix's columns, in order), and a
//! function-local or private variable of aggregate type is one tracked variable per leaf
//! ([`VarKey::Part`]), so `if`s and loops merge its leaves like any other variable. A pointer
//! into such a variable ([`Ptr::Part`]) knows the type it points at and its first leaf; an
//! array index computed at run time picks the element with `select`s over every element (an
//! index past the end reads and writes the last element, as naga's `Restrict` bounds-check
//! policy does).

use naga::{ArraySize, Handle, TypeInner};

use super::{Lowerer, Ptr, Val, VarKey};
use crate::error::{Result, ShaderError};
use crate::types::{scalar, value_type, Ty, S};

/// Most leaves one aggregate variable or value may have: each is a tracked variable, and
/// a computed index costs a `select` per leaf.
const MAX_LEAVES: usize = 256;

/// Which variable a [`Ptr::Part`] points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Root {
    /// A function's local variable (function id, local index).
    Local(u32, u32),
    /// A private global (global index).
    Private(u32),
}

impl Root {
    pub(crate) fn key(self, leaf: u32) -> VarKey {
        match self {
            Root::Local(f, l) => VarKey::Part(f, l, leaf),
            Root::Private(g) => VarKey::Part(PRIVATE, g, leaf),
        }
    }
}

/// The function id of private globals in [`VarKey::Part`].
pub(crate) const PRIVATE: u32 = u32::MAX - 1;

/// A computed index on the way to a [`Ptr::Part`]: the `u32` index value, the array's
/// element count and the leaves per element.
pub(crate) type Dynamic = (String, u32, u32);

fn too_many(span: naga::Span) -> ShaderError {
    ShaderError::at(
        span,
        format!("a struct, array or matrix value of more than {MAX_LEAVES} scalars and vectors"),
        "keep large arrays in work-group memory or a storage buffer",
    )
}

/// What a load through a part pointer reads: a tree of this type, or one leaf (one lane).
#[derive(Clone, Copy)]
enum Read {
    Tree(Handle<naga::Type>),
    Leaf(Option<u32>),
}

/// Whether values of `inner` are aggregates (taken apart into leaves).
pub(crate) fn is_aggregate(inner: &TypeInner) -> bool {
    matches!(
        inner,
        TypeInner::Struct { .. } | TypeInner::Array { size: ArraySize::Constant(_), .. } | TypeInner::Matrix { .. }
    )
}

impl Lowerer<'_> {
    /// The leaf types of `ty` in order, at most [`MAX_LEAVES`].
    pub(crate) fn leaf_types(&self, ty: Handle<naga::Type>, span: naga::Span) -> Result<Vec<Ty>> {
        let mut out = Vec::new();
        self.push_leaf_types(ty, &mut out, span)?;
        if out.len() > MAX_LEAVES {
            return Err(too_many(span));
        }
        Ok(out)
    }

    fn push_leaf_types(&self, ty: Handle<naga::Type>, out: &mut Vec<Ty>, span: naga::Span) -> Result<()> {
        // Stops the walk of a huge array early; `leaf_types` checks the total.
        if out.len() > MAX_LEAVES {
            return Err(too_many(span));
        }
        match self.module.types[ty].inner {
            TypeInner::Matrix { columns, rows, scalar: sc } => {
                let s = scalar(sc).map_err(|what| ShaderError::at(span, format!("a matrix of {what}"), ""))?;
                let column = Ty { s, lanes: crate::types::lanes(rows) };
                out.extend(std::iter::repeat_n(column, crate::types::lanes(columns) as usize));
            }
            TypeInner::Array { base, size: ArraySize::Constant(n), .. } => {
                for _ in 0..n.get() {
                    self.push_leaf_types(base, out, span)?;
                }
            }
            TypeInner::Struct { ref members, .. } => {
                for m in members {
                    self.push_leaf_types(m.ty, out, span)?;
                }
            }
            ref other => out
                .push(value_type(other).map_err(|what| {
                    ShaderError::at(span, format!("a struct, array or matrix holding a {what}"), "")
                })?),
        }
        Ok(())
    }

    /// The number of leaves of `ty`.
    fn leaf_count(&self, ty: Handle<naga::Type>, span: naga::Span) -> Result<u32> {
        Ok(self.leaf_types(ty, span)?.len() as u32)
    }

    /// The zero value of aggregate type `ty`, as a tree.
    pub(crate) fn zero_tree(&self, ty: Handle<naga::Type>, span: naga::Span) -> Result<Val> {
        let leaves = self.leaf_types(ty, span)?;
        let mut it = leaves.into_iter().map(Val::Zero);
        self.tree_from_leaves(ty, &mut it, span)
    }

    /// Rebuilds a tree of type `ty` from its leaves.
    fn tree_from_leaves(
        &self,
        ty: Handle<naga::Type>,
        leaves: &mut impl Iterator<Item = Val>,
        span: naga::Span,
    ) -> Result<Val> {
        let missing = || ShaderError::at(span, "internal: too few leaves", "");
        Ok(match self.module.types[ty].inner {
            TypeInner::Matrix { columns, .. } => {
                let n = crate::types::lanes(columns) as usize;
                let cols: Vec<Val> = leaves.take(n).collect();
                if cols.len() != n {
                    return Err(missing());
                }
                Val::Struct(cols)
            }
            TypeInner::Array { base, size: ArraySize::Constant(n), .. } => {
                let mut elems = Vec::new();
                for _ in 0..n.get() {
                    elems.push(self.tree_from_leaves(base, leaves, span)?);
                }
                Val::Struct(elems)
            }
            TypeInner::Struct { ref members, .. } => {
                let mut ms = Vec::new();
                for m in members {
                    ms.push(self.tree_from_leaves(m.ty, leaves, span)?);
                }
                Val::Struct(ms)
            }
            _ => leaves.next().ok_or_else(missing)?,
        })
    }

    /// A struct, array or matrix constructor: its components as a tree. A matrix built from
    /// scalars (GLSL `mat2(a, b, c, d)`) gets its columns built.
    pub(crate) fn compose_tree(&mut self, ty: Handle<naga::Type>, parts: Vec<Val>, span: naga::Span) -> Result<Val> {
        if let TypeInner::Matrix { columns, rows, .. } = self.module.types[ty].inner {
            let (c, r) = (crate::types::lanes(columns) as usize, crate::types::lanes(rows) as usize);
            if parts.len() == c * r && c * r > c {
                let mut cols = Vec::new();
                for chunk in parts.chunks(r) {
                    let mut lanes = Vec::new();
                    let mut s = S::F32;
                    for p in chunk {
                        let (n, t) = self.ssa(p, span)?;
                        s = t.s;
                        lanes.push(n);
                    }
                    let (n, t) = self.op(format!("vec {}", lanes.join(", ")), Ty { s, lanes: r as u8 });
                    cols.push(Val::Ssa(n, t));
                }
                return Ok(Val::Struct(cols));
            }
        }
        Ok(Val::Struct(parts))
    }

    /// A module-level constant of aggregate type (`const c = array(1, 2, 3);`) as a tree.
    pub(crate) fn global_tree(&mut self, h: Handle<naga::Expression>, span: naga::Span) -> Result<Val> {
        let Ok(e) = self.module.global_expressions.try_get(h) else {
            return Err(ShaderError::at(span, "internal: unknown constant", ""));
        };
        match *e {
            naga::Expression::Compose { ty, ref components } if is_aggregate(&self.module.types[ty].inner) => {
                let components = components.clone();
                let mut parts = Vec::new();
                for c in components {
                    parts.push(self.global_tree(c, span)?);
                }
                self.compose_tree(ty, parts, span)
            }
            naga::Expression::ZeroValue(ty) if is_aggregate(&self.module.types[ty].inner) => self.zero_tree(ty, span),
            naga::Expression::Constant(c) => self.global_tree(self.module.constants[c].init, span),
            _ => {
                let (n, t) = self.global_const(h, span)?;
                Ok(Val::Ssa(n, t))
            }
        }
    }

    /// `v` as an aggregate tree: a struct loaded whole from a buffer of structs is read leaf
    /// by leaf here; a tree is itself.
    pub(crate) fn tree_of(&mut self, v: Val, ty: Handle<naga::Type>, span: naga::Span) -> Result<Val> {
        match v {
            Val::Struct(_) => Ok(v),
            Val::FlatLoad(p, at, epoch) => {
                let p = self.member_of_load(p, at, epoch, span)?;
                self.flat_tree(p, ty, span)
            }
            Val::MemArray(mem, elem, at, epoch) => match self.module.types[ty].inner {
                TypeInner::Array { size: ArraySize::Constant(n), .. } if n.get() as usize <= MAX_LEAVES => {
                    self.member_of_load(Ptr::Mem { mem: mem.clone(), elem, index: None, lane: None }, at, epoch, span)?;
                    self.readable(&mem, span)?;
                    Ok(self.memory_tree(&mem, elem, n.get()))
                }
                _ => Err(ShaderError::at(
                    span,
                    "a load of a whole array of more than 256 elements as a value",
                    "copy it element by element",
                )),
            },
            other => {
                let (n, t) = self.ssa(&other, span)?;
                Ok(Val::Ssa(n, t))
            }
        }
    }

    /// The tree of a struct or array in a buffer of structs, read leaf by leaf.
    fn flat_tree(&mut self, p: Ptr, ty: Handle<naga::Type>, span: naga::Span) -> Result<Val> {
        match self.module.types[ty].inner {
            TypeInner::Struct { ref members, .. } => {
                let n = members.len() as u32;
                let mut ms = Vec::new();
                for (i, m) in (0..n).zip(members.iter().map(|m| m.ty).collect::<Vec<_>>()) {
                    let Val::Ptr(member) = self.flat_access_index(p.clone(), i, span)? else {
                        return Err(ShaderError::at(span, "internal: a flat member", ""));
                    };
                    ms.push(self.flat_tree(member, m, span)?);
                }
                Ok(Val::Struct(ms))
            }
            TypeInner::Array { base, size: ArraySize::Constant(n), .. } => {
                let mut elems = Vec::new();
                for i in 0..n.get() {
                    let Val::Ptr(elem) = self.flat_access_index(p.clone(), i, span)? else {
                        return Err(ShaderError::at(span, "internal: a flat element", ""));
                    };
                    elems.push(self.flat_tree(elem, base, span)?);
                }
                Ok(Val::Struct(elems))
            }
            _ => match p {
                Ptr::Mem { mem, elem, index: Some(i), lane: None } => {
                    let (n, t) = self.op(format!("load {mem}[{i}]"), elem);
                    Ok(Val::Ssa(n, t))
                }
                other => self.flat_load(&other, span),
            },
        }
    }

    /// The leaves of a tree, in order.
    pub(crate) fn leaves_of(v: &Val, out: &mut Vec<Val>) {
        match v {
            Val::Struct(ms) => ms.iter().for_each(|m| Self::leaves_of(m, out)),
            other => out.push(other.clone()),
        }
    }

    /// `select c, a, b` over two trees of one shape.
    pub(crate) fn select_tree(&mut self, c: &str, a: &Val, b: &Val, span: naga::Span) -> Result<Val> {
        match (a, b) {
            (Val::Struct(x), Val::Struct(y)) if x.len() == y.len() => {
                let mut out = Vec::new();
                for (p, q) in x.iter().zip(y) {
                    out.push(self.select_tree(c, p, q, span)?);
                }
                Ok(Val::Struct(out))
            }
            _ if a == b => Ok(a.clone()),
            _ => {
                let (p, t) = self.ssa(a, span)?;
                let (q, _) = self.ssa(b, span)?;
                let (n, t) = self.op(format!("select {c}, {p}, {q}"), t);
                Ok(Val::Ssa(n, t))
            }
        }
    }

    /// Element `i` (an IR `u32` value) of the array or vector value `v`: a `select` per
    /// element; past the end, the last.
    pub(crate) fn pick(&mut self, v: &Val, i: &str, span: naga::Span) -> Result<Val> {
        let elems: Vec<Val> = match v {
            Val::Struct(elems) => elems.clone(),
            other => {
                let (n, t) = self.ssa(other, span)?;
                if t.lanes == 1 {
                    return Err(ShaderError::at(span, "indexing a scalar", ""));
                }
                self.lanes_of(&n, t).into_iter().map(|l| Val::Ssa(l, t.with_lanes1())).collect()
            }
        };
        let Some(mut acc) = elems.last().cloned() else {
            return Err(ShaderError::at(span, "indexing an empty array", ""));
        };
        for (k, e) in elems.iter().enumerate().rev().skip(1) {
            let (kc, _) = self.constant(&k.to_string(), Ty::U32);
            let (c, _) = self.op(format!("eq {i}, {kc}"), Ty::BOOL);
            acc = self.select_tree(&c, e, &acc, span)?;
        }
        Ok(acc)
    }

    /// A `u32` copy of an integer index (the IR compares one type).
    pub(crate) fn index_as_u32(&mut self, i: String, t: Ty) -> String {
        if t.s == S::U32 {
            i
        } else {
            self.op(format!("cast {i} to u32"), Ty::U32).0
        }
    }

    /// The pointer to a whole aggregate variable.
    pub(crate) fn part_root(&self, root: Root, ty: Handle<naga::Type>) -> Val {
        Val::Ptr(Ptr::Part { root, ty, leaf: 0, dynamic: Vec::new() })
    }

    /// Gives aggregate variable `root` of type `ty` its initial value (`init`, or zero).
    pub(crate) fn init_part(
        &mut self,
        root: Root,
        ty: Handle<naga::Type>,
        init: Option<Val>,
        span: naga::Span,
    ) -> Result<()> {
        let tree = match init {
            Some(v) => self.tree_of(v, ty, span)?,
            None => self.zero_tree(ty, span)?,
        };
        self.assign_leaves(root, 0, &tree, span)
    }

    fn assign_leaves(&mut self, root: Root, first: u32, tree: &Val, span: naga::Span) -> Result<()> {
        let mut leaves = Vec::new();
        Self::leaves_of(tree, &mut leaves);
        for (i, v) in leaves.into_iter().enumerate() {
            let v = match v {
                Val::Ssa(..) | Val::Builtin(_) | Val::Zero(_) => v,
                other => {
                    let (n, t) = self.ssa(&other, span)?;
                    Val::Ssa(n, t)
                }
            };
            self.vars.insert(root.key(first + i as u32), v);
        }
        Ok(())
    }

    /// One level into a [`Ptr::Part`]: member or element `index` (a constant); a pointer to a
    /// scalar or vector leaf without computed indices is that leaf's variable.
    pub(crate) fn part_index(&mut self, p: Ptr, index: u32, span: naga::Span) -> Result<Val> {
        let Ptr::Part { root, ty, leaf, dynamic } = p else {
            return Err(ShaderError::at(span, "internal: not a part pointer", ""));
        };
        let (child, offset) = match self.module.types[ty].inner {
            TypeInner::Struct { ref members, .. } => {
                let members: Vec<_> = members.iter().map(|m| m.ty).collect();
                let Some(&m) = members.get(index as usize) else {
                    return Err(ShaderError::at(span, "internal: unknown member", ""));
                };
                let mut offset = 0;
                for &before in &members[..index as usize] {
                    offset += self.leaf_count(before, span)?;
                }
                (m, offset)
            }
            TypeInner::Array { base, size: ArraySize::Constant(n), .. } => {
                // A constant index past the end is refused by naga's validator.
                let i = index.min(n.get() - 1);
                (base, i * self.leaf_count(base, span)?)
            }
            TypeInner::Matrix { .. } => {
                return Ok(self.part_leaf(root, leaf + index, dynamic, None));
            }
            TypeInner::Vector { .. } => return Ok(self.part_leaf(root, leaf, dynamic, Some(index))),
            _ => return Err(ShaderError::at(span, "member access on a scalar", "")),
        };
        if is_aggregate(&self.module.types[child].inner) {
            return Ok(Val::Ptr(Ptr::Part { root, ty: child, leaf: leaf + offset, dynamic }));
        }
        Ok(self.part_leaf(root, leaf + offset, dynamic, None))
    }

    /// A pointer to one leaf (or one lane of it): the variable itself when no index is
    /// computed.
    fn part_leaf(&self, root: Root, leaf: u32, dynamic: Vec<Dynamic>, lane: Option<u32>) -> Val {
        if dynamic.is_empty() {
            return Val::Ptr(match lane {
                None => Ptr::Var(root.key(leaf)),
                Some(l) => Ptr::VarLane(root.key(leaf), l),
            });
        }
        Val::Ptr(Ptr::PartLeaf { root, leaf, dynamic, lane })
    }

    /// A computed index into the array a [`Ptr::Part`] points at.
    pub(crate) fn part_dynamic(&mut self, p: Ptr, i: String, it: Ty, span: naga::Span) -> Result<Val> {
        let Ptr::Part { root, ty, leaf, mut dynamic } = p else {
            return Err(ShaderError::at(span, "internal: not a part pointer", ""));
        };
        let (base, n) = match self.module.types[ty].inner {
            TypeInner::Array { base, size: ArraySize::Constant(n), .. } => (base, n.get()),
            TypeInner::Matrix { columns, .. } => {
                let i = self.index_as_u32(i, it);
                dynamic.push((i, u32::from(crate::types::lanes(columns)), 1));
                return Ok(self.part_leaf(root, leaf, dynamic, None));
            }
            _ => {
                return Err(ShaderError::at(
                    span,
                    "a computed index into a vector through a pointer",
                    "load the vector and index the value",
                ))
            }
        };
        let stride = self.leaf_count(base, span)?;
        let i = self.index_as_u32(i, it);
        dynamic.push((i, n, stride));
        if is_aggregate(&self.module.types[base].inner) {
            return Ok(Val::Ptr(Ptr::Part { root, ty: base, leaf, dynamic }));
        }
        Ok(self.part_leaf(root, leaf, dynamic, None))
    }

    /// Every leaf a pointer with computed indices may reach, with the condition under which
    /// it does (`None`: always; the last element stands for every index past the end).
    fn candidates(&mut self, leaf: u32, dynamic: &[Dynamic]) -> Vec<(u32, Option<String>)> {
        let mut out = vec![(leaf, None::<String>)];
        for (i, n, stride) in dynamic {
            let mut next = Vec::new();
            for (base, cond) in &out {
                for k in 0..*n {
                    let c = if k + 1 == *n {
                        // The last element: every other index did not match.
                        let (kc, _) = self.constant(&(n - 1).to_string(), Ty::U32);
                        self.op(format!("ge {i}, {kc}"), Ty::BOOL).0
                    } else {
                        let (kc, _) = self.constant(&k.to_string(), Ty::U32);
                        self.op(format!("eq {i}, {kc}"), Ty::BOOL).0
                    };
                    let c = match cond {
                        Some(prev) => self.op(format!("and {prev}, {c}"), Ty::BOOL).0,
                        None => c,
                    };
                    next.push((base + k * stride, Some(c)));
                }
            }
            out = next;
        }
        out
    }

    /// A load through a pointer into an aggregate variable: with computed indices, the value
    /// at every place it may reach, chosen by `select`s (the last element for the rest).
    pub(crate) fn part_load(&mut self, p: Ptr, span: naga::Span) -> Result<Val> {
        let (root, leaf, dynamic, what) = match p {
            Ptr::Part { root, ty, leaf, dynamic } => (root, leaf, dynamic, Read::Tree(ty)),
            Ptr::PartLeaf { root, leaf, dynamic, lane } => (root, leaf, dynamic, Read::Leaf(lane)),
            _ => return Err(ShaderError::at(span, "internal: not a part pointer", "")),
        };
        let mut acc: Option<Val> = None;
        for (base, cond) in self.candidates(leaf, &dynamic).into_iter().rev() {
            let v = self.read_part(root, base, what, span)?;
            acc = Some(match (acc, cond) {
                (Some(rest), Some(c)) => self.select_tree(&c, &v, &rest, span)?,
                _ => v,
            });
        }
        acc.ok_or_else(|| ShaderError::at(span, "internal: no element", ""))
    }

    /// The value at leaf `base` of `root`: a tree of type `ty`, or one leaf (or a lane of it).
    fn read_part(&mut self, root: Root, base: u32, what: Read, span: naga::Span) -> Result<Val> {
        let leaf = |l: &Self, i: u32| l.vars.get(&root.key(i)).cloned().unwrap_or(Val::Zero(Ty::U32));
        match what {
            Read::Tree(ty) => {
                let count = self.leaf_count(ty, span)?;
                let leaves: Vec<Val> = (0..count).map(|j| leaf(self, base + j)).collect();
                self.tree_from_leaves(ty, &mut leaves.into_iter(), span)
            }
            Read::Leaf(None) => Ok(leaf(self, base)),
            Read::Leaf(Some(l)) => {
                let (n, t) = self.ssa(&leaf(self, base), span)?;
                let (x, t) = self.op(format!("extract {n}, {l}"), t.with_lanes1());
                Ok(Val::Ssa(x, t))
            }
        }
    }

    /// A store through a pointer into an aggregate variable: with computed indices, every
    /// leaf it may reach keeps its value unless its condition holds.
    pub(crate) fn part_store(&mut self, p: Ptr, v: Val, span: naga::Span) -> Result<()> {
        let (root, leaf, dynamic, lane, tree) = match p {
            Ptr::Part { root, ty, leaf, dynamic } => {
                let tree = self.tree_of(v, ty, span)?;
                (root, leaf, dynamic, None, tree)
            }
            Ptr::PartLeaf { root, leaf, dynamic, lane } => {
                let (n, t) = self.ssa(&v, span)?;
                (root, leaf, dynamic, lane, Val::Ssa(n, t))
            }
            _ => return Err(ShaderError::at(span, "internal: not a part pointer", "")),
        };
        let mut leaves = Vec::new();
        Self::leaves_of(&tree, &mut leaves);
        for (base, cond) in self.candidates(leaf, &dynamic) {
            for (j, new) in leaves.iter().enumerate() {
                let key = root.key(base + j as u32);
                let old = self.vars.get(&key).cloned().unwrap_or(Val::Zero(Ty::U32));
                let new = match lane {
                    Some(l) => {
                        let (o, t) = self.ssa(&old, span)?;
                        let (x, _) = self.ssa(new, span)?;
                        let (n, t) = self.op(format!("insert {o}, {l}, {x}"), t);
                        Val::Ssa(n, t)
                    }
                    None => new.clone(),
                };
                let v = match &cond {
                    Some(c) => self.select_tree(c, &new, &old, span)?,
                    None => match new {
                        Val::Ssa(..) | Val::Builtin(_) | Val::Zero(_) => new,
                        other => {
                            let (n, t) = self.ssa(&other, span)?;
                            Val::Ssa(n, t)
                        }
                    },
                };
                self.vars.insert(key, v);
            }
        }
        Ok(())
    }
}
