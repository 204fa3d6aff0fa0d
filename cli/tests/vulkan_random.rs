//! Random graphs (support/gen.rs) run on Vulkan with validation on and on the reference
//! interpreter, optimized (default pipeline) and unoptimized (only `inline-subgraphs`, which
//! codegen requires of graphs with `subgraph` nodes): every user memory
//! object is identical after each of two runs of every graph. Each graph is also run on the
//! interpreter ordered only by the barriers the executor recorded (support::as_recorded)
//! with the race detector on: no two commands touching the same bytes, one writing, may be
//! left unordered (dropping the kernel-to-kernel barriers fails it on the first seeds). CI runs 10^3 graphs;
//! `CMDGRAPH_RANDOM_GRAPHS=N` runs N (and `CMDGRAPH_RANDOM_SEED` moves the seeds);
//! `CMDGRAPH_RANDOM_DUMP=DIR` writes each failing module there, and
//! `CMDGRAPH_RANDOM_MODULE=FILE` runs that module instead (with `CMDGRAPH_RANDOM_GRAPHS=1`, and
//! `CMDGRAPH_RANDOM_SEED` the seed of its inputs).
//!
//! The generator also makes fusible element-wise chains, `subgraph` nodes and `updatable`
//! graphs with a dynamic scalar and dynamic command groups: between the two runs of such a
//! graph every dynamic scalar gets another value and every group another active
//! alternative, on Vulkan and on the interpreter alike ([`updates`]). The test requires that
//! `fuse-kernels` fused something in at least a fifth of the graphs (default pipeline), that
//! sub-graphs and updates occur in a tenth of them, and that `tile-contractions` ran an
//! epilogue (a matmul into a temporary, then a bias add and element-wise kernels) in a
//! twentieth, so the generator cannot silently stop exercising them.

mod support;

use cmdgraph_executor::{CopyPath, CopyPolicy, Executor, RecordOptions};
use cmdgraph_ir::{ArgValue, LitValue, Literal, Module, NodeKind, ScalarType};
use std::time::Instant;
use support::{compile, gen, Both, Update};

/// The updates made between the two runs of graph `g`: each `f32` dynamic
/// parameter scaled by -1.5 (exact in binary, so no rounding is at stake) and each dynamic
/// command group moved to its next alternative.
fn updates(g: &cmdgraph_ir::Graph) -> Vec<Update> {
    let mut out = Vec::new();
    for (_, p) in g.dyn_params.iter() {
        if let ArgValue::Scalar(Literal { value: LitValue::Float(v), ty: Some(ScalarType::F32) }) = &p.value {
            let value = Literal { value: LitValue::Float(v * -1.5), ty: Some(ScalarType::F32) };
            out.push(Update::Param(p.name.clone(), ArgValue::Scalar(value)));
        }
    }
    for (_, d) in g.dcgs.iter() {
        out.push(Update::Active(d.name.clone(), (d.active + 1) % d.alternatives.len() as u32));
    }
    out
}

/// Graphs of the optimized `module` in which `fuse-kernels` fused a group (a node running
/// a kernel the pass made).
/// Copy nodes of `module`'s graphs that `ex` records with the copy kernel (each graph
/// finalized once more to ask, then dropped).
fn kernel_copy_nodes(ex: &mut Executor, module: &Module) -> Result<usize, String> {
    let mut n = 0;
    for (_, g) in module.graphs.iter() {
        let id = ex.finalize(&g.name).map_err(|e| format!("finalize @{}: {e}", g.name))?;
        let paths = ex.copy_paths(id).map_err(|e| e.to_string())?;
        n += paths.iter().filter(|(_, p)| matches!(p, CopyPath::Kernel { .. } | CopyPath::KernelWithEnds)).count();
        ex.drop_exec(id).map_err(|e| e.to_string())?;
    }
    Ok(n)
}

/// Graphs of `module` with a kernel node whose kernel's name starts with `prefix` (`fused`:
/// made by fuse-kernels; `stages.`: by fuse-stages).
fn graphs_running(module: &Module, prefix: &str) -> usize {
    module
        .graphs
        .iter()
        .filter(|(_, g)| {
            g.nodes.iter().any(|(_, n)| match &n.kind {
                NodeKind::Kernel(k) => module.kernels.try_get(k.kernel).is_some_and(|k| k.name.starts_with(prefix)),
                _ => false,
            })
        })
        .count()
}

/// Graphs of `module` with a tiled contraction that runs an epilogue (its kernel's name says
/// `.then.`).
fn graphs_with_epilogue(module: &Module) -> usize {
    module
        .graphs
        .iter()
        .filter(|(_, g)| {
            g.nodes.iter().any(|(_, n)| match &n.kind {
                NodeKind::Kernel(k) => module
                    .kernels
                    .try_get(k.kernel)
                    .is_some_and(|k| k.name.contains(".tiled.") && k.name.contains(".then.")),
                _ => false,
            })
        })
        .count()
}

/// Graphs per module: one bundle and one executor per module and pipeline.
const PER_MODULE: usize = 25;

#[test]
fn random_graphs_match_the_interpreter_on_vulkan() {
    let total: usize = std::env::var("CMDGRAPH_RANDOM_GRAPHS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let base: u64 = std::env::var("CMDGRAPH_RANDOM_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let start = Instant::now();
    let (mut compile_time, mut run_time) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    let mut graphs = 0;
    let mut failures = Vec::new();
    // Barriers recorded where memory conflicts, and those a barrier per stage boundary takes.
    let (mut conflict_barriers, mut stage_barriers) = (0u64, 0u64);
    // Memory objects by the fma rule they matched (support::Both::fma_matched).
    let mut fma = [0usize; 3];
    // Graphs (default pipeline) with a fused group; source graphs with a `subgraph` node;
    // graphs updated between their runs.
    let (mut fused, mut with_subgraphs, mut updated) = (0usize, 0usize, 0usize);
    // Graphs (default pipeline) with a chain fused into one dispatch by fuse-stages.
    let mut staged = 0usize;
    // Graphs (default pipeline) with a tiled contraction, and with one running an epilogue.
    let (mut tiled, mut epilogues) = (0usize, 0usize);
    // Copy nodes the copy kernel records, over the modules that use it.
    let mut kernel_copies = 0usize;
    for m in 0..total.div_ceil(PER_MODULE) {
        // A saved module runs with `CMDGRAPH_RANDOM_SEED` itself as its seed (its inputs).
        let file = std::env::var("CMDGRAPH_RANDOM_MODULE").ok();
        let seed = if file.is_some() { base } else { base.wrapping_mul(1 << 20).wrapping_add(m as u64) };
        let count = PER_MODULE.min(total - m * PER_MODULE);
        // A saved module (one from `CMDGRAPH_RANDOM_DUMP`, reduced by hand) instead.
        let text = match &file {
            Some(path) => std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}")),
            None => gen::module(seed, count),
        };
        let module = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("seed {seed}: {d:?}\n{text}"));
        if let Err(d) = cmdgraph_ir::verify::verify(&module) {
            let rendered: Vec<String> = d.iter().map(|d| d.render("random.cgir", &text)).collect();
            panic!("seed {seed}: generated module does not verify:\n{}\n{text}", rendered.join("\n"));
        }
        // Every other module records its copies with the copy kernel (which llvmpipe's default,
        // `CopyPolicy::Auto`, leaves to `vkCmdCopyBuffer`), so both paths meet random graphs.
        let copies = if m % 2 == 1 { CopyPolicy::Shader } else { CopyPolicy::Auto };
        // Unoptimized: only the inlining codegen needs (sub-graph nodes are not executable).
        for pipeline in [None, Some("inline-subgraphs")] {
            let what = format!(
                "seed {seed} ({}, copies {copies:?})",
                if pipeline.is_none() { "default pipeline" } else { "inline-subgraphs only" }
            );
            let t = Instant::now();
            let bundle = match compile(&module, pipeline) {
                Ok(b) => b,
                Err(e) => {
                    failures.push(format!("{what}: compile: {e}"));
                    continue;
                }
            };
            compile_time += t.elapsed();
            let t = Instant::now();
            let result = Both::new(&module, &bundle, seed).and_then(|mut both| {
                both.ex.set_record_options(RecordOptions { copies, ..both.ex.record_options() });
                kernel_copies += kernel_copy_nodes(&mut both.ex, &module)?;
                if pipeline.is_none() {
                    fused += graphs_running(both.ex.module(), "fused");
                    staged += graphs_running(both.ex.module(), "stages.");
                    tiled += graphs_running(both.ex.module(), "mm.tiled.");
                    epilogues += graphs_with_epilogue(both.ex.module());
                }
                for (_, g) in module.graphs.iter() {
                    let ups = updates(g);
                    if pipeline.is_none() {
                        updated += usize::from(!ups.is_empty());
                        with_subgraphs +=
                            usize::from(g.nodes.iter().any(|(_, n)| matches!(n.kind, NodeKind::Subgraph { .. })));
                    }
                    both.run_updated(&g.name, 2, &ups)?;
                }
                conflict_barriers += both.barriers.0;
                stage_barriers += both.barriers.1;
                for (total, seen) in fma.iter_mut().zip(both.fma_matched) {
                    *total += seen;
                }
                Ok(())
            });
            run_time += t.elapsed();
            match result {
                Ok(()) => graphs += count,
                Err(e) => {
                    // The failing graph's text, so the failure reproduces by hand.
                    let graph = e
                        .split("of @")
                        .nth(1)
                        .and_then(|r| r.split(':').next())
                        .and_then(|g| text.split(&format!("graph @{g} {{")).nth(1))
                        .and_then(|r| r.split("\n}").next())
                        .unwrap_or("");
                    failures.push(format!("{what}: {e}\n{graph}"));
                    if let Ok(dir) = std::env::var("CMDGRAPH_RANDOM_DUMP") {
                        let _ = std::fs::write(format!("{dir}/random-{seed}.cgir"), &text);
                    }
                }
            }
        }
    }
    eprintln!(
        "{graphs} graph runs matched ({total} graphs x 2 pipelines) in {:.1?}: compile {:.1?}, run and compare {:.1?}",
        start.elapsed(),
        compile_time,
        run_time
    );
    eprintln!(
        "{conflict_barriers} pipeline barriers recorded where memory conflicts, of {stage_barriers} stage boundaries"
    );
    eprintln!("{kernel_copies} memcpy nodes recorded as copy-kernel dispatches (CopyPolicy::Shader modules)");
    eprintln!("fma: {} memory objects matched rounding once only, {} twice only, {} either", fma[0], fma[1], fma[2]);
    eprintln!(
        "{fused} of {total} graphs fused by fuse-kernels, {staged} by fuse-stages, {tiled} with a tiled contraction \
         ({epilogues} with an epilogue), {with_subgraphs} with sub-graphs, {updated} updated between runs"
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    // Shares of a few graphs are noise: checked from 200 generated graphs on.
    if std::env::var("CMDGRAPH_RANDOM_MODULE").is_err() && total >= 200 {
        assert!(fused * 5 >= total, "fuse-kernels fused in only {fused} of {total} graphs");
        assert!(staged * 10 >= total, "fuse-stages fused a chain in only {staged} of {total} graphs");
        assert!(epilogues * 20 >= total, "tile-contractions ran an epilogue in only {epilogues} of {total} graphs");
        assert!(with_subgraphs * 10 >= total, "only {with_subgraphs} of {total} graphs have sub-graphs");
        assert!(updated * 10 >= total, "only {updated} of {total} graphs were updated between runs");
        assert!(kernel_copies * 10 >= total, "only {kernel_copies} copies took the copy kernel in {total} graphs");
    }
    assert_eq!(graphs, 2 * total);
    // One device rounds fma one way.
    assert!(fma[0] == 0 || fma[1] == 0, "fma rounded once for {} objects and twice for {}", fma[0], fma[1]);
    // The relaxation under test fires: random graphs keep many orderings no conflict needs.
    assert!(
        conflict_barriers < stage_barriers,
        "{conflict_barriers} barriers where memory conflicts, {stage_barriers} stage boundaries"
    );
}
