//! Conditional nodes on Vulkan (docs/conditional.md, "Executor"): every kind, loops of 0, 1
//! and many rounds (across the executor's chunks of predicated rounds), nesting, a condition
//! a kernel computes from data, each compiled through the default pipeline and run on the
//! default device with validation (synchronization validation included), every memory
//! object compared bit for bit with the interpreter running the source module.
//!
//! Compiled with the default pipeline without `iterate-in-kernel`, so that one round is one
//! iteration and the loops here exercise the executor's rounds, chunks and submissions
//! (cli/tests/vulkan_iterate_in_kernel.rs checks that pass; the random modules at the end
//! use the default pipeline, the pass included).

mod support;

use cmdgraph_executor::{ExecId, Executor};
use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{MemoryKind, Module};
use support::{compile, executor, Rng};

/// The kernels and memory every test shares (as interp/tests/conditional.rs): `@x` (8
/// floats), `@flags` (4 words), `@rounds` (a counter loop bodies increment).
const COMMON: &str =
    "kernel @double_and_count_down(%x: buf<f32, read_write>, %c: buf<u32, read_write>, %r: buf<u32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %two = const 2.0 : f32
  %d = mul %v, %two
  store %x[%i], %d
  %zero = const 0 : u32
  %first = eq %i, %zero
  if %first {
    %one = const 1 : u32
    %n = load %c[%zero]
    %n1 = sub %n, %one
    store %c[%zero], %n1
    %k = load %r[%zero]
    %k1 = add %k, %one
    store %r[%zero], %k1
  }
}

kernel @add(%x: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %s = add %v, %a
  store %x[%i], %s
}

kernel @toggle(%c: buf<u32, read_write>) {
  %zero = const 0 : u32
  %one = const 1 : u32
  %v = load %c[%zero]
  %t = xor %v, %one
  store %c[%zero], %t
}

kernel @halve_until_small(%x: buf<f32, read_write>, %c: buf<u32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %first = eq %i, %zero
  if %first {
    %half = const 0.5 : f32
    %limit = const 1.0 : f32
    %eight = const 8 : u32
    %one = const 1 : u32
    %m = for %j = %zero to %eight step %one carry(%m0 = %zero) {
      %v = load %x[%j]
      %h = mul %v, %half
      store %x[%j], %h
      %big = gt %h, %limit
      %b = select %big, %one, %zero
      %m1 = max %m0, %b
      yield %m1
    }
    store %c[%zero], %m
  }
}

usm @x : f32[8]
usm @flags : u32[4]
usm @rounds : u32[1]

graph @loop_body {
  %k = kernel @double_and_count_down range(8) args(@x, @flags, @rounds)
}

graph @plus_one {
  %a = kernel @add range(8) args(@x, 1.0)
}

graph @plus_ten {
  %a = kernel @add range(8) args(@x, 10.0)
}

graph @nothing {
}
";

/// The default pipeline without `iterate-in-kernel` (see the module documentation).
fn pipeline() -> String {
    let passes = cmdgraph_passes::DEFAULT_PIPELINE.iter().filter(|&&p| p != "iterate-in-kernel");
    passes.copied().collect::<Vec<_>>().join(",")
}

fn module(graphs: &str) -> Module {
    let text = format!("{COMMON}\n{graphs}");
    let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    m
}

/// Full-precision random floats in [1, 2) for `@x`.
fn x0(rng: &mut Rng) -> Vec<u8> {
    (0..8).map(|_| (1.0 + (rng.next() >> 11) as f64 / (1u64 << 53) as f64) as f32).flat_map(f32::to_le_bytes).collect()
}

fn words(w: [u32; 4]) -> Vec<u8> {
    w.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Runs `@main` of `m` `runs` times on Vulkan (through the default pipeline's bundle) and on
/// the interpreter from the same inputs, and asserts every memory object is the same bits
/// after each run and that validation said nothing. Returns `@flags` and `@rounds` after the
/// last run, and the executor with the executable (for what it reports).
fn both(m: &Module, x: &[u8], flags: [u32; 4], runs: usize) -> ([u32; 4], u32, (Executor, ExecId)) {
    let bundle = compile(m, Some(&pipeline())).unwrap_or_else(|e| panic!("{e}"));
    let mut ex = executor(&bundle).unwrap_or_else(|e| panic!("{e}"));
    let mut it = Interpreter::new(m).unwrap();
    let inputs = [("x", x.to_vec()), ("flags", words(flags)), ("rounds", vec![0; 4])];
    for (name, bytes) in &inputs {
        ex.bind(name, bytes).unwrap();
        it.bind(name, bytes).unwrap();
    }
    let (ee, ie) = (ex.finalize("main").unwrap_or_else(|e| panic!("{e}")), it.finalize("main").unwrap());
    for run in 0..runs {
        ex.run(ee).unwrap_or_else(|e| panic!("run {run}: {e}"));
        ex.wait(ee).unwrap_or_else(|e| panic!("run {run}: {e}"));
        it.run(ie).unwrap_or_else(|e| panic!("run {run}: {e}"));
        for (_, mem) in m.memories.iter().filter(|(_, o)| !matches!(o.kind, MemoryKind::DeviceGlobal(_))) {
            let (got, want) = (ex.read(&mem.name).unwrap(), it.read(&mem.name).unwrap());
            assert!(got == want, "run {run}: @{} differs:\n vulkan {got:?}\n interp {want:?}", mem.name);
        }
    }
    let msgs = ex.context().take_messages();
    assert!(msgs.is_empty(), "validation: {msgs:?}");
    let f: Vec<u32> =
        it.read("flags").unwrap().chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let r = it.read("rounds").unwrap();
    ([f[0], f[1], f[2], f[3]], u32::from_le_bytes([r[0], r[1], r[2], r[3]]), (ex, ee))
}

/// Both ways a round's successor predicate is made: `@loop_body` is one kernel on one
/// work-group, which writes it itself (a loop predicate, docs/abi.md); on two work-groups the
/// predicate dispatch computes it after the body.
#[test]
fn while_loops_of_zero_one_and_many_rounds_match_the_interpreter() {
    let two_groups = "graph @two_groups {
  %k = kernel @double_and_count_down nd_range(global(8), local(4)) args(@x, @flags, @rounds)
}

graph @main {
  %w = while @flags do @two_groups
}";
    let bodies = [
        (
            "graph @main {\n  %w = while @flags do @loop_body\n}".to_string(),
            "a predicated kernel that writes the next round's predicate itself",
        ),
        (two_groups.to_string(), "predicated kernels reading words a predicate dispatch computes"),
    ];
    let mut rng = Rng(33);
    for (graphs, how) in bodies {
        let m = module(&graphs);
        // 16 rounds fill the first submission exactly; 17 and 300 need further chunks (32, 64,
        // 128, then 256), 300 ending inside the last.
        for n in [0u32, 1, 7, 16, 17, 300] {
            let (flags, rounds, (ex, id)) = both(&m, &x0(&mut rng), [n, 0, 0, 0], 1);
            assert_eq!((flags[0], rounds), (0, n), "{n} rounds");
            let paths = ex.conditional_paths(id).unwrap();
            let want = format!("while: {how}; rounds in chunks of 1, 2, 4");
            assert!(paths.len() == 1 && paths[0].1.starts_with(&want), "{paths:?}");
            // The rounds are counted on the device, and the next run submits as many at once.
            assert_eq!(ex.loop_rounds(id).unwrap(), vec![("w".to_string(), u64::from(n))]);
        }
    }
}

/// A loop predicate reads the condition where the kernel's view of the memory has it: the
/// view starts at `@flags + 4` and the condition is `@flags + 12`, element 2 of the view,
/// the word the kernel's last work-item counts down (element 0 of the view, `@flags + 4`,
/// holds a decoy the kernel never changes; the first invocation reads the condition after
/// the barrier). Against the interpreter, across chunks and runs.
#[test]
fn a_loop_predicate_reads_the_condition_inside_the_kernels_view() {
    let m = module(
        "kernel @count_down_at(%x: buf<f32, read_write>, %c: buf<u32, read_write>, %at: u32) {
  %i = global_id 0
  %v = load %x[%i]
  %two = const 2.0 : f32
  %d = mul %v, %two
  store %x[%i], %d
  %seven = const 7 : u32
  %last = eq %i, %seven
  if %last {
    %one = const 1 : u32
    %n = load %c[%at]
    %n1 = sub %n, %one
    store %c[%at], %n1
  }
}

graph @body {
  %k = kernel @count_down_at range(8) args(@x, @flags + 4, 2 : u32)
}

graph @main {
  %w = while @flags + 12 do @body
}",
    );
    let mut rng = Rng(34);
    for n in [0u32, 1, 3, 40] {
        let (flags, _, (ex, id)) = both(&m, &x0(&mut rng), [7, 5, 9, n], 2);
        assert_eq!(flags, [7, 5, 9, 0], "{n} rounds");
        let paths = ex.conditional_paths(id).unwrap();
        assert!(paths[0].1.contains("writes the next round's predicate itself"), "{paths:?}");
        assert_eq!(ex.loop_rounds(id).unwrap(), vec![("w".to_string(), 0)], "{n} rounds: the second run");
    }
}

/// A loop body that writes its condition in the middle (`@add`, the countdown, then `@double`
/// after them): the next round's predicate is computed beside `@double`, which still reads
/// this round's (even and odd rounds read words of their own). 0, 1, 2 and many rounds, across
/// chunks, against the interpreter. `@count_down` reads `local_id 0` (0 in its one work-item)
/// so that `fuse-stages` keeps it a dispatch of its own: a body of plain small kernels would
/// become one dispatch, with no inside to compute the predicate in.
#[test]
fn the_next_rounds_predicate_computed_inside_the_body_keeps_every_round() {
    let m = module(
        "kernel @double(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %two = const 2.0 : f32
  %d = mul %v, %two
  store %x[%i], %d
}

kernel @count_down(%c: buf<u32, read_write>) {
  %zero = local_id 0
  %one = const 1 : u32
  %n = load %c[%zero]
  %n1 = sub %n, %one
  store %c[%zero], %n1
}

graph @middle {
  %a = kernel @add range(8) args(@x, 1.0)
  %c = kernel @count_down nd_range(global(1), local(1)) args(@flags) after(%a)
  %d = kernel @double range(8) args(@x) after(%c)
}

graph @main {
  %w = while @flags do @middle
}",
    );
    let mut rng = Rng(40);
    for n in [0u32, 1, 2, 5, 16, 17, 40] {
        let (flags, _, (ex, id)) = both(&m, &x0(&mut rng), [n, 0, 0, 0], 1);
        assert_eq!(flags[0], 0);
        let paths = ex.conditional_paths(id).unwrap();
        assert!(
            paths[0].1.contains("the next round's inside the body after its last write of the condition"),
            "{paths:?}"
        );
        assert_eq!(ex.loop_rounds(id).unwrap(), vec![("w".to_string(), u64::from(n))]);
    }
}

/// Runs of one executable whose loops take other counts than the last run's: fewer (the
/// rounds submitted at once past the end run predicated off), more (the rest follows), and
/// past what one submission of every chunk holds (511); each checked against the
/// interpreter and counted.
#[test]
fn loops_longer_and_shorter_than_the_last_run_match_the_interpreter() {
    let m = module("graph @main {\n  %w = while @flags do @loop_body\n}");
    let bundle = compile(&m, Some(&pipeline())).unwrap_or_else(|e| panic!("{e}"));
    let mut ex = executor(&bundle).unwrap();
    let mut it = Interpreter::new(&m).unwrap();
    let (ee, ie) = (ex.finalize("main").unwrap(), it.finalize("main").unwrap());
    let mut rng = Rng(39);
    for n in [100u32, 37, 250, 600, 3, 0, 700] {
        let x = x0(&mut rng);
        for (name, bytes) in [("x", x.clone()), ("flags", words([n, 0, 0, 0])), ("rounds", vec![0; 4])] {
            ex.bind(name, &bytes).unwrap();
            it.bind(name, &bytes).unwrap();
        }
        ex.run(ee).unwrap();
        ex.wait(ee).unwrap_or_else(|e| panic!("{n}: {e}"));
        it.run(ie).unwrap();
        for name in ["x", "flags", "rounds"] {
            assert!(ex.read(name).unwrap() == it.read(name).unwrap(), "{n} rounds: @{name} differs");
        }
        assert_eq!(it.read("rounds").unwrap(), n.to_le_bytes());
        assert_eq!(ex.loop_rounds(ee).unwrap(), vec![("w".to_string(), u64::from(n))]);
    }
    assert!(ex.context().take_messages().is_empty());
}

#[test]
fn if_else_and_if_without_else_take_the_branch_their_words_say() {
    let m = module(
        "graph @main {
  %i = if @flags + 4 then @plus_one else @plus_ten
  %j = if @flags + 8 then @plus_ten after(%i)
}",
    );
    let mut rng = Rng(34);
    for (a, b) in [(0, 0), (1, 0), (0, 3), (0x8000_0000, 1)] {
        let (flags, _, _) = both(&m, &x0(&mut rng), [0, a, b, 0], 2);
        assert_eq!(flags, [0, a, b, 0]);
    }
}

#[test]
fn switch_runs_the_case_its_word_names_and_none_past_the_last() {
    let m = module("graph @main {\n  %s = switch @flags + 12 cases(@nothing, @plus_one, @plus_ten, @loop_body)\n}");
    let mut rng = Rng(35);
    for k in [0u32, 1, 2, 3, 4, 1000] {
        let (_, rounds, _) = both(&m, &x0(&mut rng), [5, 0, 0, k], 1);
        assert_eq!(rounds, u32::from(k == 3), "case {k}");
    }
}

#[test]
fn nested_conditionals_in_a_loop_follow_a_word_the_body_changes() {
    // Each round doubles `@x`, adds 1 when `@flags[1]` is set, adds 10 when `@flags[2]` says
    // case 1 (it never changes: case 0 runs nothing), then flips `@flags[1]`: the inner `if`
    // runs every other round, its predicate the loop's word and its own.
    let m = module(
        "graph @flip {
  %t = kernel @toggle single_task args(@flags + 4)
}

graph @round {
  %k = kernel @double_and_count_down range(8) args(@x, @flags, @rounds)
  %i = if @flags + 4 then @plus_one after(%k)
  %s = switch @flags + 8 cases(@nothing, @plus_ten) after(%i)
  %f = if @flags + 12 then @flip after(%s)
}

graph @main {
  %w = while @flags do @round
}",
    );
    let mut rng = Rng(36);
    for (n, case) in [(0u32, 1u32), (5, 0), (5, 1), (21, 1)] {
        let (flags, rounds, _) = both(&m, &x0(&mut rng), [n, 1, case, 1], 1);
        assert_eq!(rounds, n);
        assert_eq!(flags[1], 1 ^ (n & 1), "{n} rounds flip the word {n} times");
    }
}

/// Two independent nodes whose bodies write their own conditions (so each has a predicate
/// dispatch) in one stage, with no barrier between them: each node's words sit in a window
/// of their own, so neither's predicate write touches what the other's kernels read (the
/// validation layer checks it), and a third node on the first's word after both.
#[test]
fn independent_conditional_nodes_in_one_stage_keep_their_words_apart() {
    let m = module(
        "usm @g : u32[4]

graph @flip0 {
  %t = kernel @toggle single_task args(@g)
}

graph @flip1 {
  %t = kernel @toggle single_task args(@flags + 4)
}

graph @main {
  %a = if @g then @flip0 else @nothing
  %b = switch @flags + 12 cases(@nothing, @flip1)
  %c = if @g + 4 then @plus_ten after(%a, %b)
}",
    );
    let bundle = compile(&m, Some(&pipeline())).unwrap_or_else(|e| panic!("{e}"));
    for (g0, case) in [(1u32, 1u32), (0, 0), (1, 5)] {
        let mut ex = executor(&bundle).unwrap();
        let mut it = Interpreter::new(&m).unwrap();
        let mut rng = Rng(41);
        let inputs = [("x", x0(&mut rng)), ("flags", words([0, 0, 0, case])), ("g", words([g0, 1, g0, 0]))];
        for (name, bytes) in &inputs {
            ex.bind(name, bytes).unwrap();
            it.bind(name, bytes).unwrap();
        }
        let (ee, ie) = (ex.finalize("main").unwrap(), it.finalize("main").unwrap());
        ex.run(ee).unwrap();
        ex.wait(ee).unwrap();
        it.run(ie).unwrap();
        for name in ["x", "flags", "g"] {
            assert!(ex.read(name).unwrap() == it.read(name).unwrap(), "g0 {g0} case {case}: @{name} differs");
        }
        let groups = ex.barrier_groups(ee).unwrap();
        assert!(
            groups.iter().flatten().any(|s| s.contains(&"a".to_string()) && s.contains(&"b".to_string())),
            "{groups:?}"
        );
        let msgs = ex.context().take_messages();
        assert!(msgs.is_empty(), "validation: {msgs:?}");
    }
}

#[test]
fn a_kernel_sets_the_loops_condition_from_data() {
    // Halve every element while any is above 1: the round count depends on the inputs.
    let m = module(
        "graph @halve {
  %h = kernel @halve_until_small single_task args(@x, @flags)
}

graph @main {
  %init = memfill @flags, 1 : u32, 1
  %w = while @flags do @halve after(%init)
  %after = kernel @add range(8) args(@x, 1.0) after(%w)
}",
    );
    let mut rng = Rng(37);
    for scale in [1.0f32, 3.0e3, 6.0e30] {
        let x: Vec<u8> = x0(&mut rng)
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * scale)
            .flat_map(f32::to_le_bytes)
            .collect();
        let (flags, _, _) = both(&m, &x, [0, 0, 0, 0], 2);
        assert_eq!(flags[0], 0);
    }
}

#[test]
fn an_if_after_the_kernel_that_sets_its_word_sees_the_new_word() {
    // The condition is written by a kernel in the same graph just before the node: the
    // predicate must read it after that kernel, on the device as on the interpreter.
    let m = module(
        "graph @main {
  %t = kernel @toggle single_task args(@flags + 4)
  %i = if @flags + 4 then @plus_one else @plus_ten after(%t)
}",
    );
    let mut rng = Rng(38);
    for start in [0u32, 1] {
        let (flags, _, _) = both(&m, &x0(&mut rng), [0, start, 0, 0], 3);
        assert_eq!(flags[1], start ^ 1);
    }
}

/// Individual updates of the nodes around conditional nodes (docs/conditional.md,
/// "Updates"): a kernel that sets the loop's count takes a new value, a kernel after the
/// loop a new scalar, then a new range (its segment re-recorded), then another buffer (its
/// effects change); each state runs on Vulkan and on the interpreter running the updated
/// module, every memory object bit for bit.
#[test]
fn updates_of_the_nodes_around_conditional_nodes_match_the_interpreter() {
    let text = |count: u32, add: &str, range: u32, target: &str| {
        format!(
            "kernel @set_word(%c: buf<u32, write>, %v: u32) {{
  %zero = const 0 : u32
  store %c[%zero], %v
}}

usm @y : f32[8]

graph @main properties(updatable) {{
  %s = kernel @set_word single_task args(@flags, {count})
  %w = while @flags do @loop_body after(%s)
  %a = kernel @add range({range}) args({target}, {add}) after(%w)
  %i = if @flags + 4 then @plus_one else @plus_ten after(%a)
  %b = kernel @add range(8) args(@y, 0.125) after(%i)
}}"
        )
    };
    let first = module(&text(5, "0.25", 8, "@x"));
    let bundle = compile(&first, None).unwrap_or_else(|e| panic!("{e}"));
    let mut ex = executor(&bundle).unwrap_or_else(|e| panic!("{e}"));
    let ee = ex.finalize("main").unwrap_or_else(|e| panic!("{e}"));
    let mut rng = Rng(41);
    let states = [
        (5u32, "0.25", 8u32, "@x", &[][..]),
        (9, "0.75", 8, "@x", &["s", "a"][..]),
        (0, "0.75", 3, "@x", &["s", "a"][..]),
        (300, "1.5", 8, "@y", &["s", "a"][..]),
        (2, "1.5", 5, "@y", &["s", "a"][..]),
    ];
    let mut rerecorded = Vec::new();
    for (step, (count, add, range, target, nodes)) in states.into_iter().enumerate() {
        let m = module(&text(count, add, range, target));
        let before = ex.recorded(ee).unwrap();
        if !nodes.is_empty() {
            ex.update_nodes(ee, &m, "main", nodes).unwrap_or_else(|e| panic!("state {step}: {e}"));
        }
        rerecorded.push(ex.recorded(ee).unwrap() - before);
        let mut it = Interpreter::new(&m).unwrap();
        let ie = it.finalize("main").unwrap();
        for flag in [0u32, 1] {
            let inputs =
                [("x", x0(&mut rng)), ("y", x0(&mut rng)), ("flags", words([7, flag, 0, 0])), ("rounds", vec![0; 4])];
            for (name, bytes) in &inputs {
                ex.bind(name, bytes).unwrap();
                it.bind(name, bytes).unwrap();
            }
            ex.run(ee).unwrap_or_else(|e| panic!("state {step}: {e}"));
            ex.wait(ee).unwrap_or_else(|e| panic!("state {step}: {e}"));
            it.run(ie).unwrap();
            for name in ["x", "y", "flags", "rounds"] {
                let (got, want) = (ex.read(name).unwrap(), it.read(name).unwrap());
                assert!(got == want, "state {step}, flag {flag}: @{name} differs:\n vulkan {got:?}\n interp {want:?}");
            }
            assert_eq!(it.read("rounds").unwrap(), count.to_le_bytes(), "state {step}");
            assert_eq!(ex.loop_rounds(ee).unwrap(), vec![("w".to_string(), u64::from(count))]);
        }
    }
    // New values and ranges of as many groups are written into argument blocks; the new
    // buffer changes what `%a` touches, so its segment is recorded again.
    assert!(rerecorded[1] == 0 && rerecorded[2] == 0 && rerecorded[3] >= 1, "re-recorded {rerecorded:?}");
    let msgs = ex.context().take_messages();
    assert!(msgs.is_empty(), "validation: {msgs:?}");
}

/// What an executable with conditional nodes still refuses: whole-graph update (it takes
/// empty, barrier, kernel and host-task nodes only, SYCL's row 27), and a node that is not
/// part of the executable graph, such as one inside a body; a refused update changes nothing.
#[test]
fn updates_that_conditional_executables_refuse_name_the_node_and_change_nothing() {
    let m = module("graph @main properties(updatable) {\n  %w = while @flags do @loop_body\n  %a = kernel @add range(8) args(@x, 1.0) after(%w)\n}");
    let bundle = compile(&m, Some(&pipeline())).unwrap_or_else(|e| panic!("{e}"));
    let mut ex = executor(&bundle).unwrap();
    let ee = ex.finalize("main").unwrap();
    let err = ex.update_graph(ee, &m, "main").unwrap_err().to_string();
    assert!(err.contains("%w") && err.contains("conditional node"), "{err}");
    let err = ex.update_nodes(ee, &m, "main", &["k"]).unwrap_err().to_string();
    assert!(err.contains("%k"), "{err}");
    let mut it = Interpreter::new(&m).unwrap();
    let ie = it.finalize("main").unwrap();
    let mut rng = Rng(42);
    let inputs = [("x", x0(&mut rng)), ("flags", words([3, 0, 0, 0])), ("rounds", vec![0; 4])];
    for (name, bytes) in &inputs {
        ex.bind(name, bytes).unwrap();
        it.bind(name, bytes).unwrap();
    }
    ex.run(ee).unwrap();
    ex.wait(ee).unwrap();
    it.run(ie).unwrap();
    for name in ["x", "flags", "rounds"] {
        assert!(ex.read(name).unwrap() == it.read(name).unwrap(), "@{name} differs");
    }
    assert!(ex.context().take_messages().is_empty());
}

#[test]
fn a_loop_that_never_ends_fails_at_the_round_limit_and_the_executor_stays_usable() {
    // `@plus_one` never writes `@flags`: the verifier refuses such a loop, so the body here
    // writes the word, but never to 0.
    let m = module(
        "graph @stuck {
  %a = kernel @add range(8) args(@x, 1.0)
  %t = kernel @toggle single_task args(@flags + 4)
}

graph @main {
  %w = while @flags + 4 do @stuck
}

graph @other {
  %a = kernel @add range(8) args(@x, 1.0)
}",
    );
    // Toggle from 2 flips between 3 and 2: never 0.
    let bundle = compile(&m, Some(&pipeline())).unwrap_or_else(|e| panic!("{e}"));
    let mut ex = executor(&bundle).unwrap();
    ex.set_loop_round_limit(100);
    ex.bind("flags", &words([0, 2, 0, 0])).unwrap();
    ex.bind("x", &[0; 32]).unwrap();
    let id = ex.finalize("main").unwrap();
    ex.run(id).unwrap();
    let e = ex.wait(id).expect_err("a loop that never ends");
    assert!(e.to_string().contains("%w") && e.to_string().contains("round limit is 100"), "{e}");
    let other = ex.finalize("other").unwrap();
    ex.run(other).unwrap();
    ex.wait(other).unwrap();
    assert!(ex.context().take_messages().is_empty());
}

/// Kernels of the random modules: element-wise updates of one buffer, a mix of two, a
/// countdown of a loop's word, and a word computed from data (`@bucket`: the first element's
/// magnitude times 3, truncated: 0, 1, 2, ... and past the last case of a `switch`).
const RANDOM_KERNELS: &str = "kernel @scale(%x: buf<f32, read_write>) {
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
  %r = sub %v, %k
  store %x[%i], %r
}

kernel @mix(%x: buf<f32, read_write>, %y: buf<f32, read>) {
  %i = global_id 0
  %v = load %x[%i]
  %w = load %y[%i]
  %k = const 0.5 : f32
  %p = mul %w, %k
  %r = add %v, %p
  store %x[%i], %r
}

kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}

kernel @bucket(%x: buf<f32, read>, %c: buf<u32, write>) {
  %z = const 0 : u32
  %v = load %x[%z]
  %a = abs %v
  %k = const 3.0 : f32
  %s = mul %a, %k
  %u = cast %s to u32
  store %c[%z], %u
}

usm @m0 : f32[64]
usm @m1 : f32[64]
usm @m2 : f32[64]
usm @flags : u32[32]
";

/// A random module for Vulkan: leaf bodies of kernels on `@m0..@m2`; bodies that may hold a
/// nested `if` or `switch` on a word a `@bucket` kernel computes from data just before; loop
/// bodies (a body as a sub-graph, then a countdown of the loop's word); and `@main` mixing
/// kernels, copies and fills with `if`, `switch` and `while` nodes whose words a `memfill`
/// or a `@bucket` sets before. Every node comes after each earlier one it shares memory with
/// (objects as the unit), so graphs are race-free. Returns the text and the count of each
/// kind `[if, switch, while, nested]`.
fn random_module(seed: u64) -> (String, [usize; 4]) {
    use std::fmt::Write as _;
    let mut rng = Rng(seed);
    let mems = ["@m0", "@m1", "@m2"];
    let mut out = RANDOM_KERNELS.to_string();
    let mut kinds = [0usize; 4];
    let kernel = |rng: &mut Rng| -> (String, Vec<&'static str>) {
        let i = rng.below(3) as usize;
        let (m, other) = (mems[i], mems[(i + 1) % 3]);
        match rng.below(3) {
            0 => (format!("kernel @scale range(64) args({m})"), vec![m]),
            1 => (format!("kernel @shift range(64) args({m})"), vec![m]),
            _ => (format!("kernel @mix range(64) args({m}, {other})"), vec![m, other]),
        }
    };
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
    // Leaf bodies: kernels only.
    let leaves = 2 + rng.below(2) as usize;
    let mut leaf_mem: Vec<Vec<&'static str>> = Vec::new();
    for b in 0..leaves {
        let nodes: Vec<_> = (0..1 + rng.below(3)).map(|_| kernel(&mut rng)).collect();
        leaf_mem.push(nodes.iter().flat_map(|(_, m)| m.iter().copied()).collect());
        graph(&mut out, &format!("leaf{b}"), &nodes);
    }
    // Words: 0..15 for `@main`'s nodes, 16.. for nested ones.
    let mut nested_word = 16;
    let bodies = 2 + rng.below(2) as usize;
    let mut body_mem: Vec<Vec<&'static str>> = Vec::new();
    for b in 0..bodies {
        let mut nodes: Vec<(String, Vec<&'static str>)> = (0..1 + rng.below(2)).map(|_| kernel(&mut rng)).collect();
        if rng.below(2) == 0 && nested_word < 32 {
            let word = format!("@flags + {}", 4 * nested_word);
            nested_word += 1;
            let src = mems[rng.below(3) as usize];
            nodes.push((format!("kernel @bucket single_task args({src}, {word})"), vec![src, "@flags"]));
            let (a, e) = (rng.below(leaves as u64) as usize, rng.below(leaves as u64) as usize);
            let mut mem = leaf_mem[a].clone();
            mem.extend(leaf_mem[e].iter().copied());
            mem.push("@flags");
            if rng.below(2) == 0 {
                nodes.push((format!("if {word} then @leaf{a} else @leaf{e}"), mem));
            } else {
                nodes.push((format!("switch {word} cases(@leaf{a}, @leaf{e})"), mem));
            }
            kinds[3] += 1;
            nodes.push(kernel(&mut rng));
        }
        body_mem.push(nodes.iter().flat_map(|(_, m)| m.iter().copied()).collect());
        graph(&mut out, &format!("b{b}"), &nodes);
    }
    let mut main: Vec<(String, Vec<&'static str>)> = Vec::new();
    for slot in 0..2 + rng.below(4) {
        let word = format!("@flags + {}", 4 * slot);
        let pick = |rng: &mut Rng| rng.below(bodies as u64) as usize;
        // The word: a fill with a constant, or a kernel from data.
        let set_word = |rng: &mut Rng, main: &mut Vec<(String, Vec<&'static str>)>, most: u64| {
            if rng.below(3) == 0 {
                let src = mems[rng.below(3) as usize];
                main.push((format!("kernel @bucket single_task args({src}, {word})"), vec![src, "@flags"]));
            } else {
                main.push((format!("memfill {word}, {} : u32, 1", rng.below(most)), vec!["@flags"]));
            }
        };
        match rng.below(5) {
            0 => {
                let i = rng.below(3) as usize;
                let (m, src) = (mems[i], mems[(i + 2) % 3]);
                main.push(match rng.below(3) {
                    0 => (format!("memcpy {m}, {src}, 256"), vec![m, src]),
                    1 => (format!("memfill {m}, 0.75 : f32, 64"), vec![m]),
                    _ => kernel(&mut rng),
                });
            }
            1 => {
                let (a, e) = (pick(&mut rng), pick(&mut rng));
                set_word(&mut rng, &mut main, 2);
                let mut mem = body_mem[a].clone();
                mem.extend(body_mem[e].iter().copied());
                mem.push("@flags");
                let els = if rng.below(2) == 0 { format!(" else @b{e}") } else { String::new() };
                main.push((format!("if {word} then @b{a}{els}"), mem));
                kinds[0] += 1;
            }
            2 => {
                let cases: Vec<usize> = (0..1 + rng.below(3)).map(|_| pick(&mut rng)).collect();
                set_word(&mut rng, &mut main, 4);
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
                // Counts past the first chunk of rounds (16) now and then.
                let n = if rng.below(4) == 0 { 17 + rng.below(30) } else { rng.below(5) };
                main.push((format!("memfill {word}, {n} : u32, 1"), vec!["@flags"]));
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

/// Random modules with conditional nodes (nested ones included) compiled through the default
/// pipeline and run twice on Vulkan, every memory object equal to the interpreter's bit for
/// bit after each run; every kind is generated (counted).
#[test]
fn random_conditional_graphs_match_the_interpreter_on_vulkan() {
    let mut kinds = [0usize; 4];
    for seed in 0..40 {
        let (text, k) = random_module(1000 + seed);
        let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        let bundle = compile(&m, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut ex = executor(&bundle).unwrap_or_else(|e| panic!("{e}"));
        let mut it = Interpreter::new(&m).unwrap();
        let mut rng = Rng(seed);
        for (_, mem) in m.memories.iter() {
            let bytes = support::random_bytes(mem.elem, mem.count, &mut rng);
            ex.bind(&mem.name, &bytes).unwrap();
            it.bind(&mem.name, &bytes).unwrap();
        }
        let (ee, ie) = (ex.finalize("main").unwrap_or_else(|e| panic!("{e}\n{text}")), it.finalize("main").unwrap());
        for run in 0..2 {
            ex.run(ee).unwrap();
            ex.wait(ee).unwrap_or_else(|e| panic!("seed {seed} run {run}: {e}\n{text}"));
            it.run(ie).unwrap_or_else(|e| panic!("seed {seed} run {run}: {e}\n{text}"));
            for (_, mem) in m.memories.iter() {
                let (got, want) = (ex.read(&mem.name).unwrap(), it.read(&mem.name).unwrap());
                assert!(got == want, "seed {seed} run {run}: @{} differs\n{text}", mem.name);
            }
        }
        let msgs = ex.context().take_messages();
        assert!(msgs.is_empty(), "seed {seed}: validation: {msgs:?}\n{text}");
        for (total, n) in kinds.iter_mut().zip(k) {
            *total += n;
        }
    }
    eprintln!("conditional nodes run: if {}, switch {}, while {}, nested {}", kinds[0], kinds[1], kinds[2], kinds[3]);
    assert!(kinds.iter().all(|&n| n >= 8), "if/switch/while/nested: {kinds:?}");
}
