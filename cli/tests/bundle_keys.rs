//! AOT for API users (issue 19, item 2, first half): a graph built with the SYCL API
//! exports its module (`ExecutableGraph::export_module`, or `CMDGRAPH_EXPORT_DIR` at
//! finalize) under its structural key; `cmdgraph compile --bundle-dir DIR` writes the bundle
//! under the same key; that bundle runs on Vulkan (llvmpipe in CI, validation on) and gives
//! the bytes the API's own run gives.

#[path = "../../sycl/tests/common/mod.rs"]
mod common;

use cmdgraph_sycl::*;
use common::Env;
use std::process::Command;

/// Full-precision floats from a xorshift generator.
fn random(n: usize, mut seed: u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0
        })
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn cmdgraph(args: &[&str]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(args).output().unwrap();
    assert!(o.status.success(), "cmdgraph {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

#[test]
fn an_exported_graph_compiles_under_its_key_and_runs_the_same_on_vulkan() {
    let env = Env::new();
    let (x0, y0) = (random(1000, 0x9e37_79b9_7f4a_7c15), random(1000, 0x2545_f491_4f6c_dd1d));
    let x = env.usm_f32(&x0);
    let y = env.usm_f32(&y0);
    let out = env.usm_f32(&[0.0; 1000]);
    let graph = env.graph(GraphProps::none());
    let (scale, add) = (env.kernel("scale"), env.kernel("add"));
    let a = graph.add(|h| h.parallel_for(&scale, 1000, args![&x, &out, 0.737_512_3f32]), NodeProps::none()).unwrap();
    graph.add(|h| h.parallel_for(&add, 1000, args![&y, &out]), NodeProps::depends_on(&[&a])).unwrap();
    let exec = graph.finalize(FinalizeProps::default()).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let key = exec.bundle_key();
    let exported = exec.export_module(dir.path()).unwrap();
    assert_eq!(exported, dir.path().join(format!("{key}.cgir")));

    let bundles = dir.path().join("bundles");
    cmdgraph(&["compile", exported.to_str().unwrap(), "--bundle-dir", bundles.to_str().unwrap()]);
    let bundle = bundles.join(format!("{key}.cgb"));
    assert!(bundle.is_file(), "no bundle under the key {key}: {:?}", std::fs::read_dir(&bundles).unwrap().count());

    // The API's run (the interpreter today) and the bundle's run on Vulkan, same inputs.
    let q = env.queue(QueueProps::none());
    q.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    let want = bytes(&out.read::<f32>().unwrap());
    let (xf, yf, of) = (dir.path().join("x.bin"), dir.path().join("y.bin"), dir.path().join("out.bin"));
    std::fs::write(&xf, bytes(&x0)).unwrap();
    std::fs::write(&yf, bytes(&y0)).unwrap();
    let arg = |name: &str, path: &std::path::Path| format!("{name}={}", path.display());
    cmdgraph(&[
        "run",
        bundle.to_str().unwrap(),
        "--validation",
        "--input",
        &arg(x.name(), &xf),
        "--input",
        &arg(y.name(), &yf),
        "--output",
        &arg(out.name(), &of),
    ]);
    let got = std::fs::read(&of).unwrap();
    assert_eq!(got, want, "the bundle found by key computes what the API's graph computes");
    assert_ne!(want, vec![0; 4000], "the graph wrote its output");
}

#[test]
fn a_different_graph_gets_a_different_key() {
    let env = Env::new();
    let x = env.usm_f32(&[1.0; 16]);
    let out = env.usm_f32(&[0.0; 16]);
    let scale = env.kernel("scale");
    let key = |s: f32, updatable: bool| {
        let graph = env.graph(GraphProps::none());
        graph.add(|h| h.parallel_for(&scale, 16, args![&x, &out, s]), NodeProps::none()).unwrap();
        let props = if updatable { FinalizeProps::updatable() } else { FinalizeProps::default() };
        graph.finalize(props).unwrap().bundle_key()
    };
    let base = key(2.0, false);
    assert_eq!(key(2.0, false), base, "the same construction gives the same key");
    assert_ne!(key(3.0, false), base, "an argument is part of the key");
    assert_ne!(key(2.0, true), base, "a finalize property is part of the key");
}

#[test]
fn the_export_directory_variable_exports_at_every_finalize() {
    let env = Env::new();
    let x = env.usm_f32(&[1.5; 8]);
    let out = env.usm_f32(&[0.0; 8]);
    let scale = env.kernel("scale");
    let graph = env.graph(GraphProps::none());
    graph.add(|h| h.parallel_for(&scale, 8, args![&x, &out, 2.5f32]), NodeProps::none()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // std's environment lock orders this against the other tests' reads of the variable;
    // they may export into this directory too, which the assertion below allows.
    std::env::set_var(EXPORT_DIR_VAR, dir.path());
    let exec = graph.finalize(FinalizeProps::default());
    std::env::remove_var(EXPORT_DIR_VAR);
    let key = exec.unwrap().bundle_key();
    let text = std::fs::read_to_string(dir.path().join(format!("{key}.cgir"))).unwrap();
    assert!(text.contains("kernel @scale"), "{text}");
    // Exactly the module: it parses, verifies and has the key it is stored under.
    let module = cmdgraph_ir::text::parse(&text).unwrap();
    assert_eq!(cmdgraph_ir::bundle::key::graph_key(&module), key);
    // An export that cannot be written fails the finalize, naming the path.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    std::env::set_var(EXPORT_DIR_VAR, &file);
    let err = graph.finalize(FinalizeProps::default()).unwrap_err().to_string();
    std::env::remove_var(EXPORT_DIR_VAR);
    assert!(err.contains("export_module") && err.contains("a-file"), "{err}");
}

/// The whole AOT loop through the API: finalize once and export, compile the export into a
/// bundle directory, then a context that runs from bundles finalizes the same graph, finds
/// the bundle by key and runs it on the default Vulkan device; memory ends as on the
/// interpreter.
#[test]
fn a_context_running_from_bundles_finds_the_bundle_at_finalize_and_runs_it_on_vulkan() {
    let env = Env::new();
    let (x0, y0) = (random(512, 0x51_7cc1_b727_220a), random(512, 0x94d0_49bb_1331_11eb));
    let x = env.usm_f32(&x0);
    let y = env.usm_f32(&y0);
    let out = env.usm_f32(&[0.0; 512]);
    let graph = env.graph(GraphProps::none());
    let (scale, add) = (env.kernel("scale"), env.kernel("add"));
    let a = graph.add(|h| h.parallel_for(&scale, 512, args![&x, &out, -0.318_731_4f32]), NodeProps::none()).unwrap();
    graph.add(|h| h.parallel_for(&add, 512, args![&y, &out]), NodeProps::depends_on(&[&a])).unwrap();

    let on_interp = graph.finalize(FinalizeProps::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let exported = on_interp.export_module(dir.path()).unwrap();
    let bundles = dir.path().join("bundles");
    let q = env.queue(QueueProps::none());
    q.ext_oneapi_graph(&on_interp, &[]).unwrap().wait().unwrap();
    assert_eq!(on_interp.runtime().as_deref(), Some("reference interpreter"));
    let want = out.read::<f32>().unwrap();

    // No bundle yet: finalize says which one is missing and how to make it.
    env.ctx.run_from_bundles(BundleSource { dir: bundles.clone(), validation: true });
    let err = graph.finalize(FinalizeProps::default()).unwrap_err().to_string();
    let key = on_interp.bundle_key();
    for part in [key.as_str(), "cmdgraph compile", "--bundle-dir", "CMDGRAPH_EXPORT_DIR"] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }

    cmdgraph(&["compile", exported.to_str().unwrap(), "--bundle-dir", bundles.to_str().unwrap()]);
    out.write(&[0.0f32; 512]).unwrap();
    let on_device = graph.finalize(FinalizeProps::default()).unwrap();
    assert_eq!(on_device.bundle_key(), key);
    q.ext_oneapi_graph(&on_device, &[]).unwrap().wait().unwrap();
    let runtime = on_device.runtime().unwrap();
    assert!(runtime.ends_with("(Vulkan)"), "{runtime}");
    assert_eq!(out.read::<f32>().unwrap(), want, "the bundle on {runtime} computes what the interpreter computes");
}

/// A context given a compiler at run time (`compile_missing_bundles_with`, how the Python
/// package compiles without the `jit` feature) compiles a missing bundle at finalize, writes
/// it under its key for later runs, and runs it on Vulkan with the interpreter's result; a
/// compiler that fails fails the finalize with its message and writes nothing.
#[test]
fn a_compiler_set_at_run_time_makes_the_missing_bundle_at_finalize() {
    let env = Env::new();
    let x0 = random(256, 0x2545_f491_4f6c_dd1d);
    let x = env.usm_f32(&x0);
    let out = env.usm_f32(&[0.0; 256]);
    let graph = env.graph(GraphProps::none());
    let scale = env.kernel("scale");
    graph.add(|h| h.parallel_for(&scale, 256, args![&x, &out, 0.731_904_6f32]), NodeProps::none()).unwrap();
    let q = env.queue(QueueProps::none());
    let on_interp = graph.finalize(FinalizeProps::default()).unwrap();
    q.ext_oneapi_graph(&on_interp, &[]).unwrap().wait().unwrap();
    let want = out.read::<f32>().unwrap();
    let key = on_interp.bundle_key();

    let dir = tempfile::tempdir().unwrap();
    env.ctx.run_from_bundles(BundleSource { dir: dir.path().to_path_buf(), validation: true });
    env.ctx.compile_missing_bundles_with(std::rc::Rc::new(|_: &cmdgraph_ir::Module| Err("no compiler here".into())));
    let err = graph.finalize(FinalizeProps::default()).unwrap_err().to_string();
    assert!(err.contains("no compiler here") && err.contains(&key), "{err}");
    assert!(!dir.path().join(format!("{key}.cgb")).exists(), "a failed compile writes nothing");

    env.ctx.compile_missing_bundles_with(std::rc::Rc::new(|module: &cmdgraph_ir::Module| {
        let passes = cmdgraph_passes::default_pipeline();
        let options = cmdgraph_codegen::Options::default();
        let (bundle, _) =
            cmdgraph_codegen::bundle::compile_module(module, &passes, &options, &cmdgraph_codegen::bundle::Llvm)
                .map_err(|e| e.to_string())?;
        bundle.to_bytes().map_err(|e| e.to_string())
    }));
    out.write(&[0.0f32; 256]).unwrap();
    let on_device = graph.finalize(FinalizeProps::default()).unwrap();
    assert!(dir.path().join(format!("{key}.cgb")).is_file(), "the bundle is kept under its key");
    q.ext_oneapi_graph(&on_device, &[]).unwrap().wait().unwrap();
    let runtime = on_device.runtime().unwrap();
    assert!(runtime.ends_with("(Vulkan)"), "{runtime}");
    assert_eq!(out.read::<f32>().unwrap(), want);
}
