//! Memory the graphs of a context use: USM allocations, buffers (reached through
//! accessors), `device_global`s, and pointers into them or into graph-owned allocations.
//!
//! Each USM allocation, buffer and `device_global` is a module memory object of the
//! context (element type + count) with its contents kept by the context, so the host can
//! fill inputs and read results around graph executions.

use crate::error::{Result, SyclError};
use crate::graph::GraphInner;
use crate::platform::Context;
use cmdgraph_ir::{
    Access, DeviceGlobal as DgProps, Handle, LitValue, MemoryKind, MemoryObject, Node, ScalarType, Type, UsmKind,
};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

/// A Rust type that can be an element of device memory.
pub trait Element: Copy {
    /// The IR type.
    const TYPE: Type;
    /// Appends the little-endian bytes of `self`.
    fn put(self, out: &mut Vec<u8>);
    /// Reads a value from `TYPE.size()` little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($t:ty, $scalar:expr) => {
        impl Element for $t {
            const TYPE: Type = Type::scalar($scalar);
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                let n = raw.len().min(bytes.len());
                raw[..n].copy_from_slice(&bytes[..n]);
                <$t>::from_le_bytes(raw)
            }
        }
    };
}
element!(f32, ScalarType::F32);
element!(i32, ScalarType::I32);
element!(u32, ScalarType::U32);
element!(i64, ScalarType::I64);
element!(u64, ScalarType::U64);

impl Element for bool {
    const TYPE: Type = Type::BOOL;
    fn put(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn get(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|b| *b != 0)
    }
}

/// Encodes a slice of elements as bytes.
pub fn to_bytes<T: Element>(data: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * T::TYPE.size() as usize);
    data.iter().for_each(|v| v.put(&mut out));
    out
}

/// Decodes bytes as elements (a trailing partial element is dropped).
pub fn from_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::TYPE.size() as usize).map(T::get).collect()
}

/// Checks that host data of type `T` may be copied to or from memory of element type `elem`.
fn check_elem<T: Element>(what: &str, elem: Type) -> Result<()> {
    if T::TYPE != elem {
        return Err(SyclError::invalid(
            0,
            format!("{what} holds {elem} elements, not {}; use the element type it was created with", T::TYPE),
        ));
    }
    Ok(())
}

/// Shared parts of every module memory object.
#[derive(Clone)]
pub(crate) struct MemHandle {
    pub(crate) ctx: Context,
    pub(crate) handle: Handle<MemoryObject>,
    pub(crate) name: String,
    pub(crate) elem: Type,
    pub(crate) count: u64,
}

impl MemHandle {
    fn create(
        ctx: &Context,
        name: Option<&str>,
        prefix: &str,
        elem: Type,
        count: u64,
        kind: MemoryKind,
    ) -> Result<Self> {
        if elem.size().checked_mul(count).is_none_or(|b| b > (1 << 40)) {
            return Err(SyclError::invalid(0, format!("{count} elements of {elem} do not fit in device memory")));
        }
        let mut inner = ctx.0.borrow_mut();
        let name = inner.claim_name(name, prefix)?;
        let mem = MemoryObject { name: name.clone(), elem, count, kind, comments: Default::default() };
        let handle = inner.add_memory(mem);
        Ok(MemHandle { ctx: ctx.clone(), handle, name, elem, count })
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.elem.size() * self.count
    }

    fn write_raw(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut inner = self.ctx.0.borrow_mut();
        let store = inner.store.get_mut(self.handle.index()).ok_or_else(|| missing(&self.name))?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.checked_add(data.len()).filter(|e| *e <= store.len()).ok_or_else(|| {
            SyclError::invalid(
                0,
                format!("writing {} bytes at byte {offset} runs past the end of `@{}`", data.len(), self.name),
            )
        })?;
        store[start..end].copy_from_slice(data);
        Ok(())
    }

    fn read_raw(&self) -> Vec<u8> {
        self.ctx.0.borrow().store.get(self.handle.index()).cloned().unwrap_or_default()
    }
}

fn missing(name: &str) -> SyclError {
    SyclError::invalid(0, format!("memory `@{name}` has no storage in its context"))
}

/// A USM allocation (`malloc_device`, `malloc_shared`, `malloc_host`): `usm @x : T[N]`.
#[derive(Clone)]
pub struct Usm {
    pub(crate) mem: MemHandle,
    kind: UsmKind,
}

impl Usm {
    /// Allocates `count` elements of `elem` of USM `kind`, named `name` (or `usmN`).
    pub fn new(ctx: &Context, name: Option<&str>, elem: Type, count: u64, kind: UsmKind) -> Result<Usm> {
        Ok(Usm { mem: MemHandle::create(ctx, name, "usm", elem, count, MemoryKind::Usm(kind))?, kind })
    }

    /// `sycl::malloc_device<T>(count, ctx)`.
    pub fn device<T: Element>(ctx: &Context, count: u64) -> Result<Usm> {
        Usm::new(ctx, None, T::TYPE, count, UsmKind::Device)
    }

    /// `sycl::malloc_shared<T>(count, ctx)`.
    pub fn shared<T: Element>(ctx: &Context, count: u64) -> Result<Usm> {
        Usm::new(ctx, None, T::TYPE, count, UsmKind::Shared)
    }

    /// The IR name (without `@`).
    pub fn name(&self) -> &str {
        &self.mem.name
    }

    /// Element type.
    pub fn elem(&self) -> Type {
        self.mem.elem
    }

    /// Element count.
    pub fn count(&self) -> u64 {
        self.mem.count
    }

    /// The USM kind.
    pub fn kind(&self) -> UsmKind {
        self.kind
    }

    /// The module memory object.
    pub fn handle(&self) -> Handle<MemoryObject> {
        self.mem.handle
    }

    /// A pointer to the first element.
    pub fn ptr(&self) -> Ptr {
        Ptr { base: PtrBase::Usm(self.clone()), offset: 0 }
    }

    /// A pointer to element `index`.
    pub fn at(&self, index: u64) -> Ptr {
        Ptr { base: PtrBase::Usm(self.clone()), offset: index.saturating_mul(self.mem.elem.size()) }
    }

    /// Copies host data into the allocation from element 0 (a blocking host copy).
    pub fn write<T: Element>(&self, data: &[T]) -> Result<()> {
        check_elem::<T>(&format!("`@{}`", self.mem.name), self.mem.elem)?;
        self.mem.write_raw(0, &to_bytes(data))
    }

    /// Copies the whole allocation to the host (a blocking host copy).
    pub fn read<T: Element>(&self) -> Result<Vec<T>> {
        check_elem::<T>(&format!("`@{}`", self.mem.name), self.mem.elem)?;
        Ok(from_bytes(&self.mem.read_raw()))
    }
}

impl std::fmt::Debug for Usm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Usm(@{})", self.mem.name)
    }
}

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

    /// A host accessor: the buffer's contents, read on the host. Invalid (row 55) while a
    /// graph that recorded commands using this buffer is still recording.
    pub fn host_access<T: Element>(&self) -> Result<Vec<T>> {
        let recording = self.0.recorded_in.borrow().iter().filter_map(Weak::upgrade).any(|g| g.borrow().is_recording());
        if recording {
            return Err(SyclError::invalid(
                55,
                format!(
                    "host accessor on buffer `@{}`, which commands being recorded to a graph use; end recording first",
                    self.name()
                ),
            ));
        }
        check_elem::<T>(&format!("buffer `@{}`", self.name()), self.elem())?;
        Ok(from_bytes(&self.0.mem.read_raw()))
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

    pub(crate) fn to_ir(&self) -> cmdgraph_ir::Accessor {
        cmdgraph_ir::Accessor {
            buffer: cmdgraph_ir::MemRef::Memory(self.buffer.handle()),
            mode: self.mode,
            range: self.range,
        }
    }
}

/// A `device_global<T[N]>`: one instance per device, persisting across graph executions.
#[derive(Clone)]
pub struct DeviceGlobal {
    pub(crate) mem: MemHandle,
    pub(crate) props: DgProps,
}

impl DeviceGlobal {
    /// Declares `device_global @name : elem[count]` with `props` (initialiser included).
    pub fn new(ctx: &Context, name: &str, elem: Type, count: u64, props: DgProps) -> Result<DeviceGlobal> {
        if props.init.len() as u64 > count {
            return Err(SyclError::invalid(
                0,
                format!("device_global `@{name}` has {} initial values for {count} elements", props.init.len()),
            ));
        }
        let mem = MemHandle::create(ctx, Some(name), "dg", elem, count, MemoryKind::DeviceGlobal(props.clone()))?;
        let mut bytes = Vec::new();
        for lit in &props.init {
            put_literal(lit.value, elem.scalar, &mut bytes);
        }
        mem.write_raw(0, &bytes)?;
        Ok(DeviceGlobal { mem, props })
    }

    /// The IR name (without `@`).
    pub fn name(&self) -> &str {
        &self.mem.name
    }

    /// Element type.
    pub fn elem(&self) -> Type {
        self.mem.elem
    }

    /// Element count.
    pub fn count(&self) -> u64 {
        self.mem.count
    }

    /// The module memory object (what kernel bodies address with `@g`).
    pub fn handle(&self) -> Handle<MemoryObject> {
        self.mem.handle
    }

    pub(crate) fn read_raw(&self) -> Vec<u8> {
        self.mem.read_raw()
    }

    pub(crate) fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.mem.write_raw(offset, data)
    }
}

impl Context {
    /// The `device_global` of this context named `name`.
    pub fn device_global(&self, name: &str) -> Option<DeviceGlobal> {
        let inner = self.0.borrow();
        let (handle, m) = inner.memories.iter().find(|(_, m)| m.name == name)?;
        let MemoryKind::DeviceGlobal(props) = &m.kind else { return None };
        let mem = MemHandle { ctx: self.clone(), handle, name: m.name.clone(), elem: m.elem, count: m.count };
        Some(DeviceGlobal { mem, props: props.clone() })
    }
}

/// Encodes one literal as a scalar of type `ty` (little-endian).
pub(crate) fn put_literal(value: LitValue, ty: ScalarType, out: &mut Vec<u8>) {
    let int = |v: LitValue| match v {
        LitValue::Int(i) => i,
        LitValue::Float(f) => f as i128,
        LitValue::Bool(b) => b as i128,
    };
    let float = |v: LitValue| match v {
        LitValue::Int(i) => i as f64,
        LitValue::Float(f) => f,
        LitValue::Bool(b) => b as u8 as f64,
    };
    match ty {
        ScalarType::Bool => out.push((int(value) != 0) as u8),
        ScalarType::I32 | ScalarType::U32 => out.extend_from_slice(&(int(value) as u32).to_le_bytes()),
        ScalarType::I64 | ScalarType::U64 => out.extend_from_slice(&(int(value) as u64).to_le_bytes()),
        ScalarType::F16 => out.extend_from_slice(&f32_to_f16(float(value) as f32).to_le_bytes()),
        ScalarType::F32 => out.extend_from_slice(&(float(value) as f32).to_le_bytes()),
    }
}

/// Rounds an `f32` to the nearest IEEE binary16 bit pattern (ties to even).
fn f32_to_f16(v: f32) -> u16 {
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (mant >> 13);
    let rest = mant & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// What a [`Ptr`] points into.
#[derive(Clone)]
pub(crate) enum PtrBase {
    /// A USM allocation.
    Usm(Usm),
    /// A graph-owned allocation: the `async_malloc` node of a graph.
    Alloc { graph: Weak<RefCell<GraphInner>>, node: Handle<Node>, bytes: u64 },
    /// The result of an `async_malloc` that failed; using it is an error.
    Dangling,
}

/// A device pointer: a USM allocation or a graph-owned allocation, plus a byte offset.
#[derive(Clone)]
pub struct Ptr {
    pub(crate) base: PtrBase,
    pub(crate) offset: u64,
}

impl Ptr {
    /// The pointer `bytes` further on.
    pub fn byte_add(&self, bytes: u64) -> Ptr {
        Ptr { base: self.base.clone(), offset: self.offset.saturating_add(bytes) }
    }

    /// Size in bytes of the allocation the pointer points into.
    pub fn allocation_bytes(&self) -> u64 {
        match &self.base {
            PtrBase::Usm(u) => u.mem.bytes(),
            PtrBase::Alloc { bytes, .. } => *bytes,
            PtrBase::Dangling => 0,
        }
    }

    /// The byte offset from the start of the allocation.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl From<&Usm> for Ptr {
    fn from(usm: &Usm) -> Ptr {
        usm.ptr()
    }
}

impl std::fmt::Debug for Ptr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.base {
            PtrBase::Usm(u) => write!(f, "Ptr(@{} + {})", u.name(), self.offset),
            PtrBase::Alloc { node, .. } => write!(f, "Ptr(alloc {node:?} + {})", self.offset),
            PtrBase::Dangling => write!(f, "Ptr(dangling)"),
        }
    }
}
