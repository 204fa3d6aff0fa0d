//! The memory trace (`CMDGRAPH_MEMORY_TRACE=DIR`): every host read of a memory object
//! appends its name and bytes to `DIR/<thread>.trace`, so that two runs of one program, on
//! the reference interpreter and on a Vulkan device, can be compared byte for byte
//! (scripts/test.sh does this for the SYCL suites). A test harness names each test's thread
//! after the test, so each test gets its own file.

use std::io::Write;

/// The environment variable naming the trace directory.
pub const MEMORY_TRACE_VAR: &str = "CMDGRAPH_MEMORY_TRACE";

/// Appends `@name: <hex bytes>` to this thread's trace file when tracing is on. A trace
/// that cannot be written is reported on stderr once per read: the trace is a check of
/// the runtime, never a reason for the application to fail.
pub(crate) fn record(name: &str, bytes: &[u8]) {
    let Some(dir) = std::env::var_os(MEMORY_TRACE_VAR) else { return };
    let thread = std::thread::current();
    let file: String = thread
        .name()
        .unwrap_or("unnamed")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    let path = std::path::Path::new(&dir).join(format!("{file}.trace"));
    let mut line = format!("@{name}:");
    for b in bytes {
        line.push_str(&format!("{b:02x}"));
    }
    line.push('\n');
    let written = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::OpenOptions::new().create(true).append(true).open(&path))
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("cmdgraph-sycl: cannot append to memory trace `{}`: {e}", path.display());
    }
}
