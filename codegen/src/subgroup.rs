//! Subgroup collectives in the emitted SPIR-V words: each call to an imported
//! `cmdgraph_sg_*` function (lower/subgroup.rs says why they are calls) becomes its
//! `OpGroupNonUniform*` instruction, and the imports, their names and the `Linkage`
//! capability they brought go; the capabilities the instructions need are added.

use crate::spirv_walk::{instructions, HEADER_WORDS};
use std::collections::BTreeMap;

/// `Subgroup` scope (SPIR-V `Scope` 3), the first argument of every call.
pub(crate) const SCOPE_SUBGROUP: u32 = 3;
/// Prefix of the imported functions' names.
const PREFIX: &str = "cmdgraph_sg_";

const OP_NAME: u32 = 5;
const OP_CAPABILITY: u32 = 17;
const OP_FUNCTION: u32 = 54;
const OP_FUNCTION_END: u32 = 56;
const OP_FUNCTION_CALL: u32 = 57;
const OP_DECORATE: u32 = 71;
const DECORATION_LINKAGE: u32 = 41;
const CAP_LINKAGE: u32 = 5;
const CAP_GROUP_NON_UNIFORM: u32 = 61;
const CAP_VOTE: u32 = 62;
const CAP_ARITHMETIC: u32 = 63;
const CAP_BALLOT: u32 = 64;
const CAP_SHUFFLE: u32 = 65;

/// The `OpGroupNonUniform*` instructions subgroup ops use, by opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Opcode {
    Elect = 333,
    All = 334,
    Any = 335,
    Broadcast = 337,
    BroadcastFirst = 338,
    Ballot = 339,
    Shuffle = 345,
    IAdd = 349,
    FAdd = 350,
    IMul = 351,
    FMul = 352,
    SMin = 353,
    UMin = 354,
    FMin = 355,
    SMax = 356,
    UMax = 357,
    FMax = 358,
    BitwiseAnd = 359,
    BitwiseOr = 360,
    BitwiseXor = 361,
}

/// The capability an instruction needs besides `GroupNonUniform`.
fn capability(opcode: u32) -> Option<u32> {
    match opcode {
        333 => None,
        334 | 335 => Some(CAP_VOTE),
        337..=339 => Some(CAP_BALLOT),
        345 => Some(CAP_SHUFFLE),
        _ => Some(CAP_ARITHMETIC),
    }
}

/// The name of the imported function standing for `opcode` (with its group operation:
/// 0 reduce, 1 inclusive scan, 2 exclusive scan) returning `ty` (mangled).
pub(crate) fn call_name(opcode: Opcode, group_op: Option<u32>, ty: &str) -> String {
    let g = group_op.map_or("x".to_string(), |g| g.to_string());
    format!("{PREFIX}{}_{g}_{ty}", opcode as u32)
}

/// `(opcode, group operation)` of an imported function's name.
fn parse_name(name: &str) -> Option<(u32, Option<u32>)> {
    let mut parts = name.strip_prefix(PREFIX)?.split('_');
    let opcode = parts.next()?.parse().ok()?;
    let g = parts.next()?;
    Some((opcode, if g == "x" { None } else { Some(g.parse().ok()?) }))
}

/// A literal string operand starting at `words[0]`.
fn string(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The words with every `cmdgraph_sg_*` call rewritten (unchanged when there is none, or
/// when the stream is malformed: spirv-val then reports the calls).
pub(crate) fn lower_calls(words: &[u32]) -> Vec<u32> {
    let Some(insts) = instructions(words) else { return words.to_vec() };
    let mut targets: BTreeMap<u32, (u32, Option<u32>)> = BTreeMap::new();
    let mut other_imports = 0;
    for &(at, op, count) in &insts {
        if op == OP_DECORATE && count >= 4 && words[at + 2] == DECORATION_LINKAGE {
            match parse_name(&string(&words[at + 3..at + count])) {
                Some(t) => {
                    targets.insert(words[at + 1], t);
                }
                None => other_imports += 1,
            }
        }
    }
    if targets.is_empty() {
        return words.to_vec();
    }
    let mut caps: Vec<u32> = vec![CAP_GROUP_NON_UNIFORM];
    caps.extend(targets.values().filter_map(|(opcode, _)| capability(*opcode)));
    caps.sort_unstable();
    caps.dedup();
    let present: Vec<u32> =
        insts.iter().filter(|i| i.1 == OP_CAPABILITY && i.2 == 2).map(|&(at, _, _)| words[at + 1]).collect();
    let mut out = words[..HEADER_WORDS].to_vec();
    let mut skipping = false;
    let mut added = false;
    for &(at, op, count) in &insts {
        let inst = &words[at..at + count];
        if skipping {
            skipping = op != OP_FUNCTION_END;
            continue;
        }
        match op {
            OP_CAPABILITY if count == 2 && inst[1] == CAP_LINKAGE && other_imports == 0 => continue,
            OP_NAME | OP_DECORATE if count >= 2 && targets.contains_key(&inst[1]) => continue,
            OP_FUNCTION if count >= 3 && targets.contains_key(&inst[2]) => {
                skipping = true;
                continue;
            }
            OP_FUNCTION_CALL if count >= 5 => {
                if let Some(&(opcode, group_op)) = targets.get(&inst[3]) {
                    // [type, result, function, scope, args...] → [type, result, scope,
                    // (group operation,) args...]
                    let mut new = vec![0, inst[1], inst[2], inst[4]];
                    new.extend(group_op);
                    new.extend_from_slice(&inst[5..]);
                    new[0] = ((new.len() as u32) << 16) | opcode;
                    out.extend(new);
                    continue;
                }
            }
            _ => {}
        }
        out.extend_from_slice(inst);
        if op == OP_CAPABILITY && !added {
            added = true;
            for &c in caps.iter().filter(|c| !present.contains(c)) {
                out.extend_from_slice(&[(2 << 16) | OP_CAPABILITY, c]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(parse_name(&call_name(Opcode::FAdd, Some(2), "v4f32")), Some((350, Some(2))));
        assert_eq!(parse_name(&call_name(Opcode::Ballot, None, "v4i32")), Some((339, None)));
        assert_eq!(parse_name("llvm.spv.thread.id"), None);
    }
}
