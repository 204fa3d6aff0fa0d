//! `sycl::buffer` and its accessors: buffers are module memory objects reached by
//! commands only through accessors, whose modes decide accessor edges.

use crate::error::{Result, SyclError};
use crate::graph::GraphInner;
use crate::memory::{check_elem, from_bytes, to_bytes, Element, MemHandle};
use crate::platform::Context;
use cmdgraph_ir::{Access, Handle, MemoryKind, MemoryObject, Type};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

pub(crate) struct BufferInner {
    pub(crate) mem: MemHandle,
    /// Created over host data: destroying it would write back unless turned off.
    host_data: bool,
    write_back: Cell<bool>,
    /// Graphs that recorded commands using this buffer (for host accessors, row 55).
    pub(crate) recorded_in: RefCell<Vec<Weak<RefCell<GraphInner>>>>,
}

/// A `sycl::buffer`: `buffer @b : T[N]`, reached by commands through accessors.
/// Copies share one buffer.
#[derive(Clone)]
pub struct Buffer(pub(crate) Rc<BufferInner>);

impl Buffer {
    /// A buffer of `count` elements of `elem` with no host data, named `name` (or `bufN`).
    pub fn new(ctx: &Context, name: Option<&str>, elem: Type, count: u64) -> Result<Buffer> {
        let mem = MemHandle::create(ctx, name, "buf", elem, count, MemoryKind::Buffer)?;
        Ok(Buffer(Rc::new(BufferInner {
            mem,
            host_data: false,
            write_back: Cell::new(false),
            recorded_in: RefCell::new(Vec::new()),
        })))
    }

    /// `buffer{hostData, range}`: a buffer over host data. Its contents start as `data`, and
    /// it writes back on destruction until [`Buffer::set_write_back`]`(false)` or
    /// [`Buffer::set_final_data_none`] turns that off.
    pub fn from_host<T: Element>(ctx: &Context, name: Option<&str>, data: &[T]) -> Result<Buffer> {
        let mem = MemHandle::create(ctx, name, "buf", T::TYPE, data.len() as u64, MemoryKind::Buffer)?;
        mem.write_raw(0, &to_bytes(data))?;
        Ok(Buffer(Rc::new(BufferInner {
            mem,
            host_data: true,
            write_back: Cell::new(true),
            recorded_in: RefCell::new(Vec::new()),
        })))
    }

    /// `buffer::set_write_back(flag)`.
    pub fn set_write_back(&self, flag: bool) {
        self.0.write_back.set(flag && self.0.host_data);
    }

    /// `buffer::set_final_data(nullptr)`: no write-back.
    pub fn set_final_data_none(&self) {
        self.0.write_back.set(false);
    }

    /// Whether destroying the buffer would write back to host memory.
    pub fn writes_back(&self) -> bool {
        self.0.write_back.get()
    }

    /// The IR name (without `@`).
    pub fn name(&self) -> &str {
        &self.0.mem.name
    }

    /// Element type.
    pub fn elem(&self) -> Type {
        self.0.mem.elem
    }

    /// Element count.
    pub fn count(&self) -> u64 {
        self.0.mem.count
    }

    /// The module memory object.
    pub fn handle(&self) -> Handle<MemoryObject> {
        self.0.mem.handle
    }

    /// A placeholder accessor (`accessor{buf, mode}` without a handler); a command group
    /// uses it after `Handler::require`.
    pub fn placeholder(&self, mode: Access) -> Accessor {
        Accessor { buffer: self.clone(), mode, range: None }
    }

    /// A placeholder accessor on elements `[lo, hi)`.
    pub fn placeholder_range(&self, mode: Access, lo: u64, hi: u64) -> Accessor {
        Accessor { buffer: self.clone(), mode, range: Some((lo, hi)) }
    }

    /// Row 55: host access is invalid while a graph that recorded commands using this
    /// buffer is still recording.
    fn check_host_access(&self, what: &str) -> Result<()> {
        let recording = self.0.recorded_in.borrow().iter().filter_map(Weak::upgrade).any(|g| g.borrow().is_recording());
        if recording {
            return Err(SyclError::invalid(
                55,
                format!(
                    "{what} on buffer `@{}`, which commands being recorded to a graph use; end recording first",
                    self.name()
                ),
            ));
        }
        Ok(())
    }

    /// A host accessor: the buffer's contents, read on the host. Invalid (row 55) while a
    /// graph that recorded commands using this buffer is still recording.
    pub fn host_access<T: Element>(&self) -> Result<Vec<T>> {
        self.check_host_access("host accessor")?;
        check_elem::<T>(&format!("buffer `@{}`", self.name()), self.elem())?;
        Ok(from_bytes(&self.0.mem.read_raw()))
    }

    /// A host accessor writing raw bytes at byte `offset`, whatever the element type: the
    /// 8-bit view of the buffer (the IR has no 8-bit element type). A range past the
    /// buffer's end is an `invalid` error naming it, and so (row 55) is a buffer that
    /// commands being recorded to a graph use; nothing is written then.
    pub fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.check_host_access("Buffer::write_bytes")?;
        self.0.mem.write_bytes("Buffer::write_bytes", offset, data)
    }

    /// A host accessor reading all the buffer's bytes (the elements' little-endian
    /// encoding); row 55 as for [`Buffer::host_access`].
    pub fn read_bytes(&self) -> Result<Vec<u8>> {
        self.check_host_access("Buffer::read_bytes")?;
        self.0.mem.read_bytes("Buffer::read_bytes", 0, self.0.mem.bytes())
    }

    /// `len` bytes of the buffer from byte `offset`; a range past its end is an `invalid`
    /// error naming the buffer; row 55 as for [`Buffer::host_access`].
    pub fn read_bytes_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.check_host_access("Buffer::read_bytes_at")?;
        self.0.mem.read_bytes("Buffer::read_bytes_at", offset, len)
    }

    /// Whether two handles name the same buffer.
    pub fn same(&self, other: &Buffer) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer(@{})", self.name())
    }
}

/// A buffer accessor: the buffer, the access mode and an optional element range.
#[derive(Clone, Debug)]
pub struct Accessor {
    pub(crate) buffer: Buffer,
    pub(crate) mode: Access,
    pub(crate) range: Option<(u64, u64)>,
}

impl Accessor {
    /// The accessed buffer.
    pub fn buffer(&self) -> &Buffer {
        &self.buffer
    }

    /// The access mode.
    pub fn mode(&self) -> Access {
        self.mode
    }

    /// The element range `[lo, hi)` it accesses; `None` for the whole buffer.
    pub fn range(&self) -> Option<(u64, u64)> {
        self.range
    }

    /// The elements it accesses, `[lo, hi)`, checked against the buffer: a range that is
    /// empty or runs past the buffer's end is an `invalid` error naming the buffer (a
    /// placeholder range is only checked when a command uses it).
    pub(crate) fn elements(&self, what: &str) -> Result<(u64, u64)> {
        let count = self.buffer.count();
        let (lo, hi) = self.range.unwrap_or((0, count));
        if (self.range.is_some() && lo >= hi) || hi > count {
            return Err(SyclError::invalid(
                0,
                format!(
                    "{what}: accessor range {lo}..{hi} is outside buffer `@{}` of {count} elements",
                    self.buffer.name()
                ),
            ));
        }
        Ok((lo, hi))
    }

    pub(crate) fn to_ir(&self) -> cmdgraph_ir::Accessor {
        cmdgraph_ir::Accessor {
            buffer: cmdgraph_ir::MemRef::Memory(self.buffer.handle()),
            mode: self.mode,
            range: self.range,
        }
    }
}
