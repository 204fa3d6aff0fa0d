//! `cmdgraph run` of a graph that spans devices (docs/multi-device.md): a `MultiExecutor`
//! with one Vulkan device per device the module names, `--devices` saying which (else the
//! first GPUs, or logical devices of the default device where there are too few). Inputs are
//! bound where their memory lives, the steps' `--set` and `--activate` go to every device
//! they reach, one `run` per run, one `wait` at the end; outputs are read where they live.
//! `--profile` prints one table per stage graph, each on its device's clock.
//! `--update-from`, and outputs of device globals or graph allocations are refused before a
//! device is touched.

use super::steps::{step_line, Planned, Resolved};
use super::{Files, RunArgs};
use crate::cmd::interp::{Output, Place};
use crate::exit::Failure;
use cmdgraph_executor::{ContextOptions, DeviceChoice, DeviceKind, ExecError, MultiExecutor};
use cmdgraph_ir::Module;

/// Refuses what the multi-device path does not do, before a device is touched.
pub fn check(graph: &str, plan: &[Planned], outputs: &[Output]) -> Result<(), Failure> {
    let refuse = |what: &str| {
        Failure::Rejected(format!(
            "error: @{graph} spans devices, and {what} is not available for a multi-device graph yet (docs/multi-device.md)"
        ))
    };
    if plan.iter().any(|p| p.update.is_some()) {
        return Err(refuse("`--update-from`"));
    }
    if let Some(o) = outputs.iter().find(|o| !matches!(o.place, Place::Memory)) {
        return Err(refuse(&format!("`--output {}` (a device global or graph allocation)", o.shown())));
    }
    Ok(())
}

/// The context options of `count` devices: `--devices` as given (each an index or a name
/// substring), else the first `count` GPUs, else `count` logical devices of the default one.
fn device_options(args: &RunArgs, count: u32, base: &ContextOptions) -> Result<(Vec<ContextOptions>, String), Failure> {
    let with = |device| ContextOptions { device, ..base.clone() };
    if !args.devices.is_empty() {
        if args.devices.len() < count as usize {
            return Err(Failure::Rejected(format!(
                "error: the module names {count} devices and `--devices` gives {}: give one Vulkan device per device",
                args.devices.len()
            )));
        }
        let opts = args.devices.iter().map(|d| with(DeviceChoice::parse(d))).collect();
        return Ok((opts, format!("devices {}", args.devices.join(", "))));
    }
    Ok(default_devices(count, base))
}

/// `count` devices when none are given: the first `count` GPUs, else `count` logical devices
/// of the default device; and their names.
pub fn default_devices(count: u32, base: &ContextOptions) -> (Vec<ContextOptions>, String) {
    let with = |device| ContextOptions { device, ..base.clone() };
    let gpus: Vec<_> = cmdgraph_executor::vulkan_devices()
        .unwrap_or_default()
        .into_iter()
        .filter(|d| matches!(d.kind, DeviceKind::DiscreteGpu | DeviceKind::IntegratedGpu))
        .collect();
    if gpus.len() >= count as usize {
        let opts = gpus.iter().take(count as usize).map(|g| with(DeviceChoice::Index(g.index))).collect();
        let names: Vec<String> = gpus.iter().take(count as usize).map(|g| g.name.clone()).collect();
        return (opts, names.join(", "));
    }
    let opts = (0..count).map(|_| with(DeviceChoice::Default)).collect();
    (opts, format!("{count} logical devices of the default device"))
}

/// Everything that touches Vulkan for a multi-device graph (as `on_device` for one).
pub fn on_devices(
    args: &RunArgs,
    bundle: &[u8],
    module: &Module,
    graph: &str,
    (bound, outputs): (&[(String, Vec<u8>)], &[Output]),
    plan: &[Planned],
    base: &ContextOptions,
) -> Result<(String, Files), Failure> {
    let fail = |e: ExecError| Failure::Rejected(format!("error: @{graph}: {e}"));
    let (opts, names) = device_options(args, cmdgraph_ir::placement::devices_named(module), base)?;
    let mut multi = MultiExecutor::new(bundle, &opts).map_err(fail)?;
    for (name, bytes) in bound {
        multi.bind(name, bytes).map_err(fail)?;
    }
    let callbacks = super::host_callbacks(module);
    for name in &callbacks {
        multi.register_callback(name, |_| Ok(()));
    }
    if args.profile {
        // Per-node timestamps only when asked: they serialise a stage's commands.
        let options = cmdgraph_executor::RecordOptions { node_profiling: true, ..multi.record_options() };
        multi.set_record_options(options);
    }
    let exec = multi.finalize(graph).map_err(fail)?;
    let several = plan.len() > 1 || plan.iter().any(|p| !p.actions.is_empty());
    let mut lines = String::new();
    for (i, step) in plan.iter().enumerate() {
        let n = i + 1;
        let at =
            |what: String| move |e: ExecError| Failure::Rejected(format!("error: @{graph}: step {n}: {what}: {e}"));
        let mut did = Vec::new();
        for action in &step.actions {
            match action {
                Resolved::Param { name, value, .. } => {
                    multi.update_param(exec, name, value.clone()).map_err(at(format!("--set {name}")))?
                }
                Resolved::Active { name, index } => {
                    multi.set_active(exec, name, *index).map_err(at(format!("--activate {name}={index}")))?
                }
            }
            did.push(action.describe());
        }
        for _ in 0..step.repeat {
            multi.run(exec).map_err(|e| Failure::Rejected(format!("error: @{graph}: step {n}: {e}")))?;
        }
        if several {
            lines.push_str(&step_line(n, &did, step.repeat));
        }
    }
    multi.wait(exec).map_err(fail)?;
    if !callbacks.is_empty() {
        let list: Vec<String> = callbacks.iter().map(|c| format!("\"{c}\"")).collect();
        eprintln!("note: host tasks ran as no-ops: {}; cmdgraph run runs no host code", list.join(", "));
    }
    let runs = args.steps.total_runs();
    let mut summary = format!(
        "graph @{graph}: {runs} run(s) on {} devices ({names}); transfers through {}, devices ordered by {}\n",
        multi.len(),
        multi.transfer_path(),
        multi.semaphore_path()
    );
    summary.push_str(&lines);
    let mut files = Vec::new();
    for out in outputs {
        let bytes = multi.read(&out.binding.name).map_err(fail)?;
        files.push(super::output_file(&mut summary, out, bytes));
    }
    if args.profile {
        summary.push_str(&profile_tables(&multi.profile(exec).map_err(fail)?));
    }
    let mut messages = Vec::new();
    for d in 0..multi.len() {
        if let Some(ex) = multi.device(d) {
            messages.extend(ex.context().take_messages().into_iter().map(|m| format!("device {d}: {m}")));
        }
    }
    super::layer_rejection(messages)?;
    Ok((summary, files))
}

/// One profile table per stage graph, in stage order; each device counts on its own clock,
/// so times start at that stage graph's own start.
fn profile_tables(stages: &[cmdgraph_executor::StageProfile]) -> String {
    let mut t = String::from("profile of the last run, per stage graph (device time, microseconds from the stage graph's start; each device has its own clock):\n");
    for s in stages {
        t.push_str(&format!("@{} (stage {}, device {}):\n", s.graph, s.stage, s.device));
        t.push_str(&super::profile_rows(&s.profile));
    }
    t
}
