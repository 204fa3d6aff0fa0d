//! ARCHITECTURE.md stays a map that can be read (issue 28): every workspace crate has a
//! section of its own (`## `dir/` — ...`), every module at the top of each crate's `src/` is
//! named in it, and no table cell is a wall of text.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace members of the root Cargo.toml (`members = ["ir", ...]`).
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest.lines().find(|l| l.trim_start().starts_with("members")).expect("a members line");
    line.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

fn architecture() -> String {
    std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

#[test]
fn every_crate_has_a_section() {
    let map = architecture();
    let members = members();
    assert!(members.len() >= 9, "members not found: {members:?}");
    let missing: Vec<&String> = members.iter().filter(|m| !map.contains(&format!("\n## `{m}/`"))).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md has no `## `crate/`` section for {missing:?}");
}

#[test]
fn every_top_level_module_is_named() {
    let map = architecture();
    let mut missing = Vec::new();
    for member in members() {
        let src = repo().join(&member).join("src");
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&src)
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().expect("a name").to_string_lossy().into_owned();
            let is_module = path.is_dir() || name.ends_with(".rs");
            if is_module && !["lib.rs", "main.rs", "mod.rs"].contains(&name.as_str()) && !map.contains(&name) {
                missing.push(format!("{member}/src/{name}"));
            }
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md does not name:\n{}", missing.join("\n"));
}

#[test]
fn table_cells_stay_readable() {
    // The executor's row was one 1,800-character cell; a cell past this is a section's work.
    const MAX_CELL: usize = 700;
    let map = architecture();
    let mut long = Vec::new();
    for (i, line) in map.lines().enumerate() {
        if line.starts_with('|') {
            for cell in line.split('|') {
                if cell.chars().count() > MAX_CELL {
                    long.push(format!("ARCHITECTURE.md:{}: a cell of {} characters", i + 1, cell.chars().count()));
                }
            }
        }
    }
    assert!(long.is_empty(), "{}", long.join("\n"));
}
