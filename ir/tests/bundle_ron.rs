//! Bundle RON: round trip, determinism, the version checked first, the content hash, and
//! no panic on damaged input.

use cmdgraph_ir::bundle::*;
use proptest::prelude::*;

fn sample() -> Bundle {
    let layout = ArgLayout {
        block_size: 48,
        fields: vec![
            ArgField { offset: 32, kind: ArgFieldKind::Buffer { slot: 0, elem_bytes: 4 } },
            ArgField { offset: 40, kind: ArgFieldKind::Value { bytes: 4 } },
            ArgField { offset: 44, kind: ArgFieldKind::Local { capacity: 256, elem_bytes: 4 } },
        ],
        slots: vec![
            MemorySlot::Param { param: 0, writes: true },
            MemorySlot::DeviceGlobal { name: "table".into(), writes: false },
        ],
    };
    Bundle {
        format_version: FORMAT_VERSION,
        content_hash: String::new(),
        source: "kernel @k(x: buf<f32, write>) {\n}\n".into(),
        optimized: "kernel @k(x: buf<f32, write>) {\n}\n\"quoted\"\n".into(),
        pipeline: "inline-subgraphs,transitive-reduction".into(),
        kernels: vec![CompiledKernel {
            kernel: "k".into(),
            entry: "k".into(),
            workgroup_size: [64, 1, 1],
            items_per_invocation: 4,
            spirv: vec![0x0723_0203, 0x0001_0600, 0, 42, u32::MAX],
            layout,
        }],
        graphs: vec![GraphPlan {
            name: "main".into(),
            segments: vec![
                Segment::Device { stages: vec![vec!["a".into(), "b".into()], vec!["c".into()]] },
                Segment::Host { node: "h".into() },
            ],
            memory: PoolPlan {
                size: 512,
                alignment: 256,
                offsets: vec![("t".into(), 0), ("u".into(), 256)],
                report: "pool 512 B\n".into(),
            },
            origins: vec![NodeOrigin { node: "s.a".into(), sources: vec![("child".into(), "a".into())] }],
            launches: vec![
                LaunchVariant { node: "a".into(), alternative: None, kernel: 0 },
                LaunchVariant { node: "d".into(), alternative: Some(1), kernel: 0 },
            ],
        }],
    }
}

#[test]
fn round_trip_keeps_every_field_and_fills_the_hash() {
    let bundle = sample();
    let text = bundle.to_ron().expect("serializes");
    let back = Bundle::from_ron(&text).expect("reads back");
    assert_eq!(back.content_hash.len(), 64, "{}", back.content_hash);
    assert!(back.content_hash.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(back, Bundle { content_hash: back.content_hash.clone(), ..bundle.clone() });
    assert_eq!(back.to_ron().expect("again"), text, "re-serializing a read bundle gives the same bytes");
}

#[test]
fn serialization_is_deterministic_and_the_hash_ignores_the_old_hash() {
    let a = sample();
    let b = Bundle { content_hash: "stale".into(), ..sample() };
    assert_eq!(a.to_ron().expect("a"), b.to_ron().expect("b"));
    assert_eq!(a.compute_hash().expect("a"), b.compute_hash().expect("b"));
}

#[test]
fn any_content_change_changes_the_hash() {
    let base = sample().compute_hash().expect("hash");
    let mut word = sample();
    word.kernels[0].spirv[3] ^= 1;
    let mut stage = sample();
    stage.graphs[0].segments.swap(0, 1);
    let mut pool = sample();
    pool.graphs[0].memory.size += 1;
    for changed in [word, stage, pool] {
        assert_ne!(changed.compute_hash().expect("hash"), base);
    }
}

#[test]
fn another_format_version_is_reported_before_anything_else() {
    let text = sample().to_ron().expect("ron");
    let other = text.replacen(&format!("format_version: {FORMAT_VERSION}"), "format_version: 99", 1);
    assert_ne!(other, text, "the version field is written as expected");
    // Also drop a field this version requires: the version error must still win.
    let other = other.replacen("pipeline:", "pipeline_renamed:", 1);
    let err = Bundle::from_ron(&other).expect_err("version 99 refused");
    assert_eq!(err, BundleError::Version { found: 99, expected: FORMAT_VERSION });
    assert!(err.to_string().contains("recompile"), "{err}");
}

#[test]
fn edited_content_is_a_hash_mismatch() {
    let text = sample().to_ron().expect("ron");
    let edited = text.replacen("size: 512", "size: 513", 1);
    assert_ne!(edited, text);
    match Bundle::from_ron(&edited) {
        Err(BundleError::HashMismatch { found, computed }) => {
            assert_eq!(found, sample().compute_hash().expect("hash"));
            assert_ne!(found, computed);
        }
        other => panic!("expected a hash mismatch, got {other:?}"),
    }
}

#[test]
fn whitespace_does_not_matter_to_the_hash() {
    let text = sample().to_ron().expect("ron");
    let reflowed = text.replace('\n', "\n  ");
    assert!(Bundle::from_ron(&reflowed).is_ok());
}

#[test]
fn a_launch_naming_a_missing_variant_is_inconsistent() {
    let mut bundle = sample();
    bundle.graphs[0].launches[1].kernel = 7;
    let err = Bundle::from_ron(&bundle.to_ron().expect("ron")).expect_err("refused");
    assert!(matches!(err, BundleError::Inconsistent { .. }), "{err:?}");
    assert!(err.to_string().contains("%d names kernel variant 7 but the bundle has 1"), "{err}");
}

#[test]
fn garbage_and_missing_fields_are_errors_that_say_so() {
    for (text, expect) in [
        ("", "not a cmdgraph bundle"),
        ("hello", "not a cmdgraph bundle"),
        ("(format_version: \"one\")", "not a cmdgraph bundle"),
        (&format!("(format_version: {FORMAT_VERSION})"), "malformed bundle"),
        (&"[".repeat(10_000), "not a cmdgraph bundle"),
    ] {
        let err = Bundle::from_ron(text).expect_err("refused");
        assert!(err.to_string().starts_with(expect), "{text:.40}: {err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Damaged bundles (bytes flipped, cut short) never panic and are never accepted as
    /// something other than the original content.
    #[test]
    fn damaged_bundles_never_panic(
        cut in proptest::option::of(0usize..4000),
        flips in proptest::collection::vec((0usize..4000, any::<u8>()), 0..4),
    ) {
        let text = sample().to_ron().expect("ron");
        let mut bytes = text.clone().into_bytes();
        if let Some(cut) = cut {
            bytes.truncate(cut);
        }
        for (at, b) in flips {
            let n = bytes.len();
            if n > 0 {
                bytes[at % n] = b;
            }
        }
        let damaged = String::from_utf8_lossy(&bytes);
        if let Ok(read) = Bundle::from_ron(&damaged) {
            // A change the hash cannot see (whitespace, or a no-op flip) reads as the original.
            prop_assert_eq!(read.to_ron().expect("ron"), text);
        }
    }
}
