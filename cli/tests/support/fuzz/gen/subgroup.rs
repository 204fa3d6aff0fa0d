//! Subgroup ops for the kernel fuzzer (nd_range kernels only; docs/ir.md, "Subgroups").
//!
//! Collectives over the active lanes (reductions, scans, broadcast_first, ballot, elect,
//! all, any) are defined under any control flow, so they go anywhere. Ops that read a given
//! lane (broadcast, shuffle) read one at or below the reader's own lane (`0`, `lane >> 1`,
//! `lane & ~1`), which every subgroup has, and only where control is uniform (where a
//! barrier may go), so that lane is active. Float `add`/`mul` collectives depend on the
//! device's order of operations: they are generated only where the batches run on llvmpipe
//! (`super::subgroup_target`), whose order (lane by lane from the identity) the interpreter
//! computes; elsewhere float collectives are `min`/`max`, which are exact in any order.

use super::{Ty, BOOL, G, S, U32};

impl G<'_> {
    /// One subgroup op, its result pushed as a value.
    pub(super) fn subgroup(&mut self) {
        let r = self.fresh("sg");
        match self.rng.below(8) {
            0 => {
                let b = *self.pick(&["subgroup_size", "subgroup_id", "subgroup_local_id", "num_subgroups"]);
                self.emit(&format!("{r} = {b}"));
                self.push(&r, U32);
                self.feat("subgroup builtin");
            }
            1..=3 => {
                let ty = self.subgroup_ty();
                let ops: &[&str] = match (ty.s, super::super::subgroup_target().1) {
                    (S::F32, true) => &["add", "mul", "min", "max"],
                    (S::F32, false) => &["min", "max"],
                    _ => &["add", "mul", "min", "max", "and", "or", "xor"],
                };
                let op = *self.pick(ops);
                let c = *self.pick(&["reduce", "inclusive_scan", "exclusive_scan"]);
                let x = self.val(ty);
                self.emit(&format!("{r} = subgroup_{c} {op} {x}"));
                self.push(&r, ty);
                self.feat(if c == "reduce" { "subgroup reduce" } else { "subgroup scan" });
            }
            4 if self.barrier_ok => {
                let ty = self.subgroup_ty();
                let x = self.val(ty);
                let lane = self.fresh("sl");
                let pick = self.rng.below(3);
                match pick {
                    0 => self.emit(&format!("{lane} = const 0 : u32")),
                    1 => {
                        let l = self.fresh("sl");
                        let one = self.const_u32(1);
                        self.emit(&format!("{l} = subgroup_local_id"));
                        self.emit(&format!("{lane} = shr {l}, {one}"));
                    }
                    _ => {
                        let l = self.fresh("sl");
                        let even = self.const_u32(0xffff_fffe);
                        self.emit(&format!("{l} = subgroup_local_id"));
                        self.emit(&format!("{lane} = and {l}, {even}"));
                    }
                }
                // A constant lane is uniform: broadcast; any lane: shuffle.
                let op = if pick == 0 && self.chance(50) { "broadcast" } else { "shuffle" };
                self.emit(&format!("{r} = subgroup_{op} {x}, {lane}"));
                self.push(&r, ty);
                self.feat(if op == "broadcast" { "subgroup broadcast" } else { "subgroup shuffle" });
            }
            5 => {
                let ty = self.subgroup_ty();
                let x = self.val(ty);
                self.emit(&format!("{r} = subgroup_broadcast_first {x}"));
                self.push(&r, ty);
                self.feat("subgroup broadcast_first");
            }
            6 => {
                let c = self.val(BOOL);
                self.emit(&format!("{r} = subgroup_ballot {c}"));
                self.push(&r, Ty { s: S::U32, n: 4 });
                self.feat("subgroup ballot");
            }
            _ => {
                let vote = *self.pick(&["subgroup_elect", "subgroup_all", "subgroup_any"]);
                if vote == "subgroup_elect" {
                    self.emit(&format!("{r} = subgroup_elect"));
                } else {
                    let c = self.val(BOOL);
                    self.emit(&format!("{r} = {vote} {c}"));
                }
                self.push(&r, BOOL);
                self.feat("subgroup vote");
            }
        }
    }

    /// A type subgroup collectives take: 32-bit scalars and vectors.
    fn subgroup_ty(&mut self) -> Ty {
        let s = *self.pick(&[S::F32, S::I32, S::U32]);
        let n = if self.chance(25) { 2 + self.rng.below(3) as u8 } else { 1 };
        Ty { s, n }
    }
}
