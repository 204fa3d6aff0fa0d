//! Helpers of the tests that run ranks (`run_ranks.rs`, `mpi.rs`): data files, output
//! text, and the check of a graph split by `compile --ranks 2`.
#![allow(dead_code)]

use super::comm_support::{self, random_f32, Jacobi};
use std::path::Path;
use std::process::{Command, Output};

/// A process's stdout and stderr.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The `f32`s of a raw file.
pub fn floats(path: &Path) -> Vec<f32> {
    std::fs::read(path).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Writes `v` as a raw file.
pub fn write_floats(path: &Path, v: &[f32]) {
    std::fs::write(path, v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
}

/// `cmdgraph compile --ranks 2` of a graph placed by hand on two devices, run as two ranks,
/// against the same graph run by the interpreter in one process: every memory object from
/// the rank it lives on. `run` runs the bundle as ranks (`--ranks 2`, or through mpiexec).
pub fn split_against_one_process(run: &dyn Fn(&[&str]) -> Output) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let source = d.join("placed.cgir");
    std::fs::write(&source, comm_support::PLACED).unwrap();
    let bundle = d.join("split.cgb");
    let o = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .args(["compile", source.to_str().unwrap(), "--ranks", "2", "-o", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for (name, seed) in [("w", 1), ("a", 2)] {
        write_floats(&d.join(format!("{name}.bin")), &random_f32(seed, 256));
    }
    let input = |n: &str| format!("{n}={}/{n}.bin", d.display());
    let output = |n: &str| format!("{n}={}/{n}.{{rank}}.out", d.display());
    let (iw, ia) = (input("w"), input("a"));
    let outs: Vec<String> = comm_support::PLACED_HOMES.iter().map(|(n, _)| output(n)).collect();
    let mut args = vec![bundle.to_str().unwrap(), "--validation", "--runs", "3", "--input", &iw, "--input", &ia];
    for o in &outs {
        args.extend(["--output", o.as_str()]);
    }
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let refs: Vec<String> =
        comm_support::PLACED_HOMES.iter().map(|(n, _)| format!("{n}={}/{n}.ref", d.display())).collect();
    let mut args = vec!["interp", source.to_str().unwrap(), "--runs", "3", "--input", &iw, "--input", &ia];
    for r in &refs {
        args.extend(["--output", r.as_str()]);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for (name, rank) in comm_support::PLACED_HOMES {
        let got = floats(&d.join(format!("{name}.{rank}.out")));
        let want = floats(&d.join(format!("{name}.ref")));
        assert!(want.iter().any(|v| *v != 0.0), "@{name} is computed");
        assert!(comm_support::close(&got, &want), "@{name} on rank {rank} differs from one process");
    }
}

/// Writes each rank's initial field of `j` as `u{N}.{rank}.bin` in `dir`; returns the
/// options of a Jacobi run from them: 25 runs with validation, `@u` and `@err` written as
/// `{tag}{N}.{rank}.bin` and `{tag}err{N}.{rank}.bin`.
pub fn jacobi_run(dir: &Path, j: &Jacobi, field: &[f32], tag: &str) -> Vec<String> {
    let n = j.ranks;
    for r in 0..n {
        write_floats(&dir.join(format!("u{n}.{r}.bin")), &j.initial(field, r));
    }
    let d = dir.display();
    ["--validation", "--runs", "25"]
        .into_iter()
        .map(str::to_string)
        .chain([
            "--input".into(),
            format!("u={d}/u{n}.{{rank}}.bin"),
            "--output".into(),
            format!("u={d}/{tag}{n}.{{rank}}.bin"),
            "--output".into(),
            format!("err={d}/{tag}err{n}.{{rank}}.bin"),
        ])
        .collect()
}
