//! The external-kernel contract (docs/abi.md, "External SPIR-V kernels"): a reflected
//! module against the IR signature of its kernel. An external kernel has codegen's
//! interface, so the executor binds and updates it like any compiled kernel; this file
//! checks that, and lays out its argument block the way `layout.rs` does.

use super::reflect::{
    ElemType, Numeric, Pointee, Reflection, Resource, SizeOperand, CAP_VARIABLE_POINTERS, MODEL_GLCOMPUTE,
    PUSH_CONSTANT, STORAGE_BUFFER,
};
use crate::layout::{value_size_align, HEADER_BYTES};
use crate::vectorize::{marked_items_per_invocation, ITEMS_PER_INVOCATION_MARKER};
use crate::MAX_WORKGROUP_INVOCATIONS;
use cmdgraph_ir::bundle::{ArgField, ArgFieldKind, ArgLayout, MemorySlot, MAX_ITEMS_PER_INVOCATION};
use cmdgraph_ir::{Kernel, ParamType, ScalarType, Type};

/// One broken rule: what is wrong, and a help line saying what the module has and what the
/// IR declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// What is wrong.
    pub message: String,
    /// What the module has, what the IR declares, what to change.
    pub help: String,
}

pub(super) fn issue(message: impl Into<String>, help: impl Into<String>) -> Issue {
    Issue { message: message.into(), help: help.into() }
}

/// What a checked module is packed with.
#[derive(Clone, Debug, PartialEq)]
pub struct Interface {
    /// Its `LocalSize`.
    pub workgroup_size: [u32; 3],
    /// Consecutive work-items one invocation handles: the module's items-per-invocation
    /// marker (codegen's own output, `compile --emit=spirv`, has one), 1 without one.
    pub items_per_invocation: u32,
    /// The argument layout (parameters only: an external kernel has no device globals).
    pub layout: ArgLayout,
}

/// The SPIR-V type a memory element of IR type `t` has (`bool` is a byte).
fn memory_numeric(t: Type) -> Numeric {
    let (float, width) = match t.scalar {
        ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => (false, 8),
        ScalarType::I16 | ScalarType::U16 => (false, 16),
        ScalarType::I32 | ScalarType::U32 => (false, 32),
        ScalarType::I64 | ScalarType::U64 => (false, 64),
        ScalarType::F16 => (true, 16),
        ScalarType::F32 => (true, 32),
        ScalarType::F64 => (true, 64),
    };
    Numeric { float, width, lanes: u32::from(t.lanes) }
}

/// The SPIR-V type an argument-block value of IR type `t` has (`bool` is a `u32`).
pub(super) fn block_numeric(t: Type) -> Numeric {
    match t.scalar {
        ScalarType::Bool => Numeric { float: false, width: 32, lanes: u32::from(t.lanes) },
        _ => memory_numeric(t),
    }
}

pub(super) fn param_text(kernel: &Kernel, i: usize) -> String {
    match kernel.params.get(i) {
        Some(p) => match p.ty {
            ParamType::Value(t) => format!("%{}: {t}", p.name),
            ParamType::Buffer { elem, access } => format!("%{}: buf<{elem}, {access}>", p.name),
            ParamType::Local { elem } => format!("%{}: local<{elem}>", p.name),
        },
        None => format!("parameter {i}"),
    }
}

/// Checks `r` against `kernel` with entry point `entry`; every broken rule is reported.
pub fn check(kernel: &Kernel, entry: &str, r: &Reflection) -> Result<Interface, Vec<Issue>> {
    let mut issues = Vec::new();
    let workgroup_size = entry_point(entry, r, &mut issues);
    for cap in &r.capabilities {
        if CAP_VARIABLE_POINTERS.contains(cap) {
            issues.push(issue(
                "the module declares a VariablePointers capability",
                "with variable pointers, which buffers a kernel writes cannot be read from the module; \
                 external kernels must use logical addressing without them",
            ));
        }
    }
    let layout = layout(kernel, &mut issues);
    // Buffer parameter of each binding 1 + i.
    let buffers: Vec<usize> = kernel
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.ty, ParamType::Buffer { .. }))
        .map(|(i, _)| i)
        .collect();
    // Several variables may alias one binding (our own codegen declares a scalar and a vec4
    // view of a buffer, which Vulkan allows): each is checked, and write access is judged on
    // all of them together.
    let mut groups: std::collections::BTreeMap<u32, Vec<&Resource>> = std::collections::BTreeMap::new();
    for res in &r.resources {
        if let Some(binding) = bound(res, buffers.len(), &mut issues) {
            groups.entry(binding).or_default().push(res);
        }
    }
    let seen: Vec<u32> = groups.keys().copied().collect();
    for (&binding, aliases) in &groups {
        let res = aliases[0];
        match binding.checked_sub(1).and_then(|s| buffers.get(s as usize)) {
            None if binding == 0 => {
                for res in aliases {
                    arg_block(kernel, &layout, res, &mut issues);
                }
            }
            Some(&param) => buffer(kernel, param, &format!("binding {binding}"), aliases, &mut issues),
            None => issues.push(issue(
                format!("binding {binding} (`{}`) has no parameter", res.label()),
                format!(
                    "the module has a storage buffer at binding {binding}; the IR declares {} buffer \
                     parameters (bindings 1 to {}) and binding 0 is the argument block",
                    buffers.len(),
                    buffers.len()
                ),
            )),
        }
    }
    for (s, &param) in buffers.iter().enumerate() {
        let binding = s as u32 + 1;
        if !seen.contains(&binding) {
            issues.push(issue(
                format!("the module has no binding {binding} for {}", param_text(kernel, param)),
                format!(
                    "the IR declares {} buffer parameters, bound at 1 to {}; the module declares bindings {}",
                    buffers.len(),
                    buffers.len(),
                    list(&sorted(&seen))
                ),
            ));
        }
    }
    let items_per_invocation = items_per_invocation(r, &mut issues);
    match workgroup_size {
        Some(workgroup_size) if issues.is_empty() => Ok(Interface { workgroup_size, items_per_invocation, layout }),
        _ => Err(issues),
    }
}

/// The work-items one invocation of the module handles, from its marker (1 without one):
/// the bundle must say the same, or the loader refuses it (docs/abi.md).
fn items_per_invocation(r: &Reflection, issues: &mut Vec<Issue>) -> u32 {
    let help = format!(
        "`OpModuleProcessed \"{ITEMS_PER_INVOCATION_MARKER}N\"` says that one invocation handles N consecutive \
         work-items of dimension 0 (codegen writes 1 or 4); N must be a power of two from 1 to \
         {MAX_ITEMS_PER_INVOCATION}, and a module that handles one work-item per invocation may leave it out"
    );
    match marked_items_per_invocation(&r.processed) {
        Ok(None) => 1,
        Ok(Some(n)) if n.is_power_of_two() && n <= MAX_ITEMS_PER_INVOCATION => n,
        Ok(Some(n)) => {
            issues.push(issue(format!("the module's items-per-invocation marker says {n}"), help));
            1
        }
        Err(message) => {
            issues.push(issue(format!("the module's items-per-invocation marker: {message}"), help));
            1
        }
    }
}

fn sorted(v: &[u32]) -> Vec<u32> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v
}

/// `1, 2, 4` (or `none`): a list for a message, not Rust's debug text.
fn list(v: &[u32]) -> String {
    if v.is_empty() {
        return "none".to_string();
    }
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// `(64, 1, 1)`, as `LocalSize` is written in SPIR-V assembly.
pub(crate) fn dims<T: std::fmt::Display>(size: &[T; 3]) -> String {
    format!("({}, {}, {})", size[0], size[1], size[2])
}

/// A decoration's value, or `none` when it is missing.
fn or_none(v: Option<u32>) -> String {
    v.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// The `LocalSize` of the GLCompute entry point named `entry`.
fn entry_point(entry: &str, r: &Reflection, issues: &mut Vec<Issue>) -> Option<[u32; 3]> {
    let Some(e) = r.entry_points.iter().find(|e| e.model == MODEL_GLCOMPUTE && e.name == entry) else {
        let have: Vec<String> = r
            .entry_points
            .iter()
            .map(|e| {
                format!("`{}` ({})", e.name, if e.model == MODEL_GLCOMPUTE { "GLCompute" } else { "not GLCompute" })
            })
            .collect();
        let have = if have.is_empty() { "no entry point".to_string() } else { have.join(", ") };
        issues.push(issue(
            format!("the module has no GLCompute entry point named `{entry}`"),
            format!("the module has {have}; the IR declares entry \"{entry}\""),
        ));
        return None;
    };
    let size = match (e.local_size, e.local_size_id) {
        (Some(size), _) => size,
        (None, Some(ids)) => local_size_id(entry, ids, issues)?,
        (None, None) => {
            issues.push(issue(
                format!("entry point `{entry}` has no LocalSize"),
                "declare OpExecutionMode %main LocalSize x y z (or OpExecutionModeId LocalSizeId of constants): \
                 it is the kernel's work-group size",
            ));
            return None;
        }
    };
    if let Some(builtin) = r.workgroup_size_builtin {
        if builtin != Some(size) {
            issues.push(issue(
                format!(
                    "the module's WorkgroupSize builtin ({}) overrides LocalSize {}",
                    builtin.as_ref().map_or_else(|| "not made of plain constants".to_string(), dims),
                    dims(&size)
                ),
                "the executor dispatches by LocalSize; remove the WorkgroupSize constant or make it equal",
            ));
        }
    }
    let total: u64 = size.iter().map(|&x| u64::from(x)).product();
    if size.contains(&0) || total > MAX_WORKGROUP_INVOCATIONS {
        issues.push(issue(
            format!("LocalSize {} is not a work-group size the executor runs", dims(&size)),
            format!("each dimension must be at least 1 and the product at most {MAX_WORKGROUP_INVOCATIONS}"),
        ));
    }
    Some(size)
}

/// The work-group size of `LocalSizeId`: each operand must be an `OpConstant` (glslang's
/// output for `--target-env vulkan1.3`). A specialization constant is refused: the
/// executor passes no specialization info, and a size the pipeline could be specialized
/// away from is not one the bundle can promise.
fn local_size_id(entry: &str, ids: [SizeOperand; 3], issues: &mut Vec<Issue>) -> Option<[u32; 3]> {
    let mut size = [0; 3];
    let mut ok = true;
    for (axis, (operand, out)) in ids.iter().zip(&mut size).enumerate() {
        match *operand {
            SizeOperand::Constant(v) => *out = v,
            SizeOperand::SpecConstant { id, default } => {
                ok = false;
                issues.push(issue(
                    format!(
                        "entry point `{entry}`'s LocalSizeId operand {axis} is %{id}, a specialization constant \
                         (default {default})"
                    ),
                    "the executor specializes nothing, so the work-group size must be a plain constant: \
                     in GLSL write `layout(local_size_x = N)`, not `local_size_x_id`",
                ));
            }
            SizeOperand::Other(id) => {
                ok = false;
                issues.push(issue(
                    format!("entry point `{entry}`'s LocalSizeId operand {axis} is %{id}, not an OpConstant"),
                    "each LocalSizeId operand must be an OpConstant of an integer type",
                ));
            }
        }
    }
    ok.then_some(size)
}

/// The binding of a resource that may be bound at all: set 0, a storage buffer, no push
/// constants.
fn bound(res: &Resource, buffers: usize, issues: &mut Vec<Issue>) -> Option<u32> {
    let name = res.label();
    if res.storage_class == PUSH_CONSTANT {
        issues.push(issue(
            format!("the module declares a push-constant block (`{name}`)"),
            "external kernels take values in the argument block at binding 0, as codegen's kernels do; \
             push constants are not supported",
        ));
        return None;
    }
    let Some(binding) = res.binding else {
        issues.push(issue(
            format!("resource `{name}` (storage class {}) has no Binding decoration", res.storage_class),
            "every resource of an external kernel is a storage buffer in set 0",
        ));
        return None;
    };
    if res.set != Some(0) {
        let set = res.set.map_or("no DescriptorSet".to_string(), |s| format!("set {s}"));
        issues.push(issue(
            format!("binding {binding} (`{name}`) is in {set}"),
            format!("the executor binds set 0 only: binding 0 the argument block, 1 to {buffers} the buffers"),
        ));
        return None;
    }
    if res.storage_class != STORAGE_BUFFER {
        issues.push(issue(
            format!("binding {binding} (`{name}`) is not a storage buffer (storage class {})", res.storage_class),
            "the executor binds storage buffers only (StorageBuffer storage class, a Block struct)",
        ));
        return None;
    }
    Some(binding)
}

/// A buffer parameter's binding (`binding`, as messages name it): a `Block` struct holding one
/// runtime array of the element.
pub(super) fn buffer(kernel: &Kernel, param: usize, binding: &str, aliases: &[&Resource], issues: &mut Vec<Issue>) {
    let Some(ParamType::Buffer { elem, access }) = kernel.params.get(param).map(|p| p.ty) else { return };
    let declared = param_text(kernel, param);
    for res in aliases {
        buffer_view(elem, &declared, binding, res, issues);
    }
    // Access is the union of the aliases: written if any is, read-only only if all are.
    let written = aliases.iter().find(|r| r.written);
    if let (false, Some(res)) = (access.writes(), written) {
        issues.push(issue(
            format!("the module writes {binding} (`{}`), a read-only parameter", res.label()),
            format!("the module stores to it (or passes it to a function); the IR declares {declared}"),
        ));
    }
    if access.writes() && aliases.iter().all(|r| r.non_writable) {
        issues.push(issue(
            format!("{binding} (`{}`) is NonWritable but the IR says the kernel writes it", aliases[0].label()),
            format!("the module declares it readonly; the IR declares {declared}"),
        ));
    }
}

/// One variable of a buffer binding: a Block struct of one runtime array of the element
/// type, or of a vector of it (a wider view of the same bytes, as codegen's vec4 loads use).
fn buffer_view(elem: Type, declared: &str, binding: &str, res: &Resource, issues: &mut Vec<Issue>) {
    let want = memory_numeric(elem);
    let have = match &res.pointee {
        Pointee::Struct { block: true, members } if members.len() == 1 => members.first().map(|m| &m.ty),
        _ => None,
    };
    let view_lanes = |e: &ElemType| match e {
        ElemType::Numeric(n) if n.float == want.float && n.width == want.width && n.lanes % want.lanes == 0 => {
            Some(n.lanes / want.lanes)
        }
        _ => None,
    };
    let array = match have {
        Some(ElemType::RuntimeArray(e, stride)) => Some((e, stride, view_lanes(e))),
        _ => None,
    };
    match array {
        Some((e, stride, Some(k))) => {
            if *stride != Some(k * elem.size() as u32) {
                issues.push(issue(
                    format!("{binding} (`{}`) has ArrayStride {}", res.label(), or_none(*stride)),
                    format!("the IR declares {declared}: elements of {e} are {} bytes apart", k * elem.size() as u32),
                ));
            }
        }
        Some((e, _, None)) => issues.push(issue(
            format!("{binding} (`{}`) holds {e}, the IR declares {elem}", res.label()),
            format!("the module has a runtime array of {e}; the IR declares {declared} (elements of {want})"),
        )),
        None => {
            let shown = match &res.pointee {
                Pointee::Struct { block, members } => {
                    format!("a {}struct of {} members", if *block { "Block " } else { "non-Block " }, members.len())
                }
                Pointee::Other(s) => s.clone(),
            };
            issues.push(issue(
                format!("{binding} (`{}`) is not a Block struct of one runtime array", res.label()),
                format!("the module has {shown}; the IR declares {declared}"),
            ));
        }
    }
}

/// Binding 0: the argument block, read-only, as raw words or as members at field offsets.
fn arg_block(kernel: &Kernel, layout: &ArgLayout, res: &Resource, issues: &mut Vec<Issue>) {
    let Pointee::Struct { block: true, members } = &res.pointee else {
        issues.push(issue(
            format!("binding 0 (`{}`) is not a Block struct", res.label()),
            "binding 0 is the argument block: a Block struct of 32-bit words (docs/abi.md)",
        ));
        return;
    };
    if res.written || !res.non_writable {
        issues.push(issue(
            format!("binding 0 (`{}`), the argument block, is not read-only", res.label()),
            "the executor owns the argument block; declare it NonWritable (GLSL `readonly`) and never store to it",
        ));
    }
    for (i, m) in members.iter().enumerate() {
        if let Err(why) = member_fits(kernel, layout, m.offset, &m.ty) {
            issues.push(issue(
                format!("argument-block member {i} ({} at offset {}) {why}", m.ty, or_none(m.offset)),
                format!("the IR's argument block: {}", describe(kernel, layout)),
            ));
        }
    }
}

/// Whether a member of the argument-block struct reads a field as the layout puts it.
fn member_fits(kernel: &Kernel, layout: &ArgLayout, offset: Option<u32>, ty: &ElemType) -> Result<(), String> {
    // The block as raw 32-bit words, integer or float (codegen reads float fields through a
    // float view of the same words).
    let word = |e: &ElemType| matches!(e, ElemType::Numeric(Numeric { width: 32, lanes: 1, .. }));
    let Some(offset) = offset else { return Err("has no Offset decoration".into()) };
    let n = match ty {
        ElemType::RuntimeArray(e, stride) if word(e) && *stride == Some(4) => return Ok(()),
        // A struct at offset 0 (the rewrite of a naga-style uniform block of one struct):
        // each of its members reads a field.
        ElemType::Struct(_, members) if offset == 0 => {
            return members.iter().try_for_each(|m| member_fits(kernel, layout, m.offset, &m.ty));
        }
        ElemType::Numeric(n) => *n,
        _ => return Err("is neither a number, a vector nor a runtime array of 32-bit words".into()),
    };
    let end = offset.saturating_add(n.bytes());
    if end > layout.block_size {
        return Err(format!("ends past the {}-byte block", layout.block_size));
    }
    if end <= HEADER_BYTES {
        return if !n.float && n.width == 32 { Ok(()) } else { Err("is in the header, which is 32-bit words".into()) };
    }
    for (field, p) in layout.fields.iter().zip(&kernel.params) {
        match (&field.kind, p.ty) {
            (ArgFieldKind::Value { .. }, ParamType::Value(t)) if offset == field.offset => {
                return if n == block_numeric(t) { Ok(()) } else { Err(format!("reads %{}: {t} as {n}", p.name)) };
            }
            (ArgFieldKind::Buffer { .. }, _) if offset == field.offset || offset == field.offset + 4 => {
                let ok = !n.float && n.width == 32 && (n.lanes == 1 || (n.lanes == 2 && offset == field.offset));
                return if ok { Ok(()) } else { Err(format!("reads the pointer words of %{} as {n}", p.name)) };
            }
            _ => {}
        }
    }
    Err("starts at no field".into())
}

fn describe(kernel: &Kernel, layout: &ArgLayout) -> String {
    let mut parts = vec!["header words 0 to 7 (global size, global offset, reserved)".to_string()];
    for (i, field) in layout.fields.iter().enumerate() {
        let what = match field.kind {
            ArgFieldKind::Buffer { .. } => "element offset, element count (u32, u32)",
            _ => "value",
        };
        parts.push(format!("{} at byte {}: {what}", param_text(kernel, i), field.offset));
    }
    parts.join("; ")
}

/// The argument layout of an external kernel's signature, or why it has none (`local<T>`
/// parameters): what [`check`] holds a module to, and what `decls` prints.
pub(crate) fn signature_layout(kernel: &Kernel) -> Result<ArgLayout, Vec<Issue>> {
    let mut issues = Vec::new();
    let layout = layout(kernel, &mut issues);
    if issues.is_empty() {
        Ok(layout)
    } else {
        Err(issues)
    }
}

/// The argument layout of an external kernel: codegen's rules (layout.rs) with every
/// parameter known from its signature alone.
fn layout(kernel: &Kernel, issues: &mut Vec<Issue>) -> ArgLayout {
    let mut offset = HEADER_BYTES;
    let mut fields = Vec::new();
    let mut slots = Vec::new();
    for (i, p) in kernel.params.iter().enumerate() {
        let (size, align, kind) = match p.ty {
            ParamType::Value(t) => {
                let (size, align) = value_size_align(t);
                (size, align, ArgFieldKind::Value { bytes: size })
            }
            ParamType::Buffer { elem, access } => {
                let slot = slots.len() as u32;
                slots.push(MemorySlot::Param { param: i as u32, writes: access.writes() });
                (8, 4, ArgFieldKind::Buffer { slot, elem_bytes: elem.size() as u32 })
            }
            ParamType::Local { .. } => {
                issues.push(issue(
                    format!("{} is work-group memory", param_text(kernel, i)),
                    "an external kernel declares its own Workgroup variables; `local<T>` parameters \
                     are sized by codegen and are not supported for external SPIR-V",
                ));
                (4, 4, ArgFieldKind::Local { capacity: 0, elem_bytes: 0 })
            }
        };
        offset = offset.div_ceil(align.max(1)) * align.max(1);
        fields.push(ArgField { offset, kind });
        offset = offset.saturating_add(size);
    }
    ArgLayout { block_size: offset.div_ceil(16) * 16, fields, slots }
}
