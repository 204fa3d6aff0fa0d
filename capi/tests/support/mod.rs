//! Test support: bundles compiled as `cmdgraph compile` does, the examples' inputs, and the
//! reference interpreter's run of examples/capi/capi_demo.cgir.
#![allow(dead_code)]

use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::Options;
use cmdgraph_interp::Interpreter;
use cmdgraph_ir::graph::{ArgValue, MemRef, Pointer};
use cmdgraph_ir::host::{HostError, HostMemory};
use cmdgraph_ir::runtime::Runtime;
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `text` compiled with the default pipeline to bundle bytes.
pub fn compile(text: &str) -> Vec<u8> {
    let module = cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("parse: {d:?}"));
    let (bundle, _) = compile_module(&module, &cmdgraph_passes::default_pipeline(), &Options::default(), &Llvm)
        .unwrap_or_else(|e| panic!("compile: {e}"));
    bundle.to_bytes().expect("bundle bytes")
}

/// examples/capi/capi_demo.cgir's text.
pub fn demo_text() -> String {
    std::fs::read_to_string(root().join("examples/capi/capi_demo.cgir")).expect("examples/capi/capi_demo.cgir")
}

/// Floats k / 2^23 - 1 in [-1, 1) from the examples' 32-bit LCG.
pub fn random_floats(seed: u32, n: usize) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / 8_388_608.0 - 1.0
        })
        .collect()
}

/// Little-endian bytes of `values`.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// What the examples' host task "stats" computes (run_graph.c's `stats`), `calls` counting
/// its calls.
pub fn stats(m: &mut dyn HostMemory, tag: u32, calls: &mut u32) -> Result<(), HostError> {
    let size = m.size("@act")?;
    let bytes = m.read_bytes("@act", 0, size)?;
    let act: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let (mut positives, mut hi, mut lo) = (0u32, act[0], act[0]);
    for &v in &act {
        positives += u32::from(v > 0.0);
        if v > hi {
            hi = v;
        }
        if v < lo {
            lo = v;
        }
    }
    *calls += 1;
    let out: Vec<u8> =
        [positives, hi.to_bits(), lo.to_bits(), tag + *calls].iter().flat_map(|v| v.to_le_bytes()).collect();
    m.write("@stats", 0, &out)
}

/// Every user memory object after each of the examples' two runs, on the reference
/// interpreter: (run, name) → bytes.
pub fn demo_reference() -> BTreeMap<(u32, String), Vec<u8>> {
    let module = cmdgraph_ir::text::parse(&demo_text()).expect("demo parses");
    let mut interp = Interpreter::new(&module).expect("interpreter");
    let it: &mut dyn Runtime = &mut interp;
    it.bind("in", &f32_bytes(&random_floats(1, 1024))).expect("bind");
    it.bind("in_alt", &f32_bytes(&random_floats(2, 1024))).expect("bind");
    it.bind("y", &f32_bytes(&random_floats(3, 1024))).expect("bind");
    let mut calls = 0;
    it.register_host_task("stats", Box::new(move |m: &mut dyn HostMemory| stats(m, 1000, &mut calls)));
    let exec = it.finalize("demo").expect("finalize");
    let names: Vec<String> = module.memories.iter().map(|(_, m)| m.name.clone()).collect();
    let mut out = BTreeMap::new();
    let mut snapshot = |it: &mut dyn Runtime, run: u32| {
        for n in &names {
            out.insert((run, n.clone()), it.read(n).expect("read"));
        }
    };
    it.submit(exec).expect("run 1");
    it.wait(exec).expect("wait 1");
    snapshot(it, 1);
    let f32_lit =
        |v: f32| ArgValue::Scalar(Literal { value: LitValue::Float(f64::from(v)), ty: Some(ScalarType::F32) });
    it.update_param(exec, "alpha", f32_lit(-0.75)).expect("alpha");
    it.update_param(exec, "slope", f32_lit(0.3)).expect("slope");
    let alt = module.memory_by_name("in_alt").expect("@in_alt");
    it.update_param(exec, "src", ArgValue::Pointer(Pointer { base: MemRef::Memory(alt), offset: 0 })).expect("src");
    it.set_active(exec, "activation", 1).expect("activation");
    it.update_param(exec, "gain", ArgValue::Bytes(0.5f32.to_le_bytes().to_vec())).expect("gain");
    it.submit(exec).expect("run 2");
    it.wait(exec).expect("wait 2");
    snapshot(it, 2);
    out
}

/// Parses the examples' output ("run<N> <name> <hex>" lines).
pub fn parse_output(text: &str) -> BTreeMap<(u32, String), Vec<u8>> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        let (Some(run), Some(name), Some(hex), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            panic!("malformed output line {line:?}");
        };
        let run: u32 =
            run.strip_prefix("run").and_then(|r| r.parse().ok()).unwrap_or_else(|| panic!("run in {line:?}"));
        assert!(hex.len() % 2 == 0, "odd hex length in {line:?}");
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or_else(|_| panic!("hex in {line:?}")))
            .collect();
        out.insert((run, name.to_string()), bytes);
    }
    out
}
