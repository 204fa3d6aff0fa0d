//! `iterate-in-kernel` checked semantically: a `while` whose body is one kernel on one
//! work-group runs up to 16 iterations per launch of that kernel (counted), and the bundle
//! gives, on Vulkan (validation and synchronization validation on), the bytes the
//! interpreter computes for the source module, for loops of 0 to 300 iterations (inside
//! one launch, at its end, across launches and the executor's chunks of rounds), over
//! full-precision random floats. The body reads its `local` array before writing it, so a
//! turn that did not see the array zeroed again would differ. What is refused is left as it
//! was, with a remark.

mod support;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{MemoryKind, Module};
use support::{compile, executor, random_bytes, run_passes, Rng};

const COMMON: &str = "kernel @count_down(%c: buf<u32, read_write>, %x: buf<f32, read_write>, %s: f32) {
  %t = local f32[64]
  %l = local_id 0
  %v = load %x[%l]
  %old = load %t[%l]
  %m = mul %v, %s
  %sum = add %m, %old
  store %t[%l], %sum
  group_barrier
  %one = const 1 : u32
  %n = add %l, %one
  %size = const 64 : u32
  %j = rem %n, %size
  %w = load %t[%j]
  %last = const 63 : u32
  %is_last = eq %l, %last
  if %is_last {
    %zero = const 0 : u32
    %k = load %c[%zero]
    %k1 = sub %k, %one
    store %c[%zero], %k1
  }
  store %x[%l], %w
}

kernel @pair(%c: buf<u32, read_write>, %x: buf<f32, read_write>) {
  %t = local vec2<f32>[4]
  %l = local_id 0
  %zero = const 0 : u32
  %first = eq %l, %zero
  if %first {
    %one = const 1 : u32
    %k = load %c[%zero]
    %k1 = sub %k, %one
    store %c[%zero], %k1
  }
}

usm @x : f32[64]
usm @flags : u32[2]
";

fn module(graphs: &str) -> Module {
    let text = format!("{COMMON}\n{graphs}");
    let m =
        cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "t", &text)));
    cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "t", &text)));
    m
}

/// The loops `iterate-in-kernel` rewrote in `m`, its remarks, and the module it made.
fn rewritten(m: &Module) -> (u64, Vec<String>, Module) {
    let mut out = m.clone();
    let ctx = run_passes(&mut out, &["iterate-in-kernel"], 1, 1);
    (ctx.stats.get("loops-rewritten").copied().unwrap_or(0), ctx.remarks, out)
}

/// `@main` of `a` and of `b` on the interpreter from the same inputs (`@flags + 4` = `n`):
/// every memory object the same bits after each of two runs.
fn same_on_the_interpreter(a: &Module, b: &Module, n: u32, rng: &mut Rng) {
    let x = random_bytes(cmdgraph_ir::types::Type::F32, 64, rng);
    let (mut ia, mut ib) = (Interpreter::new(a).unwrap(), Interpreter::new(b).unwrap());
    let (ea, eb) = (ia.finalize("main").unwrap(), ib.finalize("main").unwrap());
    ia.bind("x", &x).unwrap();
    ib.bind("x", &x).unwrap();
    for run in 0..2 {
        let flags: Vec<u8> = [7u32, n].iter().flat_map(|w| w.to_le_bytes()).collect();
        ia.bind("flags", &flags).unwrap();
        ib.bind("flags", &flags).unwrap();
        ia.run(ea).unwrap();
        ib.run(eb).unwrap();
        for (_, mem) in a.memories.iter().filter(|(_, o)| !matches!(o.kind, MemoryKind::DeviceGlobal(_))) {
            assert!(ia.read(&mem.name).unwrap() == ib.read(&mem.name).unwrap(), "{n}, run {run}: @{}", mem.name);
        }
    }
}

/// Runs `@main` of `m` twice on the interpreter (the source) and of `bundle` on Vulkan from
/// the same inputs, the condition word at `@flags + 4` being `n` before each run; asserts
/// every memory object is the same bits after each run and that validation said nothing.
/// Returns the rounds the executor counted in the last run.
fn both(m: &Module, bundle: &[u8], n: u32, rng: &mut Rng) -> u64 {
    let mut ex = executor(bundle).unwrap_or_else(|e| panic!("{e}"));
    let mut it = Interpreter::new(m).unwrap();
    let x = random_bytes(cmdgraph_ir::types::Type::F32, 64, rng);
    let (ee, ie) = (ex.finalize("main").unwrap_or_else(|e| panic!("{e}")), it.finalize("main").unwrap());
    ex.bind("x", &x).unwrap();
    it.bind("x", &x).unwrap();
    for run in 0..2 {
        // Word 0 is a decoy: a kernel reading it would run another count.
        let flags: Vec<u8> = [7u32, n].iter().flat_map(|w| w.to_le_bytes()).collect();
        ex.bind("flags", &flags).unwrap();
        it.bind("flags", &flags).unwrap();
        ex.run(ee).unwrap_or_else(|e| panic!("{n} iterations, run {run}: {e}"));
        ex.wait(ee).unwrap_or_else(|e| panic!("{n} iterations, run {run}: {e}"));
        it.run(ie).unwrap();
        for (_, mem) in m.memories.iter().filter(|(_, o)| !matches!(o.kind, MemoryKind::DeviceGlobal(_))) {
            let (got, want) = (ex.read(&mem.name).unwrap(), it.read(&mem.name).unwrap());
            assert!(
                got == want,
                "{n} iterations, run {run}: @{} differs:\n vulkan {got:?}\n interp {want:?}",
                mem.name
            );
        }
    }
    let msgs = ex.context().take_messages();
    assert!(msgs.is_empty(), "validation: {msgs:?}");
    ex.loop_rounds(ee).unwrap().first().map_or(0, |(_, r)| *r)
}

#[test]
fn a_loop_iterating_in_its_kernel_gives_the_loops_bytes_for_every_count() {
    let m = module(
        "graph @body {\n  %k = kernel @count_down nd_range(global(64), local(64)) args(@flags + 4, @x, 0.7310585786300049)\n}\n
graph @main {\n  %w = while @flags + 4 do @body\n}",
    );
    let (count, remarks, after) = rewritten(&m);
    assert_eq!(count, 1, "{remarks:?}");
    // The default pipeline holds the pass.
    let bundle = compile(&m, None).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(91);
    // 15, 16 and 17 end inside, at the end of and just after a launch; 300 takes 19
    // launches, past the first submission's 16 rounds.
    for n in [0u32, 1, 15, 16, 17, 40, 300] {
        // The rewritten module is what the interpreter runs for `cmdgraph opt`'s output.
        same_on_the_interpreter(&m, &after, n, &mut rng);
        let rounds = both(&m, &bundle, n, &mut rng);
        assert_eq!(rounds, u64::from(n).div_ceil(16), "{n} iterations: launches of up to 16");
    }
}

#[test]
fn refused_loops_stay_as_they_were_and_say_why() {
    let cases = [
        (
            "graph @body {\n  %k = kernel @count_down nd_range(global(128), local(64)) args(@flags, @x, 1.0)\n}\n",
            "it launches more than one work-group",
        ),
        (
            "graph @body {\n  %k = kernel @pair nd_range(global(4), local(4)) args(@flags, @x)\n}\n",
            "it has a `local` array of vectors",
        ),
        (
            "graph @body {\n  %k = kernel @count_down nd_range(global(8, 8), local(8, 8)) args(@flags, @x, 1.0)\n}\n",
            "it has `local` arrays and a work-group of more than one dimension",
        ),
        (
            "graph @body {\n  %k = kernel @count_down nd_range(global(64), local(64)) args(@flags, @x, 1.0)\n  %e = empty after(%k)\n}\n",
            "does not hold exactly one node",
        ),
    ];
    for (body, why) in cases {
        let m = module(&format!("{body}\ngraph @main {{\n  %w = while @flags do @body\n}}"));
        let (count, remarks, _) = rewritten(&m);
        assert_eq!(count, 0, "{body}");
        assert!(remarks.iter().any(|r| r.contains("%w not rewritten") && r.contains(why)), "{why}: {remarks:?}");
    }
    let m = module(
        "graph @body {\n  %k = kernel @count_down nd_range(global(64), local(64)) args(@flags, @x, 1.0)\n}\n
graph @main properties(updatable) {\n  %w = while @flags do @body\n}",
    );
    assert_eq!(rewritten(&m).0, 0, "an updatable graph is left alone");
}
