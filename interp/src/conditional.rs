//! Conditional nodes (docs/conditional.md): `if`, `while` and `switch` read their `u32`
//! condition word and run body graphs as nested executions of their flattened graphs, in
//! creation order, on the same memory. A `while` reads the word before every round and fails
//! after `RunOptions::loop_rounds` rounds, so a loop no body ends is an error naming the
//! node, never a hang. Nodes inside a body run under the path `node/body:round/inner node`, which
//! `cmdgraph interp` resolves to spans.
//!
//! For the race detector the conditional node is one command: every byte its bodies' nodes
//! touch is recorded in the node's own log (races inside a body are the verifier's static
//! check's to find, as it checks each body graph), as the verifier counts it too.

use super::access::AccessKind;
use super::command::{GraphState, NodeCtx};
use super::error::{FaultKind, InterpError};
use super::flat::{Flat, Role};
use super::schedule::{self, Order};
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::graph::{CondKind, Graph, Pointer};
use std::collections::BTreeMap;

/// Most conditional bodies one node may run inside: each level is a nested execution on the
/// thread's stack (sub-graphs, flattened at finalize, may nest deeper: verifier E0268).
const MAX_BODY_DEPTH: u32 = 32;

impl NodeCtx<'_, '_> {
    /// The condition word at `cond`, recorded as a read.
    fn condition(&mut self, cond: Pointer) -> Result<u32, InterpError> {
        let space = self.range(cond, 4)?;
        let o = cond.offset as usize;
        let word = self.bytes(space)?[o..o + 4].try_into().map_err(|_| self.invalid("condition out of range"))?;
        self.record(space, AccessKind::Read, cond.offset, 4);
        Ok(u32::from_le_bytes(word))
    }

    /// Runs a conditional node; returns the kernel work-items its bodies ran.
    pub(crate) fn conditional(
        &mut self,
        kind: CondKind,
        cond: Pointer,
        bodies: &[Handle<Graph>],
    ) -> Result<u64, InterpError> {
        match kind {
            CondKind::If => {
                let word = self.condition(cond)?;
                let body = if word != 0 { bodies.first() } else { bodies.get(1) };
                body.map_or(Ok(0), |&b| self.body(&self.prepare(b)?, 0))
            }
            CondKind::Switch => {
                let word = self.condition(cond)?;
                bodies.get(word as usize).map_or(Ok(0), |&b| self.body(&self.prepare(b)?, 0))
            }
            CondKind::While => {
                let body = *bodies.first().ok_or_else(|| self.invalid("a while node without a body"))?;
                let mut items = 0u64;
                let mut rounds = 0u64;
                // Flattened and scheduled once, run every round.
                let mut prepared = None;
                while self.condition(cond)? != 0 {
                    if rounds == self.loop_rounds {
                        return Err(self.fault(FaultKind::LoopNeverEnds { rounds }));
                    }
                    let p = match prepared {
                        Some(ref p) => p,
                        None => prepared.insert(self.prepare(body)?),
                    };
                    items = items.saturating_add(self.body(p, rounds)?);
                    rounds += 1;
                }
                Ok(items)
            }
        }
    }

    /// Body graph `body` ready to run: flattened, in creation order, with the dynamic values
    /// of each graph it runs.
    fn prepare(&self, body: Handle<Graph>) -> Result<Prepared, InterpError> {
        if self.depth >= MAX_BODY_DEPTH {
            return Err(self.invalid(format!(
                "conditional bodies nest deeper than {MAX_BODY_DEPTH} (does a graph contain itself through them?)"
            )));
        }
        let module = self.module;
        let name = module.graphs.try_get(body).map_or("?", |g| g.name.as_str()).to_string();
        let flat = Flat::build(module, body)?;
        let order = schedule::schedule(&flat, Order::Creation);
        let mut states = BTreeMap::new();
        for f in &flat.nodes {
            if let Some(g) = module.graphs.try_get(f.graph) {
                states.entry(f.graph).or_insert_with(|| GraphState::capture(g));
            }
        }
        Ok(Prepared { name, flat, order, states })
    }

    /// One execution of a prepared body, the `round`-th of this node.
    fn body(&mut self, body: &Prepared, round: u64) -> Result<u64, InterpError> {
        let module = self.module;
        let mut items = 0u64;
        for &i in &body.order {
            let f = &body.flat.nodes[i as usize];
            if f.role != Role::Command {
                continue;
            }
            let (Some(g), Some(state)) = (module.graphs.try_get(f.graph), body.states.get(&f.graph)) else {
                return Err(self.invalid("a body refers to a missing graph"));
            };
            let node = g.nodes.try_get(f.node).ok_or_else(|| self.invalid("node handle out of range"))?;
            let name = format!("{}/{}:{round}/{}", self.name, body.name, f.name);
            let mut ctx = NodeCtx {
                module,
                graph: g,
                root: false,
                state,
                name: &name,
                mem: &mut *self.mem,
                log: self.log.as_deref_mut(),
                callbacks: &mut *self.callbacks,
                fuel: &mut *self.fuel,
                fma: self.fma,
                denormals: self.denormals,
                subgroup_size: self.subgroup_size,
                loop_rounds: self.loop_rounds,
                depth: self.depth + 1,
            };
            items = items.saturating_add(ctx.execute(f.node, node)?);
        }
        Ok(items)
    }
}

/// A body graph flattened for running ([`NodeCtx::prepare`]).
struct Prepared {
    name: String,
    flat: Flat,
    order: Vec<u32>,
    states: BTreeMap<Handle<Graph>, GraphState>,
}
