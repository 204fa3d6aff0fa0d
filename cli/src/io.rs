//! Input and output shared by the subcommands.
//!
//! Input comes from a file or stdin (`-`), is read whole up to the IR's 1 GiB limit and must
//! be UTF-8; bytes that are not become a located diagnostic (exit 1), never a crash. Output
//! goes to stdout or, with `-o FILE`, is written atomically: a temporary file in the target's
//! directory (unnamed, `O_TMPFILE`, on Linux) is written, flushed to disk and renamed over the
//! target, so a reader sees the old file or the complete new one, any failure leaves the
//! target untouched, and a temp file left by a killed earlier write is removed by the next
//! ([`write_atomic`]).

use crate::exit::Failure;
use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::Span;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// docs/ir.md: a file is at most 1 GiB (the parser's own limit).
pub const MAX_INPUT_BYTES: u64 = cmdgraph_ir::text::MAX_FILE_SIZE as u64;

/// Code of the diagnostic for input that is not UTF-8, which the lexer (taking `&str`)
/// never sees; its own codes start at E0001.
pub const NOT_UTF8_CODE: &str = "E0000";

/// The parser's code for a file over the size limit, reused for input cut off at the limit.
pub const TOO_LARGE_CODE: &str = "E0009";

/// The name diagnostics use for stdin.
pub const STDIN_NAME: &str = "<stdin>";

/// Source text and the name diagnostics show for it (the path as given, or `<stdin>`).
pub struct Input {
    /// Shown in diagnostics and messages.
    pub name: String,
    /// The whole input.
    pub text: String,
}

/// Whether a path argument means stdin/stdout.
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Reads `path` (or stdin for `-`) as UTF-8 text. A bundle (`cmdgraph compile` output) is
/// refused with what to run on it instead (it is binary, not text to re-encode).
pub fn read_input(path: &Path) -> Result<Input, Failure> {
    match read_text_or_bundle(path)? {
        Source::Text(input) => Ok(input),
        Source::Bundle(input) => Err(Failure::Rejected(bundle_given_for_text(&input.name))),
    }
}

/// What a text input turned out to be: IR text, or a bundle (recognised by its magic).
pub enum Source {
    /// IR text, decoded as [`read_input`] does.
    Text(Input),
    /// The bytes of a bundle, undecoded.
    Bundle(InputBytes),
}

/// Reads `path` (or stdin for `-`): a bundle when it starts with the bundle magic
/// (docs/bundle.md), else UTF-8 text (checked as [`read_input`] does).
pub fn read_text_or_bundle(path: &Path) -> Result<Source, Failure> {
    let (name, bytes) = if is_stdio(path) {
        (STDIN_NAME.to_string(), read_limited(io::stdin().lock()))
    } else {
        (path.display().to_string(), File::open(path).and_then(read_limited))
    };
    let bytes = bytes.map_err(|e| Failure::Io(format!("error: cannot read `{name}`: {e}")))?;
    if bytes.starts_with(&cmdgraph_ir::bundle::MAGIC) {
        return Ok(Source::Bundle(InputBytes { name, bytes }));
    }
    decode(name, bytes, MAX_INPUT_BYTES).map(Source::Text)
}

/// Which of the two modules a bundle carries (docs/bundle.md): `--ir` of `inspect`,
/// `--bundle-ir` of `diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BundleIr {
    /// The module as compiled (what whole-graph update compares against).
    Source,
    /// The module after the bundle's pass pipeline (what the executor runs).
    Optimized,
}

impl BundleIr {
    /// That module's canonical text in `bundle`.
    pub fn text(self, bundle: &cmdgraph_ir::bundle::Bundle) -> &str {
        match self {
            BundleIr::Source => &bundle.source,
            BundleIr::Optimized => &bundle.optimized,
        }
    }

    /// How messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            BundleIr::Source => "source IR",
            BundleIr::Optimized => "optimized IR",
        }
    }
}

/// The message for a bundle given where IR text is read (`verify`, `fmt`, `dot`, `interp`,
/// `opt`, `compile`): it is binary by design, so say what reads it.
pub fn bundle_given_for_text(name: &str) -> String {
    let file = if name == STDIN_NAME { "BUNDLE".to_string() } else { name.to_string() };
    format!(
        "error: `{name}` is a cmdgraph bundle (the output of `cmdgraph compile`), not IR text\n  \
         = help: `cmdgraph inspect {file}` checks and summarizes it, `cmdgraph inspect --ir source {file}` \
         (or `--ir optimized`) prints the IR it carries, `cmdgraph run {file}` runs it, and \
         `cmdgraph diff` compares it with IR text or another bundle\n"
    )
}

/// A binary input (a bundle) and its name for messages.
pub struct InputBytes {
    /// Shown in diagnostics and messages.
    pub name: String,
    /// The whole input.
    pub bytes: Vec<u8>,
}

/// Reads `path` (or stdin for `-`) as bytes, up to the same limit as text.
pub fn read_input_bytes(path: &Path) -> Result<InputBytes, Failure> {
    let (name, bytes) = if is_stdio(path) {
        (STDIN_NAME.to_string(), read_limited(io::stdin().lock()))
    } else {
        (path.display().to_string(), File::open(path).and_then(read_limited))
    };
    let bytes = bytes.map_err(|e| Failure::Io(format!("error: cannot read `{name}`: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(Failure::Rejected(format!(
            "error: `{name}`: file is more than the limit of {MAX_INPUT_BYTES} bytes"
        )));
    }
    Ok(InputBytes { name, bytes })
}

/// Reads at most one byte more than the limit, so an endless stream cannot exhaust memory.
fn read_limited(reader: impl Read) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Checks the size limit (a parameter so that tests need not allocate a gigabyte) and
/// UTF-8, with diagnostics in the usual rendered form.
fn decode(name: String, bytes: Vec<u8>, limit: u64) -> Result<Input, Failure> {
    if bytes.len() as u64 > limit {
        // Only the start of the first line is needed to point at 1:1.
        let head = &bytes[..bytes.len().min(200)];
        let first_line = head.split(|b| *b == b'\n').next().unwrap_or_default();
        let shown = String::from_utf8_lossy(first_line);
        let message = format!("file is more than the limit of {limit} bytes");
        let d = Diagnostic::error(TOO_LARGE_CODE, message, Span::new(0, 0))
            .with_label("reading stopped at the limit")
            .with_help("split the module into several files");
        return Err(Failure::Rejected(d.render(&name, &shown)));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Input { name, text }),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let byte = e.as_bytes().get(at).copied().unwrap_or(0);
            // Every byte before `at` is valid, so in the lossy text `at` starts U+FFFD
            // (3 bytes) and line and column are those of the bad byte.
            let shown = String::from_utf8_lossy(e.as_bytes());
            let d =
                Diagnostic::error(NOT_UTF8_CODE, format!("invalid UTF-8: byte 0x{byte:02x}"), Span::new(at, at + 3))
                    .with_label("not UTF-8")
                    .with_help("cmdgraph reads UTF-8 text; re-encode the file (e.g. `iconv -t UTF-8`)");
            Err(Failure::Rejected(d.render(&name, &shown)))
        }
    }
}

/// Writes `text` to stdout (`None` or `-`) or atomically to a file.
pub fn write_output(target: Option<&Path>, text: &str) -> Result<(), Failure> {
    write_output_bytes(target, text.as_bytes())
}

/// [`write_output`] of bytes (a bundle).
pub fn write_output_bytes(target: Option<&Path>, data: &[u8]) -> Result<(), Failure> {
    match target {
        Some(path) if !is_stdio(path) => {
            write_atomic(path, data).map_err(|e| Failure::Io(format!("error: cannot write `{}`: {e}", path.display())))
        }
        _ => {
            let mut out = io::stdout().lock();
            match out.write_all(data).and_then(|()| out.flush()) {
                // A reader that stopped early (`cmdgraph dot x | head`) is not an error.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(Failure::Io(format!("error: cannot write to stdout: {e}"))),
                Ok(()) => Ok(()),
            }
        }
    }
}

/// Replaces `path` with `data` so that a reader sees the old file or the complete new one,
/// and nothing of ours stays behind when the write fails or the process is killed.
///
/// On Linux the data goes into an unnamed file (`O_TMPFILE`) in the target's directory, is
/// synced, then gets a name (`linkat` of `/proc/self/fd/N`, a random `.NAME.XXXXXX.tmp`) and is
/// renamed over the target: a kill before the link leaves nothing, since the kernel frees an
/// unnamed file with its last descriptor. `linkat` cannot replace a file, hence the short-lived
/// name; a kill between the link and the rename (two system calls) leaves a complete temp
/// file, which the next write to the same target removes ([`remove_stale_temps`]). Where
/// `O_TMPFILE` is unavailable (another OS, or a file system without it) a named temp file is
/// written instead, with the same clean-up. On error `path` is untouched and the temp file
/// removed (dropping an unpersisted `NamedTempFile` deletes it). A target that exists and is
/// not a regular file (a device such as `/dev/null`, a FIFO) is written through instead.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    write_atomic_to(path, data).map_err(without_temp_path)
}

/// The error without the ` at path "DIR/.NAME.XXXXXX.tmp"` that tempfile appends: the user
/// named the target, not our temp file, and the message names the target already.
fn without_temp_path(e: io::Error) -> io::Error {
    if e.get_ref().is_none() {
        return e;
    }
    let text = e.to_string();
    match text.split_once(" at path \"") {
        Some((head, _)) => io::Error::new(e.kind(), head.to_string()),
        None => e,
    }
}

fn write_atomic_to(path: &Path, data: &[u8]) -> io::Result<()> {
    let path = resolve_symlink(path);
    let file_name =
        path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the output path names no file"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let existing = fs::metadata(&path).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"));
    }
    if existing.as_ref().is_some_and(|m| !m.is_file()) {
        // A device, FIFO or socket (`-o /dev/null`, `-o /dev/stdout`, a pipe): written
        // through, never replaced. Renaming a file over it would turn `/dev/null` into a
        // regular file that every later reader of "nothing" reads our output from.
        let mut out = fs::OpenOptions::new().write(true).open(&path)?;
        return out.write_all(data).and_then(|()| out.flush());
    }
    remove_stale_temps(&dir, file_name);
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(file_name);
    prefix.push(".");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp").rand_bytes(TEMP_RANDOM_LEN);
    let keep_mode = existing.as_ref().map(|m| m.permissions());
    if !unnamed::write(&builder, &dir, &path, data, keep_mode.as_ref())? {
        if let Some(perms) = new_file_permissions() {
            builder.permissions(perms);
        }
        let mut tmp = builder.tempfile_in(&dir)?;
        if let Some(perms) = keep_mode {
            // Keep the mode of the file being replaced.
            tmp.as_file().set_permissions(perms)?;
        }
        tmp.write_all(data)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path).map_err(|e| e.error)?;
    }
    // Make the rename itself durable; not every platform can open a directory for this.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Length of the random part of our temp names (`.NAME.` + this many letters/digits + `.tmp`),
/// fixed so that [`is_our_temp`] recognises exactly the names we make.
const TEMP_RANDOM_LEN: usize = 6;

/// Whether `name` is exactly a temp name [`write_atomic`] makes for `target`:
/// `.` + target + `.` + [`TEMP_RANDOM_LEN`] ASCII letters or digits + `.tmp`.
fn is_our_temp(name: &std::ffi::OsStr, target: &std::ffi::OsStr) -> bool {
    let (name, target) = (name.as_encoded_bytes(), target.as_encoded_bytes());
    let Some(rest) = name.strip_prefix(b".").and_then(|r| r.strip_prefix(target)) else { return false };
    let Some(random) = rest.strip_prefix(b".").and_then(|r| r.strip_suffix(b".tmp")) else { return false };
    random.len() == TEMP_RANDOM_LEN && random.iter().all(u8::is_ascii_alphanumeric)
}

/// Removes temp files that an interrupted earlier write to `dir/target` left: regular files
/// (never links or directories) named exactly as [`is_our_temp`] says, last changed before
/// this process started. The age test spares a concurrent `cmdgraph` writing the same target:
/// its temp file was linked or written after our start. The inode change time is used, not the
/// modification time, because `linkat` and writes both update it. Best effort: where the
/// start time is unknown (no `/proc`), nothing is removed; a file that cannot be removed stays.
fn remove_stale_temps(dir: &Path, target: &std::ffi::OsStr) {
    let Some(start) = process_start() else { return };
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if !is_our_temp(&entry.file_name(), target) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(entry.path()) else { continue };
        if meta.file_type().is_file() && changed(&meta).is_some_and(|t| t < start) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The inode change time (ctime) of a file.
#[cfg(unix)]
fn changed(meta: &fs::Metadata) -> Option<std::time::SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let secs = u64::try_from(meta.ctime()).ok()?;
    let nanos = u32::try_from(meta.ctime_nsec()).ok()?;
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

#[cfg(not(unix))]
fn changed(meta: &fs::Metadata) -> Option<std::time::SystemTime> {
    meta.modified().ok()
}

/// When this process started, from `/proc/self/stat` (start in clock ticks after boot) and
/// `/proc/uptime`: now less the process's age. Both count in 1/100 s, so the result is within
/// about 20 ms; a temp file changed in that window before our start is kept, which errs on the
/// side of leaving a file rather than removing a live one.
#[cfg(target_os = "linux")]
fn process_start() -> Option<std::time::SystemTime> {
    let now = std::time::SystemTime::now();
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces; field 22, the start
    // time, is the 20th after it.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = fs::read_to_string("/proc/uptime").ok()?.split_whitespace().next()?.parse().ok()?;
    let hz = rustix::param::clock_ticks_per_second();
    if hz == 0 {
        return None;
    }
    let age = uptime - ticks as f64 / hz as f64;
    // Keep well clear of the rounding: a process is at least 20 ms "older" than measured.
    now.checked_sub(std::time::Duration::from_secs_f64(age.max(0.0) + 0.02))
}

#[cfg(not(target_os = "linux"))]
fn process_start() -> Option<std::time::SystemTime> {
    None
}

/// The `O_TMPFILE` path of [`write_atomic`].
#[cfg(target_os = "linux")]
mod unnamed {
    use rustix::fs::{AtFlags, Mode, OFlags, CWD};
    use std::fs::{File, Permissions};
    use std::io::{self, Write};
    use std::os::fd::AsRawFd;
    use std::path::Path;

    /// Writes `data` to an unnamed file in `dir` and renames it over `path`. `Ok(false)` when
    /// the unnamed file could not be made or named (kernel or file system without
    /// `O_TMPFILE`, no `/proc`): the caller writes a named temp file instead, which reports
    /// any real error (a missing directory, no space) itself.
    pub fn write(
        builder: &tempfile::Builder<'_, '_>,
        dir: &Path,
        path: &Path,
        data: &[u8],
        keep_mode: Option<&Permissions>,
    ) -> io::Result<bool> {
        // 0666 less the umask, as `File::create` would give.
        let flags = OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC;
        let Ok(fd) = rustix::fs::open(dir, flags, Mode::from_raw_mode(0o666)) else { return Ok(false) };
        let mut file = File::from(fd);
        if let Some(perms) = keep_mode {
            // Keep the mode of the file being replaced.
            file.set_permissions(perms.clone())?;
        }
        file.write_all(data)?;
        file.sync_all()?;
        // The documented way to name an O_TMPFILE file without CAP_DAC_READ_SEARCH (open(2)).
        let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
        let link = |name: &Path| {
            rustix::fs::linkat(CWD, proc_path.as_str(), CWD, name, AtFlags::SYMLINK_FOLLOW).map_err(io::Error::from)
        };
        // `make_in` picks a fresh random name on `AlreadyExists`; the name is removed again if
        // the rename fails (dropping the unpersisted temp).
        let Ok(named) = builder.make_in(dir, link) else { return Ok(false) };
        named.persist(path).map_err(|e| e.error)?;
        Ok(true)
    }
}

/// Where `O_TMPFILE` does not exist, the named temp file is the only way.
#[cfg(not(target_os = "linux"))]
mod unnamed {
    use std::fs::Permissions;
    use std::io;
    use std::path::Path;

    /// Always `Ok(false)`: the caller writes a named temp file.
    pub fn write(
        _builder: &tempfile::Builder<'_, '_>,
        _dir: &Path,
        _path: &Path,
        _data: &[u8],
        _keep_mode: Option<&Permissions>,
    ) -> io::Result<bool> {
        Ok(false)
    }
}

/// Writing through a symlink replaces the file it points to, not the link.
fn resolve_symlink(path: &Path) -> PathBuf {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        if let Ok(real) = fs::canonicalize(path) {
            return real;
        }
    }
    path.to_path_buf()
}

/// The mode a plain `File::create` would give (0666 less the umask); tempfile's default is
/// 0600, which would make `fmt -o` quietly hide a new file from other users.
#[cfg(unix)]
fn new_file_permissions() -> Option<fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(fs::Permissions::from_mode(0o666))
}

#[cfg(not(unix))]
fn new_file_permissions() -> Option<fs::Permissions> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        let entries = fs::read_dir(dir).expect("read_dir");
        let names = entries.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned());
        names.filter(|n| n.ends_with(".tmp")).collect()
    }

    /// `-o /dev/null` once replaced the device with a regular file (the rename), and every
    /// later read of `/dev/null` on the machine returned our output. A FIFO stands in for the
    /// device here: it must still be a FIFO afterwards, and its reader gets the bytes.
    #[cfg(unix)]
    #[test]
    fn a_failed_write_names_the_target_not_the_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("missing").join("out.cgb");
        let e = write_atomic(&target, b"data").expect_err("no such directory");
        let text = e.to_string();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{text}");
        assert!(!text.contains(".tmp") && !text.contains("at path"), "{text}");
        assert!(text.contains("No such file or directory"), "{text}");
    }

    #[test]
    fn atomic_write_to_a_fifo_writes_through_and_keeps_it() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success(), "mkfifo");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(&fifo).unwrap())
        };
        write_atomic(&fifo, b"through the pipe").unwrap();
        let kind = fs::symlink_metadata(&fifo).unwrap().file_type();
        // Checked before joining: a replaced FIFO would leave the reader waiting forever.
        assert!(kind.is_fifo(), "the FIFO was replaced by a {kind:?}");
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        assert!(leftovers(dir.path()).is_empty(), "no temp file next to a device or FIFO");
    }

    #[test]
    fn atomic_write_creates_and_replaces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("out.cgir");
        write_atomic(&target, b"one").expect("create");
        assert_eq!(fs::read(&target).expect("read"), b"one");
        write_atomic(&target, b"two").expect("replace");
        assert_eq!(fs::read(&target).expect("read"), b"two");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_the_mode_of_the_replaced_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("out.cgir");
        fs::write(&target, "old").expect("write");
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).expect("chmod");
        write_atomic(&target, b"new").expect("replace");
        assert_eq!(fs::metadata(&target).expect("stat").permissions().mode() & 0o777, 0o640);
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_through_a_symlink_replaces_the_linked_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real.cgir");
        let link = dir.path().join("link.cgir");
        fs::write(&real, "old").expect("write");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        write_atomic(&link, b"new").expect("write through link");
        assert!(fs::symlink_metadata(&link).expect("lstat").file_type().is_symlink());
        assert_eq!(fs::read(&real).expect("read"), b"new");
    }

    #[test]
    fn failed_atomic_write_leaves_target_untouched_and_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("sub");
        fs::create_dir(&target).expect("mkdir");
        fs::write(target.join("keep"), "kept").expect("write");
        assert!(write_atomic(&target, b"data").is_err());
        assert_eq!(fs::read(target.join("keep")).expect("still there"), b"kept");
        assert!(leftovers(dir.path()).is_empty());
        let missing = dir.path().join("no/such/dir/out.cgir");
        assert!(write_atomic(&missing, b"data").is_err());
        assert!(!missing.exists());
    }

    #[test]
    fn only_exactly_our_temp_names_are_recognised() {
        use std::ffi::OsStr;
        let ours = |n: &str| is_our_temp(OsStr::new(n), OsStr::new("out.cgb"));
        assert!(ours(".out.cgb.a1B2c3.tmp"));
        for near in [
            ".out.cgb.a1B2c.tmp",
            ".out.cgb.a1B2c34.tmp",
            ".out.cgb.a1-2c3.tmp",
            "out.cgb.a1B2c3.tmp",
            ".out.cgb.a1B2c3.tmp~",
            ".out.cgbx.a1B2c3.tmp",
            ".xout.cgb.a1B2c3.tmp",
            ".out.cgb..tmp",
            "out.cgb",
        ] {
            assert!(!ours(near), "{near}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_temp_file_changed_after_the_process_started_is_kept() {
        // A concurrent writer's temp file: younger than this test process, so not stale.
        let dir = tempfile::tempdir().expect("tempdir");
        let young = dir.path().join(".out.cgb.a1B2c3.tmp");
        fs::write(&young, "in progress").expect("write");
        assert!(process_start().is_some_and(|t| t < std::time::SystemTime::now()));
        remove_stale_temps(dir.path(), std::ffi::OsStr::new("out.cgb"));
        assert!(young.exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_write_goes_through_an_unnamed_file() {
        // `O_TMPFILE` works on the test's temp directory (tmpfs or ext4); if it did not, the
        // named fallback would hide a regression of the unnamed path.
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("out.cgb");
        let builder = tempfile::Builder::new();
        assert!(unnamed::write(&builder, dir.path(), &target, b"data", None).expect("write"));
        assert_eq!(fs::read(&target).expect("read"), b"data");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn invalid_utf8_is_a_located_diagnostic() {
        let Err(Failure::Rejected(text)) =
            decode("f.cgir".into(), b"usm @x : f32[4]\nusm @\xff : f32[4]\n".to_vec(), MAX_INPUT_BYTES)
        else {
            panic!("invalid UTF-8 accepted");
        };
        assert!(text.contains("error[E0000]: invalid UTF-8: byte 0xff"), "{text}");
        assert!(text.contains("f.cgir:2:6"), "{text}");
    }

    #[test]
    fn input_over_the_limit_is_rejected_at_1_1() {
        let Err(Failure::Rejected(text)) = decode("big.cgir".into(), b"usm @x : f32[4]\n".to_vec(), 8) else {
            panic!("oversized input accepted");
        };
        assert!(text.contains("error[E0009]: file is more than the limit of 8 bytes"), "{text}");
        assert!(text.contains("big.cgir:1:1"), "{text}");
    }

    #[test]
    fn a_bundle_is_recognised_by_its_magic_and_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("app.cgb");
        let mut bytes = cmdgraph_ir::bundle::MAGIC.to_vec();
        bytes.extend_from_slice(&[0xff, 0, 1, 2]);
        fs::write(&path, &bytes).expect("write");
        match read_input(&path) {
            Err(Failure::Rejected(text)) => {
                assert!(text.contains("is a cmdgraph bundle"), "{text}");
                assert!(text.contains(&format!("cmdgraph inspect --ir source {}", path.display())), "{text}");
            }
            _ => panic!("a bundle read as text"),
        }
        assert!(matches!(read_text_or_bundle(&path), Ok(Source::Bundle(b)) if b.bytes == bytes));
    }

    #[test]
    fn utf8_input_is_kept_as_is() {
        let input = decode("f".into(), "// é\n".as_bytes().to_vec(), MAX_INPUT_BYTES).map_err(|_| ()).expect("valid");
        assert_eq!(input.text, "// é\n");
        assert_eq!(input.name, "f");
    }
}
