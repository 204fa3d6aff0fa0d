//! Bounds on one launch (issue 18): its work-items (at most `MAX_LAUNCH_WORK_ITEMS`, 2^32)
//! at load and through range updates, and its kernel's work-group memory against the
//! bundle bound at load and the device's `maxComputeSharedMemorySize` before any pipeline.
//! Each refusal has its near miss.

mod common;

use cmdgraph_executor::load::{self, workgroup_bytes, MAX_WORKGROUP_MEMORY};
use cmdgraph_executor::{ContextOptions, Executor};
use cmdgraph_ir::bundle::{ArgField, ArgFieldKind, ArgLayout, Bundle, CompiledKernel};
use common::*;

/// `@g` with `%k` running `@ramp` over `launch`, updatable.
fn ramp_graph(launch: &str) -> String {
    format!(
        "{KERNELS_IR}
usm @x : f32[64]
graph @g properties(updatable) {{
  %k = kernel @ramp {launch} args(@x)
}}
"
    )
}

/// The refusal of `b` by the loader, both in memory and as bytes (the hostile path).
fn load_refusal(b: Bundle) -> String {
    let bytes = b.to_bytes().expect("serializes");
    let from_bytes = match load::load_bytes(&bytes) {
        Ok(_) => panic!("the bundle loaded from bytes"),
        Err(e) => e.to_string(),
    };
    match load::check(b) {
        Ok(_) => panic!("the bundle loaded"),
        Err(e) => assert_eq!(e.to_string(), from_bytes),
    }
    from_bytes
}

#[test]
fn a_bundle_with_a_launch_above_two_to_the_32_work_items_is_refused() {
    // 1.1e12 work-items: this ran for hours (until the run deadline) before.
    let e = load_refusal(bundle(&ramp_graph("range(16776960, 65535)"), vec![], vec![]));
    assert!(e.contains("16776960 x 65535 = 1099478073600 work-items"), "{e}");
    assert!(e.contains("above the bound of 4294967296"), "{e}");
    // Past 64 bits.
    let e = load_refusal(bundle(&ramp_graph("range(4294967295, 4294967295, 2)"), vec![], vec![]));
    assert!(e.contains("above the bound of 4294967296"), "{e}");
    // An alternative of a command group, not only a kernel node.
    let dcg = format!(
        "{KERNELS_IR}
usm @x : f32[64]
graph @g {{
  dcg %d active(0) {{
    kernel @ramp range(64) args(@x)
    kernel @ramp nd_range(global(65536, 65600), local(64, 1)) args(@x)
  }}
  %n = dynamic %d
}}
"
    );
    let e = load_refusal(bundle(&dcg, vec![], vec![]));
    assert!(e.contains("65536 x 65600"), "{e}");
    // Exactly 2^32 loads (it is not run here: it is 2^32 work-items).
    let b = bundle(&ramp_graph("range(65536, 65536)"), vec![], vec![]);
    load::load_bytes(&b.to_bytes().unwrap()).expect("2^32 work-items load");
}

/// A launch above the bound whose group counts stay within 65535 per dimension (the
/// smallest `maxComputeWorkGroupCount` Vulkan allows) at work-group size 64, so that only
/// the work bound refuses it.
const OVER: &str = "range(4194240, 65535)";

#[test]
fn a_range_update_above_the_bound_is_refused_naming_the_node() {
    let mut ex = executor(bundle(&ramp_graph("range(64)"), vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    let over = cmdgraph_ir::text::parse(&ramp_graph(OVER)).unwrap();
    let err = ex.update_nodes(e, &over, "g", &["%k"]).unwrap_err().to_string();
    assert!(err.contains("node %k"), "{err}");
    assert!(err.contains("274869518400 work-items, above the bound of 4294967296"), "{err}");
    let err = ex.update_graph(e, &over, "g").unwrap_err().to_string();
    assert!(err.contains("whole-graph update: node %k"), "{err}");
    assert!(err.contains("above the bound"), "{err}");
    // The refused updates changed nothing: the node still covers 64 items.
    ex.bind_as::<f32>("x", &[0.0; 64]).unwrap();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    let x: Vec<f32> = ex.read_as("x").unwrap();
    assert_eq!(x[63], 63.0);
    // Near miss: a smaller range updates and runs.
    let ok = cmdgraph_ir::text::parse(&ramp_graph("range(32)")).unwrap();
    ex.update_nodes(e, &ok, "g", &["%k"]).unwrap();
    ex.bind_as::<f32>("x", &[0.0; 64]).unwrap();
    ex.run(e).unwrap();
    ex.wait(e).unwrap();
    let x: Vec<f32> = ex.read_as("x").unwrap();
    assert_eq!((x[31], x[32]), (31.0, 0.0));
    no_messages(&ex);
}

/// A kernel with no parameters whose SPIR-V declares `floats` f32 of work-group memory
/// (each work-item stores to its element).
fn shared_kernel(floats: u32) -> CompiledKernel {
    let text = format!(
        r#"OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %lid %wg
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %lid BuiltIn LocalInvocationId
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%float = OpTypeFloat 32
%v3uint = OpTypeVector %uint 3
%ptr_in_v3 = OpTypePointer Input %v3uint
%lid = OpVariable %ptr_in_v3 Input
%n = OpConstant %uint {floats}
%arr = OpTypeArray %float %n
%ptr_wg = OpTypePointer Workgroup %arr
%ptr_wg_f = OpTypePointer Workgroup %float
%wg = OpVariable %ptr_wg Workgroup
%one = OpConstant %float 1
%main = OpFunction %void None %fn
%entry = OpLabel
%l = OpLoad %v3uint %lid
%i = OpCompositeExtract %uint %l 0
%p = OpAccessChain %ptr_wg_f %wg %i
OpStore %p %one
OpReturn
OpFunctionEnd
"#
    );
    CompiledKernel {
        kernel: "shared".into(),
        entry: "main".into(),
        workgroup_size: [64, 1, 1],
        items_per_invocation: 1,
        spirv: assemble(&text),
        layout: ArgLayout { block_size: 32, fields: vec![], slots: vec![] },
    }
}

/// The IR of [`shared_kernel`] (`floats` elements of work-group memory).
fn shared_ir(floats: u32) -> String {
    format!(
        "{KERNELS_IR}
kernel @shared() {{
  %t = local f32[{floats}]
  %i = local_id 0
  %one = const 1.0 : f32
  store %t[%i], %one
}}
"
    )
}

/// Variant 3: after `common::bundle`'s three.
fn shared_bundle(floats: u32) -> Bundle {
    bundle(&shared_ir(floats), vec![shared_kernel(floats)], vec![])
}

#[test]
fn work_group_memory_is_counted_from_the_spirv() {
    assert_eq!(workgroup_bytes(&shared_kernel(4096).spirv), Ok(16384));
    assert_eq!(workgroup_bytes(&shared_kernel(5).spirv), Ok(20));
    assert_eq!(workgroup_bytes(&compiled(&RAMP, 64).spirv), Ok(0));
}

#[test]
fn work_group_memory_above_the_bundle_bound_is_refused_at_load() {
    let floats = (MAX_WORKGROUP_MEMORY / 4) as u32;
    let e = load_refusal(shared_bundle(floats + 1));
    assert!(e.contains("kernel @shared"), "{e}");
    assert!(e.contains(&format!("{} bytes of work-group memory", MAX_WORKGROUP_MEMORY + 4)), "{e}");
    assert!(e.contains("(variant 3)"), "{e}");
    load::check(shared_bundle(floats)).expect("the bound itself loads");
}

#[test]
fn a_local_capacity_above_the_bundle_bound_is_refused_at_load() {
    let ir = format!(
        "{KERNELS_IR}
kernel @shared(%t: local<f32>) {{
  %i = local_id 0
  %one = const 1.0 : f32
  store %t[%i], %one
}}
"
    );
    let with_capacity = |capacity: u64| {
        let mut k = shared_kernel(16);
        k.layout = ArgLayout {
            block_size: 36,
            fields: vec![ArgField { offset: 32, kind: ArgFieldKind::Local { capacity, elem_bytes: 4 } }],
            slots: vec![],
        };
        bundle(&ir, vec![k], vec![])
    };
    let e = load_refusal(with_capacity(MAX_WORKGROUP_MEMORY / 4 + 1));
    assert!(e.contains("kernel @shared: field 0 (%t) claims 65537 work-group elements"), "{e}");
    assert!(e.contains("(variant 3)"), "{e}");
    let e = load_refusal(with_capacity(u64::MAX));
    assert!(e.contains("claims 18446744073709551615 work-group elements"), "{e}");
    load::check(with_capacity(MAX_WORKGROUP_MEMORY / 4)).expect("the bound itself loads");
}

#[test]
fn work_group_memory_above_the_device_limit_is_refused_before_any_pipeline() {
    let options = ContextOptions { validation: true, ..Default::default() };
    // 256 KiB loads (the bundle bound) but no device offers it.
    let loaded = load::check(shared_bundle((MAX_WORKGROUP_MEMORY / 4) as u32)).unwrap();
    let e = match Executor::new(loaded, &options) {
        Ok(_) => panic!("256 KiB of work-group memory reached pipeline creation"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("kernel @shared: 262144 bytes of work-group memory"), "{e}");
    assert!(e.contains("exceed the device's maxComputeSharedMemorySize"), "{e}");
    assert!(e.contains("(variant 3)"), "{e}");
    // Near miss: 16 KiB, the least every Vulkan device offers, makes its pipeline.
    let ex = Executor::new(load::check(shared_bundle(4096)).unwrap(), &options).expect("16 KiB fits any device");
    no_messages(&ex);
}
