//! Corrupted inputs never make the parser, the verifier or the printer panic.
//!
//! Every example in `examples/` is mutated deterministically (truncated at many offsets, each
//! line deleted or duplicated, bytes flipped and lines spliced with a fixed seed) and a set of
//! hostile inputs is added (1 MB lines, 10,000-deep nesting, random bytes, invalid UTF-8
//! read lossily, since the library takes `&str`). For each input, under `catch_unwind`:
//! parse; on success verify (and draw it as DOT when it verifies) and check that printing is
//! a fixed point; on failure render every diagnostic. Every diagnostic must point inside the
//! source. The binary's behaviour on the same inputs is checked by
//! `cli/tests/corrupt_inputs.rs`.
//!
//! The work runs on a thread with a 2 MiB stack, what `std::thread::spawn` gives, so a
//! library user parsing on a worker thread is covered too. Regions nested to the limit of
//! 256 need between 1.5 and 1.75 MiB in a debug build (about 6.5 KiB per level) and less
//! than 512 KiB in release; a change that makes the recursion's frames 15% larger aborts
//! this test with a stack overflow (docs/reliability.md, "Stack depth").

#[path = "corrupt/mutations.rs"]
mod mutations;

use cmdgraph_ir::diag::Diagnostic;
use mutations::{edits, hostile, mutants, Budget, Mutant};
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;

const SEED: u64 = 0x00C0_FFEE;

/// The stack of a thread made by `std::thread::spawn` (and of a test thread).
const STACK: usize = 2 << 20;

/// Per example: ~1,000 inputs, a few seconds in a debug build.
const BUDGET: Budget =
    Budget { truncations: 400, line_deletions: 1000, line_duplications: 1000, byte_flips: 300, splices: 100 };

/// Semantic edits per example (all of them for most examples).
const EDITS: usize = 400;

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
    /// Whether this thread is inside [`caught`], where a panic is a finding to report.
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keeps the messages of panics caught by [`caught`] for the report instead of printing one
/// per input; every other panic (a failing assertion) is printed as usual.
fn quiet_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(|c| c.get()) {
                let msg = format!("{info}");
                LAST_PANIC.with(|p| *p.borrow_mut() = msg);
            } else {
                default(info);
            }
        }));
    });
}

/// Runs `f` under `catch_unwind`; a panic becomes `Err` with its message.
fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    CATCHING.with(|c| c.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(false));
    result.map_err(|_| LAST_PANIC.with(|p| p.borrow().clone()))
}

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

/// Diagnostics must point at real text: a defined span inside the source.
fn check_located(diags: &[Diagnostic], source: &str, stage: &str) -> Result<(), String> {
    if diags.is_empty() {
        return Err(format!("{stage} failed with no diagnostic"));
    }
    for d in diags {
        let in_source = d.span.is_defined() && d.span.start <= d.span.end && d.span.end as usize <= source.len();
        if !in_source {
            return Err(format!(
                "{stage} diagnostic {} `{}` has span {:?} outside 0..{}",
                d.code,
                d.message,
                d.span,
                source.len()
            ));
        }
        if d.render("input.cgir", source).is_empty() {
            return Err(format!("{stage} diagnostic {} renders to nothing", d.code));
        }
    }
    Ok(())
}

/// How far an input got.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The parser refused it.
    Rejected,
    /// It parsed; the verifier refused it.
    Invalid,
    /// It parsed and verified.
    Valid,
}

/// Parse, then verify and round-trip, or render the errors. `Err` describes a defect.
fn exercise(source: &str) -> Result<Outcome, String> {
    match cmdgraph_ir::text::parse(source) {
        Err(diags) => check_located(&diags, source, "parse").map(|()| Outcome::Rejected),
        Ok(module) => {
            let outcome = match cmdgraph_ir::verify::verify(&module) {
                Err(diags) => {
                    check_located(&diags, source, "verify")?;
                    Outcome::Invalid
                }
                // `cmdgraph dot` draws only verified modules.
                Ok(()) => {
                    let dot = cmdgraph_ir::dot::to_dot(&module, &cmdgraph_ir::dot::DotOptions::default());
                    if !dot.contains("digraph") {
                        return Err("to_dot wrote no digraph".to_string());
                    }
                    Outcome::Valid
                }
            };
            let printed = cmdgraph_ir::text::print(&module);
            let reparsed = cmdgraph_ir::text::parse(&printed).map_err(|d| {
                let first = d.first().map(|d| d.render("printed.cgir", &printed)).unwrap_or_default();
                format!("printed text does not parse:\n{first}")
            })?;
            let again = cmdgraph_ir::text::print(&reparsed);
            if again != printed {
                return Err("printing is not a fixed point: print(parse(print(m))) != print(m)".to_string());
            }
            Ok(outcome)
        }
    }
}

/// What a batch of inputs did.
#[derive(Default)]
struct Report {
    /// One line per defect.
    defects: Vec<String>,
    /// Inputs per outcome: rejected by the parser, by the verifier, accepted.
    rejected: usize,
    invalid: usize,
    valid: usize,
}

impl Report {
    fn add(&mut self, other: Report) {
        self.defects.extend(other.defects);
        self.rejected += other.rejected;
        self.invalid += other.invalid;
        self.valid += other.valid;
    }
}

/// Runs every input on a thread with a default-sized stack and returns one line per defect.
fn run_all(inputs: &[Mutant], origin: &str) -> Report {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(STACK)
            .spawn_scoped(scope, || run_all_here(inputs, origin))
            .unwrap_or_else(|e| panic!("cannot start a thread: {e}"))
            .join()
            .unwrap_or_else(|_| Report {
                defects: vec![format!("{origin}: the checking thread itself panicked")],
                ..Report::default()
            })
    })
}

fn run_all_here(inputs: &[Mutant], origin: &str) -> Report {
    quiet_panics();
    let mut report = Report::default();
    for m in inputs {
        let text = String::from_utf8_lossy(&m.bytes);
        match caught(|| exercise(&text)) {
            Ok(Ok(Outcome::Rejected)) => report.rejected += 1,
            Ok(Ok(Outcome::Invalid)) => report.invalid += 1,
            Ok(Ok(Outcome::Valid)) => report.valid += 1,
            Ok(Err(defect)) => report.defects.push(format!("{origin}: {}: {defect}", m.what)),
            Err(msg) => report.defects.push(format!("{origin}: {}: PANIC: {msg}", m.what)),
        }
    }
    report
}

fn assert_no_defects(defects: Vec<String>, total: usize) {
    assert!(total > 0, "no inputs were generated");
    assert!(
        defects.is_empty(),
        "{} of {total} corrupted inputs exposed a defect:\n{}",
        defects.len(),
        defects.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn mutated_examples_never_panic() {
    let examples = examples();
    assert!(examples.len() >= 7, "expected the seven examples, found {}", examples.len());
    let mut report = Report::default();
    let mut total = 0;
    for (i, (path, src)) in examples.iter().enumerate() {
        let mut inputs = mutants(src, SEED + i as u64, BUDGET);
        inputs.extend(edits(src, EDITS));
        total += inputs.len();
        report.add(run_all(&inputs, &path.file_name().unwrap_or_default().to_string_lossy()));
    }
    // The mutations must reach every stage, not only the lexer: many mutants (a deleted
    // comment line, a duplicated statement) still parse, and some of those still verify.
    let (rejected, invalid, valid) = (report.rejected, report.invalid, report.valid);
    eprintln!("{total} mutants: {rejected} rejected by the parser, {invalid} by the verifier, {valid} valid");
    assert!(invalid * 50 >= total, "only {invalid} of {total} mutants reached the verifier and failed it");
    assert!(valid * 20 >= total, "only {valid} of {total} mutants verified (so few printed and re-parsed)");
    assert!(rejected * 2 >= total, "only {rejected} of {total} mutants were syntax or name errors");
    assert_no_defects(report.defects, total);
}

#[test]
fn hostile_inputs_never_panic() {
    let inputs = hostile(SEED, 1 << 20, 400, 4096);
    let report = run_all(&inputs, "hostile");
    assert_no_defects(report.defects, inputs.len());
}

#[test]
fn deep_nesting_is_a_located_diagnostic() {
    // The nesting limit is 256 (docs/ir.md), the kernel's braces included: 255 nested regions
    // are accepted, 256 and 10,000 are refused with a location.
    let inputs = [(255, true), (256, false), (10_000, false)];
    let defects: Vec<String> = inputs
        .iter()
        .flat_map(|&(depth, ok)| {
            [("if", mutations::nested_ifs(depth)), ("for", mutations::nested_fors(depth))].map(|(kind, text)| {
                let m = Mutant { what: format!("{depth} nested {kind} regions"), bytes: text.into_bytes() };
                (m, ok)
            })
        })
        .filter_map(|(m, ok)| {
            let text = String::from_utf8_lossy(&m.bytes).into_owned();
            let outcome = std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn_scoped(scope, || cmdgraph_ir::text::parse(&text).map(|_| ()))
                    .unwrap_or_else(|e| panic!("cannot start a thread: {e}"))
                    .join()
                    .unwrap_or_else(|_| panic!("{}: parse panicked", m.what))
            });
            match (outcome, ok) {
                (Ok(()), true) => None,
                (Ok(()), false) => Some(format!("{}: accepted, beyond the nesting limit", m.what)),
                (Err(d), true) => Some(format!(
                    "{}: rejected within the limit: {}",
                    m.what,
                    d.first().map_or("no diagnostic", |x| x.message.as_str())
                )),
                (Err(d), false) => check_located(&d, &text, "parse").err().map(|e| format!("{}: {e}", m.what)),
            }
        })
        .collect();
    assert!(defects.is_empty(), "{}", defects.join("\n"));
}

#[test]
fn truncating_an_example_anywhere_is_an_error_or_a_valid_prefix() {
    // Cutting saxpy_chain.cgir inside its last graph must never leave a module that parses:
    // the graph's closing brace is missing.
    let examples = examples();
    let (path, src) = examples
        .iter()
        .find(|(p, _)| p.ends_with("saxpy_chain.cgir"))
        .unwrap_or_else(|| panic!("examples/saxpy_chain.cgir missing"));
    let graph_start = src.find("graph @main").unwrap_or_else(|| panic!("{} has no graph @main", path.display()));
    let end = src.trim_end().len();
    for cut in (graph_start + 1..end).step_by(7) {
        if !src.is_char_boundary(cut) {
            continue;
        }
        assert!(cmdgraph_ir::text::parse(&src[..cut]).is_err(), "prefix of {cut} bytes parsed");
    }
}
