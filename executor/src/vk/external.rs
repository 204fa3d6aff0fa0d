//! Running on the application's Vulkan: a [`Context`] over an instance, device and queue
//! the application created, and what it must have enabled (docs/capi.md, "Running inside
//! the application's Vulkan").
#![allow(unsafe_code)]

use super::context::{device_name, enabled_features, update_after_bind, Context, ContextOptions, Handles};
use crate::error::{ExecError, Result};
use ash::vk;
use std::ffi::{c_char, CStr};

/// The application's Vulkan objects an executor runs on instead of creating its own.
///
/// The executor never destroys them. Its work goes to `queue` from the thread that calls
/// the executor (and from its host-task thread while a run with host tasks is going on):
/// Vulkan requires queue submissions to be externally synchronised, so the application
/// does not submit to the same queue concurrently with executor calls.
#[derive(Clone, Copy, Debug)]
pub struct ExternalVulkan<'a> {
    /// The application's `vkGetInstanceProcAddr`; `None`: the system Vulkan loader's.
    pub get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    /// The instance (Vulkan 1.3).
    pub instance: vk::Instance,
    /// The physical device `device` was created from.
    pub physical_device: vk::PhysicalDevice,
    /// The logical device.
    pub device: vk::Device,
    /// A queue of `device` in `queue_family`, which must support compute.
    pub queue: vk::Queue,
    /// The queue's family index.
    pub queue_family: u32,
    /// The create info `device` was made with (its `pEnabledFeatures`, feature chain and
    /// extension names are read; nothing else). The executor enables nothing: kernels that
    /// need a feature it does not list are refused at executor creation, and the device
    /// must have `timelineSemaphore` and `synchronization2` on.
    pub device_create_info: &'a vk::DeviceCreateInfo<'a>,
}

/// The features a `VkDeviceCreateInfo` enables, read from its chain.
#[derive(Default)]
struct Enabled {
    base: vk::PhysicalDeviceFeatures,
    f11: vk::PhysicalDeviceVulkan11Features<'static>,
    f12: vk::PhysicalDeviceVulkan12Features<'static>,
    f13: vk::PhysicalDeviceVulkan13Features<'static>,
    af1: vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT<'static>,
    af2: vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT<'static>,
}

/// Reads what `info` enables. Structures the executor does not use are skipped by `sType`.
///
/// # Safety
/// `info` and its chain are valid as `vkCreateDevice` requires.
unsafe fn read_chain(info: &vk::DeviceCreateInfo<'_>) -> Enabled {
    let mut e = Enabled::default();
    if !info.p_enabled_features.is_null() {
        // SAFETY: a valid create info's `pEnabledFeatures` points to one structure.
        e.base = unsafe { *info.p_enabled_features };
    }
    let mut next = info.p_next.cast::<vk::BaseInStructure<'_>>();
    // A chain longer than this is malformed (a loop): reading stops there.
    for _ in 0..64 {
        if next.is_null() {
            break;
        }
        // SAFETY: every chain member starts with sType and pNext (BaseInStructure), and a
        // member's sType names the structure it is, so the casts below read that structure.
        unsafe {
            let s = &*next;
            match s.s_type {
                vk::StructureType::PHYSICAL_DEVICE_FEATURES_2 => {
                    e.base = (*next.cast::<vk::PhysicalDeviceFeatures2<'_>>()).features;
                }
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_FEATURES => {
                    e.f11 = *next.cast::<vk::PhysicalDeviceVulkan11Features<'static>>();
                }
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES => {
                    e.f12 = *next.cast::<vk::PhysicalDeviceVulkan12Features<'static>>();
                }
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_3_FEATURES => {
                    e.f13 = *next.cast::<vk::PhysicalDeviceVulkan13Features<'static>>();
                }
                vk::StructureType::PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES => {
                    let t = &*next.cast::<vk::PhysicalDeviceTimelineSemaphoreFeatures<'_>>();
                    e.f12.timeline_semaphore |= t.timeline_semaphore;
                }
                vk::StructureType::PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES => {
                    let t = &*next.cast::<vk::PhysicalDeviceSynchronization2Features<'_>>();
                    e.f13.synchronization2 |= t.synchronization2;
                }
                vk::StructureType::PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT => {
                    e.af1 = *next.cast::<vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT<'static>>();
                }
                vk::StructureType::PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT => {
                    e.af2 = *next.cast::<vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT<'static>>();
                }
                _ => {}
            }
            next = s.p_next;
        }
    }
    // Copied structures keep the application's pNext: cleared, they are read as values only.
    e.f11.p_next = std::ptr::null_mut();
    e.f12.p_next = std::ptr::null_mut();
    e.f13.p_next = std::ptr::null_mut();
    e.af1.p_next = std::ptr::null_mut();
    e.af2.p_next = std::ptr::null_mut();
    e
}

/// Whether `info` enables the device extension `name`.
///
/// # Safety
/// `info`'s extension names are valid as `vkCreateDevice` requires.
unsafe fn has_extension(info: &vk::DeviceCreateInfo<'_>, name: &CStr) -> bool {
    if info.pp_enabled_extension_names.is_null() {
        return false;
    }
    // SAFETY: `enabledExtensionCount` C strings (checked by the caller's contract).
    let names: &[*const c_char] =
        unsafe { std::slice::from_raw_parts(info.pp_enabled_extension_names, info.enabled_extension_count as usize) };
    // SAFETY: each is a NUL-terminated string.
    names.iter().any(|&p| !p.is_null() && unsafe { CStr::from_ptr(p) } == name)
}

impl Context {
    /// A context on the application's Vulkan objects ([`ExternalVulkan`]): the executor
    /// creates nothing but its own buffers, pipelines, command pools and semaphores on the
    /// device, and destroys only those. `opts.device` is ignored; `opts.validation` too (the
    /// validation layer, if any, is the application's, and its messages go to the
    /// application's messenger).
    ///
    /// # Safety
    /// Every handle in `ext` is valid, `device` was created from `physical_device` of
    /// `instance` with `device_create_info`, `queue` belongs to `device` in `queue_family`,
    /// and all of them outlive the context.
    pub unsafe fn from_external(ext: &ExternalVulkan<'_>, opts: &ContextOptions) -> Result<Context> {
        let entry = match ext.get_instance_proc_addr {
            // SAFETY: the application's loader entry point, valid for `instance`.
            Some(f) => unsafe { ash::Entry::from_static_fn(ash::StaticFn { get_instance_proc_addr: f }) },
            // SAFETY: loading the system Vulkan loader runs its initialisation only.
            None => unsafe { ash::Entry::load() }.map_err(|e| ExecError::Vulkan(format!("no Vulkan loader: {e}")))?,
        };
        if ext.instance == vk::Instance::null() || ext.device == vk::Device::null() || ext.queue == vk::Queue::null() {
            return Err(ExecError::Invalid("the application's instance, device and queue must not be null".into()));
        }
        // SAFETY: the caller's contract: `instance` is a live instance of this loader.
        let instance = unsafe { ash::Instance::load(entry.static_fn(), ext.instance) };
        // SAFETY: as above; `physical_device` is of this instance.
        let (props, families) = unsafe {
            (
                instance.get_physical_device_properties(ext.physical_device),
                instance.get_physical_device_queue_family_properties(ext.physical_device),
            )
        };
        let name = device_name(&props);
        if props.api_version < vk::API_VERSION_1_3 {
            return Err(ExecError::Vulkan(format!("{name}: the executor needs Vulkan 1.3")));
        }
        let compute = families.get(ext.queue_family as usize).map(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE));
        if compute != Some(true) {
            return Err(ExecError::Invalid(format!(
                "queue family {} of {name} {}",
                ext.queue_family,
                if compute.is_none() { "does not exist" } else { "has no compute" }
            )));
        }
        // SAFETY: the caller's contract on `device_create_info`.
        let e = unsafe { read_chain(ext.device_create_info) };
        if e.f12.timeline_semaphore == 0 || e.f13.synchronization2 == 0 {
            return Err(ExecError::Invalid(format!(
                "{name}: the application's device must be created with timelineSemaphore and synchronization2 \
                 enabled (VkPhysicalDeviceVulkan12Features, VkPhysicalDeviceVulkan13Features)"
            )));
        }
        // SAFETY: the caller's contract on `device_create_info`.
        let (af1, af2) = unsafe {
            (
                has_extension(ext.device_create_info, ash::ext::shader_atomic_float::NAME),
                has_extension(ext.device_create_info, ash::ext::shader_atomic_float2::NAME),
            )
        };
        let features = enabled_features(&e.base, &e.f11, &e.f12, (af1, &e.af1), (af2, &e.af2));
        // SAFETY: the caller's contract: `device` is a live device of this instance.
        let device = unsafe { ash::Device::load(instance.fp_v1_0(), ext.device) };
        let handles = Handles {
            entry,
            instance,
            physical: ext.physical_device,
            device,
            queue: ext.queue,
            family: ext.queue_family,
        };
        Ok(Context::assemble(handles, None, update_after_bind(&e.f12), features, opts, true))
    }

    /// Whether the instance, device and queue are the application's.
    pub fn is_external(&self) -> bool {
        self.external
    }
}
