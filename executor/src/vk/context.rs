//! Instance, validation, device choice, logical device and queue.
//!
//! Validation (the Khronos layer with synchronization validation) is requested through
//! [`ContextOptions::validation`] or the `CMDGRAPH_VK_VALIDATION=1` environment variable; its
//! messages (warnings and errors) are collected, not printed, so tests can require none.
#![allow(unsafe_code)]

use crate::error::{ExecError, Result};
use crate::features::{EnabledFeatures, Feature};
use crate::spirv::AtomicOp;
use ash::vk;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which physical device to use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    /// A discrete GPU if there is one, else an integrated one, else a CPU device (llvmpipe).
    #[default]
    Default,
    /// The device at this index of `vkEnumeratePhysicalDevices`.
    Index(usize),
    /// The first device whose name contains this (case-insensitive).
    Name(String),
}

impl DeviceChoice {
    /// Parses a `--device` value: a number is an index, anything else a name substring.
    pub fn parse(s: &str) -> DeviceChoice {
        match s.parse::<usize>() {
            Ok(i) => DeviceChoice::Index(i),
            Err(_) if s.is_empty() || s == "default" => DeviceChoice::Default,
            Err(_) => DeviceChoice::Name(s.to_string()),
        }
    }
}

impl std::fmt::Display for DeviceChoice {
    /// As the user asked for it: `the default device`, `index 2`, `name "nvidia"`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceChoice::Default => f.write_str("the default device"),
            DeviceChoice::Index(i) => write!(f, "index {i}"),
            DeviceChoice::Name(n) => write!(f, "name `{n}`"),
        }
    }
}

/// How to create a [`Context`].
#[derive(Clone, Debug)]
pub struct ContextOptions {
    /// Enable the validation layer with synchronization validation.
    pub validation: bool,
    /// Which device.
    pub device: DeviceChoice,
    /// The deadline of every wait for the device (a run, a transfer, idle): past it the wait
    /// returns [`ExecError::Timeout`] instead of blocking, since a kernel may run for hours
    /// and the caller must get control back. `None`: wait forever. Default
    /// [`DEFAULT_TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// The default [`ContextOptions::timeout`]: five minutes, far above any run the project's
/// tests or benchmarks wait for at once (seconds on llvmpipe) and well below "forever".
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for ContextOptions {
    fn default() -> ContextOptions {
        ContextOptions { validation: false, device: DeviceChoice::Default, timeout: Some(DEFAULT_TIMEOUT) }
    }
}

/// The default [`Context::wait_spin`]: `CMDGRAPH_WAIT_SPIN_US` when set, else 100 µs on a GPU
/// (a blocking wait on NVIDIA costs about 21 µs more than polling; docs/performance.md,
/// "latency") and none on a CPU device, whose own threads need the cores a poll would take.
fn default_wait_spin(kind: vk::PhysicalDeviceType) -> u64 {
    if let Some(us) = std::env::var("CMDGRAPH_WAIT_SPIN_US").ok().and_then(|v| v.parse::<u64>().ok()) {
        return us.saturating_mul(1000);
    }
    match kind {
        vk::PhysicalDeviceType::CPU => 0,
        _ => 100_000,
    }
}

/// Instances and devices are created and destroyed one at a time in this process. Vulkan
/// allows doing it from several threads at once, but the Khronos validation layer can crash
/// then: CI saw a segfault inside `libVkLayer_khronos_validation.so` while two tests of one
/// binary created contexts at the same time (as in gfx-rs/wgpu#10010). Creation costs
/// milliseconds, so taking turns costs nothing measurable.
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Holds [`LIFECYCLE`] (a panic elsewhere while holding it leaves nothing inconsistent).
fn lifecycle() -> std::sync::MutexGuard<'static, ()> {
    LIFECYCLE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Messages the validation layer reported.
pub type Messages = Arc<Mutex<Vec<String>>>;

/// Messages of contexts dropped before anyone took them: when an error ends the work that
/// owned a context (`Executor::new` failing at pipeline creation, say), the context goes with
/// it, and the layer's explanation of the error would be lost with its sink. Bounded, so a
/// long-lived process that never asks does not grow without limit.
static UNREPORTED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// At most this many messages are kept in [`UNREPORTED`]; later ones are dropped.
const MAX_UNREPORTED: usize = 1024;

/// Moves what is left in `sink` to [`UNREPORTED`]; called once the messenger is destroyed.
fn keep_unreported(sink: &Messages) {
    let Ok(mut left) = sink.lock() else { return };
    if left.is_empty() {
        return;
    }
    if let Ok(mut kept) = UNREPORTED.lock() {
        let room = MAX_UNREPORTED.saturating_sub(kept.len());
        kept.extend(left.drain(..).take(room));
    }
}

/// The validation messages of contexts that were dropped before their messages were taken
/// with [`Context::take_messages`] (at most 1024, oldest first), draining them. A caller
/// whose executor failed reads here what the layer said before the failure; messages of every
/// context of the process are mixed, so it is for processes with one context at a time.
pub fn take_unreported_messages() -> Vec<String> {
    UNREPORTED.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
}

/// A Vulkan device ready for compute and transfer work on one queue.
pub struct Context {
    pub(crate) _entry: ash::Entry,
    pub(crate) instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT, Box<Messages>)>,
    pub(crate) device: ash::Device,
    pub(crate) queue: vk::Queue,
    pub(crate) queue_family: u32,
    pub(crate) props: vk::PhysicalDeviceProperties,
    pub(crate) mem_props: vk::PhysicalDeviceMemoryProperties,
    /// Descriptors may be rewritten while recorded (UPDATE_AFTER_BIND).
    pub(crate) update_after_bind: bool,
    /// `timestampValidBits` of the queue family (0: no timestamp queries).
    pub(crate) timestamp_bits: u32,
    /// The optional features and extensions the device was created with: every kernel's
    /// SPIR-V is checked against them before it reaches the driver (features.rs).
    pub(crate) features: EnabledFeatures,
    /// The device's subgroup size and operations (subgroup.rs).
    subgroups: super::subgroup::SubgroupInfo,
    name: String,
    /// [`ContextOptions::timeout`].
    timeout: Option<Duration>,
    /// How long a wait for a run polls the timeline value before it blocks, in ns
    /// ([`Context::set_wait_spin`]).
    wait_spin_ns: std::sync::atomic::AtomicU64,
    /// Buffers asked for in device-local, host-visible memory that went to system memory
    /// ([`Context::shared_fallbacks`]).
    pub(crate) shared_fallbacks: std::sync::atomic::AtomicU64,
    /// Reads and writes of user memory made through its mapping ([`Context::mapped_accesses`]).
    pub(crate) mapped_accesses: std::sync::atomic::AtomicU64,
    /// A wait timed out and the queue may still run that work: before the next submission
    /// that reuses a fence or frees a command buffer, [`Context::settle`] waits for idle.
    overdue: AtomicBool,
    /// Fences of bounded [`Context::wait_idle`] calls that timed out: still pending, so not
    /// destroyed until a later wait for idle succeeds (its fence comes after them).
    idle_fences: Mutex<Vec<vk::Fence>>,
    /// The instance, device and queue are the application's ([`super::ExternalVulkan`]):
    /// never destroyed here, and idle means this context's own work only.
    pub(crate) external: bool,
    /// `VK_EXT_conditional_rendering`'s commands, where the device was created with it.
    pub(crate) conditional_rendering: Option<ash::ext::conditional_rendering::Device>,
    /// `VK_EXT_external_memory_host`'s commands and `minImportedHostPointerAlignment`, where
    /// the device was created with it.
    pub(crate) external_memory_host: Option<(ash::ext::external_memory_host::Device, u64)>,
    /// `VK_KHR_external_semaphore_fd`'s commands, where the device has the extension.
    pub(crate) external_semaphore_fd: Option<ash::khr::external_semaphore_fd::Device>,
}

/// The Vulkan handles a context runs on.
pub(super) struct Handles {
    pub(super) entry: ash::Entry,
    pub(super) instance: ash::Instance,
    pub(super) physical: vk::PhysicalDevice,
    pub(super) device: ash::Device,
    pub(super) queue: vk::Queue,
    pub(super) family: u32,
}

/// What kind of device a physical device is (`VkPhysicalDeviceType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceKind {
    /// A discrete GPU.
    DiscreteGpu,
    /// A GPU integrated with the host.
    IntegratedGpu,
    /// A virtual GPU.
    VirtualGpu,
    /// A CPU implementation (llvmpipe).
    Cpu,
    /// Anything else.
    Other,
}

impl std::fmt::Display for DeviceKind {
    /// `discrete GPU`, `CPU`, ...: how `run --list-devices` and messages name the kind.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceKind::DiscreteGpu => "discrete GPU",
            DeviceKind::IntegratedGpu => "integrated GPU",
            DeviceKind::VirtualGpu => "virtual GPU",
            DeviceKind::Cpu => "CPU",
            DeviceKind::Other => "other",
        })
    }
}

impl DeviceKind {
    /// Whether it is a GPU of any kind.
    pub fn is_gpu(self) -> bool {
        matches!(self, DeviceKind::DiscreteGpu | DeviceKind::IntegratedGpu | DeviceKind::VirtualGpu)
    }
}

/// A physical device the executor can run on ([`vulkan_devices`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceDescription {
    /// Its index in `vkEnumeratePhysicalDevices` ([`DeviceChoice::Index`]).
    pub index: usize,
    /// `deviceName`.
    pub name: String,
    /// `deviceType`.
    pub kind: DeviceKind,
}

/// The physical devices the executor can use (Vulkan 1.3 with a compute queue), in
/// enumeration order; [`DeviceChoice::Default`] picks the first of the best kind.
pub fn vulkan_devices() -> Result<Vec<DeviceDescription>> {
    let _one_at_a_time = lifecycle();
    // SAFETY: loading the system Vulkan loader runs its initialisation; nothing else is shared.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| ExecError::Vulkan(format!("no Vulkan loader: {e}")))?;
    let instance = create_instance(&entry, false)?;
    // SAFETY: the instance is valid and destroyed right after use; every physical device
    // queried came from it.
    let out = unsafe {
        let list = instance.enumerate_physical_devices().map(|ds| {
            let mut out = Vec::new();
            for (index, &d) in ds.iter().enumerate() {
                let p = instance.get_physical_device_properties(d);
                let fams = instance.get_physical_device_queue_family_properties(d);
                let compute = fams.iter().any(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE));
                if !compute || p.api_version < vk::API_VERSION_1_3 {
                    continue;
                }
                let kind = match p.device_type {
                    vk::PhysicalDeviceType::DISCRETE_GPU => DeviceKind::DiscreteGpu,
                    vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceKind::IntegratedGpu,
                    vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceKind::VirtualGpu,
                    vk::PhysicalDeviceType::CPU => DeviceKind::Cpu,
                    _ => DeviceKind::Other,
                };
                out.push(DeviceDescription { index, name: device_name(&p), kind });
            }
            out
        });
        instance.destroy_instance(None);
        list
    };
    Ok(out?)
}

pub(super) fn device_name(p: &vk::PhysicalDeviceProperties) -> String {
    p.device_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

fn create_instance(entry: &ash::Entry, validation: bool) -> Result<ash::Instance> {
    let app = vk::ApplicationInfo::default()
        .application_name(c"cmdgraph")
        .engine_name(c"cmdgraph-executor")
        .api_version(vk::API_VERSION_1_3);
    let layers = [c"VK_LAYER_KHRONOS_validation".as_ptr()];
    let exts = [ash::ext::debug_utils::NAME.as_ptr()];
    let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
    let mut features = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
    let mut info = vk::InstanceCreateInfo::default().application_info(&app);
    if validation {
        info = info.enabled_layer_names(&layers).enabled_extension_names(&exts).push_next(&mut features);
    }
    // SAFETY: every pointer in `info` refers to locals alive for the call.
    unsafe { entry.create_instance(&info, None) }.map_err(|e| {
        let what = if validation { " (is VK_LAYER_KHRONOS_validation installed?)" } else { "" };
        ExecError::Vulkan(format!("vkCreateInstance: {e:?}{what}"))
    })
}

/// Message ids the validation layer uses for its own failures, not the application's: it
/// says so ("This is most likely a validation bug"). `UNASSIGNED-VkSemaphore-state-timeout`
/// is the layer's internal wait for its own bookkeeping of a timeline semaphore that the host
/// signals while a queue waits on it; layers before 1.3.296 time out there
/// (KhronosGroup/Vulkan-ValidationLayers#8461, fixed by pull request #8519), and Debian 12
/// ships 1.3.239. The semaphores across devices of `MultiExecutor` are signalled that way.
/// Counted ([`layer_self_reports`]), not reported.
const LAYER_SELF_REPORTS: &[&str] = &["UNASSIGNED-VkSemaphore-state-timeout"];

static SELF_REPORTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Whether message id `id` is one of the layer's reports of its own failures
/// ([`LAYER_SELF_REPORTS`]); counted by [`count_layer_self_report`] instead of reported, by
/// the executor's messenger and by an application's that follows it.
pub fn is_layer_self_report(id: &str) -> bool {
    LAYER_SELF_REPORTS.contains(&id)
}

/// Counts one of the layer's self-reports ([`layer_self_reports`]).
pub fn count_layer_self_report() {
    SELF_REPORTED.fetch_add(1, Ordering::Relaxed);
}

/// How many messages about the validation layer's own failures ([`LAYER_SELF_REPORTS`])
/// every context of the process has received and not reported.
pub fn layer_self_reports() -> u64 {
    SELF_REPORTED.load(Ordering::Relaxed)
}

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data for the duration of the call, and `user`
    // is the `Messages` boxed in the `Context`, which outlives the messenger.
    unsafe {
        if data.is_null() || user.is_null() {
            return vk::FALSE;
        }
        let id = (*data).message_id_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if is_layer_self_report(&id) {
            count_layer_self_report();
            return vk::FALSE;
        }
        let msg = (*data).message_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let sink = &*(user as *const Messages);
        if let Ok(mut v) = sink.lock() {
            v.push(format!("{severity:?}: {msg}"));
        }
    }
    vk::FALSE
}

impl Context {
    /// Creates the instance (with validation if asked or `CMDGRAPH_VK_VALIDATION=1`), picks a
    /// device and creates it with one compute queue.
    pub fn new(opts: &ContextOptions) -> Result<Context> {
        let _one_at_a_time = lifecycle();
        let validation = opts.validation || std::env::var("CMDGRAPH_VK_VALIDATION").is_ok_and(|v| v == "1");
        // SAFETY: loading the system Vulkan loader runs its initialisation; nothing else is shared.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| ExecError::Vulkan(format!("no Vulkan loader: {e}")))?;
        let instance = create_instance(&entry, validation)?;
        let mut ctx_debug = None;
        if validation {
            let sink: Box<Messages> = Box::default();
            let du = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(on_message))
                .user_data(&*sink as *const Messages as *mut c_void);
            // SAFETY: `sink` is boxed (stable address) and kept in the context until after the
            // messenger is destroyed.
            match unsafe { du.create_debug_utils_messenger(&info, None) } {
                Ok(m) => ctx_debug = Some((du, m, sink)),
                Err(e) => {
                    // SAFETY: nothing was created from the instance yet.
                    unsafe { instance.destroy_instance(None) };
                    return Err(ExecError::Vulkan(format!("debug messenger: {e:?}")));
                }
            }
        }
        let mut partial = Partial { instance, debug: ctx_debug, armed: true };
        let (physical, family) = choose(&partial.instance, &opts.device)?;
        let (device, update_after_bind, features) = create_device(&entry, &partial.instance, physical, family)?;
        partial.armed = false;
        let instance = partial.instance.clone();
        // SAFETY: `device` was created with one queue in `family`.
        let queue = unsafe { device.get_device_queue(family, 0) };
        let handles = Handles { entry, instance, physical, device, queue, family };
        Ok(Context::assemble(handles, partial.debug.take(), update_after_bind, features, opts, false))
    }

    /// A context over handles made elsewhere: here or by the application (`external`).
    pub(super) fn assemble(
        h: Handles,
        debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT, Box<Messages>)>,
        update_after_bind: bool,
        features: EnabledFeatures,
        opts: &ContextOptions,
        external: bool,
    ) -> Context {
        // SAFETY: `physical` came from this instance.
        let (props, mem_props, families) = unsafe {
            (
                h.instance.get_physical_device_properties(h.physical),
                h.instance.get_physical_device_memory_properties(h.physical),
                h.instance.get_physical_device_queue_family_properties(h.physical),
            )
        };
        let timestamp_bits = families.get(h.family as usize).map(|f| f.timestamp_valid_bits).unwrap_or(0);
        let subgroups = super::subgroup::query(&h.instance, h.physical);
        let features = super::subgroup::with_operations(features, &subgroups);
        let conditional_rendering = features
            .has(Feature::ConditionalRendering)
            .then(|| ash::ext::conditional_rendering::Device::new(&h.instance, &h.device));
        let external_memory_host = features.has(Feature::ExternalMemoryHost).then(|| {
            let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
            let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
            // SAFETY: `physical` came from this instance, which the device has the
            // extension of; the chain is one live local.
            unsafe { h.instance.get_physical_device_properties2(h.physical, &mut props2) };
            let alignment = host.min_imported_host_pointer_alignment.max(1);
            (ash::ext::external_memory_host::Device::new(&h.instance, &h.device), alignment)
        });
        let external_semaphore_fd = features
            .has(Feature::ExternalSemaphoreFd)
            .then(|| ash::khr::external_semaphore_fd::Device::new(&h.instance, &h.device));
        Context {
            _entry: h.entry,
            instance: h.instance,
            debug,
            device: h.device,
            queue: h.queue,
            queue_family: h.family,
            name: device_name(&props),
            props,
            mem_props,
            update_after_bind,
            timestamp_bits,
            features,
            subgroups,
            timeout: opts.timeout,
            wait_spin_ns: std::sync::atomic::AtomicU64::new(default_wait_spin(props.device_type)),
            shared_fallbacks: std::sync::atomic::AtomicU64::new(0),
            mapped_accesses: std::sync::atomic::AtomicU64::new(0),
            overdue: AtomicBool::new(false),
            idle_fences: Mutex::new(Vec::new()),
            external,
            conditional_rendering,
            external_memory_host,
            external_semaphore_fd,
        }
    }

    /// `timestampValidBits` of the queue (0 when it has no timestamp queries).
    pub fn timestamp_bits(&self) -> u32 {
        self.timestamp_bits
    }

    /// Bytes of the heap of the device-local, host-visible memory that argument blocks,
    /// indirect commands and fill patterns are placed in (NVIDIA's BAR), or `None` when the
    /// device has no such memory and they live in system memory (docs/executor.md).
    pub fn shared_heap_bytes(&self) -> Option<u64> {
        let want = vk::MemoryPropertyFlags::DEVICE_LOCAL
            | vk::MemoryPropertyFlags::HOST_VISIBLE
            | vk::MemoryPropertyFlags::HOST_COHERENT;
        let count = self.mem_props.memory_type_count.min(32) as usize;
        let t = self.mem_props.memory_types[..count].iter().find(|t| t.property_flags.contains(want))?;
        self.mem_props.memory_heaps.get(t.heap_index as usize).map(|h| h.size)
    }

    /// How many buffers meant for that memory went to system memory (its heap was full),
    /// over the context's life.
    pub fn shared_fallbacks(&self) -> u64 {
        self.shared_fallbacks.load(Ordering::Relaxed)
    }

    /// How many reads and writes of user memory went through its mapping instead of a
    /// transfer on the queue (`Executor::read`, `bind`, ...), over the context's life.
    pub fn mapped_accesses(&self) -> u64 {
        self.mapped_accesses.load(Ordering::Relaxed)
    }

    /// Whether a wait timed out with its work possibly still running on the queue.
    pub(crate) fn is_overdue(&self) -> bool {
        self.overdue.load(Ordering::Acquire)
    }

    /// The chosen device's name (e.g. `llvmpipe (LLVM 19.1.7, 256 bits)`).
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// Whether the device is Mesa's llvmpipe (lavapipe), by its name (`llvmpipe (LLVM ...)`),
    /// whose shaders stop every loop of an invocation after 65535 iterations in all, without
    /// an error (docs/executor.md).
    pub fn is_llvmpipe(&self) -> bool {
        self.name.to_ascii_lowercase().starts_with("llvmpipe")
    }

    /// The device's subgroup size (`VkPhysicalDeviceSubgroupProperties::subgroupSize`): the
    /// size the interpreter must model to compare subgroup-size-dependent results.
    pub fn subgroup_size(&self) -> u32 {
        self.subgroups.size
    }

    /// The subgroup size a pipeline of `k` requires (`None`: the driver's choice): the
    /// device's `subgroupSize` for a module with subgroup operations, where the device
    /// allows requiring it (vk/subgroup.rs).
    pub fn required_subgroup_size(&self, k: &cmdgraph_ir::bundle::CompiledKernel) -> Option<u32> {
        // `GroupNonUniform`, which every subgroup instruction needs.
        if !crate::spirv::requirements(&k.spirv).capabilities.contains(&61) {
            return None;
        }
        let workgroup = k.workgroup_size.iter().map(|&d| u64::from(d.max(1))).product();
        self.subgroups.required_size(self.features.has(Feature::SubgroupSizeControl), workgroup)
    }

    /// Whether descriptors can be rewritten without re-recording (UPDATE_AFTER_BIND).
    pub fn update_after_bind(&self) -> bool {
        self.update_after_bind
    }

    /// The optional features and extensions the device was created with.
    pub fn enabled_features(&self) -> &EnabledFeatures {
        &self.features
    }

    /// Whether validation is on.
    pub fn validation(&self) -> bool {
        self.debug.is_some()
    }

    /// The validation messages so far (warnings and errors), draining them.
    pub fn take_messages(&self) -> Vec<String> {
        match &self.debug {
            Some((_, _, sink)) => sink.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Nanoseconds per timestamp tick.
    pub fn timestamp_period(&self) -> f32 {
        self.props.limits.timestamp_period
    }

    /// Waits until the device has finished everything submitted, at most
    /// [`ContextOptions::timeout`]: [`ExecError::Timeout`] past it (the work goes on; a
    /// later call waits again). The caller holds the queue (no other thread submits).
    pub fn wait_idle(&self) -> Result<()> {
        let Some(after) = self.timeout else {
            // SAFETY: the device is valid; waiting has no other precondition.
            return Ok(unsafe { self.device.device_wait_idle() }?);
        };
        let mut pending = self.idle_fences.lock().map_err(|_| ExecError::Invalid("idle fence lock poisoned".into()))?;
        // vkDeviceWaitIdle has no timeout: a fence submitted alone is signalled once all
        // earlier work on the (only) queue has completed, and a fence wait has one. A new
        // fence every time: work may have been submitted after an earlier one.
        // SAFETY: the device is valid; the fence is destroyed below or kept pending.
        let fence = unsafe { self.device.create_fence(&vk::FenceCreateInfo::default(), None) }?;
        // SAFETY: an empty batch with a fence; the caller holds the queue.
        if let Err(e) = unsafe { self.device.queue_submit2(self.queue, &[], fence) } {
            // SAFETY: the fence was never submitted.
            unsafe { self.device.destroy_fence(fence, None) };
            return Err(e.into());
        }
        // SAFETY: the fence is live and was submitted.
        match unsafe { self.device.wait_for_fences(&[fence], true, self.wait_ns()) } {
            Ok(()) => {
                // SAFETY: this fence and every earlier one (submitted before it on the same
                // queue) are signalled, so no queue operation uses them any more.
                unsafe {
                    for f in pending.drain(..) {
                        self.device.destroy_fence(f, None);
                    }
                    self.device.destroy_fence(fence, None);
                }
                self.overdue.store(false, Ordering::Release);
                Ok(())
            }
            Err(vk::Result::TIMEOUT) => {
                pending.push(fence);
                Err(self.timed_out("the device to finish its submitted work", after))
            }
            Err(e) => {
                pending.push(fence);
                Err(e.into())
            }
        }
    }

    /// [`ContextOptions::timeout`].
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// How long a wait for a run polls the timeline value before it blocks in
    /// `vkWaitSemaphores` (docs/executor.md, "Waiting").
    pub fn wait_spin(&self) -> Duration {
        Duration::from_nanos(self.wait_spin_ns.load(Ordering::Relaxed))
    }

    /// Polls `ready` for at most [`wait_spin`](Self::wait_spin): whether it became true (the
    /// caller blocks in the driver's wait when it did not).
    pub(crate) fn poll(&self, mut ready: impl FnMut() -> ash::prelude::VkResult<bool>) -> Result<bool> {
        let spin = self.wait_spin();
        if spin.is_zero() {
            return Ok(false);
        }
        let start = std::time::Instant::now();
        loop {
            if ready()? {
                return Ok(true);
            }
            if start.elapsed() >= spin {
                return Ok(false);
            }
            std::hint::spin_loop();
        }
    }

    /// Sets [`wait_spin`](Self::wait_spin); zero blocks at once.
    pub fn set_wait_spin(&self, spin: Duration) {
        let ns = u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX);
        self.wait_spin_ns.store(ns, Ordering::Relaxed);
    }

    /// The deadline of one wait in nanoseconds, as the Vulkan wait calls take it.
    pub(crate) fn wait_ns(&self) -> u64 {
        self.timeout.map_or(u64::MAX, |t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX))
    }

    /// The error of a wait for `what` that gave up after `after`; marks the context overdue.
    pub(crate) fn timed_out(&self, what: impl Into<String>, after: Duration) -> ExecError {
        self.overdue.store(true, Ordering::Release);
        ExecError::Timeout { what: what.into(), after }
    }

    /// Maps the result of a Vulkan wait for `what`: `TIMEOUT` becomes [`ExecError::Timeout`].
    pub(crate) fn waited(&self, r: ash::prelude::VkResult<()>, what: impl FnOnce() -> String) -> Result<()> {
        match r {
            Ok(()) => Ok(()),
            Err(vk::Result::TIMEOUT) => Err(self.timed_out(what(), self.timeout.unwrap_or(Duration::MAX))),
            Err(e) => Err(e.into()),
        }
    }

    /// After a wait timed out, waits (bounded) for the queue to be idle before work that
    /// reuses a fence or frees command buffers once it completes; otherwise returns at once.
    pub(crate) fn settle(&self) -> Result<()> {
        if self.overdue.load(Ordering::Acquire) {
            self.wait_idle()?;
        }
        Ok(())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: every object created from the device is destroyed by its owner before the
        // context (owners hold the context and are dropped first); the debug messenger goes
        // before the instance.
        unsafe {
            // An owner's wait for idle that already gave up (its fence is still pending) is
            // not repeated: the deadline has passed once.
            let gave_up = self
                .idle_fences
                .lock()
                .ok()
                .and_then(|p| p.last().copied())
                .is_some_and(|f| !matches!(self.device.get_fence_status(f), Ok(true)));
            if self.timeout.is_some() && (gave_up || self.wait_idle().is_err()) {
                // Still running past the deadline: destroying the device under running work
                // is undefined, and waiting is what the deadline forbids. The device and
                // instance are leaked (freed by the driver at process exit); the messages
                // are kept for `take_unreported_messages`.
                if let Some((_, _, sink)) = &self.debug {
                    keep_unreported(sink);
                }
                return;
            }
            if self.external {
                // The application's device, queue and instance: its work may be running and
                // they are its to destroy. This context's own work is done (waited above).
                if self.timeout.is_none() {
                    let _ = self.wait_idle();
                }
                if let Ok(mut pending) = self.idle_fences.lock() {
                    for f in pending.drain(..) {
                        self.device.destroy_fence(f, None);
                    }
                }
                return;
            }
            let _ = self.device.device_wait_idle();
            let _one_at_a_time = lifecycle();
            if let Ok(mut pending) = self.idle_fences.lock() {
                for f in pending.drain(..) {
                    self.device.destroy_fence(f, None);
                }
            }
            self.device.destroy_device(None);
            if let Some((du, m, sink)) = self.debug.take() {
                du.destroy_debug_utils_messenger(m, None);
                keep_unreported(&sink);
            }
            self.instance.destroy_instance(None);
        }
    }
}

/// Destroys the instance and messenger if device creation fails half-way.
struct Partial {
    instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT, Box<Messages>)>,
    /// Cleared when the context takes ownership.
    armed: bool,
}

impl Drop for Partial {
    fn drop(&mut self) {
        if self.armed {
            let instance = &self.instance;
            // SAFETY: on this path no device was kept; messenger first, then the instance.
            unsafe {
                if let Some((du, m, sink)) = self.debug.take() {
                    du.destroy_debug_utils_messenger(m, None);
                    keep_unreported(&sink);
                }
                instance.destroy_instance(None);
            }
        }
    }
}

fn rank(t: vk::PhysicalDeviceType) -> u32 {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => 0,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
        vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
        vk::PhysicalDeviceType::CPU => 3,
        _ => 4,
    }
}

/// Picks a Vulkan 1.3 device with a compute queue, honouring `choice`.
fn choose(instance: &ash::Instance, choice: &DeviceChoice) -> Result<(vk::PhysicalDevice, u32)> {
    // SAFETY: queries on a valid instance.
    let devices = unsafe { instance.enumerate_physical_devices() }?;
    let mut usable = Vec::new();
    for (i, &d) in devices.iter().enumerate() {
        // SAFETY: `d` came from this instance.
        let (p, fams) = unsafe {
            (instance.get_physical_device_properties(d), instance.get_physical_device_queue_family_properties(d))
        };
        let family = fams.iter().position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE));
        if let (Some(f), true) = (family, p.api_version >= vk::API_VERSION_1_3) {
            usable.push((i, d, f as u32, p));
        }
    }
    let pick = match choice {
        DeviceChoice::Default => usable.iter().min_by_key(|(i, _, _, p)| (rank(p.device_type), *i)),
        DeviceChoice::Index(n) => usable.iter().find(|(i, ..)| i == n),
        DeviceChoice::Name(s) => {
            let s = s.to_lowercase();
            usable.iter().find(|(_, _, _, p)| device_name(p).to_lowercase().contains(&s))
        }
    };
    let names: Vec<String> = usable.iter().map(|(i, _, _, p)| format!("{i}: {}", device_name(p))).collect();
    pick.map(|(_, d, f, _)| (*d, *f)).ok_or_else(|| {
        ExecError::Vulkan(format!("no Vulkan 1.3 compute device matches {choice} (usable: [{}])", names.join(", ")))
    })
}

fn create_device(
    entry: &ash::Entry,
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    family: u32,
) -> Result<(ash::Device, bool, EnabledFeatures)> {
    // Float atomics (codegen emits SPV_EXT_shader_atomic_float_add / _min_max for f32
    // atomics): their extensions and features are enabled where the device has them.
    // SAFETY: `physical` came from this instance.
    let exts = unsafe { instance.enumerate_device_extension_properties(physical) }?;
    let has = |name: &std::ffi::CStr| exts.iter().any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name));
    let (af1, af2) = (has(ash::ext::shader_atomic_float::NAME), has(ash::ext::shader_atomic_float2::NAME));
    let cr = has(ash::ext::conditional_rendering::NAME);
    let emh = has(ash::ext::external_memory_host::NAME);
    let esf = has(ash::khr::external_semaphore_fd::NAME);
    let cm = has(ash::khr::cooperative_matrix::NAME);
    let mut have12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut have11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut have13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut have_af1 = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
    let mut have_af2 = vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT::default();
    let mut have_cr = vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default();
    let mut have_cm = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
    let mut have =
        vk::PhysicalDeviceFeatures2::default().push_next(&mut have12).push_next(&mut have11).push_next(&mut have13);
    if af1 {
        have = have.push_next(&mut have_af1);
    }
    if af2 {
        have = have.push_next(&mut have_af2);
    }
    if cr {
        have = have.push_next(&mut have_cr);
    }
    if cm {
        have = have.push_next(&mut have_cm);
    }
    // SAFETY: `physical` came from this instance; the chain is of live locals, each of an
    // extension the device has.
    unsafe { instance.get_physical_device_features2(physical, &mut have) };
    let base = have.features;
    let (h11, h12, h13) = (have11, have12, have13);
    let mut f_af1 = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
        .shader_buffer_float32_atomics(have_af1.shader_buffer_float32_atomics != 0)
        .shader_buffer_float32_atomic_add(have_af1.shader_buffer_float32_atomic_add != 0)
        .shader_shared_float32_atomics(have_af1.shader_shared_float32_atomics != 0)
        .shader_shared_float32_atomic_add(have_af1.shader_shared_float32_atomic_add != 0);
    let mut f_af2 = vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT::default()
        .shader_buffer_float32_atomic_min_max(have_af2.shader_buffer_float32_atomic_min_max != 0)
        .shader_shared_float32_atomic_min_max(have_af2.shader_shared_float32_atomic_min_max != 0);
    let mut ext_names = Vec::new();
    if af1 {
        ext_names.push(ash::ext::shader_atomic_float::NAME.as_ptr());
    }
    if af2 {
        ext_names.push(ash::ext::shader_atomic_float2::NAME.as_ptr());
    }
    // Conditional nodes predicate their bodies on a word in memory (docs/conditional.md).
    let cr = cr && have_cr.conditional_rendering != 0;
    let mut f_cr = vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default().conditional_rendering(true);
    if cr {
        ext_names.push(ash::ext::conditional_rendering::NAME.as_ptr());
    }
    // Transfers between devices through host memory imported into both (docs/multi-device.md).
    if emh {
        ext_names.push(ash::ext::external_memory_host::NAME.as_ptr());
    }
    // Matrix multiply-adds by a subgroup (tensor cores), with bounds on their loads and stores
    // where the device has them, as robust buffer access gives every other access.
    let cm = cm && have_cm.cooperative_matrix != 0;
    let mut f_cm = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default()
        .cooperative_matrix(true)
        .cooperative_matrix_robust_buffer_access(have_cm.cooperative_matrix_robust_buffer_access != 0);
    if cm {
        ext_names.push(ash::khr::cooperative_matrix::NAME.as_ptr());
    }
    // Semaphores shared between devices (docs/multi-device.md, "One run, one wait").
    if esf {
        ext_names.push(ash::khr::external_semaphore_fd::NAME.as_ptr());
    }
    if h12.timeline_semaphore == 0 || h13.synchronization2 == 0 {
        return Err(ExecError::Vulkan("device lacks timeline semaphores or synchronization2".into()));
    }
    let uab = update_after_bind(&h12);
    // Kernel features are enabled where the device has them; what was enabled is recorded
    // (`enabled_features`) and a kernel needing a missing one is refused before the driver
    // sees it (features.rs).
    // Robust buffer access, a second line behind the bounds checks compiled into every
    // kernel and the per-memory descriptor ranges (docs/abi.md, "Bounds"): an access outside
    // a descriptor's range cannot reach other memory. Vulkan allows it beside
    // update-after-bind descriptors only where `robustBufferAccessUpdateAfterBind` holds.
    let mut p12 = vk::PhysicalDeviceVulkan12Properties::default();
    let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut p12);
    // SAFETY: `physical` came from this instance; the chain is one live local.
    unsafe { instance.get_physical_device_properties2(physical, &mut props) };
    let robust = base.robust_buffer_access != 0 && (!uab || p12.robust_buffer_access_update_after_bind != 0);
    let features = vk::PhysicalDeviceFeatures::default()
        .robust_buffer_access(robust)
        .shader_int64(base.shader_int64 != 0)
        .shader_int16(base.shader_int16 != 0)
        .shader_float64(base.shader_float64 != 0);
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default()
        .storage_buffer16_bit_access(h11.storage_buffer16_bit_access != 0)
        .uniform_and_storage_buffer16_bit_access(h11.uniform_and_storage_buffer16_bit_access != 0);
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
        .timeline_semaphore(true)
        .descriptor_indexing(h12.descriptor_indexing != 0)
        .descriptor_binding_storage_buffer_update_after_bind(uab)
        .descriptor_binding_update_unused_while_pending(uab)
        .shader_float16(h12.shader_float16 != 0)
        .shader_int8(h12.shader_int8 != 0)
        .storage_buffer8_bit_access(h12.storage_buffer8_bit_access != 0)
        .uniform_and_storage_buffer8_bit_access(h12.uniform_and_storage_buffer8_bit_access != 0)
        .vulkan_memory_model(h12.vulkan_memory_model != 0)
        .vulkan_memory_model_device_scope(h12.vulkan_memory_model_device_scope != 0)
        .host_query_reset(h12.host_query_reset != 0)
        .shader_buffer_int64_atomics(h12.shader_buffer_int64_atomics != 0)
        .shader_shared_int64_atomics(h12.shader_shared_int64_atomics != 0);
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default()
        .synchronization2(true)
        .maintenance4(h13.maintenance4 != 0)
        // `local` ops' memory starts at zero (a null initializer in the SPIR-V): required
        // of every Vulkan 1.3 device.
        .shader_zero_initialize_workgroup_memory(h13.shader_zero_initialize_workgroup_memory != 0)
        // Kernels with subgroup ops require the subgroup size the interpreter models
        // (vk/subgroup.rs).
        .subgroup_size_control(h13.subgroup_size_control != 0);
    let mut enabled = enabled_features(&features, &f11, &f12, (af1, &f_af1), (af2, &f_af2));
    enabled.set(Feature::SubgroupSizeControl, h13.subgroup_size_control != 0);
    enabled.set(Feature::ConditionalRendering, cr);
    enabled.set(Feature::ExternalMemoryHost, emh);
    enabled.set(Feature::ExternalSemaphoreFd, esf);
    enabled.set(Feature::CooperativeMatrix, cm);
    if cm {
        enabled.set_cooperative(super::cooperative::configurations(entry, instance, physical));
    }
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&ext_names)
        .enabled_features(&features)
        .push_next(&mut f11)
        .push_next(&mut f12)
        .push_next(&mut f13);
    if af1 {
        info = info.push_next(&mut f_af1);
    }
    if af2 {
        info = info.push_next(&mut f_af2);
    }
    if cr {
        info = info.push_next(&mut f_cr);
    }
    if cm {
        info = info.push_next(&mut f_cm);
    }
    // SAFETY: every pointer in `info` refers to locals alive for the call.
    Ok((unsafe { instance.create_device(physical, &info, None) }?, uab, enabled))
}

/// What `create_device` enabled, read back from the very structures it passed (so the
/// check of kernels cannot drift from device creation); the float-atomic features count
/// only when their extension was enabled.
pub(super) fn enabled_features(
    base: &vk::PhysicalDeviceFeatures,
    f11: &vk::PhysicalDeviceVulkan11Features<'_>,
    f12: &vk::PhysicalDeviceVulkan12Features<'_>,
    (af1, f_af1): (bool, &vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT<'_>),
    (af2, f_af2): (bool, &vk::PhysicalDeviceShaderAtomicFloat2FeaturesEXT<'_>),
) -> EnabledFeatures {
    let on = |b: vk::Bool32| b != 0;
    let mut e = EnabledFeatures::default();
    e.set(Feature::ShaderInt64, on(base.shader_int64));
    e.set(Feature::ShaderInt16, on(base.shader_int16));
    e.set(Feature::ShaderFloat64, on(base.shader_float64));
    e.set(Feature::StorageBuffer16BitAccess, on(f11.storage_buffer16_bit_access));
    e.set(Feature::UniformAndStorageBuffer16BitAccess, on(f11.uniform_and_storage_buffer16_bit_access));
    e.set(Feature::ShaderFloat16, on(f12.shader_float16));
    e.set(Feature::ShaderInt8, on(f12.shader_int8));
    e.set(Feature::StorageBuffer8BitAccess, on(f12.storage_buffer8_bit_access));
    e.set(Feature::UniformAndStorageBuffer8BitAccess, on(f12.uniform_and_storage_buffer8_bit_access));
    e.set(Feature::VulkanMemoryModel, on(f12.vulkan_memory_model));
    e.set(Feature::VulkanMemoryModelDeviceScope, on(f12.vulkan_memory_model_device_scope));
    e.set(Feature::BufferInt64Atomics, on(f12.shader_buffer_int64_atomics));
    e.set(Feature::SharedInt64Atomics, on(f12.shader_shared_int64_atomics));
    let float = |shared, op| Feature::FloatAtomics { shared, width: 32, op };
    e.set(Feature::ExtShaderAtomicFloat, af1);
    e.set(float(false, AtomicOp::Other), af1 && on(f_af1.shader_buffer_float32_atomics));
    e.set(float(false, AtomicOp::FloatAdd), af1 && on(f_af1.shader_buffer_float32_atomic_add));
    e.set(float(true, AtomicOp::Other), af1 && on(f_af1.shader_shared_float32_atomics));
    e.set(float(true, AtomicOp::FloatAdd), af1 && on(f_af1.shader_shared_float32_atomic_add));
    e.set(Feature::ExtShaderAtomicFloat2, af2);
    e.set(float(false, AtomicOp::FloatMinMax), af2 && on(f_af2.shader_buffer_float32_atomic_min_max));
    e.set(float(true, AtomicOp::FloatMinMax), af2 && on(f_af2.shader_shared_float32_atomic_min_max));
    e
}

/// Whether descriptors can be rewritten after recording (docs/abi.md relies on it; Mesa's
/// llvmpipe before 23 lacks it, and then a pointer moving to another buffer re-records).
pub(super) fn update_after_bind(f: &vk::PhysicalDeviceVulkan12Features<'_>) -> bool {
    f.descriptor_binding_storage_buffer_update_after_bind != 0 && f.descriptor_binding_update_unused_while_pending != 0
}

#[cfg(test)]
mod display_tests {
    use super::{DeviceChoice, DeviceKind};

    #[test]
    fn device_choices_and_kinds_read_as_words_not_rust_debug_text() {
        assert_eq!(DeviceChoice::parse("nvidia").to_string(), "name `nvidia`");
        assert_eq!(DeviceChoice::parse("2").to_string(), "index 2");
        assert_eq!(DeviceChoice::parse("").to_string(), "the default device");
        assert_eq!(DeviceKind::DiscreteGpu.to_string(), "discrete GPU");
        assert_eq!(DeviceKind::Cpu.to_string(), "CPU");
    }
}
