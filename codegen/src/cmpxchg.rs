//! Repairs what LLVM 22's SPIR-V backend emits around the `llvm.spv.cmpxchg` intrinsic.
//!
//! The lowering (lower/atomic.rs) calls the intrinsic directly because an LLVM `cmpxchg`
//! instruction crashes the backend. The backend then selects a correct
//! `OpAtomicCompareExchange %T %old ...` but, expecting the `{T, bool}` result of the
//! instruction it normally replaces, packs it as
//!
//! ```text
//! %a = OpCompositeInsert %uint %old %undef 0
//! %b = OpCompositeInsert %uint %eq %a 1
//! %c = OpCompositeExtract %T %b 0          ; the lowering's `llvm.spv.extractv`
//! ```
//!
//! into the intrinsic's declared `i32` result, which is not a composite (invalid). This pass
//! drops `%a` and `%b` and turns `%c` into `OpCopyObject %T %old`. Anything that does not
//! match exactly is left alone, and `spirv-val` (run on every module) rejects it.

use crate::spirv_walk::{instructions, HEADER_WORDS};

const OP_TYPE_INT: u32 = 21;
const OP_COMPOSITE_EXTRACT: u32 = 81;
const OP_COMPOSITE_INSERT: u32 = 82;
const OP_COPY_OBJECT: u32 = 83;
const OP_ATOMIC_COMPARE_EXCHANGE: u32 = 230;
/// The words with every compare-exchange's scalar packing removed (module doc); unchanged
/// when the module has no `OpAtomicCompareExchange` or is malformed.
pub(crate) fn unpack_compare_exchange(words: &[u32]) -> Vec<u32> {
    let Some(insts) = instructions(words) else { return words.to_vec() };
    let w = |s: usize, i: usize| words.get(s + i).copied();
    let int_types: Vec<u32> = insts.iter().filter(|i| i.1 == OP_TYPE_INT).filter_map(|i| w(i.0, 1)).collect();
    let mut drop = Vec::new();
    let mut copies = Vec::new();
    for &(s, op, _) in &insts {
        if op != OP_ATOMIC_COMPARE_EXCHANGE {
            continue;
        }
        let (Some(ty), Some(old)) = (w(s, 1), w(s, 2)) else { continue };
        // `%a = OpCompositeInsert %int %old %x 0` into a scalar integer type.
        let find = |op_want: u32, operand: usize, value: u32, index: u32, count: usize| {
            insts.iter().find(|&&(s2, op2, c2)| {
                op2 == op_want && c2 == count && w(s2, operand) == Some(value) && w(s2, count - 1) == Some(index)
            })
        };
        let Some(&(a, _, _)) = find(OP_COMPOSITE_INSERT, 3, old, 0, 6) else { continue };
        let (Some(a_ty), Some(a_id)) = (w(a, 1), w(a, 2)) else { continue };
        if !int_types.contains(&a_ty) {
            continue;
        }
        let Some(&(b, _, _)) = find(OP_COMPOSITE_INSERT, 4, a_id, 1, 6) else { continue };
        let Some(b_id) = w(b, 2) else { continue };
        // No extract when the old value is unused (the optimizer removed it).
        match find(OP_COMPOSITE_EXTRACT, 3, b_id, 0, 5) {
            None => drop.extend([a, b]),
            Some(&(c, _, _)) => {
                let (Some(c_ty), Some(c_id)) = (w(c, 1), w(c, 2)) else { continue };
                if c_ty != ty {
                    continue;
                }
                drop.extend([a, b]);
                copies.push((c, [(4 << 16) | OP_COPY_OBJECT, c_ty, c_id, old]));
            }
        }
    }
    if drop.is_empty() {
        return words.to_vec();
    }
    let mut out = words[..HEADER_WORDS.min(words.len())].to_vec();
    for &(s, _, count) in &insts {
        if drop.contains(&s) {
            continue;
        }
        match copies.iter().find(|(c, _)| *c == s) {
            Some((_, copy)) => out.extend_from_slice(copy),
            None => out.extend_from_slice(&words[s..s + count]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-written module body with the backend's packing after a compare-exchange.
    fn module(insert_type_is_int: bool) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0600, 0, 100, 0];
        w.extend([(4 << 16) | OP_TYPE_INT, 1, 32, 0]); // %1 = uint
        if !insert_type_is_int {
            w.extend([(4 << 16) | 30, 2, 1, 1]); // %2 = struct{uint, uint}
        }
        let packed = if insert_type_is_int { 1 } else { 2 };
        w.extend([(9 << 16) | OP_ATOMIC_COMPARE_EXCHANGE, 1, 10, 5, 6, 7, 8, 11, 12]);
        w.extend([(6 << 16) | OP_COMPOSITE_INSERT, packed, 13, 10, 9, 0]);
        w.extend([(6 << 16) | OP_COMPOSITE_INSERT, packed, 14, 15, 13, 1]);
        w.extend([(5 << 16) | OP_COMPOSITE_EXTRACT, 1, 16, 14, 0]);
        w
    }

    #[test]
    fn the_packing_becomes_a_copy_of_the_old_value() {
        let out = unpack_compare_exchange(&module(true));
        let tail = &out[out.len() - 13..];
        assert_eq!(&tail[..9], &[(9 << 16) | OP_ATOMIC_COMPARE_EXCHANGE, 1, 10, 5, 6, 7, 8, 11, 12]);
        assert_eq!(&tail[9..], &[(4 << 16) | OP_COPY_OBJECT, 1, 16, 10]);
    }

    #[test]
    fn an_unused_old_value_drops_the_packing() {
        let m = module(true);
        let out = unpack_compare_exchange(&m[..m.len() - 5]);
        assert_eq!(out.len(), m.len() - 5 - 12);
        assert_eq!(out[out.len() - 9] & 0xffff, OP_ATOMIC_COMPARE_EXCHANGE);
    }

    #[test]
    fn a_real_struct_result_is_left_alone() {
        let m = module(false);
        assert_eq!(unpack_compare_exchange(&m), m);
    }

    #[test]
    fn malformed_words_are_returned_unchanged() {
        let mut m = module(true);
        m.push(0xffff_0000);
        assert_eq!(unpack_compare_exchange(&m), m);
    }
}
