//! Devices: `Device::all` lists the Vulkan devices the executor can use and the reference
//! interpreter; the default device is a GPU when there is one. A graph on a listed Vulkan
//! device runs there from its bundle (compiled at finalize under `jit`) and leaves the same
//! bytes as the same graph on the interpreter; without a bundle source such a graph does not
//! finalize.

mod common;

use cmdgraph_sycl::*;

const KERNELS: &str = common::SAXPY_EXACT;

#[test]
fn the_interpreter_is_listed_last_and_ids_are_distinct() {
    let all = Device::all();
    let last = all.last().expect("the interpreter is always listed");
    assert_eq!(last.backend(), &Backend::Interpreter);
    assert_eq!(last.name(), "reference interpreter");
    for (i, d) in all.iter().enumerate() {
        assert_eq!(d.id(), i as u32, "{d:?}");
    }
    assert!(all[..all.len() - 1].iter().all(|d| matches!(d.backend(), Backend::Vulkan { .. })));
}

#[test]
fn the_default_device_is_a_gpu_when_there_is_one() {
    let all = Device::all();
    let gpus: Vec<&Device> =
        all.iter().filter(|d| matches!(d.backend(), Backend::Vulkan { kind, .. } if kind.is_gpu())).collect();
    let default = Device::default_device();
    match gpus.first() {
        Some(_) => {
            let Backend::Vulkan { kind, .. } = default.backend() else { panic!("default {default:?} is not a GPU") };
            assert!(kind.is_gpu());
            let best = gpus.iter().filter_map(|d| match d.backend() {
                Backend::Vulkan { kind, .. } => Some(*kind),
                Backend::Interpreter => None,
            });
            assert_eq!(Some(*kind), best.min(), "a better kind of GPU is listed");
        }
        None => assert_eq!(default.backend(), &Backend::Interpreter, "no GPU: the default is the interpreter"),
    }
}

/// The first listed Vulkan device (llvmpipe in CI, which scripts/setup.sh installs).
fn vulkan_device(all: &[Device]) -> Device {
    all.iter().find(|d| matches!(d.backend(), Backend::Vulkan { .. })).cloned().expect("no Vulkan device is listed")
}

#[cfg(feature = "jit")]
fn saxpy_graph(ctx: &Context, dev: &Device, x: &Usm, y: &Usm) -> ExecutableGraph {
    let k = ctx.kernel("saxpy").unwrap();
    let g = ModifiableGraph::new(ctx, dev, GraphProps::none()).unwrap();
    let a = g.add(|h| h.parallel_for(&k, x.count(), args![x, y, 1.7f32]), NodeProps::none()).unwrap();
    g.add(|h| h.parallel_for(&k, x.count(), args![x, y, -0.3f32]), NodeProps::depends_on(&[&a])).unwrap();
    g.finalize(FinalizeProps::none()).unwrap()
}

#[test]
fn a_vulkan_device_without_a_bundle_source_does_not_finalize() {
    let all = Device::all();
    let dev = vulkan_device(&all);
    let ctx = Context::new(0, std::slice::from_ref(&dev));
    ctx.without_bundles();
    ctx.register_kernels_from_text(KERNELS).unwrap();
    let x = Usm::device::<f32>(&ctx, 16).unwrap();
    let y = Usm::device::<f32>(&ctx, 16).unwrap();
    let k = ctx.kernel("saxpy").unwrap();
    let g = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).unwrap();
    g.add(|h| h.parallel_for(&k, 16u64, args![&x, &y, 2.0f32]), NodeProps::none()).unwrap();
    let err = g.finalize(FinalizeProps::none()).unwrap_err();
    assert!(err.message.contains("runs graphs from precompiled bundles"), "{err:?}");
    assert!(err.message.contains(BUNDLE_DIR_VAR), "{err:?}");
}

#[test]
fn native_commands_are_refused_on_a_vulkan_device() {
    let all = Device::all();
    let dev = vulkan_device(&all);
    let ctx = Context::new(0, std::slice::from_ref(&dev));
    ctx.register_native_command("noop", |_| Ok(()));
    let g = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).unwrap();
    g.add(|h| h.ext_codeplay_enqueue_native_command("noop", &[]), NodeProps::none()).unwrap();
    let err = g.finalize(FinalizeProps::none()).unwrap_err();
    assert_eq!(err.row, 21, "{err:?}");
}

#[cfg(feature = "jit")]
#[test]
fn a_graph_on_a_listed_vulkan_device_runs_there_with_the_interpreters_bytes() {
    let all = Device::all();
    let vk = vulkan_device(&all);
    let interp = all.last().unwrap().clone();
    let dir = std::env::temp_dir().join(format!("cmdgraph-devices-{}", std::process::id()));
    let ctx = Context::new(0, &[vk.clone(), interp.clone()]);
    ctx.run_from_bundles(BundleSource { dir: dir.clone(), validation: true });
    ctx.register_kernels_from_text(KERNELS).unwrap();
    let n = 1000;
    let x = Usm::device::<f32>(&ctx, n).unwrap();
    let y_vk = Usm::device::<f32>(&ctx, n).unwrap();
    let y_interp = Usm::device::<f32>(&ctx, n).unwrap();
    x.write(&common::random_f32(n as usize, 7, -1.0, 2.0)).unwrap();
    let y0 = common::random_f32(n as usize, 11, -1.0, 2.0);
    y_vk.write(&y0).unwrap();
    y_interp.write(&y0).unwrap();
    let on_vk = saxpy_graph(&ctx, &vk, &x, &y_vk);
    // With a bundle source, an interpreter device's graphs go to the default Vulkan device
    // too; this one must run on the interpreter, so it is finalized without one.
    ctx.without_bundles();
    let on_interp = saxpy_graph(&ctx, &interp, &x, &y_interp);
    let q_vk = Queue::new(&ctx, &vk, QueueProps::in_order()).unwrap();
    let q_interp = Queue::new(&ctx, &interp, QueueProps::in_order()).unwrap();
    q_interp.ext_oneapi_graph(&on_interp, &[]).unwrap().wait().unwrap();
    // The Vulkan graph's placement was fixed at finalize; it runs from its bundle.
    ctx.run_from_bundles(BundleSource { dir: dir.clone(), validation: true });
    q_vk.ext_oneapi_graph(&on_vk, &[]).unwrap().wait().unwrap();
    let Backend::Vulkan { name, .. } = vk.backend() else { unreachable!() };
    assert!(on_vk.runtime().unwrap().contains(name.as_str()), "{:?}", on_vk.runtime());
    assert_eq!(on_interp.runtime().unwrap(), "reference interpreter");
    assert_eq!(y_vk.read_bytes().unwrap(), y_interp.read_bytes().unwrap());
    assert_ne!(y_vk.read::<f32>().unwrap(), y0, "the graph did not run");
    let _ = std::fs::remove_dir_all(&dir);
}
