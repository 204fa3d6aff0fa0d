//! HLSL declarations matching a kernel signature (`cmdgraph abi --lang hlsl`), for either
//! interface: the argument block as a `ByteAddressBuffer` read at each field's offset, or
//! ordinary bindings (a structured buffer per `buf` parameter, the values in a push-constant
//! buffer). Written for glslang's HLSL front end (`glslangValidator -D -V`) and DXC's SPIR-V
//! back end (`dxc -spirv`), which both honour `[[vk::binding]]` and `[[vk::push_constant]]`.

use super::check::{issue, signature_layout, Issue};
use super::decls::{ident, param_type};
use cmdgraph_ir::bundle::ArgFieldKind;
use cmdgraph_ir::{Access, Kernel, ParamType, ScalarType, Type};
use std::fmt::Write;

/// The HLSL type of `t` as a buffer element or push-constant member.
fn hlsl_type(t: Type, what: &str) -> Result<String, Issue> {
    let scalar = match t.scalar {
        ScalarType::F32 => "float",
        ScalarType::I32 => "int",
        ScalarType::U32 => "uint",
        // glslang needs --hlsl-enable-16bit-types for these, dxc -enable-16bit-types (with
        // which both make the min16 types 16 bits wide; glslang has no `int16_t`).
        ScalarType::F16 => "half",
        ScalarType::I16 => "min16int",
        ScalarType::U16 => "min16uint",
        ScalarType::F64 => "double",
        ScalarType::I8 | ScalarType::U8 => {
            return Err(issue(
                format!("{what} is {t}: HLSL has no 8-bit integer type"),
                "write the kernel in GLSL (int8_t/uint8_t), or declare a ByteAddressBuffer and unpack the bytes",
            ))
        }
        ScalarType::I64 | ScalarType::U64 => {
            return Err(issue(
                format!("{what} is {t}: glslang's HLSL front end has no 64-bit integers"),
                "write the kernel in GLSL (GL_EXT_shader_explicit_arithmetic_types_int64)",
            ))
        }
        ScalarType::Bool => {
            return Err(issue(
                format!("{what} is {t}: HLSL has no 8-bit type for it"),
                "write the kernel in GLSL (uint8_t), or declare a ByteAddressBuffer and unpack the bytes",
            ))
        }
    };
    if t.lanes == 3 {
        // A structured buffer of float3 is 12 bytes apart; cmdgraph's 3-vectors are 16.
        return Err(issue(
            format!("{what} is {t}: an HLSL {scalar}3 is not laid out as cmdgraph's 3-vectors (16 bytes)"),
            format!("declare it as {scalar}4 and use .xyz"),
        ));
    }
    Ok(if t.lanes == 1 { scalar.to_string() } else { format!("{scalar}{}", t.lanes) })
}

/// Words of a field read from the `ByteAddressBuffer args` at `at`, as HLSL of type `t`.
fn load(t: Type, at: u32, what: &str) -> Result<(String, String), Issue> {
    let n = t.lanes;
    let raw = if n == 1 { format!("args.Load({at})") } else { format!("args.Load{n}({at})") };
    Ok(match t.scalar {
        ScalarType::F32 => (hlsl_type(t, what)?, format!("asfloat({raw})")),
        ScalarType::I32 => (hlsl_type(t, what)?, format!("asint({raw})")),
        ScalarType::U32 => (hlsl_type(t, what)?, raw),
        ScalarType::Bool if n == 1 => ("bool".into(), format!("{raw} != 0")),
        ScalarType::F16 if n == 1 => ("float".into(), format!("f16tof32({raw} & 0xffff)")),
        // 8- and 16-bit fields share a word (docs/abi.md): read the word, shift the field
        // out (sign-extending signed ones), widened to a 32-bit HLSL value.
        ScalarType::I8 | ScalarType::U8 | ScalarType::I16 | ScalarType::U16 if n == 1 => {
            let (word, shift, bits) = (at & !3, (at & 3) * 8, t.scalar.bits());
            let w = format!("args.Load({word})");
            if t.scalar.is_signed_integer() {
                ("int".into(), format!("asint({w} << {}) >> {}", 32 - bits - shift, 32 - bits))
            } else {
                ("uint".into(), format!("({w} >> {shift}) & {:#x}", (1u32 << bits) - 1))
            }
        }
        ScalarType::F64 if n == 1 => ("double".into(), format!("asdouble({raw}, args.Load({}))", at + 4)),
        _ => {
            return Err(issue(
                format!("{what} is {t}: no HLSL read of that field is printed"),
                "read its words with args.Load and convert them yourself, or write the kernel in GLSL",
            ))
        }
    })
}

fn buffer_decl(
    name: &str,
    elem: Type,
    access: Access,
    binding: u32,
    what: &str,
    out: &mut String,
) -> Result<(), Issue> {
    let ty = hlsl_type(elem, what)?;
    let kind = if access == Access::Read { "StructuredBuffer" } else { "RWStructuredBuffer" };
    let _ = writeln!(out, "[[vk::binding({binding}, 0)]] {kind}<{ty}> {name}; // {what}");
    Ok(())
}

fn header(kernel: &Kernel, interface: &str) -> String {
    let params: Vec<String> = kernel.params.iter().map(|p| format!("%{}: {}", p.name, param_type(p.ty))).collect();
    format!("// cmdgraph kernel @{}({}) {interface}\n", kernel.name, params.join(", "))
}

/// The HLSL declarations of `kernel`'s argument block and buffers (docs/abi.md, "External
/// SPIR-V kernels"): `args` at binding 0 with one function per field, buffer `i` at binding
/// `1 + i`.
pub fn hlsl(kernel: &Kernel) -> Result<String, Vec<Issue>> {
    let layout = signature_layout(kernel)?;
    let mut issues = Vec::new();
    let mut fields = String::new();
    let mut buffers = String::new();
    let mut first = None;
    let mut binding = 1;
    for (p, field) in kernel.params.iter().zip(&layout.fields) {
        let name = ident(&p.name);
        let what = format!("%{}: {}", p.name, param_type(p.ty));
        let at = field.offset;
        match (p.ty, &field.kind) {
            (ParamType::Value(t), _) => match load(t, at, &what) {
                Ok((ty, expr)) => {
                    let _ = writeln!(fields, "{ty} {name}() {{ return {expr}; }} // {what}");
                }
                Err(i) => issues.push(i),
            },
            (ParamType::Buffer { elem, access }, ArgFieldKind::Buffer { .. }) => {
                let _ = writeln!(
                    fields,
                    "uint {name}_offset() {{ return args.Load({at}); }} // element offset of the pointer in {name}"
                );
                let _ = writeln!(
                    fields,
                    "uint {name}_count() {{ return args.Load({}); }} // elements from the pointer on",
                    at + 4
                );
                if let Err(i) = buffer_decl(&name, elem, access, binding, &what, &mut buffers) {
                    issues.push(i);
                }
                first.get_or_insert(name);
                binding += 1;
            }
            _ => {}
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    let mut out = header(kernel, "(its argument block and buffers)");
    let _ = writeln!(out, "// (docs/abi.md, \"External SPIR-V kernels\"; block size {} bytes).", layout.block_size);
    out.push_str("[[vk::binding(0, 0)]] ByteAddressBuffer args;\n");
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        let _ = writeln!(out, "uint global_size_{axis}() {{ return args.Load({}); }}", 4 * i);
    }
    for (i, axis) in ["x", "y", "z"].iter().enumerate() {
        let _ = writeln!(out, "uint global_offset_{axis}() {{ return args.Load({}); }}", 12 + 4 * i);
    }
    out.push_str(&fields);
    if !buffers.is_empty() {
        out.push('\n');
        out.push_str(&buffers);
    }
    out.push_str(
        "\n// The work-group size is the shader's ([numthreads(64, 1, 1)]): every launch uses it.\n\
         // Work-items at or past the global size must do nothing: `if (id.x >= global_size_x()) return;`.\n",
    );
    if let Some(b) = first {
        let _ = writeln!(out, "// Element i of a buffer parameter is at its offset: `{b}[{b}_offset() + i]`.");
    }
    Ok(out)
}

/// The HLSL declarations of `kernel`'s signature with ordinary bindings (docs/abi.md,
/// "Ordinary bindings"): buffer `i` at binding `i`, the values in a push-constant buffer.
pub fn hlsl_bindings(kernel: &Kernel) -> Result<String, Vec<Issue>> {
    signature_layout(kernel)?;
    let mut issues = Vec::new();
    let mut members = String::new();
    let mut buffers = String::new();
    let mut binding = 0;
    for p in &kernel.params {
        let name = ident(&p.name);
        let what = format!("%{}: {}", p.name, param_type(p.ty));
        match p.ty {
            ParamType::Value(t) => {
                let ty = if t.scalar == ScalarType::Bool {
                    Ok(if t.lanes == 1 { "uint".to_string() } else { format!("uint{}", t.lanes) })
                } else {
                    hlsl_type(t, &what)
                };
                match ty {
                    Ok(ty) => {
                        let _ = writeln!(members, "    {ty} {name}; // {what}");
                    }
                    Err(i) => issues.push(i),
                }
            }
            ParamType::Buffer { elem, access } => {
                if let Err(i) = buffer_decl(&name, elem, access, binding, &what, &mut buffers) {
                    issues.push(i);
                }
                binding += 1;
            }
            ParamType::Local { .. } => {}
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    let mut out = header(kernel, "with ordinary bindings");
    out.push_str("// (`spirv \"FILE\" entry \"main\" bindings`; docs/abi.md, \"Ordinary bindings\").\n");
    if !buffers.is_empty() {
        out.push_str(&buffers);
    }
    if !members.is_empty() {
        out.push_str("\nstruct Push {\n");
        out.push_str(&members);
        out.push_str("};\n[[vk::push_constant]] ConstantBuffer<Push> push;\n");
    }
    out.push_str(
        "\n// The work-group size is the shader's ([numthreads(64, 1, 1)]): every launch uses it.\n\
         // A range launch is rounded up to whole work-groups: guard with a count of your own.\n",
    );
    out.push_str("// glslangValidator -D -V -e main -S comp --target-env vulkan1.1 compiles it (docs/kernels.md)");
    if kernel
        .params
        .iter()
        .any(|p| matches!(p.ty, ParamType::Value(t) | ParamType::Buffer { elem: t, .. } if t.scalar == ScalarType::F16))
    {
        out.push_str(", with --hlsl-enable-16bit-types for `half`");
    }
    out.push_str(".\n");
    Ok(out)
}
