//! Checks of command groups that do not depend on their conversion: events that may make
//! edges (rows 47, 48), banned commands (59, 60), dynamic-parameter registrations (8,
//! 40, 41, 43) and buffer rules (6, 12, 53, 54).

use super::convert::Via;
use super::GraphInner;
use crate::args::KArg;
use crate::buffer::Accessor;
use crate::error::{ensure, Result, SyclError};
use crate::handler::{Command, Handler};
use crate::queue::{Event, EventKind};
use cmdgraph_ir::{Handle, Node};
use std::cell::RefCell;
use std::rc::Rc;

/// The node an event stands for, if it may make an edge in this graph (rows 47, 48).
pub(crate) fn event_node(rc: &Rc<RefCell<GraphInner>>, inner: &GraphInner, event: &Event) -> Result<Handle<Node>> {
    match &*event.0 {
        EventKind::Recorded { discard: true, .. } => Err(SyclError::invalid(
            48,
            "depends_on: the event comes from a queue with property::queue::discard_events; such events cannot form graph edges",
        )),
        EventKind::Recorded { graph, node, .. } if std::ptr::eq(graph.as_ptr(), Rc::as_ptr(rc)) => Ok(*node),
        EventKind::Recorded { .. } => Err(SyclError::invalid(
            47,
            format!("depends_on: the event was recorded into another graph than `@{}`; only events of submissions recorded to the same graph make edges", inner.ir.name),
        )),
        EventKind::Submitted(_) => Err(SyclError::invalid(
            47,
            format!("depends_on: the event is not from a submission recorded to graph `@{}`; a graph node can only depend on nodes of its graph (decision A11)", inner.ir.name),
        )),
    }
}

/// Rows 59 and 60: commands graphs do not allow or do not implement.
pub(crate) fn check_banned(command: &Option<Command>, scratch: bool) -> Result<()> {
    if scratch {
        return Err(SyclError::invalid(
            59,
            "the work_group_scratch_size kernel property cannot be used in a graph node (000 §8.11.18)",
        ));
    }
    match command {
        Some(Command::Banned(b)) => {
            Err(SyclError { code: b.code, row: b.row, message: format!("{} cannot be used in a graph node", b.what) })
        }
        Some(Command::DeviceGlobalCopy { global, .. }) => Err(SyclError::invalid(
            59,
            format!(
                "copy to device_global `@{}` cannot be added to a graph (000 §8.11.5); only kernels may touch it",
                global.name()
            ),
        )),
        _ => Ok(()),
    }
}

/// Registrations with dynamic parameters a handler makes (rows 8, 40, 41, 43).
pub(crate) fn check_dynamic(h: &Handler, via: Via) -> Result<()> {
    let kernel_dyn = match &h.command {
        Some(Command::Kernel { args, .. }) => args.iter().any(|a| matches!(a, KArg::Dyn(_))),
        _ => false,
    };
    let set_dyn = !h.dyn_set_args.is_empty();
    let uses = kernel_dyn || set_dyn || !h.dyn_requires.is_empty();
    if !uses {
        return Ok(());
    }
    let row = if kernel_dyn || set_dyn { 40 } else { 43 };
    if let Via::Recording { .. } = via {
        return Err(SyclError::invalid(
            row,
            "set_arg/require with a dynamic parameter in a command group submitted to a recording queue; dynamic parameters belong to the explicit API (graph.add)",
        ));
    }
    let non_kernel = !matches!(h.command, Some(Command::Kernel { .. }));
    if non_kernel && (set_dyn || !h.dyn_requires.is_empty()) && via == Via::Explicit {
        return Err(SyclError::invalid(
            8,
            "add: the command group registers a dynamic parameter but its command is not a kernel; only kernel arguments can be dynamic",
        ));
    }
    Ok(())
}

/// Buffer rules (rows 6, 12, 53, 54).
pub(crate) fn check_buffers(inner: &GraphInner, reqs: &[Accessor], via: Via) -> Result<()> {
    if let Some(a) = reqs.first() {
        ensure(inner.props.assume_buffer_outlives_graph, via.row(6, 53, 12), || {
            format!(
                "buffer `@{}` is used in graph `@{}`, which was not created with property::graph::assume_buffer_outlives_graph",
                a.buffer.name(),
                inner.ir.name
            )
        })?;
    }
    if matches!(via, Via::Explicit | Via::Recording { .. }) {
        if let Some(a) = reqs.iter().find(|a| a.mode.writes() && a.buffer.writes_back()) {
            return Err(SyclError::invalid(
                54,
                format!(
                    "buffer `@{}` would write back to host memory when destroyed, which a graph cannot do; call set_write_back(false) or set_final_data_none() first",
                    a.buffer.name()
                ),
            ));
        }
    }
    Ok(())
}
