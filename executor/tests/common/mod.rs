//! Test support: SPIR-V kernels following docs/abi.md, assembled with `spirv-as`, and
//! hand-built bundles around IR text the reference interpreter also runs.
#![allow(dead_code)]

pub mod app_vulkan;

use cmdgraph_executor::{ContextOptions, Executor, Loaded};
use cmdgraph_ir::bundle::{
    ArgField, ArgFieldKind, ArgLayout, Bundle, CompiledKernel, GraphPlan, MemorySlot, FORMAT_VERSION,
};
use std::process::Command;

/// An element-wise f32 kernel: `bufs` buffer parameters (the last is written), then an
/// optional f32 scalar `%s`. `compute` is SPIR-V assembly defining `%r` from `%v0..` (the
/// inputs at the work-item), `%fi` (the index as f32) and `%s`.
pub struct Elementwise {
    pub name: &'static str,
    pub bufs: usize,
    pub scalar: bool,
    pub compute: &'static str,
}

pub const RAMP: Elementwise =
    Elementwise { name: "ramp", bufs: 1, scalar: false, compute: "%r = OpCopyObject %float %fi" };
pub const SCALE: Elementwise =
    Elementwise { name: "scale", bufs: 2, scalar: true, compute: "%r = OpFMul %float %v0 %s" };
pub const ADD2: Elementwise =
    Elementwise { name: "add2", bufs: 3, scalar: false, compute: "%r = OpFAdd %float %v0 %v1" };

fn asm(k: &Elementwise, wg: u32) -> String {
    let mut vars = String::new();
    let mut decos = String::new();
    let mut iface = String::from("%gid %args");
    for j in 0..k.bufs {
        vars += &format!("%b{j} = OpVariable %ptr_fbuf StorageBuffer\n");
        decos += &format!("OpDecorate %b{j} DescriptorSet 0\nOpDecorate %b{j} Binding {}\n", j + 1);
        iface += &format!(" %b{j}");
    }
    let mut body = String::new();
    for j in 0..k.bufs {
        let w = (32 + 8 * j) / 4;
        body += &format!(
            "%po{j} = OpAccessChain %ptr_u32 %args %c0 %uint_{w}\n%o{j} = OpLoad %uint %po{j}\n%x{j} = OpIAdd %uint %o{j} %i\n"
        );
        if j + 1 < k.bufs {
            body += &format!("%pv{j} = OpAccessChain %ptr_f32 %b{j} %c0 %x{j}\n%v{j} = OpLoad %float %pv{j}\n");
        }
    }
    let mut consts = String::new();
    for w in 0..=(32 + 8 * k.bufs) / 4 {
        consts += &format!("%uint_{w} = OpConstant %uint {w}\n");
    }
    if k.scalar {
        let w = (32 + 8 * k.bufs) / 4;
        body += &format!(
            "%ps = OpAccessChain %ptr_u32 %args %c0 %uint_{w}\n%su = OpLoad %uint %ps\n%s = OpBitcast %float %su\n"
        );
    }
    let out = k.bufs - 1;
    format!(
        r#"OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" {iface}
OpExecutionMode %main LocalSize {wg} 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %arr_u32 ArrayStride 4
OpDecorate %arr_f32 ArrayStride 4
OpDecorate %Args Block
OpMemberDecorate %Args 0 Offset 0
OpMemberDecorate %Args 0 NonWritable
OpDecorate %FBuf Block
OpMemberDecorate %FBuf 0 Offset 0
OpDecorate %args DescriptorSet 0
OpDecorate %args Binding 0
{decos}%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%float = OpTypeFloat 32
%bool = OpTypeBool
%v3uint = OpTypeVector %uint 3
%ptr_in_v3 = OpTypePointer Input %v3uint
%gid = OpVariable %ptr_in_v3 Input
%arr_u32 = OpTypeRuntimeArray %uint
%arr_f32 = OpTypeRuntimeArray %float
%Args = OpTypeStruct %arr_u32
%FBuf = OpTypeStruct %arr_f32
%ptr_args = OpTypePointer StorageBuffer %Args
%ptr_fbuf = OpTypePointer StorageBuffer %FBuf
%ptr_u32 = OpTypePointer StorageBuffer %uint
%ptr_f32 = OpTypePointer StorageBuffer %float
%args = OpVariable %ptr_args StorageBuffer
{vars}%c0 = OpConstant %uint 0
{consts}%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3uint %gid
%i = OpCompositeExtract %uint %g 0
%psize = OpAccessChain %ptr_u32 %args %c0 %c0
%size = OpLoad %uint %psize
%inb = OpULessThan %bool %i %size
OpSelectionMerge %end None
OpBranchConditional %inb %body %end
%body = OpLabel
%fi = OpConvertUToF %float %i
{body}{compute}
%pout = OpAccessChain %ptr_f32 %b{out} %c0 %x{out}
OpStore %pout %r
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
"#,
        compute = k.compute
    )
}

/// Assembles SPIR-V text with `spirv-as` for Vulkan 1.3 and checks it with `spirv-val`.
pub fn assemble(text: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("k.spvasm");
    let bin = dir.path().join("k.spv");
    std::fs::write(&src, text).expect("write spvasm");
    let out = Command::new("spirv-as")
        .args(["--target-env", "vulkan1.3", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .expect("spirv-as (SPIRV-Tools) must be installed");
    assert!(out.status.success(), "spirv-as: {}\n{text}", String::from_utf8_lossy(&out.stderr));
    let val = Command::new("spirv-val").args(["--target-env", "vulkan1.3"]).arg(&bin).output().expect("spirv-val");
    assert!(val.status.success(), "spirv-val: {}\n{text}", String::from_utf8_lossy(&val.stderr));
    let bytes = std::fs::read(&bin).expect("read spv");
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The compiled kernel of an element-wise kernel at work-group size `wg`.
pub fn compiled(k: &Elementwise, wg: u32) -> CompiledKernel {
    let mut fields = Vec::new();
    let mut slots = Vec::new();
    for j in 0..k.bufs {
        fields
            .push(ArgField { offset: 32 + 8 * j as u32, kind: ArgFieldKind::Buffer { slot: j as u32, elem_bytes: 4 } });
        slots.push(MemorySlot::Param { param: j as u32, writes: j + 1 == k.bufs });
    }
    let mut block = 32 + 8 * k.bufs as u32;
    if k.scalar {
        fields.push(ArgField { offset: block, kind: ArgFieldKind::Value { bytes: 4 } });
        block += 4;
    }
    CompiledKernel {
        kernel: k.name.to_string(),
        entry: "main".into(),
        workgroup_size: [wg, 1, 1],
        items_per_invocation: 1,
        spirv: assemble(&asm(k, wg)),
        layout: ArgLayout { block_size: block, fields, slots },
    }
}

/// IR text of the three element-wise kernels (the interpreter's version of them).
pub const KERNELS_IR: &str = r#"
kernel @ramp(%x: buf<f32, write>) {
  %i = global_id 0
  %f = cast %i to f32
  store %x[%i], %f
}

kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}

kernel @add2(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, write>) {
  %i = global_id 0
  %va = load %a[%i]
  %vb = load %b[%i]
  %r = add %va, %vb
  store %c[%i], %r
}
"#;

/// A bundle of `ir` (which must contain [`KERNELS_IR`]) with the three kernels compiled at
/// work-group size 64 (and `extra` more variants), with the given plans.
pub fn bundle(ir: &str, extra: Vec<CompiledKernel>, graphs: Vec<GraphPlan>) -> Bundle {
    let mut kernels = vec![compiled(&ADD2, 64), compiled(&RAMP, 64), compiled(&SCALE, 64)];
    kernels.extend(extra);
    Bundle {
        format_version: FORMAT_VERSION,
        content_hash: String::new(),
        source: ir.to_string(),
        optimized: ir.to_string(),
        pipeline: String::new(),
        kernels,
        graphs,
    }
}

/// An executor on the default device with validation and synchronization validation on.
pub fn executor(b: Bundle) -> Executor {
    let loaded: Loaded = cmdgraph_executor::load::check(b).expect("bundle loads");
    Executor::new(loaded, &ContextOptions { validation: true, ..Default::default() })
        .expect("Vulkan device (llvmpipe) with validation layers")
}

/// Fails on any validation message.
pub fn no_messages(ex: &Executor) {
    let m = ex.context().take_messages();
    assert!(m.is_empty(), "validation messages:\n{}", m.join("\n"));
}

/// Full-precision pseudo-random floats in [-2, 2) (xorshift: reproducible, no crate; every
/// mantissa bit used, no short binary fractions).
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// The little-endian bytes of `v`, as a memory object holds them.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}
