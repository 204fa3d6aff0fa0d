//! `cmdgraph run --ranks N` (docs/mpi.md): a module's rank graphs on Vulkan, every rank on
//! its own device context in this process, validation on. A 2-D Jacobi stencil split by
//! rows with halo exchange and an all-reduced residual matches the interpreter's multi-rank
//! simulation (the oracle) and, bit for bit, the same stencil run as one rank.

#[path = "../../interp/tests/comm_support/mod.rs"]
mod comm_support;
#[path = "support/ranks.rs"]
mod ranks;

use cmdgraph_interp::ranks::{simulate, Simulation};
use cmdgraph_interp::{Interpreter, RunOptions};
use comm_support::{random_f32, Jacobi};
use ranks::{floats, text};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn cmdgraph(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cmdgraph")).arg("run").args(args).output().unwrap()
}

/// Runs the Jacobi problem on `ranks` ranks with `cmdgraph run --ranks`: every rank's
/// owned rows (rank 0 first) and its residual.
fn on_vulkan(dir: &Path, j: &Jacobi, field: &[f32]) -> (Vec<f32>, Vec<f32>, String) {
    let module = dir.join(format!("jacobi{}.cgir", j.ranks));
    std::fs::write(&module, j.module()).unwrap();
    let n = j.ranks;
    let ranks = n.to_string();
    // One rank runs `@step` (the module has no rank graphs then), more run `@step.rR`.
    let mut args = ranks::jacobi_run(dir, j, field, "out");
    args.extend(["--ranks".to_string(), ranks]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.insert(0, module.to_str().unwrap());
    let o = cmdgraph(&args);
    assert!(o.status.success(), "{}", text(&o));
    let at = |what: &str, r: u32| dir.join(format!("{what}{n}.{r}.bin"));
    let mut rows = Vec::new();
    let mut errs = Vec::new();
    for r in 0..n {
        rows.extend_from_slice(j.owned(&floats(&at("out", r))));
        errs.extend(floats(&at("outerr", r)));
    }
    (rows, errs, text(&o))
}

/// The interpreter's multi-rank simulation of the same problem.
fn on_interp(j: &Jacobi, field: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let module = cmdgraph_ir::text::parse(&j.module()).unwrap();
    let sim = Simulation {
        module: &module,
        graph: "step",
        size: j.ranks,
        runs: 25,
        options: RunOptions::default(),
        timeout: Duration::from_secs(60),
    };
    let setup = |rank: u32, i: &mut Interpreter| i.bind_as("u", &j.initial(field, rank));
    let mut rows = Vec::new();
    let mut errs = Vec::new();
    for r in simulate(&sim, &setup) {
        let i = r.unwrap();
        rows.extend_from_slice(j.owned(&i.read_as::<f32>("u").unwrap()));
        errs.push(f32::from_bits(i.read_as::<u32>("err").unwrap()[0]));
    }
    (rows, errs)
}

fn close(a: &[f32], b: &[f32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| (*x - *y).abs() > 1e-5 * x.abs().max(1.0)).count()
}

#[test]
fn halo_exchange_on_two_and_three_ranks_matches_the_simulation_and_one_rank_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let field = random_f32(11, 48 * 40);
    let (one, one_err, _) = on_vulkan(dir.path(), &Jacobi { h: 48, w: 40, ranks: 1 }, &field);
    for n in [2, 3] {
        let j = Jacobi { h: 48, w: 40, ranks: n };
        let (rows, errs, out) = on_vulkan(dir.path(), &j, &field);
        assert!(out.contains(&format!("rank {}: graph @step.r{}", n - 1, n - 1)), "{out}");
        let (want, want_errs) = on_interp(&j, &field);
        assert_eq!(close(&rows, &want), 0, "{n} ranks against the simulation");
        assert_eq!(close(&errs, &want_errs), 0, "{n} ranks' residuals against the simulation: {errs:?} {want_errs:?}");
        let differ = rows.iter().zip(&one).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        assert_eq!(differ, 0, "{n} ranks on Vulkan against one rank on Vulkan");
        assert!(errs.iter().all(|e| e.to_bits() == one_err[0].to_bits()), "{errs:?} vs {one_err:?}");
    }
}

#[test]
fn ranks_that_wait_on_each_other_fail_at_once_naming_the_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.cgir");
    std::fs::write(
        &path,
        "usm @x : f32[4]\n\
         graph @g.r0 {\n  %r = recv @x, 16 from(1) tag(0)\n  %s = send @x, 16 to(1) tag(0) after(%r)\n}\n\
         graph @g.r1 {\n  %r = recv @x, 16 from(0) tag(0)\n  %s = send @x, 16 to(0) tag(0) after(%r)\n}\n",
    )
    .unwrap();
    let start = Instant::now();
    let o = cmdgraph(&[path.to_str().unwrap(), "--ranks", "2", "--timeout", "60"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(start.elapsed() < Duration::from_secs(50), "ended at once, not at the deadline");
    assert!(t.contains("every rank is waiting") && t.contains("rank 0 at %r receives from rank 1 with tag 0"), "{t}");
    assert!(!dir.path().join("x.0.bin").exists());
}

#[test]
fn mpi_without_the_feature_and_ranks_without_rank_graphs_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sum.cgir");
    std::fs::write(&path, comm_support::allreduce_module(8)).unwrap();
    // One graph every rank runs alike: all-reduces only.
    let o = cmdgraph(&[path.to_str().unwrap(), "--ranks", "3", "--validation"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(text(&o).matches("graph @sum").count(), 3, "{}", text(&o));
    if !cfg!(feature = "mpi") {
        let o = cmdgraph(&[path.to_str().unwrap(), "--mpi"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(text(&o).contains("built without MPI") && text(&o).contains("--features mpi"), "{}", text(&o));
    }
}

#[test]
fn a_graph_split_by_compile_ranks_runs_as_two_ranks_as_it_ran_in_one_process() {
    ranks::split_against_one_process(&|args| {
        Command::new(env!("CARGO_BIN_EXE_cmdgraph")).arg("run").args(args).args(["--ranks", "2"]).output().unwrap()
    });
}
