//! Bundles are byte-for-byte deterministic and the same on every machine: each module in
//! tests/golden/bundle-hashes.txt is compiled twice by the binary, in separate processes
//! from different working directories and input paths, the two bundles must be identical,
//! and their content hash must be the committed one (bash scripts/golden-hashes.sh
//! regenerates the file when a change is meant to change bundles).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn compile(input: &Path, output: &Path, cwd: &Path) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph"))
        .current_dir(cwd)
        .arg("compile")
        .arg(input)
        .arg("-o")
        .arg(output)
        .output()
        .expect("cmdgraph runs");
    assert!(out.status.success(), "compile {}: {}", input.display(), String::from_utf8_lossy(&out.stderr));
    std::fs::read(cwd.join(output)).expect("bundle written")
}

fn manifest() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("tests/golden/bundle-hashes.txt")).expect("manifest");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split_whitespace();
            let path = parts.next().unwrap_or_default().to_string();
            let hash = parts.next().unwrap_or_default().to_string();
            (path, hash)
        })
        .collect()
}

#[test]
fn every_listed_module_compiles_to_identical_bytes_with_the_committed_hash() {
    let entries = manifest();
    assert!(entries.len() >= 2, "the manifest lists modules");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut wrong = Vec::new();
    for (path, expected) in entries {
        let source = root().join(&path);
        // Second compile: a copy under another name, from another directory.
        let copy = dir.path().join("copy.cgir");
        std::fs::copy(&source, &copy).expect("copy");
        // External SPIR-V kernels are found relative to the module: take them along.
        if let Some(kernels) = source.parent().map(|p| p.join("kernels")).filter(|k| k.is_dir()) {
            std::fs::create_dir_all(dir.path().join("kernels")).expect("kernels dir");
            for entry in std::fs::read_dir(kernels).expect("kernels") {
                let from = entry.expect("entry").path();
                std::fs::copy(&from, dir.path().join("kernels").join(from.file_name().expect("name"))).expect("copy");
            }
        }
        // Shader kernels' files likewise (beside the module).
        for entry in std::fs::read_dir(source.parent().expect("a directory")).expect("module dir") {
            let from = entry.expect("entry").path();
            if from.extension().is_some_and(|e| e == "wgsl" || e == "comp") {
                std::fs::copy(&from, dir.path().join(from.file_name().expect("name"))).expect("copy");
            }
        }
        let a = compile(&source, &dir.path().join("a.cgb"), &root());
        let b = compile(Path::new("copy.cgir"), Path::new("b.cgb"), dir.path());
        assert!(a == b, "{path}: two compiles gave different bytes");
        let bundle = cmdgraph_ir::bundle::Bundle::from_bytes(&a).unwrap_or_else(|e| panic!("{path}: {e}"));
        if bundle.content_hash != expected {
            wrong.push(format!("{path}: committed {expected}, built {}", bundle.content_hash));
        }
    }
    assert!(
        wrong.is_empty(),
        "bundle hashes differ from tests/golden/bundle-hashes.txt (if the change is intended, \
         run bash scripts/golden-hashes.sh and commit the file):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_example_is_in_the_manifest() {
    let listed: Vec<String> = manifest().into_iter().map(|(p, _)| p).collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("examples")).expect("examples") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".cgir") && !listed.contains(&format!("examples/{name}")) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "add with bash scripts/golden-hashes.sh examples/NAME.cgir: {missing:?}");
}
