//! Subgroup ops after their keyword (crate::subgroup; docs/ir.md, "Subgroups").

use super::super::items::unknown;
use super::super::{PResult, Parser};
use super::KernelScope;
use crate::kernel::Body;
use crate::subgroup::{Collective, GroupArith, SubgroupBuiltin, SubgroupOp};

impl<'s> Parser<'s> {
    /// A subgroup op whose keyword `word` (one of [`SubgroupOp::KEYWORDS`]) was just read.
    pub(super) fn subgroup_op(&mut self, word: &str, body: &Body, scope: &KernelScope<'s>) -> PResult<SubgroupOp> {
        if let Some(b) = SubgroupBuiltin::ALL.into_iter().find(|b| b.keyword() == word) {
            return Ok(SubgroupOp::Builtin(b));
        }
        if let Some(collective) = Collective::ALL.into_iter().find(|c| c.keyword() == word) {
            let (w, t) = self.expect_word("a subgroup operation")?;
            let Some(op) = GroupArith::ALL.into_iter().find(|a| a.keyword() == w) else {
                return Err(unknown("subgroup operation", w, "add, mul, min, max, and, or, xor", t.span));
            };
            return Ok(SubgroupOp::Arith { collective, op, value: self.operand(body, scope)? });
        }
        Ok(match word {
            "subgroup_broadcast" => {
                let (x, l) = self.two(body, scope)?;
                SubgroupOp::Broadcast(x, l)
            }
            "subgroup_shuffle" => {
                let (x, l) = self.two(body, scope)?;
                SubgroupOp::Shuffle(x, l)
            }
            "subgroup_broadcast_first" => SubgroupOp::BroadcastFirst(self.operand(body, scope)?),
            "subgroup_ballot" => SubgroupOp::Ballot(self.operand(body, scope)?),
            "subgroup_all" => SubgroupOp::All(self.operand(body, scope)?),
            "subgroup_any" => SubgroupOp::Any(self.operand(body, scope)?),
            // The only keyword left in SubgroupOp::KEYWORDS.
            _ => SubgroupOp::Elect,
        })
    }
}
