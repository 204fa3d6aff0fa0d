//! Issue 30's types as codegen compiles them: each kernel's SPIR-V asks for exactly the
//! Vulkan features its types need, so the executor refuses it on a device without one,
//! naming the feature (`shaderFloat64`, `shaderInt8`, `shaderInt16`,
//! `storageBuffer8BitAccess`, `storageBuffer16BitAccess`), and accepts it on a device with
//! all of them. No device is needed: the check is `features::check_kernel` on the bundle.

use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::Options;
use cmdgraph_executor::features::{check_kernel, EnabledFeatures, Feature};

const MODULE: &str = r#"
kernel @f64s(%x: buf<f64, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %v
  store %x[%i], %r
}

kernel @i8s(%x: buf<i8, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %v
  store %x[%i], %r
}

kernel @u16s(%x: buf<u16, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %v
  store %x[%i], %r
}

kernel @i8_arg(%x: buf<u32, write>, %a: i8) {
  %i = global_id 0
  %w = cast %a to u32
  store %x[%i], %w
}

kernel @f64_arg(%x: buf<f32, write>, %a: f64) {
  %i = global_id 0
  %w = cast %a to f32
  store %x[%i], %w
}

usm @d : f64[64]
usm @b : i8[64]
usm @h : u16[64]
usm @w : u32[64]
usm @s : f32[64]

graph @g {
  %a = kernel @f64s range(64) args(@d)
  %b = kernel @i8s range(64) args(@b)
  %c = kernel @u16s range(64) args(@h)
  %e = kernel @i8_arg range(64) args(@w, -3)
  %f = kernel @f64_arg range(64) args(@s, 0.1)
}
"#;

/// Every feature the executor can enable.
fn all() -> Vec<Feature> {
    use Feature::*;
    vec![
        ShaderInt64,
        ShaderInt16,
        ShaderFloat64,
        ShaderFloat16,
        ShaderInt8,
        StorageBuffer16BitAccess,
        UniformAndStorageBuffer16BitAccess,
        StorageBuffer8BitAccess,
        UniformAndStorageBuffer8BitAccess,
        VulkanMemoryModel,
        VulkanMemoryModelDeviceScope,
    ]
}

#[test]
fn each_kernel_is_refused_without_the_features_its_types_need() {
    let module = cmdgraph_ir::text::parse(MODULE).expect("parses");
    let (bundle, _) = compile_module(&module, &[], &Options::default(), &Llvm).expect("compiles");
    // The features without which each kernel is refused; a storage feature stands with its
    // "uniform and storage" variant, either of which allows the memory.
    let needs: &[(&str, &[Feature])] = &[
        ("f64s", &[Feature::ShaderFloat64]),
        ("i8s", &[Feature::ShaderInt8, Feature::StorageBuffer8BitAccess]),
        ("u16s", &[Feature::ShaderInt16, Feature::StorageBuffer16BitAccess]),
        // An 8-bit parameter is read out of the argument block's words: no 8-bit storage.
        ("i8_arg", &[Feature::ShaderInt8]),
        // An f64 parameter is its two words bitcast: no 64-bit integer.
        ("f64_arg", &[Feature::ShaderFloat64]),
    ];
    for (name, features) in needs {
        let k = bundle.kernels.iter().find(|k| k.kernel == *name).expect("compiled");
        assert_eq!(check_kernel(k, &EnabledFeatures::new(all())), Ok(()), "@{name} on a device with everything");
        // And with only its own features (beyond the memory model every kernel may use).
        let own = features.iter().copied().chain([Feature::VulkanMemoryModel, Feature::VulkanMemoryModelDeviceScope]);
        assert_eq!(check_kernel(k, &EnabledFeatures::new(own)), Ok(()), "@{name} with only {features:?}");
        for f in *features {
            let paired = match f {
                Feature::StorageBuffer8BitAccess => Some(Feature::UniformAndStorageBuffer8BitAccess),
                Feature::StorageBuffer16BitAccess => Some(Feature::UniformAndStorageBuffer16BitAccess),
                _ => None,
            };
            let without = EnabledFeatures::new(all().into_iter().filter(|g| g != f && Some(*g) != paired));
            let err = check_kernel(k, &without).expect_err("refused").to_string();
            assert!(err.contains(&format!("@{name}")) && err.contains(&f.to_string()), "@{name} without {f}: {err}");
        }
    }
}
