//! Crafted bundles against `cmdgraph run` and `cmdgraph inspect` (issue 28): a small file whose
//! payload lists 10^8 empty stage names (each 24 bytes of memory for one encoded byte) made
//! both abort on a failed allocation; under a 1 GiB address-space limit they must now refuse
//! it with exit 1 and a message. With `--trust`, an unsigned file is refused as untrusted before
//! its payload is decompressed or decoded: a payload that would not decode gives the trust
//! error, not the decoder's.

use cmdgraph_ir::bundle::signature::SigningKey;
use cmdgraph_ir::bundle::{FORMAT_VERSION, MAGIC};
use sha2::{Digest, Sha256};
use std::process::{Command, Output};

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

/// A bundle file of `payload` (correct content hash), LZ4-compressed or stored.
fn file(payload: &[u8], lz4: bool) -> Vec<u8> {
    let body = if lz4 { lz4_flex::block::compress(payload) } else { payload.to_vec() };
    let mut h = Sha256::new();
    h.update(MAGIC);
    h.update(FORMAT_VERSION.to_le_bytes());
    h.update(payload);
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&h.finalize());
    out.push(u8::from(lz4));
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// `cmdgraph ARGS` under `ulimit -v` of `kib` KiB.
fn limited(kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_cmdgraph"))
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn a_small_file_of_empty_names_is_refused_within_a_small_address_space() {
    let n: u64 = 100_000_000;
    // source, optimized, pipeline, no kernels; one graph `g`, one device segment of one stage.
    let mut p = vec![0, 0, 0, 0, 1, 1, b'g', 1, 0, 1];
    leb(n, &mut p);
    p.resize(p.len() + n as usize, 0);
    p.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let bytes = file(&p, true);
    drop(p);
    assert!(bytes.len() < 1 << 20, "{} bytes", bytes.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("names.cgb");
    std::fs::write(&path, &bytes).unwrap();
    let path = path.to_str().unwrap();
    for cmd in ["inspect", "run"] {
        let o = limited(1 << 20, &[cmd, path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {:?}\n{err}", o.status);
        assert!(err.contains("expansion a bundle may have"), "{cmd}: {err}");
    }
}

#[test]
fn with_trust_an_unsigned_payload_is_refused_as_untrusted_before_it_is_decoded() {
    // Stored, hash correct, and not a payload at all: decoding it fails.
    let bytes = file(&[0xff; 4096], false);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.cgb");
    std::fs::write(&path, &bytes).unwrap();
    let key = dir.path().join("k.pub");
    std::fs::write(&key, SigningKey::from_seed(&[9; 32]).public_key().to_file_text()).unwrap();
    let (path, key) = (path.to_str().unwrap(), key.to_str().unwrap());
    // Without --trust it is the decoder's error ...
    for cmd in ["inspect", "run"] {
        let o = limited(4 << 20, &[cmd, path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("malformed bundle: payload byte 0"), "{cmd}: {err}");
    }
    // ... with it, the trust requirement answers first.
    for cmd in ["inspect", "run"] {
        let o = limited(4 << 20, &[cmd, "--trust", key, path]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("the bundle is not signed, and this load requires a signature"), "{cmd}: {err}");
        assert!(!err.contains("malformed"), "{cmd}: {err}");
    }
}
