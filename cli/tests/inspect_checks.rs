//! `cmdgraph inspect` checks a bundle exactly as `cmdgraph run` does (issue 18): a damaged
//! field behind a valid content hash (recomputed with the project's own writer, so the checks
//! past the hash are reached) makes both exit 1 with the same message; and the planner's report
//! stored in a bundle is never printed as if it were inspect's own finding.

#[path = "../../executor/tests/common/mod.rs"]
mod common;

use cmdgraph_ir::bundle::Bundle;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

const IR: &str = "
usm @a : f32[256]
usm @out : f32[256]

graph @g {
  %k = kernel @scale range(256) args(@a, @out, 2.0)
}
";

fn cmdgraph(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(args).output().unwrap()
}

/// Writes `b` with the bundle writer (which computes the content hash) to `dir/name`.
fn write(dir: &Path, name: &str, b: &Bundle) -> String {
    let path = dir.join(name);
    std::fs::write(&path, b.to_bytes().unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// The error `cmdgraph run` and `cmdgraph inspect` give for `path`: both exit 1 and print the
/// same message; returns it.
fn both_refuse(path: &str) -> String {
    let run = cmdgraph(&["run", path]);
    let inspect = cmdgraph(&["inspect", path]);
    let (run_err, inspect_err) = (String::from_utf8_lossy(&run.stderr), String::from_utf8_lossy(&inspect.stderr));
    assert_eq!(run.status.code(), Some(1), "run: {run_err}");
    assert_eq!(
        inspect.status.code(),
        Some(1),
        "inspect exit code; stdout:\n{}",
        String::from_utf8_lossy(&inspect.stdout)
    );
    assert_eq!(run_err, inspect_err, "run and inspect disagree");
    assert!(inspect.stdout.is_empty(), "inspect printed a summary of a refused bundle");
    inspect_err.into_owned()
}

#[test]
fn run_and_inspect_refuse_the_same_damaged_fields_with_the_same_message() {
    let dir = tempfile::tempdir().unwrap();
    let good = bundle(&format!("{KERNELS_IR}{IR}"), vec![], vec![]);
    // The undamaged bundle is accepted by inspect (and run would run it: cli/tests/run.rs).
    let ok = write(dir.path(), "ok.cgb", &good);
    let o = cmdgraph(&["inspect", &ok]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // An argument block size that is not a multiple of 4.
    let mut b = good.clone();
    b.kernels[2].layout.block_size = 42;
    let e = both_refuse(&write(dir.path(), "block.cgb", &b));
    assert!(e.contains("inconsistent bundle: kernel @scale: argument block of 42 bytes"), "{e}");

    // A buffer field moved onto the scalar's offset.
    let mut b = good.clone();
    b.kernels[2].layout.fields[0].offset = 3;
    let e = both_refuse(&write(dir.path(), "field.cgb", &b));
    assert!(e.contains("inconsistent bundle: kernel @scale: field 0"), "{e}");

    // SPIR-V whose magic number is gone.
    let mut b = good.clone();
    b.kernels[1].spirv[0] = 0xdead_beef;
    let e = both_refuse(&write(dir.path(), "magic.cgb", &b));
    assert!(e.contains("kernel @ramp: invalid SPIR-V: magic number 0xdeadbeef"), "{e}");

    // Optimized IR that does not verify (a kernel call to a kernel that is not there).
    let mut b = good.clone();
    b.optimized = b.optimized.replace("kernel @scale range", "kernel @nope range");
    let e = both_refuse(&write(dir.path(), "ir.cgb", &b));
    assert!(e.contains("bundle IR is invalid"), "{e}");
}

#[test]
fn the_stored_planner_report_is_labelled_and_the_offsets_are_the_plans() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("m.cgir");
    std::fs::write(
        &src,
        "graph @g {\n  %t = async_malloc f32[64]\n  %f = async_free %t after(%t)\n  \
         %u = async_malloc f32[100] after(%f)\n  %h = async_free %u after(%u)\n}\n",
    )
    .unwrap();
    let compiled = dir.path().join("m.cgb");
    let o = cmdgraph(&["compile", "--passes=", src.to_str().unwrap(), "-o", compiled.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut b = Bundle::from_bytes(&std::fs::read(&compiled).unwrap()).unwrap();
    // A report that contradicts the plan the executor binds (valid hash: the writer's).
    b.graphs[0].memory.report = "memory plan @g: %t at offset 4096, %u at offset 8192\n".into();
    let lying = write(dir.path(), "lying.cgb", &b);
    let o = cmdgraph(&["inspect", "--memory", &lying]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("  memory: pool 768 bytes for 2 allocation(s)")).expect(&out);
    // Computed here: the layout, then the offsets of the plan with the module's sizes.
    assert_eq!(
        lines[at + 1..at + 5],
        [
            "    naive layout (plan-memory was not in the pipeline): offsets the executor binds, sizes from the optimized module",
            "      allocation  offset  size",
            "      %t               0   256",
            "      %u             256   400",
        ],
        "{out}"
    );
    // The bundle's text, only under a label that says whose it is.
    assert_eq!(
        lines[at + 5..at + 7],
        [
            "    report stored in the bundle at compile time (its text as written, not checked):",
            "      | memory plan @g: %t at offset 4096, %u at offset 8192",
        ],
        "{out}"
    );
    assert_eq!(out.matches("4096").count(), 1, "{out}");

    // Another valid layout (in the pool, aligned, the two lifetimes disjoint): shown as the
    // plan it is, not as the naive one.
    b.graphs[0].memory.offsets[0].1 = 512;
    b.graphs[0].memory.offsets[1].1 = 0;
    let moved = write(dir.path(), "moved.cgb", &b);
    let o = cmdgraph(&["inspect", "--memory", &moved]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("    planned layout: offsets the executor binds"), "{out}");
    assert!(out.contains("      %t             512   256\n      %u               0   400\n"), "{out}");
}

/// `run` and `inspect` give one answer on each tampered bundle (issue 28): the checks finalize
/// makes without a device (schedule, pool plan coverage, launch variants) are the loader's,
/// for every graph, so a bundle `run` refused at finalize is refused by `inspect` too, with the
/// same message; and a bundle whose source module is damaged (only updates read it) is
/// accepted by both, where inspect used to refuse it.
#[test]
fn run_and_inspect_agree_on_bundles_run_refused_at_finalize() {
    let dir = tempfile::tempdir().unwrap();
    let compiled = dir.path().join("chain.cgb");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/saxpy_chain.cgir");
    // No fusion: three kernels in three stages and two planned allocations.
    let o = cmdgraph(&["compile", "--passes=plan-memory", example, "-o", compiled.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let good = Bundle::from_bytes(&std::fs::read(&compiled).unwrap()).unwrap();
    let plan = &good.graphs[0];
    assert!(!plan.segments.is_empty() && plan.memory.offsets.len() >= 2, "{:?} {:?}", plan.segments, plan.memory);

    // The schedule names a node the graph does not have.
    let mut b = good.clone();
    if let Some(cmdgraph_ir::bundle::Segment::Device { stages }) = b.graphs[0].segments.first_mut() {
        stages[0][0] = "ghost".into();
    }
    let e = both_refuse(&write(dir.path(), "ghost.cgb", &b));
    assert!(e.contains("inconsistent bundle: schedule names unknown node %ghost"), "{e}");

    // The pool plan leaves one allocation out.
    let mut b = good.clone();
    let dropped = b.graphs[0].memory.offsets.pop().unwrap().0;
    let e = both_refuse(&write(dir.path(), "pool.cgb", &b));
    assert!(e.contains(&format!("inconsistent bundle: pool plan misses %{}", dropped.trim_start_matches('%'))), "{e}");

    // A node moved to a second stage of the same segment before its predecessor.
    let mut b = good.clone();
    if let Some(cmdgraph_ir::bundle::Segment::Device { stages }) = b.graphs[0].segments.first_mut() {
        stages.reverse();
    }
    both_refuse(&write(dir.path(), "order.cgb", &b));

    // A damaged source module: run never reads it without an update, and inspect now says
    // so instead of refusing the bundle.
    let mut b = good.clone();
    b.source = "graph @main {\n  %x = nonsense\n}\n".into();
    let path = write(dir.path(), "source.cgb", &b);
    let run = cmdgraph(&["run", &path]);
    let inspect = cmdgraph(&["inspect", &path]);
    assert!(run.status.success(), "run: {}", String::from_utf8_lossy(&run.stderr));
    assert!(inspect.status.success(), "inspect: {}", String::from_utf8_lossy(&inspect.stderr));
    let shown = String::from_utf8_lossy(&inspect.stdout);
    assert!(shown.contains("source module: not readable"), "{shown}");
}
