//! A SPIR-V reflector: the interface of a module read from its words, for checking an
//! external kernel against its IR signature (docs/abi.md, "External SPIR-V kernels").
//!
//! It walks the instruction stream once and never panics: every operand is read with a
//! bounds check, unknown instructions are skipped, and a malformed stream (bad header, an
//! instruction of length 0 or running past the end) is a [`ReflectError`]. It is not a
//! validator; `spirv-val` runs first. What it gathers: capabilities, entry points with their
//! execution model and work-group size (`LocalSize`, `LocalSizeId`, a `WorkgroupSize`
//! builtin constant), every resource variable (storage class, set, binding, `NonWritable`,
//! the pointee type) and whether the module may write through it.

use std::collections::{BTreeMap, BTreeSet};

const MAGIC: u32 = 0x0723_0203;
const HEADER_WORDS: usize = 5;

// Opcodes.
const OP_NAME: u32 = 5;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_CAPABILITY: u32 = 17;
const OP_TYPE_BOOL: u32 = 20;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_RUNTIME_ARRAY: u32 = 29;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_CONSTANT: u32 = 43;
const OP_CONSTANT_COMPOSITE: u32 = 44;
const OP_SPEC_CONSTANT: u32 = 50;
const OP_SPEC_CONSTANT_COMPOSITE: u32 = 51;
const OP_FUNCTION_CALL: u32 = 57;
const OP_VARIABLE: u32 = 59;
const OP_STORE: u32 = 62;
const OP_COPY_MEMORY: u32 = 63;
const OP_COPY_MEMORY_SIZED: u32 = 64;
const OP_ACCESS_CHAIN: u32 = 65;
const OP_IN_BOUNDS_ACCESS_CHAIN: u32 = 66;
const OP_PTR_ACCESS_CHAIN: u32 = 67;
const OP_IN_BOUNDS_PTR_ACCESS_CHAIN: u32 = 70;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_COPY_OBJECT: u32 = 83;
const OP_SELECT: u32 = 169;
const OP_PHI: u32 = 245;
const OP_EXECUTION_MODE_ID: u32 = 331;
const OP_MODULE_PROCESSED: u32 = 330;

// Decorations, execution modes, builtins.
const DEC_BLOCK: u32 = 2;
const DEC_BUFFER_BLOCK: u32 = 3;
const DEC_ARRAY_STRIDE: u32 = 6;
const DEC_BUILTIN: u32 = 11;
const DEC_NON_WRITABLE: u32 = 24;
const DEC_BINDING: u32 = 33;
const DEC_DESCRIPTOR_SET: u32 = 34;
const DEC_OFFSET: u32 = 35;
const MODE_LOCAL_SIZE: u32 = 17;
const MODE_LOCAL_SIZE_ID: u32 = 38;
const BUILTIN_WORKGROUP_SIZE: u32 = 25;

/// `GLCompute`, the execution model of Vulkan compute shaders.
pub const MODEL_GLCOMPUTE: u32 = 5;
/// `StorageBuffer` storage class.
pub const STORAGE_BUFFER: u32 = 12;
/// `PushConstant` storage class.
pub const PUSH_CONSTANT: u32 = 9;
/// `VariablePointers` and `VariablePointersStorageBuffer` capabilities.
pub const CAP_VARIABLE_POINTERS: [u32; 2] = [4442, 4441];

/// Why the words are not a SPIR-V module at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReflectError(pub String);

/// An entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// Execution model (`GLCompute` is [`MODEL_GLCOMPUTE`]).
    pub model: u32,
    /// Name.
    pub name: String,
    /// Function id.
    pub id: u32,
    /// `OpExecutionMode LocalSize`.
    pub local_size: Option<[u32; 3]>,
    /// `OpExecutionModeId LocalSizeId` (glslang's form for `--target-env vulkan1.3`), each
    /// id resolved.
    pub local_size_id: Option<[SizeOperand; 3]>,
}

/// An operand of `LocalSizeId`, resolved to what defines it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOperand {
    /// `OpConstant` with this value.
    Constant(u32),
    /// `OpSpecConstant` `id` with its `default` value (GLSL `local_size_x_id`).
    SpecConstant {
        /// The result id.
        id: u32,
        /// The value it has when not specialized.
        default: u32,
    },
    /// Anything else (a spec-constant operation, an undefined id).
    Other(u32),
}

/// A scalar or vector type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Numeric {
    /// Floating point (else integer; booleans are [`ElemType::Other`]).
    pub float: bool,
    /// Bits of one component.
    pub width: u32,
    /// Components (1 for a scalar).
    pub lanes: u32,
}

impl Numeric {
    /// Bytes of one component times the components.
    pub fn bytes(self) -> u32 {
        self.width / 8 * self.lanes
    }
}

impl std::fmt::Display for Numeric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.float { "float" } else { "int" };
        if self.lanes == 1 {
            write!(f, "{kind}{}", self.width)
        } else {
            write!(f, "vec{} of {kind}{}", self.lanes, self.width)
        }
    }
}

/// A type as the interface check sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElemType {
    /// A number or a vector of numbers.
    Numeric(Numeric),
    /// `OpTypeRuntimeArray` of an element, with its `ArrayStride`.
    RuntimeArray(Box<ElemType>, Option<u32>),
    /// `OpTypeArray` of an element, with its `ArrayStride`.
    FixedArray(Box<ElemType>, Option<u32>),
    /// A struct (`id` its type), with its members (naga wraps a uniform struct in a `Block`
    /// struct of one member).
    Struct(u32, Vec<Member>),
    /// Anything else (bool, arrays, structs, images, ...), described in words.
    Other(String),
}

impl std::fmt::Display for ElemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElemType::Numeric(n) => write!(f, "{n}"),
            ElemType::RuntimeArray(e, _) => write!(f, "runtime array of {e}"),
            ElemType::FixedArray(e, _) => write!(f, "a fixed-size array of {e}"),
            ElemType::Struct(..) => f.write_str("a struct"),
            ElemType::Other(s) => f.write_str(s),
        }
    }
}

/// A member of a `Block` struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// `Offset` decoration.
    pub offset: Option<u32>,
    /// Its type.
    pub ty: ElemType,
    /// `NonWritable` member decoration.
    pub non_writable: bool,
}

/// What a resource variable points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pointee {
    /// A struct; `block` says whether it is decorated `Block` (or `BufferBlock`).
    Struct {
        /// Decorated `Block` or `BufferBlock`.
        block: bool,
        /// Its members in order.
        members: Vec<Member>,
    },
    /// Anything else (an image, a sampler, a plain array...), described in words.
    Other(String),
}

/// A module-scope variable that is not private to an invocation or a work-group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Result id.
    pub id: u32,
    /// `OpName`, when the module has one.
    pub name: Option<String>,
    /// Storage class.
    pub storage_class: u32,
    /// `DescriptorSet`.
    pub set: Option<u32>,
    /// `Binding`.
    pub binding: Option<u32>,
    /// `NonWritable` on the variable, or on every member of its struct.
    pub non_writable: bool,
    /// The pointee type.
    pub pointee: Pointee,
    /// Whether the module stores or does atomics through it, or passes a pointer into it to
    /// a function (where the walk does not follow).
    pub written: bool,
}

impl Resource {
    /// `name` when known, else `%id`.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) if !n.is_empty() => n.clone(),
            _ => format!("%{}", self.id),
        }
    }
}

/// The interface of a module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reflection {
    /// Version word of the header.
    pub version: u32,
    /// Every `OpCapability`, in order.
    pub capabilities: Vec<u32>,
    /// Every entry point, in order.
    pub entry_points: Vec<EntryPoint>,
    /// Every resource variable (storage classes other than Function, Private, Workgroup,
    /// Input and Output), in order.
    pub resources: Vec<Resource>,
    /// The value of a constant decorated `BuiltIn WorkgroupSize`, when there is one (`None`
    /// inside when its components are not plain constants).
    pub workgroup_size_builtin: Option<Option<[u32; 3]>>,
    /// Every `OpModuleProcessed` string, in order (codegen's items-per-invocation marker is
    /// one: `crate::vectorize::ITEMS_PER_INVOCATION_MARKER`).
    pub processed: Vec<String>,
}

/// Little-endian bytes of a `.spv` file to words (a byte-swapped magic number means a
/// big-endian file, whose words are swapped back).
pub fn words_of(bytes: &[u8]) -> Result<Vec<u32>, ReflectError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(ReflectError(format!("{} bytes is not a whole number of 32-bit words", bytes.len())));
    }
    let mut words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if words.first() == Some(&MAGIC.swap_bytes()) {
        words.iter_mut().for_each(|w| *w = w.swap_bytes());
    }
    Ok(words)
}

/// Reads the interface of `words`.
pub fn reflect(words: &[u32]) -> Result<Reflection, ReflectError> {
    if words.len() < HEADER_WORDS {
        return Err(ReflectError(format!("{} words, shorter than the 5-word header", words.len())));
    }
    if words.first() != Some(&MAGIC) {
        return Err(ReflectError(format!("magic number {:#010x}, not SPIR-V", words.first().copied().unwrap_or(0))));
    }
    let mut s = State::default();
    let mut at = HEADER_WORDS;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        let opcode = first & 0xffff;
        if count == 0 {
            return Err(ReflectError(format!("instruction at word {at} has length 0")));
        }
        let Some(ops) = words.get(at + 1..at + count) else {
            return Err(ReflectError(format!(
                "instruction at word {at} runs past the end ({count} words, truncated?)"
            )));
        };
        s.instruction(opcode, ops);
        at += count;
    }
    Ok(s.finish(words.get(1).copied().unwrap_or(0)))
}

/// Operand `i`, 0 when absent (an id of 0 is never defined, so lookups fail).
fn op(ops: &[u32], i: usize) -> u32 {
    ops.get(i).copied().unwrap_or(0)
}

/// A nul-terminated literal string; lossy on bad UTF-8.
fn string(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A type definition, kept raw until the end.
#[derive(Clone, Debug)]
enum TypeDef {
    Bool,
    Int(u32),
    Float(u32),
    Vector(u32, u32),
    Array(u32),
    RuntimeArray(u32),
    Struct(Vec<u32>),
    Pointer(u32),
}

#[derive(Default)]
struct State {
    capabilities: Vec<u32>,
    processed: Vec<String>,
    entries: Vec<EntryPoint>,
    local_size: BTreeMap<u32, [u32; 3]>,
    local_size_id: BTreeMap<u32, [u32; 3]>,
    names: BTreeMap<u32, String>,
    decorations: BTreeMap<(u32, u32), u32>,
    flags: BTreeSet<(u32, u32)>,
    member_offset: BTreeMap<(u32, u32), u32>,
    member_non_writable: BTreeSet<(u32, u32)>,
    types: BTreeMap<u32, TypeDef>,
    constants: BTreeMap<u32, u32>,
    /// Ids of `OpSpecConstant`s (also in `constants`, with their defaults).
    spec_constants: BTreeSet<u32>,
    composites: BTreeMap<u32, Vec<u32>>,
    variables: Vec<(u32, u32, u32)>,
    /// Pointer id → the variable it points into.
    derived: BTreeMap<u32, u32>,
    written: BTreeSet<u32>,
}

impl State {
    fn instruction(&mut self, opcode: u32, ops: &[u32]) {
        match opcode {
            OP_CAPABILITY => self.capabilities.push(op(ops, 0)),
            OP_MODULE_PROCESSED => self.processed.push(string(ops)),
            OP_NAME => {
                self.names.insert(op(ops, 0), string(ops.get(1..).unwrap_or(&[])));
            }
            OP_ENTRY_POINT => self.entries.push(EntryPoint {
                model: op(ops, 0),
                id: op(ops, 1),
                name: string(ops.get(2..).unwrap_or(&[])),
                local_size: None,
                local_size_id: None,
            }),
            OP_EXECUTION_MODE if op(ops, 1) == MODE_LOCAL_SIZE && ops.len() >= 5 => {
                self.local_size.insert(op(ops, 0), [op(ops, 2), op(ops, 3), op(ops, 4)]);
            }
            OP_EXECUTION_MODE_ID if op(ops, 1) == MODE_LOCAL_SIZE_ID && ops.len() >= 5 => {
                self.local_size_id.insert(op(ops, 0), [op(ops, 2), op(ops, 3), op(ops, 4)]);
            }
            OP_DECORATE => match op(ops, 1) {
                d @ (DEC_BINDING | DEC_DESCRIPTOR_SET | DEC_ARRAY_STRIDE | DEC_BUILTIN) if ops.len() >= 3 => {
                    self.decorations.insert((op(ops, 0), d), op(ops, 2));
                }
                d => {
                    self.flags.insert((op(ops, 0), d));
                }
            },
            OP_MEMBER_DECORATE => match op(ops, 2) {
                DEC_OFFSET if ops.len() >= 4 => {
                    self.member_offset.insert((op(ops, 0), op(ops, 1)), op(ops, 3));
                }
                DEC_NON_WRITABLE => {
                    self.member_non_writable.insert((op(ops, 0), op(ops, 1)));
                }
                _ => {}
            },
            OP_TYPE_BOOL => self.ty(ops, TypeDef::Bool),
            OP_TYPE_INT => self.ty(ops, TypeDef::Int(op(ops, 1))),
            OP_TYPE_FLOAT => self.ty(ops, TypeDef::Float(op(ops, 1))),
            OP_TYPE_VECTOR => self.ty(ops, TypeDef::Vector(op(ops, 1), op(ops, 2))),
            OP_TYPE_ARRAY => self.ty(ops, TypeDef::Array(op(ops, 1))),
            OP_TYPE_RUNTIME_ARRAY => self.ty(ops, TypeDef::RuntimeArray(op(ops, 1))),
            OP_TYPE_STRUCT => self.ty(ops, TypeDef::Struct(ops.get(1..).unwrap_or(&[]).to_vec())),
            OP_TYPE_POINTER => self.ty(ops, TypeDef::Pointer(op(ops, 2))),
            OP_CONSTANT | OP_SPEC_CONSTANT if ops.len() >= 3 => {
                self.constants.insert(op(ops, 1), op(ops, 2));
                if opcode == OP_SPEC_CONSTANT {
                    self.spec_constants.insert(op(ops, 1));
                }
            }
            OP_CONSTANT_COMPOSITE | OP_SPEC_CONSTANT_COMPOSITE => {
                self.composites.insert(op(ops, 1), ops.get(2..).unwrap_or(&[]).to_vec());
            }
            OP_VARIABLE => {
                self.variables.push((op(ops, 0), op(ops, 1), op(ops, 2)));
                self.derived.insert(op(ops, 1), op(ops, 1));
            }
            OP_ACCESS_CHAIN
            | OP_IN_BOUNDS_ACCESS_CHAIN
            | OP_PTR_ACCESS_CHAIN
            | OP_IN_BOUNDS_PTR_ACCESS_CHAIN
            | OP_COPY_OBJECT => self.derive(op(ops, 1), &[op(ops, 2)]),
            OP_SELECT => self.derive(op(ops, 1), ops.get(3..).unwrap_or(&[])),
            OP_PHI => {
                let values: Vec<u32> = ops.get(2..).unwrap_or(&[]).iter().step_by(2).copied().collect();
                self.derive(op(ops, 1), &values)
            }
            OP_STORE | OP_COPY_MEMORY | OP_COPY_MEMORY_SIZED => self.write(op(ops, 0)),
            // OpAtomicStore and OpAtomicFlagClear: the pointer is the first operand.
            228 | 319 => self.write(op(ops, 0)),
            // Read-modify-write atomics: result type, result id, pointer.
            229..=242 | 318 | 5614 | 5615 | 6035 => self.write(op(ops, 2)),
            OP_FUNCTION_CALL => {
                for &arg in ops.get(3..).unwrap_or(&[]) {
                    self.write(arg);
                }
            }
            _ => {}
        }
    }

    fn ty(&mut self, ops: &[u32], def: TypeDef) {
        self.types.insert(op(ops, 0), def);
    }

    fn derive(&mut self, result: u32, from: &[u32]) {
        if let Some(&var) = from.iter().find_map(|f| self.derived.get(f)) {
            self.derived.insert(result, var);
        }
    }

    fn write(&mut self, pointer: u32) {
        if let Some(&var) = self.derived.get(&pointer) {
            self.written.insert(var);
        }
    }

    /// A type for the interface check; `depth` stops cyclic (invalid) type graphs.
    fn elem(&self, id: u32, depth: u32) -> ElemType {
        if depth > 8 {
            return ElemType::Other("a type nested too deep".into());
        }
        match self.types.get(&id) {
            Some(TypeDef::Int(w)) => ElemType::Numeric(Numeric { float: false, width: *w, lanes: 1 }),
            Some(TypeDef::Float(w)) => ElemType::Numeric(Numeric { float: true, width: *w, lanes: 1 }),
            Some(TypeDef::Vector(c, n)) => match self.elem(*c, depth + 1) {
                ElemType::Numeric(s) => ElemType::Numeric(Numeric { lanes: *n, ..s }),
                other => ElemType::Other(format!("a vector of {other}")),
            },
            Some(TypeDef::RuntimeArray(e)) => ElemType::RuntimeArray(
                Box::new(self.elem(*e, depth + 1)),
                self.decorations.get(&(id, DEC_ARRAY_STRIDE)).copied(),
            ),
            Some(TypeDef::Bool) => ElemType::Other("bool".into()),
            Some(TypeDef::Array(e)) => ElemType::FixedArray(
                Box::new(self.elem(*e, depth + 1)),
                self.decorations.get(&(id, DEC_ARRAY_STRIDE)).copied(),
            ),
            Some(TypeDef::Struct(members)) => ElemType::Struct(id, self.members(id, members, depth + 1)),
            Some(TypeDef::Pointer(..)) => ElemType::Other("a pointer".into()),
            None => ElemType::Other("an opaque type (image, sampler, ...)".into()),
        }
    }

    fn members(&self, id: u32, members: &[u32], depth: u32) -> Vec<Member> {
        members
            .iter()
            .enumerate()
            .map(|(i, &m)| Member {
                offset: self.member_offset.get(&(id, i as u32)).copied(),
                ty: self.elem(m, depth),
                non_writable: self.member_non_writable.contains(&(id, i as u32)),
            })
            .collect()
    }

    fn pointee(&self, id: u32) -> Pointee {
        match self.types.get(&id) {
            Some(TypeDef::Struct(members)) => Pointee::Struct {
                block: self.flags.contains(&(id, DEC_BLOCK)) || self.flags.contains(&(id, DEC_BUFFER_BLOCK)),
                members: self.members(id, members, 0),
            },
            _ => Pointee::Other(self.elem(id, 0).to_string()),
        }
    }

    fn size_operand(&self, id: u32) -> SizeOperand {
        match self.constants.get(&id) {
            Some(&default) if self.spec_constants.contains(&id) => SizeOperand::SpecConstant { id, default },
            Some(&v) => SizeOperand::Constant(v),
            None => SizeOperand::Other(id),
        }
    }

    fn finish(self, version: u32) -> Reflection {
        let mut entry_points = self.entries.clone();
        for e in &mut entry_points {
            e.local_size = self.local_size.get(&e.id).copied();
            e.local_size_id = self.local_size_id.get(&e.id).map(|ids| ids.map(|id| self.size_operand(id)));
        }
        let mut resources = Vec::new();
        for &(ptr_ty, id, class) in &self.variables {
            // Function 7, Private 6, Workgroup 4, Input 1, Output 3: not descriptor-bound.
            if matches!(class, 1 | 3 | 4 | 6 | 7) {
                continue;
            }
            let target = match self.types.get(&ptr_ty) {
                Some(TypeDef::Pointer(t)) => *t,
                _ => 0,
            };
            let pointee = self.pointee(target);
            let all_members_nw = matches!(&pointee, Pointee::Struct { members, .. }
                if !members.is_empty() && members.iter().all(|m| m.non_writable));
            resources.push(Resource {
                id,
                name: self.names.get(&id).cloned(),
                storage_class: class,
                set: self.decorations.get(&(id, DEC_DESCRIPTOR_SET)).copied(),
                binding: self.decorations.get(&(id, DEC_BINDING)).copied(),
                non_writable: self.flags.contains(&(id, DEC_NON_WRITABLE)) || all_members_nw,
                pointee,
                written: self.written.contains(&id),
            });
        }
        let workgroup_size_builtin =
            self.decorations.iter().find(|((_, d), v)| *d == DEC_BUILTIN && **v == BUILTIN_WORKGROUP_SIZE).map(
                |((id, _), _)| {
                    let parts = self.composites.get(id)?;
                    let v: Vec<u32> = parts.iter().filter_map(|c| self.constants.get(c).copied()).collect();
                    <[u32; 3]>::try_from(v.as_slice()).ok()
                },
            );
        Reflection {
            version,
            capabilities: self.capabilities,
            entry_points,
            resources,
            workgroup_size_builtin,
            processed: self.processed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(reflect(&[]).is_err());
        assert!(reflect(&[1, 2, 3, 4, 5]).is_err());
        assert!(reflect(&[MAGIC, 0x0001_0600, 0, 10, 0, 0]).is_err(), "length 0");
        assert!(reflect(&[MAGIC, 0x0001_0600, 0, 10, 0, 0x0005_0011]).is_err(), "past the end");
        assert!(words_of(&[1, 2, 3]).is_err());
        // Every prefix and every single-word corruption of a small module is handled.
        let module = [MAGIC, 0x0001_0600, 0, 10, 0, 0x0002_0011, 1, 0x0005_000f, 5, 3, 0x6e69_616d, 0];
        for n in 0..module.len() {
            let _ = reflect(&module[..n]);
        }
        for i in 0..module.len() {
            for v in [0, 1, u32::MAX, 0xffff_0000, 0x0001_0000] {
                let mut m = module;
                m[i] = v;
                let _ = reflect(&m);
            }
        }
        let r = reflect(&module).expect("well-formed");
        assert_eq!(r.capabilities, vec![1]);
        assert_eq!(r.entry_points.len(), 1);
        assert_eq!(r.entry_points[0].name, "main");
        assert_eq!(r.entry_points[0].model, MODEL_GLCOMPUTE);
    }

    #[test]
    fn big_endian_files_are_swapped() {
        let bytes: Vec<u8> = [MAGIC, 0x0001_0600].iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(words_of(&bytes).expect("words"), vec![MAGIC, 0x0001_0600]);
    }
}
