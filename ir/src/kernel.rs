//! Kernels, functions and the kernel language: SSA values, ops in structured regions
//! (`for`, `if`, `loop`), and calls.
//!
//! A kernel body owns two arenas: [`Value`]s (parameters, op results, loop variables and
//! loop-carried block arguments) and [`Op`]s. A [`Region`] is an ordered list of ops. A
//! value is visible in the region that defines it after its definition and in regions nested
//! there; `for` and `if` yield values to their results through a final `yield`.

use crate::arena::{Arena, Handle};
use crate::module::{Comments, MemoryObject};
use crate::span::SpanTable;
use crate::types::{Access, Literal, ScalarType, Type};
use serde::{Deserialize, Serialize};

/// `kernel @name(params) { body }` or `kernel @name(params) spirv "file" entry "main"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// Name without the `@`; the kernel's identity for whole-graph update.
    pub name: String,
    /// Parameters in order; each is also a value of the body (`Value::def == Param(i)`).
    pub params: Vec<Param>,
    /// The body, or an external SPIR-V module.
    pub body: KernelBody,
    /// Attached comments.
    pub comments: Comments,
    /// Spans of the parameters, by index (for diagnostics).
    #[serde(skip)]
    pub param_spans: SpanTable<u32>,
}

/// `func @name(params) -> T, ... { body }`: a function that kernels and other functions
/// call (`%r = call @name(%a, ...)`). Its body ends with `return` of its results.
///
/// The name, parameters, body and comments are held as a kernel holds them (the body is
/// always [`KernelBody::Ir`]), so that one verifier walk, one interpreter and one printer
/// serve both, as naga's entry points hold a function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// Name, parameters, body (in the kernel language) and comments.
    pub def: Kernel,
    /// Result types, in order; empty when it returns nothing.
    pub results: Vec<Type>,
}

impl Function {
    /// The body (a function's is always in the kernel language; `None` only for a
    /// malformed module built through the API).
    pub fn body(&self) -> Option<&Body> {
        match &self.def.body {
            KernelBody::Ir(body) => Some(body),
            _ => None,
        }
    }
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// Name without the `%`.
    pub name: String,
    /// Its type.
    pub ty: ParamType,
}

/// The type of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ParamType {
    /// A scalar or vector passed by value: `f32`, `vec4<f32>`.
    Value(Type),
    /// Global memory: `buf<f32, read>` (a USM pointer, graph allocation or accessor).
    Buffer {
        /// Element type.
        elem: Type,
        /// What the kernel may do with it.
        access: Access,
    },
    /// Work-group memory supplied by the launch: `local<f32>`.
    Local {
        /// Element type.
        elem: Type,
    },
}

/// As written in the text form: `f32`, `buf<f32, read>`, `local<u32>`.
impl std::fmt::Display for ParamType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamType::Value(t) => write!(f, "{t}"),
            ParamType::Buffer { elem, access } => write!(f, "buf<{elem}, {}>", access.keyword()),
            ParamType::Local { elem } => write!(f, "local<{elem}>"),
        }
    }
}

/// The body of a kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum KernelBody {
    /// Written in the kernel language.
    Ir(Body),
    /// An externally supplied SPIR-V module: `spirv "path.spv" entry "main"`, or with
    /// ordinary bindings `spirv "path.spv" entry "main" bindings` (docs/abi.md).
    Spirv {
        /// Path of the `.spv` file, relative to the `.cgir` file.
        path: String,
        /// Entry point name.
        entry: String,
        /// How the module takes its arguments.
        interface: SpirvInterface,
    },
    /// A compute shader in another language, translated into a kernel-language body where
    /// modules are loaded (the `cmdgraph-shader` crate, before verification):
    /// `wgsl "saxpy.wgsl" entry "main"` or, inline, `wgsl entry "main" """...source..."""`.
    /// The verifier refuses a module that still holds one (E0333).
    Shader {
        /// The source language.
        lang: ShaderLang,
        /// The file (relative to the `.cgir` file) or the text itself.
        source: ShaderSource,
        /// Entry point name.
        entry: String,
    },
}

/// How an external SPIR-V module ([`KernelBody::Spirv`]) takes its arguments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpirvInterface {
    /// cmdgraph's own: the argument block at binding 0, buffer `i` at binding `1 + i`.
    #[default]
    ArgumentBlock,
    /// What Vulkan programs write (`bindings` in the text): one storage buffer per buffer
    /// parameter in (set, binding) order, scalars in a push-constant or uniform block in
    /// member order. Codegen rewrites the module to the argument block before packing it.
    Bindings,
}

/// The language of a [`KernelBody::Shader`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ShaderLang {
    /// WGSL (WebGPU Shading Language).
    Wgsl,
    /// GLSL (Vulkan GLSL, `#version 450`).
    Glsl,
}

impl ShaderLang {
    /// The keyword in the text form: `wgsl`, `glsl`.
    pub fn keyword(self) -> &'static str {
        match self {
            ShaderLang::Wgsl => "wgsl",
            ShaderLang::Glsl => "glsl",
        }
    }
}

/// Where a [`KernelBody::Shader`]'s source is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShaderSource {
    /// A file, relative to the `.cgir` file: `wgsl "k.wgsl" entry "main"`.
    File(String),
    /// The source itself, between `"""` (raw: no escapes; it cannot contain `"""`).
    Inline(String),
}

/// A kernel-language body.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Every value defined in the body (parameters first, in order).
    pub values: Arena<Value>,
    /// Every op of every region.
    pub ops: Arena<Op>,
    /// The top-level region.
    pub entry: Region,
}

/// An ordered list of ops.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Region {
    /// Ops in execution order.
    pub ops: Vec<Handle<Op>>,
    /// Comments before the region's closing brace.
    pub closing_comments: Vec<String>,
}

/// An SSA value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Value {
    /// Name without the `%`.
    pub name: String,
    /// Its type.
    pub ty: ValueType,
    /// Where it is defined.
    pub def: ValueDef,
}

/// The type of an SSA value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ValueType {
    /// A scalar or vector.
    Data(Type),
    /// A global-memory parameter.
    Buffer {
        /// Element type.
        elem: Type,
        /// Allowed access.
        access: Access,
    },
    /// Work-group memory (a `local` parameter or a `local` op).
    Local {
        /// Element type.
        elem: Type,
    },
}

impl From<ParamType> for ValueType {
    fn from(ty: ParamType) -> ValueType {
        match ty {
            ParamType::Value(t) => ValueType::Data(t),
            ParamType::Buffer { elem, access } => ValueType::Buffer { elem, access },
            ParamType::Local { elem } => ValueType::Local { elem },
        }
    }
}

/// Where a value is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ValueDef {
    /// Kernel parameter `i`.
    Param(u32),
    /// Result `i` of an op.
    Result(Handle<Op>, u32),
    /// The induction variable of a `for` op.
    LoopVar(Handle<Op>),
    /// Loop-carried value `i` of a `for` or `loop` op, inside its body.
    Carried(Handle<Op>, u32),
}

/// One operation. `results` are the values it defines (in order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// What it does.
    pub kind: OpKind,
    /// The values it defines.
    pub results: Vec<Handle<Value>>,
    /// Attached comments.
    pub comments: Comments,
}

/// A value operand.
pub type V = Handle<Value>;

/// The memory a load, store or atomic addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MemBase {
    /// A buffer or local parameter, or a `local` op result (`%x`).
    Value(V),
    /// A module `device_global` (`@g`).
    Global(Handle<MemoryObject>),
}

/// Work-item builtins (SYCL `nd_item` queries), each taking a dimension 0..=2, result `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Builtin {
    /// `global_id D`
    GlobalId,
    /// `local_id D`
    LocalId,
    /// `group_id D`
    GroupId,
    /// `global_range D`
    GlobalRange,
    /// `local_range D`
    LocalRange,
    /// `group_range D`
    GroupRange,
}

impl Builtin {
    /// Every builtin.
    pub const ALL: [Builtin; 6] = [
        Builtin::GlobalId,
        Builtin::LocalId,
        Builtin::GroupId,
        Builtin::GlobalRange,
        Builtin::LocalRange,
        Builtin::GroupRange,
    ];
    /// Its keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            Builtin::GlobalId => "global_id",
            Builtin::LocalId => "local_id",
            Builtin::GroupId => "group_id",
            Builtin::GlobalRange => "global_range",
            Builtin::LocalRange => "local_range",
            Builtin::GroupRange => "group_range",
        }
    }
}

/// Unary operations. Math functions take floats; `not` takes integers or bools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnaryOp {
    /// `neg`
    Neg,
    /// `not` (bitwise on integers, logical on bool)
    Not,
    /// `abs`
    Abs,
    /// `sqrt`
    Sqrt,
    /// `rsqrt`
    Rsqrt,
    /// `exp`
    Exp,
    /// `log`
    Log,
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `tanh`
    Tanh,
    /// `floor`
    Floor,
    /// `ceil`
    Ceil,
}

impl UnaryOp {
    /// Every unary op.
    pub const ALL: [UnaryOp; 12] = [
        UnaryOp::Neg,
        UnaryOp::Not,
        UnaryOp::Abs,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Floor,
        UnaryOp::Ceil,
    ];
    /// Its keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Not => "not",
            UnaryOp::Abs => "abs",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
        }
    }
    /// Whether it only applies to floats.
    pub fn float_only(self) -> bool {
        !matches!(self, UnaryOp::Neg | UnaryOp::Not | UnaryOp::Abs)
    }
}

/// Binary operations; both operands and the result have one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinaryOp {
    /// `add`
    Add,
    /// `sub`
    Sub,
    /// `mul`
    Mul,
    /// `div` (integer division truncates; division by zero gives 0 in the interpreter)
    Div,
    /// `rem`
    Rem,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `pow` (floats)
    Pow,
    /// `and` (integers, bool)
    And,
    /// `or` (integers, bool)
    Or,
    /// `xor` (integers, bool)
    Xor,
    /// `shl` (integers; shift amount taken modulo the bit width)
    Shl,
    /// `shr` (integers; arithmetic for signed types)
    Shr,
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 13] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Pow,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
        BinaryOp::Shl,
        BinaryOp::Shr,
    ];
    /// Its keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Rem => "rem",
            BinaryOp::Min => "min",
            BinaryOp::Max => "max",
            BinaryOp::Pow => "pow",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
            BinaryOp::Shl => "shl",
            BinaryOp::Shr => "shr",
        }
    }
}

/// Comparisons; the result is `bool` (or a bool vector of the operands' width).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CmpOp {
    /// `eq`
    Eq,
    /// `ne`
    Ne,
    /// `lt`
    Lt,
    /// `le`
    Le,
    /// `gt`
    Gt,
    /// `ge`
    Ge,
}

impl CmpOp {
    /// Every comparison.
    pub const ALL: [CmpOp; 6] = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];
    /// Its keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
}

/// Atomic read-modify-write operations on `u32`, `i32`, `u64`, `i64` (and `add` on `f32`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AtomicOp {
    /// `add`
    Add,
    /// `sub`
    Sub,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `and`
    And,
    /// `or`
    Or,
    /// `xor`
    Xor,
    /// `xchg`
    Exchange,
    /// `cmpxchg` (takes the comparison value too)
    CompareExchange,
}

impl AtomicOp {
    /// Every atomic op.
    pub const ALL: [AtomicOp; 9] = [
        AtomicOp::Add,
        AtomicOp::Sub,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Exchange,
        AtomicOp::CompareExchange,
    ];
    /// Its keyword (after `atomic`).
    pub fn keyword(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Sub => "sub",
            AtomicOp::Min => "min",
            AtomicOp::Max => "max",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Exchange => "xchg",
            AtomicOp::CompareExchange => "cmpxchg",
        }
    }
}

/// What an op does. Operand and result types are checked by the verifier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum OpKind {
    /// `%c = const 2.0 : f32` (vector types splat the literal).
    Const(Literal, Type),
    /// `%i = global_id 0`
    Builtin(Builtin, u8),
    /// `%r = sqrt %x`
    Unary(UnaryOp, V),
    /// `%r = add %a, %b`
    Binary(BinaryOp, V, V),
    /// `%r = fma %a, %b, %c` (a*b+c, rounded once)
    Fma(V, V, V),
    /// `%r = lt %a, %b`
    Cmp(CmpOp, V, V),
    /// `%r = select %cond, %a, %b`
    Select(V, V, V),
    /// `%r = cast %x to f32` (numeric conversion; lanes must match)
    Cast(V, Type),
    /// `%r = bitcast %x to u32` (the same bits read as another type of the same lane count
    /// and scalar width)
    Bitcast(V, Type),
    /// `%r = splat %x : vec4<f32>`
    Splat(V, Type),
    /// `%r = extract %v, 2`
    Extract(V, u8),
    /// `%r = insert %v, 2, %x`
    Insert(V, u8, V),
    /// `%r = vec %a, %b, %c, %d` (builds a vector from scalars)
    Construct(Vec<V>),
    /// `%r = load %buf[%i]` / `load @g[%i]`
    Load {
        /// The memory.
        mem: MemBase,
        /// Element index (integer).
        index: V,
    },
    /// `%n = len %buf` / `len @g`: the element count of the memory (`u32`): from a buffer
    /// pointer to the end of its allocation or accessor range, a work-group array's size, a
    /// device global's count (WGSL `arrayLength`).
    Len(MemBase),
    /// `store %buf[%i], %v`
    Store {
        /// The memory.
        mem: MemBase,
        /// Element index (integer).
        index: V,
        /// The value stored.
        value: V,
    },
    /// `%old = atomic add %buf[%i], %v` / `%old = atomic cmpxchg %buf[%i], %expected, %new`
    Atomic {
        /// The operation.
        op: AtomicOp,
        /// The memory.
        mem: MemBase,
        /// Element index (integer).
        index: V,
        /// The operand (the new value for `cmpxchg`).
        value: V,
        /// The expected value, for `cmpxchg` only.
        expected: Option<V>,
    },
    /// `group_barrier`: work-group barrier with work-group memory fence.
    GroupBarrier,
    /// `%tile = local f32[256]`: work-group memory (`group_local_memory`), top level only.
    LocalAlloc {
        /// Element type.
        elem: Type,
        /// Element count.
        count: u64,
    },
    /// `[%r...] = for %i = %lo to %hi step %s [carry(%a = %init, ...)] { ... [yield ...] }`
    For {
        /// Induction variable (same type as `lo`).
        var: V,
        /// Lower bound (inclusive).
        lo: V,
        /// Upper bound (exclusive).
        hi: V,
        /// Step (positive).
        step: V,
        /// Loop-carried values: (value inside the body, initial value).
        carried: Vec<(V, V)>,
        /// The body; ends with `yield` of one value per carried value when there are any.
        body: Region,
    },
    /// `[%r...] = if %c [-> T, ...] { ... } [else { ... }]`
    If {
        /// The condition (`bool`).
        cond: V,
        /// Result types (empty when the `if` has no results).
        result_types: Vec<Type>,
        /// Taken when `cond` is true.
        then_region: Region,
        /// Taken otherwise; required when there are results.
        else_region: Option<Region>,
    },
    /// `yield %a, %b`: ends a `for`, `if` or `loop` region with its values (a `loop`'s
    /// first is the condition to run the body again).
    Yield(Vec<V>),
    /// A subgroup builtin or collective (`subgroup_reduce add %x`, ...; crate::subgroup).
    Subgroup(crate::subgroup::SubgroupOp),
    /// `[%r, ... =] call @f(%a, ...)`: runs function `f` with these arguments; the results
    /// are its `return` values.
    Call {
        /// The function.
        func: Handle<Function>,
        /// One argument per parameter.
        args: Vec<V>,
    },
    /// `return %a, ...`: ends a function's body with its results (the last op of its top
    /// region, only in a function with results).
    Return(Vec<V>),
    /// `[%r...] = loop [carry(%a = %init, ...)] { ... yield %again, %next... }`: a do-while
    /// loop. The body runs once, then again while the `bool` `%again` of its final `yield`
    /// is true; the other yielded values become the carried values of the next round, and
    /// after the last round the loop's results.
    Loop {
        /// Loop-carried values: (value inside the body, initial value).
        carried: Vec<(V, V)>,
        /// The body; ends with `yield` of the condition and one value per carried value.
        body: Region,
    },
}

impl OpKind {
    /// The values the op reads itself (not those the ops of its regions read): operands,
    /// memory that is a value (`%buf`), call arguments, `yield`/`return` values, a `for`'s
    /// bounds, step and initial carried values, an `if`'s condition.
    pub fn operands_mut(&mut self) -> Vec<&mut V> {
        fn mem(m: &mut MemBase) -> Option<&mut V> {
            match m {
                MemBase::Value(v) => Some(v),
                MemBase::Global(_) => None,
            }
        }
        match self {
            OpKind::Const(..) | OpKind::Builtin(..) | OpKind::GroupBarrier | OpKind::LocalAlloc { .. } => Vec::new(),
            OpKind::Unary(_, a)
            | OpKind::Cast(a, _)
            | OpKind::Bitcast(a, _)
            | OpKind::Splat(a, _)
            | OpKind::Extract(a, _) => vec![a],
            OpKind::Binary(_, a, b) | OpKind::Cmp(_, a, b) | OpKind::Insert(a, _, b) => vec![a, b],
            OpKind::Fma(a, b, c) | OpKind::Select(a, b, c) => vec![a, b, c],
            OpKind::Construct(vs) | OpKind::Yield(vs) | OpKind::Return(vs) => vs.iter_mut().collect(),
            OpKind::Call { args, .. } => args.iter_mut().collect(),
            OpKind::Load { mem: m, index } => mem(m).into_iter().chain([index]).collect(),
            OpKind::Len(m) => mem(m).into_iter().collect(),
            OpKind::Store { mem: m, index, value } => mem(m).into_iter().chain([index, value]).collect(),
            OpKind::Atomic { mem: m, index, value, expected, .. } => {
                mem(m).into_iter().chain([index]).chain(expected.as_mut()).chain([value]).collect()
            }
            OpKind::Subgroup(sg) => sg.operands_mut(),
            OpKind::For { lo, hi, step, carried, .. } => {
                [lo, hi, step].into_iter().chain(carried.iter_mut().map(|(_, init)| init)).collect()
            }
            OpKind::If { cond, .. } => vec![cond],
            OpKind::Loop { carried, .. } => carried.iter_mut().map(|(_, init)| init).collect(),
        }
    }

    /// The values the op reads itself, as [`OpKind::operands_mut`] lists them.
    pub fn operands(&self) -> Vec<V> {
        self.clone().operands_mut().into_iter().map(|v| *v).collect()
    }

    /// The op's regions, in order.
    pub fn regions(&self) -> Vec<&Region> {
        match self {
            OpKind::For { body, .. } | OpKind::Loop { body, .. } => vec![body],
            OpKind::If { then_region, else_region, .. } => std::iter::once(then_region).chain(else_region).collect(),
            _ => Vec::new(),
        }
    }

    /// The keyword of a work-group op (`group_barrier`, `local`, `local_id`, `group_id`,
    /// `local_range`, `group_range`, and every subgroup op): what only an `nd_range` launch
    /// gives a kernel.
    pub fn work_group_keyword(&self) -> Option<&'static str> {
        match self {
            OpKind::GroupBarrier => Some("group_barrier"),
            OpKind::LocalAlloc { .. } => Some("local"),
            OpKind::Builtin(
                b @ (Builtin::LocalId | Builtin::GroupId | Builtin::LocalRange | Builtin::GroupRange),
                _,
            ) => Some(b.keyword()),
            // Subgroups partition work-groups, so subgroup ops need an `nd_range` too.
            OpKind::Subgroup(s) => Some(s.keyword()),
            _ => None,
        }
    }
}

impl Body {
    /// The type of a value.
    pub fn ty(&self, v: V) -> ValueType {
        self.values[v].ty
    }
}

/// Whether `ty` is a legal scalar element for atomics.
pub fn atomic_scalar(op: AtomicOp, ty: ScalarType) -> bool {
    match ty {
        ScalarType::I32 | ScalarType::U32 | ScalarType::I64 | ScalarType::U64 => true,
        ScalarType::F32 => matches!(op, AtomicOp::Add | AtomicOp::Exchange | AtomicOp::Min | AtomicOp::Max),
        _ => false,
    }
}
