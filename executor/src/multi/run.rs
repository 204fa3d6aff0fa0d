//! Running a multi-device executable: every stage graph submitted at once, ordered by
//! semaphores across devices, where `home(host)` memory is imported; stage by stage with
//! host copies between them otherwise (see the module above).

use super::{MultiExecId, MultiExecutor};
use crate::error::{ExecError, Result};
use crate::interop::{RunSync, SemaphoreValue};
use std::time::{Duration, Instant};

impl MultiExecutor {
    /// Runs executable `id` once. With imported host memory every stage graph is submitted
    /// now, each waiting on the GPU for the stage graphs before it on every device, and
    /// `run` returns at once ([`wait`](Self::wait) waits for it; runs of one executable never
    /// overlap). Otherwise it runs stage by stage and returns when the run is done.
    pub fn run(&mut self, id: MultiExecId) -> Result<()> {
        if let Some(e) = self.relay.as_ref().and_then(|r| r.take_error()) {
            return Err(e);
        }
        self.exec(id)?;
        match self.imported {
            Some(true) => self.submit_all(id)?,
            _ => self.run_stages(id)?,
        }
        self.exec_mut(id)?.runs += 1;
        Ok(())
    }

    /// Waits until run `id` is done on every device, and reports the first error of any
    /// (a host task's, a missed deadline). A stage graph still running at its device's
    /// deadline ends the wait there with [`ExecError::Timeout`] naming the device and stage
    /// graph: the work goes on, and waiting again returns once it is done.
    pub fn wait(&mut self, id: MultiExecId) -> Result<()> {
        let exec = self.exec(id)?;
        let mut first = None;
        for p in &exec.parts {
            match self.devices[p.device].wait(p.exec) {
                Ok(()) => {}
                Err(ExecError::Timeout { what, after }) => {
                    let graph = &self.devices[p.device].module().graphs[p.graph].name;
                    let what = format!("device {} (stage graph @{graph}): {what}", p.device);
                    return Err(ExecError::Timeout { what, after });
                }
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        match first.or_else(|| self.relay.as_ref().and_then(|r| r.take_error())) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Waits until every device is idle.
    pub(super) fn wait_all(&self) -> Result<()> {
        for d in &self.devices {
            d.wait_idle()?;
        }
        Ok(())
    }

    fn submit_all(&mut self, id: MultiExecId) -> Result<()> {
        let exec =
            self.execs[id.0].as_ref().ok_or_else(|| ExecError::Unknown(format!("multi-device executable {}", id.0)))?;
        let relay = self.relay.as_mut().ok_or_else(|| ExecError::Invalid("no semaphores across devices".into()))?;
        self.last_transfers = (Duration::ZERO, exec.transfer_bytes);
        let mut upto = relay.submitted.clone();
        let mut stage = exec.parts.first().map_or(0, |p| p.stage);
        for p in &exec.parts {
            if p.stage != stage {
                // A stage follows everything submitted before it, on every device.
                upto.clone_from(&relay.submitted);
                stage = p.stage;
            }
            let wait = relay.waits_for(p.device, &upto)?;
            let value = relay.submitted[p.device] + 1;
            let sync = RunSync { wait, signal: vec![SemaphoreValue { semaphore: relay.progress(p.device), value }] };
            // SAFETY: every semaphore is a live timeline semaphore of this device (its
            // progress, or a mirror the relay signals); `value` is above every value
            // signalled or pending on the progress semaphore (one per submission, counting
            // up); every waited value is signalled by a submission made before this one or
            // by the relay, which signals even when a wait fails.
            let r = unsafe { self.devices[p.device].run_with(p.exec, &sync) };
            relay.submitted[p.device] = value;
            if let Err(e) = r {
                // Nothing signals `value` now: the host does, so no device waits forever.
                relay.release(p.device, value);
                return Err(e);
            }
        }
        Ok(())
    }

    fn run_stages(&mut self, id: MultiExecId) -> Result<()> {
        let exec =
            self.execs[id.0].as_ref().ok_or_else(|| ExecError::Unknown(format!("multi-device executable {}", id.0)))?;
        let mut host = Duration::ZERO;
        let mut i = 0;
        while i < exec.parts.len() {
            let stage = exec.parts[i].stage;
            let end = exec.parts[i..].iter().position(|p| p.stage != stage).map_or(exec.parts.len(), |k| i + k);
            for p in &exec.parts[i..end] {
                self.devices[p.device].run(p.exec)?;
            }
            for p in &exec.parts[i..end] {
                self.devices[p.device].wait(p.exec)?;
            }
            let started = Instant::now();
            for (name, from, bytes) in exec.host_copies.get(stage as usize).into_iter().flatten() {
                let len = usize::try_from(*bytes).map_err(|_| ExecError::Invalid("transfer too large".into()))?;
                if self.staging.len() < len {
                    self.staging.resize(len, 0);
                }
                let buf = &mut self.staging[..len];
                self.devices[*from].read_range_into(name, 0, buf)?;
                for (d, dev) in self.devices.iter_mut().enumerate() {
                    if d != *from {
                        dev.write_range(name, 0, buf)?;
                    }
                }
            }
            host += started.elapsed();
            i = end;
        }
        self.last_transfers = (host, exec.transfer_bytes);
        Ok(())
    }
}

impl MultiExecutor {
    /// How many runs of `id` were submitted.
    pub fn submitted_runs(&self, id: MultiExecId) -> Result<u64> {
        Ok(self.exec(id)?.runs)
    }

    /// How many runs of `id` are complete on every device, without waiting (runs complete
    /// in order, so this is the fewest any of its stage graphs completed).
    pub fn completed_runs(&mut self, id: MultiExecId) -> Result<u64> {
        let exec = self.exec(id)?;
        let parts: Vec<(usize, crate::ExecId)> = exec.parts.iter().map(|p| (p.device, p.exec)).collect();
        let mut done = exec.runs;
        for (d, e) in parts {
            done = done.min(self.devices[d].completed_runs(e)?);
        }
        Ok(done)
    }

    /// Releases executable `id` on every device, after its runs complete.
    pub fn drop_exec(&mut self, id: MultiExecId) -> Result<()> {
        self.wait(id)?;
        let exec = self.execs.get_mut(id.0).and_then(Option::take);
        let mut first = None;
        for p in exec.map(|e| e.parts).unwrap_or_default() {
            if let Err(e) = self.devices[p.device].drop_exec(p.exec) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// The bytes of `device_global` `name` on device `device` (each device holds its own).
    pub fn read_device_global(&mut self, name: &str, device: u32) -> Result<Vec<u8>> {
        self.wait_all()?;
        self.global_device(device)?.read_device_global(name, device)
    }

    /// Sets the bytes of `device_global` `name` on device `device`, for later runs.
    pub fn write_device_global(&mut self, name: &str, device: u32, bytes: &[u8]) -> Result<()> {
        self.wait_all()?;
        self.global_device(device)?.write_device_global(name, device, bytes)
    }

    fn global_device(&mut self, device: u32) -> Result<&mut crate::Executor> {
        let n = self.devices.len();
        self.devices
            .get_mut(device as usize)
            .ok_or_else(|| ExecError::Invalid(format!("device {device}, and this executor has {n} device(s)")))
    }
}
