//! `place-devices` (docs/multi-device.md) on random graphs: modules of the Vulkan suite's
//! generator (element-wise and non-element-wise kernels, copies, fills, temporaries, empty
//! nodes; sub-graphs inlined first), placed on 2 and 3 devices with transfers nearly free so
//! that nodes spread, must verify and must leave every memory object with the same bytes
//! on the interpreter, graph after graph, from full-precision random inputs. The placement
//! must really happen: nodes on other devices, transfers and mirrors are counted.

mod support;

use cmdgraph_interp::Interpreter;
use cmdgraph_ir::{MemoryKind, Module};
use cmdgraph_passes::PassContext;
use support::{gen, random_bytes, Rng};

/// Inlines and places `module` on `devices` devices with `gbps` between them.
fn place(module: &mut Module, devices: u32, gbps: u64) -> PassContext {
    support::run_passes(module, &["inline-calls", "inline-subgraphs", "place-devices"], devices, gbps * 1000)
}

/// Every graph of `m` run once, in module order, on one interpreter from `inputs`; the
/// bytes of `names` after each.
fn run_all(m: &Module, inputs: &[(String, Vec<u8>)], names: &[String]) -> Vec<Vec<Vec<u8>>> {
    let mut it = Interpreter::new(m).unwrap();
    support::register_interp_callbacks(&mut it, m);
    for (name, bytes) in inputs {
        it.bind(name, bytes).unwrap();
    }
    let mut out = Vec::new();
    for (_, g) in m.graphs.iter() {
        let e = it.finalize(&g.name).unwrap_or_else(|e| panic!("@{}: {e}", g.name));
        it.run(e).unwrap_or_else(|e| panic!("@{}: {e}", g.name));
        out.push(names.iter().map(|n| it.read(n).unwrap().to_vec()).collect());
    }
    out
}

#[test]
fn placed_random_graphs_compute_what_they_computed_on_one_device() {
    let (mut placed, mut elsewhere, mut transfers, mut mirrors, mut graphs) = (0u64, 0u64, 0u64, 0u64, 0usize);
    // Graphs spread over devices that run host tasks, dynamic command groups and conditional
    // nodes (pinned beside their memory).
    let (mut with_host_tasks, mut with_groups, mut with_conditionals) = (0usize, 0usize, 0usize);
    for seed in 0..64u64 {
        let text = gen::module(0x34_0000 + seed, 4);
        let source = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("seed {seed}: {d:?}"));
        let devices = 2 + (seed % 2) as u32;
        let mut module = source.clone();
        let ctx = place(&mut module, devices, 1_000_000);
        cmdgraph_ir::verify::verify(&module).unwrap_or_else(|d| {
            panic!("seed {seed}: the placed module does not verify: {d:?}\n{}", cmdgraph_ir::text::print(&module))
        });
        let stat = |name: &str| ctx.stats.get(name).copied().unwrap_or(0);
        placed += stat("graphs-placed");
        elsewhere += stat("nodes-elsewhere");
        transfers += stat("transfers");
        mirrors += stat("mirrors");
        graphs += source.graphs.len();
        let spread_with = |kind: fn(&cmdgraph_ir::NodeKind) -> bool| {
            module
                .graphs
                .iter()
                .filter(|(_, g)| g.is_multi_device() && g.nodes.iter().any(|(_, n)| kind(&n.kind)))
                .count()
        };
        with_host_tasks += spread_with(|k| matches!(k, cmdgraph_ir::NodeKind::HostTask(_)));
        with_groups += spread_with(|k| matches!(k, cmdgraph_ir::NodeKind::Dynamic { .. }));
        with_conditionals += spread_with(|k| matches!(k, cmdgraph_ir::NodeKind::Conditional { .. }));
        // The source module's memory (mirrors are the pass's own), from random bytes.
        let mut rng = Rng(seed);
        let names: Vec<String> = source
            .memories
            .iter()
            .filter(|(_, m)| !matches!(m.kind, MemoryKind::DeviceGlobal(_)))
            .map(|(_, m)| m.name.clone())
            .collect();
        let inputs: Vec<(String, Vec<u8>)> = source
            .memories
            .iter()
            .filter(|(_, m)| names.contains(&m.name))
            .map(|(_, m)| (m.name.clone(), random_bytes(m.elem, m.count, &mut rng)))
            .collect();
        let (want, got) = (run_all(&source, &inputs, &names), run_all(&module, &inputs, &names));
        for (g, (w, o)) in want.iter().zip(&got).enumerate() {
            for (i, (a, b)) in w.iter().zip(o).enumerate() {
                assert!(
                    a == b,
                    "seed {seed}, after graph {g}: @{} differs on {devices} devices\n{}",
                    names[i],
                    cmdgraph_ir::text::print(&module)
                );
            }
        }
    }
    eprintln!(
        "place-devices: {placed} of {graphs} graphs placed (across devices: {with_host_tasks} with host tasks, {with_groups} with dynamic command groups, {with_conditionals} with conditional nodes), {elsewhere} nodes on another device, {transfers} transfers, {mirrors} mirrors"
    );
    assert!(with_host_tasks >= 10, "only {with_host_tasks} graphs with host tasks spread over devices");
    // The placements really spread work and moved data.
    assert!(placed * 4 >= graphs as u64, "only {placed} of {graphs} graphs were placed");
    assert!(
        elsewhere >= 60 && transfers >= 60 && mirrors >= 30,
        "{elsewhere} nodes elsewhere, {transfers} transfers, {mirrors} mirrors"
    );
}

/// With the default (host-staged, 10 GB/s) bandwidth, a graph of small kernels stays on
/// one device: a transfer would cost more than it saves. With fast links, independent heavy
/// chains split across the devices and the join reads what the other device wrote.
#[test]
fn cheap_graphs_stay_on_one_device_and_heavy_independent_chains_split() {
    let text = |n: u64| {
        format!(
            "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {{
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}}

usm @w : f32[{n}]
usm @a : f32[{n}]
usm @b : f32[{n}]
usm @c : f32[{n}]

graph @g {{
  %a0 = kernel @axpy range({n}) args(@w, @a, 1.5)
  %a1 = kernel @axpy range({n}) args(@w, @a, 0.5) after(%a0)
  %b0 = kernel @axpy range({n}) args(@w, @b, 1.5)
  %b1 = kernel @axpy range({n}) args(@w, @b, 0.5) after(%b0)
  %c0 = kernel @axpy range({n}) args(@a, @c, 1.0) after(%a1, %b1)
  %c1 = kernel @axpy range({n}) args(@b, @c, 1.0) after(%c0)
}}
"
        )
    };
    let mut small = cmdgraph_ir::text::parse(&text(4096)).unwrap();
    let ctx = place(&mut small, 2, 10);
    assert_eq!(ctx.stats.get("nodes-elsewhere").copied().unwrap_or(0), 0);
    assert!(!small.graphs.iter().any(|(_, g)| g.is_multi_device()));
    let mut big = cmdgraph_ir::text::parse(&text(1 << 24)).unwrap();
    let ctx = place(&mut big, 2, 2000);
    let printed = cmdgraph_ir::text::print(&big);
    assert_eq!(ctx.stats.get("nodes-elsewhere").copied(), Some(2), "{printed}");
    // `@b` is used by this graph only: it moves to device 1 with its chain, and comes to
    // device 0 for the join.
    assert!(printed.contains("usm @b : f32[16777216] home(1)"), "{printed}");
    assert!(printed.contains("%b0 = kernel @axpy range(16777216) args(@w, @b, 1.5) device(1)"), "{printed}");
    assert!(printed.contains("%b.to0 = memcpy @b.on0, @b, 67108864"), "{printed}");
    assert!(printed.contains("usm @w : f32[16777216] replicated"), "{printed}");
    // The explanation names each node's choice and each transfer.
    let remarks = ctx.remarks.concat();
    assert!(remarks.contains("%b0 -> device 1: finishes first there"), "{remarks}");
    assert!(remarks.contains("transfer %b.to0: @b, device 1 -> 0, 67108864 bytes"), "{remarks}");
}

/// `--transfer-bandwidth measure` times a transfer between two devices of this machine (two
/// logical devices of llvmpipe in CI) and prices transfers at it; a value that is neither a
/// number nor `measure` is a usage error.
#[test]
fn the_transfer_bandwidth_can_be_measured_on_this_machines_devices() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("chains.cgir");
    let n = 1 << 20;
    let text = format!(
        "kernel @work(%x: buf<f32, read_write>) {{\n  %i = global_id 0\n  %v = load %x[%i]\n  %two = const 2.0 : f32\n  %r = mul %v, %two\n  store %x[%i], %r\n}}\n\nusm @a : f32[{n}]\nusm @b : f32[{n}]\n\ngraph @g {{\n  %k0 = kernel @work range({n}) args(@a)\n  %k1 = kernel @work range({n}) args(@b)\n}}\n"
    );
    std::fs::write(&src, text).unwrap();
    let cmdgraph =
        |args: &[&str]| std::process::Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(args).output().unwrap();
    let src = src.to_string_lossy().into_owned();
    let o =
        cmdgraph(&["opt", &src, "--devices", "2", "--transfer-bandwidth", "measure", "--explain", "-o", "/dev/null"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    let line =
        err.lines().find(|l| l.starts_with("note: measured transfer bandwidth ")).unwrap_or_else(|| panic!("{err}"));
    let gbps: f64 = line["note: measured transfer bandwidth ".len()..].split(' ').next().unwrap().parse().unwrap();
    assert!(gbps > 0.01 && gbps < 10_000.0, "{line}");
    assert!(line.contains("from device 0 to 1") && line.contains("through "), "{line}");
    assert!(err.contains("place-devices @g:"), "the pass did not run: {err}");
    // Without --devices nothing is placed, so nothing is measured.
    let o = cmdgraph(&["opt", &src, "--transfer-bandwidth", "measure", "-o", "/dev/null"]);
    assert!(o.status.success() && !String::from_utf8_lossy(&o.stderr).contains("measured"));
    let o = cmdgraph(&["compile", &src, "--devices", "2", "--transfer-bandwidth", "fast", "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`fast` is not a bandwidth"), "{o:?}");
}

/// Pinned nodes: a `while` loop, a host task and a dynamic command group stay beside the
/// memory they touch (device 0: memory a host task touches never floats), while the heavy
/// independent chain moves to device 1 and transfers bring back what they need; the placed
/// module computes what the unplaced one does, on the interpreter. A host task over memory
/// of two devices leaves its graph as it was, saying why.
#[test]
fn loops_host_tasks_and_groups_stay_beside_their_memory() {
    let n = 1 << 20;
    let text = format!(
        "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {{
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}}

kernel @count_down(%c: buf<u32, read_write>) {{
  %zero = const 0 : u32
  %one = const 1 : u32
  %v = load %c[%zero]
  %d = sub %v, %one
  store %c[%zero], %d
}}

usm @w : f32[{n}]
usm @a : f32[{n}]
usm @b : f32[{n}]
usm @flags : u32[1]
usm @x : f32[16] home(1)

graph @body {{
  %k = kernel @count_down single_task args(@flags)
}}

graph @g {{
  dcg %pick active(1) {{
    kernel @axpy range({n}) args(@w, @b, 2.0)
    kernel @axpy range({n}) args(@w, @b, -3.0)
  }}
  %a0 = kernel @axpy range({n}) args(@w, @a, 1.5)
  %a1 = kernel @axpy range({n}) args(@w, @a, 0.5) after(%a0)
  %a2 = kernel @axpy range({n}) args(@w, @a, 0.25) after(%a1)
  %b0 = kernel @axpy range({n}) args(@w, @b, 1.25)
  %x0 = memfill @x, 1.0 : f32, 16 device(1)
  %h = host_task \"negate_b\" access(@b read_write) after(%b0, %x0)
  %d = dynamic %pick after(%h)
  %f = memfill @flags, 3 : u32, 1
  %loop = while @flags do @body after(%f)
  %j = kernel @axpy range({n}) args(@b, @a, 1.0) after(%a2, %d)
}}
"
    );
    let source = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}"));
    let mut module = source.clone();
    let ctx = place(&mut module, 2, 2000);
    let printed = cmdgraph_ir::text::print(&module);
    let remarks = ctx.remarks.concat();
    assert!(module.graphs.iter().any(|(_, g)| g.is_multi_device()), "{printed}\n{remarks}");
    // Beside `@b` and `@flags` (device 0): the host task, the group and the loop.
    for (node, line) in [
        ("%h", "%h = host_task \"negate_b\" access(@b read_write) after(%b0, %x0)\n"),
        ("%d", "%d = dynamic %pick after(%h)\n"),
        ("%loop", "%loop = while @flags do @body after(%f)\n"),
    ] {
        assert!(printed.contains(line), "{node} moved:\n{printed}");
    }
    assert!(remarks.contains("%d -> device 0: the only choice"), "{remarks}");
    assert!(remarks.contains("%h -> device 0: the only choice"), "{remarks}");
    assert!(ctx.stats.get("nodes-elsewhere").copied().unwrap_or(0) >= 1, "{remarks}");
    let negate = |mem: &mut dyn cmdgraph_ir::host::HostMemory| {
        let v: Vec<f32> = mem.read_as("b")?;
        mem.write_as("b", 0, &v.iter().map(|x| -x).collect::<Vec<f32>>())
    };
    let run = |m: &Module| {
        let mut it = Interpreter::new(m).unwrap();
        it.register_callback("negate_b", negate);
        let mut rng = Rng(7);
        for name in ["w", "a", "b"] {
            it.bind(name, &random_bytes(cmdgraph_ir::Type::scalar(cmdgraph_ir::ScalarType::F32), n, &mut rng)).unwrap();
        }
        let e = it.finalize("g").unwrap();
        it.run(e).unwrap();
        ["w", "a", "b", "flags", "x"].map(|x| it.read(x).unwrap().to_vec())
    };
    assert!(run(&source) == run(&module), "the placed graph computes something else\n{printed}");
    // Memory of two devices for one host task: left as it was.
    let two = text.replace("access(@b read_write)", "access(@b read_write, @x read)");
    let mut left = cmdgraph_ir::text::parse(&two).unwrap();
    let ctx = place(&mut left, 2, 2000);
    let remarks = ctx.remarks.concat();
    assert!(remarks.contains("not placed: %h touches memory of devices 0 and 1"), "{remarks}");
    assert_eq!(ctx.stats.get("graphs-placed").copied().unwrap_or(0), 0, "{remarks}");
}

/// A node that surely overwrites all of a memory without reading it (a write-only argument
/// stored at `global_id 0` of a `range` covering it) needs no transfer into its device
/// first: only the transfer home at the end remains, and the results are the same.
#[test]
fn memory_a_node_overwrites_whole_is_not_brought_to_its_device_first() {
    let n = 1u64 << 20;
    let text = |produce_reads: bool| {
        let access = if produce_reads { "read_write" } else { "write" };
        format!(
            "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {{
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}}

kernel @produce(%x: buf<f32, read>, %y: buf<f32, {access}>) {{
  %i = global_id 0
  %v = load %x[%i]
  %two = const 2.0 : f32
  %r = mul %v, %two
  store %y[%i], %r
}}

usm @w : f32[{n}]
usm @a : f32[{n}]
usm @o : f32[{n}] home(0)

graph @g {{
  %a0 = kernel @axpy range({n}) args(@w, @a, 1.5)
  %a1 = kernel @axpy range({n}) args(@w, @a, 0.5) after(%a0)
  %a2 = kernel @axpy range({n}) args(@w, @a, 0.25) after(%a1)
  %o0 = kernel @produce range({n}) args(@w, @o)
  %o1 = kernel @axpy range({n}) args(@w, @o, 0.5) after(%o0)
  %o2 = kernel @axpy range({n}) args(@w, @o, 0.25) after(%o1)
}}
"
        )
    };
    let source = cmdgraph_ir::text::parse(&text(false)).unwrap_or_else(|d| panic!("{d:?}"));
    let mut module = source.clone();
    let ctx = place(&mut module, 2, 2000);
    let printed = cmdgraph_ir::text::print(&module);
    assert!(printed.contains("%o0 = kernel @produce range(1048576) args(@w, @o.on1) device(1)"), "{printed}");
    assert!(!printed.contains("%o.to1 ="), "a transfer into memory the node overwrites:\n{printed}");
    assert!(printed.contains("%o.to0 = memcpy @o, @o.on1, 4194304"), "{printed}");
    // With `@o` read too, moving its chain would need the transfer in: wherever the chain
    // goes, a node on device 1 that reads `@o` gets it first.
    let mut reading = cmdgraph_ir::text::parse(&text(true)).unwrap();
    place(&mut reading, 2, 2000);
    let printed_reading = cmdgraph_ir::text::print(&reading);
    let moved = printed_reading.contains("args(@w, @o.on1) device(1)");
    assert!(!moved || printed_reading.contains("%o.to1 = memcpy @o.on1, @o, 4194304"), "{printed_reading}");
    let run = |m: &Module| {
        let mut it = Interpreter::new(m).unwrap();
        let mut rng = Rng(11);
        for name in ["w", "a", "o"] {
            it.bind(name, &random_bytes(cmdgraph_ir::Type::scalar(cmdgraph_ir::ScalarType::F32), n, &mut rng)).unwrap();
        }
        let e = it.finalize("g").unwrap();
        it.run(e).unwrap();
        ["w", "a", "o"].map(|x| it.read(x).unwrap().to_vec())
    };
    assert!(run(&source) == run(&module), "the placed graph computes something else\n{printed}");
    assert_eq!(ctx.stats.get("transfers").copied(), Some(1 + printed.matches("%a.to").count() as u64), "{printed}");
}
