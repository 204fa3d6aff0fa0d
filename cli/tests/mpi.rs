//! `mpiexec -n N cmdgraph run --mpi` (docs/mpi.md), with the `mpi` feature: every rank its
//! own process and its own llvmpipe device, MPICH between them, validation on. Outputs match
//! the interpreter's multi-rank simulation, and bit for bit the same ranks run in one process
//! (`--ranks`); faults end every rank within the deadline, with an error naming what was
//! waited for, and leave nothing running.
#![cfg(feature = "mpi")]

#[path = "../../interp/tests/comm_support/mod.rs"]
mod comm_support;
#[path = "support/ranks.rs"]
mod ranks;

use comm_support::{allreduce_module, random_f32, Jacobi};
use ranks::{floats, text, write_floats};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CMDGRAPH: &str = env!("CARGO_BIN_EXE_cmdgraph");

/// `mpiexec -n N cmdgraph run --mpi ARGS...`.
fn mpiexec(n: u32, args: &[&str]) -> Output {
    let mut c = Command::new("mpiexec");
    c.args(["-n", &n.to_string(), CMDGRAPH, "run", "--mpi"]).args(args);
    c.output().expect("mpiexec runs (scripts/setup.sh installs mpich)")
}

/// Processes whose command line mentions `dir` (what a test started), still running.
fn left_running(dir: &Path) -> Vec<String> {
    let out = Command::new("pgrep").args(["-af", &dir.display().to_string()]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.contains("pgrep")).map(str::to_string).collect()
}

#[test]
fn jacobi_halo_exchange_on_two_and_three_processes_matches_one_process_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let field = random_f32(23, 48 * 40);
    for n in [2u32, 3] {
        let j = Jacobi { h: 48, w: 40, ranks: n };
        let module = d.join(format!("jacobi{n}.cgb"));
        let source = d.join(format!("jacobi{n}.cgir"));
        std::fs::write(&source, j.module()).unwrap();
        // One bundle, compiled once, that every rank loads.
        let o = Command::new(CMDGRAPH)
            .args(["compile", source.to_str().unwrap(), "-o", module.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let run = |tag: &str, extra: &[&str], mpi: bool| {
            let opts = ranks::jacobi_run(d, &j, &field, tag);
            let mut args: Vec<&str> = vec![module.to_str().unwrap()];
            args.extend(opts.iter().map(String::as_str));
            args.extend(extra);
            let o =
                if mpi { mpiexec(n, &args) } else { Command::new(CMDGRAPH).arg("run").args(&args).output().unwrap() };
            assert!(o.status.success(), "{}", text(&o));
            text(&o)
        };
        let shown = run("mpi", &[], true);
        for r in 0..n {
            assert!(shown.contains(&format!("rank {r}: graph @step.r{r}: 25 run(s)")), "{shown}");
        }
        let ranks = n.to_string();
        run("local", &["--ranks", &ranks], false);
        for r in 0..n {
            for what in ["", "err"] {
                let a = std::fs::read(d.join(format!("mpi{what}{n}.{r}.bin"))).unwrap();
                let b = std::fs::read(d.join(format!("local{what}{n}.{r}.bin"))).unwrap();
                assert!(
                    a == b,
                    "rank {r} of {n}: MPI and one process differ in {}",
                    if what.is_empty() { "@u" } else { "@err" }
                );
            }
        }
        // Against the interpreter's multi-rank simulation (the oracle), within the float rules.
        let module = cmdgraph_ir::text::parse(&j.module()).unwrap();
        let sim = cmdgraph_interp::ranks::Simulation {
            module: &module,
            graph: "step",
            size: n,
            runs: 25,
            options: cmdgraph_interp::RunOptions::default(),
            timeout: Duration::from_secs(60),
        };
        let setup = |rank: u32, i: &mut cmdgraph_interp::Interpreter| i.bind_as("u", &j.initial(&field, rank));
        for (r, i) in cmdgraph_interp::ranks::simulate(&sim, &setup).into_iter().enumerate() {
            let want: Vec<f32> = i.unwrap().read_as("u").unwrap();
            let got = floats(&d.join(format!("mpi{n}.{r}.bin")));
            let off = j
                .owned(&got)
                .iter()
                .zip(j.owned(&want))
                .filter(|(a, b)| (*a - *b).abs() > 1e-5 * a.abs().max(1.0))
                .count();
            assert_eq!(off, 0, "rank {r} of {n} against the simulation");
        }
    }
}

#[test]
fn all_reduce_over_three_processes_sums_in_rank_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 4096usize;
    let source = d.join("sum.cgir");
    std::fs::write(&source, allreduce_module(n as u32)).unwrap();
    let xs: Vec<Vec<f32>> = (0..3).map(|r| random_f32(300 + r, n)).collect();
    for (r, x) in xs.iter().enumerate() {
        write_floats(&d.join(format!("x.{r}.bin")), x);
        let m: Vec<u8> = x.iter().flat_map(|v| ((v * 1e6) as i32).to_le_bytes()).collect();
        std::fs::write(d.join(format!("m.{r}.bin")), m).unwrap();
    }
    let at = |what: &str| format!("{what}={}/{what}.{{rank}}.bin", d.display());
    let out = |what: &str| format!("{what}={}/out_{what}.{{rank}}.bin", d.display());
    let o = mpiexec(
        3,
        &[
            source.to_str().unwrap(),
            "--validation",
            "--input",
            &at("x"),
            "--input",
            &at("m"),
            "--output",
            &out("x"),
            "--output",
            &out("m"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let fixed: Vec<f32> = (0..n).map(|k| (xs[0][k] + xs[1][k]) + xs[2][k]).collect();
    let other: Vec<f32> = (0..n).map(|k| (xs[2][k] + xs[1][k]) + xs[0][k]).collect();
    assert!(fixed.iter().zip(&other).filter(|(a, b)| a != b).count() > 100, "the data must expose the order");
    let max: Vec<i32> = (0..n).map(|k| (0..3).map(|r| (xs[r][k] * 1e6) as i32).max().unwrap()).collect();
    for r in 0..3 {
        let got = floats(&d.join(format!("out_x.{r}.bin")));
        assert!(
            got.iter().zip(&fixed).all(|(a, b)| a.to_bits() == b.to_bits()),
            "rank {r}: (r0 + r1) + r2, bit for bit"
        );
        let m: Vec<i32> = std::fs::read(d.join(format!("out_m.{r}.bin")))
            .unwrap()
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(m, max, "rank {r}: max");
    }
}

/// Writes `text` as rank `r`'s module `name.{r}.cgir`.
fn rank_module(d: &Path, name: &str, r: u32, text: &str) {
    std::fs::write(d.join(format!("{name}.{r}.cgir")), text).unwrap();
}

#[test]
fn a_size_or_tag_that_does_not_match_fails_the_rank_naming_its_node() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Each rank compiles its own graph, so the verifier cannot pair them: the run does.
    rank_module(d, "size", 0, "usm @x : f32[4]\ngraph @g {\n  %s = send @x, 16 to(1) tag(7)\n}\n");
    rank_module(d, "size", 1, "usm @x : f32[4]\ngraph @g {\n  %r = recv @x, 8 from(0) tag(7)\n}\n");
    let path = format!("{}/size.{{rank}}.cgir", d.display());
    let o = mpiexec(2, &[&path, "--timeout", "20"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("rank 1 of 2: error: @g: host task %r failed: recv: rank 0 sent 16 bytes with tag 7, but this receive expects 8"), "{t}");

    rank_module(d, "tag", 0, "usm @x : f32[4]\ngraph @g {\n  %s = send @x, 16 to(1) tag(7)\n}\n");
    rank_module(d, "tag", 1, "usm @x : f32[4]\ngraph @g {\n  %r = recv @x, 16 from(0) tag(8)\n}\n");
    let path = format!("{}/tag.{{rank}}.cgir", d.display());
    let start = Instant::now();
    let o = mpiexec(2, &[&path, "--timeout", "3"]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(start.elapsed() < Duration::from_secs(15), "ended at the deadline: {:?}", start.elapsed());
    assert!(
        t.contains("%r's message from rank 0 with tag 8 (rank 0 sent a message with tag 7, which no receive took)"),
        "{t}"
    );
    assert!(left_running(d).is_empty(), "{:?}", left_running(d));
}

/// Starts the 3-rank Jacobi for a long time, waits until its ranks run, signals one of them
/// with `signal`, and returns mpiexec's output and how long it took after the signal.
fn fault(d: &Path, signal: &str) -> (Output, Duration) {
    let j = Jacobi { h: 48, w: 40, ranks: 3 };
    let source = d.join("long.cgir");
    std::fs::write(&source, j.module()).unwrap();
    let child = Command::new("mpiexec")
        .args(["-n", "3", CMDGRAPH, "run", "--mpi", source.to_str().unwrap(), "--runs", "100000000", "--timeout", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The ranks have started once three processes run the module (mpiexec's line has it too).
    let ranks = || {
        left_running(d)
            .into_iter()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && !l.contains("mpiexec"))
            .collect::<Vec<_>>()
    };
    let start = Instant::now();
    while ranks().len() < 3 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    let victim = ranks().last().and_then(|l| l.split_whitespace().next().map(str::to_string)).expect("a rank runs");
    assert!(Command::new("kill").args([signal, &victim]).status().unwrap().success());
    let at = Instant::now();
    let out = child.wait_with_output().unwrap();
    (out, at.elapsed())
}

#[test]
fn a_rank_that_dies_ends_the_job_and_one_that_hangs_fails_the_others_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Killed: MPICH's launcher ends the other ranks at once.
    let (o, took) = fault(d, "-KILL");
    assert!(!o.status.success(), "{}", text(&o));
    assert!(took < Duration::from_secs(10), "the job ended {took:?} after the kill");
    assert!(left_running(d).is_empty(), "{:?}", left_running(d));
    // Stopped (alive, answering nothing): the others' waits end at their deadline (nine
    // tenths of --timeout 5) with an error naming what they waited for.
    let (o, took) = fault(d, "-STOP");
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(took < Duration::from_secs(30), "the job ended {took:?} after the stop");
    assert!(t.contains("timed out after 4500 ms waiting for"), "{t}");
    // Which rank is named depends on where the wait chain starts: a rank next to the stopped
    // one, or one waiting on a neighbour that itself waits (pgrep's order is not rank order).
    let named = (0..3).any(|r| t.contains(&format!("'s message from rank {r} with tag ")));
    assert!(named || t.contains("every rank to join the all-reduce"), "{t}");
    assert!(left_running(d).is_empty(), "{:?}", left_running(d));
}

#[test]
fn a_graph_split_by_compile_ranks_runs_under_mpiexec_as_it_ran_in_one_process() {
    ranks::split_against_one_process(&|args| mpiexec(2, args));
}
