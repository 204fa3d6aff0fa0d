//! The capability -> feature table against fake devices, written out independently of
//! the table so that dropping or loosening an entry fails a test.

use super::*;
use crate::spirv::requirements;

/// Every capability the executor maps, with the features any one of which enables it.
fn mapped() -> Vec<(u32, &'static str, Vec<Feature>)> {
    let fa = |width, op| {
        vec![Feature::FloatAtomics { shared: false, width, op }, Feature::FloatAtomics { shared: true, width, op }]
    };
    vec![
        (9, "Float16", vec![Feature::ShaderFloat16]),
        (10, "Float64", vec![Feature::ShaderFloat64]),
        (11, "Int64", vec![Feature::ShaderInt64]),
        (12, "Int64Atomics", vec![Feature::BufferInt64Atomics, Feature::SharedInt64Atomics]),
        (22, "Int16", vec![Feature::ShaderInt16]),
        (39, "Int8", vec![Feature::ShaderInt8]),
        (4433, "StorageBuffer16BitAccess", vec![Feature::StorageBuffer16BitAccess]),
        (4434, "UniformAndStorageBuffer16BitAccess", vec![Feature::UniformAndStorageBuffer16BitAccess]),
        (4448, "StorageBuffer8BitAccess", vec![Feature::StorageBuffer8BitAccess]),
        (4449, "UniformAndStorageBuffer8BitAccess", vec![Feature::UniformAndStorageBuffer8BitAccess]),
        (5345, "VulkanMemoryModel", vec![Feature::VulkanMemoryModel]),
        (5346, "VulkanMemoryModelDeviceScope", vec![Feature::VulkanMemoryModelDeviceScope]),
        (6033, "AtomicFloat32AddEXT", fa(32, AtomicOp::FloatAdd)),
        (6034, "AtomicFloat64AddEXT", fa(64, AtomicOp::FloatAdd)),
        (6095, "AtomicFloat16AddEXT", fa(16, AtomicOp::FloatAdd)),
        (5612, "AtomicFloat32MinMaxEXT", fa(32, AtomicOp::FloatMinMax)),
        (5613, "AtomicFloat64MinMaxEXT", fa(64, AtomicOp::FloatMinMax)),
        (5616, "AtomicFloat16MinMaxEXT", fa(16, AtomicOp::FloatMinMax)),
        (61, "GroupNonUniform", vec![Feature::SubgroupBasic]),
        (62, "GroupNonUniformVote", vec![Feature::SubgroupVote]),
        (63, "GroupNonUniformArithmetic", vec![Feature::SubgroupArithmetic]),
        (64, "GroupNonUniformBallot", vec![Feature::SubgroupBallot]),
        (65, "GroupNonUniformShuffle", vec![Feature::SubgroupShuffle]),
        (6022, "CooperativeMatrixKHR", vec![Feature::CooperativeMatrix]),
    ]
}

/// Every feature the executor can enable (a device with all of them).
fn everything() -> EnabledFeatures {
    let mut all: Vec<Feature> = mapped().into_iter().flat_map(|(_, _, f)| f).collect();
    for shared in [false, true] {
        all.push(Feature::FloatAtomics { shared, width: 32, op: AtomicOp::Other });
    }
    all.extend([Feature::ExtShaderAtomicFloat, Feature::ExtShaderAtomicFloat2]);
    EnabledFeatures::new(all)
}

fn caps(caps: &[u32]) -> Requirements {
    Requirements { capabilities: caps.to_vec(), ..Default::default() }
}

fn message(r: Result<()>) -> String {
    match r {
        Err(ExecError::Invalid(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn each_mapped_capability_is_refused_without_its_feature_and_accepted_with_any_of_them() {
    for (cap, name, features) in mapped() {
        let req = caps(&[1, cap]);
        let m = message(check("k", "main", &req, &EnabledFeatures::default()));
        assert!(m.contains("@k") && m.contains(&format!("capability {name},")), "{m}");
        for f in &features {
            assert!(m.contains(&f.to_string()), "{name}: {m} does not name {f}");
        }
        // Everything but its features: still refused.
        let others = EnabledFeatures::new(everything().iter().filter(|f| !features.contains(f)));
        assert!(check("k", "main", &req, &others).is_err(), "{name} accepted without its feature");
        for f in &features {
            let one = EnabledFeatures::new([*f]);
            assert_eq!(check("k", "main", &req, &one), Ok(()), "{name} refused with {f}");
        }
    }
}

#[test]
fn baseline_capabilities_need_nothing_and_unknown_ones_are_refused() {
    // What codegen always emits (Shader, SignedZeroInfNanPreserve) and Matrix.
    assert_eq!(check("k", "main", &caps(&[1, 4466, 0]), &EnabledFeatures::default()), Ok(()));
    // VariablePointers (known to SPIR-V, not to this executor) and a number nothing names.
    for cap in [4442, 99_999] {
        let m = message(check("k", "main", &caps(&[1, cap]), &everything()));
        assert!(m.contains(&format!("capability {cap},")) && m.contains("unknown"), "{m}");
    }
}

#[test]
fn extensions_need_their_device_extension() {
    let ext = |e: &str| Requirements { extensions: vec![e.to_string()], ..Default::default() };
    let none = EnabledFeatures::default();
    assert_eq!(check("k", "main", &ext("SPV_KHR_16bit_storage"), &none), Ok(()));
    for (e, f) in [
        ("SPV_EXT_shader_atomic_float_add", Feature::ExtShaderAtomicFloat),
        ("SPV_EXT_shader_atomic_float_min_max", Feature::ExtShaderAtomicFloat2),
        ("SPV_EXT_shader_atomic_float16_add", Feature::ExtShaderAtomicFloat2),
        ("SPV_KHR_cooperative_matrix", Feature::CooperativeMatrix),
    ] {
        let m = message(check("k", "main", &ext(e), &none));
        assert!(m.contains(e) && m.contains(&f.to_string()), "{m}");
        assert_eq!(check("k", "main", &ext(e), &EnabledFeatures::new([f])), Ok(()));
    }
    let m = message(check("k", "main", &ext("SPV_KHR_variable_pointers"), &everything()));
    assert!(m.contains("unknown"), "{m}");
}

/// A module header, then `body` instructions given as (opcode, operands).
fn module(body: &[(u32, Vec<u32>)]) -> Vec<u32> {
    let mut w = vec![0x0723_0203, 0x0001_0600, 0, 100, 0];
    for (op, ops) in body {
        w.push(((ops.len() as u32 + 1) << 16) | op);
        w.extend(ops);
    }
    w
}

const WORKGROUP: u32 = 4;
const STORAGE_BUFFER: u32 = 12;

/// An atomic `opcode` on a scalar of type (`float`, `width`) in `storage`, reached through
/// a variable and an access chain: ids 1 scalar, 2 pointer type, 3 variable, 4 chain.
fn atomic_module(opcode: u32, float: bool, width: u32, storage: u32) -> Vec<u32> {
    let scalar = if float { (22, vec![1, width]) } else { (21, vec![1, width, 0]) };
    let atomic = if opcode == 228 { vec![4, 5, 6, 7] } else { vec![1, 8, 4, 5, 6, 7] };
    module(&[
        (17, vec![1]),
        scalar,
        (32, vec![2, storage, 1]),
        (59, vec![2, 3, storage]),
        (65, vec![2, 4, 3]),
        (opcode, atomic),
    ])
}

#[test]
fn atomics_need_the_feature_of_their_memory_and_type() {
    let float = |shared, op| Feature::FloatAtomics { shared, width: 32, op };
    let cases = [
        // OpAtomicFMaxEXT on work-group f32: the shared min/max feature, not the buffer one.
        (5615, true, 32, WORKGROUP, Some(float(true, AtomicOp::FloatMinMax))),
        (5614, true, 32, STORAGE_BUFFER, Some(float(false, AtomicOp::FloatMinMax))),
        (6035, true, 32, WORKGROUP, Some(float(true, AtomicOp::FloatAdd))),
        (6035, true, 32, STORAGE_BUFFER, Some(float(false, AtomicOp::FloatAdd))),
        // OpAtomicExchange and OpAtomicStore on f32: shader{Buffer,Shared}Float32Atomics.
        (229, true, 32, STORAGE_BUFFER, Some(float(false, AtomicOp::Other))),
        (228, true, 32, WORKGROUP, Some(float(true, AtomicOp::Other))),
        (234, false, 64, WORKGROUP, Some(Feature::SharedInt64Atomics)),
        (230, false, 64, STORAGE_BUFFER, Some(Feature::BufferInt64Atomics)),
        (234, false, 32, WORKGROUP, None),
        (241, false, 32, STORAGE_BUFFER, None),
    ];
    for (opcode, is_float, width, storage, need) in cases {
        let req = requirements(&atomic_module(opcode, is_float, width, storage));
        assert_eq!(req.atomics.len(), 1, "opcode {opcode}: {req:?}");
        let none = check("k", "main", &req, &EnabledFeatures::default());
        match need {
            None => assert_eq!(none, Ok(())),
            Some(f) => {
                let m = message(none);
                assert!(m.contains(&f.to_string()), "opcode {opcode}: {m}");
                let without = EnabledFeatures::new(everything().iter().filter(|g| *g != f));
                assert!(check("k", "main", &req, &without).is_err(), "opcode {opcode} accepted without {f}");
                assert_eq!(check("k", "main", &req, &EnabledFeatures::new([f])), Ok(()), "opcode {opcode}");
            }
        }
    }
}

#[test]
fn requirements_are_collected_in_order_and_never_panic_on_truncation() {
    let name: Vec<u32> =
        b"SPV_KHR_8bit_storage\0\0\0\0".chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut body = vec![(17, vec![1]), (17, vec![39]), (10, name)];
    body.extend([(22, vec![1, 32]), (32, vec![2, WORKGROUP, 1]), (59, vec![2, 3, WORKGROUP])]);
    body.push((5615, vec![1, 8, 3, 5, 6, 7]));
    let words = module(&body);
    let req = requirements(&words);
    assert_eq!(req.capabilities, vec![1, 39]);
    assert_eq!(req.extensions, vec!["SPV_KHR_8bit_storage".to_string()]);
    assert_eq!(
        req.atomics,
        vec![AtomicUse { op: AtomicOp::FloatMinMax, float: true, width: 32, storage: AtomicStorage::Workgroup }]
    );
    for cut in 0..words.len() {
        let _ = requirements(&words[..cut]);
    }
    let mut zero_length = words.clone();
    zero_length[7] = 0;
    assert_eq!(requirements(&zero_length).capabilities, vec![1]);
}

/// A module whose buffer memory holds `scalar` (an `OpTypeInt`/`OpTypeFloat` of `width`)
/// inside a vector in a runtime array in a struct, in `storage`: ids 1 scalar, 2 vector,
/// 3 runtime array, 4 struct, 5 pointer type.
fn memory_module(float: bool, width: u32, storage: u32) -> Vec<u32> {
    let scalar = if float { (22, vec![1, width]) } else { (21, vec![1, width, 0]) };
    module(&[(17, vec![1]), scalar, (23, vec![2, 1, 2]), (29, vec![3, 2]), (30, vec![4, 3]), (32, vec![5, storage, 4])])
}

#[test]
fn eight_and_sixteen_bit_buffer_memory_needs_its_storage_feature() {
    for (float, width, feature, other) in [
        (false, 8, Feature::StorageBuffer8BitAccess, Feature::UniformAndStorageBuffer8BitAccess),
        (false, 16, Feature::StorageBuffer16BitAccess, Feature::UniformAndStorageBuffer16BitAccess),
        (true, 16, Feature::StorageBuffer16BitAccess, Feature::UniformAndStorageBuffer16BitAccess),
    ] {
        let req = requirements(&memory_module(float, width, STORAGE_BUFFER));
        assert_eq!(req.narrow_storage, vec![width]);
        let m = message(check("k", "main", &req, &EnabledFeatures::default()));
        assert!(m.contains(&format!("{width}-bit values in buffer memory")) && m.contains(&feature.to_string()), "{m}");
        let without = EnabledFeatures::new(everything().iter().filter(|f| *f != feature && *f != other));
        assert!(check("k", "main", &req, &without).is_err(), "{width}-bit accepted without {feature}");
        assert_eq!(check("k", "main", &req, &EnabledFeatures::new([feature])), Ok(()));
        assert_eq!(check("k", "main", &req, &EnabledFeatures::new([other])), Ok(()));
        // In work-group memory the type needs only its capability's feature.
        assert_eq!(requirements(&memory_module(float, width, WORKGROUP)).narrow_storage, Vec::<u32>::new());
    }
    // 32- and 64-bit buffer memory needs no storage feature.
    for width in [32, 64] {
        assert_eq!(requirements(&memory_module(true, width, STORAGE_BUFFER)).narrow_storage, Vec::<u32>::new());
    }
}

#[test]
fn a_cooperative_multiply_add_needs_a_configuration_the_device_lists() {
    use crate::spirv::cooperative::{test_module, test_mul_add, Component, MulAdd};
    let req = requirements(&test_module());
    let used = test_mul_add();
    assert_eq!(req.cooperative, vec![used]);
    // Without the feature: its capability is refused first.
    let without = EnabledFeatures::new(everything().iter().filter(|f| *f != Feature::CooperativeMatrix));
    let m = message(check("k", "main", &req, &without));
    assert!(m.contains("capability CooperativeMatrixKHR") || m.contains("cooperativeMatrix"), "{m}");
    let mut device = everything();
    // The feature, but a list without the module's configuration (an f16 accumulator, and
    // 16x8x16): refused, naming both.
    let others =
        vec![MulAdd { c: Component::Float(16), result: Component::Float(16), ..used }, MulAdd { n: 8, ..used }];
    device.set_cooperative(others);
    let m = message(check("k", "main", &req, &device));
    assert!(m.contains("multiply-add 16x16x16 f16·f16 + f32 → f32 at subgroup scope"), "{m}");
    assert!(m.contains("it lists: 16x16x16 f16·f16 + f16 → f16 at subgroup scope; 16x8x16"), "{m}");
    device.set_cooperative(vec![MulAdd { n: 8, ..used }, used]);
    assert_eq!(check("k", "main", &req, &device), Ok(()));
    // A multiply-add whose operands could not be resolved is refused even with the list.
    let unresolved = Requirements { cooperative: vec![], cooperative_unresolved: Some("a test".into()), ..req.clone() };
    let m = message(check("k", "main", &unresolved, &device));
    assert!(m.contains("a test"), "{m}");
}
