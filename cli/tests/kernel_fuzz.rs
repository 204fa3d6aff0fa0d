//! The differential kernel fuzzer (issue 16 item 2; docs/reliability.md, "Kernel fuzzer"):
//! random well-typed kernels (support/fuzz/gen.rs: nested `if`/`for` with carried values,
//! guarded and computed indices, work-group memory and barriers, atomics, integer and float
//! arithmetic, vectors, casts), batched into modules, each compiled at -O0 to -O3 (every
//! SPIR-V module passes spirv-val in codegen), run on Vulkan with validation on and on the
//! reference interpreter with the same full-precision inputs, every output compared.
//!
//! `CMDGRAPH_FUZZ_KERNELS=N` runs N kernels (default [`DEFAULT_KERNELS`]),
//! `CMDGRAPH_FUZZ_SEED=S` moves the seeds, `CMDGRAPH_FUZZ_ONLY=I` runs kernel I alone (a
//! failure prints its index, the -O level and the kernel's module text),
//! `CMDGRAPH_FUZZ_BATCH=B` sets the kernels per module.

mod support;

use std::time::Instant;
use support::fuzz::{self, gen::GenOptions, Config, Stats};

/// Kernels per CI run (4 compilations each).
const DEFAULT_KERNELS: u64 = 300;
/// Kernels per module: one compilation and one Vulkan device per module and level.
const DEFAULT_BATCH: usize = 25;

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn random_kernels_match_the_interpreter_on_vulkan_at_every_opt_level() {
    let cfg = Config {
        base_seed: env("CMDGRAPH_FUZZ_SEED").unwrap_or(0),
        gen: GenOptions {
            fma_exact: true,
            implicit_zero: std::env::var("CMDGRAPH_FUZZ_EXPLICIT_ZERO").is_err(),
            loop_atomics: std::env::var("CMDGRAPH_FUZZ_LOOP_ATOMICS").is_ok(),
        },
    };
    let indices: Vec<u64> = match env("CMDGRAPH_FUZZ_ONLY") {
        Some(i) => vec![i],
        None => (0..env("CMDGRAPH_FUZZ_KERNELS").unwrap_or(DEFAULT_KERNELS)).collect(),
    };
    let batch = env("CMDGRAPH_FUZZ_BATCH").map_or(DEFAULT_BATCH, |b| b as usize);
    if std::env::var("CMDGRAPH_FUZZ_PRINT").is_ok() {
        for &i in &indices {
            let seed = fuzz::kernel_seed(cfg.base_seed, i);
            let k = fuzz::gen::kernel(seed, &format!("k{i}"), cfg.gen);
            let e = fuzz::Entry { index: i, seed, kernel: k };
            println!("{}", e.module_text());
        }
    }
    let start = Instant::now();
    let mut stats = Stats::default();
    fuzz::run(&cfg, &indices, batch, &mut stats);
    let total = start.elapsed();
    eprintln!(
        "{} kernels in {} modules, seed {}: {} module compilations, {} kernel runs matched, {} failures, in {:.1?} \
         ({:.2} kernels/s; generate {:.1?}, interpreter {:.1?}, compile -O0..-O3 {:.1?}, Vulkan {:.1?})",
        stats.kernels,
        stats.modules,
        cfg.base_seed,
        stats.compiled,
        stats.compared,
        stats.failures.len(),
        total,
        stats.kernels as f64 / total.as_secs_f64(),
        stats.gen_time,
        stats.interp_time,
        stats.compile_time,
        stats.vulkan_time
    );
    eprintln!("kernel runs with fma matching only one rounding rule: {:?}", stats.fma_rules);
    eprintln!("feature: kernels with it, occurrences");
    for (f, (k, n)) in &stats.features {
        eprintln!("  {f}: {k}, {n}");
    }
    for f in &stats.failures {
        let first = f.to_string();
        eprintln!("FAIL {}", first.lines().next().unwrap_or(""));
    }
    if let Ok(dir) = std::env::var("CMDGRAPH_FUZZ_DUMP") {
        for f in &stats.failures {
            let level = f.opt.map(|o| format!("-O{o}")).unwrap_or_default();
            let _ = std::fs::write(format!("{dir}/k{}{level}.cgir", f.index), format!("// {}\n{}", f.message, f.text));
        }
    }
    let shown: Vec<String> = stats.failures.iter().take(10).map(|f| f.to_string()).collect();
    assert!(stats.failures.is_empty(), "{} failures (first 10):\n{}", stats.failures.len(), shown.join("\n"));
}
