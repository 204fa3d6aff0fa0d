//! The fast path changes nothing but speed: every example and test input, and many
//! corruptions of the examples, parse to the same module with the same spans, or to the
//! same errors, with and without it.

use super::super::parse_module_with;
use crate::arena::Arena;
use crate::kernel::KernelBody;
use crate::module::Module;
use crate::text::print;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Every span of a module, which `Module`'s equality leaves out.
fn spans(m: &Module) -> String {
    fn arena<T>(out: &mut String, a: &Arena<T>) {
        for h in a.handles() {
            let _ = write!(out, "{:?} ", a.span(h));
        }
        out.push('\n');
    }
    let mut out = String::new();
    arena(&mut out, &m.kernels);
    arena(&mut out, &m.memories);
    arena(&mut out, &m.graphs);
    for (_, k) in m.kernels.iter() {
        let _ = writeln!(out, "{:?}", k.param_spans);
        if let KernelBody::Ir(body) = &k.body {
            arena(&mut out, &body.values);
            arena(&mut out, &body.ops);
        }
    }
    for (_, g) in m.graphs.iter() {
        arena(&mut out, &g.queues);
        arena(&mut out, &g.dyn_params);
        arena(&mut out, &g.dcgs);
        arena(&mut out, &g.nodes);
        arena(&mut out, &g.edges);
        let _ = writeln!(out, "{:?}", g.spans);
    }
    out
}

/// Parses `src` both ways and compares everything; returns whether it parsed and how many
/// statements the fast path took.
fn same_both_ways(src: &str, what: &str) -> (bool, usize) {
    let (fast, taken) = parse_module_with(src, true);
    let (general, none) = parse_module_with(src, false);
    assert_eq!(none, 0, "{what}: the fast path was off");
    match (&fast, &general) {
        (Ok(a), Ok(b)) => {
            assert!(a == b, "{what}: modules differ");
            assert_eq!(spans(a), spans(b), "{what}: spans differ");
            assert_eq!(print(a), print(b), "{what}: printed text differs");
            (true, taken)
        }
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "{what}: errors differ");
            (false, taken)
        }
        _ => panic!("{what}: one way parses, the other does not: {:?} / {:?}", fast.err(), general.err()),
    }
}

/// The `.cgir` files under `dir`, recursively.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "cgir") {
            out.push(path);
        }
    }
}

#[test]
fn examples_and_test_inputs_parse_the_same_both_ways() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    sources(&root.join("examples"), &mut files);
    let examples = files.len();
    sources(&root.join("lit-tests"), &mut files);
    assert!(examples > 0 && files.len() > examples, "no inputs found under {}", root.display());
    let (mut parsed, mut taken) = (0, 0);
    for (i, path) in files.iter().enumerate() {
        let Ok(src) = std::fs::read_to_string(path) else { continue };
        let what = path.display().to_string();
        let (ok, n) = same_both_ways(&src, &what);
        parsed += usize::from(ok);
        taken += n;
        if i >= examples {
            continue;
        }
        // Corruptions of the examples: each line deleted, duplicated, and split after its
        // first space or punctuation, and the text cut at many places.
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        for l in 0..lines.len() {
            let deleted: String = lines.iter().enumerate().filter(|&(j, _)| j != l).map(|(_, s)| *s).collect();
            taken += same_both_ways(&deleted, &format!("{what} without line {}", l + 1)).1;
            let doubled: String = lines.iter().take(l + 1).chain(lines.iter().skip(l)).copied().collect();
            taken += same_both_ways(&doubled, &format!("{what} with line {} twice", l + 1)).1;
            let line = lines.get(l).copied().unwrap_or("");
            if let Some(cut) = line.trim_start().find([' ', '(', ',']).map(|c| c + line.len() - line.trim_start().len())
            {
                let split: String = lines
                    .iter()
                    .enumerate()
                    .map(|(j, s)| if j == l { format!("{}\n{}", &s[..=cut], &s[cut + 1..]) } else { s.to_string() })
                    .collect();
                same_both_ways(&split, &format!("{what} with line {} split", l + 1));
            }
        }
        for cut in (0..src.len()).step_by(37).filter(|&c| src.is_char_boundary(c)) {
            same_both_ways(&src[..cut], &format!("{what} cut at {cut}"));
        }
    }
    assert!(parsed >= examples, "the examples must parse");
    assert!(taken > 1000, "the fast path took only {taken} statements");
}

#[test]
fn each_fast_form_parses_the_same_both_ways() {
    let head = "kernel @k(%x: buf<f32, read>, %a: f32) {\n  %i = global_id 0\n}\n\nusm @u : f32[64]\n\n\
                graph @g {\n  dyn %d = 2.0 : f32\n  %m = async_malloc f32[16]\n    device\n";
    // Each statement, and whether the fast path takes it (the others are left to the
    // general path, which parses them or reports their errors).
    let statements = [
        ("%n = empty", true),
        ("%n = empty after(%m)", true),
        ("%n=empty after( %m )", true),
        ("%n = kernel @k range(4) args(@u, %d)", true),
        ("%n = kernel @k range(4, 2, 1) args(%m + 8, 1.5 : f32) after(%m)", true),
        ("%n = kernel @k range(4) args(@u + 4, -3)", true),
        ("%n = kernel @k range(4) args(@u, true)", true),
        ("%n = kernel @k range(4) args()", true),
        ("%n = kernel @k single_task args(@u, 1.0)", false),
        ("%n = memcpy @u + 64, %m, 64 after(%m)", true),
        ("%n = memset %m, 255, 64", true),
        ("%n = memset %m, 256, 64", false),
        ("%n = async_malloc i32[8] shared zero_init", true),
        ("%n = async_malloc i32[8]\n  zero_init", false),
        ("%n = async_malloc vec2<f32>[8]", false),
        ("%n = async_free %m", true),
        ("%n = async_free %d", false),
        ("%n = empty // trailing", true),
        ("%n = empty after(%m) on @q", true),
        ("%n = empty on @q", false),
        ("%n = empty\n  after(%m)", false),
        ("%n = empty after(%m via accessor)", false),
        ("%n = kernel @nope range(4) args(@u, 1)", false),
        ("%n = kernel @k range(4) args(@nope, 1)", false),
        ("%n = kernel @k range(4) args(%m, 1e3)", false),
        ("%n = kernel @k range(4) args(%m, 0x10)", false),
        ("%n = kernel @k range(-4) args(%m)", false),
        ("%n = kernel @k range(4) args(%nope)", false),
        ("%n = empty after(%nope)", false),
        ("%m = empty", true),
        ("%n = empty after(%n)", false),
        ("%n = kernel @k range(4) args(x\"00\", inf)", false),
    ];
    // The statements around the one tested have a line break where the fast path gives up.
    for (stmt, fast) in statements {
        let src = format!("{head}  {stmt}\n  %z = empty\n    after(%m)\n}}\n");
        let (_, taken) = same_both_ways(&src, stmt);
        assert_eq!(taken, usize::from(fast), "{stmt}: fast path taken {taken} times");
    }
}

#[test]
fn blank_lines_between_statements_are_recorded_and_change_nothing_else() {
    let mut plain = String::from("usm @x : f32[64]\n\ngraph @g {\n");
    for i in 0..12 {
        let _ = writeln!(plain, "  %m{i} = memset @x, {i}, 4");
    }
    plain.push_str("}\n");
    // A blank line before %m0 (right after `{`: dropped), %m3, %m6 and %m9.
    let mut spaced = String::new();
    for line in plain.lines() {
        if ["  %m0 ", "  %m3 ", "  %m6 ", "  %m9 "].iter().any(|p| line.starts_with(p)) {
            spaced.push('\n');
        }
        spaced.push_str(line);
        spaced.push('\n');
    }
    let (plain_ok, plain_fast) = same_both_ways(&plain, "plain");
    let (spaced_ok, spaced_fast) = same_both_ways(&spaced, "spaced");
    assert!(plain_ok && spaced_ok);
    assert_eq!(plain_fast, 12, "every node statement takes the fast path");
    assert_eq!(spaced_fast, 9, "the three after a blank line (not the first) take the general path");
    let spaced_module = parse_module_with(&spaced, true).0.unwrap();
    let graph = spaced_module.graphs.iter().next().unwrap().1;
    let blanks: Vec<&str> =
        graph.nodes.iter().filter(|(_, n)| n.comments.blank_before).map(|(_, n)| n.name.as_str()).collect();
    assert_eq!(blanks, ["m3", "m6", "m9"]);
    // Cleared of those flags, it is the module without blank lines.
    let mut cleared = spaced_module.clone();
    for (_, g) in cleared.graphs.iter_mut() {
        for (_, n) in g.nodes.iter_mut() {
            n.comments.blank_before = false;
        }
    }
    assert!(cleared == parse_module_with(&plain, true).0.unwrap(), "only the flags differ");
    // The printed text has the blank lines and is a fixed point.
    let printed = print(&spaced_module);
    assert_eq!(printed.matches("\n\n  %m").count(), 3, "{printed}");
    assert_eq!(print(&parse_module_with(&printed, true).0.unwrap()), printed);
}
