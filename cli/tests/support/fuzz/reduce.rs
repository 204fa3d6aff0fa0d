//! The fuzzer's reducer: a failing kernel is cut down by deleting whole blocks (`for`,
//! `if`/`else`) and single lines of its body, keeping each deletion only while the kernel
//! still parses, verifies, runs on the interpreter and fails the same way (the same output
//! object, or the same kind of error) at the same `-O` level, and still passes the levels it
//! passed. Its parameters, launch and inputs stay as generated, and it runs alone with the
//! bytes its batch gave its memory objects, so the reduced kernel runs with the original's
//! data (a kernel that failed only with its batch's inputs reduces too). `CMDGRAPH_FUZZ_REDUCE=1` reduces every failure of a run
//! (cli/tests/kernel_fuzz.rs; docs/reliability.md, "Kernel fuzzer").

use super::{prepare_with, trial, BatchMemory, Device, Entry, Stats};

/// The lines of a kernel's text that may go: every line but the header and the last `}`.
fn body(lines: &[String]) -> std::ops::Range<usize> {
    1..lines.len().saturating_sub(1)
}

/// The line that closes the block opened at line `open` (a line ending in `{`), counting an
/// `} else {` as part of the same block.
fn block_end(lines: &[String], open: usize) -> Option<usize> {
    let mut depth = 1usize;
    for (k, line) in lines.iter().enumerate().skip(open + 1) {
        let t = line.trim();
        if t.starts_with('}') {
            depth -= 1;
            if depth == 0 && !t.ends_with('{') {
                return Some(k);
            }
            if t.ends_with('{') {
                depth += 1;
            }
        } else if t.ends_with('{') {
            depth += 1;
        }
    }
    None
}

/// Deletion candidates of the current text, largest first: whole blocks, then single lines
/// from the bottom up (so a value's uses go before its definition is tried).
fn candidates(lines: &[String]) -> Vec<std::ops::RangeInclusive<usize>> {
    let mut blocks: Vec<std::ops::RangeInclusive<usize>> = body(lines)
        .filter(|&i| {
            let t = lines[i].trim();
            t.ends_with('{') && !t.starts_with('}')
        })
        .filter_map(|i| Some(i..=block_end(lines, i)?))
        .collect();
    blocks.sort_by_key(|r| std::cmp::Reverse(r.end() - r.start()));
    let singles = body(lines).rev().filter(|&i| {
        let t = lines[i].trim();
        !t.ends_with('{') && !t.starts_with('}')
    });
    blocks.into_iter().chain(singles.map(|i| i..=i)).collect()
}

/// Reduces `text` (a kernel's `kernel @k(...) { ... }`) while `still_fails` holds of the
/// smaller text; returns the smallest text found and how many candidates were tried.
pub fn reduce_text(text: &str, mut still_fails: impl FnMut(&str) -> bool) -> (String, usize) {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut tried = 0;
    loop {
        let mut changed = false;
        let mut k = 0;
        loop {
            let cands = candidates(&lines);
            let Some(range) = cands.get(k).cloned() else { break };
            let mut next = lines.clone();
            next.drain(range);
            tried += 1;
            let candidate = next.join("\n") + "\n";
            if still_fails(&candidate) {
                lines = next;
                changed = true;
                // The candidate list shifted; this index now names the next one.
            } else {
                k += 1;
            }
        }
        if !changed {
            return (lines.join("\n") + "\n", tried);
        }
    }
}

/// The kind of a failure message, which a reduced kernel must keep: the output object for
/// a mismatch (`(fma once) @k7_o_u32: ...` is `@k7_o_u32`), else the part before the first
/// `:` (`compile`, `vulkan run`, `3 validation messages, first`).
pub fn failure_kind(message: &str) -> String {
    if let Some(rest) = message.strip_prefix('(') {
        let after = rest.split_once(") ").map_or(rest, |(_, a)| a);
        return after.split(':').next().unwrap_or("").to_string();
    }
    message.split(':').next().unwrap_or("").to_string()
}

/// Reduces the kernel of `entry`, which fails at -O`opt` with `message` and passes at each
/// of `passes`, on this machine's device, running it alone with the memory its batch gave it
/// (`memory`). Returns the reduced entry and the candidates tried.
pub fn reduce(entry: &Entry, memory: &BatchMemory, opt: u8, message: &str, passes: &[u8]) -> (Entry, usize) {
    let kind = failure_kind(message);
    let mut stats = Stats::default();
    let with_text = |text: &str| Entry {
        index: entry.index,
        seed: entry.seed,
        kernel: super::gen::Kernel { text: text.to_string(), ..entry.kernel.clone() },
    };
    let (text, tried) = reduce_text(&entry.kernel.text, |candidate| {
        let e = with_text(candidate);
        let batch = std::slice::from_ref(&e);
        let Ok(p) = prepare_with(batch, Some(memory), &mut stats) else { return false };
        let fails_alike = match trial(&p, batch, opt, Device::Local, &mut stats) {
            Ok(()) => false,
            Err(bad) => bad.iter().any(|(_, m)| failure_kind(m) == kind),
        };
        fails_alike && passes.iter().all(|&o| trial(&p, batch, o, Device::Local, &mut stats).is_ok())
    });
    (with_text(&text), tried)
}
