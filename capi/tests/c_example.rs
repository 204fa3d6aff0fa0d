//! examples/capi: run_graph.c and run_graph.cpp compiled with the system's `cc` and `c++`
//! (warnings as errors) against include/cmdgraph.h and this crate's cdylib, run on the default
//! Vulkan device with the validation layer on, and every memory object after each of their
//! two runs compared byte for byte with the reference interpreter (the demo's kernels are
//! exact: no fma, no transcendental functions). Any validation message fails the example.
//! interop.c does the same inside a Vulkan instance, device, buffer and semaphores of its own.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding `libcmdgraph.so`, built here: `cargo test` builds only the rlib
/// that tests link, so this runs `cargo build -p cmdgraph-capi` (the same cargo, target
/// directory and profile; cargo releases the build lock before it runs tests) and returns
/// `<target>/<profile>`, where cargo puts the cdylib. The test binary is in
/// `<target>/<profile>/deps`.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(Path::parent).expect("<target>/<profile>").to_path_buf();
    let target = dir.parent().expect("<target>");
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "-p", "cmdgraph-capi", "--lib"]).arg("--target-dir").arg(target);
    if dir.file_name().is_some_and(|p| p == "release") {
        build.arg("--release");
    }
    run(build.current_dir(env!("CARGO_MANIFEST_DIR")));
    let lib = dir.join(if cfg!(target_os = "macos") { "libcmdgraph.dylib" } else { "libcmdgraph.so" });
    assert!(lib.exists(), "{} is missing after `cargo build -p cmdgraph-capi`", lib.display());
    dir
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{stderr}{}", out.status, String::from_utf8_lossy(&out.stdout));
    stderr
}

/// Compiles `source` with `compiler` and `flags`, links the cdylib, runs the program on the
/// demo bundle with validation and returns its output file's contents.
fn build_and_run(compiler: &str, flags: &[&str], source: &str, dir: &Path, bundle: &Path) -> String {
    build_and_run_with(compiler, flags, &[], source, dir, bundle)
}

/// [`build_and_run`], linking `extra` libraries too.
fn build_and_run_with(
    compiler: &str,
    flags: &[&str],
    extra: &[&str],
    source: &str,
    dir: &Path,
    bundle: &Path,
) -> String {
    let root = support::root();
    let libs = lib_dir();
    let exe = dir.join(Path::new(source).file_stem().expect("stem")).with_extension(compiler);
    let mut cc = Command::new(compiler);
    cc.args(flags)
        .arg("-I")
        .arg(root.join("capi/include"))
        .arg("-I")
        .arg(root.join("examples/capi"))
        .arg(root.join("examples/capi").join(source))
        .arg("-L")
        .arg(&libs)
        .arg("-lcmdgraph")
        .args(extra)
        .arg(format!("-Wl,-rpath,{}", libs.display()))
        .arg("-o")
        .arg(&exe);
    run(&mut cc);
    let output = dir.join(format!("{source}.out"));
    let stderr =
        run(Command::new(&exe).arg(bundle).arg(&output).arg("--validation").env("CMDGRAPH_VK_VALIDATION", "1"));
    assert!(!stderr.contains("validation:"), "{source}: the validation layer reported:\n{stderr}");
    std::fs::read_to_string(&output).unwrap_or_else(|e| panic!("{}: {e}", output.display()))
}

/// Checks one example's output against the interpreter's memory, naming the first byte that
/// differs.
fn check(example: &str, output: &str, expected: &BTreeMap<(u32, String), Vec<u8>>) {
    let got = support::parse_output(output);
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "{example}: the objects written");
    for (key, want) in expected {
        let have = &got[key];
        assert_eq!(have.len(), want.len(), "{example}: run {} @{}: size", key.0, key.1);
        if let Some(at) = have.iter().zip(want).position(|(a, b)| a != b) {
            panic!(
                "{example}: run {} @{}: byte {at} is {:#04x}, the interpreter's {:#04x}",
                key.0, key.1, have[at], want[at]
            );
        }
    }
    // The host task ran on both runs with the user pointer's tag (1000 + call number).
    assert_eq!(&got[&(2, "stats".to_string())][12..16], &1002u32.to_le_bytes(), "{example}: @stats tag");
    // The updates changed what the second run computed.
    assert_ne!(got[&(1, "out".to_string())], got[&(2, "out".to_string())], "{example}: @out after the update");
}

#[test]
fn the_c_and_cpp_examples_match_the_reference_interpreter() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bundle = dir.path().join("demo.cgb");
    std::fs::write(&bundle, support::compile(&support::demo_text())).expect("write bundle");
    let expected = support::demo_reference();
    assert_eq!(expected.len(), 12, "six memory objects after each of two runs");
    let flags = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"];
    let c = build_and_run("cc", &[&["-std=c11"], &flags[..]].concat(), "run_graph.c", dir.path(), &bundle);
    check("run_graph.c", &c, &expected);
    let cpp = build_and_run("c++", &[&["-std=c++17"], &flags[..]].concat(), "run_graph.cpp", dir.path(), &bundle);
    check("run_graph.cpp", &cpp, &expected);
}

#[test]
fn the_interop_example_runs_inside_its_own_vulkan_and_matches_the_interpreter() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bundle = dir.path().join("interop.cgb");
    let text = std::fs::read_to_string(support::root().join("examples/capi/interop.cgir")).expect("interop.cgir");
    std::fs::write(&bundle, support::compile(&text)).expect("write bundle");
    let flags = ["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"];
    let got = build_and_run_with("cc", &flags, &["-lvulkan"], "interop.c", dir.path(), &bundle);

    let module = cmdgraph_ir::text::parse(&text).expect("interop.cgir parses");
    let mut it = cmdgraph_interp::Interpreter::new(&module).expect("interpreter");
    it.bind_as("x", &support::random_floats(11, 4096)).expect("bind");
    it.bind_as("y", &support::random_floats(12, 4096)).expect("bind");
    let e = it.finalize("g").expect("finalize");
    it.run(e).expect("run");
    let want = support::f32_bytes(&it.read_as::<f32>("out").expect("read"));
    let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(got.trim_end(), format!("out {hex}"), "interop.c: @out differs from the interpreter's");
}
