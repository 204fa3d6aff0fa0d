//! Whether a timeline semaphore of one physical device can be shared with another through an
//! OPAQUE_FD (`VK_KHR_external_semaphore_fd`): the question docs/multi-device.md leaves to the
//! driver. The probe makes its own instance and one device on each of two physical devices,
//! exports a timeline semaphore from the first, imports it into a semaphore of the second,
//! signals it from the host on the first and reads it on the second. `cmdgraph-bench
//! multi-device` runs it on the GPU machine and records the answer; the executor's relay does
//! not depend on it.
#![allow(unsafe_code)]

use ash::vk;

/// What the probe found, step by step, for physical devices `a` and `b` (indices among the
/// devices the loader lists, skipping CPU devices when `gpus_only`).
pub fn shared_timeline(a: usize, b: usize, gpus_only: bool) -> String {
    // SAFETY: loading the system Vulkan loader runs its initialisation; nothing else is shared.
    let entry = match unsafe { ash::Entry::load() } {
        Ok(e) => e,
        Err(e) => return format!("no Vulkan loader: {e}"),
    };
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: `info` points at locals alive for the call.
    let instance = match unsafe { entry.create_instance(&info, None) } {
        Ok(i) => i,
        Err(e) => return format!("vkCreateInstance: {e:?}"),
    };
    let out = probe(&instance, a, b, gpus_only).unwrap_or_else(|e| e);
    // SAFETY: every device made by `probe` is destroyed there.
    unsafe { instance.destroy_instance(None) };
    out
}

fn probe(instance: &ash::Instance, a: usize, b: usize, gpus_only: bool) -> Result<String, String> {
    // SAFETY: a live instance.
    let all = unsafe { instance.enumerate_physical_devices() }.map_err(|e| format!("enumerate: {e:?}"))?;
    let pdevs: Vec<vk::PhysicalDevice> = all
        .into_iter()
        // SAFETY: handles from the instance.
        .filter(|&p| {
            !gpus_only
                || unsafe { instance.get_physical_device_properties(p) }.device_type != vk::PhysicalDeviceType::CPU
        })
        .collect();
    let (Some(&pa), Some(&pb)) = (pdevs.get(a), pdevs.get(b)) else {
        return Err(format!("needs devices {a} and {b}; {} listed", pdevs.len()));
    };
    let mut steps = Vec::new();
    for (name, p) in [("A", pa), ("B", pb)] {
        // SAFETY: a handle from the instance.
        let exts = unsafe { instance.enumerate_device_extension_properties(p) }.unwrap_or_default();
        let has =
            exts.iter().any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == ash::khr::external_semaphore_fd::NAME));
        if !has {
            return Err(format!("device {name} lacks VK_KHR_external_semaphore_fd"));
        }
        let mut ty = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
        let query = vk::PhysicalDeviceExternalSemaphoreInfo::default()
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD)
            .push_next(&mut ty);
        let mut props = vk::ExternalSemaphoreProperties::default();
        // SAFETY: valid structures for the call.
        unsafe { instance.get_physical_device_external_semaphore_properties(p, &query, &mut props) };
        steps.push(format!("{name}: OPAQUE_FD timeline {:?}", props.external_semaphore_features));
    }
    let da = device(instance, pa)?;
    let db = match device(instance, pb) {
        Ok(d) => d,
        Err(e) => {
            // SAFETY: nothing uses the device.
            unsafe { da.destroy_device(None) };
            return Err(e);
        }
    };
    let r = share(instance, &da, &db, &mut steps);
    // SAFETY: every object made on them was destroyed by `share`.
    unsafe {
        da.destroy_device(None);
        db.destroy_device(None);
    }
    r.map(|()| steps.join("; ")).map_err(|e| format!("{}; {e}", steps.join("; ")))
}

/// A device on `p` with one queue, timeline semaphores and the fd extension.
fn device(instance: &ash::Instance, p: vk::PhysicalDevice) -> Result<ash::Device, String> {
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(0).queue_priorities(&priorities)];
    let exts = [ash::khr::external_semaphore_fd::NAME.as_ptr()];
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
    let info =
        vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&exts).push_next(&mut v12);
    // SAFETY: `info` points at locals alive for the call; family 0 exists on every device.
    unsafe { instance.create_device(p, &info, None) }.map_err(|e| format!("vkCreateDevice: {e:?}"))
}

/// Exports a timeline semaphore of `da`, imports it into `db`, signals it on `da` and reads it
/// on `db`.
fn share(instance: &ash::Instance, da: &ash::Device, db: &ash::Device, steps: &mut Vec<String>) -> Result<(), String> {
    let fd_a = ash::khr::external_semaphore_fd::Device::new(instance, da);
    let fd_b = ash::khr::external_semaphore_fd::Device::new(instance, db);
    let mut export =
        vk::ExportSemaphoreCreateInfo::default().handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
    let mut ty = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
    let info = vk::SemaphoreCreateInfo::default().push_next(&mut export).push_next(&mut ty);
    // SAFETY: a valid create info; destroyed below.
    let sa = unsafe { da.create_semaphore(&info, None) }.map_err(|e| format!("exportable semaphore: {e:?}"))?;
    let mut ty_b = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE).initial_value(0);
    let info_b = vk::SemaphoreCreateInfo::default().push_next(&mut ty_b);
    // SAFETY: as above.
    let sb = match unsafe { db.create_semaphore(&info_b, None) } {
        Ok(s) => s,
        Err(e) => {
            // SAFETY: unused.
            unsafe { da.destroy_semaphore(sa, None) };
            return Err(format!("semaphore on B: {e:?}"));
        }
    };
    let r = (|| {
        let get = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(sa)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        // SAFETY: an exportable semaphore of this device.
        let fd = unsafe { fd_a.get_semaphore_fd(&get) }.map_err(|e| format!("export: {e:?}"))?;
        steps.push("export: ok".into());
        let import = vk::ImportSemaphoreFdInfoKHR::default()
            .semaphore(sb)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD)
            .fd(fd);
        // SAFETY: `fd` was just exported; on success the driver owns it.
        if let Err(e) = unsafe { fd_b.import_semaphore_fd(&import) } {
            // SAFETY: the import failed, so the fd is still ours to close.
            unsafe { close(fd) };
            return Err(format!("import into B: {e:?}"));
        }
        steps.push("import into B: ok".into());
        let signal = vk::SemaphoreSignalInfo::default().semaphore(sa).value(7);
        // SAFETY: a timeline semaphore of `da` at 0, nothing pending.
        unsafe { da.signal_semaphore(&signal) }.map_err(|e| format!("signal on A: {e:?}"))?;
        // SAFETY: a live semaphore of `db`.
        let seen = unsafe { db.get_semaphore_counter_value(sb) }.map_err(|e| format!("read on B: {e:?}"))?;
        steps.push(format!("A signals 7 from the host, B reads {seen}"));
        match seen {
            7 => Ok(()),
            _ => Err("B does not see A's value".into()),
        }
    })();
    // SAFETY: nothing pending on either.
    unsafe {
        da.destroy_semaphore(sa, None);
        db.destroy_semaphore(sb, None);
    }
    r
}

extern "C" {
    /// POSIX `close`, for an exported fd a failed import left with this process.
    fn close(fd: i32) -> i32;
}
