//! `VK_KHR_cooperative_matrix` on the device: the multiply-add configurations it lists, as the
//! [`MulAdd`]s the kernel check (features.rs) compares a module's multiply-adds with.
#![allow(unsafe_code)]

use crate::spirv::cooperative::{Component, MulAdd};
use ash::vk;

/// The configurations `physical` lists, in its order; those with a component type this
/// executor does not know (a later extension's `bfloat16`, say) are left out, and a failed
/// query lists none (so every cooperative-matrix kernel is refused, never guessed at).
pub(super) fn configurations(
    entry: &ash::Entry,
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
) -> Vec<MulAdd> {
    let ext = ash::khr::cooperative_matrix::Instance::new(entry, instance);
    // SAFETY: `physical` came from `instance`, which has the extension's device-level query
    // (the caller enables the device extension only where `physical` lists it).
    let listed = unsafe { ext.get_physical_device_cooperative_matrix_properties(physical) }.unwrap_or_default();
    listed.iter().filter_map(configuration).collect()
}

/// One listed configuration as a [`MulAdd`], if its component types are known.
fn configuration(p: &vk::CooperativeMatrixPropertiesKHR<'_>) -> Option<MulAdd> {
    Some(MulAdd {
        m: p.m_size,
        n: p.n_size,
        k: p.k_size,
        a: component(p.a_type)?,
        b: component(p.b_type)?,
        c: component(p.c_type)?,
        result: component(p.result_type)?,
        scope: u32::try_from(p.scope.as_raw()).ok()?,
        saturating: p.saturating_accumulation != 0,
    })
}

/// `VkComponentTypeKHR` as a [`Component`].
fn component(t: vk::ComponentTypeKHR) -> Option<Component> {
    let int = |width, signed| Some(Component::Int { width, signed });
    match t {
        vk::ComponentTypeKHR::FLOAT16 => Some(Component::Float(16)),
        vk::ComponentTypeKHR::FLOAT32 => Some(Component::Float(32)),
        vk::ComponentTypeKHR::FLOAT64 => Some(Component::Float(64)),
        vk::ComponentTypeKHR::SINT8 => int(8, true),
        vk::ComponentTypeKHR::SINT16 => int(16, true),
        vk::ComponentTypeKHR::SINT32 => int(32, true),
        vk::ComponentTypeKHR::SINT64 => int(64, true),
        vk::ComponentTypeKHR::UINT8 => int(8, false),
        vk::ComponentTypeKHR::UINT16 => int(16, false),
        vk::ComponentTypeKHR::UINT32 => int(32, false),
        vk::ComponentTypeKHR::UINT64 => int(64, false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_configuration_reads_as_the_multiply_add_a_module_declares() {
        let p = vk::CooperativeMatrixPropertiesKHR::default()
            .m_size(16)
            .n_size(8)
            .k_size(16)
            .a_type(vk::ComponentTypeKHR::FLOAT16)
            .b_type(vk::ComponentTypeKHR::FLOAT16)
            .c_type(vk::ComponentTypeKHR::FLOAT32)
            .result_type(vk::ComponentTypeKHR::FLOAT32)
            .scope(vk::ScopeKHR::SUBGROUP);
        let m = configuration(&p).unwrap();
        assert_eq!(m.to_string(), "16x8x16 f16·f16 + f32 → f32 at subgroup scope");
        let p = p.a_type(vk::ComponentTypeKHR::SINT8).b_type(vk::ComponentTypeKHR::UINT8).saturating_accumulation(true);
        assert_eq!(configuration(&p).unwrap().to_string(), "16x8x16 i8·u8 + f32 → f32 at subgroup scope, saturating");
        assert_eq!(configuration(&p.c_type(vk::ComponentTypeKHR::from_raw(1_000_141_000))), None);
    }
}
