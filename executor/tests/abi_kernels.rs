//! ABI corners against the interpreter: a vectorized kernel (items_per_invocation = 4,
//! dispatch counted with an atomic in a device global), the nd-range global offset, and
//! pool plans that would make a memcpy overlap (refused by the loader).

mod common;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::bundle::{
    ArgField, ArgFieldKind, ArgLayout, CompiledKernel, GraphPlan, LaunchVariant, MemorySlot, PoolPlan,
};
use common::*;

/// Types and constants shared by the kernels below; `%b0` is an f32 buffer at binding 1,
/// `%cnt` a u32 buffer at binding 2 (when `counter`).
fn prelude(wg: u32, counter: bool) -> String {
    let (iface, deco, var) = if counter {
        (
            " %cnt",
            "OpDecorate %CBuf Block\nOpMemberDecorate %CBuf 0 Offset 0\nOpDecorate %cnt DescriptorSet 0\nOpDecorate %cnt Binding 2\n",
            "%CBuf = OpTypeStruct %arr_u32c\n%ptr_cbuf = OpTypePointer StorageBuffer %CBuf\n%cnt = OpVariable %ptr_cbuf StorageBuffer\n",
        )
    } else {
        ("", "", "")
    };
    let arr_c = if counter { "%arr_u32c = OpTypeRuntimeArray %uint\nOpDecorate %arr_u32c ArrayStride 4\n" } else { "" };
    let (arr_c_type, arr_c_deco) = match arr_c.split_once('\n') {
        Some((t, d)) => (format!("{t}\n"), d.to_string()),
        None => (String::new(), String::new()),
    };
    format!(
        r#"OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid %args %b0{iface}
OpExecutionMode %main LocalSize {wg} 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %arr_u32 ArrayStride 4
OpDecorate %arr_f32 ArrayStride 4
{arr_c_deco}OpDecorate %Args Block
OpMemberDecorate %Args 0 Offset 0
OpMemberDecorate %Args 0 NonWritable
OpDecorate %FBuf Block
OpMemberDecorate %FBuf 0 Offset 0
OpDecorate %args DescriptorSet 0
OpDecorate %args Binding 0
OpDecorate %b0 DescriptorSet 0
OpDecorate %b0 Binding 1
{deco}%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%float = OpTypeFloat 32
%bool = OpTypeBool
%v3uint = OpTypeVector %uint 3
%ptr_in_v3 = OpTypePointer Input %v3uint
%gid = OpVariable %ptr_in_v3 Input
%arr_u32 = OpTypeRuntimeArray %uint
%arr_f32 = OpTypeRuntimeArray %float
{arr_c_type}%Args = OpTypeStruct %arr_u32
%FBuf = OpTypeStruct %arr_f32
%ptr_args = OpTypePointer StorageBuffer %Args
%ptr_fbuf = OpTypePointer StorageBuffer %FBuf
%ptr_u32 = OpTypePointer StorageBuffer %uint
%ptr_f32 = OpTypePointer StorageBuffer %float
%args = OpVariable %ptr_args StorageBuffer
%b0 = OpVariable %ptr_fbuf StorageBuffer
{var}%c0 = OpConstant %uint 0
%uint_1 = OpConstant %uint 1
%uint_2 = OpConstant %uint 2
%uint_3 = OpConstant %uint 3
%uint_4 = OpConstant %uint 4
%uint_8 = OpConstant %uint 8
%main = OpFunction %void None %fn
%entry = OpLabel
%g = OpLoad %v3uint %gid
%gx = OpCompositeExtract %uint %g 0
%psize = OpAccessChain %ptr_u32 %args %c0 %c0
%size = OpLoad %uint %psize
%po = OpAccessChain %ptr_u32 %args %c0 %uint_8
%o = OpLoad %uint %po
"#
    )
}

/// `ramp` vectorized by 4: invocation `g` writes items `4g .. 4g+3` (each bounds-checked)
/// and counts itself in the device global `@count`. It says so as codegen's kernels do, with
/// the marker the loader compares with `items_per_invocation` (docs/abi.md).
fn ramp4(wg: u32) -> CompiledKernel {
    let marker = "OpModuleProcessed \"cmdgraph items_per_invocation 4\"\nOpDecorate %gid";
    let mut body = prelude(wg, true).replacen("OpDecorate %gid", marker, 1);
    body += "%pc = OpAccessChain %ptr_u32 %cnt %c0 %c0\n%old = OpAtomicIAdd %uint %pc %uint_1 %c0 %uint_1\n";
    body += "%base = OpIMul %uint %gx %uint_4\n";
    let lanes = ["%c0", "%uint_1", "%uint_2", "%uint_3"];
    for (l, c) in lanes.iter().enumerate() {
        body += &format!(
            "%i{l} = OpIAdd %uint %base {c}\n%in{l} = OpULessThan %bool %i{l} %size\nOpSelectionMerge %m{l} None\nOpBranchConditional %in{l} %t{l} %m{l}\n%t{l} = OpLabel\n%x{l} = OpIAdd %uint %o %i{l}\n%f{l} = OpConvertUToF %float %i{l}\n%p{l} = OpAccessChain %ptr_f32 %b0 %c0 %x{l}\nOpStore %p{l} %f{l}\nOpBranch %m{l}\n%m{l} = OpLabel\n"
        );
    }
    body += "OpReturn\nOpFunctionEnd\n";
    CompiledKernel {
        kernel: "ramp".into(),
        entry: "main".into(),
        workgroup_size: [wg, 1, 1],
        items_per_invocation: 4,
        spirv: assemble(&body),
        layout: ArgLayout {
            block_size: 40,
            fields: vec![ArgField { offset: 32, kind: ArgFieldKind::Buffer { slot: 0, elem_bytes: 4 } }],
            slots: vec![
                MemorySlot::Param { param: 0, writes: true },
                MemorySlot::DeviceGlobal { name: "count".into(), writes: true },
            ],
        },
    }
}

/// `ramp` honouring the nd-range global offset (header word 3): item `gx + offset`.
fn ramp_offset(wg: u32) -> CompiledKernel {
    let mut body = prelude(wg, false);
    body += "%poff = OpAccessChain %ptr_u32 %args %c0 %uint_3\n%off = OpLoad %uint %poff\n%in = OpULessThan %bool %gx %size\nOpSelectionMerge %end None\nOpBranchConditional %in %t %end\n%t = OpLabel\n%i = OpIAdd %uint %gx %off\n%x = OpIAdd %uint %o %i\n%f = OpConvertUToF %float %i\n%p = OpAccessChain %ptr_f32 %b0 %c0 %x\nOpStore %p %f\nOpBranch %end\n%end = OpLabel\nOpReturn\nOpFunctionEnd\n";
    let mut k = compiled(&RAMP, wg);
    k.spirv = assemble(&body);
    k
}

fn interp_out(ir: &str, name: &str) -> Vec<f32> {
    let m = cmdgraph_ir::text::parse(ir).unwrap();
    let mut it = Interpreter::new(&m).unwrap();
    let e = it.finalize("g").unwrap();
    it.run(e).unwrap();
    it.read_as(name).unwrap()
}

#[test]
fn launch_table_picks_the_vectorized_variant_which_dispatches_a_quarter() {
    let ir = format!(
        "{KERNELS_IR}\nusm @x : f32[1000]\ndevice_global @count : u32[1]\ngraph @g {{\n  %k = kernel @ramp range(1000) args(@x)\n}}\n"
    );
    // The plain `ramp` stays the first variant; the bundle's launch table (codegen's choice
    // for a range launch) names the vectorized one, which counts its invocations.
    let mut b = bundle(&ir, vec![ramp4(64)], vec![]);
    let index = b.kernels.len() as u32 - 1;
    b.graphs.push(GraphPlan {
        name: "g".into(),
        segments: vec![],
        memory: PoolPlan::default(),
        origins: vec![],
        launches: vec![LaunchVariant { node: "k".into(), alternative: None, kernel: index }],
    });
    let mut ex = executor(b);
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    assert_eq!(ex.read_as::<f32>("x").unwrap(), interp_out(&ir, "x"));
    let count = ex.read_device_global("count", 0).unwrap();
    // ceil(1000 / (64 · 4)) = 4 groups of 64 invocations.
    assert_eq!(u32::from_le_bytes([count[0], count[1], count[2], count[3]]), 256);
    no_messages(&ex);
}

/// Issue 28: the kernel's code handles as many work-items per invocation as it was compiled
/// for, and the executor dispatches by the bundle's figure, so a bundle saying 64 for a
/// variant compiled for 4 dispatched a sixteenth of the invocations and left most of `@x`
/// unwritten (exit 0, validation quiet). The loader compares the figure with the module's
/// marker and refuses a disagreement, in either direction.
#[test]
fn items_per_invocation_other_than_the_kernels_is_refused() {
    let ir = format!(
        "{KERNELS_IR}\nusm @x : f32[1000]\ndevice_global @count : u32[1]\ngraph @g {{\n  %k = kernel @ramp range(1000) args(@x)\n}}\n"
    );
    let refusal = |b: cmdgraph_ir::bundle::Bundle| match cmdgraph_executor::load::check(b) {
        Ok(_) => panic!("a bundle disagreeing with its kernel's items per invocation loaded"),
        Err(e) => e.to_string(),
    };
    // The variant compiled for 4, the bundle saying 64 (and 1, which would only waste
    // invocations, but is no more what the kernel was compiled for).
    for items in [64, 1] {
        let mut k = ramp4(64);
        k.items_per_invocation = items;
        let e = refusal(bundle(&ir, vec![k], vec![]));
        for p in [
            "kernel @ramp: invalid SPIR-V: the module was compiled for 4 work-items per invocation",
            &format!("the bundle's items_per_invocation is {items}"),
            "(variant 3)",
        ] {
            assert!(e.contains(p), "`{p}` not in: {e}");
        }
    }
    // A kernel without the marker handles one work-item per invocation.
    let mut b = bundle(&ir, vec![], vec![]);
    b.kernels[1].items_per_invocation = 4;
    let e = refusal(b);
    assert!(e.contains("has no items-per-invocation marker, so each invocation handles 1 work-item"), "{e}");
    assert!(e.contains("the bundle's items_per_invocation is 4; dispatching by the bundle would compute wrong"), "{e}");
    // Two markers, or one that is not a number, tell nothing.
    let marker = |text: &str| {
        let mut k = ramp4(64);
        let w = &mut k.spirv;
        let at = w.iter().position(|&x| x & 0xffff == 330).expect("ramp4 has its marker");
        let mut bytes = text.as_bytes().to_vec();
        bytes.resize(text.len() / 4 * 4 + 4, 0);
        let mut inst = vec![((bytes.len() as u32 / 4 + 1) << 16) | 330];
        inst.extend(bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        w.splice(at..at, inst);
        bundle(&ir, vec![k], vec![])
    };
    let e = refusal(marker("cmdgraph items_per_invocation 4"));
    assert!(e.contains("two items-per-invocation markers"), "{e}");
    let mut b = marker("cmdgraph items_per_invocation four");
    // The original marker after the new one: remove it so that only the bad one is left.
    let w = &mut b.kernels[3].spirv;
    let first = w.iter().position(|&x| x & 0xffff == 330).unwrap();
    let second = first + (w[first] >> 16) as usize;
    w.drain(second..second + (w[second] >> 16) as usize);
    let e = refusal(b);
    assert!(e.contains("reads \"cmdgraph items_per_invocation four\", not `cmdgraph items_per_invocation N`"), "{e}");
}

#[test]
fn nd_range_global_offset_reaches_the_kernel() {
    let ir = format!(
        "{KERNELS_IR}\nusm @x : f32[128]\ngraph @g {{\n  %k = kernel @ramp nd_range(global(64), local(8), offset(16)) args(@x)\n}}\n"
    );
    let mut b = bundle(&ir, vec![], vec![]);
    b.kernels.push(ramp_offset(8));
    let mut ex = executor(b);
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    let got: Vec<f32> = ex.read_as("x").unwrap();
    assert_eq!(got, interp_out(&ir, "x"));
    assert_eq!((got[15], got[16], got[79], got[80]), (0.0, 16.0, 79.0, 0.0));
    no_messages(&ex);
}

/// The verifier forbids overlapping copies within one memory object (E0231); a pool plan
/// that puts two live allocations on shared bytes would make a copy between them overlap in
/// pool coordinates (the interpreter runs that as memmove). The loader refuses such a plan
/// (issue 18: two live allocations sharing bytes compute wrong results silently), so it
/// never reaches a copy.
#[test]
fn pool_plans_overlapping_live_allocations_are_refused() {
    let ir = format!(
        "{KERNELS_IR}
usm @y : f32[64]
graph @g {{
  %t1 = async_malloc f32[64] device
  %t2 = async_malloc f32[64] device
  %f = kernel @ramp range(64) args(%t1) after(%t1)
  %c = memcpy %t2, %t1, 256 after(%f, %t2)
  %out = memcpy @y, %t2, 256 after(%c)
  %free1 = async_free %t1 after(%out)
  %free2 = async_free %t2 after(%out)
}}
"
    );
    for shift in [16u64, 6, 0] {
        // %t2 starts `shift` bytes into %t1 (0: the same bytes).
        let plan = GraphPlan {
            name: "g".into(),
            segments: vec![],
            memory: PoolPlan {
                size: 512,
                alignment: 2,
                offsets: vec![("t1".into(), 0), ("t2".into(), shift)],
                report: String::new(),
            },
            origins: vec![],
            launches: vec![],
        };
        let err = cmdgraph_executor::load::check(bundle(&ir, vec![], vec![plan])).unwrap_err().to_string();
        assert!(err.contains("%t1 [0, 256)") && err.contains("both can be live at once"), "shift {shift}: {err}");
    }
}
