//! The device features a kernel's SPIR-V needs, checked against what the device was created
//! with before the module reaches the driver.
//!
//! A driver given a module whose capabilities it did not enable may reject it, but may also
//! accept it and hang or miscompute (an H100 hung on `OpAtomicFMaxEXT`, docs/executor.md),
//! so every capability, extension and atomic instruction is checked here, and anything this
//! executor does not know is refused rather than guessed.

use crate::error::{ExecError, Result};
use crate::spirv::cooperative::MulAdd;
use crate::spirv::{self, AtomicOp, AtomicStorage, AtomicUse, Requirements};
use cmdgraph_ir::bundle::CompiledKernel;
use std::collections::BTreeSet;
use std::fmt;

/// A Vulkan device feature or device extension a SPIR-V module may need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// `shaderInt64`.
    ShaderInt64,
    /// `shaderInt16`.
    ShaderInt16,
    /// `shaderFloat64`.
    ShaderFloat64,
    /// `shaderFloat16` (Vulkan 1.2).
    ShaderFloat16,
    /// `shaderInt8` (Vulkan 1.2).
    ShaderInt8,
    /// `storageBuffer16BitAccess` (Vulkan 1.1).
    StorageBuffer16BitAccess,
    /// `uniformAndStorageBuffer16BitAccess` (Vulkan 1.1).
    UniformAndStorageBuffer16BitAccess,
    /// `storageBuffer8BitAccess` (Vulkan 1.2).
    StorageBuffer8BitAccess,
    /// `uniformAndStorageBuffer8BitAccess` (Vulkan 1.2).
    UniformAndStorageBuffer8BitAccess,
    /// `vulkanMemoryModel` (Vulkan 1.2).
    VulkanMemoryModel,
    /// `vulkanMemoryModelDeviceScope` (Vulkan 1.2).
    VulkanMemoryModelDeviceScope,
    /// `shaderBufferInt64Atomics` (Vulkan 1.2).
    BufferInt64Atomics,
    /// `shaderSharedInt64Atomics` (Vulkan 1.2).
    SharedInt64Atomics,
    /// A float atomic feature of `VK_EXT_shader_atomic_float` / `_float2`:
    /// `shader{Buffer,Shared}Float{width}Atomic{s,Add,MinMax}`.
    FloatAtomics {
        /// Work-group memory (`Shared`) rather than buffers.
        shared: bool,
        /// 16, 32 or 64.
        width: u32,
        /// `Add`, `MinMax`, or `Other` for load/store/exchange (`...Atomics`).
        op: AtomicOp,
    },
    /// The device extension `VK_EXT_shader_atomic_float`.
    ExtShaderAtomicFloat,
    /// The device extension `VK_EXT_shader_atomic_float2`.
    ExtShaderAtomicFloat2,
    /// `VK_SUBGROUP_FEATURE_BASIC_BIT` in `subgroupSupportedOperations` (compute stage).
    SubgroupBasic,
    /// `VK_SUBGROUP_FEATURE_VOTE_BIT` (compute stage).
    SubgroupVote,
    /// `VK_SUBGROUP_FEATURE_ARITHMETIC_BIT` (compute stage).
    SubgroupArithmetic,
    /// `VK_SUBGROUP_FEATURE_BALLOT_BIT` (compute stage).
    SubgroupBallot,
    /// `VK_SUBGROUP_FEATURE_SHUFFLE_BIT` (compute stage).
    SubgroupShuffle,
    /// `subgroupSizeControl` (Vulkan 1.3): pipelines may require a subgroup size, which
    /// the executor does for kernels with subgroup ops (vk/subgroup.rs).
    SubgroupSizeControl,
    /// `conditionalRendering` of `VK_EXT_conditional_rendering`: conditional nodes predicate
    /// their bodies' dispatches on a word in memory (docs/conditional.md, "Executor").
    ConditionalRendering,
    /// `VK_EXT_external_memory_host`: host memory imported into the device, through which
    /// transfers between devices pass without a CPU copy (docs/multi-device.md).
    ExternalMemoryHost,
    /// `VK_KHR_external_semaphore_fd`: timeline semaphores exported as OPAQUE_FD and imported
    /// into another device, so a device waits on another's progress without a host thread
    /// (docs/multi-device.md).
    ExternalSemaphoreFd,
    /// `cooperativeMatrix` of `VK_KHR_cooperative_matrix`: matrix multiply-adds by a whole
    /// subgroup (tensor cores on NVIDIA), in the configurations the device lists
    /// ([`EnabledFeatures::cooperative`]).
    CooperativeMatrix,
}

impl fmt::Display for Feature {
    /// Vulkan's name of the feature (or extension).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Feature::ShaderInt64 => "shaderInt64",
            Feature::ShaderInt16 => "shaderInt16",
            Feature::ShaderFloat64 => "shaderFloat64",
            Feature::ShaderFloat16 => "shaderFloat16",
            Feature::ShaderInt8 => "shaderInt8",
            Feature::StorageBuffer16BitAccess => "storageBuffer16BitAccess",
            Feature::UniformAndStorageBuffer16BitAccess => "uniformAndStorageBuffer16BitAccess",
            Feature::StorageBuffer8BitAccess => "storageBuffer8BitAccess",
            Feature::UniformAndStorageBuffer8BitAccess => "uniformAndStorageBuffer8BitAccess",
            Feature::VulkanMemoryModel => "vulkanMemoryModel",
            Feature::VulkanMemoryModelDeviceScope => "vulkanMemoryModelDeviceScope",
            Feature::BufferInt64Atomics => "shaderBufferInt64Atomics",
            Feature::SharedInt64Atomics => "shaderSharedInt64Atomics",
            Feature::ExtShaderAtomicFloat => "VK_EXT_shader_atomic_float",
            Feature::ExtShaderAtomicFloat2 => "VK_EXT_shader_atomic_float2",
            Feature::SubgroupBasic => "subgroup operation VK_SUBGROUP_FEATURE_BASIC_BIT (in the compute stage)",
            Feature::SubgroupVote => "subgroup operation VK_SUBGROUP_FEATURE_VOTE_BIT (in the compute stage)",
            Feature::SubgroupArithmetic => {
                "subgroup operation VK_SUBGROUP_FEATURE_ARITHMETIC_BIT (in the compute stage)"
            }
            Feature::SubgroupBallot => "subgroup operation VK_SUBGROUP_FEATURE_BALLOT_BIT (in the compute stage)",
            Feature::SubgroupShuffle => "subgroup operation VK_SUBGROUP_FEATURE_SHUFFLE_BIT (in the compute stage)",
            Feature::SubgroupSizeControl => "subgroupSizeControl",
            Feature::ConditionalRendering => "conditionalRendering (VK_EXT_conditional_rendering)",
            Feature::ExternalMemoryHost => "VK_EXT_external_memory_host",
            Feature::ExternalSemaphoreFd => "VK_KHR_external_semaphore_fd",
            Feature::CooperativeMatrix => "cooperativeMatrix (VK_KHR_cooperative_matrix)",
            Feature::FloatAtomics { shared, width, op } => {
                let memory = if *shared { "Shared" } else { "Buffer" };
                let (what, ext) = match (op, width) {
                    (AtomicOp::FloatAdd, 32 | 64) => ("AtomicAdd", "VK_EXT_shader_atomic_float"),
                    (AtomicOp::FloatAdd, _) => ("AtomicAdd", "VK_EXT_shader_atomic_float2"),
                    (AtomicOp::FloatMinMax, _) => ("AtomicMinMax", "VK_EXT_shader_atomic_float2"),
                    (AtomicOp::Other, 32 | 64) => ("Atomics", "VK_EXT_shader_atomic_float"),
                    (AtomicOp::Other, _) => ("Atomics", "VK_EXT_shader_atomic_float2"),
                };
                return write!(f, "shader{memory}Float{width}{what} ({ext})");
            }
        };
        f.write_str(name)
    }
}

/// The optional features and extensions a device was created with (beyond what every
/// Vulkan 1.3 device has), and the cooperative-matrix configurations it lists. `Default` is
/// none of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnabledFeatures {
    features: BTreeSet<Feature>,
    cooperative: Vec<MulAdd>,
}

impl EnabledFeatures {
    /// A set of exactly these features (tests build devices that lack some).
    pub fn new(features: impl IntoIterator<Item = Feature>) -> EnabledFeatures {
        EnabledFeatures { features: features.into_iter().collect(), cooperative: Vec::new() }
    }

    /// Adds `feature` when `on` (device creation records what it enabled).
    pub fn set(&mut self, feature: Feature, on: bool) {
        if on {
            self.features.insert(feature);
        }
    }

    /// Whether `feature` is enabled.
    pub fn has(&self, feature: Feature) -> bool {
        self.features.contains(&feature)
    }

    /// The enabled features in a fixed order.
    pub fn iter(&self) -> impl Iterator<Item = Feature> + '_ {
        self.features.iter().copied()
    }

    /// Records the cooperative-matrix multiply-adds the device supports
    /// (`vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR`), in its order.
    pub fn set_cooperative(&mut self, configurations: Vec<MulAdd>) {
        self.cooperative = configurations;
    }

    /// The cooperative-matrix multiply-adds the device supports (none where
    /// [`Feature::CooperativeMatrix`] is not enabled).
    pub fn cooperative(&self) -> &[MulAdd] {
        &self.cooperative
    }
}

/// A capability every Vulkan 1.3 device accepts in a compute shader (no feature), or one
/// that needs any of the listed features.
enum Need {
    Baseline,
    AnyOf(&'static [Feature]),
}

const fn float_atomics(width: u32, op: AtomicOp) -> [Feature; 2] {
    [Feature::FloatAtomics { shared: false, width, op }, Feature::FloatAtomics { shared: true, width, op }]
}

const ADD16: [Feature; 2] = float_atomics(16, AtomicOp::FloatAdd);
const ADD32: [Feature; 2] = float_atomics(32, AtomicOp::FloatAdd);
const ADD64: [Feature; 2] = float_atomics(64, AtomicOp::FloatAdd);
const MINMAX16: [Feature; 2] = float_atomics(16, AtomicOp::FloatMinMax);
const MINMAX32: [Feature; 2] = float_atomics(32, AtomicOp::FloatMinMax);
const MINMAX64: [Feature; 2] = float_atomics(64, AtomicOp::FloatMinMax);

/// SPIR-V capabilities this executor knows, with what Vulkan requires for each (the
/// "SPIR-V capabilities" table of the Vulkan specification, for the features it enables).
/// `SignedZeroInfNanPreserve` is emitted by codegen on every entry point and is core since
/// Vulkan 1.2 (its per-width property is not checked).
const CAPABILITIES: &[(u32, &str, Need)] = &[
    (0, "Matrix", Need::Baseline),
    (1, "Shader", Need::Baseline),
    (4466, "SignedZeroInfNanPreserve", Need::Baseline),
    (9, "Float16", Need::AnyOf(&[Feature::ShaderFloat16])),
    (10, "Float64", Need::AnyOf(&[Feature::ShaderFloat64])),
    (11, "Int64", Need::AnyOf(&[Feature::ShaderInt64])),
    (12, "Int64Atomics", Need::AnyOf(&[Feature::BufferInt64Atomics, Feature::SharedInt64Atomics])),
    (22, "Int16", Need::AnyOf(&[Feature::ShaderInt16])),
    (39, "Int8", Need::AnyOf(&[Feature::ShaderInt8])),
    (4433, "StorageBuffer16BitAccess", Need::AnyOf(&[Feature::StorageBuffer16BitAccess])),
    (4434, "UniformAndStorageBuffer16BitAccess", Need::AnyOf(&[Feature::UniformAndStorageBuffer16BitAccess])),
    (4448, "StorageBuffer8BitAccess", Need::AnyOf(&[Feature::StorageBuffer8BitAccess])),
    (4449, "UniformAndStorageBuffer8BitAccess", Need::AnyOf(&[Feature::UniformAndStorageBuffer8BitAccess])),
    (5345, "VulkanMemoryModel", Need::AnyOf(&[Feature::VulkanMemoryModel])),
    (5346, "VulkanMemoryModelDeviceScope", Need::AnyOf(&[Feature::VulkanMemoryModelDeviceScope])),
    (6033, "AtomicFloat32AddEXT", Need::AnyOf(&ADD32)),
    (6034, "AtomicFloat64AddEXT", Need::AnyOf(&ADD64)),
    (6095, "AtomicFloat16AddEXT", Need::AnyOf(&ADD16)),
    (5612, "AtomicFloat32MinMaxEXT", Need::AnyOf(&MINMAX32)),
    (5613, "AtomicFloat64MinMaxEXT", Need::AnyOf(&MINMAX64)),
    (5616, "AtomicFloat16MinMaxEXT", Need::AnyOf(&MINMAX16)),
    // Subgroup operations: `subgroupSupportedOperations` of the compute stage.
    (61, "GroupNonUniform", Need::AnyOf(&[Feature::SubgroupBasic])),
    (62, "GroupNonUniformVote", Need::AnyOf(&[Feature::SubgroupVote])),
    (63, "GroupNonUniformArithmetic", Need::AnyOf(&[Feature::SubgroupArithmetic])),
    (64, "GroupNonUniformBallot", Need::AnyOf(&[Feature::SubgroupBallot])),
    (65, "GroupNonUniformShuffle", Need::AnyOf(&[Feature::SubgroupShuffle])),
    (6022, "CooperativeMatrixKHR", Need::AnyOf(&[Feature::CooperativeMatrix])),
];

/// SPIR-V extensions this executor knows: those promoted to SPIR-V 1.6 / Vulkan 1.3 core
/// (their capabilities are checked on their own) and those needing a device extension.
const EXTENSIONS: &[(&str, Need)] = &[
    ("SPV_KHR_storage_buffer_storage_class", Need::Baseline),
    ("SPV_KHR_16bit_storage", Need::Baseline),
    ("SPV_KHR_8bit_storage", Need::Baseline),
    ("SPV_KHR_float_controls", Need::Baseline),
    ("SPV_KHR_vulkan_memory_model", Need::Baseline),
    ("SPV_KHR_no_integer_wrap_decoration", Need::Baseline),
    ("SPV_KHR_non_semantic_info", Need::Baseline),
    ("SPV_KHR_terminate_invocation", Need::Baseline),
    ("SPV_EXT_shader_atomic_float_add", Need::AnyOf(&[Feature::ExtShaderAtomicFloat])),
    ("SPV_EXT_shader_atomic_float_min_max", Need::AnyOf(&[Feature::ExtShaderAtomicFloat2])),
    ("SPV_EXT_shader_atomic_float16_add", Need::AnyOf(&[Feature::ExtShaderAtomicFloat2])),
    ("SPV_KHR_cooperative_matrix", Need::AnyOf(&[Feature::CooperativeMatrix])),
];

/// The SPIR-V name of capability `cap` if this executor knows it.
pub fn capability_name(cap: u32) -> Option<&'static str> {
    CAPABILITIES.iter().find(|(c, _, _)| *c == cap).map(|(_, name, _)| *name)
}

/// The feature an atomic instruction needs beyond its capabilities (32-bit integer atomics
/// need none; float atomics of any kind and 64-bit integer ones need the feature of their
/// memory: a device may allow them on buffers only).
fn atomic_feature(a: &AtomicUse) -> Option<Feature> {
    let shared = a.storage == AtomicStorage::Workgroup;
    match (a.float, a.width) {
        (true, width) => Some(Feature::FloatAtomics { shared, width, op: a.op }),
        (false, 64) if shared => Some(Feature::SharedInt64Atomics),
        (false, 64) => Some(Feature::BufferInt64Atomics),
        (false, _) => None,
    }
}

fn any_of(features: &[Feature]) -> String {
    features.iter().map(|f| f.to_string()).collect::<Vec<_>>().join(" or ")
}

/// Checks the requirements `req` of `kernel`'s entry point `entry` against `enabled`; the
/// first unmet one (in module order: capabilities, extensions, 8/16-bit buffer memory,
/// atomics, cooperative-matrix multiply-adds) is the error.
pub fn check(kernel: &str, entry: &str, req: &Requirements, enabled: &EnabledFeatures) -> Result<()> {
    let refuse = |what: String, need: String| {
        Err(ExecError::Invalid(format!(
            "kernel @{kernel} (entry `{entry}`) uses {what}, which needs {need}: not enabled on this device, \
             so the module is not given to the driver"
        )))
    };
    let unmet = |features: &[Feature]| !features.iter().any(|f| enabled.has(*f));
    for &cap in &req.capabilities {
        match CAPABILITIES.iter().find(|(c, _, _)| *c == cap) {
            Some((_, _, Need::Baseline)) => {}
            Some((_, name, Need::AnyOf(features))) if unmet(features) => {
                return refuse(format!("SPIR-V capability {name}"), format!("the Vulkan feature {}", any_of(features)));
            }
            Some(_) => {}
            None => {
                return refuse(
                    format!("SPIR-V capability {cap}"),
                    "a Vulkan feature this executor does not know (unknown capabilities are refused)".into(),
                )
            }
        }
    }
    for ext in &req.extensions {
        match EXTENSIONS.iter().find(|(e, _)| e == ext) {
            Some((_, Need::Baseline)) => {}
            Some((_, Need::AnyOf(features))) if unmet(features) => {
                return refuse(format!("SPIR-V extension {ext}"), format!("the device extension {}", any_of(features)));
            }
            Some(_) => {}
            None => {
                return refuse(
                    format!("SPIR-V extension {ext}"),
                    "a device extension this executor does not know (unknown extensions are refused)".into(),
                )
            }
        }
    }
    for &width in &req.narrow_storage {
        let features: &[Feature] = match width {
            8 => &[Feature::StorageBuffer8BitAccess, Feature::UniformAndStorageBuffer8BitAccess],
            16 => &[Feature::StorageBuffer16BitAccess, Feature::UniformAndStorageBuffer16BitAccess],
            _ => continue,
        };
        if unmet(features) {
            return refuse(
                format!("{width}-bit values in buffer memory"),
                format!("the Vulkan feature {}", any_of(features)),
            );
        }
    }
    for a in &req.atomics {
        if let Some(feature) = atomic_feature(a).filter(|f| !enabled.has(*f)) {
            let memory = if a.storage == AtomicStorage::Workgroup { "work-group memory" } else { "a buffer" };
            let ty = if a.float { "f" } else { "i" };
            return refuse(
                format!("an atomic {:?} on {ty}{} in {memory}", a.op, a.width),
                format!("the Vulkan feature {feature}"),
            );
        }
    }
    if req.capabilities.contains(&CAPABILITY_COOPERATIVE_MATRIX) {
        if let Some(why) = &req.cooperative_unresolved {
            return refuse(why.clone(), "a configuration the device lists, which cannot be told for it".into());
        }
    }
    for m in &req.cooperative {
        if !enabled.cooperative.contains(m) {
            let listed: Vec<String> = enabled.cooperative.iter().map(MulAdd::to_string).collect();
            let listed = if listed.is_empty() { "none".to_string() } else { listed.join("; ") };
            return refuse(
                format!("a cooperative-matrix multiply-add {m}"),
                format!("a configuration the device lists for VK_KHR_cooperative_matrix (it lists: {listed})"),
            );
        }
    }
    Ok(())
}

/// `CooperativeMatrixKHR`.
const CAPABILITY_COOPERATIVE_MATRIX: u32 = 6022;

/// Checks a compiled kernel's SPIR-V against the features its device enabled (called before
/// `vkCreateShaderModule`).
pub fn check_kernel(k: &CompiledKernel, enabled: &EnabledFeatures) -> Result<()> {
    check(&k.kernel, &k.entry, &spirv::requirements(&k.spirv), enabled)
}

#[cfg(test)]
mod tests;
