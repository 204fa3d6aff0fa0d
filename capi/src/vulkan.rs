//! Running inside the application's Vulkan: an executor on the application's instance,
//! device and queue, memory imported from the application's `VkBuffer`s, runs ordered by the
//! application's timeline semaphores. A thin layer over `Executor::with_vulkan`,
//! `import_buffer` and `run_with` (docs/executor.md, "Inside the application's Vulkan").
//!
//! The header needs no Vulkan header: dispatchable handles (`VkInstance`, `VkPhysicalDevice`,
//! `VkDevice`, `VkQueue`) are `void*`, non-dispatchable ones (`VkBuffer`, `VkSemaphore`)
//! `uint64_t`, as Vulkan defines them on every platform (`(uint64_t)(uintptr_t)buffer` where
//! they are pointers).

use crate::bundle::cmdgraph_bundle;
use crate::error::{cmdgraph_status, Error, Result};
use crate::exec::{cmdgraph_exec, on};
use crate::executor::{borrow, cmdgraph_executor, cmdgraph_executor_options, create_into};
use crate::{name, with};
use ::cmdgraph_executor::ash::vk::{self, Handle as _};
use ::cmdgraph_executor::{Executor, ExternalVulkan, RunSync, SemaphoreValue};
use std::ffi::{c_char, c_void};

/// `vkGetInstanceProcAddr`'s type, with `VkInstance` as `void*`.
#[allow(non_camel_case_types)]
pub type cmdgraph_get_instance_proc_addr =
    Option<unsafe extern "C" fn(instance: *mut c_void, name: *const c_char) -> Option<unsafe extern "C" fn()>>;

/// The application's Vulkan objects an executor runs on (`cmdgraph_executor_create_vulkan`).
/// The executor never destroys them; they must outlive it.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_vulkan_objects {
    /// The application's `vkGetInstanceProcAddr` (cast); NULL: the system loader's.
    pub get_instance_proc_addr: cmdgraph_get_instance_proc_addr,
    /// `VkInstance` (Vulkan 1.3).
    pub instance: *mut c_void,
    /// `VkPhysicalDevice` the device was created from.
    pub physical_device: *mut c_void,
    /// `VkDevice`.
    pub device: *mut c_void,
    /// `VkQueue` of `device` in `queue_family`, which supports compute. The application does
    /// not submit to it while a call on the executor, or a run with host tasks, is under way.
    pub queue: *mut c_void,
    /// The queue's family index.
    pub queue_family: u32,
    /// `const VkDeviceCreateInfo*`: the create info the device was made with. Its enabled
    /// features (`pEnabledFeatures` and the feature structures of its `pNext` chain) and
    /// extension names tell the executor what kernels may use; it must enable
    /// `timelineSemaphore` and `synchronization2`. Read during the call only.
    pub device_create_info: *const c_void,
}

/// A timeline semaphore (`VkSemaphore` as `uint64_t`) and a value.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cmdgraph_semaphore_value {
    /// A timeline semaphore of the executor's device.
    pub semaphore: u64,
    /// The value to wait for, or to signal.
    pub value: u64,
}

/// The Rust view of the application's objects.
///
/// # Safety
/// `o.device_create_info` is NULL or a valid `VkDeviceCreateInfo` for `'a`.
unsafe fn external<'a>(o: &cmdgraph_vulkan_objects) -> Result<ExternalVulkan<'a>> {
    // SAFETY: the caller's contract: NULL or a valid create info.
    let info = unsafe { o.device_create_info.cast::<vk::DeviceCreateInfo<'a>>().as_ref() }.ok_or_else(|| {
        Error::invalid("device_create_info is NULL: pass the VkDeviceCreateInfo the device was made with")
    })?;
    if info.s_type != vk::StructureType::DEVICE_CREATE_INFO {
        return Err(Error::invalid(format!(
            "device_create_info has sType {:?}, not VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO",
            info.s_type
        )));
    }
    let get_instance_proc_addr = o.get_instance_proc_addr.map(|f| {
        // SAFETY: the same C function type: `VkInstance` is pointer-sized (ash's
        // `vk::Instance` is a transparent handle of one), `PFN_vkVoidFunction` an optional
        // function pointer, and "system" is "C" on the platforms Vulkan runs on here.
        unsafe { std::mem::transmute::<_, vk::PFN_vkGetInstanceProcAddr>(f) }
    });
    Ok(ExternalVulkan {
        get_instance_proc_addr,
        instance: vk::Instance::from_raw(o.instance as u64),
        physical_device: vk::PhysicalDevice::from_raw(o.physical_device as u64),
        device: vk::Device::from_raw(o.device as u64),
        queue: vk::Queue::from_raw(o.queue as u64),
        queue_family: o.queue_family,
        device_create_info: info,
    })
}

/// Creates an executor for `bundle` on the application's Vulkan objects instead of its own
/// instance and device. `options` (NULL: defaults) gives the timeout only: device choice and
/// validation are the application's (layer messages go to its messenger). The executor
/// creates its buffers, pipelines, command pools and semaphores on the device and destroys
/// only those. On success `*out` is a new executor (`cmdgraph_executor_destroy`); on error
/// `*out` is NULL and the message is the bundle's and the thread's.
///
/// # Safety
/// `bundle` NULL or live; `vulkan` NULL or readable, its handles valid, related as their
/// names say and alive until the executor is destroyed; `options` NULL or readable; `out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_create_vulkan(
    bundle: *mut cmdgraph_bundle,
    vulkan: *const cmdgraph_vulkan_objects,
    options: *const cmdgraph_executor_options,
    out: *mut *mut cmdgraph_executor,
) -> cmdgraph_status {
    // SAFETY: the caller's contract for `vulkan`.
    let objects = unsafe { vulkan.as_ref() }.copied();
    let make = |loaded, opts: &_| {
        let v = objects.ok_or_else(|| Error::invalid("the Vulkan objects pointer is NULL"))?;
        // SAFETY: the caller's contract for the create info.
        let ext = unsafe { external(&v) }?;
        // SAFETY: the caller's contract: valid, related handles outliving the executor.
        Ok(unsafe { Executor::with_vulkan(loaded, &ext, opts) }?)
    };
    // SAFETY: the caller's contract for `bundle`, `options` and `out`.
    unsafe { create_into(bundle, options, out, make) }
}

/// Makes memory `name` the `size` bytes of the application's `buffer` (a `VkBuffer`) from
/// byte `offset`, used in place by kernels, copies, host tasks, `cmdgraph_executor_bind` and
/// `cmdgraph_executor_read`; nothing is copied or zeroed. `offset` is a multiple of the
/// device's `minStorageBufferOffsetAlignment`; `size` is at least the memory's size rounded
/// up to 4. Any time, to rotate buffers: waits for the runs submitted so far and re-points
/// executables already finalized (re-recorded, O(graph)), keeping their updates.
///
/// # Safety
/// `ex` NULL or live; `name` NULL or a string; `buffer` a `VkBuffer` of the executor's device
/// with `STORAGE_BUFFER | TRANSFER_SRC | TRANSFER_DST` usage, bound to memory, at least
/// `offset + size` bytes, alive until the executor is destroyed (or `name` is imported
/// again). The application orders its own use of the range against runs
/// (`cmdgraph_exec_run_with`, or waits).
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_executor_import_buffer(
    ex: *mut cmdgraph_executor,
    name_: *const c_char,
    buffer: u64,
    offset: u64,
    size: u64,
) -> cmdgraph_status {
    let body = |e: &mut cmdgraph_executor| {
        // SAFETY: the caller's contract for `name_`.
        let n = unsafe { name(name_, "memory name") }?;
        let mut x = borrow(&e.inner)?;
        // SAFETY: the caller's contract for `buffer`.
        Ok(unsafe { x.import_buffer(n, vk::Buffer::from_raw(buffer), offset, size) }?)
    };
    // SAFETY: the caller's contract for `ex`.
    unsafe { with(ex, body) }
}

/// `count` semaphore values at `list` (NULL allowed when `count` is 0).
///
/// # Safety
/// `list` NULL or `count` readable values.
unsafe fn values(list: *const cmdgraph_semaphore_value, count: usize, what: &str) -> Result<Vec<SemaphoreValue>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(Error::invalid(format!("the {what} pointer is NULL ({count} semaphores)")));
    }
    // SAFETY: not NULL; the caller's contract gives `count` readable values.
    let s = unsafe { std::slice::from_raw_parts(list, count) };
    Ok(s.iter().map(|v| SemaphoreValue { semaphore: vk::Semaphore::from_raw(v.semaphore), value: v.value }).collect())
}

/// `cmdgraph_exec_run`, ordered against the application's work: the run's first command
/// starts once every semaphore in `waits` reaches its value, and every one in `signals` is set
/// to its value once the run is complete (also after a failed host task, whose error the next
/// `cmdgraph_exec_wait` or run reports). Returns at once, as `cmdgraph_exec_run` does.
///
/// # Safety
/// `exec` NULL or live; `waits`/`signals` NULL or readable for their counts; each semaphore a
/// timeline semaphore of the executor's device; signal values above the semaphore's current
/// and pending values; waited values eventually signalled (else waits end at the timeout).
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_exec_run_with(
    exec: *mut cmdgraph_exec,
    waits: *const cmdgraph_semaphore_value,
    wait_count: usize,
    signals: *const cmdgraph_semaphore_value,
    signal_count: usize,
) -> cmdgraph_status {
    let body = |x: &mut Executor, id| {
        // SAFETY: the caller's contract for both lists.
        let (wait, signal) =
            unsafe { (values(waits, wait_count, "waits")?, values(signals, signal_count, "signals")?) };
        // SAFETY: the caller's contract for the semaphores and values.
        Ok(unsafe { x.run_with(id, &RunSync { wait, signal }) }?)
    };
    // SAFETY: the caller's contract for `exec`.
    unsafe { on(exec, body) }
}
