//! Reading and writing bundle files: a fixed binary header (magic, format version, content
//! hash, compression, lengths) then the payload ([`codec`](super::codec)), LZ4-compressed
//! (docs/bundle.md, "Format").
//!
//! The content hash is SHA-256 of the magic, the version and the *uncompressed* payload, so
//! it names the content whatever the compression, and it is checked before the payload is
//! decoded: a damaged file is reported as such rather than as whatever its bytes now say.
//! Reading never panics: every failure is a [`BundleError`] that says what is wrong and,
//! where it can, at which byte.
//!
//! An optional signature trailer may follow the body ([`signature`](super::signature)); it
//! is outside the hashed content, so an unsigned bundle's bytes are those of the same bundle
//! signed, less the trailer.

use super::signature::{self, BundleSignature, SigningKey};
use super::{codec, Bundle, FORMAT_VERSION};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::fmt;

/// The first bytes of every bundle file (as PNG's: a non-ASCII byte, then a name, then
/// CR LF, ^Z, LF, so a transfer that mangles line ends or treats the file as text shows).
pub const MAGIC: [u8; 8] = *b"\x89CGB\r\n\x1a\n";

/// Bytes before the body: magic, version, hash, compression, payload and body lengths.
pub const HEADER_BYTES: usize = 8 + 4 + 32 + 1 + 8 + 8;

/// `compression` byte: the body is the payload as it is.
const STORED: u8 = 0;
/// `compression` byte: the body is one LZ4 block of the payload.
const LZ4: u8 = 1;

/// Largest payload accepted (the IR's own file limit is 1 GiB; two modules and the rest).
const MAX_PAYLOAD: u64 = 4 << 30;

/// Most an LZ4 body may expand: the payload may be at most this many times the body (plus
/// 256 bytes). LZ4 itself reaches 255x on runs of one byte; real bundles compress 2-6x
/// (docs/bundle.md, "Reading a bundle"), and [`Bundle::to_bytes`] stores a payload that would
/// compress better than this uncompressed, so every bundle it writes is within the bound.
/// Bounds the memory a small file can make a reader take.
pub const MAX_EXPANSION: u64 = 32;

/// Most memory the decoded values may take, as a multiple of the payload's length (plus
/// 1 MiB): each string and list element counts its in-memory size (a `String` is 24 bytes
/// plus its text) before it is made. Real bundles take 1.05-1.6x (the IR texts are copied
/// once; names take 24 bytes plus their text for their 2-8 encoded bytes); a payload of
/// empty names, 24x, is refused before it is decoded.
pub const DECODE_BUDGET_FACTOR: u64 = 4;

/// Why a bundle could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleError {
    /// The input does not start as a bundle of any version.
    NotABundle {
        /// What was found instead.
        message: String,
    },
    /// Written by another version of the format.
    Version {
        /// The version in the file.
        found: u32,
        /// [`FORMAT_VERSION`] of this build.
        expected: u32,
    },
    /// The version matches but the rest is not a well-formed bundle (truncated, a length
    /// that does not match, a body that does not decompress, a field that does not decode).
    Malformed {
        /// What is wrong, with the byte offset (in the file, or in the payload once
        /// decompressed) and the field.
        message: String,
    },
    /// The content hash does not match the content.
    HashMismatch {
        /// The hash in the file.
        found: String,
        /// The hash of the content as read.
        computed: String,
    },
    /// The content is inconsistent (e.g. a launch naming a kernel variant that is not there).
    Inconsistent {
        /// What is inconsistent.
        message: String,
    },
    /// The bundle carries a signature that does not verify (the content hash matched, so
    /// the signature or its key was changed, or the bundle was signed by someone else's
    /// tool).
    Signature {
        /// Fingerprint of the key in the trailer ([`signature::PublicKey::fingerprint`]).
        key: String,
        /// What failed, with the trailer's byte range.
        message: String,
    },
    /// Serializing failed (not expected: every bundle has an encoding; kept for callers
    /// that match on it).
    Serialize {
        /// What failed.
        message: String,
    },
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::NotABundle { message } => write!(f, "not a cmdgraph bundle: {message}"),
            BundleError::Version { found, expected } => write!(
                f,
                "bundle format version {found} is not supported (this build reads version {expected}); \
                 recompile the module with this build's `cmdgraph compile`"
            ),
            BundleError::Malformed { message } => write!(f, "malformed bundle: {message}"),
            BundleError::HashMismatch { found, computed } => write!(
                f,
                "bundle content hash mismatch: the file says {found} but its content hashes to {computed} \
                 (the file was changed or damaged after it was written)"
            ),
            BundleError::Inconsistent { message } => write!(f, "inconsistent bundle: {message}"),
            BundleError::Signature { key, message } => {
                write!(f, "bundle signature by key {key} is invalid: {message}")
            }
            BundleError::Serialize { message } => write!(f, "cannot serialize bundle: {message}"),
        }
    }
}

impl std::error::Error for BundleError {}

/// The version field of format 1 (RON text), so that such a file is reported by version.
#[derive(Deserialize)]
struct VersionProbe {
    format_version: u32,
}

impl Bundle {
    /// The bundle file: header with `content_hash` computed (the field's value is ignored)
    /// and the LZ4-compressed payload. Deterministic: the same bundle gives the same bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, BundleError> {
        let payload = codec::encode(self);
        let hash = content_digest(self.format_version, &payload);
        let compressed = lz4_flex::block::compress(&payload);
        // A payload that compresses past what readers accept is stored as it is (real
        // bundles compress 2-6x; a source of long repeated comments could exceed it).
        let (compression, body) = if (payload.len() as u64) <= max_lz4_payload(compressed.len() as u64) {
            (LZ4, compressed)
        } else {
            (STORED, payload.clone())
        };
        let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.format_version.to_le_bytes());
        out.extend_from_slice(&hash);
        out.push(compression);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// The bundle file signed with `key`: exactly [`Bundle::to_bytes`] followed by the
    /// signature trailer (docs/bundle.md, "Signature"), so the content hash and every byte
    /// before the trailer are those of the unsigned file.
    pub fn to_bytes_signed(&self, key: &SigningKey) -> Result<Vec<u8>, BundleError> {
        let mut out = self.to_bytes()?;
        let mut digest = [0u8; 32];
        digest.copy_from_slice(&out[12..44]);
        out.extend_from_slice(&key.trailer(&digest));
        Ok(out)
    }

    /// SHA-256 (lower-case hex) of the content: the magic, the format version and the
    /// uncompressed payload (every field but the hash).
    pub fn compute_hash(&self) -> Result<String, BundleError> {
        Ok(hex(&content_digest(self.format_version, &codec::encode(self))))
    }

    /// Reads a bundle file: the magic and format version first (a bundle of format 1, RON
    /// text, is recognised and reported by its version), then the lengths, the signature
    /// trailer, the body, the hash, the payload, and the cross references (kernel indices).
    /// A signature trailer, if there is one, must be well-formed and verify;
    /// [`Bundle::from_bytes_with_signature`] also says who signed. Never panics.
    pub fn from_bytes(bytes: &[u8]) -> Result<Bundle, BundleError> {
        Bundle::from_bytes_with_signature(bytes).map(|(bundle, _)| bundle)
    }

    /// [`Bundle::from_bytes`], and the verified signature when the file has a trailer
    /// (`None` for an unsigned bundle): [`Bundle::read_framing`] then [`Framed::decode`].
    pub fn from_bytes_with_signature(bytes: &[u8]) -> Result<(Bundle, Option<BundleSignature>), BundleError> {
        let framed = Bundle::read_framing(bytes)?;
        let signature = framed.signature.clone();
        Ok((framed.decode()?, signature))
    }

    /// The first half of reading, over the raw bytes only: magic, version, header lengths
    /// against the file and against [`MAX_EXPANSION`], and the signature trailer, verified
    /// against the content digest the header states. Nothing is decompressed or decoded,
    /// so a caller that requires a trusted signer (the executor's trusted loads) refuses an
    /// untrusted file here, before any of its payload is expanded. A signature verified over
    /// the stated digest signs the content once [`Framed::decode`] has checked that the
    /// content hashes to that digest.
    pub fn read_framing(bytes: &[u8]) -> Result<Framed<'_>, BundleError> {
        let malformed = |message: String| BundleError::Malformed { message };
        if !bytes.starts_with(&MAGIC) {
            return Err(not_a_bundle(bytes));
        }
        let version = read_u32(bytes, 8).ok_or_else(|| {
            malformed(format!("the file ends at byte {} inside the format version (bytes 8..12)", bytes.len()))
        })?;
        if version != FORMAT_VERSION {
            return Err(BundleError::Version { found: version, expected: FORMAT_VERSION });
        }
        if bytes.len() < HEADER_BYTES {
            return Err(malformed(format!(
                "the file ends at byte {} inside the {HEADER_BYTES}-byte header",
                bytes.len()
            )));
        }
        let mut digest = [0u8; 32];
        digest.copy_from_slice(&bytes[12..44]);
        let compression = bytes[44];
        let payload_len = read_u64(bytes, 45).unwrap_or(0);
        let body_len = read_u64(bytes, 53).unwrap_or(0);
        let after_header = &bytes[HEADER_BYTES..];
        // What follows the body is the optional signature trailer; a body cut short is
        // reported as before, whatever follows.
        let body_end = usize::try_from(body_len).ok().filter(|&n| n <= after_header.len()).ok_or_else(|| {
            malformed(format!(
                "the header (bytes 53..61) gives a body of {body_len} bytes but the file has {} after the \
                 {HEADER_BYTES}-byte header (truncated or extended)",
                after_header.len()
            ))
        })?;
        let (body, rest) = after_header.split_at(body_end);
        let trailer = signature::parse_trailer(rest, HEADER_BYTES + body_end)?;
        if payload_len > MAX_PAYLOAD {
            return Err(malformed(format!(
                "the header (bytes 45..53) gives a payload of {payload_len} bytes, over the limit of {MAX_PAYLOAD}"
            )));
        }
        match compression {
            STORED if body_len != payload_len => {
                return Err(malformed(format!(
                    "a stored body of {body_len} bytes for a payload of {payload_len} (header bytes 45..61)"
                )))
            }
            STORED => {}
            // Writers keep within the bound (`to_bytes` stores a payload that compresses
            // better), so a larger claim is damage or a decompression bomb: refused before
            // anything is allocated for it.
            LZ4 if payload_len > max_lz4_payload(body_len) => {
                return Err(malformed(format!(
                    "the header (bytes 45..53) gives a payload of {payload_len} bytes for an LZ4 body of \
                     {body_len} bytes, more than the {MAX_EXPANSION}x expansion a bundle may have"
                )))
            }
            LZ4 => {}
            c => return Err(malformed(format!("unknown compression {c} (byte 44)"))),
        }
        let signature = trailer.map(|t| t.verify(&digest)).transpose()?;
        Ok(Framed { version, digest, compression, payload_len, body, signature })
    }

    /// Every launch names an existing kernel variant of its own kernel.
    fn check_references(&self) -> Result<(), BundleError> {
        for graph in &self.graphs {
            for launch in &graph.launches {
                if (launch.kernel as usize) >= self.kernels.len() {
                    return Err(BundleError::Inconsistent {
                        message: format!(
                            "@{}: node %{} names kernel variant {} but the bundle has {}",
                            graph.name,
                            launch.node,
                            launch.kernel,
                            self.kernels.len()
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// A bundle file whose framing [`Bundle::read_framing`] has checked: header, lengths and
/// signature trailer, nothing decompressed yet.
#[derive(Debug)]
pub struct Framed<'a> {
    version: u32,
    /// The content digest the header states (bytes 12..44), not yet checked.
    digest: [u8; 32],
    compression: u8,
    payload_len: u64,
    body: &'a [u8],
    /// The trailer's signature, verified against `digest`.
    pub signature: Option<BundleSignature>,
}

impl Framed<'_> {
    /// The second half of reading: decompresses the body to the stated length, checks the
    /// content hash against the header (so a verified signature now covers the content),
    /// decodes the payload within [`DECODE_BUDGET_FACTOR`] and checks the cross references.
    pub fn decode(self) -> Result<Bundle, BundleError> {
        let malformed = |message: String| BundleError::Malformed { message };
        let payload_len = self.payload_len;
        let payload: std::borrow::Cow<'_, [u8]> = if self.compression == STORED {
            self.body.into()
        } else {
            let mut out = vec![0u8; payload_len as usize];
            match lz4_flex::block::decompress_into(self.body, &mut out) {
                Ok(n) if n as u64 == payload_len => out.into(),
                Ok(n) => {
                    return Err(malformed(format!(
                        "the LZ4 body (from byte {HEADER_BYTES}) decompresses to {n} bytes, the header says \
                         {payload_len}"
                    )))
                }
                Err(e) => return Err(malformed(format!("the LZ4 body (from byte {HEADER_BYTES}) is damaged: {e}"))),
            }
        };
        let computed = content_digest(self.version, &payload);
        if computed != self.digest {
            return Err(BundleError::HashMismatch { found: hex(&self.digest), computed: hex(&computed) });
        }
        let budget = decode_budget(payload.len());
        let mut bundle = codec::decode(&payload, budget).map_err(|(at, what, message)| {
            malformed(format!("payload byte {at} (decompressed), reading the {what}: {message}"))
        })?;
        drop(payload);
        bundle.format_version = self.version;
        bundle.content_hash = hex(&self.digest);
        bundle.check_references()?;
        Ok(bundle)
    }
}

/// The most payload bytes an LZ4 body of `body_len` bytes may stand for:
/// [`MAX_EXPANSION`] times the body, plus a little for tiny payloads.
fn max_lz4_payload(body_len: u64) -> u64 {
    body_len.saturating_mul(MAX_EXPANSION).saturating_add(256)
}

/// Bytes of memory decoding a payload of `len` bytes may take for the decoded values:
/// [`DECODE_BUDGET_FACTOR`] times the payload, plus 1 MiB.
fn decode_budget(len: usize) -> u64 {
    (len as u64).saturating_mul(DECODE_BUDGET_FACTOR).saturating_add(1 << 20)
}

/// Input without the magic: a format-1 bundle (RON text) by its version, else what it is not.
fn not_a_bundle(bytes: &[u8]) -> BundleError {
    let head = &bytes[..bytes.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    if text.trim_start().starts_with('(') {
        // Only the start is probed: the version is the first field format 1 wrote.
        if let Some(v) = text.split("format_version:").nth(1).and_then(|rest| {
            let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        }) {
            return BundleError::Version { found: v, expected: FORMAT_VERSION };
        }
        if let Ok(probe) = ron::Options::default().with_recursion_limit(64).from_str::<VersionProbe>(&text) {
            return BundleError::Version { found: probe.format_version, expected: FORMAT_VERSION };
        }
    }
    let shown: String = head.iter().take(8).map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ");
    BundleError::NotABundle {
        message: if bytes.is_empty() {
            "the input is empty".into()
        } else {
            format!("it does not start with the bundle magic (89 43 47 42 0d 0a 1a 0a) but with {shown}")
        },
    }
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

fn content_digest(version: u32, payload: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(MAGIC);
    h.update(version.to_le_bytes());
    h.update(payload);
    h.finalize().into()
}

/// Lower-case hex of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    out
}
