//! The rewrite itself, on the module as a flat list of instructions in file order.
//!
//! Why not `rspirv::dr::Module`: its loader refuses valid modules (an `OpExecutionModeId`,
//! which glslang writes for `--target-env vulkan1.3`, is "not inside block"), and a flat list
//! keeps every instruction where the file had it, so the words change only where the rewrite
//! changes them. rspirv's parser and grammar tables still decode and encode every instruction.

mod flat;

use super::Plan;
use cmdgraph_ir::bundle::{ArgFieldKind, ArgLayout};
use rspirv::binary::{parse_words, Assemble, Consumer, ParseAction};
use rspirv::dr::{Instruction, ModuleHeader, Operand};
use rspirv::spirv::{Capability, Decoration, Op, StorageClass, Word};
use std::collections::{BTreeMap, BTreeSet};

/// A module as its header and its instructions in order.
pub(super) struct Flat {
    header: ModuleHeader,
    insts: Vec<Instruction>,
}

/// Collects what the parser decodes, in order.
#[derive(Default)]
struct Collect {
    header: Option<ModuleHeader>,
    insts: Vec<Instruction>,
}

impl Consumer for Collect {
    fn initialize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn finalize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn consume_header(&mut self, header: ModuleHeader) -> ParseAction {
        self.header = Some(header);
        ParseAction::Continue
    }
    fn consume_instruction(&mut self, inst: Instruction) -> ParseAction {
        self.insts.push(inst);
        ParseAction::Continue
    }
}

/// Opcodes of the module's types, constants and global variables section.
fn is_global(inst: &Instruction) -> bool {
    let op = inst.class.opcode;
    op.is_type() || op.is_constant() || matches!(op, Op::Variable | Op::Undef)
}

impl Flat {
    /// Decodes `words`.
    pub(super) fn load(words: &[u32]) -> Result<Flat, String> {
        let mut c = Collect::default();
        parse_words(words, &mut c).map_err(|e| e.to_string())?;
        let mut header = c.header.ok_or("no header")?;
        // rspirv's parser puts its own generator in the header; the module keeps its maker's.
        header.generator = words.get(2).copied().unwrap_or(0);
        Ok(Flat { header, insts: c.insts })
    }

    /// Encodes the module.
    pub(super) fn assemble(&self) -> Vec<u32> {
        let mut words = self.header.assemble();
        for inst in &self.insts {
            inst.assemble_into(&mut words);
        }
        words
    }

    /// The instruction defining `id`.
    pub(super) fn def(&self, id: Word) -> Option<&Instruction> {
        self.insts.iter().find(|i| i.result_id == Some(id))
    }

    /// Whether `target` has `OpDecorate target decoration`.
    pub(super) fn decorated(&self, target: Word, decoration: Decoration) -> bool {
        self.insts.iter().any(|d| is_decoration(d, target, decoration))
    }

    fn has_capability(&self, c: Capability) -> bool {
        self.insts
            .iter()
            .any(|i| i.class.opcode == Op::Capability && i.operands.first() == Some(&Operand::Capability(c)))
    }

    /// The SPIR-V version of the header, (major, minor).
    fn version(&self) -> (u32, u32) {
        ((self.header.version >> 16) & 0xff, (self.header.version >> 8) & 0xff)
    }

    /// Before SPIR-V 1.3 the StorageBuffer class needs `SPV_KHR_storage_buffer_storage_class`.
    fn storage_buffer_extension(&mut self) {
        if self.version() >= (1, 3) {
            return;
        }
        let ext = Operand::LiteralString("SPV_KHR_storage_buffer_storage_class".into());
        if !self.insts.iter().any(|i| i.class.opcode == Op::Extension && i.operands.first() == Some(&ext)) {
            let at = self.after_last(|i| i.class.opcode == Op::Capability, 0);
            self.insts.insert(at, Instruction::new(Op::Extension, None, None, vec![ext]));
        }
    }

    fn id(&mut self) -> Word {
        let id = self.header.bound;
        self.header.bound += 1;
        id
    }

    /// The position after the last instruction for which `f` holds, or `fallback`.
    fn after_last(&self, f: impl Fn(&Instruction) -> bool, fallback: usize) -> usize {
        self.insts.iter().rposition(f).map_or(fallback, |i| i + 1)
    }

    /// The first instruction of the types section (where the module has none, the first
    /// function).
    fn globals_start(&self) -> usize {
        self.insts.iter().position(is_global).unwrap_or_else(|| self.functions_start())
    }

    fn functions_start(&self) -> usize {
        self.insts.iter().position(|i| i.class.opcode == Op::Function).unwrap_or(self.insts.len())
    }

    /// The module's `OpTypeInt width 0`, declared first in the types section when it has none.
    fn uint(&mut self, width: u32) -> Word {
        let operands = [Operand::LiteralBit32(width), Operand::LiteralBit32(0)];
        let found = self.insts.iter().find(|i| i.class.opcode == Op::TypeInt && i.operands == operands);
        if let Some(id) = found.and_then(|i| i.result_id) {
            return id;
        }
        let id = self.id();
        let at = self.globals_start();
        self.insts.insert(at, Instruction::new(Op::TypeInt, None, Some(id), operands.to_vec()));
        id
    }

    fn annotate(&mut self, decorations: Vec<Instruction>) {
        let fallback = self.globals_start();
        let at = self.after_last(|i| i.class.opcode.is_annotation(), fallback);
        self.insts.splice(at..at, decorations);
    }
}

fn is_decoration(d: &Instruction, target: Word, decoration: Decoration) -> bool {
    d.class.opcode == Op::Decorate
        && d.operands.first() == Some(&Operand::IdRef(target))
        && d.operands.get(1) == Some(&Operand::Decoration(decoration))
}

fn decorate(target: Word, decoration: Decoration, value: Option<u32>) -> Instruction {
    let mut operands = vec![Operand::IdRef(target), Operand::Decoration(decoration)];
    operands.extend(value.map(Operand::LiteralBit32));
    Instruction::new(Op::Decorate, None, None, operands)
}

/// What a buffer variable's member is in the rewritten module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A runtime array, as declared.
    Runtime,
    /// A runtime array standing for a scalar or vector `depth` member indexes down: its
    /// accesses take element `offset`.
    Single(usize),
    /// A runtime array standing for a fixed-size array `depth` member indexes down; a pointer
    /// to the whole array has the given pointer type now.
    Fixed(Word, usize),
}

/// What an id points into, for following pointers into the buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Points {
    /// Buffer slot `s`'s block struct: the variable itself (`taken` 0), or for a reshaped
    /// buffer a pointer `taken` member indexes into the structs around its value (such an
    /// access chain is dropped: chains from it are rewritten from the variable).
    Block(usize, Kind, Word, usize),
    /// Slot `s`'s runtime array.
    Array(usize),
    /// A value of type `ty` in slot `slot`'s flat buffer (`flat.rs`), variable `var`, at word
    /// `word` (an id; `None`: the pointer's element offset, the variable itself).
    Flat { slot: usize, var: Word, ty: Word, word: Option<Word> },
}

/// The ids the rewrite of the functions uses.
struct Ids {
    args: Word,
    word_ptr: Word,
    u32_ty: Word,
    zero: Word,
    /// Per slot: the constants indexing its offset word and its count word.
    words: Vec<(Word, Word)>,
    /// The 64-bit unsigned type, when a 64-bit index needs one (allocated on first use).
    u64_ty: Option<Word>,
    types: BTreeMap<Word, Word>,
    int_widths: BTreeMap<Word, u32>,
    /// The types of flat buffers' chains.
    flat: flat::Types,
    /// Per flat buffer slot: its scalar type.
    flat_elems: BTreeMap<usize, Word>,
    /// Globals the rewrite of the functions declares (constants, pointer types).
    extra: Vec<Instruction>,
}

/// The one 32-bit scalar type of every scalar in struct `ty` (a buffer's block), when it has
/// one: such a buffer is rebound as a runtime array of it.
pub(super) fn flat_scalar(m: &Flat, ty: Word) -> Option<(Word, bool)> {
    let s = flat::scalar_of(&flat::types(m, 0), ty)?;
    Some((s, m.def(s)?.class.opcode == Op::TypeFloat))
}

/// Rewrites `m` as [`Plan`] says (the module docs of `rebind` list the steps).
pub(super) fn rewrite(m: &mut Flat, plan: &Plan, layout: &ArgLayout) -> Result<(), String> {
    let u32_ty = m.uint(32);
    let sb = || Operand::StorageClass(StorageClass::StorageBuffer);

    // Retarget: buffers to set 0, binding 1 + slot; value blocks to binding 0, read-only.
    let mut binding_of: BTreeMap<Word, u32> = BTreeMap::new();
    let mut slot_of: BTreeMap<Word, Points> = BTreeMap::new();
    let mut flat_elems = BTreeMap::new();
    for (slot, vars) in plan.buffers.iter().enumerate() {
        for &var in vars {
            binding_of.insert(var, 1 + slot as u32);
            if let Some(&elem) = plan.flats.get(&var) {
                let ty = flat::reshape_flat(m, var, elem)?;
                flat_elems.insert(slot, elem);
                slot_of.insert(var, Points::Flat { slot, var, ty, word: None });
                continue;
            }
            let kind = match plan.shapes.get(&var) {
                Some(&shape) => reshape(m, var, shape)?,
                None => Kind::Runtime,
            };
            slot_of.insert(var, Points::Block(slot, kind, var, 0));
        }
    }
    let blocks: BTreeSet<Word> = plan.blocks.iter().copied().collect();
    for &var in &blocks {
        binding_of.insert(var, 0);
    }
    // Variables that move to the StorageBuffer class: the value blocks, and storage buffers
    // declared the old way (`Uniform`, a `BufferBlock` struct), whose structs become `Block`s.
    let mut retargeted = blocks.clone();
    retargeted.extend(slot_of.keys().copied());
    buffer_blocks_to_blocks(m);
    m.insts.retain(|d| {
        !binding_of
            .keys()
            .any(|&v| is_decoration(d, v, Decoration::DescriptorSet) || is_decoration(d, v, Decoration::Binding))
    });
    let mut decorations = Vec::new();
    for (&var, &binding) in &binding_of {
        decorations.push(decorate(var, Decoration::DescriptorSet, Some(0)));
        decorations.push(decorate(var, Decoration::Binding, Some(binding)));
        if blocks.contains(&var) && !m.decorated(var, Decoration::NonWritable) {
            decorations.push(decorate(var, Decoration::NonWritable, None));
        }
    }
    for &(ty, member, param) in &plan.members {
        let offset = layout.fields.get(param).map(|f| f.offset).ok_or("a parameter without a field")?;
        for d in &mut m.insts {
            if d.class.opcode == Op::MemberDecorate
                && d.operands.first() == Some(&Operand::IdRef(ty))
                && d.operands.get(1) == Some(&Operand::LiteralBit32(member))
                && d.operands.get(2) == Some(&Operand::Decoration(Decoration::Offset))
            {
                d.operands[3] = Operand::LiteralBit32(offset);
            }
        }
    }
    // Every push-constant and uniform pointer (the variables and what points into them) now
    // points into a storage buffer. Both instructions have the storage class first.
    for inst in &mut m.insts {
        let retarget = match inst.class.opcode {
            Op::TypePointer => true,
            Op::Variable => inst.result_id.is_some_and(|id| retargeted.contains(&id)),
            _ => false,
        };
        if retarget
            && matches!(
                inst.operands.first(),
                Some(Operand::StorageClass(StorageClass::PushConstant | StorageClass::Uniform))
            )
        {
            inst.operands[0] = sb();
        }
    }

    // The argument block as words: `struct { uint words[]; }`, read-only, at binding 0.
    let (words_array, words_struct, struct_ptr, word_ptr, args, zero) =
        (m.id(), m.id(), m.id(), m.id(), m.id(), m.id());
    let mut globals = vec![
        Instruction::new(Op::TypeRuntimeArray, None, Some(words_array), vec![Operand::IdRef(u32_ty)]),
        Instruction::new(Op::TypeStruct, None, Some(words_struct), vec![Operand::IdRef(words_array)]),
        Instruction::new(Op::TypePointer, None, Some(struct_ptr), vec![sb(), Operand::IdRef(words_struct)]),
        Instruction::new(Op::TypePointer, None, Some(word_ptr), vec![sb(), Operand::IdRef(u32_ty)]),
        Instruction::new(Op::Variable, Some(struct_ptr), Some(args), vec![sb()]),
        Instruction::new(Op::Constant, Some(u32_ty), Some(zero), vec![Operand::LiteralBit32(0)]),
    ];
    decorations.extend([
        decorate(words_array, Decoration::ArrayStride, Some(4)),
        decorate(words_struct, Decoration::Block, None),
        Instruction::new(
            Op::MemberDecorate,
            None,
            None,
            vec![
                Operand::IdRef(words_struct),
                Operand::LiteralBit32(0),
                Operand::Decoration(Decoration::Offset),
                Operand::LiteralBit32(0),
            ],
        ),
        decorate(args, Decoration::DescriptorSet, Some(0)),
        decorate(args, Decoration::Binding, Some(0)),
        decorate(args, Decoration::NonWritable, None),
    ]);
    let mut words = Vec::new();
    for slot in 0..plan.buffers.len() {
        let word = layout
            .fields
            .iter()
            .find_map(|f| match f.kind {
                ArgFieldKind::Buffer { slot: s, .. } if s as usize == slot => Some(f.offset / 4),
                _ => None,
            })
            .ok_or("a buffer without a field")?;
        let (offset, count) = (m.id(), m.id());
        globals.push(Instruction::new(Op::Constant, Some(u32_ty), Some(offset), vec![Operand::LiteralBit32(word)]));
        globals.push(Instruction::new(Op::Constant, Some(u32_ty), Some(count), vec![Operand::LiteralBit32(word + 1)]));
        words.push((offset, count));
    }

    let mut types = BTreeMap::new();
    let mut int_widths = BTreeMap::new();
    for inst in &m.insts {
        if let (Some(id), Some(ty)) = (inst.result_id, inst.result_type) {
            types.insert(id, ty);
        }
        if let (Op::TypeInt, Some(id), Some(Operand::LiteralBit32(w))) =
            (inst.class.opcode, inst.result_id, inst.operands.first())
        {
            int_widths.insert(id, *w);
        }
    }
    let mut flat_types = flat::types(m, u32_ty);
    flat_types.u32_consts.insert(0, zero);
    let mut ids = Ids {
        args,
        word_ptr,
        u32_ty,
        zero,
        words,
        u64_ty: None,
        types,
        int_widths,
        flat: flat_types,
        flat_elems,
        extra: Vec::new(),
    };
    let body = m.insts.split_off(m.functions_start());
    let body = functions(m, body, &mut ids, &slot_of)?;
    globals.append(&mut ids.extra);
    m.insts.extend(globals);
    m.insts.extend(body);
    m.annotate(decorations);
    // Named like the rest of the module's variables, for `spirv-dis` (only where it has names:
    // the debug section's order leaves no place to start them otherwise).
    if let Some(at) = m.insts.iter().rposition(|i| matches!(i.class.opcode, Op::Name | Op::MemberName)) {
        let name = vec![Operand::IdRef(args), Operand::LiteralString("cmdgraph_args".into())];
        m.insts.insert(at + 1, Instruction::new(Op::Name, None, None, name));
    }

    // SPIR-V 1.4 and later list every global an entry point uses.
    if m.version() >= (1, 4) {
        for e in m.insts.iter_mut().filter(|i| i.class.opcode == Op::EntryPoint) {
            e.operands.push(Operand::IdRef(args));
        }
    }
    m.storage_buffer_extension();
    // A push-constant block's 8- and 16-bit members are now in a storage buffer, and no
    // push constant is left: the push-constant capability goes (the executor refuses what it
    // does not enable) and the storage one comes.
    for (push, storage) in [
        (Capability::StoragePushConstant16, Capability::StorageBuffer16BitAccess),
        (Capability::StoragePushConstant8, Capability::StorageBuffer8BitAccess),
    ] {
        if !m.has_capability(push) {
            continue;
        }
        m.insts
            .retain(|i| !(i.class.opcode == Op::Capability && i.operands.first() == Some(&Operand::Capability(push))));
        if !m.has_capability(storage) {
            let at = m.after_last(|i| i.class.opcode == Op::Capability, 0);
            m.insts.insert(at, Instruction::new(Op::Capability, None, None, vec![Operand::Capability(storage)]));
        }
    }
    Ok(())
}

/// `BufferBlock` decorations become `Block` (their variables move to the StorageBuffer class
/// apart from this).
fn buffer_blocks_to_blocks(m: &mut Flat) {
    for d in &mut m.insts {
        if d.class.opcode == Op::Decorate && d.operands.get(1) == Some(&Operand::Decoration(Decoration::BufferBlock)) {
            d.operands[1] = Operand::Decoration(Decoration::Block);
        }
    }
}

/// Storage buffers declared the old way (`Uniform` variables of `BufferBlock` structs, what
/// SPIR-V before 1.3 and glslang's HLSL front end write) moved to the StorageBuffer class, for
/// a module that otherwise keeps cmdgraph's interface. `false` (and nothing changed) when the
/// module has none, or also has a real uniform block, which the interface check refuses.
pub(super) fn modernize_storage_buffers(m: &mut Flat) -> bool {
    let uniform_vars: Vec<(Word, Word)> = m
        .insts
        .iter()
        .filter(|i| {
            i.class.opcode == Op::Variable && i.operands.first() == Some(&Operand::StorageClass(StorageClass::Uniform))
        })
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    let old_style = |m: &Flat, ptr: Word| match m.def(ptr).and_then(|p| p.operands.get(1)) {
        Some(Operand::IdRef(s)) => m.decorated(*s, Decoration::BufferBlock),
        _ => false,
    };
    if uniform_vars.is_empty() || !uniform_vars.iter().all(|&(_, ptr)| old_style(m, ptr)) {
        return false;
    }
    buffer_blocks_to_blocks(m);
    for inst in &mut m.insts {
        if matches!(inst.class.opcode, Op::TypePointer | Op::Variable)
            && inst.operands.first() == Some(&Operand::StorageClass(StorageClass::Uniform))
        {
            inst.operands[0] = Operand::StorageClass(StorageClass::StorageBuffer);
        }
    }
    m.storage_buffer_extension();
    true
}

/// Rewrites the functions (`body`, from the first `OpFunction` on): each loads the offset and
/// count words it needs once at its start, adds the offset to every index into a buffer's
/// array, and reads the count for `OpArrayLength`.
fn functions(
    m: &mut Flat,
    body: Vec<Instruction>,
    ids: &mut Ids,
    slot_of: &BTreeMap<Word, Points>,
) -> Result<Vec<Instruction>, String> {
    let mut out = Vec::with_capacity(body.len());
    let mut points = slot_of.clone();
    // Ids some instruction reads: a whole-buffer load nothing reads (naga leaves some) is
    // dropped rather than refused.
    let used: BTreeSet<Word> = body
        .iter()
        .flat_map(|i| i.operands.iter())
        .filter_map(|o| match o {
            Operand::IdRef(id) => Some(*id),
            _ => None,
        })
        .collect();
    // Per function: where its prologue goes in `out`, and the words it loads: (slot, count?) → id.
    let mut prologue_at: Option<usize> = None;
    let mut in_first_block = false;
    let mut loaded: BTreeMap<(usize, bool), Word> = BTreeMap::new();
    for mut inst in body {
        let op = inst.class.opcode;
        if in_first_block && !matches!(op, Op::Variable | Op::Line | Op::NoLine) {
            in_first_block = false;
            prologue_at = Some(out.len());
        }
        match op {
            Op::Function => {
                prologue_at = None;
                loaded.clear();
            }
            Op::Label if prologue_at.is_none() => in_first_block = true,
            Op::FunctionEnd => {
                let at = prologue_at.ok_or("a function with no blocks")?;
                let prologue = prologue(&loaded, ids, m);
                out.splice(at..at, prologue);
            }
            _ => {}
        }
        let base = match inst.operands.first() {
            Some(Operand::IdRef(b)) => points.get(b).copied(),
            _ => None,
        };
        let mut load = |m: &mut Flat, slot: usize, count: bool| *loaded.entry((slot, count)).or_insert_with(|| m.id());
        if let Some(p @ Points::Flat { slot, .. }) = base {
            if !(op == Op::Load && inst.result_id.is_some_and(|id| !used.contains(&id))) {
                let offset = load(m, slot, false);
                // The count only for `OpArrayLength` (an id asked for is loaded at entry).
                let count = if op == Op::ArrayLength { Some(load(m, slot, true)) } else { None };
                if let Some(inst) = flat::follow(m, inst, p, (offset, count), ids, &mut points, &mut out)? {
                    refuse_or_keep(inst, &points, &mut out)?;
                }
            }
            continue;
        }
        match (op, base) {
            (
                Op::AccessChain | Op::InBoundsAccessChain,
                Some(Points::Block(slot, kind @ (Kind::Single(depth) | Kind::Fixed(_, depth)), var, taken)),
            ) if depth > 1 || matches!(kind, Kind::Single(_)) => {
                // The `depth` member indexes (all 0: structs of one member) down to the value
                // or array are member 0 of the new block now, taken from the variable.
                let indexes = inst.operands.len() - 1;
                if taken + indexes < depth {
                    // Still inside the structs around the value: no such pointer any more.
                    if let Some(id) = inst.result_id {
                        points.insert(id, Points::Block(slot, kind, var, taken + indexes));
                    }
                    continue;
                }
                let rest = inst.operands.split_off(1 + depth - taken);
                inst.operands = vec![Operand::IdRef(var), Operand::IdRef(ids.zero)];
                match kind {
                    Kind::Single(_) => {
                        // The value is element `offset` of the array now.
                        let offset = load(m, slot, false);
                        inst.operands.push(Operand::IdRef(offset));
                        inst.operands.extend(rest);
                    }
                    Kind::Fixed(ptr, _) => match rest.split_first() {
                        None => {
                            inst.result_type = Some(ptr);
                            if let Some(id) = inst.result_id {
                                points.insert(id, Points::Array(slot));
                            }
                        }
                        Some((Operand::IdRef(index), more)) => {
                            let offset = load(m, slot, false);
                            let sum = add_offset(m, *index, offset, ids, &mut out)?;
                            inst.operands.push(Operand::IdRef(sum));
                            inst.operands.extend(more.iter().cloned());
                        }
                        Some(_) => return Err("an access chain index that is not an id".into()),
                    },
                    Kind::Runtime => {}
                }
                out.push(inst);
            }
            (Op::AccessChain | Op::InBoundsAccessChain, Some(kind)) => {
                // Operands: base, then the indexes.
                let (at, slot, result) = match (kind, inst.operands.len()) {
                    (Points::Block(s, k, v, t), 1) => (None, s, Some(Points::Block(s, k, v, t))),
                    (Points::Block(s, k, _, _), 2) => {
                        if let Kind::Fixed(ptr, _) = k {
                            inst.result_type = Some(ptr);
                        }
                        (None, s, Some(Points::Array(s)))
                    }
                    (Points::Block(s, ..), _) => (Some(2), s, None),
                    (Points::Array(s), 1) => (None, s, Some(Points::Array(s))),
                    (Points::Array(s), _) => (Some(1), s, None),
                    (Points::Flat { .. }, _) => return Err("internal: a flat buffer's chain".into()),
                };
                if let (Some(r), Some(id)) = (result, inst.result_id) {
                    points.insert(id, r);
                }
                if let Some(at) = at {
                    let Some(&Operand::IdRef(index)) = inst.operands.get(at) else {
                        return Err("an access chain index that is not an id".into());
                    };
                    let offset = load(m, slot, false);
                    let sum = add_offset(m, index, offset, ids, &mut out)?;
                    inst.operands[at] = Operand::IdRef(sum);
                }
                out.push(inst);
            }
            (Op::CopyObject, Some(kind)) => {
                if let Some(id) = inst.result_id {
                    points.insert(id, kind);
                }
                out.push(inst);
            }
            (Op::ArrayLength, Some(Points::Block(slot, ..))) => {
                let count = load(m, slot, true);
                let (Some(ty), Some(id)) = (inst.result_type, inst.result_id) else {
                    return Err("OpArrayLength without a result".into());
                };
                out.push(Instruction::new(Op::CopyObject, Some(ty), Some(id), vec![Operand::IdRef(count)]));
            }
            (Op::Load, Some(_)) if inst.result_id.is_some_and(|id| !used.contains(&id)) => {}
            _ => refuse_or_keep(inst, &points, &mut out)?,
        }
    }
    Ok(out)
}

/// Keeps `inst`, unless it uses a buffer's pointer in a way the rewrite cannot follow.
fn refuse_or_keep(
    inst: Instruction,
    points: &BTreeMap<Word, Points>,
    out: &mut Vec<Instruction>,
) -> Result<(), String> {
    if inst.operands.iter().any(|o| matches!(o, Operand::IdRef(id) if points.contains_key(id))) {
        return Err(format!(
            "a buffer's pointer is used by Op{:?}, which rebinding cannot follow (it adds the pointer's \
             element offset to every index into the buffer's array)",
            inst.class.opcode
        ));
    }
    out.push(inst);
    Ok(())
}

/// Makes buffer variable `var`, whose struct's one member is a scalar, vector or fixed-size
/// array, a `Block` of a runtime array of the element: new types declared just before the
/// variable (they use only types declared before its own), the variable retyped. The old
/// struct is left as it is for whatever else uses it.
fn reshape(m: &mut Flat, var: Word, shape: super::Shape) -> Result<Kind, String> {
    let at = m.insts.iter().position(|i| i.result_id == Some(var)).ok_or("a buffer variable not found")?;
    let old_struct = match m.def(m.insts[at].result_type.ok_or("an untyped variable")?).and_then(|p| p.operands.get(1))
    {
        Some(Operand::IdRef(t)) => *t,
        _ => return Err("a buffer variable that is not a pointer".into()),
    };
    let (super::Shape::Single { elem, stride, .. } | super::Shape::Fixed { elem, stride, .. }) = shape;
    let sb = || Operand::StorageClass(StorageClass::StorageBuffer);
    let (array, block, ptr) = (m.id(), m.id(), m.id());
    let mut types = vec![
        Instruction::new(Op::TypeRuntimeArray, None, Some(array), vec![Operand::IdRef(elem)]),
        Instruction::new(Op::TypeStruct, None, Some(block), vec![Operand::IdRef(array)]),
        Instruction::new(Op::TypePointer, None, Some(ptr), vec![sb(), Operand::IdRef(block)]),
    ];
    let kind = match shape {
        super::Shape::Single { depth, .. } => Kind::Single(depth),
        super::Shape::Fixed { depth, .. } => {
            let whole = m.id();
            types.push(Instruction::new(Op::TypePointer, None, Some(whole), vec![sb(), Operand::IdRef(array)]));
            Kind::Fixed(whole, depth)
        }
    };
    m.insts[at].result_type = Some(ptr);
    m.insts.splice(at..at, types);
    // The member's decorations (Offset, NonWritable, ...) carry over to the new struct.
    let mut decorations =
        vec![decorate(array, Decoration::ArrayStride, Some(stride)), decorate(block, Decoration::Block, None)];
    for d in &m.insts {
        if d.class.opcode == Op::MemberDecorate
            && d.operands.first() == Some(&Operand::IdRef(old_struct))
            && d.operands.get(1) == Some(&Operand::LiteralBit32(0))
        {
            let mut copy = d.clone();
            copy.operands[0] = Operand::IdRef(block);
            decorations.push(copy);
        }
    }
    m.annotate(decorations);
    Ok(kind)
}

/// The loads of a function's offset and count words.
fn prologue(loaded: &BTreeMap<(usize, bool), Word>, ids: &Ids, m: &mut Flat) -> Vec<Instruction> {
    let mut out = Vec::new();
    for (&(slot, count), &id) in loaded {
        let (offset_word, count_word) = ids.words[slot];
        let ptr = m.id();
        let word = if count { count_word } else { offset_word };
        out.push(Instruction::new(
            Op::AccessChain,
            Some(ids.word_ptr),
            Some(ptr),
            vec![Operand::IdRef(ids.args), Operand::IdRef(ids.zero), Operand::IdRef(word)],
        ));
        out.push(Instruction::new(Op::Load, Some(ids.u32_ty), Some(id), vec![Operand::IdRef(ptr)]));
    }
    out
}

/// `index + offset` at the index's width, emitted into `out`.
fn add_offset(
    m: &mut Flat,
    index: Word,
    offset: Word,
    ids: &mut Ids,
    out: &mut Vec<Instruction>,
) -> Result<Word, String> {
    let ty = *ids.types.get(&index).ok_or("an index of unknown type")?;
    let sum = m.id();
    match ids.int_widths.get(&ty) {
        Some(32) => {
            out.push(Instruction::new(
                Op::IAdd,
                Some(ty),
                Some(sum),
                vec![Operand::IdRef(index), Operand::IdRef(offset)],
            ));
        }
        Some(64) => {
            let u64_ty = match ids.u64_ty {
                Some(t) => t,
                None => {
                    let t = m.uint(64);
                    ids.u64_ty = Some(t);
                    t
                }
            };
            let wide = m.id();
            out.push(Instruction::new(Op::UConvert, Some(u64_ty), Some(wide), vec![Operand::IdRef(offset)]));
            out.push(Instruction::new(
                Op::IAdd,
                Some(ty),
                Some(sum),
                vec![Operand::IdRef(index), Operand::IdRef(wide)],
            ));
        }
        other => return Err(format!("an index into a buffer of {} bits", other.map_or(0, |w| *w))),
    }
    Ok(sum)
}
