//! Passes and conditional nodes (docs/conditional.md): passes run inside body graphs as in
//! any graph, and never move work across a conditional node. Checked on the interpreter
//! (every memory of every graph before and after the default pipeline, in creation order
//! and random orders, race-free) and by what the pipeline did (counted).

mod support;

use support::Rng;

use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::Module;
use std::fmt::Write as _;

const TEXT: &str = "kernel @scale(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %k = const 1.5 : f32
  %r = mul %v, %k
  store %x[%i], %r
}

kernel @shift(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %k = const 0.25 : f32
  %r = add %v, %k
  store %x[%i], %r
}

kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}

usm @x : f32[64]
usm @flags : u32[2]

graph @body {
  %a = kernel @scale range(64) args(@x)
  %b = kernel @shift range(64) args(@x) after(%a)
  %c = kernel @countdown single_task args(@flags) after(%b)
}

graph @tail {
  %e = empty
  %s = kernel @shift range(64) args(@x) after(%e)
}

graph @main {
  %init = memfill @flags, 3 : u32, 1
  %p = kernel @scale range(64) args(@x) after(%init)
  %w = while @flags do @body after(%p)
  %i = if @flags + 4 then @tail after(%w)
  %q = kernel @shift range(64) args(@x) after(%i)
}
";

fn kernels_of(m: &Module, graph: &str) -> Vec<String> {
    let g = &m.graphs[m.graph_by_name(graph).expect("graph")];
    g.nodes
        .iter()
        .filter_map(|(_, n)| match &n.kind {
            NodeKind::Kernel(cmd) => Some(m.kernels[cmd.kernel].name.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn passes_work_inside_bodies_and_never_across_a_conditional_node() {
    let spec = cmdgraph_passes::DEFAULT_PIPELINE.join(",");
    let after = support::check_semantics(TEXT, &spec);
    // Inside the loop body the two element-wise kernels fused (`fuse-kernels`, one
    // work-group of 64), and the countdown (`single_task`) joined them as a looped stage
    // (`fuse-stages`): the body is one dispatch.
    let body = kernels_of(&after, "body");
    assert_eq!(body, ["stages.fused.a.b.countdown"], "{body:?}");
    // Inside the `if` body the empty node went.
    let tail = &after.graphs[after.graph_by_name("tail").unwrap()];
    assert_eq!(tail.nodes.len(), 1, "{}", support::graph_text(&after, "tail"));
    // Around the nodes nothing moved: %p and %q are element-wise on @x like the bodies,
    // and would fuse if the conditional nodes were not fences.
    assert_eq!(kernels_of(&after, "main"), ["scale", "shift"]);
    let main = support::graph_text(&after, "main");
    assert!(main.contains("%w = while @flags do @body") && main.contains("%i = if @flags + 4 then @tail"), "{main}");
}

/// A random module: body graphs of element-wise kernels, copies and fills on `@m0..@m2`,
/// loop bodies (a body graph, then a countdown of the loop's word), and `@main` mixing such
/// commands with `if`, `switch` and `while` nodes whose words (`@flags`, one per node) a
/// `memfill` sets just before; every node after each earlier one it conflicts with (memory
/// objects as the unit), so the graph is race-free. Returns the text and the kinds used.
fn random_module(seed: u64) -> (String, [usize; 3]) {
    let mut rng = Rng(seed);
    let mems = ["@m0", "@m1", "@m2"];
    let mut out = TEXT[..TEXT.find("usm @x").unwrap()].to_string();
    out.push_str("usm @m0 : f32[64]\nusm @m1 : f32[64]\nusm @m2 : f32[64]\nusm @flags : u32[16]\n");
    let command = |rng: &mut Rng| -> (String, Vec<&'static str>) {
        let m = mems[rng.below(3) as usize];
        match rng.below(4) {
            0 => (format!("kernel @scale range(64) args({m})"), vec![m]),
            1 => (format!("kernel @shift range(64) args({m})"), vec![m]),
            2 => {
                let src = mems[(mems.iter().position(|x| *x == m).unwrap() + 1) % 3];
                (format!("memcpy {m}, {src}, 256"), vec![m, src])
            }
            _ => (format!("memfill {m}, 0.5 : f32, 64"), vec![m]),
        }
    };
    // Node statements with the memory they touch; edges from every earlier conflict.
    let graph = |out: &mut String, name: &str, nodes: &[(String, Vec<&'static str>)]| {
        let _ = writeln!(out, "\ngraph @{name} {{");
        for (j, (text, mem)) in nodes.iter().enumerate() {
            let after: Vec<String> =
                (0..j).filter(|&i| nodes[i].1.iter().any(|m| mem.contains(m))).map(|i| format!("%n{i}")).collect();
            let after = if after.is_empty() { String::new() } else { format!(" after({})", after.join(", ")) };
            let _ = writeln!(out, "  %n{j} = {text}{after}");
        }
        out.push_str("}\n");
    };
    let bodies = 2 + rng.below(3) as usize;
    let mut body_mem: Vec<Vec<&'static str>> = Vec::new();
    for b in 0..bodies {
        let nodes: Vec<_> = (0..1 + rng.below(3)).map(|_| command(&mut rng)).collect();
        body_mem.push(nodes.iter().flat_map(|(_, m)| m.iter().copied()).collect());
        graph(&mut out, &format!("b{b}"), &nodes);
    }
    let mut main: Vec<(String, Vec<&'static str>)> = Vec::new();
    let mut kinds = [0usize; 3];
    for slot in 0..2 + rng.below(5) {
        let word = format!("@flags + {}", 4 * slot);
        let pick = |rng: &mut Rng| rng.below(bodies as u64) as usize;
        match rng.below(4) {
            0 => main.push(command(&mut rng)),
            1 => {
                let (a, e) = (pick(&mut rng), pick(&mut rng));
                main.push((format!("memfill {word}, {} : u32, 1", rng.below(2)), vec!["@flags"]));
                let mut mem = body_mem[a].clone();
                mem.extend(body_mem[e].iter().copied());
                mem.push("@flags");
                let els = if rng.below(2) == 0 { format!(" else @b{e}") } else { String::new() };
                main.push((format!("if {word} then @b{a}{els}"), mem));
                kinds[0] += 1;
            }
            2 => {
                let cases: Vec<usize> = (0..1 + rng.below(3)).map(|_| pick(&mut rng)).collect();
                main.push((format!("memfill {word}, {} : u32, 1", rng.below(4)), vec!["@flags"]));
                let mut mem: Vec<&'static str> = cases.iter().flat_map(|&c| body_mem[c].iter().copied()).collect();
                mem.push("@flags");
                let names: Vec<String> = cases.iter().map(|c| format!("@b{c}")).collect();
                main.push((format!("switch {word} cases({})", names.join(", ")), mem));
                kinds[1] += 1;
            }
            _ => {
                let b = pick(&mut rng);
                let lp = format!("loop{slot}");
                let _ = writeln!(
                    out,
                    "\ngraph @{lp} {{\n  %s = subgraph @b{b}\n  %d = kernel @countdown single_task args({word}) after(%s)\n}}"
                );
                main.push((format!("memfill {word}, {} : u32, 1", rng.below(4)), vec!["@flags"]));
                let mut mem = body_mem[b].clone();
                mem.push("@flags");
                main.push((format!("while {word} do @{lp}"), mem));
                kinds[2] += 1;
            }
        }
    }
    graph(&mut out, "main", &main);
    (out, kinds)
}

/// Random modules with conditional nodes through the default pipeline: the same memory on
/// the interpreter before and after, in creation and random orders, race-free; every kind
/// of node is generated (counted).
#[test]
fn random_conditional_modules_keep_their_memory_through_the_pipeline() {
    let spec = cmdgraph_passes::DEFAULT_PIPELINE.join(",");
    let mut kinds = [0usize; 3];
    for seed in 0..40 {
        let (text, k) = random_module(seed);
        support::check_semantics(&text, &spec);
        for (total, n) in kinds.iter_mut().zip(k) {
            *total += n;
        }
    }
    eprintln!("conditional nodes generated: if {}, switch {}, while {}", kinds[0], kinds[1], kinds[2]);
    assert!(kinds.iter().all(|&n| n >= 10), "if/switch/while: {kinds:?}");
}
