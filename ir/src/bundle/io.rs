//! Reading and writing bundles as RON, with the format version and the content hash checked.
//!
//! The hash is SHA-256 of the bundle serialized by [`Bundle::to_ron`] with `content_hash`
//! empty. The loader recomputes it from what it parsed, so it detects any change to the
//! content (a flipped SPIR-V word, an edited schedule) while whitespace does not matter.
//! Reading never panics: every failure is a [`BundleError`] that says what is wrong.

use super::{Bundle, FORMAT_VERSION};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::fmt;

/// Depth below which RON nesting is written on one line: a kernel's SPIR-V words, a
/// stage's node names and an origin's pairs stay compact, the structure above is one field
/// per line so that a bundle still reads (and diffs) as text.
const PRETTY_DEPTH: usize = 3;

/// Nesting the reader accepts; real bundles need 6, so deeper input is malformed, and the
/// limit keeps hostile input from exhausting the stack.
const RECURSION_LIMIT: usize = 64;

/// Why a bundle could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleError {
    /// The text is not RON of a bundle (no `format_version` field can be found).
    NotABundle {
        /// The RON error, with line and column.
        message: String,
    },
    /// Written by another version of the format.
    Version {
        /// The version in the file.
        found: u32,
        /// [`FORMAT_VERSION`] of this build.
        expected: u32,
    },
    /// The version matches but the content does not parse as this version's bundle.
    Malformed {
        /// The RON error, with line and column.
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
    /// Serializing failed (only for values that RON cannot represent; not expected).
    Serialize {
        /// The RON error.
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
            BundleError::Serialize { message } => write!(f, "cannot serialize bundle: {message}"),
        }
    }
}

impl std::error::Error for BundleError {}

/// Only the version, read first so that a bundle of another version is reported as such
/// rather than as whatever field it no longer has. Serde ignores the other fields.
#[derive(Deserialize)]
struct VersionProbe {
    format_version: u32,
}

impl Bundle {
    /// The bundle as RON text with `content_hash` filled in. Deterministic: the same bundle
    /// gives the same bytes.
    pub fn to_ron(&self) -> Result<String, BundleError> {
        let hash = self.compute_hash()?;
        let hashed = Bundle { content_hash: hash, ..self.clone() };
        serialize(&hashed)
    }

    /// SHA-256 (lower-case hex) of the bundle serialized with `content_hash` empty.
    pub fn compute_hash(&self) -> Result<String, BundleError> {
        let unhashed = Bundle { content_hash: String::new(), ..self.clone() };
        Ok(sha256_hex(serialize(&unhashed)?.as_bytes()))
    }

    /// Reads a bundle: the format version first, then the content, then the hash, then the
    /// cross references (kernel indices). Never panics.
    pub fn from_ron(text: &str) -> Result<Bundle, BundleError> {
        let options = ron::Options::default().with_recursion_limit(RECURSION_LIMIT);
        let probe: VersionProbe =
            options.from_str(text).map_err(|e| BundleError::NotABundle { message: e.to_string() })?;
        if probe.format_version != FORMAT_VERSION {
            return Err(BundleError::Version { found: probe.format_version, expected: FORMAT_VERSION });
        }
        let bundle: Bundle = options.from_str(text).map_err(|e| BundleError::Malformed { message: e.to_string() })?;
        let computed = bundle.compute_hash()?;
        if computed != bundle.content_hash {
            return Err(BundleError::HashMismatch { found: bundle.content_hash, computed });
        }
        bundle.check_references()?;
        Ok(bundle)
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

fn serialize(bundle: &Bundle) -> Result<String, BundleError> {
    let pretty = ron::ser::PrettyConfig::new().depth_limit(PRETTY_DEPTH).indentor("  ".to_string());
    let mut text =
        ron::ser::to_string_pretty(bundle, pretty).map_err(|e| BundleError::Serialize { message: e.to_string() })?;
    text.push('\n');
    Ok(text)
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    out
}
