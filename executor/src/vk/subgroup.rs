//! The device's subgroups: its subgroup size, which subgroup-size-dependent results depend
//! on (the interpreter must run with the same size to compare, docs/ir.md "Subgroups"), and
//! the subgroup operations its compute stage supports, which kernels' `GroupNonUniform*`
//! capabilities are checked against (features.rs).
// Vulkan calls.
#![allow(unsafe_code)]

use crate::features::{EnabledFeatures, Feature};
use ash::vk;

/// What the device says of its subgroups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubgroupInfo {
    /// `VkPhysicalDeviceSubgroupProperties::subgroupSize`.
    pub size: u32,
    /// `supportedOperations`, or none when compute is not in `supportedStages`.
    pub operations: vk::SubgroupFeatureFlags,
}

/// Queries the subgroup properties of `physical`.
pub(super) fn query(instance: &ash::Instance, physical: vk::PhysicalDevice) -> SubgroupInfo {
    let mut sg = vk::PhysicalDeviceSubgroupProperties::default();
    let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut sg);
    // SAFETY: `physical` came from this instance; the chain is one live local.
    unsafe { instance.get_physical_device_properties2(physical, &mut props) };
    let compute = sg.supported_stages.contains(vk::ShaderStageFlags::COMPUTE);
    let operations = if compute { sg.supported_operations } else { vk::SubgroupFeatureFlags::empty() };
    SubgroupInfo { size: sg.subgroup_size, operations }
}

/// `features` with the subgroup operations of `info` added (they are properties, not
/// features to enable, so every device has what it reports).
pub(super) fn with_operations(mut features: EnabledFeatures, info: &SubgroupInfo) -> EnabledFeatures {
    let flags = [
        (Feature::SubgroupBasic, vk::SubgroupFeatureFlags::BASIC),
        (Feature::SubgroupVote, vk::SubgroupFeatureFlags::VOTE),
        (Feature::SubgroupArithmetic, vk::SubgroupFeatureFlags::ARITHMETIC),
        (Feature::SubgroupBallot, vk::SubgroupFeatureFlags::BALLOT),
        (Feature::SubgroupShuffle, vk::SubgroupFeatureFlags::SHUFFLE),
    ];
    for (feature, flag) in flags {
        features.set(feature, info.operations.contains(flag));
    }
    features
}
