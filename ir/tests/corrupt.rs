//! Corrupted inputs never make the parser, the verifier or the printer panic.
//!
//! Every example in `examples/` is mutated deterministically (truncated at many offsets, each
//! line deleted or duplicated, bytes flipped and lines spliced with a fixed seed) and a set of
//! hostile inputs is added (1 MB lines, 10,000-deep nesting, random bytes, invalid UTF-8
//! read lossily, since the library takes `&str`). For each input, under `catch_unwind`:
//! parse; on success verify and check that printing is a fixed point; on failure render every
//! diagnostic. Every diagnostic must point inside the source. The binary's behaviour on the
//! same inputs is checked by `cli/tests/corrupt_inputs.rs`.

#[path = "corrupt/mutations.rs"]
mod mutations;

use cmdgraph_ir::diag::Diagnostic;
use mutations::{hostile, mutants, Budget, Mutant};
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;

const SEED: u64 = 0x00C0_FFEE;

/// Per example: ~1,000 inputs, a few seconds in a debug build.
const BUDGET: Budget =
    Budget { truncations: 400, line_deletions: 1000, line_duplications: 1000, byte_flips: 300, splices: 100 };

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Keeps panic messages for the report instead of printing one per caught panic.
fn quiet_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let msg = format!("{info}");
            LAST_PANIC.with(|p| *p.borrow_mut() = msg);
        }));
    });
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
            return Err(format!("{stage} diagnostic {} `{}` has span {:?} outside 0..{}", d.code, d.message, d.span, source.len()));
        }
        if d.render("input.cgir", source).is_empty() {
            return Err(format!("{stage} diagnostic {} renders to nothing", d.code));
        }
    }
    Ok(())
}

/// Parse, then verify and round-trip, or render the errors. `Err` describes a defect.
fn exercise(source: &str) -> Result<(), String> {
    match cmdgraph_ir::text::parse(source) {
        Err(diags) => check_located(&diags, source, "parse"),
        Ok(module) => {
            if let Err(diags) = cmdgraph_ir::verify::verify(&module) {
                check_located(&diags, source, "verify")?;
            }
            let printed = cmdgraph_ir::text::print(&module);
            let reparsed = cmdgraph_ir::text::parse(&printed).map_err(|d| {
                let first = d.first().map(|d| d.render("printed.cgir", &printed)).unwrap_or_default();
                format!("printed text does not parse:\n{first}")
            })?;
            let again = cmdgraph_ir::text::print(&reparsed);
            if again != printed {
                return Err("printing is not a fixed point: print(parse(print(m))) != print(m)".to_string());
            }
            Ok(())
        }
    }
}

/// Runs every input and returns one line per defect.
fn run_all(inputs: &[Mutant], origin: &str) -> Vec<String> {
    quiet_panics();
    let mut defects = Vec::new();
    for m in inputs {
        let text = String::from_utf8_lossy(&m.bytes);
        match panic::catch_unwind(AssertUnwindSafe(|| exercise(&text))) {
            Ok(Ok(())) => {}
            Ok(Err(defect)) => defects.push(format!("{origin}: {}: {defect}", m.what)),
            Err(_) => {
                let msg = LAST_PANIC.with(|p| p.borrow().clone());
                defects.push(format!("{origin}: {}: PANIC: {msg}", m.what));
            }
        }
    }
    defects
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
    let mut defects = Vec::new();
    let mut total = 0;
    for (i, (path, src)) in examples.iter().enumerate() {
        let inputs = mutants(src, SEED + i as u64, BUDGET);
        total += inputs.len();
        defects.extend(run_all(&inputs, &path.file_name().unwrap_or_default().to_string_lossy()));
    }
    assert_no_defects(defects, total);
}

#[test]
fn hostile_inputs_never_panic() {
    let inputs = hostile(SEED, 400, 4096);
    let defects = run_all(&inputs, "hostile");
    assert_no_defects(defects, inputs.len());
}

#[test]
fn deep_nesting_is_a_located_diagnostic() {
    // The nesting limit is 256 (docs/ir.md): 10,000 levels must be refused, with a location.
    for text in [mutations::nested_ifs(10_000), mutations::nested_fors(10_000)] {
        let diags = match cmdgraph_ir::text::parse(&text) {
            Ok(_) => panic!("10,000 nested regions were accepted"),
            Err(diags) => diags,
        };
        check_located(&diags, &text, "parse").unwrap_or_else(|e| panic!("{e}"));
    }
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
