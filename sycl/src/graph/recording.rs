//! Queue recording through the graph: `begin_recording`, `end_recording` (000 §8.4.6,
//! rows 33-35), and the end of recording when the last copy of a graph goes (000 §8.7).

use super::{GraphShared, ModifiableGraph};
use crate::error::{ensure, Result, SyclError};
use crate::props::RecordingProps;
use crate::queue::{Queue, StateInner};
use std::rc::Rc;

impl GraphShared {
    /// Switches `queue` to recording into this graph with `props` (rows 33, 34).
    pub(crate) fn start_recording(self: &Rc<Self>, queue: &Queue, props: RecordingProps) -> Result<()> {
        let mut inner = self.inner.borrow_mut();
        let mut state = queue.0.state.borrow_mut();
        if let StateInner::Recording { .. } = &*state {
            return Err(SyclError::invalid(
                33,
                format!(
                    "begin_recording: queue `@{}` is already recording to a graph; end that recording first",
                    queue.name()
                ),
            ));
        }
        ensure(queue.device() == inner.device && queue.context() == inner.ctx, 34, || {
            format!(
                "begin_recording: queue `@{}` (device {}, context {}) differs from graph `@{}` (device {}, context {}); record with a queue of the graph's device and context",
                queue.name(),
                queue.device().id(),
                queue.context().id(),
                inner.ir.name,
                inner.device.id(),
                inner.ctx.id()
            )
        })?;
        *state = StateInner::Recording { graph: Rc::downgrade(self), props };
        inner.recording.push(queue.clone());
        inner.queue_rec(queue);
        Ok(())
    }
}

impl Drop for GraphShared {
    fn drop(&mut self) {
        // Other copies share `inner` only through `Rc<GraphShared>`, so this is the last
        // copy: end recording as `end_recording()` would.
        if let Ok(mut inner) = self.inner.try_borrow_mut() {
            inner.end_all();
        }
    }
}

impl ModifiableGraph {
    /// `begin_recording(queue, props)` (rows 33, 34).
    pub fn begin_recording(&self, queue: &Queue, props: RecordingProps) -> Result<()> {
        self.begin_recording_queues(&[queue], props)
    }

    /// `begin_recording(queues, props)`: all or none of the queues start recording.
    pub fn begin_recording_queues(&self, queues: &[&Queue], props: RecordingProps) -> Result<()> {
        {
            let inner = self.0.inner.borrow();
            for q in queues {
                if q.ext_oneapi_get_state() == crate::QueueState::Recording {
                    return Err(SyclError::invalid(
                        33,
                        format!(
                            "begin_recording: queue `@{}` is already recording to a graph; end that recording first",
                            q.name()
                        ),
                    ));
                }
                ensure(q.device() == inner.device && q.context() == inner.ctx, 34, || {
                    format!(
                        "begin_recording: queue `@{}` (device {}, context {}) differs from graph `@{}` (device {}, context {})",
                        q.name(),
                        q.device().id(),
                        q.context().id(),
                        inner.ir.name,
                        inner.device.id(),
                        inner.ctx.id()
                    )
                })?;
            }
        }
        for (i, q) in queues.iter().enumerate() {
            if queues[..i].iter().any(|p| p.same(q)) {
                continue;
            }
            self.0.start_recording(q, props)?;
        }
        Ok(())
    }

    /// `end_recording()`: every queue recording into this graph, transitive ones
    /// included, goes back to executing.
    pub fn end_recording(&self) {
        self.0.inner.borrow_mut().end_all();
    }

    /// `end_recording(queue)`: no-op for an executing queue (row 35).
    pub fn end_recording_queue(&self, queue: &Queue) -> Result<()> {
        self.end_recording_queues(&[queue])
    }

    /// `end_recording(queues)` (row 35): checks all queues before changing any.
    pub fn end_recording_queues(&self, queues: &[&Queue]) -> Result<()> {
        for q in queues {
            if q.ext_oneapi_get_state() == crate::QueueState::Recording && !q.records_into(&self.0.inner) {
                return Err(SyclError::invalid(
                    35,
                    format!(
                        "end_recording: queue `@{}` is recording to a different graph; end it through that graph",
                        q.name()
                    ),
                ));
            }
        }
        let mut inner = self.0.inner.borrow_mut();
        for q in queues {
            if q.records_into(&self.0.inner) {
                *q.0.state.borrow_mut() = StateInner::Executing;
                inner.recording.retain(|r| !r.same(q));
            }
        }
        Ok(())
    }

    /// Whether some queue is recording into this graph.
    pub fn is_recording(&self) -> bool {
        self.0.inner.borrow().is_recording()
    }
}
