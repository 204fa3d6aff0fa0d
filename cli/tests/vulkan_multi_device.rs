//! Multi-device graphs on Vulkan (docs/multi-device.md, "Running on several devices"): two
//! logical devices on the default physical device (llvmpipe in CI), each its own
//! `VkDevice` with its own memory, validation (synchronization included) on both. A graph
//! placed by hand and random graphs placed by `place-devices` are compiled with
//! `split-devices`, run by a `MultiExecutor`, and every memory object is compared bit for
//! bit with the interpreter running the source module. Transfers both ways, a replicated
//! input, an allocation on the second device, a diamond across devices; a node on a device
//! that is not there is refused before anything runs.

mod support;

use cmdgraph_codegen::bundle::{compile_module_configured, Llvm, PipelineOptions};
use cmdgraph_codegen::Options;
use cmdgraph_executor::{ContextOptions, DeviceChoice, MultiExecutor};
use cmdgraph_interp::{FmaRounding, Interpreter, RunOptions};
use cmdgraph_ir::{MemoryKind, Module};
use cmdgraph_passes::{default_pipeline, with_place_devices};
use support::{gen, random_bytes, Rng};

/// A diamond across two devices: `@a` is scaled on device 0 and sent to device 1, where an
/// allocation holds an intermediate; device 0 works on `@c` meanwhile; the result comes back
/// and is combined on device 0. `@w` is replicated.
const DIAMOND: &str = "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %s
  store %y[%i], %r
}

usm @w : f32[300] replicated
usm @a : f32[300]
usm @c : f32[300]
usm @b : f32[300] home(1)
usm @out : f32[300]

graph @g {
  %k0 = kernel @axpy range(300) args(@w, @a, 1.25)
  %t = memcpy @b, @a, 1200 after(%k0)
  %m = async_malloc f32[300] device(1)
  %k1 = kernel @scale range(300) args(@b, %m, 3.0) device(1) after(%t, %m)
  %k2 = kernel @axpy range(300) args(%m, @b, -0.5) device(1) after(%k1)
  %f = async_free %m device(1) after(%k2)
  %z = memset @b, 0, 16 device(1) after(%k2)
  %k3 = kernel @axpy range(300) args(@w, @c, 0.75) after(%k0)
  %back = memcpy @out, @b, 1200 after(%z)
  %j = empty after(%back, %k3)
  %k4 = kernel @axpy range(300) args(@c, @out, 2.0) after(%j)
}
";

fn devices(n: usize) -> Vec<ContextOptions> {
    (0..n).map(|_| ContextOptions { validation: true, device: DeviceChoice::Default, ..Default::default() }).collect()
}

/// Compiles `m` with the default pipeline and, with `place` devices, `place-devices` at
/// `gbps` and `split-devices`.
fn compile(m: &Module, place: Option<u32>, gbps: u64) -> Vec<u8> {
    let passes = with_place_devices(default_pipeline());
    let pipeline = PipelineOptions {
        verify_each: true,
        devices: place,
        transfer_bytes_per_us: Some(gbps * 1000),
        ..PipelineOptions::default()
    };
    let (bundle, _) = compile_module_configured(m, &passes, &pipeline, &Options::default(), &Llvm, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    bundle.to_bytes().unwrap()
}

fn parse(text: &str) -> Module {
    let m = cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("{d:?}"));
    cmdgraph_ir::verify::verify(&m).unwrap_or_else(|d| panic!("{d:?}"));
    m
}

/// The user memory of `m` (no device globals), with random bytes from `seed`.
fn inputs(m: &Module, seed: u64) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(seed);
    m.memories
        .iter()
        .filter(|(_, o)| !matches!(o.kind, MemoryKind::DeviceGlobal(_)))
        .map(|(_, o)| (o.name.clone(), random_bytes(o.elem, o.count, &mut rng)))
        .collect()
}

/// Runs graph `graph` of `source` with inputs from `seed` three ways and compares every
/// memory object: on `multi` (the placed bundle), bit for bit against one device of the
/// same kind running the unplaced bundle `single`, and against the interpreter with `fma`
/// rounded once or twice (llvmpipe rounds it twice; docs/ir.md, "Float precision").
struct Check {
    multi: MultiExecutor,
    single: cmdgraph_executor::Executor,
    interps: [Interpreter; 2],
    names: Vec<String>,
    /// Finalized graphs: the multi-device, one-device and the two interpreters' executables.
    execs: std::collections::BTreeMap<
        String,
        (cmdgraph_executor::MultiExecId, cmdgraph_executor::ExecId, [cmdgraph_interp::ExecId; 2]),
    >,
}

impl Check {
    fn new(source: &Module, placed: &[u8], unplaced: &[u8], devices_n: usize) -> Check {
        let mut multi = MultiExecutor::new(placed, &devices(devices_n)).unwrap_or_else(|e| panic!("{e}"));
        let mut single = support::executor(unplaced).unwrap();
        for (name, f) in support::host_callbacks(source) {
            multi.register_callback(&name, f);
        }
        for (name, f) in support::host_callbacks(source) {
            single.register_callback(&name, f);
        }
        let mut interps = [Interpreter::new(source).unwrap(), Interpreter::new(source).unwrap()];
        for it in &mut interps {
            support::register_interp_callbacks(it, source);
        }
        let names = source
            .memories
            .iter()
            .filter(|(_, o)| !matches!(o.kind, MemoryKind::DeviceGlobal(_)))
            .map(|(_, o)| o.name.clone())
            .collect();
        Check { multi, single, interps, names, execs: Default::default() }
    }

    fn bind(&mut self, input: &[(String, Vec<u8>)]) {
        for (name, bytes) in input {
            self.multi.bind(name, bytes).unwrap();
            self.single.bind(name, bytes).unwrap();
            for it in &mut self.interps {
                it.bind(name, bytes).unwrap();
            }
        }
    }

    fn run(&mut self, graph: &str, what: &str) {
        if !self.execs.contains_key(graph) {
            let e = self.multi.finalize(graph).unwrap_or_else(|e| panic!("{what}: {e}"));
            let se = self.single.finalize(graph).unwrap();
            let ie = [self.interps[0].finalize(graph).unwrap(), self.interps[1].finalize(graph).unwrap()];
            self.execs.insert(graph.to_string(), (e, se, ie));
        }
        let (e, se, ie) = self.execs[graph];
        self.multi.run(e).unwrap_or_else(|e| panic!("{what}: {e}"));
        self.multi.wait(e).unwrap_or_else(|e| panic!("{what}: {e}"));
        self.single.run(se).unwrap();
        self.single.wait(se).unwrap();
        for ((it, fma), ie) in self.interps.iter_mut().zip([FmaRounding::Once, FmaRounding::Twice]).zip(ie) {
            it.run_with(ie, &RunOptions { fma, ..RunOptions::default() }).unwrap();
        }
        for name in &self.names {
            let got = self.multi.read(name).unwrap();
            assert!(got == self.single.read(name).unwrap(), "{what}: @{name} differs from one device");
            assert!(
                self.interps.iter().any(|it| it.read(name).unwrap() == got.as_slice()),
                "{what}: @{name} differs from the interpreter"
            );
        }
    }

    fn quiet(&self) {
        // The layer's own timeouts (vk/context.rs, LAYER_SELF_REPORTS) are counted, not failed.
        eprintln!(
            "multi-device: {} validation-layer self-reports so far",
            cmdgraph_executor::vk::context::layer_self_reports()
        );
        for d in 0..self.multi.len() {
            let msgs = self.multi.device(d).unwrap().context().take_messages();
            assert!(msgs.is_empty(), "device {d}: {msgs:?}");
        }
        assert!(self.single.context().take_messages().is_empty());
    }
}

#[test]
fn a_diamond_across_two_devices_matches_one_device_and_the_interpreter() {
    let source = parse(DIAMOND);
    let bundle = compile(&source, None, 10);
    let optimized = cmdgraph_ir::bundle::Bundle::from_bytes(&bundle).unwrap().optimized;
    for part in ["graph @g.s0.d0 {", "graph @g.s1.d1 device(1) {", "graph @g.s2.d0 {"] {
        assert!(optimized.contains(part), "no `{part}` in:\n{optimized}");
    }
    // The same work on one device: placement written out.
    let mut one = DIAMOND.replace(" replicated", "").replace(" home(1)", "").replace(" device(1)", "");
    one = one.replace("usm @out", "usm @unused : f32[1]\nusm @out");
    let unplaced = compile(&parse(&one), None, 10);
    // Transfers through host memory imported into both devices where they have
    // VK_EXT_external_memory_host (llvmpipe does: every stage graph submitted at once,
    // ordered by semaphores across the devices), then through a copy per device.
    for imported in [true, false] {
        let mut check = Check::new(&source, &bundle, &unplaced, 2);
        check.multi.set_imported_transfers(imported).unwrap();
        let path = check.multi.transfer_path();
        eprintln!("multi-device: transfers through {path}");
        assert_eq!(path == "imported host memory", imported, "llvmpipe imports host memory");
        for seed in [1u64, 2, 3] {
            check.bind(&inputs(&source, seed));
            check.run("g", &format!("seed {seed}, transfers through {path}"));
            let (_, bytes) = check.multi.last_transfers();
            assert_eq!(bytes, 2400, "seed {seed}: the transfer there and back");
        }
        let err = check.multi.set_imported_transfers(!imported).expect_err("fixed by finalize").to_string();
        assert!(err.contains("fixed by the first finalize"), "{err}");
        check.quiet();
    }
    // A node on a device that is not there: refused, naming it, before anything runs.
    let mut lone = MultiExecutor::new(&bundle, &devices(1)).unwrap();
    let err = lone.finalize("g").expect_err("device 1 is missing").to_string();
    assert!(err.contains(": the node runs on device 1, and this executor has 1 device(s)"), "{err}");
    // A transfer run on device 0 whose other end lives on device 1, with one device.
    let text = "usm @a : f32[4]\nusm @b : f32[4] home(1)\n\ngraph @t {\n  %c = memcpy @b, @a, 16\n}\n";
    let far = compile(&parse(text), None, 10);
    let mut lone = MultiExecutor::new(&far, &devices(1)).unwrap();
    let err = lone.finalize("t").expect_err("device 1 is missing").to_string();
    assert!(err.contains("%c: the transfer reaches memory on device 1, and this executor has 1 device(s)"), "{err}");
}

#[test]
fn random_graphs_placed_on_two_devices_match_one_device_and_the_interpreter() {
    let (mut ran, mut stage_graphs, mut updated, mut host) = (0usize, 0usize, 0usize, 0usize);
    for seed in 0..28u64 {
        let text = gen::module(0x34_1000 + seed, 4);
        let source = parse(&text);
        let placed = compile(&source, Some(2), 1_000_000);
        let unplaced = compile(&source, None, 10);
        let optimized =
            cmdgraph_ir::text::parse(&cmdgraph_ir::bundle::Bundle::from_bytes(&placed).unwrap().optimized).unwrap();
        let mut check = Check::new(&source, &placed, &unplaced, 2);
        check.bind(&inputs(&source, seed));
        for (_, g) in source.graphs.iter() {
            // Graphs the pass left as they were (host tasks, dynamic command groups, ...) are
            // not run.
            if !optimized.graph_by_name(&g.name).is_some_and(|h| optimized.graphs[h].is_multi_device()) {
                continue;
            }
            check.run(&g.name, &format!("seed {seed} @{}", g.name));
            ran += 1;
            host += usize::from(g.nodes.iter().any(|(_, n)| matches!(n.kind, cmdgraph_ir::NodeKind::HostTask(_))));
            // Every f32 parameter scaled by -1.5 (exact), reaching whichever devices use it.
            let mut changed = false;
            for (_, p) in g.dyn_params.iter() {
                use cmdgraph_ir::{ArgValue, LitValue, Literal, ScalarType};
                if let ArgValue::Scalar(Literal { value: LitValue::Float(v), ty: Some(ScalarType::F32) }) = p.value {
                    check.update(&g.name, &p.name, |_| scalar(v * -1.5));
                    changed = true;
                }
            }
            if changed {
                check.run(&g.name, &format!("seed {seed} @{} updated", g.name));
                updated += 1;
            }
            let prefix = format!("{}.s", g.name);
            stage_graphs += optimized.graphs.iter().filter(|(_, x)| x.name.starts_with(&prefix)).count();
        }
        check.quiet();
    }
    eprintln!(
        "multi-device: {ran} random graphs on two devices ({host} with host tasks), {stage_graphs} stage graphs, {updated} updated"
    );
    assert!(host >= 2, "only {host} placed graphs with host tasks ran");
    assert!(ran >= 6 && stage_graphs >= 2 * ran, "{ran} graphs, {stage_graphs} stage graphs");
    assert!(updated >= 1, "no placed graph had a dynamic parameter to update");
}

/// An updatable graph across two devices: `%s` is used on both, `%src` and the group `%act`
/// by nodes of device 1 only.
const UPDATABLE: &str = "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %s
  store %y[%i], %r
}

kernel @leaky(%x: buf<f32, read>, %y: buf<f32, write>, %slope: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %zero = const 0.0 : f32
  %pos = gt %v, %zero
  %neg = mul %v, %slope
  %r = select %pos, %v, %neg
  store %y[%i], %r
}

usm @w : f32[256] replicated
usm @a : f32[256]
usm @b : f32[256] home(1)
usm @b2 : f32[256] home(1)
usm @c : f32[256] home(1)
usm @out : f32[256]

graph @u properties(updatable) {
  dyn %s = 1.5 : f32
  dyn %src = @b
  dyn %slope = 0.25 : f32
  dcg %act active(0) {
    kernel @scale range(256) args(@c, @b, %slope)
    kernel @leaky range(256) args(@c, @b, %slope)
  }
  %k0 = kernel @axpy range(256) args(@w, @a, %s)
  %t = memcpy @b, @a, 1024 after(%k0)
  %k1 = kernel @scale range(256) args(%src, @c, %s) device(1) after(%t)
  %d = dynamic %act device(1) after(%k1)
  %back = memcpy @out, @b, 1024 after(%d)
  %k2 = kernel @axpy range(256) args(@w, @out, 0.5) after(%back)
}
";

/// Memory `name` of `m` as a dynamic parameter's value.
fn pointer(m: &Module, name: &str) -> cmdgraph_ir::ArgValue {
    let base = cmdgraph_ir::MemRef::Memory(m.memory_by_name(name).unwrap());
    cmdgraph_ir::ArgValue::Pointer(cmdgraph_ir::graph::Pointer { base, offset: 0 })
}

fn scalar(v: f64) -> cmdgraph_ir::ArgValue {
    use cmdgraph_ir::{LitValue, Literal, ScalarType};
    cmdgraph_ir::ArgValue::Scalar(Literal { value: LitValue::Float(v), ty: Some(ScalarType::F32) })
}

impl Check {
    /// Sets parameter `param` of graph `graph` to `value(module)` everywhere.
    fn update(&mut self, graph: &str, param: &str, value: impl Fn(&Module) -> cmdgraph_ir::ArgValue) {
        let (e, se, ie) = self.execs[graph];
        let multi = value(self.multi.device(0).unwrap().module());
        self.multi.update_param(e, param, multi).unwrap_or_else(|e| panic!("{param}: {e}"));
        let single = value(self.single.module());
        self.single.update_param(se, param, single).unwrap();
        for (it, ie) in self.interps.iter_mut().zip(ie) {
            let v = value(it.module());
            it.update_param(ie, param, v).unwrap();
        }
    }

    fn set_active(&mut self, graph: &str, dcg: &str, index: u32) {
        let (e, se, ie) = self.execs[graph];
        self.multi.set_active(e, dcg, index).unwrap_or_else(|e| panic!("{dcg}: {e}"));
        self.single.set_active(se, dcg, index).unwrap();
        for (it, ie) in self.interps.iter_mut().zip(ie) {
            it.set_active(ie, dcg, index).unwrap();
        }
    }
}

#[test]
fn updates_of_parameters_and_groups_on_the_second_device_match_the_interpreter() {
    let source = parse(UPDATABLE);
    let bundle = compile(&source, None, 10);
    let optimized = cmdgraph_ir::bundle::Bundle::from_bytes(&bundle).unwrap().optimized;
    let stage1 = optimized.split("graph @u.s1.d1").nth(1).unwrap_or_else(|| panic!("no stage graph in:\n{optimized}"));
    let stage1 = stage1.split("\n}\n").next().unwrap();
    for carried in ["properties(updatable)", "dyn %s = ", "dyn %src = @b", "dcg %act active(0)"] {
        assert!(stage1.contains(carried), "device 1's stage graph lacks `{carried}`:\n{stage1}");
    }
    let one = UPDATABLE.replace(" replicated", "").replace(" home(1)", "").replace(" device(1)", "");
    let unplaced = compile(&parse(&one), None, 10);
    let mut check = Check::new(&source, &bundle, &unplaced, 2);
    check.bind(&inputs(&source, 7));
    check.run("u", "as compiled");
    // %s reaches nodes of both devices; %src and %act only device 1's.
    check.update("u", "s", |_| scalar(-0.734_812_5));
    check.run("u", "%s updated");
    check.update("u", "src", |m| pointer(m, "b2"));
    check.run("u", "%src on @b2");
    check.set_active("u", "act", 1);
    check.update("u", "slope", |_| scalar(0.062_5));
    check.run("u", "%act on @leaky, %slope updated");
    check.update("u", "src", |m| pointer(m, "w"));
    check.run("u", "%src on replicated @w");
    // Memory of device 0 for a node of device 1: refused, naming the node; nothing changes.
    let (e, _, _) = check.execs["u"];
    let a = pointer(check.multi.device(0).unwrap().module(), "a");
    let err = check.multi.update_param(e, "src", a).expect_err("@a lives on device 0").to_string();
    assert!(err.contains("%k1 runs on device 1; @a lives on device 0"), "{err}");
    check.run("u", "after a refused update");
    let err = check.multi.update_param(e, "nothing", scalar(1.0)).expect_err("no such parameter").to_string();
    assert!(err.contains("%nothing"), "{err}");
    // A launch of a node on device 1: half the range, the same on one device.
    let half = cmdgraph_ir::Launch::Range(vec![128]);
    check.multi.update_launch(e, "k1", half.clone()).unwrap();
    let se = check.execs["u"].1;
    check.single.update_launch(se, "k1", half).unwrap();
    check.multi.run(e).unwrap();
    check.multi.wait(e).unwrap();
    check.single.run(se).unwrap();
    check.single.wait(se).unwrap();
    for name in ["a", "b", "b2", "c", "out", "w"] {
        assert_eq!(
            check.multi.read(name).unwrap(),
            check.single.read(name).unwrap(),
            "@{name} after the launch update"
        );
    }
    check.quiet();
}

/// Every node kind a device runs, across two devices: kernels, transfers both ways, a fill,
/// a memset, prefetch and memadvise, a `while` and an `if` whose bodies run on device 1, a
/// sub-graph of device 1 (inlined), a graph allocation, host tasks beside each device's
/// memory, and ordering nodes.
const EVERY_KIND: &str = "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %s
  store %y[%i], %r
}

kernel @halve_and_count(%x: buf<f32, read_write>, %c: buf<u32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %half = const 0.5 : f32
  %h = mul %v, %half
  store %x[%i], %h
  %zero = const 0 : u32
  %first = eq %i, %zero
  if %first {
    %one = const 1 : u32
    %n = load %c[%zero]
    %n1 = sub %n, %one
    store %c[%zero], %n1
  }
}

usm @w : f32[256] replicated
usm @a : f32[256]
usm @b : f32[256] home(1)
usm @flags : u32[4] home(1)
usm @out : f32[256]

graph @halve {
  %k = kernel @halve_and_count range(256) args(@b, @flags) device(1)
}

graph @plus {
  %k = kernel @axpy range(256) args(@w, @b, 1.0) device(1)
}

graph @child {
  %k = kernel @axpy range(256) args(@w, @b, 0.25) device(1)
}

graph @g {
  queue @q0
  %k0 = kernel @axpy range(256) args(@w, @a, 1.25)
  %h0 = host_task \"negate_a\" access(@a read_write) after(%k0)
  %f = memfill @a, 0.5 : f32, 64 after(%h0)
  %t = memcpy @b, @a, 1024 after(%f)
  %p = prefetch @b, 1024 device(1) after(%t)
  %ad = memadvise @b, 1024, 2 device(1) after(%p)
  %s = memset @flags, 0, 16 device(1) after(%ad)
  %c = memfill @flags, 3 : u32, 2 device(1) after(%s)
  %wl = while @flags do @halve device(1) after(%c)
  %i = if @flags + 4 then @plus device(1) after(%wl)
  %sg = subgraph @child after(%i)
  %m = async_malloc f32[256] device(1) after(%sg)
  %k1 = kernel @scale range(256) args(@b, %m, 3.0) device(1) after(%m)
  %k2 = kernel @axpy range(256) args(%m, @b, -0.5) device(1) after(%k1)
  %fr = async_free %m device(1) after(%k2)
  %h1 = host_task \"negate_b\" access(@b read_write) after(%k2)
  %bar = barrier on @q0 after(%h1)
  %back = memcpy @out, @b, 1024 after(%bar)
  %e = empty after(%back)
  %k3 = kernel @axpy range(256) args(@a, @out, 2.0) after(%e)
}
";

/// A host callback that multiplies the `f32`s of memory `name` by -2 (exact).
fn negate(
    name: &'static str,
) -> impl FnMut(&mut dyn cmdgraph_ir::host::HostMemory) -> Result<(), cmdgraph_ir::host::HostError> + Send + Clone + 'static
{
    move |mem| {
        let v: Vec<f32> = mem.read_as(name)?;
        let out: Vec<f32> = v.iter().map(|x| x * -2.0).collect();
        mem.write_as(name, 0, &out)
    }
}

#[test]
fn every_node_kind_runs_across_two_devices_as_on_the_interpreter() {
    let source = parse(EVERY_KIND);
    let bundle = compile(&source, None, 10);
    let optimized = cmdgraph_ir::bundle::Bundle::from_bytes(&bundle).unwrap().optimized;
    let device1: String = optimized
        .split("\ngraph @g.s")
        .skip(1)
        .filter(|g| g.contains(" device(1)"))
        .map(|g| g.split("\n}\n").next().unwrap_or(""))
        .collect();
    for kind in [
        "= while @flags do @halve",
        "= if @flags + 4 then @plus",
        "= host_task \"negate_b\"",
        "= memfill @flags",
        "= prefetch @b",
        "= memadvise @b",
        "= memset @flags",
    ] {
        assert!(device1.contains(kind), "device 1's stage graphs lack `{kind}`:\n{optimized}");
    }
    let one = EVERY_KIND.replace(" replicated", "").replace(" home(1)", "").replace(" device(1)", "");
    let unplaced = compile(&parse(&one), None, 10);
    let mut check = Check::new(&source, &bundle, &unplaced, 2);
    for name in ["a", "b"] {
        let callback = if name == "a" { "negate_a" } else { "negate_b" };
        check.multi.register_callback(callback, negate(name));
        check.single.register_callback(callback, negate(name));
        for it in &mut check.interps {
            it.register_callback(callback, negate(name));
        }
    }
    for seed in [11u64, 12, 13] {
        check.bind(&inputs(&source, seed));
        check.run("g", &format!("seed {seed}"));
        assert_eq!(check.multi.last_transfers().1, 2048, "seed {seed}: a transfer there and one back");
    }
    check.quiet();
    // A host task touching memory of both devices cannot run beside one: refused, named.
    let text = EVERY_KIND.replace("access(@b read_write)", "access(@b read_write, @a read)");
    let bad = parse(&text);
    let passes = with_place_devices(default_pipeline());
    let pipeline = PipelineOptions { verify_each: true, ..PipelineOptions::default() };
    let err = match compile_module_configured(&bad, &passes, &pipeline, &Options::default(), &Llvm, &mut |_| {}) {
        Ok(_) => panic!("a host task on two devices' memory compiled"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("%h1") && err.contains("touches memory of devices 0 and 1"), "{err}");
}

/// A host task on device 1 that holds its stage graph until the test lets it go.
const HELD: &str = "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

usm @w : f32[256] replicated
usm @a : f32[256]
usm @b : f32[256] home(1)
usm @out : f32[256]

graph @g {
  %k0 = kernel @axpy range(256) args(@w, @a, 1.25)
  %t = memcpy @b, @a, 1024 after(%k0)
  %h = host_task \"hold\" access(@b read_write) after(%t)
  %back = memcpy @out, @b, 1024 after(%h)
  %k2 = kernel @axpy range(256) args(@a, @out, 0.5) after(%back)
}
";

#[test]
fn a_wait_across_devices_ends_at_the_deadline_naming_the_device_and_the_run_then_completes() {
    const DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);
    let source = parse(HELD);
    let bundle = compile(&source, None, 10);
    let opts: Vec<ContextOptions> =
        devices(2).into_iter().map(|o| ContextOptions { timeout: Some(DEADLINE), ..o }).collect();
    let mut multi = MultiExecutor::new(&bundle, &opts).unwrap();
    let (go, held) = std::sync::mpsc::channel::<()>();
    let held = std::sync::Mutex::new(held);
    let mut negate_b = negate("b");
    multi.register_callback("hold", move |mem| {
        // Never forever: a test that fails before letting go still ends.
        let _ = held.lock().unwrap().recv_timeout(std::time::Duration::from_secs(60));
        negate_b(mem)
    });
    let input = inputs(&source, 21);
    let mut interps = [Interpreter::new(&source).unwrap(), Interpreter::new(&source).unwrap()];
    for (name, bytes) in &input {
        multi.bind(name, bytes).unwrap();
        for it in &mut interps {
            it.bind(name, bytes).unwrap();
        }
    }
    let exec = multi.finalize("g").unwrap();
    multi.run(exec).unwrap();
    let started = std::time::Instant::now();
    let err = multi.wait(exec).expect_err("the held host task let the wait finish");
    let took = started.elapsed();
    let text = err.to_string();
    assert!(matches!(err, cmdgraph_executor::ExecError::Timeout { after, .. } if after == DEADLINE), "{text}");
    assert!(text.contains("device 1 (stage graph @g.s1.d1)"), "{text}");
    assert!(took >= DEADLINE && took < DEADLINE * 8, "the wait took {took:?}");
    // Let it go: waiting again returns once the run is done, and the run is right (device 0's
    // last stage waited for device 1's, deadline or not). The validation layer's semaphore
    // tracking may stall 10 s right after the held run (below): wait through it, bounded.
    go.send(()).unwrap();
    let released = std::time::Instant::now();
    while let Err(e) = multi.wait(exec) {
        assert!(matches!(e, cmdgraph_executor::ExecError::Timeout { .. }), "{e}");
        assert!(released.elapsed() < std::time::Duration::from_secs(30), "the held run never ended: {e}");
    }
    for ((it, fma), round) in interps.iter_mut().zip([FmaRounding::Once, FmaRounding::Twice]).zip(0..) {
        let ie = it.finalize("g").unwrap();
        it.register_callback("hold", negate("b"));
        it.run_with(ie, &RunOptions { fma, ..RunOptions::default() }).unwrap_or_else(|e| panic!("{round}: {e}"));
    }
    for name in ["a", "b", "out"] {
        let got = multi.read(name).unwrap();
        assert!(
            interps.iter().any(|it| it.read(name).unwrap() == got.as_slice()),
            "@{name} differs from the interpreter"
        );
    }
    // The executor stays usable: a second run, let go at once, completes. The validation
    // layer Debian ships stalls its own semaphore tracking for 10 s after a held run (its
    // `UNASSIGNED-VkSemaphore-state-timeout`, counted by the executor, docs/multi-device.md;
    // 0.5 ms without the layer), so this wait may pass the deadline a few times first.
    go.send(()).unwrap();
    multi.run(exec).unwrap();
    let started = std::time::Instant::now();
    while let Err(e) = multi.wait(exec) {
        assert!(matches!(e, cmdgraph_executor::ExecError::Timeout { .. }), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the second run never ended: {e}");
    }
    for (name, bytes) in &input {
        multi.bind(name, bytes).unwrap();
    }
    go.send(()).unwrap();
    multi.run(exec).unwrap();
    while multi.wait(exec).is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the third run never ended");
    }
    for name in ["a", "b", "out"] {
        let got = multi.read(name).unwrap();
        assert!(interps.iter().any(|it| it.read(name).unwrap() == got.as_slice()), "run 3: @{name} differs");
    }
    for d in 0..multi.len() {
        let msgs = multi.device(d).unwrap().context().take_messages();
        assert!(msgs.is_empty(), "device {d}: {msgs:?}");
    }
}
