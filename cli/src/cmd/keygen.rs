//! `cmdgraph keygen`: a new ed25519 signing key for `compile --sign`, and the reading of key
//! files for `compile --sign` and `run --trust` (docs/cli.md, "Signing bundles").
//!
//! The secret is a 32-byte seed from the operating system's random source, written as one
//! line of hex to a file only its owner can read; the public key goes to `OUT.pub`. Nothing
//! is overwritten: replacing a key by accident would orphan every bundle signed with it.

use crate::exit::{Failure, Outcome};
use cmdgraph_ir::bundle::signature::{seed_file_text, PublicKey, SigningKey};
use std::io::Write as _;
use std::path::{Path, PathBuf};

const EXAMPLES: &str = "\
Examples:
  cmdgraph keygen release.key                       writes release.key (secret) and release.key.pub
  cmdgraph compile --sign release.key app.cgir -o app.cgb
  cmdgraph run --trust release.key.pub app.cgb";

/// Arguments of `cmdgraph keygen`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct KeygenArgs {
    /// The secret seed file to create (mode 0600); the public key goes to OUT.pub. Neither
    /// may exist.
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
}

/// Runs `cmdgraph keygen`.
pub fn run(args: &KeygenArgs) -> Outcome {
    let secret = &args.output;
    let public = pub_path(secret);
    for path in [secret, &public] {
        if path.exists() {
            return Err(Failure::Io(format!(
                "error: `{}` exists; cmdgraph keygen never replaces a key (remove it first if that is meant)",
                path.display()
            )));
        }
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| Failure::Io(format!("error: the operating system gave no random bytes for the key: {e}")))?;
    let key = SigningKey::from_seed(&seed);
    let text = seed_file_text(&seed);
    seed.fill(0);
    write_new(secret, text.as_bytes(), true)?;
    let fingerprint = key.public_key().fingerprint();
    write_new(&public, key.public_key().to_file_text().as_bytes(), false)?;
    println!(
        "key {fingerprint}: secret seed in {} (keep it private), public key in {}",
        secret.display(),
        public.display()
    );
    Ok(())
}

/// `OUT.pub`.
fn pub_path(secret: &Path) -> PathBuf {
    let mut name = secret.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Creates `path` (never replacing a file) with `data`; a secret is created readable by its
/// owner only, so it is never readable by others, not even between creation and a chmod.
fn write_new(path: &Path, data: &[u8], secret: bool) -> Outcome {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = secret;
    let cannot = |e: std::io::Error| Failure::Io(format!("error: cannot write `{}`: {e}", path.display()));
    let mut file = options.open(path).map_err(cannot)?;
    file.write_all(data).and_then(|()| file.sync_all()).map_err(cannot)
}

/// Reads the seed file of `compile --sign`. Warns when others may read it (the secret is
/// what makes a signature mean something).
pub fn read_signing_key(path: &Path) -> Result<SigningKey, Failure> {
    let text = read_key_file(path)?;
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            eprintln!(
                "warning: `{}` (a secret signing key) can be read by other users (mode {mode:04o}); `chmod 600` it",
                path.display()
            );
        }
    }
    SigningKey::from_file_text(&text).map_err(|e| Failure::Rejected(format!("error: `{}`: {e}", path.display())))
}

/// Reads a public key file of `run --trust`.
pub fn read_public_key(path: &Path) -> Result<PublicKey, Failure> {
    let text = read_key_file(path)?;
    PublicKey::from_file_text(&text).map_err(|e| Failure::Rejected(format!("error: `{}`: {e}", path.display())))
}

/// A key file's text: small (a key file is one line), so a large file is refused unread.
fn read_key_file(path: &Path) -> Result<String, Failure> {
    let cannot =
        |e: &dyn std::fmt::Display| Failure::Io(format!("error: cannot read key file `{}`: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
    if meta.len() > 4096 {
        return Err(Failure::Rejected(format!(
            "error: `{}` is {} bytes, not a key file (one line of text)",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read_to_string(path).map_err(|e| cannot(&e))
}
