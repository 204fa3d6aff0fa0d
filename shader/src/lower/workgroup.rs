//! Work-group variables: each becomes `local` memory. A scalar is `local T[1]` read at 0, an
//! array of scalars or vectors `local T[n]`, an array of arrays one `local` of all their
//! elements indexed row by row ([`Ptr::MemNd`]), and a struct one `local` per member
//! ([`Ptr::Members`], members split the same way, recursively). Whole fixed-size arrays in
//! memory are copied element by element in a counted loop (`out = w.arr;`).

use naga::{ArraySize, Handle, TypeInner};

use super::{FnCtx, Lowerer, Ptr, Val};
use crate::error::{Result, ShaderError};
use crate::types::{value_type, Ty};

const HELP: &str = "work-group variables must be scalars, vectors, fixed-size arrays (of arrays) of them, \
    or structs of these";

impl Lowerer<'_> {
    /// The `local` memory for work-group variable `name` of type `ty`, and the pointer to it.
    pub(crate) fn workgroup(&mut self, name: &str, ty: Handle<naga::Type>, span: naga::Span) -> Result<Ptr> {
        let name = if name.is_empty() { "wg" } else { name };
        match self.module.types[ty].inner {
            TypeInner::Struct { ref members, .. } => {
                let members: Vec<_> = members.iter().map(|m| (m.name.clone().unwrap_or_default(), m.ty)).collect();
                let mut ptrs = Vec::new();
                for (member, mty) in members {
                    ptrs.push(self.workgroup(&format!("{name}_{member}"), mty, span)?);
                }
                Ok(Ptr::Members(ptrs))
            }
            TypeInner::Array { base, size: ArraySize::Constant(n), .. } => {
                // Arrays of arrays: the element type and every dimension, outermost first.
                let mut dims = vec![n.get()];
                let mut elem = base;
                while let TypeInner::Array { base, size: ArraySize::Constant(m), .. } = self.module.types[elem].inner {
                    dims.push(m.get());
                    elem = base;
                }
                let t = value_type(&self.module.types[elem].inner)
                    .map_err(|what| ShaderError::at(span, format!("work-group array `{name}` of {what}"), HELP))?;
                let count = dims.iter().try_fold(1u32, |a, &d| a.checked_mul(d)).filter(|&c| c <= 1 << 24);
                let Some(count) = count else {
                    return Err(ShaderError::at(span, format!("work-group array `{name}` is too large"), HELP));
                };
                let mem = self.claim(name);
                self.prologue_line(format!("{mem} = local {}[{count}]", t.text()));
                if dims.len() == 1 {
                    return Ok(Ptr::Mem { mem, elem: t, index: None, lane: None });
                }
                let (zero, _) = self.constant("0", Ty::U32);
                Ok(Ptr::MemNd { mem, elem: t, index: zero, dims })
            }
            ref other => {
                let t = value_type(other)
                    .map_err(|what| ShaderError::at(span, format!("work-group variable `{name}` of {what}"), HELP))?;
                let mem = self.claim(name);
                self.prologue_line(format!("{mem} = local {}[1]", t.text()));
                let (zero, _) = self.constant("0", Ty::U32);
                Ok(Ptr::Mem { mem, elem: t, index: Some(zero), lane: None })
            }
        }
    }

    /// Index `i` (an IR `u32` value) into the outer dimension of an array of arrays.
    pub(crate) fn nd_index(&mut self, p: Ptr, i: &str, span: naga::Span) -> Result<Val> {
        let Ptr::MemNd { mem, elem, index, dims } = p else {
            return Err(ShaderError::at(span, "internal: not an array of arrays", ""));
        };
        let inner: u32 = dims[1..].iter().product();
        let (stride, _) = self.constant(&inner.to_string(), Ty::U32);
        let (scaled, _) = self.op(format!("mul {i}, {stride}"), Ty::U32);
        let (at, _) = self.op(format!("add {index}, {scaled}"), Ty::U32);
        Ok(Val::Ptr(Ptr::MemNd { mem, elem, index: at, dims: dims[1..].to_vec() }))
    }

    /// The last dimension of an array of arrays indexed: one element.
    pub(crate) fn nd_element(&mut self, p: Ptr, i: &str, span: naga::Span) -> Result<Val> {
        match p {
            Ptr::MemNd { mem, elem, index, dims } if dims.len() == 1 => {
                let (at, _) = self.op(format!("add {index}, {i}"), Ty::U32);
                Ok(Val::Ptr(Ptr::Mem { mem, elem, index: Some(at), lane: None }))
            }
            p @ Ptr::MemNd { .. } => self.nd_index(p, i, span),
            _ => Err(ShaderError::at(span, "internal: not an array of arrays", "")),
        }
    }

    /// The naga type a pointer expression points at, where it can be followed.
    pub(crate) fn pointee_type(&self, f: &FnCtx<'_>, h: Handle<naga::Expression>) -> Option<Handle<naga::Type>> {
        use naga::Expression as E;
        let types = &self.module.types;
        match f.func.expressions.try_get(h).ok()? {
            E::GlobalVariable(g) => Some(self.module.global_variables.try_get(*g).ok()?.ty),
            E::LocalVariable(l) => Some(f.func.local_variables.try_get(*l).ok()?.ty),
            E::FunctionArgument(i) => match types[f.func.arguments.get(*i as usize)?.ty].inner {
                TypeInner::Pointer { base, .. } => Some(base),
                _ => None,
            },
            E::AccessIndex { base, index } => match types[self.pointee_type(f, *base)?].inner {
                TypeInner::Struct { ref members, .. } => Some(members.get(*index as usize)?.ty),
                TypeInner::Array { base, .. } => Some(base),
                _ => None,
            },
            E::Access { base, .. } => match types[self.pointee_type(f, *base)?].inner {
                TypeInner::Array { base, .. } => Some(base),
                _ => None,
            },
            _ => None,
        }
    }

    /// `dst = src` for two whole arrays of `count` elements in memory: a counted loop.
    pub(crate) fn copy_array(&mut self, dst: &str, src: &str, elem: Ty, count: u32) -> Result<()> {
        let (zero, _) = self.constant("0", Ty::U32);
        let (one, _) = self.constant("1", Ty::U32);
        let (n, _) = self.constant(&count.to_string(), Ty::U32);
        let k = self.fresh();
        let ((), lines) = self.region(|l| {
            let (v, _) = l.op(format!("load {src}[{k}]"), elem);
            l.stmt_line(format!("store {dst}[{k}], {v}"));
            Ok(())
        })?;
        self.stmt_line(format!("for {k} = {zero} to {n} step {one} {{"));
        self.nest(lines);
        self.body.push("}".into());
        Ok(())
    }

    /// The tree of a whole fixed-size array in memory (`let a = w.arr;`), element by element.
    pub(crate) fn memory_tree(&mut self, mem: &str, elem: Ty, count: u32) -> Val {
        let mut elems = Vec::new();
        for i in 0..count {
            let (at, _) = self.constant(&i.to_string(), Ty::U32);
            let (v, t) = self.op(format!("load {mem}[{at}]"), elem);
            elems.push(Val::Ssa(v, t));
        }
        Val::Struct(elems)
    }
}
