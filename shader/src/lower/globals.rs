//! Global variables, entry-point arguments and local variables: what each stands for at the
//! start of the kernel.

use naga::{AddressSpace, ArraySize, BuiltIn, StorageAccess, TypeInner};

use super::aggregate::{is_aggregate, Root};
use super::flat::{flat_scalar, mixed_error, NotFlat};
use super::{Builtin, FnCtx, Lowerer, Ptr, Val, VarKey};
use crate::error::{Result, ShaderError};
use crate::lower::expr::unsupported_type as unsupported;
use crate::types::{value_type, Ty, S};
use crate::ParamOrigin;

const BUFFER_HELP: &str = "a storage buffer must be an array (runtime-sized or fixed) of scalars or \
    vectors, a scalar or vector, a struct whose one member is one of these, or structs (and arrays) \
    whose scalars are all f32, all u32 or all i32";

/// How a storage buffer becomes a `buf` parameter.
enum Shape {
    /// A scalar or vector: element 0.
    Single(Ty),
    /// A struct whose one member is an array of this element type (a GLSL buffer block).
    Wrapped(Ty),
    /// An array of this element type.
    Array(Ty),
    /// Structs and arrays of this one scalar type, laid out as the shader lays them out.
    Flat(S, naga::Handle<naga::Type>),
}

impl Lowerer<'_> {
    /// Declares the parameters and `local` arrays for the globals the entry point uses;
    /// returns each parameter's declaration and origin, in parameter order.
    /// `write_only`: the storage buffers GLSL declared `writeonly` (validated as read-write).
    pub(crate) fn globals(
        &mut self,
        info: &naga::valid::FunctionInfo,
        write_only: &std::collections::BTreeSet<u32>,
    ) -> Result<Vec<(String, ParamOrigin)>> {
        let module = self.module;
        let mut buffers = Vec::new();
        let mut uniforms = Vec::new();
        let mut pushes = Vec::new();
        for (h, g) in module.global_variables.iter() {
            let span = module.global_variables.get_span(h);
            let index = h.index() as u32;
            let name = g.name.clone().unwrap_or_default();
            let used = !info[h].is_empty();
            let inner = &module.types[g.ty].inner;
            match g.space {
                AddressSpace::Private if used && (is_aggregate(inner) || g.init.is_some()) => {
                    // An aggregate, or a variable with an initializer: its leaves (or itself)
                    // start at the initializer's constant value.
                    let init = match g.init {
                        Some(h) => Some(self.global_tree(h, span)?),
                        None => None,
                    };
                    if is_aggregate(inner) {
                        self.init_part(Root::Private(index), g.ty, init, span)?;
                        self.globals.insert(index, self.part_root(Root::Private(index), g.ty));
                    } else {
                        let v = init.unwrap_or(Val::Zero(Ty::U32));
                        self.vars.insert(VarKey::Private(index), v);
                        self.globals.insert(index, Val::Ptr(Ptr::Var(VarKey::Private(index))));
                    }
                }
                AddressSpace::Private => {
                    // Tracked like a local; GLSL's builtins live in private globals.
                    let v = match &g.init {
                        Some(_) => None,
                        None => value_type(inner).ok().map(Val::Zero),
                    };
                    if let Some(v) = v {
                        self.vars.insert(VarKey::Private(index), v);
                    } else if used {
                        return Err(ShaderError::at(
                            span,
                            format!("private variable `{name}` of this type (or with an initializer)"),
                            "private variables must be scalars or vectors without an initializer",
                        ));
                    }
                    self.globals.insert(index, Val::Ptr(Ptr::Var(VarKey::Private(index))));
                }
                _ if !used => {}
                AddressSpace::Storage { access } => {
                    let binding = g.binding.as_ref().map(|b| (b.group, b.binding)).unwrap_or_default();
                    buffers.push((binding, index, name, access, span));
                }
                AddressSpace::Uniform | AddressSpace::Immediate => {
                    let binding = g.binding.as_ref().map(|b| (b.group, b.binding)).unwrap_or_default();
                    let members: Vec<(String, naga::Handle<naga::Type>)> = match inner {
                        TypeInner::Struct { members, .. } => members
                            .iter()
                            .enumerate()
                            .map(|(i, m)| (m.name.clone().unwrap_or_else(|| format!("{name}_{i}")), m.ty))
                            .collect(),
                        _ => vec![(name.clone(), g.ty)],
                    };
                    let list = if g.space == AddressSpace::Uniform { &mut uniforms } else { &mut pushes };
                    list.push((binding, index, members, span, matches!(inner, TypeInner::Struct { .. })));
                }
                AddressSpace::WorkGroup => {
                    let p = self.workgroup(&name, g.ty, span)?;
                    self.globals.insert(index, Val::Ptr(p));
                }
                AddressSpace::Handle => {
                    let what = match inner {
                        TypeInner::Image { class: naga::ImageClass::Storage { .. }, .. } => "storage texture",
                        TypeInner::Image { .. } => "texture",
                        TypeInner::Sampler { .. } => "sampler",
                        _ => "resource",
                    };
                    return Err(ShaderError::at(
                        span,
                        format!("{what} `{name}` is not supported"),
                        "kernels reach memory only through storage buffers",
                    ));
                }
                _ => {
                    return Err(ShaderError::at(
                        span,
                        format!("global `{name}` in address space {:?} is not supported", g.space),
                        "",
                    ))
                }
            }
        }
        buffers.sort_by_key(|b| b.0);
        uniforms.sort_by_key(|u| u.0);
        let mut params = Vec::new();
        for ((group, binding), index, name, access, span) in buffers {
            let (shape, member) = self.buffer_shape(&name, index, span)?;
            let shown = if name.is_empty() { member.unwrap_or_else(|| format!("b{group}_{binding}")) } else { name };
            let mem = self.claim(&shown);
            let mode = if access.contains(StorageAccess::STORE) {
                if access.contains(StorageAccess::LOAD) && !write_only.contains(&index) {
                    "read_write"
                } else {
                    "write"
                }
            } else {
                "read"
            };
            if mode == "write" {
                self.write_only_mems.insert(mem.clone());
            }
            let (elem, base) = match shape {
                // A scalar or vector: element 0 of a buffer.
                Shape::Single(elem) => {
                    let (zero, _) = self.constant("0", Ty::U32);
                    (elem, Ptr::Mem { mem: mem.clone(), elem, index: Some(zero), lane: None })
                }
                Shape::Wrapped(elem) => (elem, Ptr::MemStruct { mem: mem.clone(), elem }),
                Shape::Array(elem) => (elem, Ptr::Mem { mem: mem.clone(), elem, index: None, lane: None }),
                Shape::Flat(s, ty) => {
                    (Ty::scalar(s), Ptr::Flat { mem: mem.clone(), scalar: s, ty, dynamic: None, constant: 0 })
                }
            };
            self.globals.insert(index, Val::Ptr(base));
            params.push((
                format!("{mem}: buf<{}, {mode}>", elem.text()),
                ParamOrigin::Storage { group, binding, name: shown },
            ));
        }
        for (is_push, list) in [(false, uniforms), (true, pushes)] {
            for ((group, binding), index, members, span, is_struct) in list {
                let mut names = Vec::new();
                for (member, ty) in &members {
                    let t = match &self.module.types[*ty].inner {
                        inner @ (TypeInner::Scalar(_) | TypeInner::Vector { .. }) => value_type(inner).ok(),
                        _ => None,
                    };
                    let Some(t) = t else {
                        return Err(ShaderError::at(
                            span,
                            format!("uniform member `{member}` is not a scalar or vector"),
                            "uniform and push-constant blocks may hold only scalar and vector members (of u32, i32, f32)",
                        ));
                    };
                    let p = self.claim(member);
                    params.push((
                        format!("{p}: {}", t.text()),
                        if is_push {
                            ParamOrigin::PushConstant { member: member.clone() }
                        } else {
                            ParamOrigin::Uniform { group, binding, member: member.clone() }
                        },
                    ));
                    names.push(Ptr::Scalar(p, t));
                }
                let v = if is_struct {
                    self.blocks.insert(index, names);
                    Val::Ptr(Ptr::Block(index))
                } else {
                    names.pop().map(Val::Ptr).unwrap_or(Val::Zero(Ty::U32))
                };
                self.globals.insert(index, v);
            }
        }
        Ok(params)
    }

    /// The shape of storage buffer `index` and, for a struct of one member, that member's name.
    fn buffer_shape(&self, name: &str, index: u32, span: naga::Span) -> Result<(Shape, Option<String>)> {
        let module = self.module;
        let Some((_, g)) = module.global_variables.iter().nth(index as usize) else {
            return Err(ShaderError::at(span, "internal: unknown global", ""));
        };
        let mut ty = g.ty;
        let mut member = None;
        let mut wrapped = false;
        if let TypeInner::Struct { members, .. } = &module.types[ty].inner {
            if let [only] = members.as_slice() {
                ty = only.ty;
                member = only.name.clone();
                wrapped = true;
            }
        }
        // A nameless GLSL block is known by its member's name.
        let shown = if name.is_empty() { member.clone().unwrap_or_default() } else { name.to_string() };
        let simple = match &module.types[ty].inner {
            // A fixed-size array is a buffer of at least that many elements.
            TypeInner::Array { base, size: ArraySize::Dynamic | ArraySize::Constant(_), .. } => {
                value_type(&module.types[*base].inner)
                    .map(|t| if wrapped { Shape::Wrapped(t) } else { Shape::Array(t) })
            }
            TypeInner::Struct { .. } => Err("struct".to_string()),
            other @ (TypeInner::Scalar(_) | TypeInner::Atomic(_) | TypeInner::Vector { .. }) => {
                return value_type(other).map(|t| (Shape::Single(t), member)).map_err(|what| unsupported(span, &what))
            }
            other => {
                return Err(ShaderError::at(
                    span,
                    format!("storage buffer `{shown}` is not a runtime-sized array ({})", kind(other)),
                    BUFFER_HELP,
                ))
            }
        };
        let what = match simple {
            Ok(shape) => return Ok((shape, member)),
            Err(what) => what,
        };
        // Structs (or arrays of them, or of arrays): a flat buffer of their one scalar type.
        let flat = |what: &str| match flat_scalar(&module.types, g.ty) {
            Ok(s) => Ok((Shape::Flat(s, g.ty), member.clone())),
            Err(NotFlat::Mixed(a, b, path)) => Err(mixed_error(&shown, a, b, &path, span)),
            Err(NotFlat::Leaf(leaf)) if matches!(what, "struct" | "array") => Err(ShaderError::at(
                span,
                format!("storage buffer `{shown}` has elements of type {what} holding {leaf}"),
                BUFFER_HELP,
            )),
            Err(NotFlat::Leaf(_)) => {
                Err(ShaderError::at(span, format!("storage buffer `{shown}` has elements of type {what}"), BUFFER_HELP))
            }
        };
        flat(&what)
    }

    /// An entry-point argument: a builtin.
    pub(crate) fn entry_argument(&mut self, arg: &naga::FunctionArgument, ep: &naga::EntryPoint) -> Result<Val> {
        let name = arg.name.clone().unwrap_or_default();
        let span = ep.function.expressions.iter().find_map(|(h, e)| match e {
            naga::Expression::FunctionArgument(_) => Some(ep.function.expressions.get_span(h)),
            _ => None,
        });
        let unsupported = |what: String| {
            ShaderError::at(
                span.unwrap_or_default(),
                format!("entry-point argument `{name}`: {what} is not supported"),
                "use global_invocation_id, local_invocation_id, local_invocation_index, workgroup_id, num_workgroups \
                 or the subgroup builtins",
            )
        };
        let b = match (&arg.binding, &self.module.types[arg.ty].inner) {
            (Some(naga::Binding::BuiltIn(b)), _) => *b,
            // A struct of builtins (WGSL `sizes: Sizes` with `@builtin` members): its members.
            (None, TypeInner::Struct { members, .. }) => {
                let mut vals = Vec::new();
                for m in members {
                    let Some(naga::Binding::BuiltIn(b)) = m.binding else {
                        return Err(unsupported("a struct member without a builtin binding".into()));
                    };
                    vals.push(self.builtin_value(b).map_err(|b| unsupported(format!("builtin {b:?}")))?);
                }
                return Ok(Val::Struct(vals));
            }
            _ => return Err(unsupported("an argument without a builtin binding".into())),
        };
        self.builtin_value(b).map_err(|b| unsupported(format!("builtin {b:?}")))
    }

    /// What builtin `b` stands for, or `b` back when it is not supported.
    fn builtin_value(&mut self, b: BuiltIn) -> std::result::Result<Val, BuiltIn> {
        let op = match b {
            BuiltIn::GlobalInvocationId => "global_id",
            BuiltIn::LocalInvocationId => "local_id",
            BuiltIn::WorkGroupId => "group_id",
            BuiltIn::NumWorkGroups => "group_range",
            BuiltIn::WorkGroupSize => "local_range",
            BuiltIn::LocalInvocationIndex => {
                // x + y * sx + z * sx * sy, as in the shading languages.
                let l = Builtin("local_id");
                let r = Builtin("local_range");
                let (x, _) = self.builtin_lane(l, 0);
                let (y, _) = self.builtin_lane(l, 1);
                let (z, _) = self.builtin_lane(l, 2);
                let (sx, _) = self.builtin_lane(r, 0);
                let (sy, _) = self.builtin_lane(r, 1);
                let (ysx, _) = self.interned(format!("mul {y}, {sx}"), Ty::U32);
                let (sxy, _) = self.interned(format!("mul {sx}, {sy}"), Ty::U32);
                let (zsxy, _) = self.interned(format!("mul {z}, {sxy}"), Ty::U32);
                let (a, _) = self.interned(format!("add {x}, {ysx}"), Ty::U32);
                let (n, t) = self.interned(format!("add {a}, {zsxy}"), Ty::U32);
                return Ok(Val::Ssa(n, t));
            }
            BuiltIn::SubgroupSize => return Ok(self.scalar_builtin("subgroup_size")),
            BuiltIn::SubgroupInvocationId => return Ok(self.scalar_builtin("subgroup_local_id")),
            BuiltIn::SubgroupId => return Ok(self.scalar_builtin("subgroup_id")),
            BuiltIn::NumSubgroups => return Ok(self.scalar_builtin("num_subgroups")),
            other => return Err(other),
        };
        Ok(Val::Builtin(Builtin(op)))
    }

    /// A `u32` builtin without a dimension (the subgroup builtins), written once.
    fn scalar_builtin(&mut self, op: &str) -> Val {
        let (n, t) = self.interned(op.to_string(), Ty::U32);
        Val::Ssa(n, t)
    }

    /// Gives every local variable of `f` its initial value.
    pub(crate) fn init_locals(&mut self, f: &mut FnCtx<'_>) -> Result<()> {
        for (h, local) in f.func.local_variables.iter() {
            let span = f.func.local_variables.get_span(h);
            let key = VarKey::Local(f.id, h.index() as u32);
            if super::aggregate::is_aggregate(&self.module.types[local.ty].inner) {
                let span = if span.to_range().is_some_and(|r| !r.is_empty()) { span } else { f.site };
                let init = match local.init {
                    Some(init) => Some(self.expr(f, init)?),
                    None => None,
                };
                self.init_part(Root::Local(f.id, h.index() as u32), local.ty, init, span)?;
                continue;
            }
            let t = value_type(&self.module.types[local.ty].inner).map_err(|what| {
                ShaderError::at_or(
                    span,
                    f.site,
                    format!("local variable `{}` of type {what}", local.name.as_deref().unwrap_or("")),
                    "local variables must be scalars or vectors",
                )
            })?;
            let v = match local.init {
                Some(init) => self.expr(f, init)?,
                None => Val::Zero(t),
            };
            self.vars.insert(key, v);
        }
        Ok(())
    }
}

fn kind(inner: &TypeInner) -> &'static str {
    match inner {
        TypeInner::Array { .. } => "a fixed-size array",
        TypeInner::Struct { .. } => "a struct",
        TypeInner::Scalar(_) => "a scalar",
        TypeInner::Vector { .. } => "a vector",
        TypeInner::Matrix { .. } => "a matrix",
        _ => "another type",
    }
}
