//! One host allocation imported into several devices (`VK_EXT_external_memory_host`): a
//! transfer between two devices is then the source device copying into it and the
//! destination device copying out of it, with no CPU copy in between
//! (docs/multi-device.md, "Running on several devices").
//!
//! The allocation is page-aligned host memory owned here, aligned and sized to every
//! device's `minImportedHostPointerAlignment`; each device sees it as a buffer bound to
//! memory imported from the pointer. It is freed only after every import is destroyed.
#![allow(unsafe_code)]

use super::context::Context;
use crate::error::{ExecError, Result};
use ash::vk;
use std::alloc::Layout;

/// The host allocation and its imports, one per device.
pub struct HostBridge {
    ptr: *mut u8,
    layout: Layout,
    /// By device: the buffer over the imported memory, and the memory.
    imports: Vec<(vk::Buffer, vk::DeviceMemory)>,
}

// SAFETY: the pointer is owned memory only this value frees; Vulkan handles are plain
// values, used under the executors' own synchronisation.
unsafe impl Send for HostBridge {}

impl HostBridge {
    /// `bytes` of host memory imported into each of `devices` (all created with the
    /// extension), or why not.
    pub fn new(devices: &[&Context], bytes: u64) -> Result<HostBridge> {
        let mut align = 4096u64;
        for ctx in devices {
            let (_, a) = ctx.external_memory_host.as_ref().ok_or_else(|| {
                ExecError::Invalid(format!("device \"{}\" lacks VK_EXT_external_memory_host", ctx.device_name()))
            })?;
            align = align.max(*a);
        }
        let size = bytes.max(1).div_ceil(align) * align;
        let layout = Layout::from_size_align(size as usize, align as usize)
            .map_err(|e| ExecError::Invalid(format!("host bridge of {size} bytes: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(ExecError::Invalid(format!("cannot allocate {size} bytes of host memory for transfers")));
        }
        let mut bridge = HostBridge { ptr, layout, imports: Vec::with_capacity(devices.len()) };
        for ctx in devices {
            match import(ctx, ptr, size) {
                Ok(i) => bridge.imports.push(i),
                Err(e) => {
                    let made = bridge.imports.len();
                    bridge.destroy(&devices[..made]);
                    return Err(e);
                }
            }
        }
        Ok(bridge)
    }

    /// The buffer device `device` sees the allocation as.
    pub fn buffer(&self, device: usize) -> Option<vk::Buffer> {
        self.imports.get(device).map(|i| i.0)
    }

    /// The allocation's size in bytes.
    pub fn size(&self) -> u64 {
        self.layout.size() as u64
    }

    /// Destroys the imports (`devices` in the order given to [`new`](Self::new); none may
    /// have work pending on them) and frees the host memory.
    pub fn destroy(mut self, devices: &[&Context]) {
        for ((buffer, memory), ctx) in self.imports.drain(..).zip(devices) {
            // SAFETY: no command using them is pending (the caller's contract).
            unsafe {
                ctx.device.destroy_buffer(buffer, None);
                ctx.device.free_memory(memory, None);
            }
        }
        // SAFETY: allocated with this layout in `new`; every import is gone.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
        self.ptr = std::ptr::null_mut();
    }
}

/// Imports `size` bytes at `ptr` into `ctx`'s device as a transfer buffer.
fn import(ctx: &Context, ptr: *mut u8, size: u64) -> Result<(vk::Buffer, vk::DeviceMemory)> {
    let (ext, _) = ctx.external_memory_host.as_ref().ok_or_else(|| ExecError::Invalid("no external memory".into()))?;
    let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
    let mut props = vk::MemoryHostPointerPropertiesEXT::default();
    // SAFETY: `ptr` points at `size` live, suitably aligned bytes this process allocated;
    // the function pointer is the device's (ash loads it; the extension is enabled).
    unsafe { (ext.fp().get_memory_host_pointer_properties_ext)(ext.device(), handle, ptr.cast(), &mut props) }
        .result()?;
    let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
    let info = vk::BufferCreateInfo::default()
        .size(size)
        .usage(
            vk::BufferUsageFlags::TRANSFER_SRC
                | vk::BufferUsageFlags::TRANSFER_DST
                | vk::BufferUsageFlags::STORAGE_BUFFER,
        )
        .sharing_mode(vk::SharingMode::EXCLUSIVE)
        .push_next(&mut external);
    // SAFETY: a valid create info; destroyed on the error paths below or by `destroy`.
    let buffer = unsafe { ctx.device.create_buffer(&info, None) }?;
    // SAFETY: the buffer was just created on this device.
    let reqs = unsafe { ctx.device.get_buffer_memory_requirements(buffer) };
    let bits = reqs.memory_type_bits & props.memory_type_bits;
    let Some(index) = (0..32).find(|i| bits & (1 << i) != 0) else {
        // SAFETY: nothing uses the buffer yet.
        unsafe { ctx.device.destroy_buffer(buffer, None) };
        return Err(ExecError::Invalid(format!(
            "device \"{}\" offers no memory type for imported host memory",
            ctx.device_name()
        )));
    };
    let mut from_host = vk::ImportMemoryHostPointerInfoEXT::default().handle_type(handle).host_pointer(ptr.cast());
    let alloc =
        vk::MemoryAllocateInfo::default().allocation_size(size).memory_type_index(index).push_next(&mut from_host);
    // SAFETY: the import info names live host memory of `size` bytes aligned as the device
    // requires; on failure the buffer is destroyed.
    let memory = match unsafe { ctx.device.allocate_memory(&alloc, None) } {
        Ok(m) => m,
        Err(e) => {
            // SAFETY: nothing uses the buffer yet.
            unsafe { ctx.device.destroy_buffer(buffer, None) };
            return Err(e.into());
        }
    };
    // SAFETY: memory and buffer are this device's, the memory as large as the buffer.
    if let Err(e) = unsafe { ctx.device.bind_buffer_memory(buffer, memory, 0) } {
        // SAFETY: nothing uses either yet.
        unsafe {
            ctx.device.destroy_buffer(buffer, None);
            ctx.device.free_memory(memory, None);
        }
        return Err(e.into());
    }
    Ok((buffer, memory))
}
