//! Running the fuzzer's kernels on another machine (the GPU machine, which has no Rust and
//! no LLVM): `export` writes, per batch, its module, one bundle per `-O` level and the bytes
//! of every memory object; `scripts/gpu-fuzz.sh device` runs each bundle there with `cmdgraph
//! run` and writes every object back; `import` reads those outputs here, where the
//! interpreter gives the expected ones, and the usual comparison runs on them.
//!
//! Layout of a batch whose first kernel is #I, under the export folder:
//!
//! ```text
//! mI/module.cgir        the batch as IR text (for people: the bundles are what runs)
//! mI/O2.cgb             the bundle at -O2, and so on for each level exported
//! mI/objects            one memory object name a line (`@in_f32`, `@k7_o_u32`, ...)
//! mI/in/NAME.bin        the bytes bound to object NAME (`@` left out of file names)
//! mI/out-O2/NAME.bin    written there: every object after one run at -O2
//! mI/out-O2/error       written there instead when `cmdgraph run` failed: its stderr
//! ```

use super::DeviceRun;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn batch_dir(dir: &Path, first: u64) -> PathBuf {
    dir.join(format!("m{first}"))
}

fn file_name(object: &str) -> String {
    format!("{}.bin", object.trim_start_matches('@'))
}

/// Writes the batch whose first kernel is `first` at -O`opt`: its text, its bundle and every
/// object's bytes (`objects`: name and bytes).
pub fn export(
    dir: &Path,
    first: u64,
    opt: u8,
    text: &str,
    bundle: &[u8],
    objects: &[(&str, &[u8])],
) -> Result<(), String> {
    let m = batch_dir(dir, first);
    let io = |what: &Path, e: std::io::Error| format!("export: {}: {e}", what.display());
    std::fs::create_dir_all(m.join("in")).map_err(|e| io(&m, e))?;
    let write = |path: PathBuf, bytes: &[u8]| std::fs::write(&path, bytes).map_err(|e| io(&path, e));
    write(m.join("module.cgir"), text.as_bytes())?;
    write(m.join(format!("O{opt}.cgb")), bundle)?;
    let names: Vec<&str> = objects.iter().map(|o| o.0).collect();
    write(m.join("objects"), format!("{}\n", names.join("\n")).as_bytes())?;
    for (name, bytes) in objects {
        write(m.join("in").join(file_name(name)), bytes)?;
    }
    Ok(())
}

/// Reads what the other machine wrote for the batch whose first kernel is `first` at
/// -O`opt`: every object of `objects`, or the error `cmdgraph run` reported there.
pub fn import(dir: &Path, first: u64, opt: u8) -> Result<DeviceRun, String> {
    let m = batch_dir(dir, first);
    let out = m.join(format!("out-O{opt}"));
    if let Ok(error) = std::fs::read_to_string(out.join("error")) {
        return Err(format!("on the device: {}", error.trim()));
    }
    let objects = std::fs::read_to_string(m.join("objects"))
        .map_err(|e| format!("import: {}: {e} (was this batch exported and run?)", m.join("objects").display()))?;
    let mut outputs = BTreeMap::new();
    for name in objects.lines().filter(|l| !l.is_empty()) {
        let path = out.join(file_name(name));
        let bytes = std::fs::read(&path).map_err(|e| format!("import: {}: {e}", path.display()))?;
        outputs.insert(name.to_string(), bytes);
    }
    Ok(DeviceRun { outputs, messages: Vec::new() })
}
