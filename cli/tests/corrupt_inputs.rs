//! The `cmdgraph` binary on corrupted inputs: it exits with 0 (accepted) or 1 (rejected with a
//! diagnostic), never 101 (a panic) or a signal (a stack overflow, an abort), never hangs, and
//! every rejection names `file:line:col`.
//!
//! The inputs are the same deterministic mutations as `ir/tests/corrupt.rs`, sampled more
//! thinly because each one costs a process, plus raw bytes the library cannot be handed
//! (invalid UTF-8).

#[path = "../../ir/tests/corrupt/mutations.rs"]
mod mutations;

use mutations::{edits, hostile, mutants, Budget, Mutant};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SEED: u64 = 0x0BAD_5EED;

/// Per example: ~60 processes.
const BUDGET: Budget =
    Budget { truncations: 24, line_deletions: 10, line_duplications: 10, byte_flips: 12, splices: 4 };

/// A generous bound: a healthy run on a 1 MB input takes well under a second.
const TIMEOUT: Duration = Duration::from_secs(60);

const FILE: &str = "input.cgir";

fn examples() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect();
    out.sort();
    out
}

/// Whether `text` contains `FILE:<line>:<col>`.
fn has_location(text: &str) -> bool {
    let pattern = format!("{FILE}:");
    text.match_indices(&pattern).any(|(at, _)| {
        let rest = &text[at + pattern.len()..];
        let line_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if line_len == 0 || rest.as_bytes().get(line_len) != Some(&b':') {
            return false;
        }
        rest[line_len + 1..].bytes().take_while(u8::is_ascii_digit).count() > 0
    })
}

/// Runs `cmdgraph <subcommand> input.cgir` in `dir` and returns a defect description, if any.
fn run_one(dir: &Path, subcommand: &str, m: &Mutant) -> Option<String> {
    std::fs::write(dir.join(FILE), &m.bytes).unwrap_or_else(|e| panic!("cannot write input: {e}"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .args([subcommand, FILE])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start cmdgraph: {e}"));
    // Drain stderr on a thread so a chatty child cannot block on a full pipe.
    let mut stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr pipe"));
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Some(format!("{subcommand} {}: still running after {TIMEOUT:?}", m.what));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => panic!("waiting for cmdgraph: {e}"),
        }
    };
    let stderr = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let tail: String = stderr.lines().take(6).collect::<Vec<_>>().join("\n");
    match status.code() {
        Some(0) => None,
        Some(1) if has_location(&stderr) => None,
        Some(1) => Some(format!("{subcommand} {}: exit 1 without `{FILE}:line:col` in stderr:\n{tail}", m.what)),
        Some(code) => Some(format!("{subcommand} {}: exit code {code}:\n{tail}", m.what)),
        None => Some(format!("{subcommand} {}: killed by a signal ({status}):\n{tail}", m.what)),
    }
}

fn assert_all_clean(subcommand: &str, inputs: &[Mutant]) {
    assert!(!inputs.is_empty(), "no inputs were generated");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let defects: Vec<String> = inputs.iter().filter_map(|m| run_one(dir.path(), subcommand, m)).collect();
    assert!(
        defects.is_empty(),
        "{} of {} corrupted inputs made `cmdgraph {subcommand}` misbehave:\n{}",
        defects.len(),
        inputs.len(),
        defects.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn verify_survives_mutated_examples() {
    let examples = examples();
    assert!(examples.len() >= 7, "expected the seven examples, found {}", examples.len());
    let mut inputs = Vec::new();
    for (i, (_, src)) in examples.iter().enumerate() {
        inputs.extend(mutants(src, SEED + i as u64, BUDGET));
        inputs.extend(edits(src, 12));
    }
    assert_all_clean("verify", &inputs);
}

#[test]
fn verify_survives_hostile_inputs() {
    assert_all_clean("verify", &hostile(SEED, 1 << 20, 16, 4096));
}

#[test]
fn dot_survives_hostile_inputs() {
    // 64 KB lines: the 1 MB ones already went through the same parser in the test above.
    assert_all_clean("dot", &hostile(SEED ^ 1, 64 << 10, 8, 4096));
}

#[test]
fn invalid_utf8_is_rejected_with_a_location() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    std::fs::write(dir.path().join(FILE), b"usm @x : f32[4]\nusm @\xff : f32[4]\n")
        .unwrap_or_else(|e| panic!("write: {e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .args(["verify", FILE])
        .current_dir(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run cmdgraph: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(has_location(&stderr), "no location in:\n{stderr}");
    assert!(stderr.contains(&format!("{FILE}:2:")), "the bad byte is on line 2:\n{stderr}");
}
