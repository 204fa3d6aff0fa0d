//! The general `loop` under SIMT execution (docs/ir.md, "Ops"; docs/interpreter.md).
//!
//! Every lane of the mask runs the body once; after each round the lanes whose yielded
//! condition is true run it again, the others keep the values they yielded last, which are
//! their results. The loop ends when no lane wants another round. Each round costs fuel
//! like an op, so a loop that never ends (even an empty one) runs out of fuel instead of
//! hanging. A `group_barrier` in the body faults as divergent in a round that not every
//! work-item of the group runs, as in `for`.

use super::super::error::{FaultKind, InterpError};
use super::super::value::Lanes;
use super::simt::{first, Exec, Slot};
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::kernel::{Op, Region, V};
use cmdgraph_ir::types::Type;

impl<'k> Exec<'k, '_, '_> {
    /// `[%r...] = loop [carry(...)] { ... yield %again, ... }` under `mask`.
    pub(super) fn general_loop(
        &mut self,
        h: Handle<Op>,
        op: &'k Op,
        mask: &[bool],
        depth: usize,
        carried: &'k [(V, V)],
        body: &'k Region,
    ) -> Result<(), InterpError> {
        let mut values: Vec<Lanes> = Vec::with_capacity(carried.len());
        for &(_, init) in carried {
            values.push(self.data(h, mask, init)?.clone());
        }
        let mut active = mask.to_vec();
        while active.iter().any(|&a| a) {
            let cost = self.ids.n as u64;
            if *self.fuel < cost {
                return Err(self.fault(h, first(&active), FaultKind::OutOfFuel));
            }
            *self.fuel -= cost;
            for (&(inner, _), value) in carried.iter().zip(&values) {
                self.put(inner, Slot::Data(value.clone()));
            }
            let yielded = self.region(body, &active, depth + 1)?;
            let Some((&again, next)) = yielded.and_then(|y| y.split_first()).filter(|(_, n)| n.len() == carried.len())
            else {
                let msg = format!("the loop body must yield a condition and {} values", carried.len());
                return Err(self.fault_at(h, &active, msg));
            };
            self.merge_yielded(h, &active, &mut values, next)?;
            let cond = match self.slots.get(again.index()) {
                Some(Slot::Data(l)) if l.ty == Type::BOOL => l,
                _ => {
                    let msg = format!("the loop condition {} is not a defined bool", self.vname(again));
                    return Err(self.fault_at(h, &active, msg));
                }
            };
            for (a, &c) in active.iter_mut().zip(&cond.data) {
                *a = *a && c != 0;
            }
        }
        for (i, value) in values.into_iter().enumerate() {
            self.set(h, op, mask, i, value)?;
        }
        Ok(())
    }
}
