//! USM: allocations of a context, addressed from C by plain pointers, and copies between
//! them and host memory.
//!
//! Every allocation gets an address range of its own, reserved in the host's address space
//! (zeroed, never touched by the library, so it costs no memory until written), so that C
//! and C++ code can hold a `float *`, index it and do pointer arithmetic as with SYCL's
//! `malloc_device`. The registry maps an address inside a range back to the allocation and
//! offset; an address outside every range is host memory. The device contents live in the
//! context (`cmdgraph-sycl`); the reserved bytes are not coherent with them: read and write
//! through `cmdgraph_sycl_memcpy`/`cmdgraph_sycl_queue_memcpy`.

use crate::context::{cmdgraph_sycl_context, Shared};
use crate::error::{cmdgraph_sycl_status, Error, Result};
use crate::{clear_out, put, with};
use cmdgraph_sycl::{Ptr, ScalarType, Type, Usm, UsmKind};
use std::alloc::Layout;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::rc::Rc;

/// Element types of USM allocations, fills and scalar kernel arguments (the IR's scalar
/// types; `F16` values travel as their binary16 bits).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_type {
    /// `bool` (one byte, 0 or 1).
    CMDGRAPH_SYCL_BOOL = 0,
    /// `i8`
    CMDGRAPH_SYCL_I8 = 1,
    /// `u8`
    CMDGRAPH_SYCL_U8 = 2,
    /// `i16`
    CMDGRAPH_SYCL_I16 = 3,
    /// `u16`
    CMDGRAPH_SYCL_U16 = 4,
    /// `i32`
    CMDGRAPH_SYCL_I32 = 5,
    /// `u32`
    CMDGRAPH_SYCL_U32 = 6,
    /// `i64`
    CMDGRAPH_SYCL_I64 = 7,
    /// `u64`
    CMDGRAPH_SYCL_U64 = 8,
    /// `f16`
    CMDGRAPH_SYCL_F16 = 9,
    /// `f32`
    CMDGRAPH_SYCL_F32 = 10,
    /// `f64`
    CMDGRAPH_SYCL_F64 = 11,
}

/// USM allocation kinds (`sycl::usm::alloc`).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum cmdgraph_sycl_usm_kind {
    /// `usm::alloc::device`
    CMDGRAPH_SYCL_USM_DEVICE = 0,
    /// `usm::alloc::shared`
    CMDGRAPH_SYCL_USM_SHARED = 1,
    /// `usm::alloc::host`
    CMDGRAPH_SYCL_USM_HOST = 2,
}

/// The scalar type of a `cmdgraph_sycl_type` value from C (any other number is an error).
pub(crate) fn scalar_type(value: i32) -> Result<ScalarType> {
    Ok(match value {
        0 => ScalarType::Bool,
        1 => ScalarType::I8,
        2 => ScalarType::U8,
        3 => ScalarType::I16,
        4 => ScalarType::U16,
        5 => ScalarType::I32,
        6 => ScalarType::U32,
        7 => ScalarType::I64,
        8 => ScalarType::U64,
        9 => ScalarType::F16,
        10 => ScalarType::F32,
        11 => ScalarType::F64,
        v => return Err(Error::invalid(format!("{v} is not a cmdgraph_sycl_type (0 to 11)"))),
    })
}

/// The allocation kind of a `cmdgraph_sycl_usm_kind` value from C.
pub(crate) fn usm_kind(value: i32) -> Result<UsmKind> {
    Ok(match value {
        0 => UsmKind::Device,
        1 => UsmKind::Shared,
        2 => UsmKind::Host,
        v => return Err(Error::invalid(format!("{v} is not a cmdgraph_sycl_usm_kind (0 to 2)"))),
    })
}

/// An address range reserved for one allocation: zeroed host memory the library never
/// reads or writes, so the operating system backs it lazily.
struct Reservation {
    ptr: *mut u8,
    layout: Layout,
}

impl Reservation {
    fn new(bytes: u64) -> Result<Reservation> {
        let size = usize::try_from(bytes.max(1))
            .map_err(|_| Error::invalid(format!("{bytes} bytes do not fit the address space")))?;
        let layout = Layout::from_size_align(size, 256)
            .map_err(|_| Error::invalid(format!("{bytes} bytes do not fit the address space")))?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::invalid(format!("cannot reserve {bytes} bytes of address space")));
        }
        Ok(Reservation { ptr, layout })
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// What an address range stands for: a USM allocation, or a graph-owned allocation whose
/// pointer exists once its command group has been added (`async_malloc`).
#[derive(Clone)]
pub(crate) enum Target {
    Usm(Usm),
    Alloc(Rc<RefCell<Option<Ptr>>>),
}

struct Entry {
    reservation: Reservation,
    bytes: u64,
    target: Target,
}

/// The context's allocations by start address.
#[derive(Default)]
pub(crate) struct Registry {
    entries: BTreeMap<usize, Entry>,
}

impl Registry {
    /// Reserves a range of `bytes` for `target` and returns its start.
    pub(crate) fn insert(&mut self, bytes: u64, target: Target) -> Result<*mut c_void> {
        self.insert_reserved(Reservation::new(bytes)?, bytes, target)
    }

    /// Registers a range reserved before its target was made.
    fn insert_reserved(&mut self, reservation: Reservation, bytes: u64, target: Target) -> Result<*mut c_void> {
        let ptr = reservation.ptr;
        self.entries.insert(ptr as usize, Entry { reservation, bytes, target });
        Ok(ptr.cast())
    }

    /// The allocation holding `addr` and the offset into it, or None for host memory.
    pub(crate) fn find(&self, addr: *const c_void) -> Option<(Target, u64, u64)> {
        let a = addr as usize;
        let (start, e) = self.entries.range(..=a).next_back()?;
        let offset = (a - start) as u64;
        (offset < e.bytes.max(1)).then(|| (e.target.clone(), offset, e.bytes))
    }

    /// Frees the allocation starting at `addr`.
    fn remove(&mut self, addr: *const c_void) -> Result<()> {
        match self.entries.remove(&(addr as usize)) {
            Some(e) => {
                debug_assert_eq!(e.reservation.ptr as usize, addr as usize);
                Ok(())
            }
            None => Err(Error::new(
                cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_NOT_FOUND,
                format!("free: {addr:p} is not the start of an allocation of this context"),
            )),
        }
    }
}

/// The device pointer of `addr`: an allocation of the context (at its offset), or an error
/// naming `what` when it is host memory or an allocation not made yet.
pub(crate) fn device_ptr(shared: &Shared, addr: *const c_void, what: &str) -> Result<Ptr> {
    match shared.registry.borrow().find(addr) {
        Some((Target::Usm(u), offset, _)) => Ok(u.ptr().byte_add(offset)),
        Some((Target::Alloc(slot), offset, _)) => match &*slot.borrow() {
            Some(p) => Ok(p.byte_add(offset)),
            None => Err(Error::invalid(format!(
                "{what}: {addr:p} is a graph allocation whose async_malloc command group has not been added yet"
            ))),
        },
        None if addr.is_null() => Err(Error::invalid(format!("{what}: the pointer is NULL"))),
        None => Err(Error::new(
            cmdgraph_sycl_status::CMDGRAPH_SYCL_ERROR_NOT_FOUND,
            format!("{what}: {addr:p} is not in a USM allocation of this context"),
        )),
    }
}

/// A USM allocation of `addr` with the offset of `addr` into it and the bytes left from
/// there, or None when `addr` is host memory.
pub(crate) fn usm_at(shared: &Shared, addr: *const c_void) -> Result<Option<(Usm, u64, u64)>> {
    match shared.registry.borrow().find(addr) {
        Some((Target::Usm(u), offset, bytes)) => Ok(Some((u, offset, bytes - offset))),
        Some((Target::Alloc(_), _, _)) => Err(Error::invalid(format!(
            "{addr:p} is a graph-owned allocation: the host reaches it only inside the graph"
        ))),
        None => Ok(None),
    }
}

/// A host copy of `bytes` bytes from `src` to `dst`, each USM or host memory: blocking (it
/// waits for the runs that touch the allocation).
///
/// # Safety
/// A host end is readable (`src`) or writable (`dst`) for `bytes` bytes.
pub(crate) unsafe fn host_copy(shared: &Shared, dst: *mut c_void, src: *const c_void, bytes: u64) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let len = usize::try_from(bytes).map_err(|_| Error::invalid("the byte count does not fit the address space"))?;
    if dst.is_null() || src.is_null() {
        return Err(Error::invalid("memcpy: a NULL pointer"));
    }
    match (usm_at(shared, dst)?, usm_at(shared, src)?) {
        (Some((d, off, _)), None) => {
            // SAFETY: `src` is readable for `bytes` bytes by the caller's contract.
            let data = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) };
            d.write_bytes(off, data)?;
        }
        (None, Some((s, off, _))) => {
            let data = s.read_bytes_at(off, bytes)?;
            // SAFETY: `dst` is writable for `bytes` bytes by the caller's contract; `data` is ours.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst.cast::<u8>(), len) };
        }
        (Some((d, doff, _)), Some((s, soff, _))) => {
            let data = s.read_bytes_at(soff, bytes)?;
            d.write_bytes(doff, &data)?;
        }
        // SAFETY: both ends are host memory valid for `bytes` bytes; `copy` allows overlap.
        (None, None) => unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), len) },
    }
    Ok(())
}

/// Allocates `count` elements of `type_` (a `cmdgraph_sycl_type`) of kind `kind` (a
/// `cmdgraph_sycl_usm_kind`), zeroed, and stores its address in `*out` (NULL on error). The
/// address is the context's (pass it to kernels, copies, fills) and not host-accessible: the
/// library reserves the range but keeps the contents in the context, so use
/// `cmdgraph_sycl_memcpy` to read and write it. Freed by `cmdgraph_sycl_free` or with the
/// context.
///
/// # Safety
/// `ctx` is NULL or a live context; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_malloc(
    ctx: *mut cmdgraph_sycl_context,
    kind: i32,
    type_: i32,
    count: u64,
    out: *mut *mut c_void,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(ctx, |c| {
            clear_out(out, "pointer")?;
            let (kind, scalar) = (usm_kind(kind)?, scalar_type(type_)?);
            let elem = Type::scalar(scalar);
            let bytes =
                elem.size().checked_mul(count).ok_or_else(|| Error::invalid("the allocation's byte size overflows"))?;
            // The address range first: a size the host cannot reserve fails here, before the
            // context allocates the contents.
            let reservation = Reservation::new(bytes)?;
            let usm = Usm::new(&c.shared.ctx, None, elem, count, kind)?;
            let ptr = c.shared.registry.borrow_mut().insert_reserved(reservation, bytes, Target::Usm(usm))?;
            put(out, ptr, "pointer")
        })
    }
}

/// Frees an allocation of `cmdgraph_sycl_malloc` (its start address); NULL does nothing. The
/// address is no longer the context's; graphs that use it keep the memory object.
///
/// # Safety
/// `ctx` is NULL or a live context.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_free(ctx: *mut cmdgraph_sycl_context, ptr: *mut c_void) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe {
        with(ctx, |c| {
            if ptr.is_null() {
                return Ok(());
            }
            c.shared.registry.borrow_mut().remove(ptr)
        })
    }
}

/// Copies `bytes` bytes from `src` to `dst`, each a USM address of the context or host
/// memory, blocking: a USM end waits for the runs submitted so far. Copies inside a graph are
/// `cmdgraph_sycl_cg_memcpy`.
///
/// # Safety
/// `ctx` is NULL or a live context; a host end is valid for `bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn cmdgraph_sycl_memcpy(
    ctx: *mut cmdgraph_sycl_context,
    dst: *mut c_void,
    src: *const c_void,
    bytes: u64,
) -> cmdgraph_sycl_status {
    // SAFETY: the caller's contract.
    unsafe { with(ctx, |c| host_copy(&c.shared, dst, src, bytes)) }
}
