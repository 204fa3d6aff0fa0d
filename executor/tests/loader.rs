//! Malformed, truncated or inconsistent bundles are errors, never panics or driver calls.

mod common;

use cmdgraph_executor::{load, ExecError};
use cmdgraph_ir::bundle::FORMAT_VERSION;
use common::*;

fn file() -> Vec<u8> {
    let ir = format!("{KERNELS_IR}\nusm @x : f32[16]\ngraph @g {{\n  %k = kernel @ramp range(16) args(@x)\n}}\n");
    bundle(&ir, vec![], vec![]).to_bytes().unwrap()
}

#[test]
fn a_good_bundle_loads() {
    assert!(load::load_bytes(&file()).is_ok());
}

/// Every cut is an error naming the byte where the file ends or what does not match.
#[test]
fn every_truncation_is_a_located_error() {
    let t = file();
    for cut in 0..t.len() {
        match load::load_bytes(&t[..cut]) {
            Err(ExecError::Malformed(m)) if cut < 8 => {
                assert!(m.contains("not a cmdgraph bundle"), "cut at {cut}: {m}")
            }
            Err(ExecError::Malformed(m)) => assert!(m.contains("byte"), "cut at {cut}: {m}"),
            Err(e) => panic!("cut at {cut}: {e}"),
            Ok(_) => panic!("truncated at {cut} loaded"),
        }
    }
}

#[test]
fn version_mismatch_is_reported_as_such() {
    let mut t = file();
    t[8..12].copy_from_slice(&99u32.to_le_bytes());
    assert_eq!(load::load_bytes(&t).unwrap_err(), ExecError::Version { found: 99, expected: FORMAT_VERSION });
    // Format 1 (RON text) by its version, with what to do.
    let v1 = b"(\n  format_version: 1,\n  content_hash: \"\",\n)\n";
    let err = load::load_bytes(v1).unwrap_err();
    assert_eq!(err, ExecError::Version { found: 1, expected: FORMAT_VERSION });
    assert!(err.to_string().contains("recompile"), "{err}");
}

/// The content hash is checked: another bundle's content under this one's hash is refused.
#[test]
fn tampered_content_fails_the_hash() {
    let ir = format!("{KERNELS_IR}\nusm @x : f32[16]\ngraph @g {{\n  %k = kernel @ramp range(17) args(@x)\n}}\n");
    let other = bundle(&ir, vec![], vec![]);
    let good = file();
    let mut word = other.clone();
    word.kernels[1].spirv[5] ^= 1;
    for b in [other.clone(), word] {
        let mut tampered = b.to_bytes().unwrap();
        tampered[12..44].copy_from_slice(&good[12..44]);
        assert!(matches!(load::load_bytes(&tampered), Err(ExecError::Hash(_))));
    }
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
    let t = file();
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
        let _ = load::load_bytes(&m);
    }
}

/// Every single-bit flip is refused before anything reaches the IR parser or the driver,
/// with an error of the format (or, where an LZ4 body decodes to the same payload, loads
/// as the original).
#[test]
fn every_bit_flip_is_refused() {
    let t = file();
    for i in 0..t.len() * 8 {
        let mut m = t.clone();
        m[i / 8] ^= 1 << (i % 8);
        match load::load_bytes(&m) {
            Ok(l) => assert_eq!(l.bundle.to_bytes().unwrap(), t, "bit {i}"),
            Err(ExecError::Malformed(_) | ExecError::Hash(_) | ExecError::Version { .. }) => {}
            Err(e) => panic!("bit {i}: {e:?}"),
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
            let bytes = bundle(&format!("{KERNELS_IR}\n{g}"), vec![], vec![]).to_bytes().unwrap();
            std::fs::write(dir.join(format!("seed{i}.cgb")), bytes).unwrap();
        }
    }
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        load::load_bytes(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    assert!(n >= 3, "{n} seeds in {}", dir.display());
}

/// A bundle whose conditional body holds a fill (which `compile` refuses, E0506: conditional
/// rendering does not predicate it) is refused at load, naming the node, rather than run
/// with the fill done whatever the condition says (docs/conditional.md).
#[test]
fn fills_in_conditional_bodies_are_refused_at_load() {
    let ir = format!(
        "{KERNELS_IR}\nusm @x : f32[16]\nusm @c : u32[1]\ngraph @g {{\n  %k = kernel @ramp range(16) args(@x)\n}}\n"
    );
    let good = bundle(&ir, vec![], vec![]);
    assert!(load::check(good.clone()).is_ok());
    let mut b = good;
    b.optimized = b
        .optimized
        .replace("graph @g {", "graph @body {\n  %m = memset @c, 0, 4\n}\n\ngraph @g {\n  %w = while @c do @body");
    assert!(cmdgraph_ir::text::parse(&b.optimized).is_ok(), "{}", b.optimized);
    match load::check(b) {
        Err(ExecError::Bundle(m)) => assert!(m.contains("@body %m") && m.contains("conditional body"), "{m}"),
        other => panic!("{other:?}"),
    }
}
