//! `device_global` (003): one instance per device, declared in the context, reached by
//! kernel bodies (`@g`) and by copies on executing queues.

use crate::error::{Result, SyclError};
use crate::memory::MemHandle;
use crate::platform::Context;
use cmdgraph_ir::{DeviceGlobal as DgProps, Handle, LitValue, MemoryKind, MemoryObject, ScalarType, Type};

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
        ScalarType::I8 | ScalarType::U8 => out.push(int(value) as u8),
        ScalarType::I16 | ScalarType::U16 => out.extend_from_slice(&(int(value) as u16).to_le_bytes()),
        ScalarType::I32 | ScalarType::U32 => out.extend_from_slice(&(int(value) as u32).to_le_bytes()),
        ScalarType::I64 | ScalarType::U64 => out.extend_from_slice(&(int(value) as u64).to_le_bytes()),
        ScalarType::F16 => {
            out.extend_from_slice(&cmdgraph_ir::data::f16_from_f64(float(value)).to_bits().to_le_bytes())
        }
        ScalarType::F32 => out.extend_from_slice(&(float(value) as f32).to_le_bytes()),
        ScalarType::F64 => out.extend_from_slice(&float(value).to_le_bytes()),
    }
}
