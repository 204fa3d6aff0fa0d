//! Buffers and their memory (transfers between host and device are in `transfers`).
#![allow(unsafe_code)]

use super::context::Context;
use crate::error::{ExecError, Result};
use ash::vk;

/// A buffer with its own memory; host-visible ones stay mapped.
#[derive(Debug)]
pub struct Buffer {
    pub(crate) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// Size in bytes (at least 4, a multiple of 4: zero-sized memory still gets a buffer).
    /// An imported buffer's is `base` plus the imported range.
    pub(crate) size: u64,
    mapped: Option<*mut u8>,
    /// Where the memory starts in the buffer: 0, or the offset an application's buffer was
    /// imported at ([`Buffer::imported`]).
    pub(crate) base: u64,
    /// The buffer and its memory are this executor's to destroy (not an application's).
    owned: bool,
    /// The mapping is host-cached: the host reads it at memory speed. Otherwise a read of
    /// mapped memory crosses the bus uncached, one load at a time.
    host_cached: bool,
}

// SAFETY: the mapping pointer is this buffer's alone (never shared or aliased outside
// `write`/`read`, which take `&mut self`/`&self`), so moving the buffer to another thread
// moves sole access with it; Vulkan handles themselves are plain values.
unsafe impl Send for Buffer {}

/// A buffer's handle and size, without ownership: what transfers need, and what may cross
/// to the host-task thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufRef {
    pub(crate) buffer: vk::Buffer,
    pub(crate) size: u64,
    /// The address of byte 0 of the buffer's host-coherent mapping, if it has one (its
    /// owner keeps it alive longer than the reference is used).
    pub(crate) mapped: Option<usize>,
}

impl From<&Buffer> for BufRef {
    fn from(b: &Buffer) -> BufRef {
        BufRef { buffer: b.buffer, size: b.size, mapped: b.mapped_addr() }
    }
}

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Device-local if the device has such memory (graph memory, user memory).
    Device,
    /// Host-visible and coherent, mapped (staging).
    Host,
    /// Host-visible, coherent and mapped, in device-local memory where the device has such
    /// a type (NVIDIA's BAR): what the host writes and every dispatch reads (argument blocks,
    /// indirect commands, fill patterns). From system memory each dispatch's first read of its
    /// argument block crossed PCIe. Falls back to [`Place::Host`] when that heap is full.
    Shared,
    /// Host-visible, coherent and mapped, host-cached where the device offers such a type:
    /// system memory the host reads at memory speed (`host` USM, which host tasks read and
    /// write through the mapping). The CPU reads device-local (BAR) or uncached memory
    /// across PCIe uncached: a 90 KB row took milliseconds on an H200.
    HostCached,
    /// Device-local, host-visible and coherent, mapped, where the device has such a type
    /// (NVIDIA's BAR; every type of a CPU device); else [`Place::Device`], unmapped. Small
    /// user memory: the host reads and writes it through the mapping when no submitted work
    /// is pending, without a transfer on the queue (`Executor::read`), and kernels access
    /// it as device memory.
    Mapped,
}

/// The most bytes read through an uncached mapping (device-local memory the host reads
/// across the bus, one load at a time); longer reads go through a staging copy.
pub const UNCACHED_READ_MAX: u64 = 256;

const ALL_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::TRANSFER_SRC.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw()
        | vk::BufferUsageFlags::INDIRECT_BUFFER.as_raw(),
);

impl Buffer {
    /// Creates a buffer of at least `size` bytes usable as storage, transfer and indirect buffer.
    pub fn new(ctx: &Context, size: u64, place: Place) -> Result<Buffer> {
        Buffer::with_usage(ctx, size, place, ALL_USAGE)
    }

    /// A device buffer of predicate words: also usable as the predicate of
    /// `vkCmdBeginConditionalRenderingEXT` (docs/conditional.md, "Executor").
    pub(crate) fn predicates(ctx: &Context, size: u64) -> Result<Buffer> {
        Buffer::with_usage(ctx, size, Place::Device, ALL_USAGE | vk::BufferUsageFlags::CONDITIONAL_RENDERING_EXT)
    }

    /// A `while` node's words: predicate words as [`predicates`](Self::predicates), in
    /// [`Place::Shared`] memory (mapped; device-local where the device has such a host-visible
    /// type), so that the host reads whether the loop still runs and resets the round tally
    /// through the mapping, with no transfer command on the queue (docs/conditional.md).
    pub(crate) fn loop_words(ctx: &Context, size: u64) -> Result<Buffer> {
        Buffer::with_usage(ctx, size, Place::Shared, ALL_USAGE | vk::BufferUsageFlags::CONDITIONAL_RENDERING_EXT)
    }

    /// The address the host reads a mapped buffer at (`None`: not mapped). For a reader on
    /// another thread that holds no borrow of the buffer: its owner keeps it alive longer.
    pub(crate) fn mapped_addr(&self) -> Option<usize> {
        self.mapped.map(|p| p as usize)
    }

    fn with_usage(ctx: &Context, size: u64, place: Place, usage: vk::BufferUsageFlags) -> Result<Buffer> {
        let size = size
            .max(4)
            .checked_next_multiple_of(4)
            .ok_or_else(|| ExecError::Invalid("buffer size overflows".into()))?;
        let info = vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid create info; the buffer is destroyed by `destroy` or on the error path.
        let buffer = unsafe { ctx.device.create_buffer(&info, None) }?;
        // SAFETY: `buffer` is a live buffer of this device.
        let req = unsafe { ctx.device.get_buffer_memory_requirements(buffer) };
        let (want, need) = match place {
            Place::Device => (vk::MemoryPropertyFlags::DEVICE_LOCAL, vk::MemoryPropertyFlags::empty()),
            Place::Host => (
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            ),
            Place::Shared => (
                vk::MemoryPropertyFlags::DEVICE_LOCAL,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            ),
            Place::Mapped => (
                vk::MemoryPropertyFlags::empty(),
                vk::MemoryPropertyFlags::DEVICE_LOCAL
                    | vk::MemoryPropertyFlags::HOST_VISIBLE
                    | vk::MemoryPropertyFlags::HOST_COHERENT,
            ),
            Place::HostCached => (
                vk::MemoryPropertyFlags::HOST_CACHED,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            ),
        };
        let types = &ctx.mem_props.memory_types[..ctx.mem_props.memory_type_count.min(32) as usize];
        let fits = |i: usize, flags: vk::MemoryPropertyFlags| {
            req.memory_type_bits & (1 << i) != 0 && types[i].property_flags.contains(flags)
        };
        let index =
            (0..types.len()).find(|&i| fits(i, want | need)).or_else(|| (0..types.len()).find(|&i| fits(i, need)));
        let Some(index) = index else {
            // SAFETY: the buffer has no memory bound and is not in use.
            unsafe { ctx.device.destroy_buffer(buffer, None) };
            if place == Place::Mapped {
                return Buffer::with_usage(ctx, size, Place::Device, usage);
            }
            return Err(ExecError::Vulkan(format!("no memory type for a {place:?} buffer")));
        };
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(index as u32);
        // SAFETY: valid allocate info for this device.
        let memory = match unsafe { ctx.device.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: as above, the buffer is unused.
                unsafe { ctx.device.destroy_buffer(buffer, None) };
                if place == Place::Shared {
                    ctx.shared_fallbacks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    return Buffer::with_usage(ctx, size, Place::Host, usage);
                }
                if place == Place::Mapped {
                    // That heap is full (a BAR of 256 MiB): kernels keep device memory.
                    return Buffer::with_usage(ctx, size, Place::Device, usage);
                }
                return Err(ExecError::Vulkan(format!("allocating {size} bytes: {e:?}")));
            }
        };
        let host_cached = types[index].property_flags.contains(vk::MemoryPropertyFlags::HOST_CACHED);
        let mut out = Buffer { buffer, memory, size, mapped: None, base: 0, owned: true, host_cached };
        // SAFETY: memory was allocated for this buffer's requirements, offset 0.
        if let Err(e) = unsafe { ctx.device.bind_buffer_memory(buffer, memory, 0) } {
            out.destroy(ctx);
            return Err(e.into());
        }
        if place != Place::Device {
            // SAFETY: host-visible memory, mapped whole once, unmapped when freed.
            match unsafe { ctx.device.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) } {
                Ok(p) => out.mapped = Some(p.cast()),
                Err(e) => {
                    out.destroy(ctx);
                    return Err(e.into());
                }
            }
        }
        Ok(out)
    }

    /// An application's buffer, `range` bytes from `base` (the application keeps it alive
    /// and destroys it).
    pub(crate) fn imported(buffer: vk::Buffer, base: u64, range: u64) -> Buffer {
        let size = base.saturating_add(range);
        Buffer { buffer, memory: vk::DeviceMemory::null(), size, mapped: None, base, owned: false, host_cached: false }
    }

    /// Whether the host reads `len` bytes of this buffer through its mapping faster than
    /// through a staging copy: mapped, and host-cached or at most [`UNCACHED_READ_MAX`] bytes.
    pub(crate) fn reads_mapped(&self, len: u64) -> bool {
        self.is_mapped() && (self.host_cached || len <= UNCACHED_READ_MAX)
    }

    /// Whether the buffer is mapped (the host may write it through the mapping).
    pub(crate) fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// Whether this is an application's buffer.
    pub(crate) fn is_imported(&self) -> bool {
        !self.owned
    }

    /// Frees the buffer and its memory; the device must no longer use it. An imported
    /// buffer is only forgotten.
    pub fn destroy(&mut self, ctx: &Context) {
        if !self.owned {
            self.buffer = vk::Buffer::null();
            return;
        }
        // SAFETY: callers destroy a buffer only after the device finished with it; null
        // handles (already destroyed) are ignored by Vulkan.
        unsafe {
            ctx.device.destroy_buffer(self.buffer, None);
            ctx.device.free_memory(self.memory, None);
        }
        self.buffer = vk::Buffer::null();
        self.memory = vk::DeviceMemory::null();
        self.mapped = None;
    }

    /// Writes `bytes` at `offset` of a mapped buffer (the device must not be using that range).
    pub fn write(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let end = offset.checked_add(bytes.len() as u64).filter(|&e| e <= self.size);
        match (self.mapped, end) {
            (Some(p), Some(_)) => {
                // SAFETY: the range is inside the mapping (checked above) and `&mut self` makes
                // this the only host access.
                let dst = unsafe { std::slice::from_raw_parts_mut(p.add(offset as usize), bytes.len()) };
                host_copy(dst, bytes);
            }
            _ => {
                return Err(ExecError::Invalid(format!(
                    "write of {} bytes at {offset} outside a {}-byte buffer",
                    bytes.len(),
                    self.size
                )))
            }
        }
        Ok(())
    }

    /// Reads `len` bytes at `offset` of a mapped buffer.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        if offset.checked_add(len).is_none_or(|e| e > self.size) {
            return Err(ExecError::Invalid(format!(
                "read of {len} bytes at {offset} outside a {}-byte buffer",
                self.size
            )));
        }
        let mut out = vec![0u8; len as usize];
        self.read_into(offset, &mut out)?;
        Ok(out)
    }

    /// [`read`](Self::read) into `out` (its length is the byte count).
    pub fn read_into(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        let len = out.len() as u64;
        let end = offset.checked_add(len).filter(|&e| e <= self.size);
        match (self.mapped, end) {
            (Some(p), Some(_)) => {
                // SAFETY: the range is inside the mapping (checked above) and `out` is a
                // distinct allocation of `len` bytes.
                let src = unsafe { std::slice::from_raw_parts(p.add(offset as usize), out.len()) };
                host_copy(out, src);
                Ok(())
            }
            _ => {
                Err(ExecError::Invalid(format!("read of {len} bytes at {offset} outside a {}-byte buffer", self.size)))
            }
        }
    }
}

/// Bytes from which [`host_copy`] splits a copy across threads.
pub const PARALLEL_COPY: usize = 4 << 20;

/// Copies `src` into `dst` (equal lengths) on the host: from [`PARALLEL_COPY`] bytes on, in
/// slices on up to eight scoped threads. A `read` fills memory the process has not touched
/// yet, and on the H200 machine (a virtual machine) the page faults, not the copy, made one
/// thread move 1.6 GB/s out of the staging buffer (docs/performance.md, "Host transfers").
pub fn host_copy(dst: &mut [u8], src: &[u8]) {
    if dst.len() < PARALLEL_COPY || dst.len() != src.len() {
        dst.copy_from_slice(src);
        return;
    }
    // Asked once: `available_parallelism` reads the cgroup's files on Linux, tens of
    // microseconds that every argument-block write paid when it was asked per copy.
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let threads = *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(8));
    if threads < 2 {
        dst.copy_from_slice(src);
        return;
    }
    // Slices of whole pages (no two threads fault on one page), taken from one queue by this
    // thread and the helpers: a helper the system cannot start leaves its share to the others.
    let slice = (1 << 20).max(dst.len().div_ceil(4 * threads).next_multiple_of(4096));
    let work = std::sync::Mutex::new(dst.chunks_mut(slice).zip(src.chunks(slice)));
    let drain = || loop {
        let next = work.lock().unwrap_or_else(|p| p.into_inner()).next();
        match next {
            Some((d, from)) => d.copy_from_slice(from),
            None => break,
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            let _ = std::thread::Builder::new().spawn_scoped(s, drain);
        }
        drain();
    });
}

/// A global memory barrier: all writes of `src` stages visible to all accesses of `dst`.
pub fn full_barrier(
    device: &ash::Device,
    cb: vk::CommandBuffer,
    src: vk::PipelineStageFlags2,
    dst: vk::PipelineStageFlags2,
) {
    let dst_access = if dst.contains(vk::PipelineStageFlags2::HOST) {
        vk::AccessFlags2::MEMORY_READ
            | vk::AccessFlags2::MEMORY_WRITE
            | vk::AccessFlags2::HOST_READ
            | vk::AccessFlags2::HOST_WRITE
    } else {
        vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE
    };
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(src)
        .src_access_mask(vk::AccessFlags2::MEMORY_WRITE)
        .dst_stage_mask(dst)
        .dst_access_mask(dst_access)];
    let dep = vk::DependencyInfo::default().memory_barriers(&barrier);
    // SAFETY: `cb` is in the recording state (callers' contract).
    unsafe { device.cmd_pipeline_barrier2(cb, &dep) };
}

#[cfg(test)]
mod tests {
    use super::{host_copy, PARALLEL_COPY};

    /// Below, at and past the threshold, with lengths that are not whole pages or slices:
    /// every byte arrives, in place.
    #[test]
    fn host_copy_moves_every_byte_in_order() {
        for len in [0, 1, 4099, PARALLEL_COPY - 1, PARALLEL_COPY, PARALLEL_COPY + 13, 3 * PARALLEL_COPY + 4097] {
            let src: Vec<u8> = (0..len).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
            let mut dst = vec![0xA5u8; len];
            host_copy(&mut dst, &src);
            assert!(dst == src, "{len} bytes");
        }
    }
}
