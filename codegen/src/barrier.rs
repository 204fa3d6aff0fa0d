//! Memory semantics of work-group barriers in the emitted SPIR-V words.
//!
//! LLVM 22's SPIR-V backend lowers `llvm.spv.group.memory.barrier.with.group.sync` to
//! `OpControlBarrier Workgroup Workgroup SequentiallyConsistent` with no storage-class bit,
//! which under Vulkan orders no memory at all: drivers may move work-group memory accesses
//! across it (llvmpipe does, and the tree reduction of examples/reduction.cgir then sums
//! stale values). `group_barrier` is a barrier plus a work-group fence over all memory
//! (docs/ir.md), which is `AcquireRelease | UniformMemory | WorkgroupMemory`, as GLSL's
//! `barrier()` plus `memoryBarrier()` would give. This pass gives every barrier without a
//! storage-class bit those semantics.

use crate::spirv_walk::instructions;

const OP_CONSTANT: u32 = 43;
const OP_CONTROL_BARRIER: u32 = 224;
const OP_MEMORY_BARRIER: u32 = 225;
/// UniformMemory .. ImageMemory.
const STORAGE_BITS: u32 = 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800;
/// `AcquireRelease | UniformMemory | WorkgroupMemory`.
pub(crate) const GROUP_BARRIER_SEMANTICS: u32 = 0x8 | 0x40 | 0x100;

/// The words with every barrier's semantics fixed (unchanged when none needs it).
pub(crate) fn fix_barrier_semantics(words: &[u32]) -> Vec<u32> {
    let Some(insts) = instructions(words) else { return words.to_vec() };
    let insts: Vec<usize> = insts.into_iter().map(|(at, _, _)| at).collect();
    let mut words = words.to_vec();
    // 32-bit constants: id -> (instruction start, type, value).
    let mut constants = std::collections::BTreeMap::new();
    for &s in &insts {
        if words[s] == (4 << 16) | OP_CONSTANT {
            constants.insert(words[s + 2], (s, words[s + 1], words[s + 3]));
        }
    }
    // Semantics operands to replace.
    let mut targets = Vec::new();
    for &s in &insts {
        let slot = match words[s] {
            w if w == (4 << 16) | OP_CONTROL_BARRIER => s + 3,
            w if w == (3 << 16) | OP_MEMORY_BARRIER => s + 2,
            _ => continue,
        };
        if let Some(&(_, _, value)) = constants.get(&words[slot]) {
            if value & STORAGE_BITS == 0 {
                targets.push(slot);
            }
        }
    }
    let Some(&first) = targets.first() else { return words };
    let Some(&(def, ty, _)) = constants.get(&words[first]) else { return words };
    let id = match constants.iter().find(|(_, &(_, t, v))| t == ty && v == GROUP_BARRIER_SEMANTICS) {
        Some((&id, _)) => id,
        None => {
            let id = words[3];
            words[3] = id + 1;
            let end = def + 4;
            for &slot in &targets {
                // Every target lies in a function, after the constants.
                words[slot] = id;
            }
            let mut out = words[..end].to_vec();
            out.extend_from_slice(&[(4 << 16) | OP_CONSTANT, ty, id, GROUP_BARRIER_SEMANTICS]);
            out.extend_from_slice(&words[end..]);
            return out;
        }
    };
    for &slot in &targets {
        words[slot] = id;
    }
    words
}
