//! What reading a bundle may cost (issue 28, docs/bundle.md "Reading a bundle"): an LZ4 body
//! may expand at most `MAX_EXPANSION` times, checked before it is decompressed; the decoded
//! values may take at most `DECODE_BUDGET_FACTOR` times the payload, checked before each list
//! is reserved (a payload of empty names took 24 bytes of memory per byte); the writer keeps
//! every bundle it writes within both; and the signature is verified on the raw bytes, before
//! anything is decompressed.

use cmdgraph_ir::bundle::signature::SigningKey;
use cmdgraph_ir::bundle::*;
use sha2::{Digest, Sha256};

/// LEB128 of `v`.
fn leb(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A bundle file of `payload` with a correct content hash, `compression` 0 (stored) or 1
/// (LZ4), and `body` as given (for LZ4) or the payload itself (stored).
fn file(payload: &[u8], compression: u8, body: &[u8]) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(MAGIC);
    h.update(FORMAT_VERSION.to_le_bytes());
    h.update(payload);
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&h.finalize());
    out.push(compression);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// A payload whose one graph has one device stage of `n` empty node names and nothing else:
/// well-formed, each name one encoded byte.
fn empty_names(n: u64) -> Vec<u8> {
    let mut p = vec![0, 0, 0, 0]; // source, optimized, pipeline, no kernels
    p.push(1); // one graph
    p.extend_from_slice(&[1, b'g']);
    p.extend_from_slice(&[1, 0, 1]); // one segment: device, one stage
    leb(n, &mut p);
    p.resize(p.len() + n as usize, 0);
    p.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // pool size, alignment, offsets, report, origins, launches
    p
}

#[test]
fn the_crafted_payload_is_well_formed_when_small() {
    let p = empty_names(3);
    let b = Bundle::from_bytes(&file(&p, 0, &p)).expect("a small one reads");
    assert_eq!(b.graphs[0].segments, vec![Segment::Device { stages: vec![vec![String::new(); 3]] }]);
}

/// 4·10^6 empty names in a 4 MB payload would be 96 MB of `String`s (a 16.9 MB file of them
/// asked for 103 GB and aborted): refused by the decode budget, before the list is reserved.
#[test]
fn a_payload_of_empty_names_is_refused_by_the_decode_budget() {
    let p = empty_names(4_000_000);
    let e = Bundle::from_bytes(&file(&p, 0, &p)).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, BundleError::Malformed { .. }), "{m}");
    assert!(m.contains("payload byte 14 (decompressed), reading the segments"), "{m}");
    assert!(m.contains(&format!("more than {DECODE_BUDGET_FACTOR} times the payload's size")), "{m}");
}

/// An LZ4 body of runs of one byte expands about 250 times; a claim past `MAX_EXPANSION` is
/// refused from the header, before the payload is allocated or decompressed.
#[test]
fn an_lz4_body_expanding_past_the_bound_is_refused_before_decompressing() {
    let p = empty_names(8 << 20);
    let body = lz4_flex::block::compress(&p);
    assert!(p.len() as u64 > body.len() as u64 * MAX_EXPANSION, "the body expands past the bound");
    let e = Bundle::read_framing(&file(&p, 1, &body)).unwrap_err();
    let m = e.to_string();
    assert!(m.contains(&format!("more than the {MAX_EXPANSION}x expansion a bundle may have")), "{m}");
    assert!(m.contains(&format!("an LZ4 body of {} bytes", body.len())), "{m}");
}

/// A payload that compresses past the bound (here a source of one long comment) is written
/// stored, so every bundle the writer makes reads back.
#[test]
fn the_writer_stores_a_payload_that_compresses_past_the_bound() {
    let mut b = Bundle {
        format_version: FORMAT_VERSION,
        content_hash: String::new(),
        source: format!("//{}\ngraph @g {{\n  %e = empty\n}}\n", "=".repeat(1 << 20)),
        optimized: "graph @g {\n  %e = empty\n}\n".into(),
        pipeline: String::new(),
        kernels: vec![],
        graphs: vec![],
    };
    let bytes = b.to_bytes().expect("bytes");
    assert_eq!(bytes[44], 0, "stored");
    let read = Bundle::from_bytes(&bytes).expect("reads");
    b.content_hash = read.content_hash.clone();
    assert_eq!(read, b);
    // An ordinary payload is still compressed.
    b.source = "graph @g {\n  %e = empty\n}\n".into();
    assert_eq!(b.to_bytes().expect("bytes")[44], 1, "LZ4");
}

/// A graph of 10^5 nodes with one-to-six-character names (the most names per payload byte a
/// real bundle has: each is also in both IR texts, the stage and the launch table) reads
/// within the budget, with room to spare.
#[test]
fn a_name_heavy_bundle_reads_within_the_budget() {
    let n = 100_000;
    let names: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
    let text: String = names.iter().map(|x| format!("  %{x} = kernel @k range(1) args()\n")).collect();
    let text = format!("graph @g {{\n{text}}}\n");
    let b = Bundle {
        format_version: FORMAT_VERSION,
        content_hash: String::new(),
        source: text.clone(),
        optimized: text,
        pipeline: String::new(),
        kernels: vec![],
        graphs: vec![GraphPlan {
            name: "g".into(),
            segments: vec![Segment::Device { stages: vec![names.clone()] }],
            memory: PoolPlan { size: 0, alignment: 0, offsets: vec![], report: String::new() },
            origins: names
                .iter()
                .map(|x| NodeOrigin { node: x.clone(), sources: vec![("g".into(), x.clone())] })
                .collect(),
            launches: vec![],
        }],
    };
    let bytes = b.to_bytes().expect("bytes");
    let read = Bundle::from_bytes(&bytes).expect("within the budget");
    assert_eq!(read.graphs[0].segments, b.graphs[0].segments);
}

/// The signature is verified on the raw bytes: `read_framing` gives the verified signer
/// without decompressing, so a loader that requires a trusted key can refuse before any
/// payload is expanded; a payload changed after signing is then caught by the content hash.
#[test]
fn the_signature_is_verified_before_the_payload_is_decompressed() {
    let key = SigningKey::from_seed(&[3; 32]);
    // A well-signed file whose body is not LZ4 at all: framing reads and verifies the
    // signature (it never looks at the body), decoding then refuses the body.
    let mut good = Bundle {
        format_version: FORMAT_VERSION,
        content_hash: String::new(),
        source: "graph @g {\n  %e = empty\n}\n".into(),
        optimized: "graph @g {\n  %e = empty\n}\n".into(),
        pipeline: String::new(),
        kernels: vec![],
        graphs: vec![],
    }
    .to_bytes_signed(&key)
    .expect("signed");
    let body = HEADER_BYTES..good.len() - signature::TRAILER_BYTES;
    for b in &mut good[body] {
        *b = 0xff;
    }
    let framed = Bundle::read_framing(&good).expect("framing does not decompress");
    assert_eq!(framed.signature.as_ref().map(|s| s.key), Some(key.public_key()));
    let e = framed.decode().unwrap_err().to_string();
    assert!(e.contains("LZ4 body (from byte 61) is damaged") || e.contains("hash mismatch"), "{e}");
    // A changed stated hash: the signature no longer verifies, found at framing.
    let mut t = good.clone();
    t[20] ^= 1;
    assert!(matches!(Bundle::read_framing(&t), Err(BundleError::Signature { .. })));
}
