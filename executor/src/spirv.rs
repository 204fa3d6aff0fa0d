//! SPIR-V checks made before a module reaches the driver.
//!
//! The loader walks the words first: header, instruction lengths, the entry point and its
//! `LocalSize`, descriptor sets and bindings against the pipeline layout, member and
//! access-chain indices. A module that passes is well-formed as a word stream and declares
//! what the bundle says it does; then SPIRV-Tools' validator ([`crate::spirv_val`]) checks
//! it is valid SPIR-V for Vulkan 1.3.

use crate::error::{ExecError, Result};

pub mod cooperative;
pub(crate) mod sizes;

/// Most `Function` and `Private` memory one invocation may declare, in bytes: 64 KiB.
///
/// Vulkan has no limit on it (no core property, none in an extension this executor could
/// query), and a driver allocates what the module declares, per invocation: llvmpipe puts
/// `Function` arrays on a worker thread's stack, so a 2^30-float array (a 9 kB bundle that
/// `spirv-val` accepts) crashed pipeline creation. The bound is Direct3D's, the one
/// documented portable figure: at most 4096 temporary and indexable-temporary registers of
/// 16 bytes per thread (`D3D11_COMMONSHADER_TEMP_REGISTER_COUNT`, the same in Direct3D 12;
/// Microsoft's `dcl_temps` reference), which every desktop GPU's driver meets;
/// codegen's kernels declare none (their values live in registers, their arrays in
/// work-group memory). Every `Function` variable of every function counts, with the
/// module's `Private` variables: recursion is forbidden, so no call chain holds more.
pub const MAX_INVOCATION_MEMORY: u64 = 1 << 16;

// The markers codegen writes and the llvmpipe budget: one definition, in the bundle's ABI.
pub use cmdgraph_ir::bundle::{ITEMS_PER_INVOCATION_MARKER, LLVMPIPE_LOOP_BUDGET, LOOP_BACK_EDGES_MARKER};

/// What a module's [`LOOP_BACK_EDGES_MARKER`] says: `None` without one (not judged),
/// `Some(None)` for `unbounded` (or a number that does not parse: not known either),
/// `Some(Some(n))` for at most `n`; of two markers the larger. Malformed words end the walk
/// (the loader's checks report them).
pub fn loop_back_edges(words: &[u32]) -> Option<Option<u128>> {
    let mut found: Option<Option<u128>> = None;
    for (_, opcode, operands) in instructions(words) {
        if opcode == OP_MODULE_PROCESSED {
            let text = literal_string(operands).unwrap_or_default();
            if let Some(n) = text.strip_prefix(LOOP_BACK_EDGES_MARKER) {
                let n = n.parse::<u128>().ok();
                found = Some(match found {
                    None => n,
                    Some(m) => m.zip(n).map(|(a, b)| a.max(b)),
                });
            }
        }
    }
    found
}

/// The instructions of a module after its 5-word header, as (word index, opcode, operands);
/// an instruction whose length is 0 or runs past the end ends the walk (the loader's checks
/// report it; walks that only read never fail).
pub(crate) fn instructions(words: &[u32]) -> impl Iterator<Item = (usize, u32, &[u32])> {
    let mut at = 5;
    std::iter::from_fn(move || {
        let word = *words.get(at)?;
        let count = (word >> 16) as usize;
        let operands = words.get(at + 1..at.checked_add(count).filter(|_| count > 0)?)?;
        let item = (at, word & 0xffff, operands);
        at += count;
        Some(item)
    })
}

const MAGIC: u32 = 0x0723_0203;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_CAPABILITY: u32 = 17;
const OP_FUNCTION_END: u32 = 56;
const EXEC_MODEL_GLCOMPUTE: u32 = 5;
const MODE_LOCAL_SIZE: u32 = 17;
/// `OpExecutionModeId` and its `LocalSizeId` mode (glslang's form for Vulkan 1.3).
const OP_EXECUTION_MODE_ID: u32 = 331;
const MODE_LOCAL_SIZE_ID: u32 = 38;
/// SPIR-V's universal limit on the id bound (the specification's section 2.17).
const MAX_ID_BOUND: u32 = 0x3F_FFFF;

/// Checks `words` is a SPIR-V module with a `GLCompute` entry point named `entry` whose
/// `LocalSize` is `local_size` (the structural checks of [`check_variant`], without the
/// binding and items-per-invocation checks).
pub fn check(kernel: &str, words: &[u32], entry: &str, local_size: [u32; 3]) -> Result<()> {
    check_variant(kernel, words, entry, local_size, None, None)
}

const OP_MEMBER_NAME: u32 = 6;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_MATRIX: u32 = 24;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_RUNTIME_ARRAY: u32 = 29;
const OP_TYPE_STRUCT: u32 = 30;
const OP_CONSTANT: u32 = 43;
const OP_VARIABLE: u32 = 59;
const OP_LOAD: u32 = 61;
const OP_STORE: u32 = 62;
const OP_COPY_MEMORY: u32 = 63;
const OP_COPY_MEMORY_SIZED: u32 = 64;
const OP_MODULE_PROCESSED: u32 = 330;
/// The `Aligned` bit of a memory-operand mask; its literal follows the mask.
const MEMORY_ALIGNED: u32 = 0x2;
/// The mask bits followed by one id each, in operand order: `MakePointerAvailable`,
/// `MakePointerVisible`, `AliasScopeINTELMask`, `NoAliasINTELMask`.
const MEMORY_ID_OPERANDS: [u32; 4] = [0x8, 0x10, 0x1_0000, 0x2_0000];
const OP_ACCESS_CHAIN: u32 = 65;
const OP_IN_BOUNDS_ACCESS_CHAIN: u32 = 66;
const OP_PTR_ACCESS_CHAIN: u32 = 67;
const DECORATION_BINDING: u32 = 33;
const DECORATION_DESCRIPTOR_SET: u32 = 34;
const STORAGE_PUSH_CONSTANT: u32 = 9;

/// Where an instruction's result id is among its operands, for the opcodes whose layout
/// is fixed: types, constants, variables, functions, labels, access chains, conversions,
/// arithmetic, composites, atomics, phis (the instructions codegen and external kernels
/// use). Others are not checked for their result id.
fn result_operand(opcode: u32) -> Option<usize> {
    match opcode {
        // OpString, OpExtInstImport, OpType*, OpDecorationGroup, OpLabel: result first.
        7 | 11 | 19..=38 | 73 | 248 => Some(0),
        // Result type, then result.
        12
        | 41..=46
        | 48..=52
        | 54
        | 55
        | 57
        | 59..=61
        | 65..=68
        | 77..=84
        | 109..=124
        | 126..=152
        | 154..=205
        | 227
        | 229..=242
        | 245 => Some(1),
        _ => None,
    }
}

/// Checks `words` before it reaches the driver (docs/abi.md, "What the loader checks"):
/// the header and every instruction's length; result ids below the header's bound;
/// exactly one entry point named `entry`, `GLCompute`, with one `LocalSize` (or one
/// `LocalSizeId` whose operands are `OpConstant`s) equal to `local_size`; `DescriptorSet` decorations only of set 0; `Binding`s below `bindings`
/// (1 + the layout's memory slots; `None`: not checked); no push constants (the pipeline
/// layout has none); `OpMemberDecorate`/`OpMemberName` member indices inside their struct;
/// constant access-chain indices into structs inside the struct; every `Aligned` memory
/// operand a power of two; the module's [`ITEMS_PER_INVOCATION_MARKER`] (1 without one)
/// equal to `items_per_invocation` (`None`: not checked); its `Function` and `Private`
/// variables within [`MAX_INVOCATION_MEMORY`]; then SPIR-V validity
/// ([`crate::spirv_val::validate`]).
pub fn check_variant(
    kernel: &str,
    words: &[u32],
    entry: &str,
    local_size: [u32; 3],
    bindings: Option<u32>,
    items_per_invocation: Option<u32>,
) -> Result<()> {
    use std::collections::HashMap;
    let bad = |reason: String| ExecError::Spirv { kernel: kernel.to_string(), reason };
    if words.len() < 5 {
        return Err(bad(format!("{} words, shorter than the 5-word header", words.len())));
    }
    if words[0] != MAGIC {
        return Err(bad(format!("magic number {:#010x}", words[0])));
    }
    let version = words[1];
    if version & 0xff00_00ff != 0 || !(0x0001_0000..=0x0001_0600).contains(&version) {
        return Err(bad(format!("version word {version:#010x}")));
    }
    if words[4] != 0 {
        return Err(bad("reserved header word is not 0".into()));
    }
    let bound = words[3];
    // The universal limit of SPIR-V (section 2.17). Drivers size tables by the bound: a
    // module claiming 2^31 ids crashed llvmpipe at pipeline creation (found by the
    // `run_bundle` fuzz target).
    if bound > MAX_ID_BOUND {
        return Err(bad(format!("id bound {bound} is above SPIR-V's limit of {MAX_ID_BOUND}")));
    }
    let mut entry_id = None;
    let mut local = None;
    // The operand ids of `LocalSizeId`, resolved once the constants are known.
    let mut local_ids: Option<[u32; 3]> = None;
    let mut capabilities = 0usize;
    let mut last = 0;
    // What the member and access-chain checks need, collected in one walk and checked after
    // it (decorations come before the types they name).
    // Struct id -> (word index of its first member type, member count).
    let mut members: HashMap<u32, (usize, usize)> = HashMap::new();
    let mut composite: HashMap<u32, u32> = HashMap::new();
    let mut pointee: HashMap<u32, u32> = HashMap::new();
    let mut value_type: HashMap<u32, u32> = HashMap::new();
    let mut constants: HashMap<u32, u32> = HashMap::new();
    let mut member_refs: Vec<(usize, u32, u32)> = Vec::new();
    let mut chains: Vec<(usize, usize, usize)> = Vec::new();
    // (word index, value) of each items-per-invocation marker.
    let mut markers: Vec<(usize, std::result::Result<u32, String>)> = Vec::new();
    let mut at = 5;
    while at < words.len() {
        let word = words[at];
        let count = (word >> 16) as usize;
        let opcode = word & 0xffff;
        if count == 0 {
            return Err(bad(format!("instruction at word {at} has length 0")));
        }
        let end = at.checked_add(count).filter(|&e| e <= words.len());
        let Some(end) = end else {
            return Err(bad(format!("instruction at word {at} runs past the end ({count} words)")));
        };
        let ops = &words[at + 1..end];
        last = opcode;
        if let Some(r) = result_operand(opcode) {
            match ops.get(r) {
                Some(&id) if id == 0 || id >= bound => {
                    return Err(bad(format!(
                        "instruction at word {at} defines %{id}, not in 1..{bound} (the header's bound)"
                    )))
                }
                Some(_) => {}
                None => return Err(bad(format!("instruction at word {at} (opcode {opcode}) has no result id"))),
            }
            if r == 1 {
                value_type.insert(ops[1], ops[0]);
            }
        }
        match (opcode, ops) {
            (OP_CAPABILITY, _) => capabilities += 1,
            (OP_ENTRY_POINT, [model, id, name @ ..]) if literal_string(name).as_deref() == Some(entry) => {
                if *model != EXEC_MODEL_GLCOMPUTE {
                    return Err(bad(format!("entry point `{entry}` has execution model {model}, not GLCompute (5)")));
                }
                if entry_id.is_some() {
                    return Err(bad(format!("two entry points named `{entry}`")));
                }
                if *id >= bound {
                    return Err(bad(format!("entry point id {id} is not below the bound {bound}")));
                }
                entry_id = Some(*id);
            }
            (OP_EXECUTION_MODE, [id, mode, rest @ ..]) if *mode == MODE_LOCAL_SIZE && Some(*id) == entry_id => {
                let [x, y, z] = rest else {
                    return Err(bad(format!("LocalSize at word {at} has {} operands, not 3", rest.len())));
                };
                if local.is_some() || local_ids.is_some() {
                    return Err(bad(format!("entry point `{entry}` has two LocalSize modes")));
                }
                local = Some([*x, *y, *z]);
            }
            (OP_EXECUTION_MODE_ID, [id, mode, rest @ ..]) if *mode == MODE_LOCAL_SIZE_ID && Some(*id) == entry_id => {
                let [x, y, z] = rest else {
                    return Err(bad(format!("LocalSizeId at word {at} has {} operands, not 3", rest.len())));
                };
                if local.is_some() || local_ids.is_some() {
                    return Err(bad(format!("entry point `{entry}` has two LocalSize modes")));
                }
                local_ids = Some([*x, *y, *z]);
            }
            (OP_DECORATE, [id, deco, value, ..]) if *deco == DECORATION_DESCRIPTOR_SET && *value != 0 => {
                return Err(bad(format!("decorates %{id} with DescriptorSet {value}; only set 0 is bound")));
            }
            (OP_DECORATE, [id, deco, value, ..]) if *deco == DECORATION_BINDING => {
                if let Some(n) = bindings.filter(|&n| *value >= n) {
                    return Err(bad(format!(
                        "decorates %{id} with Binding {value}; the layout has bindings 0..{n} (1 + its memory slots)"
                    )));
                }
            }
            (OP_MEMBER_DECORATE | OP_MEMBER_NAME, [id, member, ..]) => member_refs.push((at, *id, *member)),
            (OP_TYPE_STRUCT, [id, ms @ ..]) => {
                members.insert(*id, (at + 2, ms.len()));
            }
            (OP_TYPE_VECTOR | OP_TYPE_MATRIX | OP_TYPE_ARRAY | OP_TYPE_RUNTIME_ARRAY, [id, elem, ..]) => {
                composite.insert(*id, *elem);
            }
            (OP_TYPE_POINTER, [id, _, to, ..]) => {
                pointee.insert(*id, *to);
            }
            (OP_CONSTANT, [_, id, value, ..]) => {
                constants.insert(*id, *value);
            }
            (OP_VARIABLE, [_, id, storage, ..]) if *storage == STORAGE_PUSH_CONSTANT => {
                return Err(bad(format!(
                    "%{id} is a PushConstant variable; the pipeline layout has no push constants"
                )));
            }
            (OP_ACCESS_CHAIN | OP_IN_BOUNDS_ACCESS_CHAIN, [_, _, _, ..]) => chains.push((at, at + 4, end)),
            (OP_PTR_ACCESS_CHAIN, [_, _, _, _, ..]) => chains.push((at, at + 5, end)),
            (OP_MODULE_PROCESSED, text) => {
                let text = literal_string(text).unwrap_or_default();
                if let Some(n) = text.strip_prefix(ITEMS_PER_INVOCATION_MARKER) {
                    markers.push((at, n.parse::<u32>().map_err(|_| text.clone())));
                }
            }
            _ => {}
        }
        if let Some(first) = memory_operands(opcode) {
            check_aligned(at, opcode, ops.get(first..).unwrap_or(&[])).map_err(bad)?;
        }
        at = end;
    }
    if capabilities == 0 {
        return Err(bad("no OpCapability".into()));
    }
    // A module with an entry point ends with a function; a missing tail is a truncation.
    if last != OP_FUNCTION_END {
        return Err(bad("does not end with OpFunctionEnd (truncated?)".into()));
    }
    if entry_id.is_none() {
        return Err(bad(format!("no GLCompute entry point named `{entry}`")));
    }
    for (at, id, member) in member_refs {
        match members.get(&id).map(|m| m.1) {
            Some(n) if (member as usize) < n => {}
            Some(n) => {
                return Err(bad(format!("instruction at word {at} names member {member} of %{id}, a struct of {n}")))
            }
            None => return Err(bad(format!("instruction at word {at} names a member of %{id}, not an OpTypeStruct"))),
        }
    }
    // Constant indices into structs: follow the base pointer's pointee through the chain.
    for (at, first, end) in chains {
        let base = words.get(at + 3).copied().unwrap_or(0);
        let mut ty = value_type.get(&base).and_then(|t| pointee.get(t)).copied();
        for index in words.get(first..end).unwrap_or(&[]) {
            let Some(t) = ty else { break };
            ty = match members.get(&t) {
                Some(&(first_member, n)) => {
                    let Some(&i) = constants.get(index) else {
                        return Err(bad(format!(
                            "access chain at word {at} indexes struct %{t} with %{index}, not a constant"
                        )));
                    };
                    if i as usize >= n {
                        return Err(bad(format!(
                            "access chain at word {at} selects member {i} of %{t}, a struct of {n}"
                        )));
                    }
                    words.get(first_member + i as usize).copied()
                }
                None => composite.get(&t).copied(),
            };
        }
    }
    if let Some(ids) = local_ids {
        let mut l = [0; 3];
        for (out, id) in l.iter_mut().zip(ids) {
            // Only `OpConstant`: a specialization constant's size is not the bundle's to promise.
            *out = *constants.get(&id).ok_or_else(|| bad(format!("LocalSizeId operand %{id} is not an OpConstant")))?;
        }
        local = Some(l);
    }
    match local {
        Some(l) if l == local_size => {}
        Some(l) => return Err(bad(format!("LocalSize {l:?}, the bundle says {local_size:?}"))),
        None => return Err(bad(format!("entry point `{entry}` has no LocalSize"))),
    }
    if let Some(items) = items_per_invocation {
        check_items_per_invocation(&markers, items).map_err(bad)?;
    }
    check_invocation_memory(words).map_err(bad)?;
    // Last: the walk's errors name the bundle's fields, the validator's name instructions.
    crate::spirv_val::validate(words).map_err(bad)
}

/// Checks the module's items-per-invocation markers (`(word, parsed value or the text)`)
/// against the bundle's `items`: at most one, well-formed, equal; none means 1. The kernel's
/// code handles as many work-items per invocation as it was compiled for, whatever the bundle
/// says, and the executor dispatches by the bundle's figure: a larger one leaves work-items
/// unprocessed (issue 28: wrong results, exit 0, validation quiet).
fn check_items_per_invocation(
    markers: &[(usize, std::result::Result<u32, String>)],
    items: u32,
) -> std::result::Result<(), String> {
    let compiled = match markers {
        [] => 1,
        [(_, Ok(n))] => *n,
        [(at, Err(text))] => {
            return Err(format!(
                "OpModuleProcessed at word {at} reads \"{text}\", not `{ITEMS_PER_INVOCATION_MARKER}N`"
            ))
        }
        [(a, _), (b, _), ..] => {
            return Err(format!("two items-per-invocation markers (OpModuleProcessed at words {a} and {b})"))
        }
    };
    if compiled == items {
        return Ok(());
    }
    let how = if markers.is_empty() {
        "has no items-per-invocation marker, so each invocation handles 1 work-item".to_string()
    } else {
        format!("was compiled for {compiled} work-items per invocation (OpModuleProcessed \"{ITEMS_PER_INVOCATION_MARKER}{compiled}\")")
    };
    Err(format!(
        "the module {how}, the bundle's items_per_invocation is {items}; dispatching by the bundle would \
         compute wrong results (recompile the bundle)"
    ))
}

/// Checks the module's `Function` and `Private` variables total at most
/// [`MAX_INVOCATION_MEMORY`] bytes, naming the largest when they do not.
fn check_invocation_memory(words: &[u32]) -> std::result::Result<(), String> {
    use sizes::{STORAGE_FUNCTION, STORAGE_PRIVATE};
    let vars = sizes::variables(words, &[STORAGE_FUNCTION, STORAGE_PRIVATE])?;
    let total = vars.iter().try_fold(0u64, |t, v| t.checked_add(v.bytes));
    if total.is_some_and(|t| t <= MAX_INVOCATION_MEMORY) {
        return Ok(());
    }
    let total = total.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string());
    let Some(v) = vars.iter().max_by_key(|v| v.bytes) else { return Ok(()) };
    let place = match &v.function {
        Some((id, name)) => format!(" of function {}", sizes::describe(*id, name.as_deref())),
        None => String::new(),
    };
    Err(format!(
        "{total} bytes of Function and Private memory per invocation, more than the {MAX_INVOCATION_MEMORY} a \
         bundle may declare (docs/abi.md, \"Per-invocation memory\"); the largest is the {} variable {}{place}, \
         {} bytes: put large arrays in a buffer or in work-group memory",
        sizes::storage_name(v.storage),
        v.describe(),
        v.bytes
    ))
}

/// Where the first memory-operand mask is among the operands of `opcode`, for the
/// instructions that take memory operands: `OpLoad` (after the result type, result and
/// pointer), `OpStore` (pointer, object), `OpCopyMemory` (target, source) and
/// `OpCopyMemorySized` (target, source, size); the two copies may have a second mask.
fn memory_operands(opcode: u32) -> Option<usize> {
    match opcode {
        OP_LOAD => Some(3),
        OP_STORE | OP_COPY_MEMORY => Some(2),
        OP_COPY_MEMORY_SIZED => Some(3),
        _ => None,
    }
}

/// Checks the `Aligned` literal of each memory-operand mask in `operands` (the words from
/// the first mask on) is a power of two, as the SPIR-V specification requires (section
/// 3.26, "Memory Operands"). The validator of Debian 12's SPIRV-Tools does not check it, and
/// an alignment of 3 reached the driver, which only the validation layer refused (issue 28).
/// The operands that follow a mask are in the order of its bits: `Aligned`'s literal, then
/// the scope ids of `MakePointerAvailable` and `MakePointerVisible`, then the INTEL alias
/// ids; a mask whose operands run out is left to the validator.
fn check_aligned(at: usize, opcode: u32, mut operands: &[u32]) -> std::result::Result<(), String> {
    let name = match opcode {
        OP_LOAD => "OpLoad",
        OP_STORE => "OpStore",
        OP_COPY_MEMORY => "OpCopyMemory",
        _ => "OpCopyMemorySized",
    };
    // At most two masks: the copies' target and source operands.
    for _ in 0..2 {
        let Some((&mask, rest)) = operands.split_first() else { return Ok(()) };
        operands = rest;
        if mask & MEMORY_ALIGNED != 0 {
            let Some((&align, rest)) = operands.split_first() else { return Ok(()) };
            if !align.is_power_of_two() {
                return Err(format!(
                    "{name} at word {at} has the memory operand Aligned {align}, not a power of two (SPIR-V \
                     requires one; the loader refuses it before it reaches the driver)"
                ));
            }
            operands = rest;
        }
        let ids = MEMORY_ID_OPERANDS.iter().filter(|&&bit| mask & bit != 0).count();
        operands = operands.get(ids..).unwrap_or(&[]);
    }
    Ok(())
}

/// Decodes a nul-terminated SPIR-V literal string; `None` if unterminated or not UTF-8.
fn literal_string(words: &[u32]) -> Option<String> {
    let mut bytes = Vec::new();
    for w in words {
        for b in w.to_le_bytes() {
            if b == 0 {
                return String::from_utf8(bytes).ok();
            }
            bytes.push(b);
        }
    }
    None
}

const OP_EXTENSION: u32 = 10;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_POINTER: u32 = 32;
const STORAGE_WORKGROUP: u32 = 4;
const STORAGE_STORAGE_BUFFER: u32 = 12;
const STORAGE_PHYSICAL_STORAGE_BUFFER: u32 = 5349;
const STORAGE_UNIFORM: u32 = 2;

/// What a module asks of the device: its `OpCapability` and `OpExtension` declarations and
/// its atomic instructions, in module order (features.rs compares them with the device).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    /// `OpCapability` operands.
    pub capabilities: Vec<u32>,
    /// `OpExtension` names.
    pub extensions: Vec<String>,
    /// Atomic instructions whose pointer type could be resolved.
    pub atomics: Vec<AtomicUse>,
    /// The widths below 32 bits (8, 16) of scalars in buffer memory (`StorageBuffer`,
    /// `PhysicalStorageBuffer` or `Uniform` pointees, through vectors, arrays and structs),
    /// ascending: Vulkan needs `storageBuffer8BitAccess` / `storageBuffer16BitAccess` for
    /// them whatever capabilities the module declares (`Int8` alone allows the type).
    pub narrow_storage: Vec<u32>,
    /// Its cooperative-matrix multiply-adds ([`cooperative::mul_adds`]), each once.
    pub cooperative: Vec<cooperative::MulAdd>,
    /// Why the multiply-adds could not all be resolved, if they could not (the module is
    /// then refused where it needs the device's list).
    pub cooperative_unresolved: Option<String>,
}

/// The kind of an atomic instruction, as far as Vulkan's features tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AtomicOp {
    /// `OpAtomicFAddEXT`.
    FloatAdd,
    /// `OpAtomicFMinEXT` / `OpAtomicFMaxEXT`.
    FloatMinMax,
    /// Any other atomic (load, store, exchange, compare-exchange, integer arithmetic).
    Other,
}

/// Where an atomic's pointer points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AtomicStorage {
    /// Storage buffers (`StorageBuffer`, `PhysicalStorageBuffer`, `Uniform` blocks).
    Buffer,
    /// Work-group (shared) memory.
    Workgroup,
}

/// One atomic instruction: what it does, on what scalar, in which memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicUse {
    /// The operation.
    pub op: AtomicOp,
    /// Whether the pointee is a float (else an integer).
    pub float: bool,
    /// The pointee's width in bits.
    pub width: u32,
    /// The pointer's storage class.
    pub storage: AtomicStorage,
}

/// The position of the pointer operand of an atomic instruction among its operands, and
/// its kind; `None` for other opcodes.
fn atomic_pointer(opcode: u32) -> Option<(usize, AtomicOp)> {
    match opcode {
        // OpAtomicStore: pointer, scope, semantics, value.
        228 => Some((0, AtomicOp::Other)),
        // OpAtomicLoad .. OpAtomicXor (except store): result type, result, pointer, ...
        227 | 229..=242 => Some((2, AtomicOp::Other)),
        6035 => Some((2, AtomicOp::FloatAdd)),
        5614 | 5615 => Some((2, AtomicOp::FloatMinMax)),
        _ => None,
    }
}

/// Opcodes whose first operands are a result type and a result id and that may yield a
/// pointer an atomic uses (variables, access chains, copies, casts, phis, selects,
/// parameters, loads of variable pointers).
fn yields_typed_value(opcode: u32) -> bool {
    matches!(opcode, 55 | 59 | 61 | 65 | 66 | 67 | 70 | 83 | 124 | 169 | 245)
}

/// Collects what `words` (a module [`check`] accepted) needs of the device. Never fails:
/// an instruction that cannot be decoded ends the walk, and an atomic whose pointer type
/// is not known is left out (its capability is still listed).
pub fn requirements(words: &[u32]) -> Requirements {
    use std::collections::BTreeMap;
    let mut req = Requirements::default();
    // id -> (storage class, pointee type) of pointer types; id -> (float, width) of scalars;
    // value id -> type id.
    let mut pointers = BTreeMap::new();
    let mut scalars = BTreeMap::new();
    let mut types = BTreeMap::new();
    let mut atomics = Vec::new();
    // id -> member or element types of composite types.
    let mut composites: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (_, opcode, ops) in instructions(words) {
        match (opcode, ops) {
            (OP_TYPE_VECTOR | OP_TYPE_MATRIX | OP_TYPE_ARRAY | OP_TYPE_RUNTIME_ARRAY, [id, elem, ..]) => {
                composites.insert(*id, vec![*elem]);
            }
            (OP_TYPE_STRUCT, [id, members @ ..]) => {
                composites.insert(*id, members.to_vec());
            }
            (OP_CAPABILITY, [cap, ..]) => req.capabilities.push(*cap),
            (OP_EXTENSION, _) => req.extensions.push(literal_string(ops).unwrap_or_default()),
            (OP_TYPE_INT, [id, width, ..]) => {
                scalars.insert(*id, (false, *width));
            }
            (OP_TYPE_FLOAT, [id, width, ..]) => {
                scalars.insert(*id, (true, *width));
            }
            (OP_TYPE_POINTER, [id, storage, pointee, ..]) => {
                pointers.insert(*id, (*storage, *pointee));
            }
            (op, [ty, id, ..]) if yields_typed_value(op) => {
                types.insert(*id, *ty);
            }
            _ => {}
        }
        if let Some((at_ptr, op)) = atomic_pointer(opcode) {
            if let Some(ptr) = ops.get(at_ptr) {
                atomics.push((op, *ptr));
            }
        }
    }
    let mut narrow = std::collections::BTreeSet::new();
    for &(storage, pointee) in pointers.values() {
        if !matches!(storage, STORAGE_STORAGE_BUFFER | STORAGE_PHYSICAL_STORAGE_BUFFER | STORAGE_UNIFORM) {
            continue;
        }
        // Every type reachable from the pointee; the set bounds the walk (types cannot
        // be recursive without pointers, which are not followed).
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![pointee];
        while let Some(t) = stack.pop() {
            if !seen.insert(t) {
                continue;
            }
            if let Some(&(_, width)) = scalars.get(&t) {
                if width < 32 {
                    narrow.insert(width);
                }
            }
            if let Some(parts) = composites.get(&t) {
                stack.extend(parts.iter().copied());
            }
        }
    }
    req.narrow_storage = narrow.into_iter().collect();
    match cooperative::mul_adds(words) {
        Ok(found) => req.cooperative = found,
        Err(why) => req.cooperative_unresolved = Some(why),
    }
    for (op, ptr) in atomics {
        let pointer = types.get(&ptr).and_then(|ty| pointers.get(ty));
        let Some(&(storage, pointee)) = pointer else { continue };
        let storage = match storage {
            STORAGE_WORKGROUP => AtomicStorage::Workgroup,
            STORAGE_STORAGE_BUFFER | STORAGE_PHYSICAL_STORAGE_BUFFER | STORAGE_UNIFORM => AtomicStorage::Buffer,
            _ => continue,
        };
        if let Some(&(float, width)) = scalars.get(&pointee) {
            req.atomics.push(AtomicUse { op, float, width, storage });
        }
    }
    req
}

#[cfg(test)]
mod loop_marker_tests {
    use super::*;

    /// A header, then one `OpModuleProcessed` per text.
    fn module(texts: &[&str]) -> Vec<u32> {
        let mut words = vec![MAGIC, 0x0001_0600, 0, 10, 0];
        for t in texts {
            let mut bytes = t.as_bytes().to_vec();
            bytes.resize(bytes.len() / 4 * 4 + 4, 0);
            words.push(((1 + bytes.len() as u32 / 4) << 16) | OP_MODULE_PROCESSED);
            words.extend(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        }
        words
    }

    #[test]
    fn the_marker_reads_as_a_count_unbounded_or_absent() {
        assert_eq!(loop_back_edges(&module(&["cmdgraph loop_back_edges 125000"])), Some(Some(125000)));
        assert_eq!(loop_back_edges(&module(&["cmdgraph loop_back_edges unbounded"])), Some(None));
        assert_eq!(loop_back_edges(&module(&["cmdgraph loop_back_edges 1e9"])), Some(None));
        assert_eq!(loop_back_edges(&module(&["cmdgraph items_per_invocation 4"])), None);
        let two = module(&["cmdgraph loop_back_edges 7", "cmdgraph loop_back_edges 70000"]);
        assert_eq!(loop_back_edges(&two), Some(Some(70000)));
    }

    #[test]
    fn malformed_words_end_the_walk_without_a_panic() {
        let mut words = module(&["cmdgraph loop_back_edges 9"]);
        let whole = words.clone();
        words.truncate(words.len() - 1);
        assert_eq!(loop_back_edges(&words), None);
        assert_eq!(loop_back_edges(&whole[..3]), None);
        let mut zero = module(&[]);
        zero.push(OP_MODULE_PROCESSED);
        zero.extend_from_slice(&whole[5..]);
        assert_eq!(loop_back_edges(&zero), None);
        let mut long = whole.clone();
        long[5] |= 0xffff << 16;
        assert_eq!(loop_back_edges(&long), None);
    }
}
