//! GLSL declarations matching a kernel signature (`cmdgraph abi`): the argument block at
//! binding 0 with every field at the offset the external-kernel layout gives it (the same
//! [`ArgLayout`] `check` holds a module to, which follows `layout.rs`), and one storage
//! buffer per `buf` parameter at binding `1 + i`. Pasted into a compute shader and compiled
//! with glslang, the result passes `external::check` for that signature.

use super::check::{signature_layout, Issue};
use cmdgraph_ir::bundle::ArgFieldKind;
use cmdgraph_ir::{Access, Kernel, ParamType, ScalarType, Type};
use std::collections::BTreeSet;
use std::fmt::Write;

/// GLSL keywords and built-in type names a parameter name may collide with (an IR name such
/// as `%out` is common).
const RESERVED: &[&str] = &[
    "in",
    "out",
    "inout",
    "buffer",
    "uniform",
    "shared",
    "const",
    "readonly",
    "writeonly",
    "coherent",
    "volatile",
    "restrict",
    "layout",
    "struct",
    "if",
    "else",
    "for",
    "while",
    "do",
    "switch",
    "case",
    "default",
    "break",
    "continue",
    "return",
    "discard",
    "void",
    "bool",
    "int",
    "uint",
    "float",
    "double",
    "true",
    "false",
    "precise",
    "invariant",
    "flat",
    "smooth",
    "sample",
    "patch",
    "centroid",
    "main",
    "highp",
    "mediump",
    "lowp",
    "precision",
    "subroutine",
    "attribute",
    "varying",
    "filter",
    "common",
    "partition",
    "active",
    "input",
    "output",
    "union",
    "enum",
    "typedef",
    "template",
    "this",
    "goto",
    "inline",
    "noinline",
    "public",
    "static",
    "extern",
    "external",
    "interface",
    "long",
    "short",
    "half",
    "fixed",
    "unsigned",
    "superp",
    "sizeof",
    "cast",
    "namespace",
    "using",
];

/// A GLSL identifier for IR name `name`: other characters become `_`, and a name GLSL
/// reserves (a keyword, `gl_...`, one with `__` in it, which glslang refuses) or one
/// starting with a digit gets a `p_` prefix (`%out` is `p_out`).
pub(super) fn ident(name: &str) -> String {
    let s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    let reserved = s.is_empty()
        || s.starts_with(|c: char| c.is_ascii_digit() || c == '_')
        || s.starts_with("gl_")
        || s.contains("__")
        || s.ends_with('_')
        || RESERVED.contains(&s.as_str());
    if reserved {
        let parts: Vec<&str> = s.split('_').filter(|p| !p.is_empty()).collect();
        format!("p_{}", if parts.is_empty() { "param".to_string() } else { parts.join("_") })
    } else {
        s
    }
}

/// The GLSL type of `t` (`bool` as `in_block`'s choice: a `uint` in the argument block, a
/// `uint8_t` in memory), with the extension it needs.
fn glsl_type(t: Type, in_block: bool, ext: &mut BTreeSet<&'static str>) -> String {
    let (scalar, vector) = match t.scalar {
        ScalarType::F32 => ("float", "vec"),
        ScalarType::I32 => ("int", "ivec"),
        ScalarType::U32 => ("uint", "uvec"),
        ScalarType::Bool if in_block => ("uint", "uvec"),
        ScalarType::Bool => {
            ext.insert("GL_EXT_shader_explicit_arithmetic_types_int8");
            ext.insert("GL_EXT_shader_8bit_storage");
            ("uint8_t", "u8vec")
        }
        ScalarType::F16 => {
            ext.insert("GL_EXT_shader_explicit_arithmetic_types_float16");
            ext.insert("GL_EXT_shader_16bit_storage");
            ("float16_t", "f16vec")
        }
        ScalarType::I8 | ScalarType::U8 => {
            ext.insert("GL_EXT_shader_explicit_arithmetic_types_int8");
            ext.insert("GL_EXT_shader_8bit_storage");
            if t.scalar == ScalarType::I8 {
                ("int8_t", "i8vec")
            } else {
                ("uint8_t", "u8vec")
            }
        }
        ScalarType::I16 | ScalarType::U16 => {
            ext.insert("GL_EXT_shader_explicit_arithmetic_types_int16");
            ext.insert("GL_EXT_shader_16bit_storage");
            if t.scalar == ScalarType::I16 {
                ("int16_t", "i16vec")
            } else {
                ("uint16_t", "u16vec")
            }
        }
        // Core GLSL (4.00); the device needs `shaderFloat64`.
        ScalarType::F64 => ("double", "dvec"),
        ScalarType::I64 => {
            ext.insert("GL_EXT_shader_explicit_arithmetic_types_int64");
            ("int64_t", "i64vec")
        }
        ScalarType::U64 => {
            ext.insert("GL_EXT_shader_explicit_arithmetic_types_int64");
            ("uint64_t", "u64vec")
        }
    };
    if t.lanes == 1 {
        scalar.to_string()
    } else {
        format!("{vector}{}", t.lanes)
    }
}

/// The std430 storage buffer of a `buf<elem, access>` parameter at set 0, `binding`.
fn buffer_decl(
    name: &str,
    ir_name: &str,
    elem: Type,
    access: Access,
    binding: u32,
    ext: &mut BTreeSet<&'static str>,
) -> String {
    let ty = glsl_type(elem, false, ext);
    let qualifier = match access {
        Access::Read => "readonly ",
        Access::Write | Access::NoInit => "writeonly ",
        Access::ReadWrite => "",
    };
    format!(
        "layout(std430, set = 0, binding = {binding}) {qualifier}buffer Buf_{name} {{ {ty} {name}[]; }}; \
         // %{ir_name}: buf<{elem}, {access}>\n"
    )
}

/// The GLSL declarations for `kernel`'s signature, or why there are none (a `local<T>`
/// parameter, which an external kernel cannot have).
pub fn glsl(kernel: &Kernel) -> Result<String, Vec<Issue>> {
    let layout = signature_layout(kernel)?;
    let mut ext = BTreeSet::new();
    let mut block = String::new();
    let mut buffers = String::new();
    let mut uses = Vec::new();
    let mut binding = 1;
    for (p, field) in kernel.params.iter().zip(&layout.fields) {
        let name = ident(&p.name);
        let at = field.offset;
        match (p.ty, &field.kind) {
            (ParamType::Value(t), _) => {
                let ty = glsl_type(t, true, &mut ext);
                let note = if t.scalar == ScalarType::Bool { ", bool as 0 or 1" } else { "" };
                let _ = writeln!(block, "    layout(offset = {at}) {ty} {name}; // %{}: {t}{note}", p.name);
            }
            (ParamType::Buffer { elem, access }, ArgFieldKind::Buffer { .. }) => {
                let _ = writeln!(
                    block,
                    "    layout(offset = {at}) uint {name}_offset; // %{}: element offset of the pointer in {name}[]",
                    p.name
                );
                let _ = writeln!(
                    block,
                    "    layout(offset = {}) uint {name}_count; // elements from the pointer on",
                    at + 4
                );
                buffers.push_str(&buffer_decl(&name, &p.name, elem, access, binding, &mut ext));
                uses.push(name);
                binding += 1;
            }
            // `signature_layout` refuses `local<T>`; a mismatch of kind cannot happen.
            _ => {}
        }
    }
    let mut out = String::new();
    let params: Vec<String> = kernel.params.iter().map(|p| format!("%{}: {}", p.name, param_type(p.ty))).collect();
    let _ = writeln!(out, "// cmdgraph kernel @{}({}): its argument block and buffers", kernel.name, params.join(", "));
    let _ = writeln!(out, "// (docs/abi.md, \"External SPIR-V kernels\"; block size {} bytes).", layout.block_size);
    out.push_str("#version 450\n");
    for e in &ext {
        let _ = writeln!(out, "#extension {e} : require");
    }
    out.push_str(
        "// The work-group size is the shader's: every launch uses it (an nd_range launch must ask for it).\n\
         layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;\n\n",
    );
    out.push_str("layout(std430, set = 0, binding = 0) readonly buffer Args {\n");
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        let _ = writeln!(out, "    layout(offset = {}) uint global_size_{axis};", 4 * i);
    }
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        let _ = writeln!(out, "    layout(offset = {}) uint global_offset_{axis};", 12 + 4 * i);
    }
    out.push_str(&block);
    out.push_str("};\n");
    if !buffers.is_empty() {
        out.push('\n');
        out.push_str(&buffers);
    }
    out.push_str(
        "\n// Work-items at or past the global size must do nothing (a range is rounded up to whole\n\
         // work-groups): `uint i = gl_GlobalInvocationID.x; if (i >= global_size_x) return;`.\n",
    );
    if let Some(first) = uses.first() {
        let _ = writeln!(out, "// Element i of a buffer parameter is at its offset: `{first}[{first}_offset + i]`.");
    }
    Ok(out)
}

pub(super) fn param_type(t: ParamType) -> String {
    match t {
        ParamType::Value(t) => t.to_string(),
        ParamType::Buffer { elem, access } => format!("buf<{elem}, {access}>"),
        ParamType::Local { elem } => format!("local<{elem}>"),
    }
}

/// The GLSL declarations of `kernel`'s signature with ordinary bindings (what
/// `spirv "f.spv" entry "main" bindings` takes, docs/abi.md "Ordinary bindings"): one storage
/// buffer per `buf` parameter at set 0, bindings 0, 1, ... in parameter order, and the value
/// parameters in one push-constant block in parameter order.
pub fn glsl_bindings(kernel: &Kernel) -> Result<String, Vec<Issue>> {
    // The layout is not what the shader sees (the rewrite places the block), but a signature
    // without one (a `local<T>` parameter) has no ordinary bindings either.
    signature_layout(kernel)?;
    let mut ext = BTreeSet::new();
    let mut push = String::new();
    let mut buffers = String::new();
    let mut first_buffer = None;
    let mut binding = 0;
    for p in &kernel.params {
        let name = ident(&p.name);
        match p.ty {
            ParamType::Value(t) => {
                let ty = glsl_type(t, true, &mut ext);
                let note = if t.scalar == ScalarType::Bool { ", bool as 0 or 1" } else { "" };
                let _ = writeln!(push, "    {ty} {name}; // %{}: {t}{note}", p.name);
            }
            ParamType::Buffer { elem, access } => {
                buffers.push_str(&buffer_decl(&name, &p.name, elem, access, binding, &mut ext));
                first_buffer.get_or_insert(name);
                binding += 1;
            }
            ParamType::Local { .. } => {}
        }
    }
    let mut out = String::new();
    let params: Vec<String> = kernel.params.iter().map(|p| format!("%{}: {}", p.name, param_type(p.ty))).collect();
    let _ = writeln!(out, "// cmdgraph kernel @{}({}) with ordinary bindings", kernel.name, params.join(", "));
    out.push_str("// (`spirv \"FILE\" entry \"main\" bindings`; docs/abi.md, \"Ordinary bindings\").\n#version 450\n");
    for e in &ext {
        let _ = writeln!(out, "#extension {e} : require");
    }
    out.push_str(
        "// The work-group size is the shader's: every launch uses it (an nd_range launch must ask for it).\n\
         layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;\n",
    );
    if !buffers.is_empty() {
        out.push('\n');
        out.push_str(&buffers);
    }
    if !push.is_empty() {
        out.push_str("\nlayout(push_constant) uniform Push {\n");
        out.push_str(&push);
        out.push_str("} push;\n");
    }
    out.push_str("\n// A range launch is rounded up to whole work-groups: guard with a count of your own\n");
    match first_buffer {
        Some(b) => {
            let _ = writeln!(out, "// or the buffer's length: `if (i >= uint({b}.length())) return;`.");
        }
        None => out.push_str("// (a push-constant value).\n"),
    }
    Ok(out)
}
