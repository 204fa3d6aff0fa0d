//! Optional bundle signatures (docs/bundle.md, "Signature"): an ed25519 signature over the
//! 32-byte content digest, carried in a trailer after the body, and the key files of
//! `cmdgraph keygen`, `compile --sign` and `run --trust`.
//!
//! The trailer sits outside the header, the payload and the hash, so signing never changes
//! a bundle's content hash or bytes: a signed file is the unsigned file followed by
//! [`TRAILER_BYTES`] bytes. The digest already covers the magic, the format version and the
//! uncompressed payload, so signing it signs all of the content.
//!
//! Keys are made from a 32-byte seed (RFC 8032's secret key) that the user keeps in a file;
//! nothing here draws random numbers, so the library needs no random source.

use super::io::hex;
use super::BundleError;
use ed25519_dalek::Signer as _;
use sha2::{Digest, Sha256};
use std::fmt;

/// Tag of the signature trailer (format 1 of the trailer: ed25519 over the content digest).
pub const TRAILER_TAG: [u8; 4] = *b"SIG1";

/// Bytes of the trailer after its tag and length: public key (32) and signature (64).
const TRAILER_BODY: u32 = 32 + 64;

/// Bytes of the whole trailer: tag, length (`u32` LE), public key, signature.
pub const TRAILER_BYTES: usize = 4 + 4 + TRAILER_BODY as usize;

/// First text of a seed (secret key) file, before the hex.
pub const SEED_FILE_PREFIX: &str = "cmdgraph-ed25519-seed:";
/// First text of a public key file, before the hex.
pub const PUBLIC_FILE_PREFIX: &str = "cmdgraph-ed25519-public:";

/// An ed25519 public key (32 bytes, compressed Edwards point), as key files and trailers hold it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; 32]);

impl PublicKey {
    /// `ed25519:` and the first 8 bytes of the key's SHA-256 in hex: short enough to read in
    /// an error message, long enough that two keys of one deployment do not share one.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(self.0);
        format!("ed25519:{}", hex(&digest[..8]))
    }

    /// The key file text: [`PUBLIC_FILE_PREFIX`], 64 lower-case hex digits, a newline.
    pub fn to_file_text(&self) -> String {
        format!("{PUBLIC_FILE_PREFIX}{}\n", hex(&self.0))
    }

    /// Reads a public key file (what [`PublicKey::to_file_text`] writes; surrounding white
    /// space is ignored). A seed file is refused as such, so a secret is never taken for a
    /// key to trust.
    pub fn from_file_text(text: &str) -> Result<PublicKey, String> {
        let text = text.trim();
        if text.starts_with(SEED_FILE_PREFIX) {
            return Err("this is a secret seed file, not a public key: give the `.pub` file that \
                        `cmdgraph keygen` wrote beside it"
                .into());
        }
        let Some(digits) = text.strip_prefix(PUBLIC_FILE_PREFIX) else {
            return Err(format!("a public key file starts with `{PUBLIC_FILE_PREFIX}` (`cmdgraph keygen` writes it)"));
        };
        let key = parse_hex32(digits)?;
        // A key that is not a point on the curve could never verify anything: say so now
        // rather than at the first bundle.
        ed25519_dalek::VerifyingKey::from_bytes(&key)
            .map_err(|_| "the key is not a valid ed25519 public key (not a curve point)".to_string())?;
        Ok(PublicKey(key))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

/// A signing key, made from its 32-byte seed; the seed is wiped when the key is dropped.
pub struct SigningKey(ed25519_dalek::SigningKey);

impl SigningKey {
    /// The key of `seed` (RFC 8032 secret key).
    pub fn from_seed(seed: &[u8; 32]) -> SigningKey {
        SigningKey(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    /// Reads a seed file (what [`seed_file_text`] writes; surrounding white space is
    /// ignored). A public key file is refused as such: signing with a seed that is public
    /// would let anyone sign.
    pub fn from_file_text(text: &str) -> Result<SigningKey, String> {
        let text = text.trim();
        if text.starts_with(PUBLIC_FILE_PREFIX) {
            return Err("this is a public key file: signing needs the secret seed file that \
                        `cmdgraph keygen` wrote (the same name without `.pub`)"
                .into());
        }
        let Some(digits) = text.strip_prefix(SEED_FILE_PREFIX) else {
            return Err(format!("a seed file starts with `{SEED_FILE_PREFIX}` (`cmdgraph keygen` writes it)"));
        };
        let mut seed = parse_hex32(digits)?;
        let key = SigningKey::from_seed(&seed);
        seed.fill(0);
        Ok(key)
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }

    /// The trailer for a bundle of content digest `digest`.
    pub(super) fn trailer(&self, digest: &[u8; 32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(TRAILER_BYTES);
        out.extend_from_slice(&TRAILER_TAG);
        out.extend_from_slice(&TRAILER_BODY.to_le_bytes());
        out.extend_from_slice(&self.0.verifying_key().to_bytes());
        out.extend_from_slice(&self.0.sign(digest).to_bytes());
        out
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the seed.
        write!(f, "SigningKey({})", self.public_key().fingerprint())
    }
}

/// The seed file text for `seed`: [`SEED_FILE_PREFIX`], 64 lower-case hex digits, a newline.
pub fn seed_file_text(seed: &[u8; 32]) -> String {
    format!("{SEED_FILE_PREFIX}{}\n", hex(seed))
}

/// A verified signature of a bundle: who signed it and the signature bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleSignature {
    /// The signer's public key.
    pub key: PublicKey,
    /// The ed25519 signature of the content digest.
    pub signature: [u8; 64],
}

/// A trailer read from the file, not yet verified.
pub(super) struct Trailer {
    /// File offset of the trailer (for messages).
    pub at: usize,
    pub key: [u8; 32],
    pub signature: [u8; 64],
}

/// Parses what follows the body (`rest`, starting at file offset `at`): nothing (unsigned)
/// or exactly one well-formed trailer. Every failure says at which byte and what is wrong.
pub(super) fn parse_trailer(rest: &[u8], at: usize) -> Result<Option<Trailer>, BundleError> {
    if rest.is_empty() {
        return Ok(None);
    }
    let malformed = |message: String| BundleError::Malformed { message };
    let end = at + rest.len();
    let part = |from: usize, len: usize, what: &str| -> Result<&[u8], BundleError> {
        rest.get(from..from + len).ok_or_else(|| {
            malformed(format!(
                "the file ends at byte {end}, inside the signature trailer's {what} (bytes {}..{}); the \
                 trailer starts at byte {at}, after the body the header gives",
                at + from,
                at + from + len
            ))
        })
    };
    let tag = part(0, 4, "tag")?;
    if tag != TRAILER_TAG {
        let shown: Vec<String> = tag.iter().map(|b| format!("{b:02x}")).collect();
        return Err(malformed(format!(
            "{} byte(s) follow the body from byte {at} and do not start with the signature tag `SIG1` (53 49 47 31) \
             but with {} (the file was extended or damaged, or the header's body length at bytes 53..61 is wrong)",
            rest.len(),
            shown.join(" ")
        )));
    }
    let len = part(4, 4, "length")?;
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]);
    if len != TRAILER_BODY {
        return Err(malformed(format!(
            "the signature trailer's length (bytes {}..{}) is {len}, a `SIG1` trailer has {TRAILER_BODY}",
            at + 4,
            at + 8
        )));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(part(8, 32, "public key")?);
    let mut signature = [0u8; 64];
    signature.copy_from_slice(part(40, 64, "signature")?);
    if rest.len() > TRAILER_BYTES {
        return Err(malformed(format!(
            "{} byte(s) follow the signature trailer from byte {}: a bundle ends after at most one trailer",
            rest.len() - TRAILER_BYTES,
            at + TRAILER_BYTES
        )));
    }
    Ok(Some(Trailer { at, key, signature }))
}

impl Trailer {
    /// Checks the signature over `digest` (the content digest, already checked against the
    /// content) with `verify_strict`, which also refuses small-order keys and non-canonical
    /// signatures, so one signature has one encoding.
    pub(super) fn verify(self, digest: &[u8; 32]) -> Result<BundleSignature, BundleError> {
        let key = PublicKey(self.key);
        let failed = |message: String| BundleError::Signature { key: key.fingerprint(), message };
        let verifying = ed25519_dalek::VerifyingKey::from_bytes(&self.key).map_err(|_| {
            failed(format!("the public key (bytes {}..{}) is not a valid ed25519 key", self.at + 8, self.at + 40))
        })?;
        let signature = ed25519_dalek::Signature::from_bytes(&self.signature);
        verifying.verify_strict(digest, &signature).map_err(|_| {
            failed(format!(
                "the signature (bytes {}..{}) does not verify against the content hash {} (the signature or \
                 the key was changed after signing)",
                self.at + 40,
                self.at + TRAILER_BYTES,
                hex(digest)
            ))
        })?;
        Ok(BundleSignature { key, signature: self.signature })
    }
}

/// 64 hex digits (either case) as 32 bytes.
fn parse_hex32(digits: &str) -> Result<[u8; 32], String> {
    let bytes = digits.as_bytes();
    if bytes.len() != 64 {
        return Err(format!("expected 64 hex digits (32 bytes) after the prefix, found {} characters", bytes.len()));
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        match (digit(pair[0]), digit(pair[1])) {
            (Some(h), Some(l)) => out[i] = (h * 16 + l) as u8,
            (h, _) => {
                let at = if h.is_none() { 2 * i + 1 } else { 2 * i + 2 };
                return Err(format!("character {at} of the key is not a hex digit"));
            }
        }
    }
    Ok(out)
}
