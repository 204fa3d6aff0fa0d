//! What the tests share: calling the C functions, random inputs, and building the cdylib,
//! the CLI and the example programs the way an application would.
#![allow(dead_code)]
// `c!` wraps each call of a C function in one unsafe block: the calls are what is tested.
#![allow(clippy::macro_metavars_in_unsafe)]

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use cmdgraph_build::error::cmdgraph_sycl_status::{self, *};

/// Calls a C function of the library. Every use passes handles the test made and has not
/// destroyed, and pointers to live values of the types the header states.
#[macro_export]
macro_rules! c {
    ($e:expr) => {{
        #[allow(unused_unsafe)]
        // SAFETY: the tests pass live handles made by the library and pointers to live,
        // correctly sized values they own, as the header requires.
        let r = unsafe { $e };
        r
    }};
}

/// Panics with the thread's last message unless `s` is `CMDGRAPH_SYCL_OK`.
#[track_caller]
pub fn ok(s: cmdgraph_sycl_status) {
    assert_eq!(s, CMDGRAPH_SYCL_OK, "{}", last_error());
}

/// The thread's last message.
pub fn last_error() -> String {
    // SAFETY: the library returns a live NUL-terminated string.
    unsafe { CStr::from_ptr(cmdgraph_build::cmdgraph_sycl_last_error()) }.to_string_lossy().into_owned()
}

/// A message from a `*_last_error` pointer.
pub fn message(p: *const std::ffi::c_char) -> String {
    assert!(!p.is_null());
    // SAFETY: the library returns live NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A C string.
pub fn cs(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

/// `n` random `f32`s of magnitude in [0.25, 4), either sign, with all 23 mantissa bits
/// random (xorshift from `seed`).
pub fn random_floats(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let sign = ((s >> 63) as u32) << 31;
            let exponent = (125 + ((s >> 60) & 3) as u32) << 23;
            f32::from_bits(sign | exponent | (s as u32 & 0x7f_ffff))
        })
        .collect()
}

/// Little-endian bytes of `f32`s.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `f32`s of little-endian bytes.
pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// `<target>/<profile>`, where cargo puts the cdylib and binaries; the test binary is in
/// `<target>/<profile>/deps`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("<target>/<profile>").to_path_buf()
}

/// Runs `cargo build -p PACKAGE` with this test's cargo, target directory and profile
/// (`cargo test` builds only the rlib; cargo releases the build lock before tests run).
pub fn cargo_build(package: &str, extra: &[&str]) {
    let dir = profile_dir();
    let target = dir.parent().expect("<target>");
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "-q", "-p", package]).args(extra).arg("--target-dir").arg(target);
    if dir.file_name().is_some_and(|p| p == "release") {
        build.arg("--release");
    }
    run(build.current_dir(env!("CARGO_MANIFEST_DIR")));
}

/// The `cmdgraph` binary of this profile, built first.
pub fn cli() -> PathBuf {
    cargo_build("cmdgraph-cli", &[]);
    profile_dir().join("cmdgraph")
}

/// Runs `cmd`, failing with its output unless it succeeds; returns its stdout and stderr.
pub fn run(cmd: &mut Command) -> (String, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{stderr}{stdout}", out.status);
    (stdout, stderr)
}

/// Adds `cg` (destroyed afterwards) after `deps`; returns the node.
pub fn add(
    g: *mut cmdgraph_build::graph::cmdgraph_sycl_graph,
    cg: *mut cmdgraph_build::cg::cmdgraph_sycl_cg,
    deps: &[*mut cmdgraph_build::graph::cmdgraph_sycl_node],
) -> *mut cmdgraph_build::graph::cmdgraph_sycl_node {
    let deps: Vec<*const cmdgraph_build::graph::cmdgraph_sycl_node> = deps.iter().map(|&d| d.cast_const()).collect();
    let mut node = std::ptr::null_mut();
    let st = c!(cmdgraph_build::graph::cmdgraph_sycl_graph_add(g, cg, deps.as_ptr(), deps.len(), 0, &mut node));
    c!(cmdgraph_build::cg::cmdgraph_sycl_cg_destroy(cg));
    ok(st);
    node
}
