//! Random valid modules of many small graphs for the Vulkan-vs-interpreter comparison:
//! element-wise kernels (random expression bodies) and non-element-wise ones (reversal,
//! gather, u32 histogram with atomics, a work-group tree sum with local memory and
//! barriers), memcpy (within one object too), memset, memfill, graph-owned temporaries
//! (`zero_init` or defined by a fill before any read) freed after their last use, empty
//! nodes, queue barriers and host tasks, each ordered after every earlier node it conflicts
//! with, so every graph is race-free. So that the optimizer and the update paths are
//! exercised too, graphs also get chains of full-range element-wise kernels at offset 0
//! (what `fuse-kernels` fuses), `subgraph` nodes running an earlier graph of the module
//! (inlined by the default pipeline), and, in `updatable` graphs, a dynamic `f32` parameter
//! (the `@scale` factor) and dynamic command groups of element-wise kernels, which the test
//! updates between its two runs.

use super::Rng;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Float buffers of every module and its integer buffers.
const FBUFS: [&str; 4] = ["@f0", "@f1", "@f2", "@f3"];
const UBUFS: [&str; 2] = ["@u0", "@u1"];

/// A random straight-line body over `%a[%i]`, `%b[%i]` of type `ty`, stored to `%o[%i]`.
fn expression(rng: &mut Rng, ty: &str) -> String {
    let float = ty == "f32";
    let mut body = vec![
        "  %i = global_id 0".to_string(),
        "  %v0 = load %a[%i]".to_string(),
        "  %v1 = load %b[%i]".to_string(),
        format!("  %v2 = const {} : {ty}", if float { "0.75".to_string() } else { (1 + rng.below(7)).to_string() }),
    ];
    let mut n = 3;
    for _ in 0..2 + rng.below(6) {
        // Every op reads a loaded value (never the constant alone), so no value is a
        // compile-time constant: llvmpipe folds `x * 0.0` with a constant zero to `+0`.
        let xi = rng.below(n);
        let x = format!("%v{}", if xi == 2 { 0 } else { xi });
        let y = format!("%v{}", rng.below(n));
        // Only ops whose device result is exact (docs/ir.md, "Float precision"): no math
        // functions, no float division or remainder; `fma`, which rounds once or twice (the
        // harness accepts either).
        let line = match rng.below(4) {
            0 => {
                let ops: &[&str] = if float { &["neg", "abs", "floor", "ceil"] } else { &["neg", "not"] };
                format!("  %v{n} = {} {x}", ops[rng.below(ops.len() as u64) as usize])
            }
            1 | 2 => {
                let ops: &[&str] = if float {
                    &["add", "sub", "mul", "min", "max", "fma"]
                } else {
                    &["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"]
                };
                match ops[rng.below(ops.len() as u64) as usize] {
                    "fma" => format!("  %v{n} = fma {x}, {y}, %v{}", rng.below(n)),
                    op => format!("  %v{n} = {op} {x}, {y}"),
                }
            }
            _ => {
                let c = ["eq", "ne", "lt", "le", "gt", "ge"][rng.below(6) as usize];
                format!("  %c{n} = {c} {x}, {y}\n  %v{n} = select %c{n}, {x}, {y}")
            }
        };
        body.push(line);
        n += 1;
    }
    body.push(format!("  store %o[%i], %v{}", n - 1));
    body.join("\n")
}

/// The kernels of a module (random element-wise bodies, fixed others).
fn kernels(rng: &mut Rng) -> String {
    let mut out = String::new();
    for (name, ty) in [("ewf", "f32"), ("ewf2", "f32"), ("ewu", "u32")] {
        let _ = writeln!(
            out,
            "kernel @{name}(%a: buf<{ty}, read>, %b: buf<{ty}, read>, %o: buf<{ty}, write>) {{\n{}\n}}\n",
            expression(rng, ty)
        );
    }
    out.push_str(
        "kernel @rev(%a: buf<f32, read>, %o: buf<f32, write>) {
  %i = global_id 0
  %n = global_range 0
  %one = const 1 : u32
  %last = sub %n, %one
  %j = sub %last, %i
  %v = load %a[%j]
  store %o[%i], %v
}

kernel @gather(%a: buf<f32, read>, %idx: buf<u32, read>, %o: buf<f32, write>, %n: u32) {
  %i = global_id 0
  %k = load %idx[%i]
  %j = rem %k, %n
  %v = load %a[%j]
  store %o[%i], %v
}

kernel @mm(%a: buf<f32, read>, %b: buf<f32, read>, %c: buf<f32, write>, %n: u32, %k: u32) {
  %col = global_id 0
  %row = global_id 1
  %zero = const 0 : u32
  %one = const 1 : u32
  %init = const 0.0 : f32
  %acc = for %j = %zero to %k step %one carry(%s = %init) {
    %ar = mul %row, %k
    %ai = add %ar, %j
    %av = load %a[%ai]
    %br = mul %j, %n
    %bi = add %br, %col
    %bv = load %b[%bi]
    %s2 = fma %av, %bv, %s
    yield %s2
  }
  %cr = mul %row, %n
  %ci = add %cr, %col
  store %c[%ci], %acc
}

kernel @bias(%h: buf<f32, read>, %b: buf<f32, read>, %o: buf<f32, write>, %n: u32) {
  %i = global_id 0
  %col = rem %i, %n
  %hv = load %h[%i]
  %bv = load %b[%col]
  %r = add %hv, %bv
  store %o[%i], %r
}

kernel @scale(%a: buf<f32, read_write>, %s: f32) {
  %i = global_id 0
  %v = load %a[%i]
  %r = mul %v, %s
  store %a[%i], %r
}

kernel @hist(%a: buf<u32, read>, %o: buf<u32, read_write>, %m: u32) {
  %i = global_id 0
  %v = load %a[%i]
  %b = rem %v, %m
  %one = const 1 : u32
  %old = atomic add %o[%b], %one
}

kernel @tofloat(%a: buf<u32, read>, %o: buf<f32, write>) {
  %i = global_id 0
  %v = load %a[%i]
  %m = const 4095 : u32
  %w = and %v, %m
  %f = cast %w to f32
  store %o[%i], %f
}

kernel @gsum(%a: buf<u32, read>, %o: buf<u32, read_write>) {
  %scratch = local u32[64]
  %gid = global_id 0
  %lid = local_id 0
  %v = load %a[%gid]
  store %scratch[%lid], %v
  group_barrier
  %zero = const 0 : u32
  %one = const 1 : u32
  %six = const 6 : u32
  %half = const 32 : u32
  for %level = %zero to %six step %one {
    %stride = shr %half, %level
    %active = lt %lid, %stride
    if %active {
      %other = add %lid, %stride
      %mine = load %scratch[%lid]
      %theirs = load %scratch[%other]
      %both = add %mine, %theirs
      store %scratch[%lid], %both
    }
    group_barrier
  }
  %leader = eq %lid, %zero
  if %leader {
    %total = load %scratch[%zero]
    %g = group_id 0
    %old = atomic add %o[%g], %total
  }
}
",
    );
    out
}

/// A node being generated: its text, the memory it reads and writes, its predecessors.
struct Node {
    name: String,
    text: String,
    reads: BTreeSet<String>,
    writes: BTreeSet<String>,
    after: BTreeSet<String>,
    queue: Option<u8>,
}

/// A generated graph: its text and what a `subgraph` node running it reads and writes.
pub struct Graph {
    pub text: String,
    reads: BTreeSet<String>,
    writes: BTreeSet<String>,
    /// Whether another graph may run it as a sub-graph: no graph-owned allocations (E0266)
    /// and no dynamic parameters or command groups (the root's updates do not reach them).
    child_ok: bool,
}

/// One graph over `n`-element buffers; `children` are the earlier graphs a `subgraph` node
/// may run.
fn graph(rng: &mut Rng, name: &str, n: u64, temps_ok: bool, children: &[(String, &Graph)]) -> Graph {
    let mut nodes: Vec<Node> = Vec::new();
    // `dyn` and `dcg` statements, printed before the nodes.
    let mut decls: Vec<String> = Vec::new();
    // A third of the graphs are `updatable` and may use dynamic parameters and groups.
    let dynamic_ok = rng.below(3) == 0;
    let mut temps: Vec<(String, bool)> = Vec::new(); // (name, zero_init)
    let ntemps = if temps_ok { rng.below(3) } else { 0 };
    let add = |nodes: &mut Vec<Node>, text: String, reads: Vec<String>, writes: Vec<String>, rng: &mut Rng| {
        let name = format!("n{}", nodes.len());
        let mut after = BTreeSet::new();
        for p in nodes.iter() {
            let conflict = writes.iter().any(|m| p.reads.contains(m) || p.writes.contains(m))
                || reads.iter().any(|m| p.writes.contains(m));
            if conflict || rng.below(12) == 0 {
                after.insert(p.name.clone());
            }
        }
        let queue = if rng.below(3) == 0 { Some(rng.below(2) as u8) } else { None };
        nodes.push(Node {
            name,
            text,
            reads: reads.into_iter().collect(),
            writes: writes.into_iter().collect(),
            after,
            queue,
        });
    };
    for t in 0..ntemps {
        let zero = rng.below(2) == 0;
        let tname = format!("%n{}", nodes.len());
        let text = format!("async_malloc f32[{n}]{}", if zero { " zero_init" } else { "" });
        add(&mut nodes, text, vec![], vec![tname.clone()], rng);
        if !zero {
            // Defined before any read: a full fill (decision A9: its bytes are undefined at
            // each run start).
            let text = format!("memfill {tname}, {}.5 : f32, {n}", t);
            add(&mut nodes, text, vec![], vec![tname.clone()], rng);
        }
        temps.push((tname, zero));
    }
    let fmems: Vec<String> = FBUFS.iter().map(|s| s.to_string()).chain(temps.iter().map(|t| t.0.clone())).collect();
    let pick = |rng: &mut Rng, xs: &[String]| xs[rng.below(xs.len() as u64) as usize].clone();
    let upick = |rng: &mut Rng| UBUFS[rng.below(2) as usize].to_string();
    let mut dyn_scale = false;
    // Whether an arm allocated graph-owned memory of its own (then no graph takes this one as
    // a sub-graph, E0266).
    let mut own_allocs = false;
    for _ in 0..2 + rng.below(9) {
        let r = rng.below(n) + 1; // launch range, 1..=n
        let off = rng.below(n - r + 1); // element offset with off + r <= n
        let ptr = |m: &str, off: u64| if off == 0 { m.to_string() } else { format!("{m} + {}", off * 4) };
        match rng.below(19) {
            0..=2 => {
                let k = if rng.below(2) == 0 { "ewf" } else { "ewf2" };
                let (a, b, o) = (pick(rng, &fmems), pick(rng, &fmems), pick(rng, &fmems));
                // An input that is also the output is read where it is written (in place),
                // never at another offset: that would race between work-items.
                let oa = if a == o { off } else { rng.below(n - r + 1) };
                let ob = if b == o { off } else { rng.below(n - r + 1) };
                let oo = off;
                let text = format!("kernel @{k} range({r}) args({}, {}, {})", ptr(&a, oa), ptr(&b, ob), ptr(&o, oo));
                add(&mut nodes, text, vec![a, b], vec![o], rng);
            }
            3 => {
                let (a, b, o) = (upick(rng), upick(rng), upick(rng));
                let off = if a == o || b == o { 0 } else { off };
                let text = format!("kernel @ewu range({r}) args({a}, {b}, {})", ptr(&o, off));
                add(&mut nodes, text, vec![a, b], vec![o], rng);
            }
            4 => {
                let (a, o) = (pick(rng, &fmems), pick(rng, &fmems));
                if a == o {
                    continue;
                }
                add(&mut nodes, format!("kernel @rev range({r}) args({a}, {o})"), vec![a], vec![o.clone()], rng);
            }
            5 => {
                let (a, idx, o) = (pick(rng, &fmems), upick(rng), pick(rng, &fmems));
                if a == o {
                    continue;
                }
                let text = format!("kernel @gather range({r}) args({a}, {idx}, {}, {n})", ptr(&o, off));
                add(&mut nodes, text, vec![a, idx], vec![o], rng);
            }
            6 => {
                let a = pick(rng, &fmems);
                let s = if dynamic_ok && rng.below(2) == 0 {
                    dyn_scale = true;
                    "%s"
                } else {
                    ["0.5", "-2.0", "1.25", "3.0"][rng.below(4) as usize]
                };
                add(
                    &mut nodes,
                    format!("kernel @scale range({r}) args({}, {s})", ptr(&a, off)),
                    vec![a.clone()],
                    vec![a],
                    rng,
                );
                if s == "%s" {
                    // Dynamic parameters are explicit-API only (E0221).
                    nodes.last_mut().expect("just added").queue = None;
                }
            }
            7 => {
                let (a, o) = ("@u0".to_string(), "@u1".to_string());
                let (a, o) = if rng.below(2) == 0 { (a, o) } else { (o, a) };
                let m = 1 + rng.below(n);
                add(
                    &mut nodes,
                    format!("kernel @hist range({r}) args({a}, {o}, {m})"),
                    vec![a, o.clone()],
                    vec![o],
                    rng,
                );
            }
            8 => {
                let (a, o) = (upick(rng), pick(rng, &fmems));
                add(
                    &mut nodes,
                    format!("kernel @tofloat range({r}) args({a}, {})", ptr(&o, off)),
                    vec![a],
                    vec![o],
                    rng,
                );
            }
            9 if n >= 64 => {
                let groups = n / 64;
                let (a, o) = ("@u0".to_string(), "@u1".to_string());
                let (a, o) = if rng.below(2) == 0 { (a, o) } else { (o, a) };
                let text = format!("kernel @gsum nd_range(global({}), local(64)) args({a}, {o})", groups * 64);
                add(&mut nodes, text, vec![a, o.clone()], vec![o], rng);
            }
            10 => {
                // memcpy, sometimes within one object (never overlapping: E0231).
                let all: Vec<String> = fmems.iter().cloned().chain(UBUFS.iter().map(|s| s.to_string())).collect();
                let (d, s) = (pick(rng, &all), pick(rng, &all));
                let so = rng.below(n - r + 1);
                if d == s && off.abs_diff(so) < r {
                    continue; // overlapping copies are rejected (E0231)
                }
                let text = format!("memcpy {}, {}, {}", ptr(&d, off), ptr(&s, so), r * 4);
                add(&mut nodes, text, vec![s], vec![d], rng);
            }
            11 => {
                let all: Vec<String> = fmems.iter().cloned().chain(UBUFS.iter().map(|s| s.to_string())).collect();
                let d = pick(rng, &all);
                // Byte offsets and lengths need not be multiples of 4.
                let bo = rng.below(4 * n);
                let len = rng.below(4 * n - bo) + 1;
                let at = if bo == 0 { d.clone() } else { format!("{d} + {bo}") };
                add(&mut nodes, format!("memset {at}, {}, {len}", rng.below(64)), vec![], vec![d], rng);
            }
            12 => {
                let (d, text) = if rng.below(2) == 0 {
                    let d = pick(rng, &fmems);
                    let t = format!("memfill {}, {}.25 : f32, {r}", ptr(&d, off), rng.below(8));
                    (d, t)
                } else {
                    let d = upick(rng);
                    let t = format!("memfill {}, {} : u32, {r}", ptr(&d, off), rng.below(1000));
                    (d, t)
                };
                add(&mut nodes, text, vec![], vec![d], rng);
            }
            13 => {
                let (a, o) = (pick(rng, &FBUFS.map(String::from)), pick(rng, &FBUFS.map(String::from)));
                if a == o {
                    continue;
                }
                // One callback name per node: the harness derives each callback's effect
                // from its access list.
                let cb = format!("{name}_h{}", nodes.len());
                add(&mut nodes, format!("host_task \"{cb}\" access({a} read, {o} write)"), vec![a], vec![o], rng);
            }
            14 => {
                // A chain of 2..=4 `@rev` kernels over one range of at most 128 work-items,
                // each reading the previous one's output at the reversed index: what
                // `fuse-stages` runs as one work-group with barriers between the stages
                // (each stage reads what other work-items wrote).
                let r = 1 + rng.below(n.min(128));
                let mut prev = pick(rng, &fmems);
                for _ in 0..2 + rng.below(3) {
                    let o = pick(rng, &fmems);
                    if o == prev {
                        continue;
                    }
                    add(
                        &mut nodes,
                        format!("kernel @rev range({r}) args({prev}, {o})"),
                        vec![prev.clone()],
                        vec![o.clone()],
                        rng,
                    );
                    prev = o;
                }
            }
            15 => {
                // A chain of 2..=4 full-range element-wise kernels at offset 0, each reading
                // the previous one's output: what `fuse-kernels` fuses (random ranges and
                // offsets almost never line up). An input that is the output is read in
                // place, at the same index, so there is no race between work-items.
                let mut prev = pick(rng, &fmems);
                for _ in 0..2 + rng.below(3) {
                    let k = ["ewf", "ewf2"][rng.below(2) as usize];
                    let (b, o) = (pick(rng, &fmems), pick(rng, &fmems));
                    let (a, b) = if rng.below(2) == 0 { (prev.clone(), b) } else { (b, prev.clone()) };
                    let text = format!("kernel @{k} range({n}) args({a}, {b}, {o})");
                    add(&mut nodes, text, vec![a, b], vec![o.clone()], rng);
                    prev = o;
                }
            }
            16 if dynamic_ok => {
                // A dynamic command group of element-wise kernels over the same memory (its
                // alternatives differ in kernel and offsets): the test switches it between
                // runs. Never recorded from a queue (E0275). User memory only: the `dcg`
                // statement comes before the nodes, so before any `async_malloc`.
                let user = FBUFS.map(String::from);
                let (a, b, o) = (pick(rng, &user), pick(rng, &user), pick(rng, &user));
                let d = format!("%d{}", decls.len());
                let alts = 2 + rng.below(2);
                let mut text = format!("dcg {d} active({}) {{\n", rng.below(alts));
                for _ in 0..alts {
                    let k = ["ewf", "ewf2"][rng.below(2) as usize];
                    let oa = if a == o { off } else { rng.below(n - r + 1) };
                    let ob = if b == o { off } else { rng.below(n - r + 1) };
                    let _ = writeln!(
                        text,
                        "    kernel @{k} range({r}) args({}, {}, {})",
                        ptr(&a, oa),
                        ptr(&b, ob),
                        ptr(&o, off)
                    );
                }
                text.push_str("  }");
                decls.push(text);
                add(&mut nodes, format!("dynamic {d}"), vec![a, b], vec![o], rng);
                nodes.last_mut().expect("just added").queue = None;
            }
            17 if !children.is_empty() => {
                // A sub-graph: an earlier graph of the module, with its memory effect.
                let (child, g) = &children[rng.below(children.len() as u64) as usize];
                let (reads, writes) = (g.reads.iter().cloned().collect(), g.writes.iter().cloned().collect());
                add(&mut nodes, format!("subgraph @{child}"), reads, writes, rng);
            }
            18 if n >= 128 => {
                // A matmul into a graph-owned temporary, then a bias add (gathering by
                // column) and 0..=1 element-wise kernels through more temporaries: what
                // `tile-contractions` tiles and runs the others on each output of (its
                // epilogue). 16 steps, 8 × 8 or 16 × 16 outputs, so it is tiled.
                own_allocs = true;
                let side = if n >= 256 { 16 } else { 8 };
                let outputs = side * side;
                let (a, b) = (pick(rng, &FBUFS.map(String::from)), pick(rng, &FBUFS.map(String::from)));
                let mut prev = format!("%n{}", nodes.len());
                add(&mut nodes, format!("async_malloc f32[{outputs}]"), vec![], vec![prev.clone()], rng);
                let text = format!("kernel @mm range({side}, {side}) args({a}, {b}, {prev}, {side}, 16)");
                add(&mut nodes, text, vec![a, b], vec![prev.clone()], rng);
                let mut dying = vec![prev.clone()];
                let extra = rng.below(2);
                for step in 0..=extra {
                    // The bias is gathered at other elements' indices, so the bias add never
                    // writes it.
                    let input = pick(rng, &FBUFS.map(String::from));
                    let o = if step == extra {
                        let others: Vec<String> = FBUFS.iter().map(|s| s.to_string()).filter(|f| *f != input).collect();
                        pick(rng, &others)
                    } else {
                        let t = format!("%n{}", nodes.len());
                        add(&mut nodes, format!("async_malloc f32[{outputs}]"), vec![], vec![t.clone()], rng);
                        dying.push(t.clone());
                        t
                    };
                    let text = match step {
                        0 => format!("kernel @bias range({outputs}) args({prev}, {input}, {o}, {side})"),
                        _ => format!(
                            "kernel @{} range({outputs}) args({prev}, {input}, {o})",
                            ["ewf", "ewf2"][rng.below(2) as usize]
                        ),
                    };
                    add(&mut nodes, text, vec![prev.clone(), input], vec![o.clone()], rng);
                    prev = o;
                }
                for t in dying {
                    add(&mut nodes, format!("async_free {t}"), vec![], vec![t], rng);
                }
            }
            _ => {
                add(&mut nodes, "empty".to_string(), vec![], vec![], rng);
            }
        }
    }
    if dyn_scale {
        decls.insert(0, format!("dyn %s = {} : f32", ["0.5", "-2.0", "1.25", "3.0"][rng.below(4) as usize]));
    }
    for (t, _) in &temps {
        add(&mut nodes, format!("async_free {t}"), vec![], vec![t.clone()], rng);
    }
    let mut out = String::new();
    let props = if decls.is_empty() { "" } else { " properties(updatable)" };
    let _ = writeln!(out, "graph @{name}{props} {{\n  queue @q0\n  queue @q1");
    for d in &decls {
        let _ = writeln!(out, "  {d}");
    }
    for (i, node) in nodes.iter().enumerate() {
        let on = node.queue.map(|q| format!(" on @q{q}")).unwrap_or_default();
        // Sometimes a queue barrier stands between a node and its predecessors.
        if !node.after.is_empty() && node.queue.is_some() && rng.below(4) == 0 {
            let preds: Vec<String> = node.after.iter().map(|p| format!("%{p}")).collect();
            let via: Vec<String> = preds.iter().map(|p| format!("{p} via barrier")).collect();
            let _ = writeln!(out, "  %b{i} = barrier wait({}){on} after({})", preds.join(", "), via.join(", "));
            let _ = writeln!(out, "  %{} = {}{on} after(%b{i} via barrier)", node.name, node.text);
            continue;
        }
        let after = if node.after.is_empty() {
            String::new()
        } else {
            format!(" after({})", node.after.iter().map(|p| format!("%{p}")).collect::<Vec<_>>().join(", "))
        };
        let _ = writeln!(out, "  %{} = {}{on}{after}", node.name, node.text);
    }
    out.push_str("}\n");
    let child_ok = temps.is_empty() && decls.is_empty() && !own_allocs;
    let reads = nodes.iter().flat_map(|x| x.reads.iter().cloned()).collect();
    let writes = nodes.iter().flat_map(|x| x.writes.iter().cloned()).collect();
    Graph { text: out, reads, writes, child_ok }
}

/// A module of `graphs` random graphs over one set of buffers of a random size.
pub fn module(seed: u64, graphs: usize) -> String {
    let mut rng = Rng(seed);
    let n = [64u64, 100, 128, 257, 1000][rng.below(5) as usize];
    let mut out = kernels(&mut rng);
    for b in FBUFS {
        let _ = writeln!(out, "usm {b} : f32[{n}]");
    }
    for b in UBUFS {
        let _ = writeln!(out, "usm {b} : u32[{n}]");
    }
    let mut made: Vec<(String, Graph)> = Vec::new();
    for g in 0..graphs {
        let children: Vec<(String, &Graph)> =
            made.iter().filter(|(_, x)| x.child_ok).map(|(name, x)| (name.clone(), x)).collect();
        let name = format!("g{g}");
        let made_now = graph(&mut rng, &name, n, true, &children);
        out.push('\n');
        out.push_str(&made_now.text);
        made.push((name, made_now));
    }
    out
}
