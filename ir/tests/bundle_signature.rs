//! Bundle signatures (docs/bundle.md, "Signature"): the trailer after the body, signing that
//! leaves the unsigned bytes alone, verification with the key named in every failure,
//! located errors for every damaged or cut trailer (never a panic), and the key files.

use cmdgraph_ir::bundle::signature::{
    seed_file_text, PublicKey, SigningKey, PUBLIC_FILE_PREFIX, SEED_FILE_PREFIX, TRAILER_BYTES, TRAILER_TAG,
};
use cmdgraph_ir::bundle::*;

/// A bundle without kernels (so this test does not depend on the argument layout's fields)
/// but with both modules and a pipeline, so the payload has some size.
fn sample() -> Bundle {
    Bundle {
        format_version: FORMAT_VERSION,
        content_hash: String::new(),
        source: "usm @x : f32[16]\ngraph @g {\n  %e = empty\n}\n".into(),
        optimized: "usm @x : f32[16]\ngraph @g {\n  %e = empty\n}\n// optimized\n".into(),
        pipeline: "inline-subgraphs,plan-memory".into(),
        kernels: vec![],
        graphs: vec![],
    }
}

fn key(n: u8) -> SigningKey {
    SigningKey::from_seed(&[n; 32])
}

#[test]
fn a_signed_file_is_the_unsigned_file_then_the_trailer() {
    let b = sample();
    let unsigned = b.to_bytes().expect("bytes");
    let signed = b.to_bytes_signed(&key(1)).expect("signed");
    assert_eq!(signed.len(), unsigned.len() + TRAILER_BYTES);
    assert_eq!(&signed[..unsigned.len()], &unsigned[..], "signing changes no byte of the unsigned file");
    let trailer = &signed[unsigned.len()..];
    assert_eq!(trailer[..4], TRAILER_TAG);
    assert_eq!(trailer[4..8], 96u32.to_le_bytes());
    assert_eq!(trailer[8..40], key(1).public_key().0);
    // ed25519 signatures are deterministic: the same key and content give the same bytes.
    assert_eq!(b.to_bytes_signed(&key(1)).expect("again"), signed);
}

#[test]
fn a_signed_bundle_reads_with_its_key_and_an_unsigned_one_without() {
    let b = sample();
    let signed = b.to_bytes_signed(&key(1)).expect("signed");
    let (read, signature) = Bundle::from_bytes_with_signature(&signed).expect("reads");
    let signature = signature.expect("signed");
    assert_eq!(signature.key, key(1).public_key());
    assert_eq!(read, Bundle::from_bytes(&b.to_bytes().expect("bytes")).expect("unsigned reads"));
    assert_eq!(read.content_hash, b.compute_hash().expect("hash"), "the signature does not change the hash");
    assert_eq!(Bundle::from_bytes(&signed).expect("from_bytes reads a signed file"), read);
    let (_, none) = Bundle::from_bytes_with_signature(&b.to_bytes().expect("bytes")).expect("reads");
    assert!(none.is_none());
}

/// Any change to the body is caught by the content hash (or the decompressor): the signature
/// (over the stated hash, which did not change) verifies, and the payload is never blamed on it.
#[test]
fn a_tampered_payload_is_a_hash_error_not_a_signature_error() {
    let signed = sample().to_bytes_signed(&key(1)).expect("signed");
    let body = HEADER_BYTES..signed.len() - TRAILER_BYTES;
    let mut hash_errors = 0;
    for i in body {
        let mut t = signed.clone();
        t[i] ^= 0x20;
        match Bundle::from_bytes(&t) {
            Err(BundleError::HashMismatch { .. }) => hash_errors += 1,
            Err(BundleError::Malformed { message }) => assert!(message.contains("LZ4"), "byte {i}: {message}"),
            other => panic!("byte {i}: {other:?}"),
        }
    }
    assert!(hash_errors > 0, "no flip reached the hash check");
    // The stated hash changed: the signature is verified over the stated hash before the
    // body is decompressed (issue 28), so this is the signature's error, found first.
    let mut t = signed.clone();
    t[20] ^= 1;
    assert!(matches!(Bundle::from_bytes(&t), Err(BundleError::Signature { .. })));
}

#[test]
fn a_tampered_signature_is_a_signature_error_naming_the_key() {
    let signed = sample().to_bytes_signed(&key(1)).expect("signed");
    let at = signed.len() - 64;
    let fingerprint = key(1).public_key().fingerprint();
    for i in at..signed.len() {
        let mut t = signed.clone();
        t[i] ^= 1;
        match Bundle::from_bytes(&t) {
            Err(e @ BundleError::Signature { .. }) => {
                let BundleError::Signature { key, message } = &e else { unreachable!() };
                assert_eq!(key, &fingerprint);
                assert!(message.contains(&format!("bytes {at}..{}", signed.len())), "{message}");
                assert!(e.to_string().contains(&format!("bundle signature by key {fingerprint} is invalid")), "{e}");
            }
            other => panic!("signature byte {i}: {other:?}"),
        }
    }
}

/// Another key in the trailer (someone re-labelling a signature) fails against that key; a
/// key that is not a curve point is refused as such.
#[test]
fn a_substituted_key_does_not_verify() {
    let signed = sample().to_bytes_signed(&key(1)).expect("signed");
    let at = signed.len() - TRAILER_BYTES;
    let mut t = signed.clone();
    t[at + 8..at + 40].copy_from_slice(&key(2).public_key().0);
    match Bundle::from_bytes(&t) {
        Err(BundleError::Signature { key: k, message }) => {
            assert_eq!(k, key(2).public_key().fingerprint());
            assert!(message.contains("does not verify"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    for i in at + 8..at + 40 {
        let mut t = signed.clone();
        t[i] ^= 0x80;
        assert!(matches!(Bundle::from_bytes(&t), Err(BundleError::Signature { .. })), "key byte {i}");
    }
}

/// Every cut of a signed file is refused with a located message; inside the trailer it names
/// the trailer's part and where the file ends.
#[test]
fn every_truncation_of_a_signed_file_is_a_located_error() {
    let signed = sample().to_bytes_signed(&key(1)).expect("signed");
    let trailer_at = signed.len() - TRAILER_BYTES;
    for cut in 0..signed.len() {
        if cut == trailer_at {
            // Without its whole trailer the file is the unsigned bundle, which reads (a
            // loader that trusts keys refuses it: executor/tests/signed_bundles.rs).
            let (_, signature) = Bundle::from_bytes_with_signature(&signed[..cut]).expect("unsigned reads");
            assert!(signature.is_none());
            continue;
        }
        let err = Bundle::from_bytes(&signed[..cut]).expect_err("a cut file is refused");
        let message = err.to_string();
        if cut < MAGIC.len() {
            assert!(matches!(err, BundleError::NotABundle { .. }), "cut at {cut}: {message}");
            continue;
        }
        assert!(matches!(err, BundleError::Malformed { .. }), "cut at {cut}: {message}");
        assert!(message.contains("byte"), "cut at {cut}: not located: {message}");
        if cut > trailer_at {
            let part = match cut - trailer_at {
                1..=3 => "tag",
                4..=7 => "length",
                8..=39 => "public key",
                _ => "signature",
            };
            assert!(
                message.contains(&format!("the file ends at byte {cut}, inside the signature trailer's {part}")),
                "cut at {cut}: {message}"
            );
        }
    }
}

#[test]
fn anything_but_one_well_formed_trailer_after_the_body_is_refused() {
    let unsigned = sample().to_bytes().expect("bytes");
    let signed = sample().to_bytes_signed(&key(1)).expect("signed");
    let at = unsigned.len();
    // Junk after an unsigned file.
    let mut t = unsigned.clone();
    t.extend_from_slice(b"junk and more junk");
    let m = Bundle::from_bytes(&t).expect_err("junk").to_string();
    assert!(m.contains(&format!("18 byte(s) follow the body from byte {at}")) && m.contains("SIG1"), "{m}");
    // A second trailer.
    let mut t = signed.clone();
    t.extend_from_slice(&signed[at..]);
    let m = Bundle::from_bytes(&t).expect_err("two trailers").to_string();
    assert!(
        m.contains(&format!("{TRAILER_BYTES} byte(s) follow the signature trailer from byte {}", at + TRAILER_BYTES)),
        "{m}"
    );
    // One stray byte after it.
    let mut t = signed.clone();
    t.push(0);
    assert!(Bundle::from_bytes(&t).expect_err("stray").to_string().contains("follow the signature trailer"));
    // Another length.
    let mut t = signed.clone();
    t[at + 4] = 95;
    let m = Bundle::from_bytes(&t).expect_err("length").to_string();
    assert!(m.contains(&format!("length (bytes {}..{}) is 95", at + 4, at + 8)), "{m}");
    // Another tag.
    let mut t = signed.clone();
    t[at + 3] = b'2';
    let m = Bundle::from_bytes(&t).expect_err("tag").to_string();
    assert!(m.contains("but with 53 49 47 32"), "{m}");
}

/// Every single-bit flip of a signed file is refused or reads as the original with the same
/// signer; in the trailer every flip is refused.
#[test]
fn every_bit_flip_of_a_signed_file_is_refused_or_harmless() {
    let signed = sample().to_bytes_signed(&key(1)).expect("signed");
    let original = Bundle::from_bytes_with_signature(&signed).expect("reads");
    let trailer_at = signed.len() - TRAILER_BYTES;
    for i in 0..signed.len() * 8 {
        let mut t = signed.clone();
        t[i / 8] ^= 1 << (i % 8);
        match Bundle::from_bytes_with_signature(&t) {
            Ok(read) => {
                assert!(i / 8 < trailer_at, "trailer bit {i} accepted");
                assert_eq!(read, original, "bit {i} changed the content unnoticed");
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

#[test]
fn key_files_round_trip_and_are_never_taken_for_each_other() {
    let seed = [7u8; 32];
    let seed_text = seed_file_text(&seed);
    assert!(seed_text.starts_with(SEED_FILE_PREFIX) && seed_text.ends_with('\n'), "{seed_text}");
    assert_eq!(seed_text.lines().count(), 1);
    let signer = SigningKey::from_file_text(&seed_text).expect("seed file");
    assert_eq!(signer.public_key(), SigningKey::from_seed(&seed).public_key());
    let public_text = signer.public_key().to_file_text();
    assert!(public_text.starts_with(PUBLIC_FILE_PREFIX), "{public_text}");
    assert_eq!(PublicKey::from_file_text(&format!("  {public_text}\n")).expect("pub"), signer.public_key());
    // Each file refused where the other is wanted: a seed must never be published as a
    // trusted key, and a public key must never be used as a seed (anyone could sign).
    let e = PublicKey::from_file_text(&seed_text).expect_err("seed as public");
    assert!(e.contains("secret seed file"), "{e}");
    let e = SigningKey::from_file_text(&public_text).expect_err("public as seed");
    assert!(e.contains("public key file"), "{e}");
    // Bad contents.
    let e = SigningKey::from_file_text(&format!("{SEED_FILE_PREFIX}abcd")).expect_err("short");
    assert!(e.contains("64 hex digits"), "{e}");
    let e = SigningKey::from_file_text(&format!("{SEED_FILE_PREFIX}{}x", "0".repeat(63))).expect_err("not hex");
    assert!(e.contains("character 64"), "{e}");
    let e = PublicKey::from_file_text(&"ab".repeat(32)).expect_err("no prefix");
    assert!(e.contains(PUBLIC_FILE_PREFIX), "{e}");
    // Fingerprints: `ed25519:` and 16 hex digits; the Debug form never shows the seed.
    let fp = signer.public_key().fingerprint();
    assert!(fp.starts_with("ed25519:") && fp.len() == 8 + 16, "{fp}");
    assert_ne!(fp, key(2).public_key().fingerprint());
    assert!(!format!("{signer:?}").contains("0707"), "{signer:?}");
}
