//! examples/capi-build: the dotp sample ported to the C++ header (dotp.cpp, `c++ -std=c++17
//! -Wall -Wextra -Wpedantic -Werror`) and the C program (saxpy.c, `cc -std=c11` with the same
//! warnings), linked against this crate's cdylib, run on the default Vulkan device with the
//! validation layer on (any message fails the run, and so the program), their outputs
//! compared bit for bit with values computed here and with the reference interpreter running
//! the IR the program exported; the bundle the program compiled in process must be the bytes
//! `cmdgraph compile` writes for that IR. A missing compiler fails the test.
use crate::support::*;
use std::path::Path;
use std::process::Command;

/// Compiles `source` (under examples/capi-build) with `compiler` and `flags` against the
/// headers and the cdylib; returns the program's path.
fn build(compiler: &str, flags: &[&str], source: &str, dir: &Path) -> std::path::PathBuf {
    cargo_build("cmdgraph-capi-build", &["--lib"]);
    let libs = profile_dir();
    assert!(libs.join("libcmdgraph_build.so").exists(), "libcmdgraph_build.so is missing after the build");
    let exe = dir.join(Path::new(source).file_stem().expect("stem"));
    let mut cc = Command::new(compiler);
    cc.args(flags)
        .arg("-I")
        .arg(root().join("capi-build/include"))
        .arg(root().join("examples/capi-build").join(source))
        .arg("-L")
        .arg(&libs)
        .arg("-lcmdgraph_build")
        .arg(format!("-Wl,-rpath,{}", libs.display()))
        .arg("-o")
        .arg(&exe);
    run(&mut cc);
    exe
}

/// Runs a program on `dir` with validation on; fails on any validation message.
fn run_with_validation(exe: &Path, dir: &Path) -> String {
    let (stdout, stderr) = run(Command::new(exe).arg(dir).env("CMDGRAPH_VK_VALIDATION", "1"));
    assert!(!stderr.contains("validation"), "{}: the validation layer reported:\n{stderr}", exe.display());
    assert!(stdout.contains("device: llvmpipe") || stdout.contains("device: "), "{stdout}");
    stdout
}

#[test]
fn the_cpp_dotp_port_matches_rust_and_the_interpreter_and_its_bundle_is_the_clis() {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = 1024;
    let input = random_floats(31, 3 + 3 * n);
    std::fs::write(dir.path().join("inputs.bin"), f32_bytes(&input)).expect("write inputs");
    let flags = ["-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror"];
    let exe = build("c++", &flags, "dotp.cpp", dir.path());
    let stdout = run_with_validation(&exe, dir.path());
    assert!(stdout.contains("nodes: 4, node_c has 2 predecessors"), "{stdout}");
    let out = f32s(&std::fs::read(dir.path().join("outputs.bin")).expect("outputs.bin"));
    assert_eq!(out.len(), 1 + 2 * n);

    // The same arithmetic in Rust, one rounding per operation, in the sample's order.
    let (alpha, beta, gamma) = (input[0], input[1], input[2]);
    let (x0, y0, z0) = (&input[3..3 + n], &input[3 + n..3 + 2 * n], &input[3 + 2 * n..]);
    let x: Vec<f32> = (0..n).map(|i| alpha * x0[i] + beta * y0[i]).collect();
    let z: Vec<f32> = (0..n).map(|i| gamma * z0[i] + beta * y0[i]).collect();
    let dotp = (0..n).fold(0f32, |s, i| s + x[i] * z[i]);
    assert_eq!(out[0].to_bits(), dotp.to_bits(), "dotp: device {} Rust {dotp}", out[0]);
    assert_eq!(f32_bytes(&out[1..1 + n]), f32_bytes(&x), "x");
    assert_eq!(f32_bytes(&out[1 + n..]), f32_bytes(&z), "z");

    // The interpreter on the exported IR: USM in allocation order (dotp, x, y, z, x0, y0, z0).
    let text = std::fs::read_to_string(dir.path().join("graph.cgir")).expect("graph.cgir");
    let module = cmdgraph_ir::text::parse(&text).expect("the exported IR parses");
    cmdgraph_ir::verify::verify(&module).expect("the exported IR verifies");
    let mems: Vec<String> = module.memories.iter().map(|(_, m)| m.name.clone()).collect();
    assert_eq!(mems.len(), 7, "{mems:?}");
    let graph = module.graphs.iter().last().expect("a graph").1.name.clone();
    let mut it = cmdgraph_interp::Interpreter::new(&module).expect("interpreter");
    it.bind_as(&mems[4], x0).expect("bind x0");
    it.bind_as(&mems[5], y0).expect("bind y0");
    it.bind_as(&mems[6], z0).expect("bind z0");
    let e = it.finalize(&graph).expect("finalize");
    it.run(e).expect("run");
    assert_eq!(it.read_as::<f32>(&mems[0]).expect("dotp")[0].to_bits(), out[0].to_bits(), "dotp vs the interpreter");
    assert_eq!(f32_bytes(&it.read_as::<f32>(&mems[1]).expect("x")), f32_bytes(&out[1..1 + n]), "x vs the interpreter");
    assert_eq!(f32_bytes(&it.read_as::<f32>(&mems[3]).expect("z")), f32_bytes(&out[1 + n..]), "z vs the interpreter");

    // The bundle compiled in process is `cmdgraph compile`'s.
    let cli_bundle = dir.path().join("cli.cgb");
    run(Command::new(cli()).arg("compile").arg(dir.path().join("graph.cgir")).arg("-o").arg(&cli_bundle));
    let ours = std::fs::read(dir.path().join("graph.cgb")).expect("graph.cgb");
    assert!(
        ours == std::fs::read(&cli_bundle).expect("cli.cgb"),
        "the in-process bundle differs from `cmdgraph compile`'s"
    );
}

#[test]
fn the_c_program_matches_rust() {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = 4096;
    let input = random_floats(41, 2 + n);
    std::fs::write(dir.path().join("inputs.bin"), f32_bytes(&input)).expect("write inputs");
    let flags = ["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror"];
    let exe = build("cc", &flags, "saxpy.c", dir.path());
    run_with_validation(&exe, dir.path());
    let out = f32s(&std::fs::read(dir.path().join("outputs.bin")).expect("outputs.bin"));
    assert_eq!(out.len(), 2 * n + 1);
    let x = &input[2..];
    for (run, a) in [input[0], input[1]].into_iter().enumerate() {
        let want: Vec<f32> = x.iter().map(|v| a * v + 1.5).collect();
        assert_eq!(f32_bytes(&out[run * n..(run + 1) * n]), f32_bytes(&want), "run {run}");
    }
    assert_eq!(out[2 * n].to_bits(), (input[1] * x[0] + 1.5 + 1.0).to_bits(), "the host task's flag");
}
