//! A kernel whose SPIR-V needs a feature the device did not enable is refused, naming the
//! kernel, the capability and the feature, before any Vulkan call on the module; the same
//! bundle without it runs (llvmpipe, validation on).

#![allow(unsafe_code)]

mod common;

use cmdgraph_executor::{load, ExecError, Executor};
use cmdgraph_ir::bundle::Bundle;
use common::*;

const IR_TAIL: &str = "usm @x : f32[16]\ngraph @g {\n  %k = kernel @ramp range(16) args(@x)\n}\n";

fn ramp_bundle() -> Bundle {
    bundle(&format!("{KERNELS_IR}\n{IR_TAIL}"), vec![], vec![])
}

/// Declares one more capability in kernel `name`'s module, right after its first
/// `OpCapability` (words 5 and 6), as a hand edit of a compiled module would.
fn add_capability(b: &mut Bundle, name: &str, cap: u32) {
    let k = b.kernels.iter_mut().find(|k| k.kernel == name).expect("kernel");
    assert_eq!(k.spirv[5], (2 << 16) | 17, "the module starts with OpCapability");
    k.spirv.splice(7..7, [(2 << 16) | 17, cap]);
}

/// Declares SPIR-V extension `name` in kernel `kernel`'s module, after its capabilities
/// (where the layout of a module puts `OpExtension`): a capability that an extension
/// introduces is valid SPIR-V only with it, and the loader validates modules.
fn add_extension(b: &mut Bundle, kernel: &str, name: &str) {
    let k = b.kernels.iter_mut().find(|k| k.kernel == kernel).expect("kernel");
    let mut at = 5;
    while k.spirv[at] & 0xffff == 17 {
        at += (k.spirv[at] >> 16) as usize;
    }
    let mut bytes = name.as_bytes().to_vec();
    bytes.resize(name.len() / 4 * 4 + 4, 0);
    let literal: Vec<u32> = bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut inst = vec![((1 + literal.len() as u32) << 16) | 10];
    inst.extend(literal);
    k.spirv.splice(at..at, inst);
}

fn new_executor(b: Bundle) -> Result<Executor, ExecError> {
    let loaded = load::check(b).expect("the edited module is still well-formed");
    Executor::new(loaded, &cmdgraph_executor::ContextOptions { validation: true, ..Default::default() })
}

#[test]
fn a_capability_the_device_lacks_is_refused_with_the_kernel_and_feature() {
    // AtomicFloat64AddEXT: the executor never enables shader{Buffer,Shared}Float64AtomicAdd.
    let mut b = ramp_bundle();
    add_capability(&mut b, "ramp", 6034);
    add_extension(&mut b, "ramp", "SPV_EXT_shader_atomic_float_add");
    let err = new_executor(b).err().expect("refused");
    let m = err.to_string();
    assert!(matches!(err, ExecError::Invalid(_)), "{err:?}");
    for part in ["@ramp", "entry `main`", "AtomicFloat64AddEXT", "shaderBufferFloat64AtomicAdd"] {
        assert!(m.contains(part), "{m} lacks {part}");
    }
}

#[test]
fn an_unknown_capability_is_refused() {
    // VariablePointers is valid SPIR-V but not something this executor enables.
    let mut b = ramp_bundle();
    add_capability(&mut b, "scale", 4442);
    let m = new_executor(b).err().expect("refused").to_string();
    assert!(m.contains("@scale") && m.contains("capability 4442") && m.contains("unknown"), "{m}");
}

#[test]
fn a_capability_the_device_enabled_is_accepted_and_the_bundle_runs() {
    // Int8 is enabled on llvmpipe (and codegen emits it for `bool` memory): the edited
    // module is created and runs, validation silent.
    let mut b = ramp_bundle();
    add_capability(&mut b, "ramp", 39);
    let mut ex = new_executor(b).expect("Int8 is enabled on this device");
    assert!(
        ex.context().enabled_features().has(cmdgraph_executor::features::Feature::ShaderInt8),
        "{:?}",
        ex.context().enabled_features()
    );
    let e = ex.finalize("g").expect("finalize");
    ex.run(e).expect("run");
    let x: Vec<f32> = ex.read_as("x").expect("read");
    assert_eq!(x, (0..16).map(|i| i as f32).collect::<Vec<_>>());
    no_messages(&ex);
}

#[test]
fn a_subgroup_operation_the_device_lacks_is_refused_naming_it() {
    use cmdgraph_executor::features::{check_kernel, EnabledFeatures, Feature};
    // GroupNonUniform (61) and GroupNonUniformArithmetic (63), as a kernel with a subgroup
    // reduction declares them, checked against a device whose compute stage supports every
    // subgroup operation but arithmetic.
    let mut b = ramp_bundle();
    add_capability(&mut b, "ramp", 63);
    add_capability(&mut b, "ramp", 61);
    let k = b.kernels.iter().find(|k| k.kernel == "ramp").expect("kernel");
    let subgroups = [Feature::SubgroupBasic, Feature::SubgroupVote, Feature::SubgroupBallot, Feature::SubgroupShuffle];
    let m = check_kernel(k, &EnabledFeatures::new(subgroups)).expect_err("refused").to_string();
    for part in ["@ramp", "GroupNonUniformArithmetic", "VK_SUBGROUP_FEATURE_ARITHMETIC_BIT", "compute stage"] {
        assert!(m.contains(part), "{m} lacks {part}");
    }
    let all = EnabledFeatures::new(subgroups.into_iter().chain([Feature::SubgroupArithmetic]));
    assert_eq!(check_kernel(k, &all).map_err(|e| e.to_string()), Ok(()));
    // llvmpipe has every subgroup operation in compute, in subgroups of 8: the same module
    // is created there (validation silent).
    let k = k.clone();
    let ex = new_executor(b).expect("llvmpipe supports subgroup arithmetic");
    // Its pipeline requires the device's subgroup size (the size the interpreter is given),
    // which validation accepts (no message below).
    if ex.context().enabled_features().has(Feature::SubgroupSizeControl) {
        assert_eq!(ex.context().required_subgroup_size(&k), Some(ex.context().subgroup_size()));
    }
    let ramp = ramp_bundle();
    let plain = ramp.kernels.iter().find(|k| k.kernel == "ramp").expect("kernel");
    assert_eq!(ex.context().required_subgroup_size(plain), None, "a module without subgroup ops");
    let f = ex.context().enabled_features();
    for feature in all.iter() {
        assert!(f.has(feature), "{feature} missing from {f:?}");
    }
    if ex.context().is_llvmpipe() {
        assert_eq!(ex.context().subgroup_size(), 8);
        assert!(ex.context().enabled_features().has(Feature::SubgroupSizeControl));
    }
    let mut ex = ex;
    let e = ex.finalize("g").expect("finalize");
    ex.run(e).expect("run");
    no_messages(&ex);
}

/// The features of issue 30's types: on an application's device created without
/// `shaderFloat64`, `shaderInt8` and `shaderInt16` (as `common::app_vulkan` creates it), a
/// kernel declaring `Float64`, `Int8` or `Int16` is refused when the executor is created,
/// naming the kernel, the capability and the feature; the unedited bundle runs there.
#[test]
fn the_types_of_issue_30_are_refused_on_a_device_without_their_features() {
    use common::app_vulkan::AppVulkan;
    let app = AppVulkan::new();
    let info = app.create_info();
    let opts = cmdgraph_executor::ContextOptions::default();
    for (cap, name, feature) in
        [(10, "Float64", "shaderFloat64"), (39, "Int8", "shaderInt8"), (22, "Int16", "shaderInt16")]
    {
        let mut b = ramp_bundle();
        add_capability(&mut b, "ramp", cap);
        let loaded = load::check(b).expect("the edited module is still well-formed");
        // SAFETY: the test's live instance, device and queue, kept until after the executor.
        let err = unsafe { Executor::with_vulkan(loaded, &app.external(&info), &opts) }.err().expect("refused");
        let m = err.to_string();
        assert!(matches!(err, ExecError::Invalid(_)), "{err:?}");
        for part in ["@ramp", &format!("capability {name},"), feature] {
            assert!(m.contains(part), "{m} lacks {part}");
        }
    }
    let loaded = load::check(ramp_bundle()).expect("load");
    // SAFETY: as above.
    let mut ex = unsafe { Executor::with_vulkan(loaded, &app.external(&info), &opts) }.expect("the plain bundle");
    let e = ex.finalize("g").expect("finalize");
    ex.run(e).expect("run");
    ex.wait(e).expect("wait");
    let x: Vec<f32> = ex.read_as("x").expect("read");
    assert_eq!(x, (0..16).map(|i| i as f32).collect::<Vec<_>>());
}
