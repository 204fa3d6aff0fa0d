//! Malformed, truncated or inconsistent bundles are errors, never panics or driver calls.

mod common;

use cmdgraph_executor::{load, ExecError};
use common::*;

fn text() -> String {
    let ir = format!("{KERNELS_IR}\nusm @x : f32[16]\ngraph @g {{\n  %k = kernel @ramp range(16) args(@x)\n}}\n");
    ron::to_string(&bundle(&ir, vec![], vec![])).unwrap()
}

#[test]
fn a_good_bundle_loads() {
    assert!(load::load_str(&text()).is_ok());
}

#[test]
fn every_truncation_is_an_error() {
    let t = text();
    let mut cut = t.len() - 1;
    while cut > 0 {
        if t.is_char_boundary(cut) {
            assert!(load::load_str(&t[..cut]).is_err(), "truncated at {cut} loaded");
        }
        cut = cut.saturating_sub(97);
    }
}

#[test]
fn version_mismatch_is_reported_as_such() {
    let t = text().replacen("format_version:1", "format_version:99", 1);
    assert_eq!(load::load_str(&t).unwrap_err(), ExecError::Version { found: 99, expected: 1 });
}

#[test]
fn corrupt_spirv_is_rejected_before_the_driver() {
    let ir = format!("{KERNELS_IR}\nusm @x : f32[16]\ngraph @g {{\n  %k = kernel @ramp range(16) args(@x)\n}}\n");
    let good = bundle(&ir, vec![], vec![]);
    type Mutation = Box<dyn Fn(&mut Vec<u32>)>;
    let mutations: Vec<Mutation> = vec![
        Box::new(|w| w.truncate(3)),
        Box::new(|w| w[0] = 0xdeadbeef),
        Box::new(|w| {
            let n = w.len();
            w.truncate(n - 1)
        }),
        Box::new(|w| w[5] &= 0xffff),
        Box::new(|w| w[1] = 0x0002_0000),
    ];
    for (i, m) in mutations.iter().enumerate() {
        let mut b = good.clone();
        m(&mut b.kernels[1].spirv);
        match load::check(b) {
            Err(ExecError::Spirv { kernel, .. }) => assert_eq!(kernel, "ramp"),
            other => panic!("mutation {i}: {other:?}"),
        }
    }
    let mut b = good.clone();
    b.kernels[1].workgroup_size = [32, 1, 1];
    assert!(matches!(load::check(b), Err(ExecError::Spirv { .. })), "LocalSize must match the bundle");
}

#[test]
fn inconsistent_layouts_and_plans_are_rejected() {
    let ir = format!("{KERNELS_IR}\nusm @x : f32[16]\ngraph @g {{\n  %k = kernel @ramp range(16) args(@x)\n}}\n");
    let good = bundle(&ir, vec![], vec![]);
    let mut b = good.clone();
    b.kernels[1].layout.fields[0].offset = 4;
    assert!(matches!(load::check(b), Err(ExecError::Bundle(_))));
    let mut b = good.clone();
    b.kernels[1].layout.block_size = 3;
    assert!(matches!(load::check(b), Err(ExecError::Bundle(_))));
    let mut b = good.clone();
    b.kernels[1].kernel = "nope".into();
    assert!(matches!(load::check(b), Err(ExecError::Bundle(_))));
    let mut b = good.clone();
    b.optimized = "graph @g { %k = bogus }".into();
    assert!(matches!(load::check(b), Err(ExecError::Ir(_))));
}

#[test]
fn random_byte_flips_never_panic() {
    let t = text().into_bytes();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..300 {
        let mut m = t.clone();
        for _ in 0..3 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let i = (state % m.len() as u64) as usize;
            m[i] = (state >> 32) as u8;
        }
        if let Ok(s) = std::str::from_utf8(&m) {
            let _ = load::load_str(s);
        }
    }
}

/// The fuzzer's seeds (`fuzz/seeds/load_bundle`, docs/reliability.md) are valid bundles.
/// `CMDGRAPH_WRITE_FUZZ_SEEDS=1` rewrites them from the bundles these tests build.
#[test]
fn fuzz_seed_bundles_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/load_bundle");
    if std::env::var_os("CMDGRAPH_WRITE_FUZZ_SEEDS").is_some() {
        let graphs = [
            "usm @x : f32[16]\ngraph @g {\n  %k = kernel @ramp range(16) args(@x)\n}\n",
            "usm @x : f32[64]\nusm @y : f32[64]\ngraph @g properties(updatable) {\n  dyn %s = 2.0 : f32\n  %k = kernel @ramp range(64) args(@x)\n  %m = kernel @scale range(64) args(@x, @y, %s) after(%k)\n  %h = host_task \"cb\" access(@y read) after(%m)\n  %c = memcpy @x, @y, 64 after(%h)\n}\n",
            "usm @x : f32[64]\ngraph @g {\n  %t = async_malloc f32[64] device zero_init\n  %k = kernel @ramp range(64) args(%t) after(%t)\n  %c = memcpy @x, %t, 256 after(%k)\n  %f = async_free %t after(%c)\n}\n",
        ];
        std::fs::create_dir_all(&dir).unwrap();
        for (i, g) in graphs.iter().enumerate() {
            let text = ron::to_string(&bundle(&format!("{KERNELS_IR}\n{g}"), vec![], vec![])).unwrap();
            std::fs::write(dir.join(format!("seed{i}.ron")), text).unwrap();
        }
    }
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        load::load_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    assert!(n >= 3, "{n} seeds in {}", dir.display());
}
