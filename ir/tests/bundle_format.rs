//! The bundle file (format 2): round trip, determinism, size, the version checked first
//! (format 1's RON text included), the content hash, and located errors, never a panic, on
//! damaged input (every truncation, every single-bit flip, random damage).

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
            MemorySlot::LoopPredicate { condition_param: 0 },
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
    let bytes = bundle.to_bytes().expect("serializes");
    assert!(bytes.starts_with(&MAGIC));
    assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
    let back = Bundle::from_bytes(&bytes).expect("reads back");
    assert_eq!(back.content_hash.len(), 64, "{}", back.content_hash);
    assert!(back.content_hash.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(back.content_hash, bundle.compute_hash().expect("hash"));
    assert_eq!(back, Bundle { content_hash: back.content_hash.clone(), ..bundle.clone() });
    assert_eq!(back.to_bytes().expect("again"), bytes, "re-serializing a read bundle gives the same bytes");
}

#[test]
fn every_field_value_survives_including_extremes() {
    let mut b = sample();
    b.kernels[0].layout.fields[2].kind = ArgFieldKind::Local { capacity: u64::MAX, elem_bytes: u32::MAX };
    b.graphs[0].memory.size = u64::MAX;
    b.graphs[0].memory.offsets.push(("ü%\u{0}\"".into(), u64::MAX - 1));
    b.graphs[0].launches[1].alternative = Some(u32::MAX);
    b.graphs[0].segments.push(Segment::Device { stages: vec![] });
    b.kernels.push(CompiledKernel { spirv: vec![], ..b.kernels[0].clone() });
    let back = Bundle::from_bytes(&b.to_bytes().expect("bytes")).expect("reads back");
    assert_eq!(back, Bundle { content_hash: back.content_hash.clone(), ..b });
}

#[test]
fn serialization_is_deterministic_and_the_hash_ignores_the_old_hash() {
    let a = sample();
    let b = Bundle { content_hash: "stale".into(), ..sample() };
    assert_eq!(a.to_bytes().expect("a"), b.to_bytes().expect("b"));
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
    let mut alt = sample();
    alt.graphs[0].launches[0].alternative = Some(0);
    for changed in [word, stage, pool, alt] {
        assert_ne!(changed.compute_hash().expect("hash"), base);
    }
}

/// SPIR-V is stored as bytes and the IR text as it is: a bundle of a large module is smaller
/// than its optimized IR text plus its SPIR-V (the bench's `load` suite measures real ones).
#[test]
fn the_file_is_compact() {
    let mut b = sample();
    let mut text = String::new();
    for i in 0..2000 {
        text.push_str(&format!("  %k{i} = kernel @scale range(4096) args(@u{}, %m{i}, 2.0) after(%m{i})\n", i % 16));
    }
    b.source = text.clone();
    b.optimized = text;
    b.kernels[0].spirv = (0..5000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let floor = b.optimized.len() + b.kernels[0].spirv.len() * 4;
    let bytes = b.to_bytes().expect("bytes");
    assert!(bytes.len() * 10 <= floor * 13, "{} bytes for {floor} of IR and SPIR-V", bytes.len());
}

#[test]
fn another_format_version_is_reported_before_anything_else() {
    let mut bytes = sample().to_bytes().expect("bytes");
    bytes[8..12].copy_from_slice(&99u32.to_le_bytes());
    // Also cut the rest short: the version error must still win.
    bytes.truncate(20);
    let err = Bundle::from_bytes(&bytes).expect_err("version 99 refused");
    assert_eq!(err, BundleError::Version { found: 99, expected: FORMAT_VERSION });
    assert!(err.to_string().contains("recompile"), "{err}");
}

/// Format 1 was RON text: such a file is reported by its version, with what to do.
#[test]
fn a_format_1_ron_bundle_is_refused_naming_its_version() {
    let v1 = "(\n  format_version: 1,\n  content_hash: \"ab\",\n  source: \"\",\n  kernels: [(spirv: [119734787, 65536])],\n)\n";
    let err = Bundle::from_bytes(v1.as_bytes()).expect_err("refused");
    assert_eq!(err, BundleError::Version { found: 1, expected: FORMAT_VERSION });
    let message = err.to_string();
    assert!(message.contains("version 1 is not supported") && message.contains("recompile"), "{message}");
}

#[test]
fn edited_content_is_a_hash_mismatch() {
    let good = sample().to_bytes().expect("bytes");
    let mut other = sample();
    other.graphs[0].memory.size = 513;
    let mut edited = other.to_bytes().expect("bytes");
    // The edited content under the original hash.
    edited[12..44].copy_from_slice(&good[12..44]);
    match Bundle::from_bytes(&edited) {
        Err(BundleError::HashMismatch { found, computed }) => {
            assert_eq!(found, sample().compute_hash().expect("hash"));
            assert_eq!(computed, other.compute_hash().expect("hash"));
        }
        other => panic!("expected a hash mismatch, got {other:?}"),
    }
}

#[test]
fn a_launch_naming_a_missing_variant_is_inconsistent() {
    let mut bundle = sample();
    bundle.graphs[0].launches[1].kernel = 7;
    let err = Bundle::from_bytes(&bundle.to_bytes().expect("bytes")).expect_err("refused");
    assert!(matches!(err, BundleError::Inconsistent { .. }), "{err:?}");
    assert!(err.to_string().contains("%d names kernel variant 7 but the bundle has 1"), "{err}");
}

#[test]
fn garbage_is_an_error_that_says_so() {
    for (bytes, expect) in [
        (&b""[..], "not a cmdgraph bundle: the input is empty"),
        (b"hello", "not a cmdgraph bundle: it does not start with the bundle magic"),
        (b"(format_version: \"one\")", "not a cmdgraph bundle"),
        (b"kernel @k() {\n}\n", "not a cmdgraph bundle"),
        (&MAGIC[..5], "not a cmdgraph bundle"),
    ] {
        let err = Bundle::from_bytes(bytes).expect_err("refused");
        assert!(err.to_string().starts_with(expect), "{:?}: {err}", String::from_utf8_lossy(bytes));
    }
}

/// Every cut of the file is an error that says where the file ends or what is wrong.
#[test]
fn every_truncation_is_a_located_error() {
    let bytes = sample().to_bytes().expect("bytes");
    for cut in 0..bytes.len() {
        let err = Bundle::from_bytes(&bytes[..cut]).expect_err("a cut file is refused");
        let message = err.to_string();
        if cut >= MAGIC.len() {
            assert!(matches!(err, BundleError::Malformed { .. }), "cut at {cut}: {message}");
            assert!(message.contains("byte"), "cut at {cut}: not located: {message}");
        } else {
            assert!(matches!(err, BundleError::NotABundle { .. }), "cut at {cut}: {message}");
        }
    }
}

/// Every single-bit flip anywhere in the file is refused with a message (or, where the
/// compressed body happens to decode to the same payload, reads as the original).
#[test]
fn every_bit_flip_is_refused_or_harmless() {
    let bytes = sample().to_bytes().expect("bytes");
    let original = Bundle::from_bytes(&bytes).expect("reads");
    for i in 0..bytes.len() * 8 {
        let mut damaged = bytes.clone();
        damaged[i / 8] ^= 1 << (i % 8);
        match Bundle::from_bytes(&damaged) {
            Ok(read) => assert_eq!(read, original, "bit {i} changed the content unnoticed"),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

/// A payload whose hash matches but whose fields do not decode (a writer bug, or a crafted
/// file) is refused with the payload offset and the field.
#[test]
fn a_payload_that_does_not_decode_is_located() {
    let good = sample().to_bytes().expect("bytes");
    // A stored (uncompressed) body of an arbitrary payload, with its own correct hash.
    let payload: &[u8] = &[3, b'a', b'b'];
    let mut h = sha2_digest(&good[..12], payload);
    let mut bytes = good[..12].to_vec();
    bytes.append(&mut h);
    bytes.push(0);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(payload);
    assert_eq!(bytes.len(), HEADER_BYTES + payload.len());
    let err = Bundle::from_bytes(&bytes).expect_err("refused");
    let message = err.to_string();
    assert!(matches!(err, BundleError::Malformed { .. }), "{message}");
    assert!(message.contains("payload byte 0") && message.contains("source"), "{message}");
}

/// SHA-256 of `head` (magic and version) then `payload`, as the format hashes content.
fn sha2_digest(head: &[u8], payload: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(head);
    h.update(payload);
    h.finalize().to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Damaged bundles (bytes overwritten, cut short) never panic and are never accepted as
    /// something other than the original content.
    #[test]
    fn damaged_bundles_never_panic(
        cut in proptest::option::of(0usize..4000),
        flips in proptest::collection::vec((0usize..4000, any::<u8>()), 0..4),
    ) {
        let good = sample().to_bytes().expect("bytes");
        let mut bytes = good.clone();
        if let Some(cut) = cut {
            bytes.truncate(cut);
        }
        for (at, b) in flips {
            let n = bytes.len();
            if n > 0 {
                bytes[at % n] = b;
            }
        }
        if let Ok(read) = Bundle::from_bytes(&bytes) {
            prop_assert_eq!(read.to_bytes().expect("bytes"), good);
        }
    }
}
