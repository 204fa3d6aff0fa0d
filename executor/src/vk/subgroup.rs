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
    /// `minSubgroupSize` and `maxSubgroupSize` (subgroup size control, Vulkan 1.3).
    pub range: (u32, u32),
    /// `maxComputeWorkgroupSubgroups`.
    pub max_workgroup_subgroups: u32,
    /// Whether compute is in `requiredSubgroupSizeStages`.
    pub compute_size_control: bool,
}

impl SubgroupInfo {
    /// The size to require of a pipeline of `workgroup` invocations whose module uses
    /// subgroup operations: the device's `subgroupSize`, which the interpreter is given to
    /// compare with, where the device lets a pipeline require it (`size_control`: the
    /// `subgroupSizeControl` feature was enabled). Vulkan 1.3 lets a device vary the size of
    /// a SPIR-V 1.6 module between `minSubgroupSize` and `maxSubgroupSize` otherwise.
    pub fn required_size(&self, size_control: bool, workgroup: u64) -> Option<u32> {
        let fits = workgroup <= u64::from(self.max_workgroup_subgroups) * u64::from(self.size);
        let in_range = self.range.0 <= self.size && self.size <= self.range.1;
        (size_control && self.compute_size_control && in_range && fits && self.size.is_power_of_two())
            .then_some(self.size)
    }
}

/// Queries the subgroup properties of `physical`.
pub(super) fn query(instance: &ash::Instance, physical: vk::PhysicalDevice) -> SubgroupInfo {
    let mut sg = vk::PhysicalDeviceSubgroupProperties::default();
    let mut control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut sg).push_next(&mut control);
    // SAFETY: `physical` came from this instance; the chain is of live locals, both core
    // structures of Vulkan 1.3.
    unsafe { instance.get_physical_device_properties2(physical, &mut props) };
    let compute = sg.supported_stages.contains(vk::ShaderStageFlags::COMPUTE);
    let operations = if compute { sg.supported_operations } else { vk::SubgroupFeatureFlags::empty() };
    SubgroupInfo {
        size: sg.subgroup_size,
        operations,
        range: (control.min_subgroup_size, control.max_subgroup_size),
        max_workgroup_subgroups: control.max_compute_workgroup_subgroups,
        compute_size_control: control.required_subgroup_size_stages.contains(vk::ShaderStageFlags::COMPUTE),
    }
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
