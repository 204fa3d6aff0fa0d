//! What `run` does besides running a bundle: list the devices, and compile IR text given
//! where a bundle goes.

use crate::exit::{Failure, Outcome};
use crate::io;

/// `run --list-devices`: the Vulkan devices, as `--device` numbers them.
pub(super) fn list_devices() -> Outcome {
    let devices = cmdgraph_executor::vulkan_devices().map_err(|e| Failure::Rejected(format!("error: {e}\n")))?;
    if devices.is_empty() {
        return Err(Failure::Rejected("error: no Vulkan 1.3 device with a compute queue\n".into()));
    }
    // The default is what `DeviceChoice::Default` picks: the best kind, then the first.
    let default = devices.iter().min_by_key(|d| (d.kind, d.index)).map(|d| d.index);
    let mut out = String::new();
    for d in &devices {
        let mark = if Some(d.index) == default { "  (default)" } else { "" };
        out.push_str(&format!("{}: {} ({}){mark}\n", d.index, d.name, d.kind));
    }
    io::write_output(None, &out)
}

/// IR text given to `run`: compiled as `cmdgraph compile` would (default pipeline, -O2),
/// with a note on stderr, so a `.cgir` runs without a separate step; `None` when the input
/// is not IR text at all (the loader then says what is wrong with it as a bundle).
pub(super) fn compile_ir(
    path: &std::path::Path,
    input: &io::InputBytes,
    must_be_signed: bool,
) -> Result<Option<Vec<u8>>, Failure> {
    let Ok(text) = std::str::from_utf8(&input.bytes) else { return Ok(None) };
    let looks_like_ir = path.extension().is_some_and(|e| e == "cgir")
        || text.lines().any(|l| ["graph @", "kernel @", "usm @"].iter().any(|k| l.trim_start().starts_with(k)));
    if !looks_like_ir {
        return Ok(None);
    }
    if must_be_signed {
        return Err(Failure::Rejected(format!(
            "error: `{}` is IR text, not a bundle; --trust needs a signed bundle: \
             `cmdgraph compile --sign KEY {} -o app.cgb`, then run app.cgb\n",
            input.name, input.name
        )));
    }
    let ir = io::Input { name: input.name.clone(), text: text.to_string() };
    let module = crate::cmd::parse(&ir)?;
    crate::cmd::print_warnings(&crate::cmd::verify(&ir, &module)?);
    let bytes = crate::cmd::compile::bundle_bytes(path, &ir, &module)?;
    eprintln!(
        "note: `{}` is IR text; compiled it with the default pipeline at -O2 (`cmdgraph compile {} -o app.cgb` \
         keeps the bundle for later runs)",
        input.name, input.name
    );
    Ok(Some(bytes))
}
