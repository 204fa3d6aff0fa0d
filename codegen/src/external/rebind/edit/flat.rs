//! Storage buffers of structs (or arrays of structs) whose scalars all have one 32-bit type
//! `S`: rebound as a runtime array of `S` (docs/abi.md, "Ordinary bindings"), the signature
//! the shader translator gives the same shader. Every access chain into such a buffer becomes
//! a word index: struct members add their `Offset`, arrays `index * ArrayStride`, vectors the
//! lane, all in words, plus the pointer's element offset from the argument block. A chain that
//! ends at a scalar becomes one `OpAccessChain var 0 word`; a pointer to a vector, struct or
//! array is kept symbolically and its loads and stores go scalar by scalar (padding words are
//! neither read nor written, as a store of a struct leaves them).

use super::{decorate, Flat, Ids, Points};
use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Decoration, Op, StorageClass, Word};
use std::collections::BTreeMap;

/// A constant word index past `u32`.
const TOO_FAR: &str = "a constant index into a buffer of structs past 2^32 words";

/// The most scalars a whole load or store of a struct or array in a flat buffer moves.
const MAX_LEAVES: usize = 4096;

/// What the rewrite needs to know of a type.
#[derive(Clone, Debug)]
pub(super) enum TypeInfo {
    /// A 32-bit number.
    Scalar,
    /// A vector: its component type and size.
    Vector(Word, u32),
    /// An array: its element, its length when fixed, and its `ArrayStride`.
    Array(Word, Option<u32>, u32),
    /// A struct: each member's type and `Offset`.
    Struct(Vec<(Word, u32)>),
}

/// The types, constants and pointer types of the module, for following chains.
#[derive(Default)]
pub(super) struct Types {
    pub(super) info: BTreeMap<Word, TypeInfo>,
    /// `OpConstant` values of 32-bit integer type.
    pub(super) consts: BTreeMap<Word, u32>,
    /// Per pointee: a StorageBuffer (or Uniform, retargeted) pointer type.
    pub(super) ptrs: BTreeMap<Word, Word>,
    /// The module's u32 constants by value (and those added).
    pub(super) u32_consts: BTreeMap<u32, Word>,
}

/// Reads the types of `m`.
pub(super) fn types(m: &Flat, u32_ty: Word) -> Types {
    let mut t = Types::default();
    let lit = |o: Option<&Operand>| match o {
        Some(Operand::LiteralBit32(v)) => Some(*v),
        _ => None,
    };
    let idref = |o: Option<&Operand>| match o {
        Some(Operand::IdRef(v)) => Some(*v),
        _ => None,
    };
    let mut strides = BTreeMap::new();
    let mut offsets: BTreeMap<(Word, u32), u32> = BTreeMap::new();
    let mut ints = BTreeMap::new();
    for i in &m.insts {
        match i.class.opcode {
            Op::Decorate if i.operands.get(1) == Some(&Operand::Decoration(Decoration::ArrayStride)) => {
                if let (Some(id), Some(s)) = (idref(i.operands.first()), lit(i.operands.get(2))) {
                    strides.insert(id, s);
                }
            }
            Op::MemberDecorate if i.operands.get(2) == Some(&Operand::Decoration(Decoration::Offset)) => {
                if let (Some(id), Some(k), Some(o)) =
                    (idref(i.operands.first()), lit(i.operands.get(1)), lit(i.operands.get(3)))
                {
                    offsets.insert((id, k), o);
                }
            }
            _ => {}
        }
    }
    for i in &m.insts {
        let Some(id) = i.result_id else { continue };
        let info = match i.class.opcode {
            Op::TypeInt | Op::TypeFloat => {
                if lit(i.operands.first()) == Some(32) {
                    ints.insert(id, i.class.opcode == Op::TypeInt);
                    Some(TypeInfo::Scalar)
                } else {
                    None
                }
            }
            Op::TypeVector => {
                idref(i.operands.first()).zip(lit(i.operands.get(1))).map(|(c, n)| TypeInfo::Vector(c, n))
            }
            Op::TypeArray => idref(i.operands.first()).and_then(|e| {
                let len = idref(i.operands.get(1)).and_then(|l| t.consts.get(&l).copied());
                Some(TypeInfo::Array(e, Some(len?), *strides.get(&id)?))
            }),
            Op::TypeRuntimeArray => {
                idref(i.operands.first()).and_then(|e| Some(TypeInfo::Array(e, None, *strides.get(&id)?)))
            }
            Op::TypeStruct => {
                let members: Option<Vec<(Word, u32)>> = i
                    .operands
                    .iter()
                    .enumerate()
                    .map(|(k, o)| Some((idref(Some(o))?, *offsets.get(&(id, k as u32))?)))
                    .collect();
                members.map(TypeInfo::Struct)
            }
            Op::TypePointer => {
                if matches!(
                    i.operands.first(),
                    Some(Operand::StorageClass(StorageClass::StorageBuffer | StorageClass::Uniform))
                ) {
                    if let Some(p) = idref(i.operands.get(1)) {
                        t.ptrs.entry(p).or_insert(id);
                    }
                }
                None
            }
            Op::Constant => {
                let ty = i.result_type.unwrap_or(0);
                if ints.get(&ty) == Some(&true) {
                    if let Some(v) = lit(i.operands.first()) {
                        t.consts.insert(id, v);
                        if ty == u32_ty {
                            t.u32_consts.entry(v).or_insert(id);
                        }
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(info) = info {
            t.info.insert(id, info);
        }
    }
    t
}

/// The one 32-bit scalar type of every scalar of type `ty`, or `None` (a matrix, a bool, two
/// scalar types, a type without layout decorations).
pub(super) fn scalar_of(types: &Types, ty: Word) -> Option<Word> {
    fn walk(types: &Types, ty: Word, found: &mut Option<Word>, depth: u32) -> Option<()> {
        if depth > 16 {
            return None;
        }
        match types.info.get(&ty)? {
            TypeInfo::Scalar => match *found {
                Some(s) if s != ty => return None,
                _ => *found = Some(ty),
            },
            TypeInfo::Vector(c, _) => walk(types, *c, found, depth + 1)?,
            TypeInfo::Array(e, _, stride) => {
                if stride % 4 != 0 {
                    return None;
                }
                walk(types, *e, found, depth + 1)?;
            }
            TypeInfo::Struct(members) => {
                for &(m, offset) in members {
                    if offset % 4 != 0 {
                        return None;
                    }
                    walk(types, m, found, depth + 1)?;
                }
            }
        }
        Some(())
    }
    let mut found = None;
    walk(types, ty, &mut found, 0)?;
    found
}

/// Makes buffer variable `var` a `Block` of a runtime array of `elem` (stride 4), new types
/// declared just before it; returns the struct type it had.
pub(super) fn reshape_flat(m: &mut Flat, var: Word, elem: Word) -> Result<Word, String> {
    let at = m.insts.iter().position(|i| i.result_id == Some(var)).ok_or("a buffer variable not found")?;
    let old_struct = match m.def(m.insts[at].result_type.ok_or("an untyped variable")?).and_then(|p| p.operands.get(1))
    {
        Some(Operand::IdRef(t)) => *t,
        _ => return Err("a buffer variable that is not a pointer".into()),
    };
    let sb = || Operand::StorageClass(StorageClass::StorageBuffer);
    let (array, block, ptr) = (m.id(), m.id(), m.id());
    let types = vec![
        Instruction::new(Op::TypeRuntimeArray, None, Some(array), vec![Operand::IdRef(elem)]),
        Instruction::new(Op::TypeStruct, None, Some(block), vec![Operand::IdRef(array)]),
        Instruction::new(Op::TypePointer, None, Some(ptr), vec![sb(), Operand::IdRef(block)]),
    ];
    m.insts[at].result_type = Some(ptr);
    m.insts.splice(at..at, types);
    let mut decorations = vec![
        decorate(array, Decoration::ArrayStride, Some(4)),
        decorate(block, Decoration::Block, None),
        Instruction::new(
            Op::MemberDecorate,
            None,
            None,
            vec![
                Operand::IdRef(block),
                Operand::LiteralBit32(0),
                Operand::Decoration(Decoration::Offset),
                Operand::LiteralBit32(0),
            ],
        ),
    ];
    // Read-only if every member of the old struct was.
    let members = match m.def(old_struct) {
        Some(s) => s.operands.len() as u32,
        None => 0,
    };
    let non_writable = |k: u32| {
        m.insts.iter().any(|d| {
            d.class.opcode == Op::MemberDecorate
                && d.operands.first() == Some(&Operand::IdRef(old_struct))
                && d.operands.get(1) == Some(&Operand::LiteralBit32(k))
                && d.operands.get(2) == Some(&Operand::Decoration(Decoration::NonWritable))
        })
    };
    if members > 0 && (0..members).all(non_writable) {
        decorations.push(Instruction::new(
            Op::MemberDecorate,
            None,
            None,
            vec![Operand::IdRef(block), Operand::LiteralBit32(0), Operand::Decoration(Decoration::NonWritable)],
        ));
    }
    m.annotate(decorations);
    Ok(old_struct)
}

/// A word index being built: an id (the pointer's element offset, plus what was added) and a
/// constant not yet added.
#[derive(Clone, Copy)]
struct Word2 {
    id: Word,
    constant: u32,
}

impl Ids {
    /// A u32 constant, declared with the other globals when the module has none.
    fn u32_const(&mut self, m: &mut Flat, v: u32) -> Word {
        if let Some(&id) = self.flat.u32_consts.get(&v) {
            return id;
        }
        let id = m.id();
        self.extra.push(Instruction::new(Op::Constant, Some(self.u32_ty), Some(id), vec![Operand::LiteralBit32(v)]));
        self.flat.u32_consts.insert(v, id);
        id
    }

    /// A StorageBuffer pointer type to `ty`, declared when the module has none.
    fn ptr_to(&mut self, m: &mut Flat, ty: Word) -> Word {
        if let Some(&p) = self.flat.ptrs.get(&ty) {
            return p;
        }
        let id = m.id();
        self.extra.push(Instruction::new(
            Op::TypePointer,
            None,
            Some(id),
            vec![Operand::StorageClass(StorageClass::StorageBuffer), Operand::IdRef(ty)],
        ));
        self.flat.ptrs.insert(ty, id);
        id
    }

    fn binop(&mut self, m: &mut Flat, op: Op, a: Word, b: Word, out: &mut Vec<Instruction>) -> Word {
        let id = m.id();
        out.push(Instruction::new(op, Some(self.u32_ty), Some(id), vec![Operand::IdRef(a), Operand::IdRef(b)]));
        id
    }

    /// The word as one id.
    fn word(&mut self, m: &mut Flat, w: Word2, out: &mut Vec<Instruction>) -> Word {
        if w.constant == 0 {
            return w.id;
        }
        let c = self.u32_const(m, w.constant);
        self.binop(m, Op::IAdd, w.id, c, out)
    }

    /// `OpAccessChain var 0 word` to the scalar at `w`, with result `result` (a fresh id if
    /// `None`).
    fn scalar_ptr(
        &mut self,
        m: &mut Flat,
        var: Word,
        scalar: Word,
        w: Word2,
        result: Option<(Word, Word)>,
        out: &mut Vec<Instruction>,
    ) -> Word {
        let word = self.word(m, w, out);
        let (ty, id) = match result {
            Some(r) => r,
            None => (self.ptr_to(m, scalar), m.id()),
        };
        out.push(Instruction::new(
            Op::AccessChain,
            Some(ty),
            Some(id),
            vec![Operand::IdRef(var), Operand::IdRef(self.zero), Operand::IdRef(word)],
        ));
        id
    }

    /// The scalars of type `ty` at word offsets from its start, with the composite path to
    /// each (for `OpCompositeExtract`), in member order.
    fn leaves(&self, ty: Word, at: u32, path: Vec<u32>, out: &mut Vec<(u32, Vec<u32>)>) -> Result<(), String> {
        if out.len() > MAX_LEAVES {
            return Err(format!("a load or store of more than {MAX_LEAVES} scalars in a buffer of structs"));
        }
        match self.flat.info.get(&ty) {
            Some(TypeInfo::Scalar) => out.push((at, path)),
            Some(TypeInfo::Vector(_, n)) => {
                out.extend((0..*n).map(|l| (at.wrapping_add(l), [path.clone(), vec![l]].concat())))
            }
            Some(TypeInfo::Array(e, Some(len), stride)) => {
                for i in 0..*len {
                    let word = at.wrapping_add(i.wrapping_mul(stride / 4));
                    self.leaves(*e, word, [path.clone(), vec![i]].concat(), out)?;
                }
            }
            Some(TypeInfo::Struct(members)) => {
                for (k, &(t, offset)) in members.iter().enumerate() {
                    self.leaves(t, at.wrapping_add(offset / 4), [path.clone(), vec![k as u32]].concat(), out)?;
                }
            }
            _ => return Err("a load or store of a whole runtime-sized array in a buffer of structs".into()),
        }
        Ok(())
    }
}

/// Rewrites instruction `inst`, whose first operand is the flat pointer `p`: an access chain
/// (to a word), a load or a store (scalar by scalar), an `OpArrayLength` (the words from the
/// array to the end of the argument's window, over the stride: `count` is the slot's element
/// count, asked for only then); `inst` back when it is none of these.
pub(super) fn follow(
    m: &mut Flat,
    mut inst: Instruction,
    p: Points,
    (offset, count): (Word, Option<Word>),
    ids: &mut Ids,
    points: &mut BTreeMap<Word, Points>,
    out: &mut Vec<Instruction>,
) -> Result<Option<Instruction>, String> {
    let Points::Flat { slot, var, ty, word } = p else { return Ok(Some(inst)) };
    let scalar = *ids.flat_elems.get(&slot).ok_or("a flat buffer without an element type")?;
    let start = Word2 { id: word.unwrap_or(offset), constant: 0 };
    match inst.class.opcode {
        Op::AccessChain | Op::InBoundsAccessChain => {
            let (mut ty, mut w) = (ty, start);
            for o in inst.operands.split_off(1) {
                let Operand::IdRef(index) = o else { return Err("an access chain index that is not an id".into()) };
                let info = ids.flat.info.get(&ty).cloned().ok_or("an access chain into an unknown type")?;
                let (e, words) = match info {
                    TypeInfo::Struct(members) => {
                        let k = *ids.flat.consts.get(&index).ok_or("a struct member index that is not a constant")?;
                        let &(t, offset) = members.get(k as usize).ok_or("a struct member out of range")?;
                        w.constant = w.constant.checked_add(offset / 4).ok_or(TOO_FAR)?;
                        ty = t;
                        continue;
                    }
                    TypeInfo::Array(e, _, stride) => (e, stride / 4),
                    TypeInfo::Vector(c, _) => (c, 1),
                    TypeInfo::Scalar => return Err("an access chain into a scalar".into()),
                };
                match ids.flat.consts.get(&index) {
                    Some(&k) => {
                        w.constant = k.checked_mul(words).and_then(|x| x.checked_add(w.constant)).ok_or(TOO_FAR)?;
                    }
                    None => {
                        if ids.int_widths.get(ids.types.get(&index).unwrap_or(&0)) != Some(&32) {
                            return Err("an index into a buffer of structs that is not 32-bit".into());
                        }
                        let scaled = if words == 1 {
                            index
                        } else {
                            let c = ids.u32_const(m, words);
                            ids.binop(m, Op::IMul, index, c, out)
                        };
                        w.id = ids.binop(m, Op::IAdd, w.id, scaled, out);
                    }
                }
                ty = e;
            }
            let (Some(result_ty), Some(id)) = (inst.result_type, inst.result_id) else {
                return Err("an access chain without a result".into());
            };
            if matches!(ids.flat.info.get(&ty), Some(TypeInfo::Scalar)) {
                ids.scalar_ptr(m, var, scalar, w, Some((result_ty, id)), out);
            } else {
                let word = ids.word(m, w, out);
                points.insert(id, Points::Flat { slot, var, ty, word: Some(word) });
            }
            Ok(None)
        }
        Op::Load => {
            let Some(id) = inst.result_id else {
                return Err("a load without a result".into());
            };
            let mut leaves = Vec::new();
            ids.leaves(ty, 0, Vec::new(), &mut leaves)?;
            let mut values = Vec::new();
            for (at, _) in &leaves {
                let ptr = ids.scalar_ptr(m, var, scalar, Word2 { id: start.id, constant: *at }, None, out);
                let v = m.id();
                out.push(Instruction::new(Op::Load, Some(scalar), Some(v), vec![Operand::IdRef(ptr)]));
                values.push(v);
            }
            let mut values = values.into_iter();
            construct(m, ids, ty, Some(id), &mut values, out)?;
            Ok(None)
        }
        Op::Store => {
            let Some(&Operand::IdRef(value)) = inst.operands.get(1) else {
                return Err("a store without a value".into());
            };
            let mut leaves = Vec::new();
            ids.leaves(ty, 0, Vec::new(), &mut leaves)?;
            for (at, path) in leaves {
                let x = if path.is_empty() {
                    value
                } else {
                    let x = m.id();
                    let mut operands = vec![Operand::IdRef(value)];
                    operands.extend(path.iter().map(|&k| Operand::LiteralBit32(k)));
                    out.push(Instruction::new(Op::CompositeExtract, Some(scalar), Some(x), operands));
                    x
                };
                let ptr = ids.scalar_ptr(m, var, scalar, Word2 { id: start.id, constant: at }, None, out);
                out.push(Instruction::new(Op::Store, None, None, vec![Operand::IdRef(ptr), Operand::IdRef(x)]));
            }
            Ok(None)
        }
        Op::ArrayLength => {
            let (Some(result_ty), Some(id), Some(count)) = (inst.result_type, inst.result_id, count) else {
                return Err("OpArrayLength without a result".into());
            };
            let Some(&Operand::LiteralBit32(k)) = inst.operands.get(1) else {
                return Err("OpArrayLength without a member".into());
            };
            let Some(TypeInfo::Struct(members)) = ids.flat.info.get(&ty).cloned() else {
                return Err("OpArrayLength of something other than a struct".into());
            };
            let &(t, member) = members.get(k as usize).ok_or("OpArrayLength of a member out of range")?;
            let Some(TypeInfo::Array(_, None, stride)) = ids.flat.info.get(&t).cloned() else {
                return Err("OpArrayLength of a member that is not a runtime array".into());
            };
            // Word indices run from the binding's start: the window ends at offset + count.
            let end = ids.binop(m, Op::IAdd, offset, count, out);
            let first = ids.word(m, Word2 { id: start.id, constant: start.constant + member / 4 }, out);
            let words = ids.binop(m, Op::ISub, end, first, out);
            let s = ids.u32_const(m, (stride / 4).max(1));
            let n = ids.binop(m, Op::UDiv, words, s, out);
            out.push(Instruction::new(Op::CopyObject, Some(result_ty), Some(id), vec![Operand::IdRef(n)]));
            Ok(None)
        }
        Op::CopyObject => {
            // The copy stands for the same place.
            if let Some(id) = inst.result_id {
                points.insert(id, p);
            }
            Ok(None)
        }
        _ => Ok(Some(inst)),
    }
}

/// A value of type `ty` built from the scalars `values` in member order (`result` its id, or
/// a fresh one).
fn construct(
    m: &mut Flat,
    ids: &Ids,
    ty: Word,
    result: Option<Word>,
    values: &mut impl Iterator<Item = Word>,
    out: &mut Vec<Instruction>,
) -> Result<Word, String> {
    let parts: Vec<Word> = match ids.flat.info.get(&ty).ok_or("a load of an unknown type")? {
        TypeInfo::Scalar => {
            let v = values.next().ok_or("internal: too few scalars")?;
            return Ok(match result {
                // A scalar load keeps its id: copy the loaded word to it.
                Some(id) => {
                    out.push(Instruction::new(Op::CopyObject, Some(ty), Some(id), vec![Operand::IdRef(v)]));
                    id
                }
                None => v,
            });
        }
        TypeInfo::Vector(c, n) => {
            let (c, n) = (*c, *n);
            (0..n).map(|_| construct(m, ids, c, None, values, out)).collect::<Result<_, _>>()?
        }
        TypeInfo::Array(e, Some(len), _) => {
            let (e, len) = (*e, *len);
            (0..len).map(|_| construct(m, ids, e, None, values, out)).collect::<Result<_, _>>()?
        }
        TypeInfo::Struct(members) => {
            let members: Vec<Word> = members.iter().map(|&(t, _)| t).collect();
            members.into_iter().map(|t| construct(m, ids, t, None, values, out)).collect::<Result<_, _>>()?
        }
        TypeInfo::Array(_, None, _) => return Err("a load of a whole runtime-sized array".into()),
    };
    let id = result.unwrap_or_else(|| m.id());
    out.push(Instruction::new(
        Op::CompositeConstruct,
        Some(ty),
        Some(id),
        parts.into_iter().map(Operand::IdRef).collect(),
    ));
    Ok(id)
}
