//! An application's own Vulkan, as a test makes it: instance with the validation layer
//! (synchronization validation on) and a messenger collecting every message, a device of
//! its own with timeline semaphores and synchronization2, one compute queue, and
//! host-visible buffers it writes and reads through its own mapping.
#![allow(unsafe_code, dead_code)]

use cmdgraph_executor::ash::{self, vk};
use cmdgraph_executor::ExternalVulkan;
use std::ffi::c_void;
use std::sync::Mutex;

/// Messages of the test's own messenger.
pub static APP_MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "system" fn on_message(
    _severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    // The layer's reports of its own failures are counted, not failed, as the executor's
    // messenger does (vk/context.rs, LAYER_SELF_REPORTS: the layer Debian ships times out in
    // its own bookkeeping of host-signalled timeline semaphores, which this application uses).
    // SAFETY: the layer passes valid callback data for the call.
    let id = unsafe { data.as_ref().and_then(|d| d.message_id_name_as_c_str()) };
    if id.is_some_and(|id| cmdgraph_executor::vk::context::is_layer_self_report(&id.to_string_lossy())) {
        cmdgraph_executor::vk::context::count_layer_self_report();
        return vk::FALSE;
    }
    // SAFETY: the layer passes valid callback data for the call.
    let msg = unsafe { data.as_ref().and_then(|d| d.message_as_c_str()) }
        .map(|m| m.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Ok(mut v) = APP_MESSAGES.lock() {
        v.push(msg);
    }
    vk::FALSE
}

/// The test application's Vulkan objects.
pub struct AppVulkan {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    messenger: (ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT),
    pub physical: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue: vk::Queue,
    pub family: u32,
    pub min_align: u64,
    f12: Box<vk::PhysicalDeviceVulkan12Features<'static>>,
    f13: Box<vk::PhysicalDeviceVulkan13Features<'static>>,
    queue_info: Box<[vk::DeviceQueueCreateInfo<'static>; 1]>,
}

/// A host-visible, coherent, mapped buffer of the application.
pub struct AppBuffer {
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    pub size: u64,
    ptr: *mut u8,
}

static PRIORITY: [f32; 1] = [1.0];

/// The device create info: one queue, the Vulkan 1.2 features (with 1.3's chained).
fn device_info<'a>(
    f12: &'a vk::PhysicalDeviceVulkan12Features<'static>,
    queues: &'a [vk::DeviceQueueCreateInfo<'static>; 1],
) -> vk::DeviceCreateInfo<'a> {
    let mut info = vk::DeviceCreateInfo::default().queue_create_infos(&queues[..]);
    info.p_next = (f12 as *const vk::PhysicalDeviceVulkan12Features<'static>).cast();
    info
}

impl AppVulkan {
    /// Instance, messenger, the first Vulkan 1.3 device with a compute queue, its device.
    pub fn new() -> AppVulkan {
        // SAFETY: loading the system loader.
        let entry = unsafe { ash::Entry::load() }.expect("Vulkan loader");
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let layers = [c"VK_LAYER_KHRONOS_validation".as_ptr()];
        let exts = [ash::ext::debug_utils::NAME.as_ptr()];
        let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut vf = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&exts)
            .push_next(&mut vf);
        // SAFETY: the create info's pointers are locals alive for the call.
        let instance = unsafe { entry.create_instance(&info, None) }.expect("instance with validation");
        let du = ash::ext::debug_utils::Instance::new(&entry, &instance);
        let minfo = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                    | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(on_message));
        // SAFETY: a valid create info; the callback is a static function.
        let messenger = unsafe { du.create_debug_utils_messenger(&minfo, None) }.expect("messenger");
        // SAFETY: queries on a live instance.
        let (physical, family) = unsafe {
            instance
                .enumerate_physical_devices()
                .unwrap()
                .into_iter()
                .find_map(|d| {
                    let p = instance.get_physical_device_properties(d);
                    let fams = instance.get_physical_device_queue_family_properties(d);
                    let f = fams.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))?;
                    (p.api_version >= vk::API_VERSION_1_3).then_some((d, f as u32))
                })
                .expect("a Vulkan 1.3 device with a compute queue")
        };
        // SAFETY: `physical` came from this instance.
        let props = unsafe { instance.get_physical_device_properties(physical) };
        let mut f12 = Box::new(vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true));
        let mut f13 = Box::new(vk::PhysicalDeviceVulkan13Features::default().synchronization2(true));
        let queue_info =
            Box::new([vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&PRIORITY)]);
        // The chain lives in boxes owned by the AppVulkan (their contents never move), so
        // the create info can be rebuilt for the executor (`create_info`) exactly as the
        // device was made.
        f12.p_next = (&mut *f13 as *mut vk::PhysicalDeviceVulkan13Features<'static>).cast();
        let info = device_info(&f12, &queue_info);
        // SAFETY: the create info's chain and arrays are boxed locals alive for the call.
        let device = unsafe { instance.create_device(physical, &info, None) }.expect("device");
        // SAFETY: the device has one queue in `family`.
        let queue = unsafe { device.get_device_queue(family, 0) };
        AppVulkan {
            entry,
            instance,
            messenger: (du, messenger),
            physical,
            device,
            queue,
            family,
            min_align: props.limits.min_storage_buffer_offset_alignment.max(4),
            f12,
            f13,
            queue_info,
        }
    }

    /// The create info the device was made with.
    pub fn create_info(&self) -> vk::DeviceCreateInfo<'_> {
        let _ = &self.f13; // reached through f12's pNext
        device_info(&self.f12, &self.queue_info)
    }

    /// What an executor needs to run on this device.
    pub fn external<'a>(&'a self, info: &'a vk::DeviceCreateInfo<'a>) -> ExternalVulkan<'a> {
        ExternalVulkan {
            get_instance_proc_addr: Some(self.entry.static_fn().get_instance_proc_addr),
            instance: self.instance.handle(),
            physical_device: self.physical,
            device: self.device.handle(),
            queue: self.queue,
            queue_family: self.family,
            device_create_info: info,
        }
    }

    /// A host-visible coherent buffer of `size` bytes, mapped, usable as storage and
    /// transfer buffer.
    pub fn buffer(&self, size: u64) -> AppBuffer {
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let info = vk::BufferCreateInfo::default().size(size).usage(usage);
        // SAFETY: a valid create info on a live device; the buffer gets memory below.
        unsafe {
            let buffer = self.device.create_buffer(&info, None).unwrap();
            let req = self.device.get_buffer_memory_requirements(buffer);
            let mp = self.instance.get_physical_device_memory_properties(self.physical);
            let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let index = (0..mp.memory_type_count)
                .find(|&i| {
                    req.memory_type_bits & (1 << i) != 0 && mp.memory_types[i as usize].property_flags.contains(want)
                })
                .expect("host-visible coherent memory");
            let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(index);
            let memory = self.device.allocate_memory(&alloc, None).unwrap();
            self.device.bind_buffer_memory(buffer, memory, 0).unwrap();
            let ptr = self.device.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()).unwrap();
            AppBuffer { buffer, memory, size, ptr: ptr.cast() }
        }
    }

    /// A timeline semaphore starting at 0.
    pub fn timeline(&self) -> vk::Semaphore {
        let mut t = vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut t);
        // SAFETY: a valid create info on a live device.
        unsafe { self.device.create_semaphore(&info, None) }.unwrap()
    }

    /// The semaphore's current value.
    pub fn value(&self, s: vk::Semaphore) -> u64 {
        // SAFETY: a live timeline semaphore of this device.
        unsafe { self.device.get_semaphore_counter_value(s) }.unwrap()
    }

    /// Signals `s` to `value` from the host.
    pub fn signal(&self, s: vk::Semaphore, value: u64) {
        let info = vk::SemaphoreSignalInfo::default().semaphore(s).value(value);
        // SAFETY: a live timeline semaphore; `value` is above its current value.
        unsafe { self.device.signal_semaphore(&info) }.unwrap()
    }

    /// Waits on the host for `s` to reach `value` (at most 60 s); whether it did.
    pub fn wait(&self, s: vk::Semaphore, value: u64) -> bool {
        let (sems, values) = ([s], [value]);
        let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
        // SAFETY: a live timeline semaphore.
        unsafe { self.device.wait_semaphores(&info, 60_000_000_000) }.is_ok()
    }

    /// Destroys a buffer of this device (the device must be done with it).
    pub fn free(&self, b: AppBuffer) {
        // SAFETY: the caller's contract; mapped memory is unmapped by freeing it.
        unsafe {
            self.device.destroy_buffer(b.buffer, None);
            self.device.free_memory(b.memory, None);
        }
    }

    /// Destroys a semaphore of this device (nothing pending on it).
    pub fn free_semaphore(&self, s: vk::Semaphore) {
        // SAFETY: the caller's contract.
        unsafe { self.device.destroy_semaphore(s, None) }
    }

    /// The messages the validation layer sent to this application's messenger, drained.
    pub fn take_messages() -> Vec<String> {
        APP_MESSAGES.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
    }
}

impl Drop for AppVulkan {
    fn drop(&mut self) {
        // SAFETY: the test destroyed its buffers and semaphores; the executor (which never
        // destroys these) is gone; the device is idle after the wait.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.messenger.0.destroy_debug_utils_messenger(self.messenger.1, None);
            self.instance.destroy_instance(None);
        }
    }
}

impl AppBuffer {
    /// Writes `bytes` at `offset` through the mapping.
    pub fn write(&self, offset: u64, bytes: &[u8]) {
        assert!(offset + bytes.len() as u64 <= self.size);
        // SAFETY: inside the mapped range; the device is not using it (the test orders it).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset as usize), bytes.len()) }
    }

    /// Reads `len` bytes at `offset` through the mapping.
    pub fn read(&self, offset: u64, len: u64) -> Vec<u8> {
        assert!(offset + len <= self.size);
        // SAFETY: inside the mapped range; coherent memory, the device is done with it.
        unsafe { std::slice::from_raw_parts(self.ptr.add(offset as usize), len as usize) }.to_vec()
    }
}
