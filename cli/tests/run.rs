//! `cmdgraph run` on hand-built bundles (the executor tests' SPIR-V kernels) written to temp
//! files: outputs, repeat, the profile table, validation, and the exit codes of docs/cli.md.

#[path = "../../executor/tests/common/mod.rs"]
mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Output};

fn ir(props: &str) -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[256]
usm @out : f32[256]

graph @g {props} {{
  %k = kernel @scale range(256) args(@a, @out, 2.0)
  %h = host_task \"log\" access(@out read) after(%k)
  %k2 = kernel @add2 range(256) args(@out, @a, @out) after(%h)
}}
"
    )
}

fn write_bundle(dir: &Path, props: &str) -> std::path::PathBuf {
    let path = dir.join("app.bundle");
    let bytes = bundle(&ir(props), vec![], vec![]).to_bytes().unwrap();
    std::fs::write(&path, bytes).unwrap();
    path
}

fn cmdgraph(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(args).output().unwrap()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[test]
fn run_writes_outputs_and_profile_table() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_bundle(dir.path(), "properties(enable_profiling)");
    let a: Vec<u8> = (0..256).flat_map(|i| (i as f32).to_le_bytes()).collect();
    std::fs::write(dir.path().join("a.bin"), &a).unwrap();
    let out = dir.path().join("out.bin");
    let o = cmdgraph(&[
        "run",
        b.to_str().unwrap(),
        "--input",
        &format!("a={}", dir.path().join("a.bin").display()),
        "--output",
        &format!("out={}", out.display()),
        "--repeat",
        "3",
        "--profile",
        "--validation",
    ]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let got = f32s(&std::fs::read(&out).unwrap());
    // out = 2a, then out + a: 3a each run.
    assert_eq!(got[7], 21.0);
    assert!(stdout.contains("graph @g: 3 run(s) on "), "{stdout}");
    assert!(stdout.contains("output @out -> "), "{stdout}");
    assert!(stderr.contains("host tasks ran as no-ops: \"log\""), "{stderr}");
    // The table: header, %k, %k2 (the host task has no device time), then the run.
    let table: Vec<&str> = stdout.lines().skip_while(|l| !l.starts_with("profile of the last run")).collect();
    assert_eq!(table.len(), 5, "{stdout}");
    let cols: Vec<Vec<&str>> = table[1..].iter().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(cols[0], ["node", "start", "end", "duration"]);
    assert_eq!((cols[1][0], cols[2][0], cols[3][0]), ("%k", "%k2", "run"));
    let num = |s: &str| s.parse::<f64>().unwrap();
    assert!(num(cols[1][2]) <= num(cols[2][1]), "%k ends before %k2 starts: {stdout}");
    assert!(num(cols[2][2]) <= num(cols[3][2]), "the run ends last: {stdout}");
    // Every column lines up (fixed widths).
    let widths: Vec<usize> = table[1..].iter().map(|l| l.len()).collect();
    assert!(widths.windows(2).all(|w| w[0] == w[1]), "{stdout}");
}

#[test]
fn run_errors_have_documented_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let b = write_bundle(dir.path(), "");
    let b = b.to_str().unwrap();
    let out = dir.path().join("out.bin");
    let out_arg = format!("out={}", out.display());
    // Row 61: profiling a graph without enable_profiling; nothing is written.
    let o = cmdgraph(&["run", b, "--profile", "--output", &out_arg]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("row 61"));
    assert!(!out.exists());
    // A truncated bundle is rejected.
    let bytes = std::fs::read(b).unwrap();
    let cut = dir.path().join("cut.bundle");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = cmdgraph(&["run", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("malformed bundle"), "{o:?}");
    // A missing bundle or input file is an I/O error.
    assert_eq!(cmdgraph(&["run", "/nonexistent/app.bundle"]).status.code(), Some(3));
    let o = cmdgraph(&["run", b, "--input", "a=/nonexistent/a.bin"]);
    assert_eq!(o.status.code(), Some(3));
    // Unknown memory, a wrong-sized input: rejected.
    let o = cmdgraph(&["run", b, "--input", "nope=x.bin"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("@nope"));
    std::fs::write(dir.path().join("short.bin"), [0u8; 12]).unwrap();
    let o = cmdgraph(&["run", b, "--input", &format!("a={}", dir.path().join("short.bin").display())]);
    assert_eq!(o.status.code(), Some(1));
    // Usage errors.
    assert_eq!(cmdgraph(&["run"]).status.code(), Some(2));
    assert_eq!(cmdgraph(&["run", b, "--repeat", "0"]).status.code(), Some(2));
    // A device that does not exist.
    let o = cmdgraph(&["run", b, "--device", "no-such-gpu"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no Vulkan 1.3 compute device"), "{o:?}");
}

/// `cmdgraph compile` then `cmdgraph run` gives the bytes `cmdgraph interp` gives, on
/// examples whose kernels use no work-group memory, with random inputs.
#[test]
fn compiled_examples_run_like_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (example, mems) in [("saxpy_chain", &["x", "y", "z"][..]), ("stencil2d", &["a", "b", "err"][..])] {
        let src = root.join(format!("examples/{example}.cgir"));
        let cgb = dir.path().join(format!("{example}.cgb"));
        let o = cmdgraph(&["compile", src.to_str().unwrap(), "-o", cgb.to_str().unwrap()]);
        assert!(o.status.success(), "compile {example}: {}", String::from_utf8_lossy(&o.stderr));
        let module = cmdgraph_ir::text::parse(&std::fs::read_to_string(&src).unwrap()).unwrap();
        let mut args_i = vec!["interp".to_string(), src.display().to_string()];
        let mut args_r = vec!["run".to_string(), cgb.display().to_string(), "--validation".to_string()];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for m in mems {
            let obj = &module.memories[module.memory_by_name(m).unwrap()];
            let bytes: Vec<u8> = (0..obj.count)
                .flat_map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    ((state % 4000) as f32 / 1000.0 - 2.0).to_le_bytes()
                })
                .collect();
            let input = dir.path().join(format!("{example}-{m}.in"));
            std::fs::write(&input, bytes).unwrap();
            for (args, tag) in [(&mut args_i, "i"), (&mut args_r, "r")] {
                args.extend(["--input".into(), format!("{m}={}", input.display())]);
                args.extend([
                    "--output".into(),
                    format!("{m}={}", dir.path().join(format!("{example}-{m}.{tag}")).display()),
                ]);
            }
        }
        for args in [&args_i, &args_r] {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = cmdgraph(&refs);
            assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        }
        for m in mems {
            let read = |tag: &str| std::fs::read(dir.path().join(format!("{example}-{m}.{tag}"))).unwrap();
            assert!(read("i") == read("r"), "{example}: @{m} differs between interp and run");
        }
    }
}
