//! Kernels: registration with a context, and a small builder for kernel-language bodies.
//!
//! A kernel's name is its identity (the spec's "kernel type", what whole-graph update
//! compares). Kernels are registered once per context, as IR [`Kernel`] values built in
//! Rust ([`KernelBuilder`]) or parsed from `.cgir` text ([`Context::register_kernels_from_text`]).

use crate::error::{Result, SyclError};
use crate::platform::Context;
use cmdgraph_ir::kernel::{BinaryOp, Builtin, CmpOp, MemBase, UnaryOp};
use cmdgraph_ir::{
    Access, Body, Handle, Item, Kernel, KernelBody, LitValue, Literal, MemoryKind, Op, OpKind, Param, ParamType,
    ScalarType, Span, Type, Value, ValueDef, ValueType,
};

/// A kernel registered with a context: what command groups launch.
#[derive(Clone)]
pub struct KernelRef {
    pub(crate) ctx: Context,
    pub(crate) handle: Handle<Kernel>,
    pub(crate) name: String,
    pub(crate) params: Vec<ParamType>,
}

impl KernelRef {
    /// The kernel's name (its identity).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel's parameter types, in order.
    pub fn params(&self) -> &[ParamType] {
        &self.params
    }
}

impl std::fmt::Debug for KernelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelRef(@{})", self.name)
    }
}

impl Context {
    /// Registers `kernel` under its name. Names share one namespace with memory objects,
    /// graphs and queues. `device_global`s a body reads must be this context's.
    pub fn register_kernel(&self, kernel: Kernel) -> Result<KernelRef> {
        let mut inner = self.0.borrow_mut();
        if let KernelBody::Ir(body) = &kernel.body {
            for (_, op) in body.ops.iter() {
                let base = match &op.kind {
                    OpKind::Load { mem, .. } | OpKind::Store { mem, .. } | OpKind::Atomic { mem, .. } => *mem,
                    _ => continue,
                };
                if let MemBase::Global(g) = base {
                    let ok = matches!(inner.memories.try_get(g).map(|m| &m.kind), Some(MemoryKind::DeviceGlobal(_)));
                    if !ok {
                        return Err(SyclError::invalid(
                            0,
                            format!(
                                "kernel `@{}` addresses memory {g:?}, which is not a device_global of this context; create it with DeviceGlobal::new on this context first",
                                kernel.name
                            ),
                        ));
                    }
                }
            }
        }
        let name = inner.claim_name(Some(&kernel.name), "")?;
        let params = kernel.params.iter().map(|p| p.ty).collect();
        let handle = inner.kernels.append(kernel, Span::UNDEFINED);
        inner.items.push(Item::Kernel(handle));
        Ok(KernelRef { ctx: self.clone(), handle, name, params })
    }

    /// Registers every kernel of `.cgir` text (other items are ignored, except that a
    /// `device_global` a kernel addresses is declared in this context unless it exists, and
    /// the `func`s the kernels call are inlined into them).
    /// Parse errors come back rendered, with file `<kernels>`.
    pub fn register_kernels_from_text(&self, source: &str) -> Result<Vec<KernelRef>> {
        let module = cmdgraph_ir::text::parse(source).map_err(|diags| {
            SyclError::invalid(
                0,
                format!("kernel text does not parse:\n{}", cmdgraph_ir::diag::render_all(&diags, "<kernels>", source)),
            )
        })?;
        let mut map = std::collections::BTreeMap::new();
        for (h, m) in module.memories.iter() {
            if let MemoryKind::DeviceGlobal(props) = &m.kind {
                let existing =
                    self.0.borrow().memories.iter().find(|(_, x)| x.name == m.name).map(|(h, x)| (h, x.kind.clone()));
                let target = match existing {
                    Some((target, MemoryKind::DeviceGlobal(_))) => target,
                    Some(_) => {
                        return Err(SyclError::invalid(
                            0,
                            format!(
                                "`@{}` is a device_global in the text but another kind of memory in the context",
                                m.name
                            ),
                        ))
                    }
                    None => crate::global::DeviceGlobal::new(self, &m.name, m.elem, m.count, props.clone())?.handle(),
                };
                map.insert(h, target);
            }
        }
        let mut out = Vec::new();
        for (_, k) in module.kernels.iter() {
            let inlined = cmdgraph_ir::inline::inlined_kernel(&module.functions, k)
                .map_err(|e| SyclError::invalid(0, e.to_string()))?;
            let mut k = inlined.unwrap_or_else(|| k.clone());
            if let KernelBody::Ir(body) = &mut k.body {
                for (_, op) in body.ops.iter_mut() {
                    if let OpKind::Load { mem, .. } | OpKind::Store { mem, .. } | OpKind::Atomic { mem, .. } =
                        &mut op.kind
                    {
                        if let MemBase::Global(g) = mem {
                            *g = *map.get(g).unwrap_or(g);
                        }
                    }
                }
            }
            out.push(self.register_kernel(k)?);
        }
        Ok(out)
    }

    /// Finds a registered kernel by name.
    pub fn kernel(&self, name: &str) -> Option<KernelRef> {
        let inner = self.0.borrow();
        let (handle, k) = inner.kernels.iter().find(|(_, k)| k.name == name)?;
        Some(KernelRef {
            ctx: self.clone(),
            handle,
            name: k.name.clone(),
            params: k.params.iter().map(|p| p.ty).collect(),
        })
    }
}

/// Whether `kernel` uses `f16` anywhere (parameters or values): it needs `aspect::fp16`.
pub(crate) fn uses_f16(kernel: &Kernel) -> bool {
    uses_scalar(kernel, ScalarType::F16)
}

/// Whether `kernel` uses `f64` anywhere (parameters or values): it needs `aspect::fp64`.
pub(crate) fn uses_f64(kernel: &Kernel) -> bool {
    uses_scalar(kernel, ScalarType::F64)
}

/// Whether `kernel` has a parameter or value of scalar type `s` (or vectors of it).
fn uses_scalar(kernel: &Kernel, s: ScalarType) -> bool {
    let is_s = |t: Type| t.scalar == s;
    let param = kernel.params.iter().any(|p| match p.ty {
        ParamType::Value(t) | ParamType::Buffer { elem: t, .. } | ParamType::Local { elem: t } => is_s(t),
    });
    let body = match &kernel.body {
        KernelBody::Ir(body) => body.values.iter().any(|(_, v)| match v.ty {
            ValueType::Data(t) | ValueType::Buffer { elem: t, .. } | ValueType::Local { elem: t } => is_s(t),
        }),
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => false,
    };
    param || body
}

/// Builds a kernel-language body op by op (straight-line code: enough for element-wise
/// kernels; write loops and branches in `.cgir` text). Every value gets a fresh name.
pub struct KernelBuilder {
    name: String,
    params: Vec<Param>,
    body: Body,
}

/// A value of a kernel under construction.
pub type KValue = Handle<Value>;

impl KernelBuilder {
    /// Starts kernel `@name`.
    pub fn new(name: &str) -> KernelBuilder {
        KernelBuilder { name: name.to_string(), params: Vec::new(), body: Body::default() }
    }

    fn param(&mut self, name: &str, ty: ParamType) -> KValue {
        let index = self.params.len() as u32;
        self.params.push(Param { name: name.to_string(), ty });
        let value = Value { name: name.to_string(), ty: ty.into(), def: ValueDef::Param(index) };
        self.body.values.append(value, Span::UNDEFINED)
    }

    /// Adds a global-memory parameter `%name: buf<elem, access>`.
    pub fn buffer_param(&mut self, name: &str, elem: Type, access: Access) -> KValue {
        self.param(name, ParamType::Buffer { elem, access })
    }

    /// Adds a by-value parameter `%name: ty`.
    pub fn value_param(&mut self, name: &str, ty: Type) -> KValue {
        self.param(name, ParamType::Value(ty))
    }

    /// Adds a work-group memory parameter `%name: local<elem>`.
    pub fn local_param(&mut self, name: &str, elem: Type) -> KValue {
        self.param(name, ParamType::Local { elem })
    }

    fn push_op(&mut self, kind: OpKind) -> Handle<Op> {
        let op = self.body.ops.append(Op { kind, results: Vec::new(), comments: Default::default() }, Span::UNDEFINED);
        self.body.entry.ops.push(op);
        op
    }

    fn data_type(&self, v: KValue) -> Type {
        match self.body.values.try_get(v).map(|v| v.ty) {
            Some(ValueType::Data(t)) => t,
            Some(ValueType::Buffer { elem, .. }) | Some(ValueType::Local { elem }) => elem,
            None => Type::F32,
        }
    }

    fn push_value(&mut self, kind: OpKind, ty: Type) -> KValue {
        let op = self.push_op(kind);
        let name = format!("v{}", self.body.values.len());
        let value = self
            .body
            .values
            .append(Value { name, ty: ValueType::Data(ty), def: ValueDef::Result(op, 0) }, Span::UNDEFINED);
        self.body.ops[op].results.push(value);
        value
    }

    /// `%r = const value : ty`
    pub fn constant(&mut self, value: LitValue, ty: Type) -> KValue {
        // The type lives on the op; the literal carries none (as the parser writes it).
        self.push_value(OpKind::Const(Literal { value, ty: None }, ty), ty)
    }

    /// `%r = const v : f32`
    pub fn const_f32(&mut self, v: f32) -> KValue {
        self.constant(LitValue::Float(v as f64), Type::F32)
    }

    /// `%r = const v : u32`
    pub fn const_u32(&mut self, v: u32) -> KValue {
        self.constant(LitValue::Int(v as i128), Type::U32)
    }

    /// `%i = global_id dim`
    pub fn global_id(&mut self, dim: u8) -> KValue {
        self.push_value(OpKind::Builtin(Builtin::GlobalId, dim), Type::U32)
    }

    /// `%r = <builtin> dim` for any builtin.
    pub fn builtin(&mut self, builtin: Builtin, dim: u8) -> KValue {
        self.push_value(OpKind::Builtin(builtin, dim), Type::U32)
    }

    /// `%r = <op> %a`
    pub fn unary(&mut self, op: UnaryOp, a: KValue) -> KValue {
        let ty = self.data_type(a);
        self.push_value(OpKind::Unary(op, a), ty)
    }

    /// `%r = <op> %a, %b`
    pub fn binary(&mut self, op: BinaryOp, a: KValue, b: KValue) -> KValue {
        let ty = self.data_type(a);
        self.push_value(OpKind::Binary(op, a, b), ty)
    }

    /// `%r = fma %a, %b, %c`
    pub fn fma(&mut self, a: KValue, b: KValue, c: KValue) -> KValue {
        let ty = self.data_type(a);
        self.push_value(OpKind::Fma(a, b, c), ty)
    }

    /// `%r = <cmp> %a, %b` (a `bool` of the operands' width)
    pub fn cmp(&mut self, op: CmpOp, a: KValue, b: KValue) -> KValue {
        let ty = self.data_type(a).with_scalar(ScalarType::Bool);
        self.push_value(OpKind::Cmp(op, a, b), ty)
    }

    /// `%r = select %c, %a, %b`
    pub fn select(&mut self, c: KValue, a: KValue, b: KValue) -> KValue {
        let ty = self.data_type(a);
        self.push_value(OpKind::Select(c, a, b), ty)
    }

    /// `%r = cast %a to ty`
    pub fn cast(&mut self, a: KValue, ty: Type) -> KValue {
        self.push_value(OpKind::Cast(a, ty), ty)
    }

    /// `%r = bitcast %a to ty` (`sycl::bit_cast`: the same bits, same lane count and width).
    pub fn bitcast(&mut self, a: KValue, ty: Type) -> KValue {
        self.push_value(OpKind::Bitcast(a, ty), ty)
    }

    /// `%r = load %buf[%index]`
    pub fn load(&mut self, buf: KValue, index: KValue) -> KValue {
        let ty = self.data_type(buf);
        self.push_value(OpKind::Load { mem: MemBase::Value(buf), index }, ty)
    }

    /// `%r = load @g[%index]` from a `device_global` of element type `elem`.
    pub fn load_global(&mut self, global: &crate::global::DeviceGlobal, index: KValue) -> KValue {
        let ty = global.elem();
        self.push_value(OpKind::Load { mem: MemBase::Global(global.handle()), index }, ty)
    }

    /// `store %buf[%index], %value`
    pub fn store(&mut self, buf: KValue, index: KValue, value: KValue) {
        self.push_op(OpKind::Store { mem: MemBase::Value(buf), index, value });
    }

    /// `store @g[%index], %value` into a `device_global`.
    pub fn store_global(&mut self, global: &crate::global::DeviceGlobal, index: KValue, value: KValue) {
        self.push_op(OpKind::Store { mem: MemBase::Global(global.handle()), index, value });
    }

    /// `group_barrier`
    pub fn group_barrier(&mut self) {
        self.push_op(OpKind::GroupBarrier);
    }

    /// The finished kernel.
    pub fn finish(self) -> Kernel {
        Kernel {
            name: self.name,
            params: self.params,
            body: KernelBody::Ir(self.body),
            comments: Default::default(),
            param_spans: Default::default(),
        }
    }
}
