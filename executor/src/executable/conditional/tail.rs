//! Loop predicates (docs/abi.md, "Loop predicates"): a `while` body that is one dispatch
//! of one work-group, compiled with a `MemorySlot::LoopPredicate`, writes the next round's
//! predicate and tally itself at its end, so its rounds need no predicate dispatch and no
//! barrier of their own (docs/conditional.md, "Executor").

use super::LOOP_WINDOW;
use crate::args;
use crate::exec::Executor;
use cmdgraph_ir::bundle::MemorySlot;
use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::{Arg, ArgValue, MemRef, Pointer};

/// Argument-block word 6 in mode 3 for the body instance of rounds of `parity`: run when
/// its window's first word is non-zero, then write the next round's predicate into the
/// other window's first word and add it to the word after. Even rounds read word 0 and
/// write the odd window's, odd rounds the reverse.
pub(super) fn mode3_of(parity: u64) -> u32 {
    let window = (LOOP_WINDOW / 4) as u32;
    let (index, next) = if parity == 0 { (0, window) } else { (window, 0) };
    3 | (index << 2) | (next << 17)
}

impl Executor {
    /// Where the kernel of `while` body graph `body` reads the condition at `cond` (the
    /// element of its condition parameter's memory, argument-block word 7), when the body
    /// can write its rounds' predicates itself: it launches one kernel, once, compiled with a
    /// loop predicate slot, on one work-group (mode 3 has the first invocation write after a
    /// work-group barrier, which orders nothing across groups), and that parameter points
    /// into the condition's memory at a 4-byte step from it. `None`: the rounds take the
    /// predicate dispatch.
    pub(super) fn loop_tail(&self, body: &str, cond: Pointer) -> Option<u32> {
        let m = &self.loaded.module;
        let b = &self.loaded.bundle;
        let plan = b.graphs.iter().find(|g| g.name == body)?;
        let [launch] = plan.launches.as_slice() else { return None };
        let variant = b.kernels.get(launch.kernel as usize)?;
        let Some(MemorySlot::LoopPredicate { condition_param }) = variant.layout.slots.last() else { return None };
        let graph = &m.graphs[m.graph_by_name(body)?];
        // The kernel and ordering nodes only: a nested node or other work would come after
        // the kernel's last word.
        let ordering = |k: &NodeKind| matches!(k, NodeKind::Empty | NodeKind::Barrier { .. });
        if graph.nodes.iter().any(|(_, n)| n.name != launch.node && !ordering(&n.kind)) {
            return None;
        }
        let node = graph.nodes.iter().find(|(_, n)| n.name == launch.node)?.1;
        let NodeKind::Kernel(cmd) = &node.kind else { return None };
        let (size, _, _) = args::geometry(&cmd.launch).ok()?;
        if args::group_counts(size, variant) != [1, 1, 1] {
            return None;
        }
        let start = match cmd.args.get(*condition_param as usize)? {
            Arg::Value(ArgValue::Pointer(p)) if p.base == cond.base => p.offset,
            Arg::Value(ArgValue::Accessor(a)) if a.buffer == cond.base => {
                let MemRef::Memory(h) = a.buffer else { return None };
                let elem = m.memories.try_get(h)?.elem.size();
                elem.checked_mul(a.range.map_or(0, |r| r.0))?
            }
            _ => return None,
        };
        let bytes = cond.offset.checked_sub(start).filter(|d| d % 4 == 0)?;
        u32::try_from(bytes / 4).ok()
    }
}
