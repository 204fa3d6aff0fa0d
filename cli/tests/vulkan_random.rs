//! Random graphs (support/gen.rs) run on Vulkan with validation on and on the reference
//! interpreter, optimized (default pipeline) and unoptimized (no pass): every user memory
//! object is identical after each of two runs of every graph. Each graph is also run on the
//! interpreter ordered only by the barriers the executor recorded (support::as_recorded)
//! with the race detector on: no two commands touching the same bytes, one writing, may be
//! left unordered (dropping the kernel-to-kernel barriers fails it on the first seeds). CI runs 10^3 graphs;
//! `CMDGRAPH_RANDOM_GRAPHS=N` runs N (and `CMDGRAPH_RANDOM_SEED` moves the seeds);
//! `CMDGRAPH_RANDOM_DUMP=DIR` writes each failing module there.

mod support;

use std::time::Instant;
use support::{compile, gen, Both};

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
    for m in 0..total.div_ceil(PER_MODULE) {
        let seed = base.wrapping_mul(1 << 20).wrapping_add(m as u64);
        let count = PER_MODULE.min(total - m * PER_MODULE);
        let text = gen::module(seed, count);
        let module = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("seed {seed}: {d:?}\n{text}"));
        if let Err(d) = cmdgraph_ir::verify::verify(&module) {
            let rendered: Vec<String> = d.iter().map(|d| d.render("random.cgir", &text)).collect();
            panic!("seed {seed}: generated module does not verify:\n{}\n{text}", rendered.join("\n"));
        }
        for pipeline in [None, Some("")] {
            let what = format!("seed {seed} ({})", if pipeline.is_none() { "default pipeline" } else { "no pass" });
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
                for (_, g) in module.graphs.iter() {
                    both.run(&g.name, 2)?;
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
    eprintln!("fma: {} memory objects matched rounding once only, {} twice only, {} either", fma[0], fma[1], fma[2]);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(graphs, 2 * total);
    // One device rounds fma one way.
    assert!(fma[0] == 0 || fma[1] == 0, "fma rounded once for {} objects and twice for {}", fma[0], fma[1]);
    // The relaxation under test fires: random graphs keep many orderings no conflict needs.
    assert!(
        conflict_barriers < stage_barriers,
        "{conflict_barriers} barriers where memory conflicts, {stage_barriers} stage boundaries"
    );
}
