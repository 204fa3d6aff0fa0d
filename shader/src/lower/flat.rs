//! Storage buffers of structs, as flat buffers of their one scalar type.
//!
//! The kernel language has no structs: a buffer is a `buf<T>` of scalars or vectors. A storage
//! buffer whose type is a struct of several members, or an array of structs, becomes a
//! `buf<S>` of the one scalar type `S` every scalar leaf of its type has, laid out exactly as
//! the shader lays it out (naga's member offsets and array strides, padding words included),
//! so that a host writing the shader's structs writes the same bytes. A pointer into such a
//! buffer is a [`Ptr::Flat`]: a naga type and a word index; member accesses add their offsets,
//! array indexing adds `index * stride`. Once it reaches a scalar (or atomic) it becomes an
//! ordinary one-word [`Ptr::Mem`] element; vectors are loaded and stored lane by lane.

use naga::{Expression as E, Handle, TypeInner};

use super::{FnCtx, Lowerer, Ptr, Val};
use crate::error::{Result, ShaderError};
use crate::types::{scalar, Ty, S};

/// The most scalars a store of a whole struct or array copies.
const MAX_COPY: usize = 4096;

/// Why a type cannot be a flat buffer.
pub(crate) enum NotFlat {
    /// Scalar leaves of two types: the first seen and the offending one, with its path.
    Mixed(S, S, String),
    /// A leaf that is not a 4-byte scalar, vector or atomic (a matrix, `bool`, `f16`...).
    Leaf(String),
}

/// The one scalar type of every scalar leaf of `ty`, which must be a 4-byte type (`f32`,
/// `u32`, `i32`: offsets and strides are then whole words).
pub(crate) fn flat_scalar(
    types: &naga::UniqueArena<naga::Type>,
    ty: Handle<naga::Type>,
) -> std::result::Result<S, NotFlat> {
    let mut found = None;
    leaves(types, ty, String::new(), &mut found)?;
    found.ok_or_else(|| NotFlat::Leaf("an empty struct".into()))
}

fn leaves(
    types: &naga::UniqueArena<naga::Type>,
    ty: Handle<naga::Type>,
    path: String,
    found: &mut Option<S>,
) -> std::result::Result<(), NotFlat> {
    let leaf = match types[ty].inner {
        TypeInner::Scalar(sc) | TypeInner::Atomic(sc) | TypeInner::Vector { scalar: sc, .. } => {
            scalar(sc).map_err(NotFlat::Leaf)?
        }
        TypeInner::Array { base, stride, .. } => {
            if stride % 4 != 0 {
                return Err(NotFlat::Leaf(format!("an array of stride {stride}")));
            }
            return leaves(types, base, format!("{path}[]"), found);
        }
        TypeInner::Struct { ref members, .. } => {
            for (i, m) in members.iter().enumerate() {
                if m.offset % 4 != 0 {
                    return Err(NotFlat::Leaf(format!("a member at offset {}", m.offset)));
                }
                let name = m.name.clone().unwrap_or_else(|| i.to_string());
                leaves(types, m.ty, format!("{path}.{name}"), found)?;
            }
            return Ok(());
        }
        TypeInner::Matrix { .. } => return Err(NotFlat::Leaf("matrix".into())),
        _ => return Err(NotFlat::Leaf("this type".into())),
    };
    if !matches!(leaf, S::F32 | S::U32 | S::I32) {
        return Err(NotFlat::Leaf(leaf.text().into()));
    }
    match *found {
        None => *found = Some(leaf),
        Some(s) if s != leaf => return Err(NotFlat::Mixed(s, leaf, path.trim_start_matches('.').to_string())),
        Some(_) => {}
    }
    Ok(())
}

/// The error for a buffer of mixed scalar types.
pub(crate) fn mixed_error(name: &str, a: S, b: S, path: &str, span: naga::Span) -> ShaderError {
    ShaderError::at(
        span,
        format!("storage buffer `{name}` mixes scalar types: {} and {} (at `{path}`)", a.text(), b.text()),
        "a buffer of structs becomes a buffer of its one scalar type: give every member the same scalar type \
         (all f32, all u32 or all i32), or split the buffer",
    )
}

impl Lowerer<'_> {
    /// The word index of a flat pointer as an IR `u32`.
    fn flat_word(&mut self, dynamic: &Option<String>, constant: u32) -> String {
        let c = self.constant(&constant.to_string(), Ty::U32).0;
        match dynamic {
            None => c,
            Some(d) if constant == 0 => d.clone(),
            Some(d) => self.op(format!("add {d}, {c}"), Ty::U32).0,
        }
    }

    /// What a flat pointer to `ty` at word `dynamic + constant` stands for: itself, or an
    /// ordinary element once it reaches a scalar.
    fn flat_ptr(&mut self, mem: String, s: S, ty: Handle<naga::Type>, dynamic: Option<String>, constant: u32) -> Val {
        match self.module.types[ty].inner {
            TypeInner::Scalar(_) | TypeInner::Atomic(_) => {
                let index = self.flat_word(&dynamic, constant);
                Val::Ptr(Ptr::Mem { mem, elem: Ty::scalar(s), index: Some(index), lane: None })
            }
            _ => Val::Ptr(Ptr::Flat { mem, scalar: s, ty, dynamic, constant }),
        }
    }

    /// `base.index` (a struct member, a constant array element or a vector lane) of a flat
    /// pointer.
    pub(crate) fn flat_access_index(&mut self, p: Ptr, index: u32, span: naga::Span) -> Result<Val> {
        let Ptr::Flat { mem, scalar: s, ty, dynamic, constant } = p else {
            return Err(ShaderError::at(span, "internal: not a flat pointer", ""));
        };
        let (ty, words) = match self.module.types[ty].inner {
            TypeInner::Struct { ref members, .. } => match members.get(index as usize) {
                Some(m) => (m.ty, m.offset / 4),
                None => return Err(ShaderError::at(span, "internal: unknown struct member", "")),
            },
            TypeInner::Array { base, stride, .. } => (base, index.wrapping_mul(stride / 4)),
            TypeInner::Vector { .. } => {
                let word = self.flat_word(&dynamic, constant.wrapping_add(index));
                return Ok(Val::Ptr(Ptr::Mem { mem, elem: Ty::scalar(s), index: Some(word), lane: None }));
            }
            _ => return Err(ShaderError::at(span, "this member or element access is not supported", "")),
        };
        Ok(self.flat_ptr(mem, s, ty, dynamic, constant.wrapping_add(words)))
    }

    /// `base[i]` (an array element or a vector lane) of a flat pointer, `i` an IR integer.
    pub(crate) fn flat_access(&mut self, p: Ptr, i: String, it: Ty, span: naga::Span) -> Result<Val> {
        let Ptr::Flat { mem, scalar: s, ty, dynamic, constant } = p else {
            return Err(ShaderError::at(span, "internal: not a flat pointer", ""));
        };
        let (ty, stride) = match self.module.types[ty].inner {
            TypeInner::Array { base, stride, .. } => (base, stride / 4),
            TypeInner::Vector { .. } => {
                // A lane: one word each.
                let i = self.index_u32(i, it);
                let d = match dynamic {
                    Some(d) => self.op(format!("add {d}, {i}"), Ty::U32).0,
                    None => i,
                };
                let word = self.flat_word(&Some(d), constant);
                return Ok(Val::Ptr(Ptr::Mem { mem, elem: Ty::scalar(s), index: Some(word), lane: None }));
            }
            _ => {
                return Err(ShaderError::at(
                    span,
                    "indexing with a computed index into a struct",
                    "index arrays and vectors; name struct members",
                ))
            }
        };
        let i = self.index_u32(i, it);
        let scaled = if stride == 1 {
            i
        } else {
            let c = self.constant(&stride.to_string(), Ty::U32).0;
            self.op(format!("mul {i}, {c}"), Ty::U32).0
        };
        let d = match dynamic {
            Some(d) => self.op(format!("add {d}, {scaled}"), Ty::U32).0,
            None => scaled,
        };
        Ok(self.flat_ptr(mem, s, ty, Some(d), constant))
    }

    /// The pointer a member of a whole load reads: refused when a store, atomic or barrier
    /// came between, or in another region (a loop body may run after a later store), where
    /// the member read now would not be what the load read.
    pub(crate) fn member_of_load(&self, p: Ptr, at: naga::Span, epoch: (u32, u32), span: naga::Span) -> Result<Ptr> {
        if epoch != self.epoch() {
            return Err(ShaderError::at_or(
                span,
                at,
                "a member or element of a struct or array loaded whole, used after a store or in another block",
                "load the members you need (`let pos = a[i].pos;`) before storing",
            ));
        }
        Ok(p)
    }

    /// An index as a `u32` (WGSL indexes with `i32` too; a negative index is out of bounds
    /// either way).
    fn index_u32(&mut self, i: String, it: Ty) -> String {
        if it.s == S::U32 {
            i
        } else {
            self.op(format!("cast {i} to u32"), Ty::U32).0
        }
    }

    /// A load through a flat pointer: a vector lane by lane; a whole struct or array is
    /// refused where it is used as a value.
    pub(crate) fn flat_load(&mut self, p: &Ptr, span: naga::Span) -> Result<Val> {
        let Ptr::Flat { mem, scalar: s, ty, dynamic, constant } = p else {
            return Err(ShaderError::at(span, "internal: not a flat pointer", ""));
        };
        let TypeInner::Vector { size, .. } = self.module.types[*ty].inner else {
            // Read member by member where the members are used: naga's front ends use a
            // loaded struct in the same emit range as its load; a use after a memory write
            // or in another region is refused (`member_of_load`).
            return Ok(Val::FlatLoad(p.clone(), span, self.epoch()));
        };
        let n = crate::types::lanes(size);
        let mut lanes = Vec::new();
        for l in 0..u32::from(n) {
            let word = self.flat_word(dynamic, constant + l);
            lanes.push(self.op(format!("load {mem}[{word}]"), Ty::scalar(*s)).0);
        }
        let (v, t) = self.op(format!("vec {}", lanes.join(", ")), Ty { s: *s, lanes: n });
        Ok(Val::Ssa(v, t))
    }

    /// `*p = value` through a flat pointer: a vector lane by lane; a struct or array from a
    /// constructor, a zero value or a load of the same type in a flat buffer, leaf by leaf.
    pub(crate) fn flat_store(&mut self, f: &mut FnCtx<'_>, p: &Ptr, value: Handle<E>, span: naga::Span) -> Result<()> {
        let Ptr::Flat { mem, scalar: s, ty, dynamic, constant } = p else {
            return Err(ShaderError::at(span, "internal: not a flat pointer", ""));
        };
        if let TypeInner::Vector { .. } = self.module.types[*ty].inner {
            let (x, t) = self.value(f, value)?;
            for (l, lane) in self.lanes_of(&x, t).into_iter().enumerate() {
                let word = self.flat_word(dynamic, constant + l as u32);
                self.stmt_line(format!("store {mem}[{word}], {lane}"));
            }
            return Ok(());
        }
        let whole = || {
            ShaderError::at(
                span,
                "a store of a whole struct or array of this value",
                "store a constructor, a zero value or a load from a buffer of the same scalar type, or its members",
            )
        };
        let func = f.func;
        let Ok(e) = func.expressions.try_get(value) else {
            return Err(whole());
        };
        match *e {
            E::Compose { ref components, .. } => {
                for (i, &c) in components.iter().enumerate() {
                    let Val::Ptr(member) = self.flat_access_index(p.clone(), i as u32, span)? else {
                        return Err(whole());
                    };
                    self.store_member(f, member, c, span)?;
                }
                Ok(())
            }
            E::ZeroValue(_) => self.flat_fill(p, None, span),
            E::Load { pointer } if matches!(self.expr(f, pointer)?, Val::Ptr(Ptr::Flat { .. })) => {
                match self.expr(f, pointer)? {
                    Val::Ptr(src @ Ptr::Flat { ty: t, scalar: ss, .. }) if t == *ty && ss == *s => {
                        self.flat_fill(p, Some(&src), span)
                    }
                    _ => Err(whole()),
                }
            }
            // Any other aggregate value (a local struct, a uniform block): leaf by leaf.
            _ => match self.expr(f, value)? {
                v @ Val::Struct(_) => {
                    let mut words = Vec::new();
                    self.leaf_words(*ty, 0, &mut words, span)?;
                    let mut leaves = Vec::new();
                    Self::leaves_of(&v, &mut leaves);
                    let mut scalars = Vec::new();
                    for leaf in &leaves {
                        let (n, t) = self.ssa(leaf, span)?;
                        scalars.extend(self.lanes_of(&n, t));
                    }
                    if scalars.len() != words.len() {
                        return Err(whole());
                    }
                    for (w, x) in words.into_iter().zip(scalars) {
                        let word = self.flat_word(dynamic, constant + w);
                        self.stmt_line(format!("store {mem}[{word}], {x}"));
                    }
                    Ok(())
                }
                _ => Err(whole()),
            },
        }
    }

    /// Stores `value` to `member`, a pointer one level into a flat struct or array.
    fn store_member(&mut self, f: &mut FnCtx<'_>, member: Ptr, value: Handle<E>, span: naga::Span) -> Result<()> {
        match member {
            Ptr::Flat { .. } => self.flat_store(f, &member, value, span),
            Ptr::Mem { mem, index: Some(i), .. } => {
                let (x, _) = self.value(f, value)?;
                self.stmt_line(format!("store {mem}[{i}], {x}"));
                Ok(())
            }
            _ => Err(ShaderError::at(span, "internal: a member pointer", "")),
        }
    }

    /// Writes every scalar leaf of `dst`: zero, or the same leaf of `src`. Padding words are
    /// left alone, as a shader's store of a struct leaves them.
    fn flat_fill(&mut self, dst: &Ptr, src: Option<&Ptr>, span: naga::Span) -> Result<()> {
        let Ptr::Flat { mem, scalar: s, ty, dynamic, constant } = dst else {
            return Err(ShaderError::at(span, "internal: not a flat pointer", ""));
        };
        let mut words = Vec::new();
        self.leaf_words(*ty, 0, &mut words, span)?;
        for w in words {
            let x = match src {
                Some(Ptr::Flat { mem: sm, dynamic: sd, constant: sc, .. }) => {
                    let word = self.flat_word(sd, sc + w);
                    self.op(format!("load {sm}[{word}]"), Ty::scalar(*s)).0
                }
                _ => self.constant(s.zero(), Ty::scalar(*s)).0,
            };
            let word = self.flat_word(dynamic, constant + w);
            self.stmt_line(format!("store {mem}[{word}], {x}"));
        }
        Ok(())
    }

    /// The word offsets of the scalar leaves of `ty` (fixed size) from `at`.
    fn leaf_words(&self, ty: Handle<naga::Type>, at: u32, out: &mut Vec<u32>, span: naga::Span) -> Result<()> {
        if out.len() > MAX_COPY {
            return Err(ShaderError::at(
                span,
                format!("a copy of more than {MAX_COPY} scalars"),
                "copy smaller structs or arrays, or element by element in a loop",
            ));
        }
        match self.module.types[ty].inner {
            TypeInner::Scalar(_) | TypeInner::Atomic(_) => out.push(at),
            TypeInner::Vector { size, .. } => {
                out.extend((0..u32::from(crate::types::lanes(size))).map(|l| at.wrapping_add(l)))
            }
            TypeInner::Array { base, size: naga::ArraySize::Constant(n), stride } => {
                for i in 0..n.get() {
                    self.leaf_words(base, at.wrapping_add(i.wrapping_mul(stride / 4)), out, span)?;
                }
            }
            TypeInner::Struct { ref members, .. } => {
                for m in members {
                    self.leaf_words(m.ty, at.wrapping_add(m.offset / 4), out, span)?;
                }
            }
            _ => return Err(ShaderError::at(span, "a copy of a runtime-sized array", "copy its elements")),
        }
        Ok(())
    }
}
