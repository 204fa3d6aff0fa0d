//! Memory the graphs of a context use: USM allocations, buffers (reached through
//! accessors), `device_global`s, and pointers into them or into graph-owned allocations.
//!
//! Each USM allocation, buffer and `device_global` is a module memory object of the
//! context (element type + count) with its contents kept by the context, so the host can
//! fill inputs and read results around graph executions.

use crate::error::{Result, SyclError};
use crate::graph::GraphInner;
use crate::platform::Context;
use cmdgraph_ir::data::half::f16;
use cmdgraph_ir::{Handle, LitValue, Literal, MemoryKind, MemoryObject, Node, ScalarType, Type, UsmKind};
use std::cell::RefCell;
use std::rc::Weak;

/// A Rust type that can be an element of device memory: one of the IR's scalar types.
///
/// Implemented for `bool` (`Type::BOOL`, one byte, 0 or 1), `i32`, `u32`, `i64`, `u64`,
/// `f32` and [`half::f16`](crate::f16) (`f16`, two bytes, IEEE binary16). There is no
/// implementation for `u8`/`i8` on purpose: the IR has no 8-bit integer type, so no
/// memory object, kernel parameter or fill pattern can be of one. The honest 8-bit view
/// of memory is its raw bytes: [`Usm::write_bytes`] / [`Usm::read_bytes`] (and the same
/// on [`crate::Buffer`]) work on any element type.
pub trait Element: Copy {
    /// The IR type.
    const TYPE: Type;
    /// Appends the little-endian bytes of `self`.
    fn put(self, out: &mut Vec<u8>);
    /// Reads a value from `TYPE.size()` little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
    /// The IR literal of `self`, with its type written: `2.5f32` is `2.5 : f32`. This is
    /// the scalar of an [`ArgValue::Scalar`](crate::ArgValue) for the runtime's
    /// `update_param`.
    fn literal(self) -> Literal;
    /// The value of `lit` as `Self`, when `lit` has this type (a literal of another
    /// type, or one whose value does not fit, is `None`).
    fn from_literal(lit: &Literal) -> Option<Self>;
}

macro_rules! element {
    ($t:ty, $scalar:expr, int) => {
        element!($t, $scalar, |v: $t| LitValue::Int(v as i128), |v: &LitValue| match v {
            LitValue::Int(i) => <$t>::try_from(*i).ok(),
            _ => None,
        });
    };
    ($t:ty, $scalar:expr, $lit:expr, $from:expr) => {
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
            fn literal(self) -> Literal {
                Literal { value: $lit(self), ty: Some($scalar) }
            }
            fn from_literal(lit: &Literal) -> Option<Self> {
                if lit.ty != Some($scalar) {
                    return None;
                }
                $from(&lit.value)
            }
        }
    };
}
// Float literals hold an f64; an f32 or f16 value converts to it and back exactly.
element!(f32, ScalarType::F32, |v: f32| LitValue::Float(v as f64), |v: &LitValue| match v {
    LitValue::Float(x) => Some(*x as f32),
    _ => None,
});
element!(f16, ScalarType::F16, |v: f16| LitValue::Float(v.to_f64()), |v: &LitValue| match v {
    LitValue::Float(x) => Some(cmdgraph_ir::data::f16_from_f64(*x)),
    _ => None,
});
element!(f64, ScalarType::F64, |v: f64| LitValue::Float(v), |v: &LitValue| match v {
    LitValue::Float(x) => Some(*x),
    _ => None,
});
element!(i8, ScalarType::I8, int);
element!(u8, ScalarType::U8, int);
element!(i16, ScalarType::I16, int);
element!(u16, ScalarType::U16, int);
element!(i32, ScalarType::I32, int);
element!(u32, ScalarType::U32, int);
element!(i64, ScalarType::I64, int);
element!(u64, ScalarType::U64, int);

impl Element for bool {
    const TYPE: Type = Type::BOOL;
    fn put(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn get(bytes: &[u8]) -> Self {
        bytes.first().is_some_and(|b| *b != 0)
    }
    fn literal(self) -> Literal {
        Literal { value: LitValue::Bool(self), ty: Some(ScalarType::Bool) }
    }
    fn from_literal(lit: &Literal) -> Option<Self> {
        match (lit.ty, lit.value) {
            (Some(ScalarType::Bool), LitValue::Bool(b)) => Some(b),
            _ => None,
        }
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
pub(crate) fn check_elem<T: Element>(what: &str, elem: Type) -> Result<()> {
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
    pub(crate) fn create(
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
        let mem = MemoryObject {
            home: Default::default(),
            name: name.clone(),
            elem,
            count,
            kind,
            comments: Default::default(),
        };
        let handle = inner.add_memory(mem);
        Ok(MemHandle { ctx: ctx.clone(), handle, name, elem, count })
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.elem.size() * self.count
    }

    pub(crate) fn write_raw(&self, offset: u64, data: &[u8]) -> Result<()> {
        // The host copy must be current: runs in flight may write this memory.
        crate::runner::settle(&self.ctx);
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

    pub(crate) fn read_raw(&self) -> Vec<u8> {
        crate::runner::settle(&self.ctx);
        let bytes = self.ctx.0.borrow().store.get(self.handle.index()).cloned().unwrap_or_default();
        crate::trace::record(&self.name, &bytes);
        bytes
    }
}

impl MemHandle {
    /// Checks that `len` bytes at byte `offset` lie inside the memory; `what` names the
    /// call in the message.
    pub(crate) fn check_bytes(&self, what: &str, offset: u64, len: u64) -> Result<()> {
        let size = self.bytes();
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(SyclError::invalid(
                0,
                format!(
                    "{what}: {len} bytes at byte offset {offset} run past the end of `@{}` ({size} bytes)",
                    self.name
                ),
            ));
        }
        Ok(())
    }

    /// Bounds-checked raw write (through `write_raw`).
    pub(crate) fn write_bytes(&self, what: &str, offset: u64, data: &[u8]) -> Result<()> {
        self.check_bytes(what, offset, data.len() as u64)?;
        self.write_raw(offset, data)
    }

    /// Bounds-checked raw read of `len` bytes at `offset` (through `read_raw`).
    pub(crate) fn read_bytes(&self, what: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.check_bytes(what, offset, len)?;
        let all = self.read_raw();
        let start = usize::try_from(offset).ok();
        let end = offset.checked_add(len).and_then(|e| usize::try_from(e).ok());
        match (start, end) {
            (Some(s), Some(e)) => all.get(s..e).map(<[u8]>::to_vec).ok_or_else(|| missing(&self.name)),
            _ => Err(missing(&self.name)),
        }
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

    /// `sycl::malloc_device<T>(count, dev, ctx)`: device memory that lives on `dev`, a device
    /// of `ctx` (`home(N)` in the IR, N the device's id). Nodes on other devices reach it only
    /// through copies (the multi-device extension, [`NodeProps::on_device`](crate::NodeProps::on_device)).
    pub fn device_on<T: Element>(ctx: &Context, dev: &crate::Device, count: u64) -> Result<Usm> {
        if !ctx.contains(dev) {
            return Err(SyclError::invalid(
                0,
                format!("malloc_device: device {} is not in context {}; pick one of its devices", dev.id(), ctx.id()),
            ));
        }
        let usm = Usm::device::<T>(ctx, count)?;
        if let Some(m) = ctx.0.borrow_mut().memories.try_get_mut(usm.mem.handle) {
            m.home = cmdgraph_ir::module::Home::Device(dev.id());
        }
        Ok(usm)
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

    /// Writes raw bytes into the allocation at byte `offset` (a blocking host copy),
    /// whatever its element type: the 8-bit view of memory (the IR has no 8-bit element
    /// type). Bytes are the elements' little-endian encoding. `offset + data.len()` past
    /// the allocation's size is an `invalid` error naming the allocation; nothing is
    /// written then.
    pub fn write_bytes(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.mem.write_bytes("Usm::write_bytes", offset, data)
    }

    /// All the allocation's bytes (a blocking host copy): `count * elem.size()` bytes,
    /// the elements' little-endian encoding.
    pub fn read_bytes(&self) -> Result<Vec<u8>> {
        self.mem.read_bytes("Usm::read_bytes", 0, self.mem.bytes())
    }

    /// `len` bytes of the allocation from byte `offset`; a range past its end is an
    /// `invalid` error naming the allocation.
    pub fn read_bytes_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        self.mem.read_bytes("Usm::read_bytes_at", offset, len)
    }

    /// Copies host data into the allocation from element 0 (a blocking host copy). `T`
    /// must be the element type it was allocated with (`f16` included); more elements than
    /// it holds is an error.
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
