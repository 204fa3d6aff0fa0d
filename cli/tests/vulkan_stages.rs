//! `fuse-stages` checked semantically: each module's chains fuse (counted), and the fused
//! module gives the source's bytes on the interpreter (exactly) and on Vulkan (validation
//! and synchronization validation on), from full-precision random inputs. The stages read
//! what other work-items of their group wrote in the stage before (a neighbour, a reversed
//! index, a whole row), so a missing or misplaced work-group barrier changes the result.
//! The refusals (a read across work-groups, launches that differ, an `updatable` graph, too
//! much work-group memory) are checked to leave the graph as it was.

mod support;

use cmdgraph_interp::{Interpreter, RunOptions};
use cmdgraph_ir::{MemoryKind, Module, NodeKind};
use cmdgraph_passes::pipeline::{parse_pipeline, run_pipeline, RunOptions as PassRunOptions};
use cmdgraph_passes::{PassContext, REGISTRY};
use std::collections::BTreeMap;
use support::{compile, random_bytes, Both, Rng};

/// One work-group of 64: in place, each work-item takes its right neighbour's value.
const ROT: &str = "kernel @rot(%x: buf<f32, read_write>, %s: f32) {
  %l = local_id 0
  %one = const 1 : u32
  %mask = const 63 : u32
  %n = add %l, %one
  %j = and %n, %mask
  %v = load %x[%j]
  group_barrier
  %w = mul %v, %s
  store %x[%l], %w
}
";

/// Divides each element by one plus the sum of the group's 64 values (work-group memory).
const NORM: &str = "kernel @norm(%x: buf<f32, read_write>) {
  %t = local f32[64]
  %l = local_id 0
  %v = load %x[%l]
  store %t[%l], %v
  group_barrier
  %zero = const 0 : u32
  %one = const 1 : u32
  %n = const 64 : u32
  %init = const 1.0 : f32
  %sum = for %j = %zero to %n step %one carry(%s = %init) {
    %e = load %t[%j]
    %s2 = add %s, %e
    yield %s2
  }
  %r = div %v, %sum
  store %x[%l], %r
}
";

/// A solver's iteration in miniature (lit-tests/passes/fuse-stages/
/// loops_small_launches_inside_one_work_group.cgir): `y[i] = (x[i] + x[i+1]) / 2` over a
/// range of 250, the sum of `y` by one work-group of 64 (each work-item adds 4 consecutive
/// elements, which other work-items' loop turns wrote), the copy of `y` back into `x` over
/// the range: the two ranges loop inside the group, and a missing barrier changes the sum
/// (checked: dropping the barriers around looped stages fails this test on llvmpipe).
const LOOPED: &str = "kernel @halve(%x: buf<f32, read>, %y: buf<f32, write>) {
  %i = global_id 0
  %n = global_range 0
  %one = const 1 : u32
  %last = sub %n, %one
  %next = add %i, %one
  %j = min %next, %last
  %v = load %x[%i]
  %w = load %x[%j]
  %s = add %v, %w
  %half = const 0.5 : f32
  %r = mul %s, %half
  store %y[%i], %r
}

kernel @total(%y: buf<f32, read>, %s: buf<f32, write>) {
  %t = local f32[64]
  %l = local_id 0
  %zero = const 0 : u32
  %n = const 250 : u32
  %c4 = const 4 : u32
  %step = const 1 : u32
  %fz = const 0.0 : f32
  %lo = mul %l, %c4
  %hi0 = add %lo, %c4
  %hi = min %hi0, %n
  %acc = for %k = %lo to %hi step %step carry(%a = %fz) {
    %e = load %y[%k]
    %a2 = add %a, %e
    yield %a2
  }
  store %t[%l], %acc
  group_barrier
  %first = eq %l, %zero
  if %first {
    %c64 = const 64 : u32
    %one = const 1 : u32
    %sum = for %q = %zero to %c64 step %one carry(%b = %fz) {
      %f = load %t[%q]
      %b2 = add %b, %f
      yield %b2
    }
    store %s[%zero], %sum
  }
}

kernel @copy(%y: buf<f32, read>, %x: buf<f32, write>) {
  %i = global_id 0
  %v = load %y[%i]
  store %x[%i], %v
}

";

/// `y[l] = y[l] * s + x[63 - l]`.
const MIX: &str = "kernel @mix(%x: buf<f32, read>, %y: buf<f32, read_write>, %s: f32) {
  %l = local_id 0
  %top = const 63 : u32
  %k = sub %top, %l
  %a = load %x[%k]
  %b = load %y[%l]
  %r = fma %b, %s, %a
  store %y[%l], %r
}
";

/// Row-wise over rows of 64: `m[gid]` is the mean of the work-group's row.
const ROW_MEAN: &str = "kernel @row_mean(%x: buf<f32, read>, %m: buf<f32, write>) {
  %g = group_id 0
  %i = global_id 0
  %c64 = const 64 : u32
  %base = mul %g, %c64
  %zero = const 0 : u32
  %one = const 1 : u32
  %init = const 0.0 : f32
  %sum = for %j = %zero to %c64 step %one carry(%s = %init) {
    %k = add %base, %j
    %e = load %x[%k]
    %s2 = add %s, %e
    yield %s2
  }
  %inv = const 0.015625 : f32
  %mean = mul %sum, %inv
  store %m[%i], %mean
}
";

/// `x[gid] = x[gid] - m[gid]`.
const CENTER: &str = "kernel @center(%x: buf<f32, read_write>, %m: buf<f32, read>) {
  %i = global_id 0
  %a = load %x[%i]
  %b = load %m[%i]
  %r = sub %a, %b
  store %x[%i], %r
}
";

/// In place, each work-item takes the next element of its row (wrapping in the row).
const ROW_ROT: &str = "kernel @row_rot(%x: buf<f32, read_write>) {
  %g = group_id 0
  %l = local_id 0
  %c64 = const 64 : u32
  %base = mul %g, %c64
  %i = add %base, %l
  %one = const 1 : u32
  %mask = const 63 : u32
  %n = add %l, %one
  %j0 = and %n, %mask
  %j = add %base, %j0
  %v = load %x[%j]
  group_barrier
  %h = const 0.5 : f32
  %w = add %v, %h
  store %x[%i], %w
}
";

/// `b[i] = a[(i + 1) % n] * 1.25` over a `range(n)`.
const SHIFT: &str = "kernel @shift(%a: buf<f32, read>, %b: buf<f32, write>) {
  %i = global_id 0
  %n = global_range 0
  %one = const 1 : u32
  %k = add %i, %one
  %j = rem %k, %n
  %v = load %a[%j]
  %s = const 1.25 : f32
  %r = mul %v, %s
  store %b[%i], %r
}
";

/// `x[(gid + 64) % 256] += 1`: work-group `G` writes the next group's row.
const NEXT_ROW: &str = "kernel @next_row(%x: buf<f32, read_write>) {
  %i = global_id 0
  %c64 = const 64 : u32
  %c255 = const 255 : u32
  %k = add %i, %c64
  %j = and %k, %c255
  %v = load %x[%j]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%j], %r
}
";

/// `single_task`: a running sum over 32 elements, in place.
const SCAN: &str = "kernel @scan(%x: buf<f32, read_write>) {
  %zero = const 0 : u32
  %one = const 1 : u32
  %n = const 32 : u32
  %init = const 0.0 : f32
  %t = for %j = %zero to %n step %one carry(%s = %init) {
    %e = load %x[%j]
    %s2 = add %s, %e
    store %x[%j], %s2
    yield %s2
  }
}
";

/// Which module, what its graph `@g` must become.
struct Case {
    name: &'static str,
    text: String,
    /// `fusions` and `kernels-fused` the pass must report.
    fusions: u64,
    fused: u64,
}

fn cases() -> Vec<Case> {
    let one_group = format!(
        "{ROT}\n{NORM}\n{MIX}\nusm @x : f32[64]\nusm @y : f32[64]\n
graph @g {{
  %a = kernel @rot nd_range(global(64), local(64)) args(@x, 0.75)
  %b = kernel @norm nd_range(global(64), local(64)) args(@x) after(%a)
  %c = kernel @mix nd_range(global(64), local(64)) args(@x, @y, 0.37) after(%b)
  %d = kernel @rot nd_range(global(64), local(64)) args(@y, 1.5) after(%c)
  %e = kernel @mix nd_range(global(64), local(64)) args(@y, @x, 1.7) after(%d)
}}
"
    );
    let rows = format!(
        "{ROW_MEAN}\n{CENTER}\n{ROW_ROT}\nusm @x : f32[256]\nusm @m : f32[256]\n
graph @g {{
  %mean = kernel @row_mean nd_range(global(256), local(64)) args(@x, @m)
  %center = kernel @center nd_range(global(256), local(64)) args(@x, @m) after(%mean)
  %rot = kernel @row_rot nd_range(global(256), local(64)) args(@x) after(%center)
  %mean2 = kernel @row_mean nd_range(global(256), local(64)) args(@x, @m) after(%rot)
}}
"
    );
    let ranges = format!(
        "{SHIFT}\nusm @x : f32[100]\nusm @y : f32[100]\nusm @z : f32[100]\n
graph @g {{
  %a = kernel @shift range(100) args(@x, @y)
  %b = kernel @shift range(100) args(@y, @z) after(%a)
  %c = kernel @shift range(100) args(@z, @x) after(%b)
}}
"
    );
    let single = format!(
        "{SCAN}\nusm @x : f32[32]\n
graph @g {{
  %a = kernel @scan single_task args(@x)
  %b = kernel @scan single_task args(@x) after(%a)
}}
"
    );
    let across = format!(
        "{ROW_MEAN}\n{NEXT_ROW}\nusm @x : f32[256]\nusm @m : f32[256]\n
graph @g {{
  %mean = kernel @row_mean nd_range(global(256), local(64)) args(@x, @m)
  %next = kernel @next_row nd_range(global(256), local(64)) args(@x) after(%mean)
}}
"
    );
    let differ = format!(
        "{ROT}\n{ROW_ROT}\nusm @x : f32[256]\n
graph @g {{
  %a = kernel @rot nd_range(global(64), local(64)) args(@x, 2.5)
  %b = kernel @row_rot nd_range(global(256), local(64)) args(@x) after(%a)
}}
"
    );
    let updatable = format!(
        "{ROT}\nusm @x : f32[64]\n
graph @g properties(updatable) {{
  %a = kernel @rot nd_range(global(64), local(64)) args(@x, 0.75)
  %b = kernel @rot nd_range(global(64), local(64)) args(@x, 1.25) after(%a)
}}
"
    );
    let temporaries = format!(
        "{ROW_MEAN}\n{CENTER}\n{ROW_ROT}\nusm @x : f32[256]\n
graph @g {{
  %t = async_malloc f32[256]
  %mean = kernel @row_mean nd_range(global(256), local(64)) args(@x, %t) after(%t)
  %center = kernel @center nd_range(global(256), local(64)) args(@x, %t) after(%mean)
  %ft = async_free %t after(%center)
  %rot = kernel @row_rot nd_range(global(256), local(64)) args(@x) after(%center)
}}
"
    );
    let around = format!(
        "{ROW_MEAN}\n{CENTER}\nusm @x : f32[256]\nusm @y : f32[256]\n
graph @g {{
  %t = async_malloc f32[256]
  %mean = kernel @row_mean nd_range(global(256), local(64)) args(@x, %t) after(%t)
  %ft = async_free %t after(%mean)
  %u = async_malloc f32[256] after(%ft)
  %mean2 = kernel @row_mean nd_range(global(256), local(64)) args(@x, %u) after(%mean, %u)
  %center = kernel @center nd_range(global(256), local(64)) args(@y, %u) after(%mean2)
  %fu = async_free %u after(%center)
}}
"
    );
    let looped = format!(
        "{LOOPED}\nusm @x : f32[250]\nusm @y : f32[250]\nusm @s : f32[1]\n
graph @g {{
  %sweep = kernel @halve range(250) args(@x, @y)
  %sum = kernel @total nd_range(global(64), local(64)) args(@y, @s) after(%sweep)
  %commit = kernel @copy range(250) args(@y, @x) after(%sum)
}}
"
    );
    vec![
        Case { name: "small ranges looped inside one work-group", text: looped, fusions: 1, fused: 3 },
        Case { name: "through a temporary freed inside the chain", text: temporaries, fusions: 1, fused: 3 },
        Case { name: "a path around the link", text: around, fusions: 1, fused: 2 },
        Case { name: "one work-group, five kernels", text: one_group, fusions: 1, fused: 5 },
        Case { name: "row-wise, four work-groups", text: rows, fusions: 1, fused: 4 },
        Case { name: "range(100) as one work-group", text: ranges, fusions: 1, fused: 3 },
        Case { name: "single_task", text: single, fusions: 1, fused: 2 },
        Case { name: "write into the next group's row", text: across, fusions: 0, fused: 0 },
        Case { name: "launches differ", text: differ, fusions: 0, fused: 0 },
        Case { name: "updatable graph", text: updatable, fusions: 0, fused: 0 },
    ]
}

fn parse(text: &str) -> Module {
    let m =
        cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "t", text)));
    cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "t", text)));
    m
}

/// The module after `fuse-stages` (verified), the pass's statistics and its remarks.
fn optimize(m: &Module) -> (Module, BTreeMap<&'static str, u64>, Vec<String>) {
    let passes = parse_pipeline("fuse-stages", REGISTRY).expect("registered");
    let mut out = m.clone();
    let mut ctx = PassContext::default();
    let options = PassRunOptions { verify_each: true, ..PassRunOptions::default() };
    let report = run_pipeline(&mut out, &passes, &options, &mut ctx, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    let stats = report.passes.into_iter().next().map(|p| p.stats).unwrap_or_default();
    (out, stats, ctx.remarks)
}

/// Every memory's bytes after two runs of `@g` on the interpreter from `seed`'s inputs.
fn interpreted(m: &Module, seed: u64) -> Vec<(String, Vec<u8>)> {
    let mut interp = Interpreter::new(m).expect("interpreter");
    let mut rng = Rng(seed);
    for (_, mem) in m.memories.iter() {
        if !matches!(mem.kind, MemoryKind::DeviceGlobal(_)) {
            interp.bind(&mem.name, &random_bytes(mem.elem, mem.count, &mut rng)).expect("bind");
        }
    }
    let exec = interp.finalize("g").expect("finalize");
    for _ in 0..2 {
        interp.run_with(exec, &RunOptions { check_races: true, ..RunOptions::default() }).expect("runs");
    }
    m.memories.iter().map(|(_, mem)| (mem.name.clone(), interp.read(&mem.name).expect("read").to_vec())).collect()
}

fn kernel_nodes(m: &Module) -> usize {
    m.graphs.iter().flat_map(|(_, g)| g.nodes.iter()).filter(|(_, n)| matches!(n.kind, NodeKind::Kernel(_))).count()
}

#[test]
fn fused_stages_match_the_source_on_the_interpreter_and_on_vulkan() {
    for (i, case) in cases().into_iter().enumerate() {
        let source = parse(&case.text);
        let (after, stats, remarks) = optimize(&source);
        let stat = |k: &str| stats.get(k).copied().unwrap_or(0);
        assert_eq!((stat("fusions"), stat("kernels-fused")), (case.fusions, case.fused), "{}: {remarks:?}", case.name);
        let saved = case.fused.saturating_sub(case.fusions) as usize;
        assert_eq!(kernel_nodes(&after), kernel_nodes(&source) - saved, "{}", case.name);
        if case.fusions == 0 {
            assert_eq!(cmdgraph_ir::text::print(&after), cmdgraph_ir::text::print(&source), "{}", case.name);
            assert!(
                case.name == "updatable graph" || remarks.iter().any(|r| r.contains("not fused")),
                "{}: no remark says why: {remarks:?}",
                case.name
            );
            continue;
        }
        for seed in [i as u64 * 10 + 1, i as u64 * 10 + 2] {
            assert_eq!(
                interpreted(&after, seed),
                interpreted(&source, seed),
                "{}: interpreter, seed {seed}",
                case.name
            );
        }
        let bundle = compile(&source, Some("fuse-stages")).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for (module, what) in [(&source, "source"), (&after, "fused module")] {
            let mut both = Both::new(module, &bundle, 100 + i as u64).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let compared = both.run("g", 3).unwrap_or_else(|e| panic!("{} against the {what}: {e}", case.name));
            assert_eq!(compared, 3 * module.memories.len(), "{}: every memory, every run", case.name);
        }
    }
}

#[test]
fn refusals_say_why() {
    let cases = cases();
    let remark = |name: &str| {
        let case = cases.iter().find(|c| c.name == name).expect("case");
        optimize(&parse(&case.text)).2.concat()
    };
    assert!(remark("write into the next group's row").contains("@x is written and its work-groups do not stay"));
    assert!(remark("launches differ").contains("launched as"));
    assert!(remark("a path around the link").contains("not fused: %mean -> %mean2: a path through other nodes"));
}

#[test]
fn stages_share_one_kernel_across_identical_chains() {
    let text = format!(
        "{ROT}\nusm @x : f32[64]\nusm @y : f32[64]\n
graph @g {{
  %a = kernel @rot nd_range(global(64), local(64)) args(@x, 0.5)
  %b = kernel @rot nd_range(global(64), local(64)) args(@x, 0.5) after(%a)
  %c = kernel @rot nd_range(global(64), local(64)) args(@y, 0.5)
  %d = kernel @rot nd_range(global(64), local(64)) args(@y, 0.5) after(%c)
}}
"
    );
    let (after, stats, _) = optimize(&parse(&text));
    assert_eq!(stats.get("fusions"), Some(&2));
    assert_eq!(stats.get("kernels-shared"), Some(&1));
    assert_eq!(after.kernels.len(), 2, "@rot and one @stages.rot");
}
