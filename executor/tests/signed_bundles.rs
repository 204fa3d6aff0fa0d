//! Signed bundles at load (docs/bundle.md, "Signature"): with trusted keys the loader takes
//! only bundles signed by one of them, and says which key signed and which are trusted;
//! without them a signature is optional but must verify.

mod common;

use cmdgraph_executor::load::{self, LoadOptions};
use cmdgraph_executor::ExecError;
use cmdgraph_ir::bundle::signature::SigningKey;
use cmdgraph_ir::bundle::Bundle;
use common::*;

fn sample() -> Bundle {
    let ir = format!("{KERNELS_IR}\nusm @x : f32[16]\ngraph @g {{\n  %k = kernel @ramp range(16) args(@x)\n}}\n");
    bundle(&ir, vec![], vec![])
}

fn key(n: u8) -> SigningKey {
    SigningKey::from_seed(&[n; 32])
}

fn trusting(keys: &[u8]) -> LoadOptions {
    LoadOptions { trusted_keys: Some(keys.iter().map(|&n| key(n).public_key()).collect()) }
}

fn refusal(bytes: &[u8], options: &LoadOptions) -> String {
    match load::load_bytes_with(bytes, options) {
        Err(ExecError::Untrusted(m)) => m,
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("loaded"),
    }
}

#[test]
fn a_bundle_signed_by_a_trusted_key_loads_and_says_who_signed() {
    let signed = sample().to_bytes_signed(&key(1)).unwrap();
    for options in [trusting(&[1]), trusting(&[3, 1, 2]), LoadOptions::default()] {
        let loaded = load::load_bytes_with(&signed, &options).expect("loads");
        assert_eq!(loaded.signature.expect("signed").key, key(1).public_key());
    }
    // `load_bytes` (no trust required) takes it too, and an unsigned bundle as before.
    assert!(load::load_bytes(&signed).unwrap().signature.is_some());
    assert!(load::load_bytes(&sample().to_bytes().unwrap()).unwrap().signature.is_none());
}

#[test]
fn a_bundle_signed_by_another_key_is_refused_naming_both() {
    let signed = sample().to_bytes_signed(&key(9)).unwrap();
    let m = refusal(&signed, &trusting(&[1, 2]));
    let (k1, k2, k9) = (key(1).public_key(), key(2).public_key(), key(9).public_key());
    assert_eq!(
        m,
        format!(
            "the bundle is signed by key {}, which is not trusted (trusted: {}, {})",
            k9.fingerprint(),
            k1.fingerprint(),
            k2.fingerprint()
        )
    );
}

#[test]
fn an_unsigned_bundle_is_refused_when_a_signature_is_required() {
    let unsigned = sample().to_bytes().unwrap();
    let m = refusal(&unsigned, &trusting(&[1]));
    assert_eq!(
        m,
        format!(
            "the bundle is not signed, and this load requires a signature by a trusted key (trusted: {})",
            key(1).public_key().fingerprint()
        )
    );
    // A signed bundle stripped of its trailer is that unsigned bundle: refused the same way.
    let signed = sample().to_bytes_signed(&key(1)).unwrap();
    assert_eq!(refusal(&signed[..unsigned.len()], &trusting(&[1])), m);
    // An empty trust list trusts no one; it does not turn the requirement off.
    let none = LoadOptions { trusted_keys: Some(vec![]) };
    assert!(refusal(&signed, &none).ends_with("which is not trusted (trusted: none)"));
    assert!(refusal(&unsigned, &none).ends_with("(trusted: none)"));
}

/// A signature that does not verify is refused with or without trusted keys, naming the key.
#[test]
fn a_bad_signature_is_refused_naming_the_key() {
    let mut signed = sample().to_bytes_signed(&key(1)).unwrap();
    let last = signed.len() - 1;
    signed[last] ^= 1;
    let fingerprint = key(1).public_key().fingerprint();
    for options in [LoadOptions::default(), trusting(&[1])] {
        let m = refusal(&signed, &options);
        assert!(m.starts_with(&format!("bundle signature by key {fingerprint} is invalid: ")), "{m}");
        assert!(m.contains("does not verify"), "{m}");
    }
    // A damaged trailer is malformed, with where.
    let cut = &signed[..signed.len() - 10];
    match load::load_bytes_with(cut, &trusting(&[1])) {
        Err(ExecError::Malformed(m)) => assert!(m.contains("inside the signature trailer's signature"), "{m}"),
        other => panic!("{:?}", other.err()),
    }
}
