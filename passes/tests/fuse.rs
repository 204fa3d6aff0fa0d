//! `fuse-kernels`: fused and unfused graphs give identical outputs on the interpreter, the
//! verifier accepts every fused graph, and updates of dynamic parameters reach fused kernels.

mod support;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::graph::{ArgValue, NodeKind};
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use proptest::prelude::*;

fn kernel_nodes(m: &cmdgraph_ir::Module, graph: &str) -> usize {
    let g = m.graph_by_name(graph).unwrap();
    m.graphs[g].nodes.iter().filter(|(_, n)| matches!(n.kind, NodeKind::Kernel(_))).count()
}

#[test]
fn examples_keep_their_outputs() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut fused = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cgir") {
            let text = std::fs::read_to_string(&path).unwrap();
            // The interpreter runs no SPIR-V: external kernels are compared on Vulkan against
            // a kernel-language twin (cli/tests/vulkan_external.rs).
            if text.contains(") spirv \"") {
                continue;
            }
            let before = support::module(&text);
            let after = support::check_semantics(&text, "fuse-kernels");
            fused += (after.kernels.len() > before.kernels.len()) as usize;
        }
    }
    assert!(fused >= 2, "expected fusions in several examples, got {fused}");
}

#[test]
fn saxpy_chain_becomes_one_kernel_without_temporaries() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/saxpy_chain.cgir")).unwrap();
    let after = support::check_semantics(&text, "fuse-kernels");
    let g = after.graph_by_name("main").unwrap();
    let names: Vec<_> = after.graphs[g].nodes.iter().map(|(_, n)| n.name.clone()).collect();
    assert_eq!(names, ["k2"]);
    let (_, ctx) = support::optimize(&support::module(&text), "fuse-kernels");
    let origin = &ctx.origins[&("main".to_string(), "k2".to_string())];
    assert_eq!(origin.len(), 3);
    assert!(ctx.remarks.concat().contains("launches 3 -> 1"));
}

/// Fusion through graph-owned temporaries removes them, so the memory plan that runs after
/// it (the default pipeline's order) needs a smaller pool.
#[test]
fn fusion_shrinks_the_memory_plan() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/saxpy_chain.cgir")).unwrap();
    let m = support::module(&text);
    let pool = |ctx: &cmdgraph_passes::PassContext| ctx.memory_plans.get("main").map_or(0, |p| p.pool_size);
    let (_, unfused) = support::optimize(&m, "plan-memory");
    let (_, fused) = support::optimize(&m, "fuse-kernels,plan-memory");
    assert!(pool(&unfused) >= 2 * 65536 * 4, "both temporaries are live at once: {}", pool(&unfused));
    assert_eq!(pool(&fused), 0, "no graph-owned memory is left after fusion");
}

const DYN: &str = "\
kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}
usm @x : f32[8]
usm @y : f32[8]
graph @g properties(updatable) {
  dyn %gain = 2.0 : f32
  %t = async_malloc f32[8]
  %a = kernel @scale range(8) args(@x, %t, %gain) after(%t)
  %b = kernel @scale range(8) args(%t, @y, %gain) after(%a)
  %f = async_free %t after(%b)
}
";

/// Runs `m`'s graph @g, updates %gain to 3.0, runs again; returns @y after each run.
fn run_with_update(m: &cmdgraph_ir::Module) -> (Vec<f32>, Vec<f32>) {
    let mut interp = Interpreter::new(m).unwrap();
    interp.bind_as::<f32>("x", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).unwrap();
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    let read = |i: &Interpreter| -> Vec<f32> {
        i.read("y").unwrap().chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    };
    let first = read(&interp);
    let three = ArgValue::Scalar(Literal { value: LitValue::Float(3.0), ty: Some(ScalarType::F32) });
    interp.update_param(exec, "gain", three).unwrap();
    interp.run(exec).unwrap();
    (first, read(&interp))
}

#[test]
fn dynamic_parameter_updates_reach_the_fused_kernel() {
    let before = support::module(DYN);
    let after = support::check_semantics(DYN, "fuse-kernels");
    assert_eq!(kernel_nodes(&after, "g"), 1);
    let g = after.graph_by_name("g").unwrap();
    let p = after.graphs[g].dyn_params.handles().next().unwrap();
    assert_eq!(after.graphs[g].registrations(p).len(), 2, "both registrations kept");
    let expected = run_with_update(&before);
    assert_eq!(run_with_update(&after), expected);
    assert_eq!(expected.1[1], 18.0);
}

/// One step of a random element-wise program.
#[derive(Clone, Debug)]
enum Step {
    /// `dst = op(src_a, src_b)` with a binary op index.
    Binary(usize, usize, usize, Dst),
    /// `dst = src * k` with a constant index.
    Scale(usize, usize, Dst),
    /// `src += k` in place (read_write).
    InPlace(usize, usize),
    /// A host task reading a buffer.
    Host(usize),
    /// A memcpy of a buffer into an output (a temporary read after a chain).
    Copy(usize, usize),
}

#[derive(Clone, Copy, Debug)]
enum Dst {
    Temp,
    Out(usize),
}

fn dst() -> impl Strategy<Value = Dst> {
    prop_oneof![3 => Just(Dst::Temp), 1 => (0..3usize).prop_map(Dst::Out)]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..5usize, any::<usize>(), any::<usize>(), dst()).prop_map(|(o, a, b, d)| Step::Binary(o, a, b, d)),
        4 => (any::<usize>(), 0..4usize, dst()).prop_map(|(a, k, d)| Step::Scale(a, k, d)),
        1 => (any::<usize>(), 0..4usize).prop_map(|(a, k)| Step::InPlace(a, k)),
        1 => any::<usize>().prop_map(Step::Host),
        1 => (any::<usize>(), 0..3usize).prop_map(|(a, o)| Step::Copy(a, o)),
    ]
}

const OPS: [&str; 5] = ["add", "mul", "sub", "max", "min"];
const CONSTS: [&str; 4] = ["0.5", "1.0", "-2.0", "3.0"];

/// Builds a race-free graph from `steps`: each node depends on the last writer of what it
/// reads and on every user since the last write of what it writes.
fn program(steps: &[Step]) -> String {
    let mut text = String::from(
        "kernel @bin_add(%a: buf<f32, read>, %b: buf<f32, read>, %o: buf<f32, write>) {\n  %i = global_id 0\n  %x = load %a[%i]\n  %y = load %b[%i]\n  %r = add %x, %y\n  store %o[%i], %r\n}\n",
    );
    for op in &OPS[1..] {
        text.push_str(&text.lines().take(7).collect::<Vec<_>>().join("\n").replace("add", op));
        text.push('\n');
    }
    text.push_str("kernel @scale(%a: buf<f32, read>, %o: buf<f32, write>, %s: f32) {\n  %i = global_id 0\n  %x = load %a[%i]\n  %r = mul %x, %s\n  store %o[%i], %r\n}\n");
    text.push_str("kernel @bump(%a: buf<f32, read_write>, %s: f32) {\n  %i = global_id 0\n  %x = load %a[%i]\n  %r = add %x, %s\n  store %a[%i], %r\n}\n");
    text.push_str("usm @in0 : f32[16]\nusm @in1 : f32[16]\nusm @o0 : f32[16]\nusm @o1 : f32[16]\nusm @o2 : f32[16]\n");
    text.push_str("graph @g {\n");
    // Buffers: name, last writer, users since the last write, temporary?
    let mut bufs: Vec<(String, Option<String>, Vec<String>, bool)> =
        vec![("@in0".into(), None, vec![], false), ("@in1".into(), None, vec![], false)];
    let mut outs_written = [false; 3];
    let mut temps = 0;
    let mut body = String::new();
    let deps = |bufs: &Vec<(String, Option<String>, Vec<String>, bool)>, reads: &[usize], writes: &[usize]| {
        let mut d: Vec<String> = Vec::new();
        for &r in reads {
            d.extend(bufs[r].1.clone());
        }
        for &w in writes {
            d.extend(bufs[w].1.clone());
            d.extend(bufs[w].2.iter().cloned());
        }
        d.sort();
        d.dedup();
        if d.is_empty() {
            String::new()
        } else {
            format!(" after(%{})", d.join(", %"))
        }
    };
    for (n, s) in steps.iter().enumerate() {
        let node = format!("n{n}");
        let len = bufs.len();
        let pick = |i: usize| i % len;
        let mut target =
            |d: Dst, bufs: &mut Vec<(String, Option<String>, Vec<String>, bool)>, body: &mut String| match d {
                Dst::Temp => {
                    let t = format!("t{temps}");
                    temps += 1;
                    body.push_str(&format!("  %{t} = async_malloc f32[16]\n"));
                    bufs.push((format!("%{t}"), Some(t), vec![], true));
                    bufs.len() - 1
                }
                Dst::Out(o) => {
                    let name = format!("@o{o}");
                    if !outs_written[o] {
                        outs_written[o] = true;
                        bufs.push((name, None, vec![], false));
                        bufs.len() - 1
                    } else {
                        bufs.iter().position(|b| b.0 == name).unwrap_or(0)
                    }
                }
            };
        match *s {
            Step::Binary(op, a, b, d) => {
                let (a, b) = (pick(a), pick(b));
                let o = target(d, &mut bufs, &mut body);
                let after = deps(&bufs, &[a, b], &[o]);
                body.push_str(&format!(
                    "  %{node} = kernel @bin_{} range(16) args({}, {}, {}){after}\n",
                    OPS[op], bufs[a].0, bufs[b].0, bufs[o].0
                ));
                bufs[a].2.push(node.clone());
                bufs[b].2.push(node.clone());
                bufs[o].1 = Some(node.clone());
                bufs[o].2.clear();
            }
            Step::Scale(a, k, d) => {
                let a = pick(a);
                let o = target(d, &mut bufs, &mut body);
                let after = deps(&bufs, &[a], &[o]);
                body.push_str(&format!(
                    "  %{node} = kernel @scale range(16) args({}, {}, {}){after}\n",
                    bufs[a].0, bufs[o].0, CONSTS[k]
                ));
                bufs[a].2.push(node.clone());
                bufs[o].1 = Some(node.clone());
                bufs[o].2.clear();
            }
            Step::InPlace(a, k) => {
                let a = pick(a);
                if bufs[a].0.starts_with("@in") {
                    continue;
                }
                let after = deps(&bufs, &[a], &[a]);
                body.push_str(&format!(
                    "  %{node} = kernel @bump range(16) args({}, {}){after}\n",
                    bufs[a].0, CONSTS[k]
                ));
                bufs[a].1 = Some(node.clone());
                bufs[a].2.clear();
            }
            Step::Host(a) => {
                let a = pick(a);
                let after = deps(&bufs, &[a], &[]);
                body.push_str(&format!("  %{node} = host_task \"look\" access({} read){after}\n", bufs[a].0));
                bufs[a].2.push(node.clone());
            }
            Step::Copy(a, o) => {
                let a = pick(a);
                let out = target(Dst::Out(o), &mut bufs, &mut body);
                if out == a {
                    continue;
                }
                let after = deps(&bufs, &[a], &[out]);
                body.push_str(&format!("  %{node} = memcpy {}, {}, 64{after}\n", bufs[out].0, bufs[a].0));
                bufs[a].2.push(node.clone());
                bufs[out].1 = Some(node.clone());
                bufs[out].2.clear();
            }
        }
    }
    for (name, writer, users, temp) in &bufs {
        if *temp {
            let mut d: Vec<String> = writer.iter().cloned().chain(users.iter().cloned()).collect();
            d.sort();
            d.dedup();
            body.push_str(&format!("  %free_{} = async_free {name} after(%{})\n", &name[1..], d.join(", %")));
        }
    }
    text.push_str(&body);
    text.push_str("}\n");
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_elementwise_dags_keep_their_outputs(steps in prop::collection::vec(step(), 1..14)) {
        let text = program(&steps);
        // Verifies every graph after the pass and compares every buffer, in creation order
        // and three random schedules.
        support::check_semantics(&text, "fuse-kernels");
        support::check_semantics(&text, "fuse-kernels,transitive-reduction");
    }

    #[test]
    fn random_chains_fuse_to_one_kernel(ops in prop::collection::vec((0..5usize, 0..4usize), 2..12)) {
        let steps: Vec<Step> = ops
            .iter()
            .enumerate()
            .map(|(i, &(op, k))| {
                let last = i + 1; // the buffer the previous step wrote (inputs are 0 and 1)
                if op == 4 { Step::Scale(last, k, Dst::Temp) } else { Step::Binary(op, last, 0, Dst::Temp) }
            })
            .chain([Step::Scale(ops.len() + 1, 1, Dst::Out(0))])
            .collect();
        let text = program(&steps);
        let after = support::check_semantics(&text, "fuse-kernels");
        prop_assert_eq!(kernel_nodes(&after, "g"), 1, "{}", cmdgraph_ir::text::print(&after));
    }
}

/// A graph of `blocks` blocks shaped like the load benchmark's (bench/src/generate.rs): a
/// temporary, five kernels over it and sixteen shared buffers, a memcpy, a memset, the free
/// and an empty join the next block waits on, plus an edge to the join four blocks back.
fn blocks_text(blocks: usize) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}

",
    );
    for u in 0..16 {
        let _ = writeln!(out, "usm @u{u} : f32[64]");
    }
    out.push_str("\ngraph @big {\n");
    let mut state = 0x5EED_CAFEu64;
    let mut below = |n: usize| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 33) % n as u64) as usize
    };
    for b in 0..blocks {
        let base = below(16);
        let (x, y, z, w) = (base, (base + 1 + below(5)) % 16, (base + 6 + below(5)) % 16, (base + 11 + below(4)) % 16);
        let after_join = if b == 0 { String::new() } else { format!(" after(%j{})", b - 1) };
        let far = if b >= 4 { format!(", %j{}", b - 4) } else { String::new() };
        let _ = writeln!(out, "  %m{b} = async_malloc f32[64]{after_join}");
        let _ = writeln!(out, "  %a{b} = kernel @scale range(64) args(@u{x}, %m{b}, 2.0) after(%m{b})");
        let _ = writeln!(out, "  %b{b} = kernel @axpy range(64) args(%m{b}, @u{y}, 0.5) after(%a{b})");
        let _ = writeln!(out, "  %c{b} = kernel @axpy range(64) args(@u{z}, @u{y}, -1.5) after(%b{b}{far})");
        let _ = writeln!(out, "  %d{b} = memcpy @u{w}, @u{y}, 256 after(%c{b})");
        let _ = writeln!(out, "  %e{b} = memset @u{x}, 0, 256 after(%a{b})");
        let _ = writeln!(out, "  %g{b} = kernel @scale range(64) args(@u{w}, @u{z}, 3.0) after(%d{b}, %e{b})");
        let _ = writeln!(out, "  %h{b} = kernel @axpy range(64) args(%m{b}, @u{w}, 1.25) after(%b{b}, %g{b})");
        let _ = writeln!(out, "  %f{b} = async_free %m{b} after(%h{b})");
        let _ = writeln!(out, "  %j{b} = empty after(%f{b}, %g{b})");
    }
    out.push_str("}\n");
    out
}

/// Grouping stays proportional to the graph (issue 17): the steps of its legality checks
/// (nodes visited by reachability searches, group spans scanned) are at most a constant
/// times nodes + edges, at two sizes, so a per-check scan of all groups or of the whole
/// graph fails here long before it shows as time.
#[test]
fn grouping_work_is_linear_in_the_graph() {
    use cmdgraph_passes::fuse::legality;
    for blocks in [200, 2000] {
        let m = support::module(&blocks_text(blocks));
        let graph = &m.graphs[m.graph_by_name("big").unwrap()];
        let cands: Vec<_> = graph.nodes.handles().map(|h| legality::candidate(&m, graph, h)).collect();
        assert!(cands.iter().flatten().count() >= 5 * blocks);
        let temps = legality::temps(graph, &cands);
        let planner = legality::Planner::new(graph, &cands, &temps).unwrap();
        let (groups, _, work) = planner.plan_counted();
        let size = (graph.nodes.len() + graph.edges.len()) as u64;
        eprintln!("{blocks} blocks: {} groups, {work} steps for {size} nodes + edges", groups.len());
        assert!(groups.len() >= blocks / 2, "{} groups", groups.len());
        assert!(work <= 10 * size, "{work} steps for {size} nodes + edges");
    }
}

/// Groups with the same term share one saturation (issue 17): on the block graph every
/// block's groups repeat the same few terms, so the number of e-graph runs stays a small
/// constant while fusions grow with the graph. Saturating per group again fails here.
#[test]
fn identical_groups_saturate_once() {
    for blocks in [50, 500] {
        let mut m = support::module(&blocks_text(blocks));
        let mut ctx = cmdgraph_passes::PassContext::default();
        (cmdgraph_passes::fuse::INFO.run)(&mut m, &mut ctx).unwrap();
        let stat = |k: &str| ctx.stats.get(k).copied().unwrap_or(0);
        eprintln!("{blocks} blocks: {:?}", ctx.stats);
        assert!(stat("fusions") >= blocks as u64, "{:?}", ctx.stats);
        assert!(stat("egraph-runs") <= 4, "{:?}", ctx.stats);
        assert!(stat("kernels-shared") + 4 >= stat("fusions"), "{:?}", ctx.stats);
        if let Err(d) = cmdgraph_ir::verify::verify(&m) {
            panic!("{}", cmdgraph_ir::diag::render_all(&d, "fused", &cmdgraph_ir::text::print(&m)));
        }
    }
}

/// The shared saturation is keyed by everything the term depends on: chains that differ
/// only in a literal, in a dynamic argument or in whether their temporary dies each get
/// their own fused kernel, and the fused graph computes what the unfused one does.
#[test]
fn groups_that_differ_in_a_literal_or_argument_kind_are_not_shared() {
    let text = "kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}

usm @x1 : f32[64]
usm @y1 : f32[64]
usm @z1 : f32[64]
usm @x2 : f32[64]
usm @y2 : f32[64]
usm @z2 : f32[64]
usm @x3 : f32[64]
usm @y3 : f32[64]
usm @z3 : f32[64]
usm @x4 : f32[64]
usm @y4 : f32[64]
usm @z4 : f32[64]

graph @g {
  dyn %p = 4.0 : f32
  %a1 = kernel @scale range(64) args(@x1, @y1, 2.0)
  %b1 = kernel @scale range(64) args(@y1, @z1, 3.0) after(%a1)
  %a2 = kernel @scale range(64) args(@x2, @y2, 2.0) after(%b1)
  %b2 = kernel @scale range(64) args(@y2, @z2, 3.5) after(%a2)
  %a3 = kernel @scale range(64) args(@x3, @y3, 2.0) after(%b2)
  %b3 = kernel @scale range(64) args(@y3, @z3, %p) after(%a3)
  %a4 = kernel @scale range(64) args(@x4, @y4, 2.0) after(%b3)
  %b4 = kernel @scale range(64) args(@y4, @z4, 3.0) after(%a4)
}
";
    let before = support::module(text);
    let after = support::check_semantics(text, "fuse-kernels");
    let (_, ctx) = support::optimize(&before, "fuse-kernels");
    let remarks = ctx.remarks.concat();
    assert_eq!(kernel_nodes(&after, "g"), 4, "{remarks}");
    // Four fusions, three distinct kernels: the fourth chain repeats the first.
    assert_eq!(after.kernels.len(), before.kernels.len() + 3, "{}", cmdgraph_ir::text::print(&after));
}
