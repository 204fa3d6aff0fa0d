//! A dynamic command group of host tasks switched through the SYCL API (issue 28):
//! `set_active_index(i)` then `update(node)` runs alternative `i`'s host task on a Vulkan
//! device (from its bundle, validation on) as on the reference interpreter, whichever
//! alternative was active at finalize.
#![cfg(feature = "jit")]

mod common;

use cmdgraph_sycl::*;

const KERNELS: &str = r#"
kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}
"#;

const N: u64 = 300;
const FACTOR: f32 = 1.718_281_7;

/// What each alternative's callback makes of one element of `@x`.
/// A host callback's effect on one element.
type OnElement = fn(f32) -> f32;

const CALLBACKS: [(&str, OnElement); 3] = [("negate", |v| -v), ("cube", |v| v * v * v), ("recip", |v| 1.0 / v)];

/// One runtime's side: its context, memory, group, dynamic node and executable graph.
struct Side {
    ctx: Context,
    dev: Device,
    out: Usm,
    dcg: DynamicCommandGroup,
    node: Node,
    exec: ExecutableGraph,
}

/// `@h = f(@x)` by the group's active host task, then `@out = FACTOR · @h` on the device,
/// in a context of its own (its callbacks name its memory), finalized on alternative `active`.
fn side(dev: &Device, bundles: Option<&std::path::Path>, x: &[f32], active: usize) -> Side {
    let ctx = Context::new(0, std::slice::from_ref(dev));
    match bundles {
        Some(dir) => ctx.run_from_bundles(BundleSource { dir: dir.to_path_buf(), validation: true }),
        None => ctx.without_bundles(),
    }
    ctx.register_kernels_from_text(KERNELS).unwrap();
    let xs = Usm::device::<f32>(&ctx, N).unwrap();
    let h = Usm::device::<f32>(&ctx, N).unwrap();
    let out = Usm::device::<f32>(&ctx, N).unwrap();
    xs.write(x).unwrap();
    let (xn, hn) = (format!("@{}", xs.name()), format!("@{}", h.name()));
    for (name, f) in CALLBACKS {
        let (xn, hn) = (xn.clone(), hn.clone());
        ctx.register_host_task(name, move |hc| {
            let v: Vec<f32> = hc.read_as(&xn)?;
            hc.write_as(&hn, 0, &v.iter().map(|&a| f(a)).collect::<Vec<f32>>())
        });
    }
    let g = ModifiableGraph::new(&ctx, dev, GraphProps::none()).unwrap();
    let groups = CALLBACKS
        .iter()
        .map(|&(name, _)| {
            let access = [(xs.ptr(), Access::Read), (h.ptr(), Access::Write)];
            CommandGroup::new(move |hd: &mut Handler| hd.host_task_with_access(name, &access))
        })
        .collect();
    let dcg = DynamicCommandGroup::new(&g, groups).unwrap();
    dcg.set_active_index(active).unwrap();
    let node = g.add_dynamic(&dcg, NodeProps::none()).unwrap();
    assert_eq!(node.get_type(), NodeType::HostTask);
    let k = ctx.kernel("scale").unwrap();
    g.add(|hd| hd.parallel_for(&k, N, args![&h, &out, FACTOR]), NodeProps::depends_on(&[&node])).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    Side { ctx, dev: dev.clone(), out, dcg, node, exec }
}

impl Side {
    /// Switches to alternative `alt`, commits it with `update(node)`, runs, and reads `@out`.
    fn switch_and_run(&self, alt: usize) -> Vec<u8> {
        self.dcg.set_active_index(alt).unwrap();
        self.exec.update_node(&self.node).unwrap();
        let q = Queue::new(&self.ctx, &self.dev, QueueProps::in_order()).unwrap();
        q.ext_oneapi_graph(&self.exec, &[]).unwrap().wait().unwrap();
        self.out.read_bytes().unwrap()
    }
}

#[test]
fn host_task_alternative_switches_on_vulkan_run_what_the_interpreter_runs() {
    let all = Device::all();
    let vk = all.iter().find(|d| matches!(d.backend(), Backend::Vulkan { .. })).cloned().expect("a Vulkan device");
    let interp = all.last().unwrap().clone();
    let dir = std::env::temp_dir().join(format!("cmdgraph-dcg-host-switch-{}", std::process::id()));
    let x = common::random_f32(N as usize, 28, -1.0, 2.0);
    for start in [0usize, 1] {
        let on_vk = side(&vk, Some(&dir), &x, start);
        let on_interp = side(&interp, None, &x, start);
        for (step, alt) in [start, 2, 1, 0, 2].into_iter().enumerate() {
            let got = on_vk.switch_and_run(alt);
            let want = on_interp.switch_and_run(alt);
            assert_eq!(on_interp.exec.runtime().unwrap(), "reference interpreter");
            let Backend::Vulkan { name, .. } = vk.backend() else { unreachable!() };
            assert!(on_vk.exec.runtime().unwrap().contains(name.as_str()), "{:?}", on_vk.exec.runtime());
            assert_eq!(
                got, want,
                "finalized on {start}, step {step}: alternative {alt}, Vulkan against the interpreter"
            );
            let here: Vec<u8> = x.iter().flat_map(|&v| (CALLBACKS[alt].1(v) * FACTOR).to_le_bytes()).collect();
            assert_eq!(got, here, "finalized on {start}, step {step}: alternative {alt}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
