//! Every `examples/*.cgir` parses, verifies, is already in canonical form, and printing it is
//! a deterministic fixed point: `print(parse(print(m))) == print(m)`, byte for byte.

use std::path::{Path, PathBuf};

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

fn parse_or_panic(name: &str, text: &str) -> cmdgraph_ir::Module {
    cmdgraph_ir::text::parse(text)
        .unwrap_or_else(|diags| panic!("{name} does not parse:\n{}", cmdgraph_ir::diag::render_all(&diags, name, text)))
}

#[test]
fn the_examples_are_all_there() {
    let names: Vec<String> =
        examples().iter().map(|(p, _)| p.file_name().unwrap_or_default().to_string_lossy().into_owned()).collect();
    for expected in [
        "dynamic_update.cgir",
        "mlp_layer.cgir",
        "reduction.cgir",
        "saxpy_chain.cgir",
        "stencil2d.cgir",
        "subgraph.cgir",
        "temporaries_host_task.cgir",
    ] {
        assert!(names.iter().any(|n| n == expected), "examples/{expected} is missing (have {names:?})");
    }
}

#[test]
fn every_example_parses_and_verifies() {
    for (path, text) in examples() {
        let name = path.display().to_string();
        let module = parse_or_panic(&name, &text);
        if let Err(diags) = cmdgraph_ir::verify::verify(&module) {
            panic!("{name} does not verify:\n{}", cmdgraph_ir::diag::render_all(&diags, &name, &text));
        }
        assert!(module.graphs.len() >= 1, "{name} defines no graph");
        assert!(module.kernels.len() >= 1, "{name} defines no kernel");
    }
}

#[test]
fn every_example_is_in_canonical_form() {
    for (path, text) in examples() {
        let name = path.display().to_string();
        let printed = cmdgraph_ir::text::print(&parse_or_panic(&name, &text));
        if printed != text {
            let line = printed.lines().zip(text.lines()).position(|(a, b)| a != b).map_or_else(
                || printed.lines().count().min(text.lines().count()) + 1,
                |i| i + 1,
            );
            panic!(
                "{name} is not in canonical form (first difference at line {line}):\n--- file\n{}\n--- printed\n{}",
                text.lines().nth(line - 1).unwrap_or("<end of file>"),
                printed.lines().nth(line - 1).unwrap_or("<end of file>")
            );
        }
    }
}

#[test]
fn printing_is_a_deterministic_fixed_point() {
    for (path, text) in examples() {
        let name = path.display().to_string();
        let module = parse_or_panic(&name, &text);
        let first = cmdgraph_ir::text::print(&module);
        let second = cmdgraph_ir::text::print(&module);
        assert_eq!(first, second, "{name}: two prints of one module differ");
        let reparsed = parse_or_panic(&format!("{name} (printed)"), &first);
        assert!(reparsed == module, "{name}: parse(print(m)) != m");
        assert_eq!(cmdgraph_ir::text::print(&reparsed), first, "{name}: print(parse(print(m))) != print(m)");
    }
}
