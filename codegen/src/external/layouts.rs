//! Explicit layout decorations on work-group types, removed.
//!
//! `ArrayStride`, `MatrixStride` and `Offset` on a type that lives in `Workgroup` memory mean
//! nothing without `WorkgroupMemoryExplicitLayoutKHR` (the driver lays work-group memory out
//! as it likes), and Vulkan forbids them there (VUID-StandaloneSpirv-None-10684, which
//! SPIRV-Tools enforces since its 2025 releases). Older compilers write them: naga 28 (the
//! version `cmdgraph-shader` and the tests use) decorates a work-group array's type with its
//! stride. Such a module means exactly what it means without them, so the external-kernel path
//! removes them before validating, instead of refusing a module every driver runs. Types
//! that buffer memory also reaches keep theirs (the layout is meaningful there; the validator
//! then judges the module as written).

use std::collections::{BTreeMap, BTreeSet};

const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_CAPABILITY: u32 = 17;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_MATRIX: u32 = 24;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_RUNTIME_ARRAY: u32 = 29;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const ARRAY_STRIDE: u32 = 6;
const MATRIX_STRIDE: u32 = 7;
const OFFSET: u32 = 35;
const STORAGE_WORKGROUP: u32 = 4;
const WORKGROUP_MEMORY_EXPLICIT_LAYOUT: u32 = 4428;

/// The instructions after the header as (word index, opcode, operands); `None` for a word
/// stream that does not split into whole instructions (the validator then says why).
fn instructions(words: &[u32]) -> Option<Vec<(usize, u32, &[u32])>> {
    let list = crate::spirv_walk::instructions(words)?;
    Some(list.into_iter().map(|(at, opcode, count)| (at, opcode, &words[at + 1..at + count])).collect())
}

/// Every type reachable from `roots` through composite members and elements (not pointers).
fn reach(roots: impl IntoIterator<Item = u32>, parts: &BTreeMap<u32, Vec<u32>>) -> BTreeSet<u32> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<u32> = roots.into_iter().collect();
    while let Some(t) = stack.pop() {
        if seen.insert(t) {
            stack.extend(parts.get(&t).into_iter().flatten().copied());
        }
    }
    seen
}

/// `words` without the explicit layout decorations of types only work-group memory reaches,
/// or `None` when it has none (or declares `WorkgroupMemoryExplicitLayoutKHR`, or does not
/// split into instructions).
pub(super) fn strip_workgroup_layouts(words: &[u32]) -> Option<Vec<u32>> {
    let list = instructions(words)?;
    let mut parts: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let (mut workgroup, mut other) = (Vec::new(), Vec::new());
    for &(_, opcode, ops) in &list {
        match (opcode, ops) {
            (OP_CAPABILITY, [WORKGROUP_MEMORY_EXPLICIT_LAYOUT]) => return None,
            (OP_TYPE_VECTOR | OP_TYPE_MATRIX | OP_TYPE_ARRAY | OP_TYPE_RUNTIME_ARRAY, [id, elem, ..]) => {
                parts.insert(*id, vec![*elem]);
            }
            (OP_TYPE_STRUCT, [id, members @ ..]) => {
                parts.insert(*id, members.to_vec());
            }
            (OP_TYPE_POINTER, [_, STORAGE_WORKGROUP, pointee]) => workgroup.push(*pointee),
            (OP_TYPE_POINTER, [_, _, pointee]) => other.push(*pointee),
            _ => {}
        }
    }
    let elsewhere = reach(other, &parts);
    let only_workgroup: BTreeSet<u32> =
        reach(workgroup, &parts).into_iter().filter(|t| !elsewhere.contains(t)).collect();
    let is_layout = |opcode: u32, ops: &[u32]| match (opcode, ops) {
        (OP_DECORATE, [target, ARRAY_STRIDE | MATRIX_STRIDE, ..]) => only_workgroup.contains(target),
        (OP_MEMBER_DECORATE, [target, _, OFFSET | MATRIX_STRIDE | ARRAY_STRIDE, ..]) => only_workgroup.contains(target),
        _ => false,
    };
    if !list.iter().any(|&(_, opcode, ops)| is_layout(opcode, ops)) {
        return None;
    }
    let mut out = words[..5].to_vec();
    for &(at, opcode, ops) in &list {
        if !is_layout(opcode, ops) {
            out.extend_from_slice(&words[at..at + 1 + ops.len()]);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An instruction's words.
    fn ins(opcode: u32, ops: &[u32]) -> Vec<u32> {
        let mut w = vec![((ops.len() as u32 + 1) << 16) | opcode];
        w.extend_from_slice(ops);
        w
    }

    /// A header, then: a float (2), an array of it (3) with its stride, a struct of that
    /// array (4) with a member offset, a second array (5) with a stride that a storage
    /// buffer pointer (7) also reaches, and a `Workgroup` pointer (6) to the struct and to
    /// the second array (8).
    fn module(extra: &[Vec<u32>]) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0600, 0, 10, 0];
        for e in extra {
            w.extend(e);
        }
        w.extend(ins(OP_DECORATE, &[3, ARRAY_STRIDE, 4]));
        w.extend(ins(OP_MEMBER_DECORATE, &[4, 0, OFFSET, 0]));
        w.extend(ins(OP_DECORATE, &[5, ARRAY_STRIDE, 4]));
        w.extend(ins(22, &[2, 32]));
        w.extend(ins(OP_TYPE_ARRAY, &[3, 2, 9]));
        w.extend(ins(OP_TYPE_STRUCT, &[4, 3]));
        w.extend(ins(OP_TYPE_RUNTIME_ARRAY, &[5, 2]));
        w.extend(ins(OP_TYPE_POINTER, &[6, STORAGE_WORKGROUP, 4]));
        w.extend(ins(OP_TYPE_POINTER, &[7, 12, 5]));
        w.extend(ins(OP_TYPE_POINTER, &[8, STORAGE_WORKGROUP, 5]));
        w
    }

    #[test]
    fn only_the_layouts_of_types_no_buffer_reaches_go() {
        let w = module(&[]);
        let stripped = strip_workgroup_layouts(&w).unwrap();
        let kept = instructions(&stripped).unwrap();
        let decorations: Vec<&[u32]> = kept
            .iter()
            .filter(|(_, op, _)| matches!(*op, OP_DECORATE | OP_MEMBER_DECORATE))
            .map(|(_, _, o)| *o)
            .collect();
        // The struct's offset and its array's stride are gone; the array a buffer reaches keeps its stride.
        assert_eq!(decorations, vec![&[5, ARRAY_STRIDE, 4][..]]);
        assert_eq!(stripped.len(), w.len() - 4 - 5);
        assert_eq!(strip_workgroup_layouts(&stripped), None, "nothing left to strip");
    }

    #[test]
    fn explicit_work_group_layouts_and_broken_words_are_left_alone() {
        let w = module(&[ins(OP_CAPABILITY, &[WORKGROUP_MEMORY_EXPLICIT_LAYOUT])]);
        assert_eq!(strip_workgroup_layouts(&w), None);
        let mut w = module(&[]);
        w.push(0xffff_0000 | OP_DECORATE);
        assert_eq!(strip_workgroup_layouts(&w), None);
    }
}
