//! Whether a `while` body can change its condition (E0286): some node of the body graph,
//! of a sub-graph it runs or of a body of a conditional node in it, may write the condition's
//! memory object. Coarse on purpose (by object, by access mode): the rule reports a loop that
//! certainly cannot end or start, never one that might.

use crate::arena::Handle;
use crate::graph::{Alternative, Arg, ArgValue, Graph, HostTaskCommand, KernelCommand, MemRef, NodeKind};
use crate::kernel::ParamType;
use crate::module::{MemoryObject, Module};
use crate::types::Access;
use std::collections::BTreeSet;

/// Whether graph `g` (and what it runs) may write memory object `word`.
pub(super) fn may_write(m: &Module, g: Handle<Graph>, word: Handle<MemoryObject>) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![g];
    while let Some(g) = stack.pop() {
        if !seen.insert(g) {
            continue;
        }
        let Some(graph) = m.graphs.try_get(g) else { continue };
        for (_, node) in graph.nodes.iter() {
            let writes = match &node.kind {
                NodeKind::Memcpy { dst, .. } | NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => {
                    dst.base == MemRef::Memory(word)
                }
                NodeKind::HostTask(t) | NodeKind::Native(t) => task_writes(t, word),
                NodeKind::Comm(c) => c.ptr.base == MemRef::Memory(word) && c.op.access().writes(),
                NodeKind::Kernel(cmd) => kernel_writes(m, graph, cmd, word),
                NodeKind::Dynamic { dcg } => graph.dcgs.try_get(*dcg).is_some_and(|d| {
                    d.alternatives.iter().any(|a| match a {
                        Alternative::Kernel(cmd) => kernel_writes(m, graph, cmd, word),
                        Alternative::HostTask(t) => task_writes(t, word),
                        // Not a command an alternative may hold (the verifier reports it).
                        Alternative::Other(_) => false,
                    })
                }),
                NodeKind::Subgraph { graph: child } => {
                    stack.push(*child);
                    false
                }
                NodeKind::Conditional { bodies, .. } => {
                    stack.extend(bodies.iter().copied());
                    false
                }
                _ => false,
            };
            if writes {
                return true;
            }
        }
    }
    false
}

fn task_writes(t: &HostTaskCommand, word: Handle<MemoryObject>) -> bool {
    t.access.iter().any(|a| a.mem == MemRef::Memory(word) && a.mode != Access::Read)
}

/// Whether a launch binds `word` to a buffer parameter that may be stored to.
fn kernel_writes(m: &Module, graph: &Graph, cmd: &KernelCommand, word: Handle<MemoryObject>) -> bool {
    let Some(kernel) = m.kernels.try_get(cmd.kernel) else { return false };
    cmd.args.iter().enumerate().any(|(i, a)| {
        let value = match a {
            Arg::Value(v) => Some(v),
            Arg::Dyn(p) => graph.dyn_params.try_get(*p).map(|p| &p.value),
        };
        let names_word = match value {
            Some(ArgValue::Pointer(p)) => p.base == MemRef::Memory(word),
            Some(ArgValue::Accessor(acc)) => acc.buffer == MemRef::Memory(word) && acc.mode != Access::Read,
            _ => false,
        };
        let writable = match kernel.params.get(i).map(|p| p.ty) {
            Some(ParamType::Buffer { access, .. }) => access != Access::Read,
            // An external kernel's parameters say what it may do the same way.
            _ => false,
        };
        names_word && writable
    })
}
