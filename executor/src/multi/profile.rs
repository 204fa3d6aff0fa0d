//! Profiles of a multi-device run: each stage graph's [`Profile`] from its own device.
//! Every device counts time on its own clock, so times are comparable within one stage
//! graph's profile and between stage graphs of one device, not across devices.

use super::{MultiExecId, MultiExecutor};
use crate::error::{ExecError, Result};
use crate::exec::RecordOptions;
use crate::profile::Profile;

/// The profile of one stage graph of a multi-device executable's last run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageProfile {
    /// The stage the graph runs in (`@g.sS.dD`'s `S`).
    pub stage: u32,
    /// The device that ran it (its index in the executor's device list).
    pub device: usize,
    /// The stage graph's name (without `@`).
    pub graph: String,
    /// Its timings, in that device's nanoseconds.
    pub profile: Profile,
}

impl MultiExecutor {
    /// How executables finalized from now on are recorded, on every device (per-node
    /// timestamps: `RecordOptions::node_profiling`).
    pub fn set_record_options(&mut self, options: RecordOptions) {
        for d in &mut self.devices {
            d.set_record_options(options);
        }
    }

    /// How executables finalized from now on are recorded.
    pub fn record_options(&self) -> RecordOptions {
        self.devices[0].record_options()
    }

    /// The profile of executable `id`'s last run (waits for it): one entry per stage graph,
    /// in stage order, each from the device that ran it. The graph must have
    /// `enable_profiling` (its stage graphs inherit it) and every device timestamps; the
    /// error otherwise is the device's, naming the stage graph.
    pub fn profile(&self, id: MultiExecId) -> Result<Vec<StageProfile>> {
        let exec = self.exec(id)?;
        let mut out = Vec::with_capacity(exec.parts.len());
        for p in &exec.parts {
            let dev = &self.devices[p.device];
            let graph = dev.module().graphs[p.graph].name.clone();
            let profile = dev.profile(p.exec).map_err(|e| match e {
                ExecError::Invalid(why) => ExecError::Invalid(format!("device {} (@{graph}): {why}", p.device)),
                e => e,
            })?;
            out.push(StageProfile { stage: p.stage, device: p.device, graph, profile });
        }
        Ok(out)
    }
}
