//! External kernels with ordinary bindings (`spirv "f.spv" entry "main" bindings`): a module
//! written the way Vulkan programs write compute shaders (one storage buffer per buffer
//! parameter, scalars in a push-constant or uniform block) is rewritten into cmdgraph's
//! interface (docs/abi.md, "Ordinary bindings"), so that the executor binds, dispatches and
//! updates it like any other kernel and the loader checks it like any other module.
//!
//! Why a rewrite rather than a second binding model in the executor: pointer, scalar and range
//! updates keep working without re-recording (push constants are recorded into the command
//! buffer; the argument block is not), the bundle format and the loader's checks stay one, and
//! the rewritten module is what `compile --emit=spirv` shows.
//!
//! The rewrite ([`rebind`]):
//! - storage buffer `i` in (set, binding) order moves to set 0, binding `1 + i`;
//! - every push-constant and uniform block becomes a read-only storage buffer at binding 0
//!   (the argument block) with its members at the offsets of the scalar parameters they stand
//!   for: uniform blocks in (set, binding) order, then the push-constant block, each in offset
//!   order, match the value parameters in signature order;
//! - every index into a buffer's runtime array gets the pointer's element offset added, read
//!   from the argument block, and `OpArrayLength` becomes the parameter's element count, so a
//!   pointer into the middle of an allocation (and a pointer update) works as for compiled
//!   kernels.
//!
//! The module must already have passed `spirv-val`; the result is validated again and checked
//! against the signature by [`super::check`] before it is packed.

mod edit;

use super::check::{block_numeric, buffer as check_buffer, issue, param_text, signature_layout, Issue};
use super::reflect::{ElemType, Member, Numeric, Pointee, Reflection, Resource, PUSH_CONSTANT, STORAGE_BUFFER};
use cmdgraph_ir::{Kernel, ParamType};
use edit::Flat;
use rspirv::dr::Operand;
use rspirv::spirv::{Decoration, Word};
use std::collections::BTreeMap;

/// `Uniform` storage class.
const UNIFORM: u32 = 2;

/// How a storage buffer's one member that is not a runtime array becomes the runtime array
/// cmdgraph binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A scalar or vector (`var<storage> n: atomic<u32>`): element 0 of an array of them.
    Single {
        /// The member's type: the new array's element.
        elem: Word,
        /// Its size, the new array's stride.
        stride: u32,
        /// Member indexes from the variable to it (naga wraps a storage struct of one member
        /// in a `Block` of one member: 2).
        depth: usize,
    },
    /// A fixed-size array (`array<f32, 64>`): the same elements, sized by the binding.
    Fixed {
        /// The array's element type.
        elem: Word,
        /// Its `ArrayStride`.
        stride: u32,
        /// Member indexes from the variable to it.
        depth: usize,
    },
}

/// Which variables of the module stand for which parameters.
#[derive(Debug)]
struct Plan {
    /// Per variable of `buffers` whose member is not a runtime array: its shape.
    shapes: BTreeMap<Word, Shape>,
    /// Per variable of `buffers` holding structs of one 32-bit scalar type: that type (the
    /// element of the runtime array it becomes).
    flats: BTreeMap<Word, Word>,
    /// Per buffer parameter in slot order: the variables (aliases) of its binding.
    buffers: Vec<Vec<Word>>,
    /// Push-constant and uniform block variables, each becoming a view of the argument block.
    blocks: Vec<Word>,
    /// Per value parameter: (struct type of its block, member index, parameter index).
    members: Vec<(Word, u32, usize)>,
}

/// `set S, binding B`, where a resource is bound.
fn place(res: &Resource) -> String {
    let set = res.set.map_or_else(|| "no set".to_string(), |s| format!("set {s}"));
    let binding = res.binding.map_or_else(|| "no binding".to_string(), |b| format!("binding {b}"));
    format!("{set}, {binding}")
}

/// `set S, binding B (`name`)`, how a resource is named in messages.
fn where_is(res: &Resource) -> String {
    format!("{} (`{}`)", place(res), res.label())
}

/// Rewrites `words` (a module that `spirv-val` accepted, reflected as `r`) from ordinary
/// bindings to cmdgraph's interface for `kernel`, or says which rule it breaks.
pub fn rebind(kernel: &Kernel, words: &[u32], r: &Reflection) -> Result<Vec<u32>, Vec<Issue>> {
    let layout = signature_layout(kernel)?;
    let mut module = Flat::load(words)
        .map_err(|e| vec![issue(format!("the module cannot be read for rebinding: {e}"), "report this module")])?;
    let plan = plan(kernel, r, &module)?;
    edit::rewrite(&mut module, &plan, &layout)
        .map_err(|message| vec![issue(message, "ordinary bindings: docs/abi.md, \"Ordinary bindings\"")])?;
    Ok(module.assemble())
}

/// `words` with storage buffers declared the old way (`Uniform` variables of `BufferBlock`
/// structs: SPIR-V before 1.3, glslang's HLSL front end) moved to the StorageBuffer class, or
/// `None` when the module has none to move (docs/abi.md, "External SPIR-V kernels").
pub fn modernize(words: &[u32]) -> Result<Option<Vec<u32>>, Issue> {
    let mut module = Flat::load(words)
        .map_err(|e| issue(format!("the module cannot be read for rebinding: {e}"), "report this module"))?;
    Ok(edit::modernize_storage_buffers(&mut module).then(|| module.assemble()))
}

/// The shape of a storage buffer whose one member is a scalar, a vector or a fixed-size
/// array, with the resource as it is after reshaping (a runtime array of the element); `None`
/// for any other buffer (a runtime array already, or what the check refuses).
fn shape_of(module: &Flat, res: &Resource) -> Option<(Shape, Resource)> {
    let Pointee::Struct { block: true, members } = &res.pointee else { return None };
    let [member] = &members[..] else { return None };
    let first_member = |ty: Word| match module.def(ty)?.operands.first()? {
        Operand::IdRef(t) => Some(*t),
        _ => None,
    };
    // Down through structs of one member at offset 0 to what they hold.
    let (mut leaf, mut leaf_ty, mut depth) = (&member.ty, first_member(pointee_struct(module, res.id)?)?, 1);
    while let ElemType::Struct(_, inner) = leaf {
        let [Member { offset: Some(0) | None, ty, .. }] = &inner[..] else { return None };
        leaf = ty;
        leaf_ty = first_member(leaf_ty)?;
        depth += 1;
        if depth > 8 {
            return None;
        }
    }
    let (shape, elem) = match leaf {
        ElemType::Numeric(n) => {
            // std430: a 3-vector's array stride is that of a 4-vector.
            let stride = n.width / 8 * if n.lanes == 3 { 4 } else { n.lanes };
            (Shape::Single { elem: leaf_ty, stride, depth }, leaf.clone())
        }
        // An array of structs or arrays is a flat buffer (`flat_of`).
        ElemType::FixedArray(e, Some(stride)) if matches!(**e, ElemType::Numeric(_)) => {
            (Shape::Fixed { elem: first_member(leaf_ty)?, stride: *stride, depth }, (**e).clone())
        }
        _ => return None,
    };
    let (Shape::Single { stride, .. } | Shape::Fixed { stride, .. }) = shape;
    let mut view = res.clone();
    view.pointee = Pointee::Struct {
        block: true,
        members: vec![Member { ty: ElemType::RuntimeArray(Box::new(elem), Some(stride)), ..member.clone() }],
    };
    Some((shape, view))
}

/// For a storage buffer that is not a runtime array of numbers but whose scalars are all of
/// one 32-bit type (structs, arrays of structs, nested arrays): that type and the resource as
/// it is after reshaping (a runtime array of it, stride 4).
fn flat_of(module: &Flat, res: &Resource) -> Option<(Word, Resource)> {
    let Pointee::Struct { block: true, members } = &res.pointee else { return None };
    if let [Member { ty: ElemType::RuntimeArray(e, _), .. }] = &members[..] {
        if let ElemType::Numeric(_) = **e {
            return None;
        }
    }
    let (elem, float) = edit::flat_scalar(module, pointee_struct(module, res.id)?)?;
    let mut view = res.clone();
    let member = Member {
        offset: Some(0),
        ty: ElemType::RuntimeArray(Box::new(ElemType::Numeric(Numeric { float, width: 32, lanes: 1 })), Some(4)),
        non_writable: res.non_writable,
    };
    view.pointee = Pointee::Struct { block: true, members: vec![member] };
    Some((elem, view))
}

/// The pointee struct type of variable `var`.
fn pointee_struct(module: &Flat, var: Word) -> Option<Word> {
    let ptr = module.def(var)?.result_type?;
    match module.def(ptr)?.operands.get(1) {
        Some(Operand::IdRef(t)) => Some(*t),
        _ => None,
    }
}

fn plan(kernel: &Kernel, r: &Reflection, module: &Flat) -> Result<Plan, Vec<Issue>> {
    let mut issues = Vec::new();
    let mut buffers: BTreeMap<(u32, u32), Vec<&Resource>> = BTreeMap::new();
    let mut push = Vec::new();
    let mut uniform: BTreeMap<(u32, u32), &Resource> = BTreeMap::new();
    for res in &r.resources {
        let struct_ty = pointee_struct(module, res.id);
        let block = matches!(res.pointee, Pointee::Struct { block: true, .. });
        match res.storage_class {
            STORAGE_BUFFER => match (res.set, res.binding) {
                (Some(s), Some(b)) => buffers.entry((s, b)).or_default().push(res),
                _ => issues.push(issue(
                    format!("storage buffer {} has no DescriptorSet or Binding", where_is(res)),
                    "declare both (GLSL `layout(set = S, binding = B)`)",
                )),
            },
            PUSH_CONSTANT if block => push.push(res),
            // How SPIR-V before 1.3 (and glslang's HLSL front end) declares a storage buffer;
            // the rewrite makes it a StorageBuffer `Block`.
            UNIFORM if struct_ty.is_some_and(|t| module.decorated(t, Decoration::BufferBlock)) => {
                match (res.set, res.binding) {
                    (Some(s), Some(b)) => buffers.entry((s, b)).or_default().push(res),
                    _ => issues.push(issue(
                        format!("storage buffer {} has no DescriptorSet or Binding", where_is(res)),
                        "declare both (GLSL `layout(set = S, binding = B)`)",
                    )),
                }
            }
            UNIFORM if block => match (res.set, res.binding) {
                (Some(s), Some(b)) => {
                    uniform.insert((s, b), res);
                }
                _ => issues.push(issue(
                    format!("uniform block {} has no DescriptorSet or Binding", where_is(res)),
                    "declare both (GLSL `layout(set = S, binding = B)`)",
                )),
            },
            class => issues.push(issue(
                format!("resource {} (storage class {class}) cannot be bound", where_is(res)),
                "a kernel with ordinary bindings takes storage buffers (its buffer parameters) and \
                 scalars in push-constant or uniform blocks; no images, samplers or other resources",
            )),
        }
    }
    let buffer_params: Vec<usize> =
        (0..kernel.params.len()).filter(|&i| matches!(kernel.params[i].ty, ParamType::Buffer { .. })).collect();
    let value_params: Vec<usize> =
        (0..kernel.params.len()).filter(|&i| matches!(kernel.params[i].ty, ParamType::Value(_))).collect();
    if buffers.len() != buffer_params.len() {
        let have: Vec<String> =
            buffers.values().map(|aliases| aliases.first().map(|r| where_is(r)).unwrap_or_default()).collect();
        let want: Vec<String> = buffer_params.iter().map(|&p| param_text(kernel, p)).collect();
        issues.push(issue(
            format!(
                "the module binds {} storage buffers, the IR declares {} buffer parameters",
                buffers.len(),
                buffer_params.len()
            ),
            format!(
                "buffer parameters match storage buffers in (set, binding) order; the module has: {}; the IR: {}",
                or_none(&have),
                or_none(&want)
            ),
        ));
    }
    // Storage buffers of one scalar, vector or fixed-size array are reshaped into a runtime
    // array of their element: checked as such.
    let mut shapes = BTreeMap::new();
    let mut flats = BTreeMap::new();
    let mut reshaped: BTreeMap<Word, Resource> = BTreeMap::new();
    for res in buffers.values().flatten() {
        let shape = shape_of(module, res);
        // A fixed-size array of 32-bit numbers goes the flat way when it can: that way also
        // follows whole-array loads and stores (naga writes `out = w.arr;` as one `OpStore`).
        let flat = match &shape {
            Some((Shape::Fixed { .. }, _)) | None => flat_of(module, res),
            Some(_) => None,
        };
        if let Some((elem, view)) = flat {
            flats.insert(res.id, elem);
            reshaped.insert(res.id, view);
        } else if let Some((shape, view)) = shape {
            shapes.insert(res.id, shape);
            reshaped.insert(res.id, view);
        }
    }
    if buffers.len() == buffer_params.len() {
        for (aliases, &param) in buffers.values().zip(&buffer_params) {
            let views: Vec<&Resource> = aliases.iter().map(|r| reshaped.get(&r.id).unwrap_or(r)).collect();
            check_buffer(kernel, param, &place(aliases[0]), &views, &mut issues);
        }
    }
    // Uniform blocks first, then the push-constant block: the order in which the shader
    // translator (cmdgraph-shader) makes their members parameters, so a WGSL or GLSL shader
    // translated and the same shader compiled to SPIR-V take one signature.
    let blocks: Vec<&Resource> = uniform.values().copied().chain(push.iter().copied()).collect();
    let mut members = Vec::new();
    for res in &blocks {
        let (Pointee::Struct { members: ms, .. }, Some(ty)) = (&res.pointee, pointee_struct(module, res.id)) else {
            continue;
        };
        // A block of one struct member at offset 0 (how naga declares `var<uniform> p: Params`)
        // stands for that struct's members.
        let (ty, ms) = match &ms[..] {
            [Member { offset: Some(0) | None, ty: ElemType::Struct(inner, inner_ms), .. }] => (*inner, inner_ms),
            _ => (ty, ms),
        };
        let mut order: Vec<(u32, u32, &ElemType)> =
            ms.iter().enumerate().map(|(i, m)| (m.offset.unwrap_or(0), i as u32, &m.ty)).collect();
        order.sort_by_key(|&(offset, i, _)| (offset, i));
        members.extend(order.into_iter().map(|(_, i, t)| (ty, i, t, *res)));
    }
    let mut matched = Vec::new();
    if members.len() != value_params.len() {
        let have: Vec<String> =
            members.iter().map(|(_, i, t, res)| format!("member {i} of {} ({t})", res.label())).collect();
        let want: Vec<String> = value_params.iter().map(|&p| param_text(kernel, p)).collect();
        issues.push(issue(
            format!(
                "the module's push-constant and uniform blocks have {} members, the IR declares {} value parameters",
                members.len(),
                value_params.len()
            ),
            format!(
                "value parameters match the members of the uniform blocks in (set, binding) order, then of \
                 the push-constant block, each in offset order; the module has: {}; the IR: {}",
                or_none(&have),
                or_none(&want)
            ),
        ));
    } else {
        for (&(ty, i, t, res), &param) in members.iter().zip(&value_params) {
            let ParamType::Value(want) = kernel.params[param].ty else { continue };
            match t {
                ElemType::Numeric(n) if *n == block_numeric(want) => matched.push((ty, i, param)),
                _ => issues.push(issue(
                    format!("member {i} of `{}` is {t}, the IR declares {}", res.label(), param_text(kernel, param)),
                    format!(
                        "value parameters match block members in order; {} is read as {}",
                        param_text(kernel, param),
                        block_numeric(want)
                    ),
                )),
            }
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    Ok(Plan {
        shapes,
        flats,
        buffers: buffers.values().map(|aliases| aliases.iter().map(|r| r.id).collect()).collect(),
        blocks: blocks.iter().map(|r| r.id).collect(),
        members: matched,
    })
}

fn or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoding and encoding a module changes no word: the rewrite changes only what it means
    /// to (a module with nothing to rebind comes back as it was).
    #[test]
    fn the_flat_module_round_trips_word_for_word() {
        let bytes = include_bytes!("../../../../examples/kernels/scale.spv");
        let words = crate::external::reflect::words_of(bytes).expect("words");
        let module = Flat::load(&words).expect("loads");
        assert_eq!(module.assemble(), words);
        assert_eq!(modernize(&words).expect("reads"), None, "scale.spv has no old-style buffers");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Flat::load(&[]).is_err());
        assert!(Flat::load(&[0x0723_0203, 0x0001_0000, 0, 10, 0, 0x0005_0011]).is_err());
    }
}
