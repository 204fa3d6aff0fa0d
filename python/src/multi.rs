//! `cmdgraph.load_on_devices`: a bundle whose graphs span devices (docs/multi-device.md) on
//! several Vulkan devices, run through the same `Executable` as one device.

use crate::bundle::Bundle;
use crate::device::{layer_messages, Device, Executable};
use crate::engine::Engine;
use crate::errors::{exec, Result};
use cmdgraph_executor::MultiExecutor;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Loads `bundle` on several devices: device N of its module (`device(N)`, `home(N)`) on
/// `devices[N]` (one `Device` may be given twice: two logical devices of it). The bundle's
/// graphs that span devices must have been compiled with `split-devices` (`Module.compile`
/// and `cmdgraph compile` add it to such a module). `Executable.run` then binds inputs where
/// their memory lives, runs every stage graph with one submission per device and one wait,
/// and reads outputs where they live; `params` and `active` reach every device. Host tasks run
/// as no-ops unless `host_tasks` gives them (each runs beside the device of its memory).
///
/// >>> exe = cmdgraph.load_on_devices(module.compile(), [cmdgraph.Device(0), cmdgraph.Device(1)])
#[pyfunction]
#[pyo3(signature = (bundle, devices, *, host_tasks = None))]
pub fn load_on_devices(
    py: Python<'_>,
    bundle: &Bundle,
    devices: Vec<PyRef<'_, Device>>,
    host_tasks: Option<&Bound<'_, PyDict>>,
) -> PyResult<Executable> {
    let host = crate::device::bundle_host_tasks(bundle, host_tasks)?;
    let options: Vec<_> = devices.iter().map(|d| d.options()).collect();
    let names: Vec<String> = devices.iter().map(|d| d.device_name().to_string()).collect();
    let validation = options.iter().any(|o| o.validation);
    let loaded = bundle.loaded.clone();
    let multi = py.detach(move || -> Result<MultiExecutor> {
        let mut multi = MultiExecutor::from_loaded(loaded, &options).map_err(|e| exec("load", &e))?;
        for name in crate::module::host_callbacks(multi.module()) {
            multi.register_callback(&name, |_| Ok(()));
        }
        for (name, f) in host {
            multi.register_callback(&name, f);
        }
        layer_messages(cmdgraph_ir::runtime::Runtime::take_diagnostics(&mut multi))?;
        Ok(multi)
    })?;
    let warnings = (0..multi.len()).filter_map(|d| multi.device(d)).flat_map(|e| e.warnings().to_vec()).collect();
    Ok(Executable::new(Engine::Many(Box::new(multi)), warnings, validation, names.join(" + ")))
}
