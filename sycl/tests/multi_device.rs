//! The multi-device extension of the SYCL-like API (docs/multi-device.md, "The SYCL-like
//! API"): `NodeProps::on_device` puts a node on another device of the graph's context,
//! `Usm::device_on` puts memory there, and copies between them are the transfers. Such a
//! graph runs on the interpreter as written and, from its bundle (compiled at finalize under
//! `jit`, with `split-devices`), on two logical Vulkan devices (llvmpipe in CI, validation
//! on) with the interpreter's bytes, before and after an update of a parameter of a node on
//! the second device. Devices outside the context and empty nodes with a device are refused.

mod common;

use cmdgraph_sycl::*;

const KERNELS: &str = common::SAXPY_EXACT;

const N: u64 = 1000;

/// The memory of one run: `x` and `a` on device 0, `b` on device 1, `out` on device 0.
struct Mem {
    x: Usm,
    a: Usm,
    b: Usm,
    out: Usm,
}

fn memory(ctx: &Context, d1: &Device) -> Mem {
    let m = Mem {
        x: Usm::device::<f32>(ctx, N).unwrap(),
        a: Usm::device::<f32>(ctx, N).unwrap(),
        b: Usm::device_on::<f32>(ctx, d1, N).unwrap(),
        out: Usm::device::<f32>(ctx, N).unwrap(),
    };
    m.x.write(&common::random_f32(N as usize, 3, -1.0, 2.0)).unwrap();
    m.a.write(&common::random_f32(N as usize, 5, -1.0, 2.0)).unwrap();
    m.b.write(&common::random_f32(N as usize, 7, -1.0, 2.0)).unwrap();
    m.out.write(&common::random_f32(N as usize, 9, -1.0, 2.0)).unwrap();
    m
}

/// `a += 1.7 x` on device 0; `b = a` (a transfer to device 1); `b += s x'` on device 1 with
/// `x'` = `b` itself read again (its only input there); `out = b` back on device 0; `out +=
/// -0.3 a` there. `s` is a dynamic parameter.
fn graph(ctx: &Context, d0: &Device, d1: &Device, m: &Mem) -> (ExecutableGraph, DynamicParameter, Node) {
    let k = ctx.kernel("saxpy").unwrap();
    let g = ModifiableGraph::new(ctx, d0, GraphProps::none()).unwrap();
    let s = DynamicParameter::new(&g, 0.625f32).unwrap();
    let bytes = N * 4;
    let k0 = g.add(|h| h.parallel_for(&k, N, args![&m.x, &m.a, 1.7f32]), NodeProps::none()).unwrap();
    let t = g.add(|h| h.memcpy(m.b.ptr(), m.a.ptr(), bytes), NodeProps::depends_on(&[&k0])).unwrap();
    let k1 = g
        .add(|h| h.parallel_for(&k, N, args![&m.b, &m.b, &s]), NodeProps::depends_on(&[&t]).and_on_device(d1))
        .unwrap();
    let back = g.add(|h| h.memcpy(m.out.ptr(), m.b.ptr(), bytes), NodeProps::depends_on(&[&k1])).unwrap();
    g.add(|h| h.parallel_for(&k, N, args![&m.a, &m.out, -0.3f32]), NodeProps::depends_on(&[&back])).unwrap();
    (g.finalize(FinalizeProps::updatable()).unwrap(), s, k1)
}

fn snapshot(m: &Mem) -> Vec<Vec<u8>> {
    [&m.x, &m.a, &m.b, &m.out].iter().map(|u| u.read_bytes().unwrap()).collect()
}

/// Two runs, an update of `s` (on the node of device 1), a third run: the memory after each
/// phase.
fn three_runs(ctx: &Context, q: &Queue, d0: &Device, d1: &Device) -> (Vec<Vec<Vec<u8>>>, String) {
    let m = memory(ctx, d1);
    let (exec, s, k1) = graph(ctx, d0, d1, &m);
    let mut phases = Vec::new();
    for _ in 0..2 {
        q.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    }
    phases.push(snapshot(&m));
    s.update(-1.3125f32).unwrap();
    exec.update_node(&k1).unwrap();
    q.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    phases.push(snapshot(&m));
    (phases, exec.runtime().unwrap_or_default())
}

#[test]
fn nodes_on_a_device_outside_the_context_and_empty_nodes_with_a_device_are_refused() {
    let (d0, d1, far) = (
        Device::new(0, DeviceInfo::default()),
        Device::new(1, DeviceInfo::default()),
        Device::new(7, DeviceInfo::default()),
    );
    let ctx = Context::new(0, &[d0.clone(), d1.clone()]);
    ctx.register_kernels_from_text(KERNELS).unwrap();
    let x = Usm::device::<f32>(&ctx, N).unwrap();
    let k = ctx.kernel("saxpy").unwrap();
    let g = ModifiableGraph::new(&ctx, &d0, GraphProps::none()).unwrap();
    let err = g.add(|h| h.parallel_for(&k, N, args![&x, &x, 1.0f32]), NodeProps::on_device(&far)).unwrap_err();
    assert!(err.message.contains("device 7 is not in graph") && err.message.contains("context 0"), "{err:?}");
    let err = g.add_empty(NodeProps::on_device(&d1)).unwrap_err();
    assert!(err.message.contains("an empty node runs on no device"), "{err:?}");
    let err = Usm::device_on::<f32>(&ctx, &far, 4).unwrap_err();
    assert!(err.message.contains("device 7 is not in context 0"), "{err:?}");
    // A device of the context: the node names it in the IR, and memory names its home.
    let b = Usm::device_on::<f32>(&ctx, &d1, N).unwrap();
    g.add(|h| h.parallel_for(&k, N, args![&b, &b, 1.0f32]), NodeProps::on_device(&d1)).unwrap();
    let text = cmdgraph_ir::text::print(&g.to_module().0);
    assert!(text.contains("home(1)") && text.contains("device(1)"), "{text}");
}

#[test]
fn a_graph_across_two_devices_runs_on_the_interpreter_as_on_one_device() {
    let (d0, d1) = (Device::new(0, DeviceInfo::default()), Device::new(1, DeviceInfo::default()));
    let ctx = Context::new(0, &[d0.clone(), d1.clone()]);
    ctx.without_bundles();
    ctx.register_kernels_from_text(KERNELS).unwrap();
    let q = Queue::new(&ctx, &d0, QueueProps::in_order()).unwrap();
    let (two, runtime) = three_runs(&ctx, &q, &d0, &d1);
    assert_eq!(runtime, "reference interpreter");
    // The same graph with every node and memory object on device 0.
    let (one, _) = three_runs(&ctx, &q, &d0, &d0);
    assert_eq!(two, one);
    assert_ne!(two[0][3], two[1][3], "the update changed nothing");
}

#[cfg(feature = "jit")]
#[test]
fn a_graph_across_two_vulkan_devices_leaves_the_interpreters_bytes() {
    let descs = cmdgraph_executor::vulkan_devices().unwrap();
    let desc = descs.first().expect("a Vulkan device (llvmpipe in CI)");
    // Two logical devices of one physical device, each its own VkDevice and memory.
    let (v0, v1) = (Device::vulkan(0, desc), Device::vulkan(1, desc));
    let dir = std::env::temp_dir().join(format!("cmdgraph-multi-device-{}", std::process::id()));
    let ctx = Context::new(0, &[v0.clone(), v1.clone()]);
    ctx.run_from_bundles(BundleSource { dir: dir.clone(), validation: true });
    ctx.register_kernels_from_text(KERNELS).unwrap();
    let q = Queue::new(&ctx, &v0, QueueProps::in_order()).unwrap();
    let (on_vulkan, runtime) = three_runs(&ctx, &q, &v0, &v1);
    assert!(runtime.starts_with("2 devices (Vulkan"), "{runtime}");
    let (i0, i1) = (Device::new(0, DeviceInfo::default()), Device::new(1, DeviceInfo::default()));
    let ictx = Context::new(0, &[i0.clone(), i1.clone()]);
    ictx.without_bundles();
    ictx.register_kernels_from_text(KERNELS).unwrap();
    let iq = Queue::new(&ictx, &i0, QueueProps::in_order()).unwrap();
    let (on_interp, _) = three_runs(&ictx, &iq, &i0, &i1);
    for (phase, (v, i)) in on_vulkan.iter().zip(&on_interp).enumerate() {
        for (name, (a, b)) in ["x", "a", "b", "out"].iter().zip(v.iter().zip(i)) {
            assert!(a == b, "phase {phase}: @{name} differs from the interpreter");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
