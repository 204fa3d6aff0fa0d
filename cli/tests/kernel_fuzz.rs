//! The differential kernel fuzzer (issue 16 item 2; docs/reliability.md, "Kernel fuzzer"):
//! random well-typed kernels (support/fuzz/gen.rs: nested `if`/`for`/`loop` with carried values,
//! guarded and computed indices, work-group memory and barriers, atomics, integer and float
//! arithmetic, vectors, casts), batched into modules, each compiled at -O0 to -O3 (every
//! SPIR-V module passes spirv-val in codegen), run on Vulkan with validation on and on the
//! reference interpreter with the same full-precision inputs, every output compared.
//!
//! `CMDGRAPH_FUZZ_KERNELS=N` runs N kernels (default [`DEFAULT_KERNELS`]),
//! `CMDGRAPH_FUZZ_SEED=S` moves the seeds, `CMDGRAPH_FUZZ_ONLY=I` runs kernel I alone (a
//! failure prints its index, the -O level and the kernel's module text),
//! `CMDGRAPH_FUZZ_BATCH=B` sets the kernels per module. `CMDGRAPH_FUZZ_ONLY` takes a list
//! (`541,1027`). `CMDGRAPH_FUZZ_REDUCE=1` reduces every failing kernel (support/fuzz/reduce.rs)
//! and prints it (and writes `DIR/kI-On.reduced.cgir` with `CMDGRAPH_FUZZ_DUMP=DIR`).
//! `CMDGRAPH_FUZZ_EXPORT=DIR` compiles and writes every batch for another machine instead
//! of running it, and `CMDGRAPH_FUZZ_IMPORT=DIR` compares what that machine wrote back
//! (support/fuzz/remote.rs, scripts/gpu-fuzz.sh).

mod support;

use std::path::PathBuf;
use std::time::Instant;
use support::fuzz::{self, gen::GenOptions, Config, Device, Stats};

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
            loop_atomics: false,
            llvmpipe_safe: false,
        },
    };
    let indices: Vec<u64> = match std::env::var("CMDGRAPH_FUZZ_ONLY") {
        Ok(list) => list
            .split(',')
            .map(|i| i.trim().parse().unwrap_or_else(|_| panic!("CMDGRAPH_FUZZ_ONLY: `{i}` is not a kernel index")))
            .collect(),
        Err(_) => (0..env("CMDGRAPH_FUZZ_KERNELS").unwrap_or(DEFAULT_KERNELS)).collect(),
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
    let export = std::env::var_os("CMDGRAPH_FUZZ_EXPORT").map(PathBuf::from);
    let import = std::env::var_os("CMDGRAPH_FUZZ_IMPORT").map(PathBuf::from);
    let device = match (&export, &import) {
        (Some(dir), None) => Device::Export(dir),
        (None, Some(dir)) => Device::Import(dir),
        (None, None) => Device::Local,
        (Some(_), Some(_)) => {
            panic!("CMDGRAPH_FUZZ_EXPORT and CMDGRAPH_FUZZ_IMPORT are two halves of one run: set one")
        }
    };
    // Kernels run here on llvmpipe keep out the two folds it gets wrong (GenOptions::
    // llvmpipe_safe); exported kernels run elsewhere and keep them. CMDGRAPH_FUZZ_LLVMPIPE_SAFE
    // (0 or 1) overrides, for an import, which must generate what its export did.
    // Atomics in loops likewise (llvmpipe drops a loop's last atomics; the H200 runs them
    // right): CMDGRAPH_FUZZ_LOOP_ATOMICS (0 or 1) overrides.
    let mut cfg = cfg;
    let on_llvmpipe = matches!(device, Device::Local) && default_device_is_llvmpipe();
    cfg.gen.llvmpipe_safe = env("CMDGRAPH_FUZZ_LLVMPIPE_SAFE").map_or(on_llvmpipe, |v| v != 0);
    cfg.gen.loop_atomics = env("CMDGRAPH_FUZZ_LOOP_ATOMICS").map_or(!on_llvmpipe, |v| v != 0);
    eprintln!("generator: {:?}", cfg.gen);
    let start = Instant::now();
    let mut stats = Stats::default();
    fuzz::run(&cfg, &indices, batch, device, &mut stats);
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
    eprintln!("kernel runs matching only with f32 subnormals flushed: {}", stats.flushed);
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
    if std::env::var("CMDGRAPH_FUZZ_REDUCE").is_ok() {
        reduce_failures(&cfg, &indices, batch, &stats);
    }
    let shown: Vec<String> = stats.failures.iter().take(10).map(|f| f.to_string()).collect();
    assert!(stats.failures.is_empty(), "{} failures (first 10):\n{}", stats.failures.len(), shown.join("\n"));
}

/// Whether the device the executor picks by default is Mesa's llvmpipe.
fn default_device_is_llvmpipe() -> bool {
    let devices = cmdgraph_executor::vulkan_devices().unwrap_or_default();
    let default = devices.iter().min_by_key(|d| (d.kind, d.index));
    default.is_some_and(|d| d.name.contains("llvmpipe"))
}

/// Reduces each failing kernel at the lowest level it fails at, on this machine's device.
fn reduce_failures(cfg: &Config, indices: &[u64], per_module: usize, stats: &Stats) {
    let make = |index: u64| {
        let seed = fuzz::kernel_seed(cfg.base_seed, index);
        fuzz::Entry { index, seed, kernel: fuzz::gen::kernel(seed, &format!("k{index}"), cfg.gen) }
    };
    let mut seen = std::collections::BTreeSet::new();
    for f in &stats.failures {
        let Some(opt) = f.opt else { continue };
        if !seen.insert(f.index) {
            continue;
        }
        let failing: Vec<u8> = stats.failures.iter().filter(|g| g.index == f.index).filter_map(|g| g.opt).collect();
        let passes: Vec<u8> = (0..4).filter(|o| !failing.contains(o)).collect();
        // The batch it ran in, as `fuzz::run` cut the indices, for its memory's bytes.
        let chunk = indices.chunks(per_module.max(1)).find(|c| c.contains(&f.index)).unwrap_or(&[]);
        let batch: Vec<fuzz::Entry> = chunk.iter().map(|&i| make(i)).collect();
        let memory = fuzz::batch_memory(&batch);
        let entry = make(f.index);
        let t = Instant::now();
        let (reduced, tried) = fuzz::reduce::reduce(&entry, &memory, opt, &f.message, &passes);
        let text = reduced.module_text();
        eprintln!(
            "REDUCED kernel #{} at -O{opt} (passes at {passes:?}): {} -> {} lines, {tried} candidates in {:.1?}\n{text}",
            f.index,
            entry.kernel.text.lines().count(),
            reduced.kernel.text.lines().count(),
            t.elapsed()
        );
        if let Ok(dir) = std::env::var("CMDGRAPH_FUZZ_DUMP") {
            let _ =
                std::fs::write(format!("{dir}/k{}-O{opt}.reduced.cgir", f.index), format!("// {}\n{text}", f.message));
        }
    }
}

/// The reducer cuts a kernel down to what a property needs, and no further: here the
/// property is the interpreter's, so the test needs no device ("the kernel changes its
/// first output object"); the result keeps the property, is much smaller, and losing any
/// one more line loses it (the reducer's fixed point is 1-minimal).
#[test]
fn the_reducer_keeps_the_property_and_is_one_minimal() {
    let gen = GenOptions { fma_exact: true, implicit_zero: true, loop_atomics: false, llvmpipe_safe: false };
    let mut reduced_some = 0;
    for index in 0..6u64 {
        let seed = fuzz::kernel_seed(7, index);
        let entry = fuzz::Entry { index, seed, kernel: fuzz::gen::kernel(seed, &format!("k{index}"), gen) };
        let Some(out) = entry.kernel.params.iter().find(|p| p.role == fuzz::gen::Role::Output) else { continue };
        let object = entry.memory(out);
        let mut stats = Stats::default();
        let holds = |text: &str, stats: &mut Stats| {
            let e = fuzz::Entry {
                index,
                seed,
                kernel: fuzz::gen::Kernel { text: text.to_string(), ..entry.kernel.clone() },
            };
            fuzz::prepare(std::slice::from_ref(&e), stats)
                .ok()
                .and_then(|p| Some(p.expected(&object)? != p.bound(&object)?))
                .unwrap_or(false)
        };
        if !holds(&entry.kernel.text, &mut stats) {
            continue;
        }
        let (text, tried) = fuzz::reduce::reduce_text(&entry.kernel.text, |t| holds(t, &mut stats));
        assert!(holds(&text, &mut stats), "kernel #{index}: the reduced kernel lost the property:\n{text}");
        let (before, after) = (entry.kernel.text.lines().count(), text.lines().count());
        assert!(after < before, "kernel #{index}: nothing removed ({before} lines, {tried} tried)");
        // 1-minimal: no single body line (that is not a block's brace) can go.
        let lines: Vec<&str> = text.lines().collect();
        for i in 1..lines.len() - 1 {
            let t = lines[i].trim();
            if t.ends_with('{') || t.starts_with('}') {
                continue;
            }
            let mut less = lines.clone();
            less.remove(i);
            assert!(!holds(&(less.join("\n") + "\n"), &mut stats), "kernel #{index}: line {i} could still go:\n{text}");
        }
        reduced_some += 1;
        eprintln!("kernel #{index}: {before} -> {after} lines ({tried} candidates)");
    }
    assert!(reduced_some >= 3, "only {reduced_some} generated kernels had an output to reduce on");
}

/// A device that flushes `f32` subnormals (the H200: docs/reliability.md, "On the H200")
/// gives outputs the comparison must accept, as it accepts either `fma` rounding: batches of
/// seed 3 (as the H200 run made them) whose outputs differ between `Denormals::Preserve` and
/// `Denormals::Flush` are "run" by writing the flushed outputs where an import reads them,
/// and the import matches; a flipped bit in them still fails.
#[test]
fn outputs_with_f32_subnormals_flushed_are_accepted() {
    use cmdgraph_interp::{Denormals, FmaRounding};
    let cfg = Config {
        base_seed: 3,
        gen: GenOptions { fma_exact: true, implicit_zero: true, loop_atomics: false, llvmpipe_safe: false },
    };
    let dir = tempfile::tempdir().unwrap();
    let mut found = 0;
    // Kernels up to 8000: since the eleven scalar types of issue 30, fewer batches have an
    // exact `f32` output a flush changes (1 in the first 2000 of seed 3).
    for first in (0..8000u64).step_by(DEFAULT_BATCH) {
        let batch: Vec<fuzz::Entry> = (first..first + DEFAULT_BATCH as u64)
            .map(|index| {
                let seed = fuzz::kernel_seed(cfg.base_seed, index);
                fuzz::Entry { index, seed, kernel: fuzz::gen::kernel(seed, &format!("k{index}"), cfg.gen) }
            })
            .collect();
        let mut stats = Stats::default();
        let p = fuzz::prepare(&batch, &mut stats).unwrap();
        let objects: Vec<String> = p.objects().map(str::to_string).collect();
        let flushed = |name: &str| p.expected_under(FmaRounding::Once, Denormals::Flush, name).unwrap().to_vec();
        // An exact output: an approximate one (`_ax_`, math functions) is compared with a
        // tolerance that accepts either rule, so it shows no flush.
        let exact_differs = |o: &&String| !o.contains("_ax_") && flushed(o) != p.expected(o).unwrap();
        let Some(differs) = objects.iter().find(exact_differs).cloned() else {
            continue;
        };
        // The import layout of support/fuzz/remote.rs, with the flushed outputs as the device's.
        let m = dir.path().join(format!("m{first}"));
        std::fs::create_dir_all(m.join("out-O0")).unwrap();
        std::fs::write(m.join("objects"), objects.join("\n")).unwrap();
        let write = |f: &dyn Fn(&str) -> Vec<u8>| {
            for o in &objects {
                std::fs::write(m.join("out-O0").join(format!("{}.bin", &o[1..])), f(o)).unwrap();
            }
        };
        write(&flushed);
        let got = fuzz::trial(&p, &batch, 0, Device::Import(dir.path()), &mut stats);
        assert!(got.is_ok(), "batch m{first}: flushed outputs rejected: {got:?}");
        assert!(stats.flushed >= 1, "batch m{first}: no kernel counted as matching only when flushed");
        // Not vacuous: one wrong bit where the flushed output differs from the IEEE one fails.
        write(&|o: &str| {
            let mut b = flushed(o);
            if o == differs {
                let i = b.iter().zip(p.expected(o).unwrap()).position(|(x, y)| x != y).unwrap();
                b[i] ^= 0x10;
            }
            b
        });
        assert!(fuzz::trial(&p, &batch, 0, Device::Import(dir.path()), &mut stats).is_err(), "batch m{first}");
        found += 1;
        if found == 3 {
            break;
        }
    }
    assert_eq!(found, 3, "fewer than 3 batches of seed 3 have an output that a subnormal flush changes");
}

/// A kernel cut out of its batch (the reducer runs it alone) starts with the bytes its batch
/// gave its memory objects, not with inputs drawn for it alone, which are other values: a
/// failure that needs the batch's inputs (seed 7 #677) then survives reduction.
#[test]
fn a_kernel_alone_runs_with_its_batch_memory() {
    let gen = GenOptions { fma_exact: true, implicit_zero: true, loop_atomics: false, llvmpipe_safe: false };
    let batch: Vec<fuzz::Entry> = (650..675u64)
        .map(|index| {
            let seed = fuzz::kernel_seed(7, index);
            fuzz::Entry { index, seed, kernel: fuzz::gen::kernel(seed, &format!("k{index}"), gen) }
        })
        .collect();
    let mut stats = Stats::default();
    let whole = fuzz::prepare(&batch, &mut stats).unwrap();
    let memory = fuzz::batch_memory(&batch);
    let mut differ_alone = 0;
    for e in &batch[1..] {
        let one = std::slice::from_ref(e);
        let with = fuzz::prepare_with(one, Some(&memory), &mut stats).unwrap();
        let alone = fuzz::prepare(one, &mut stats).unwrap();
        let objects: Vec<String> = with.objects().map(str::to_string).collect();
        assert!(!objects.is_empty(), "kernel #{}", e.index);
        for o in &objects {
            assert_eq!(with.bound(o), whole.bound(o), "kernel #{} {o}: not the batch's bytes", e.index);
            differ_alone += usize::from(alone.bound(o) != whole.bound(o));
        }
    }
    assert!(differ_alone > 0, "inputs drawn for a kernel alone equal its batch's: the test shows nothing");
}
