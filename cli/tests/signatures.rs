//! Signing end to end (docs/cli.md, "Signing bundles"): `cmdgraph keygen`, `compile --sign`,
//! `inspect` showing the signer, `run --trust` taking only bundles signed by a trusted key,
//! and key files never taken for each other.

use std::path::Path;
use std::process::{Command, Output};

const MODULE: &str = "\
kernel @bump(%x: buf<u32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 3 : u32
  %k = mul %i, %one
  %r = add %v, %k
  store %x[%i], %r
}

usm @x : u32[64]

graph @main {
  %z = memset @x, 0, 256
  %k = kernel @bump range(64) args(@x) after(%z)
}
";

fn cmdgraph(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(args).output().expect("cmdgraph runs")
}

fn ok(args: &[&str]) -> String {
    let o = cmdgraph(args);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit 1 and stderr.
fn refused(args: &[&str]) -> String {
    let o = cmdgraph(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(1), "{args:?}: {}{stderr}", String::from_utf8_lossy(&o.stdout));
    stderr
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// The fingerprint `cmdgraph keygen` printed: `key ed25519:...: ...`.
fn keygen(path: &Path) -> String {
    let out = ok(&["keygen", s(path)]);
    out.strip_prefix("key ").and_then(|r| r.split(':').take(2).collect::<Vec<_>>().join(":").into()).expect(&out)
}

#[test]
fn keygen_sign_inspect_and_run_with_trust() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("app.cgir"), MODULE).unwrap();
    let (key, other) = (d.join("release.key"), d.join("other.key"));
    let fp = keygen(&key);
    let other_fp = keygen(&other);
    assert!(fp.starts_with("ed25519:") && fp.len() == 24, "{fp}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the seed file is private");
    }
    let seed = std::fs::read_to_string(&key).unwrap();
    assert!(seed.starts_with("cmdgraph-ed25519-seed:") && seed.lines().count() == 1, "{seed}");
    let public = std::fs::read_to_string(d.join("release.key.pub")).unwrap();
    assert!(public.starts_with("cmdgraph-ed25519-public:") && public.lines().count() == 1, "{public}");
    let pubkey = d.join("release.key.pub");
    let other_pub = d.join("other.key.pub");

    let (plain, signed) = (d.join("plain.cgb"), d.join("signed.cgb"));
    ok(&["compile", s(&d.join("app.cgir")), "-o", s(&plain)]);
    ok(&["compile", "--sign", s(&key), s(&d.join("app.cgir")), "-o", s(&signed)]);
    let (plain_bytes, signed_bytes) = (std::fs::read(&plain).unwrap(), std::fs::read(&signed).unwrap());
    assert_eq!(signed_bytes.len(), plain_bytes.len() + 104, "one 104-byte trailer");
    assert_eq!(&signed_bytes[..plain_bytes.len()], &plain_bytes[..], "signing changes no byte of the bundle");
    assert_eq!(&signed_bytes[plain_bytes.len()..plain_bytes.len() + 4], b"SIG1");

    let shown = ok(&["inspect", s(&signed)]);
    assert!(shown.contains(&format!("  signature       ed25519 by key {fp}, valid\n")), "{shown}");
    assert!(!ok(&["inspect", s(&plain)]).contains("signature"), "unsigned: no signature line");

    // Trusted: runs. Several --trust files: any one will do.
    let ran = ok(&["run", "--trust", s(&pubkey), s(&signed)]);
    assert!(ran.contains("graph @main: 1 run(s) on "), "{ran}");
    ok(&["run", "--trust", s(&other_pub), "--trust", s(&pubkey), s(&signed)]);
    // Without --trust a signature is optional.
    ok(&["run", s(&signed)]);
    ok(&["run", s(&plain)]);

    // Another key, or no signature: refused before the device, naming the keys.
    let e = refused(&["run", "--trust", s(&other_pub), s(&signed)]);
    assert!(
        e.contains(&format!("the bundle is signed by key {fp}, which is not trusted (trusted: {other_fp})")),
        "{e}"
    );
    let e = refused(&["run", "--trust", s(&pubkey), s(&plain)]);
    assert!(
        e.contains(&format!(
            "the bundle is not signed, and this load requires a signature by a trusted key (trusted: {fp})"
        )),
        "{e}"
    );

    // A damaged signature: refused by inspect and run, naming the key.
    let mut bad = signed_bytes.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let bad_path = d.join("bad.cgb");
    std::fs::write(&bad_path, &bad).unwrap();
    for args in [vec!["inspect", s(&bad_path)], vec!["run", s(&bad_path)]] {
        let e = refused(&args);
        assert!(e.contains(&format!("bundle signature by key {fp} is invalid")), "{args:?}: {e}");
    }
}

#[test]
fn key_files_are_checked_and_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("app.cgir"), MODULE).unwrap();
    let key = d.join("k");
    keygen(&key);
    let before = std::fs::read(&key).unwrap();
    let o = cmdgraph(&["keygen", s(&key)]);
    assert_eq!(o.status.code(), Some(3), "an existing key is an I/O refusal");
    assert!(String::from_utf8_lossy(&o.stderr).contains("never replaces a key"));
    assert_eq!(std::fs::read(&key).unwrap(), before);
    // The public key is no seed, and the seed is no key to trust.
    let e = refused(&["compile", "--sign", s(&d.join("k.pub")), s(&d.join("app.cgir")), "-o", s(&d.join("x.cgb"))]);
    assert!(e.contains("this is a public key file"), "{e}");
    assert!(!d.join("x.cgb").exists());
    ok(&["compile", s(&d.join("app.cgir")), "-o", s(&d.join("x.cgb"))]);
    let e = refused(&["run", "--trust", s(&key), s(&d.join("x.cgb"))]);
    assert!(e.contains("this is a secret seed file, not a public key"), "{e}");
    std::fs::write(d.join("junk.pub"), "hello\n").unwrap();
    let e = refused(&["run", "--trust", s(&d.join("junk.pub")), s(&d.join("x.cgb"))]);
    assert!(e.contains("a public key file starts with `cmdgraph-ed25519-public:`"), "{e}");
    // A seed others can read is used, with a warning.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let o = cmdgraph(&["compile", "--sign", s(&key), s(&d.join("app.cgir")), "-o", s(&d.join("y.cgb"))]);
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("can be read by other users (mode 0644)"));
    }
}

/// `inspect --trust` (issue 18) applies `run --trust`'s requirement: an unsigned bundle or
/// one signed by another key exits 1 with the loader's message, the same bytes `run` prints,
/// and no summary; a bundle signed by one of the trusted keys is summarized. Without the
/// flag inspect took both, so an operator could not ask inspect what `run --trust` would do.
#[test]
fn inspect_with_trust_refuses_as_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("app.cgir"), MODULE).unwrap();
    let (key, other) = (d.join("release.key"), d.join("other.key"));
    let fp = keygen(&key);
    let other_fp = keygen(&other);
    let (pubkey, other_pub) = (d.join("release.key.pub"), d.join("other.key.pub"));
    let (plain, signed) = (d.join("plain.cgb"), d.join("signed.cgb"));
    ok(&["compile", s(&d.join("app.cgir")), "-o", s(&plain)]);
    ok(&["compile", "--sign", s(&key), s(&d.join("app.cgir")), "-o", s(&signed)]);

    // Trusted (alone, or among several --trust files): the summary with the signer.
    for args in [
        vec!["inspect", "--trust", s(&pubkey), s(&signed)],
        vec!["inspect", "--trust", s(&other_pub), "--trust", s(&pubkey), s(&signed)],
    ] {
        let shown = ok(&args);
        assert!(shown.contains(&format!("  signature       ed25519 by key {fp}, valid\n")), "{args:?}: {shown}");
        assert!(shown.contains("graph @main"), "{args:?}: {shown}");
    }

    // Refused with the message `run --trust` gives for the same file and keys.
    let cases = [
        (
            vec!["--trust", s(&other_pub), s(&signed)],
            format!("the bundle is signed by key {fp}, which is not trusted (trusted: {other_fp})"),
        ),
        (
            vec!["--trust", s(&pubkey), s(&plain)],
            format!("the bundle is not signed, and this load requires a signature by a trusted key (trusted: {fp})"),
        ),
        // A seed file is no key to trust, for inspect as for run.
        (vec!["--trust", s(&key), s(&signed)], "this is a secret seed file, not a public key".to_string()),
    ];
    for (rest, want) in cases {
        let inspect: Vec<&str> = ["inspect"].into_iter().chain(rest.iter().copied()).collect();
        let run: Vec<&str> = ["run"].into_iter().chain(rest.iter().copied()).collect();
        let o = cmdgraph(&inspect);
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(1), "{inspect:?}: {}{e}", String::from_utf8_lossy(&o.stdout));
        assert!(o.stdout.is_empty(), "{inspect:?} printed a summary of a refused bundle");
        assert!(e.contains(&want), "{inspect:?}: {e}");
        assert_eq!(e, refused(&run), "inspect and run disagree on {rest:?}");
    }
}
