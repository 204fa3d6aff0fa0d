//! Communication between ranks in the SYCL-like API (docs/mpi.md): `handler.ext_send`,
//! `ext_recv` and `ext_allreduce` record `send`, `recv` and `allreduce` nodes, and a
//! context's communicator (`Context::set_communicator`) runs them. Two ranks, each a thread
//! with a context and memory of its own over the simulated communicator, exchange halves
//! and all-reduce full-precision random floats, run after run: on the interpreter and, with
//! `jit`, on Vulkan (llvmpipe in CI, validation on) with the same bytes.

mod common;

use cmdgraph_ir::comm::{local, SharedCommunicator};
use cmdgraph_sycl::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const KERNELS: &str = common::SAXPY_EXACT;
const N: u64 = 512;

/// One rank: `a += 1.7 x`; send `a` to the other rank and receive its `a` into `b`; `b +=
/// 0.5 a`; all-reduce `b` with `sum`. Three runs; `a` and `b` after each.
fn rank(rank: u32, comm: SharedCommunicator, vulkan: Option<std::path::PathBuf>) -> Vec<Vec<Vec<u8>>> {
    let ctx = match &vulkan {
        Some(dir) => {
            let descs = cmdgraph_executor::vulkan_devices().unwrap();
            let dev = Device::vulkan(0, descs.first().expect("a Vulkan device (llvmpipe in CI)"));
            let ctx = Context::new(0, &[dev]);
            ctx.run_from_bundles(BundleSource { dir: dir.clone(), validation: true });
            ctx
        }
        None => {
            let ctx = Context::new(0, &[Device::new(0, DeviceInfo::default())]);
            ctx.without_bundles();
            ctx
        }
    };
    ctx.set_communicator(comm);
    ctx.register_kernels_from_text(KERNELS).unwrap();
    let dev = ctx.devices()[0].clone();
    let q = Queue::new(&ctx, &dev, QueueProps::in_order()).unwrap();
    let (x, a, b) = (
        Usm::device::<f32>(&ctx, N).unwrap(),
        Usm::device::<f32>(&ctx, N).unwrap(),
        Usm::device::<f32>(&ctx, N).unwrap(),
    );
    x.write(&common::random_f32(N as usize, 10 + rank, -1.0, 2.0)).unwrap();
    a.write(&common::random_f32(N as usize, 20 + rank, -1.0, 2.0)).unwrap();
    b.write(&vec![0.0f32; N as usize]).unwrap();
    let k = ctx.kernel("saxpy").unwrap();
    let g = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).unwrap();
    let peer = 1 - rank;
    let bytes = N * 4;
    let k0 = g.add(|h| h.parallel_for(&k, N, args![&x, &a, 1.7f32]), NodeProps::none()).unwrap();
    let s = g.add(|h| h.ext_send(a.ptr(), bytes, peer, 3), NodeProps::depends_on(&[&k0])).unwrap();
    let r = g.add(|h| h.ext_recv(b.ptr(), bytes, peer, 3), NodeProps::none()).unwrap();
    let k1 = g.add(|h| h.parallel_for(&k, N, args![&a, &b, 0.5f32]), NodeProps::depends_on(&[&r, &s])).unwrap();
    g.add(|h| h.ext_allreduce(ReduceOp::Sum, b.ptr(), bytes), NodeProps::depends_on(&[&k1])).unwrap();
    assert_eq!(r.get_type(), NodeType::Communication);
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    let mut out = Vec::new();
    for _ in 0..3 {
        q.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
        out.push(vec![a.read_bytes().unwrap(), b.read_bytes().unwrap()]);
    }
    let runtime = exec.runtime().unwrap_or_default();
    assert_eq!(vulkan.is_some(), runtime != "reference interpreter", "{runtime}");
    out
}

/// Both ranks, each on a thread of its own.
fn both(vulkan: Option<std::path::PathBuf>) -> Vec<Vec<Vec<Vec<u8>>>> {
    let comms = local::ranks(2, Duration::from_secs(120));
    std::thread::scope(|s| {
        let hs: Vec<_> = comms
            .into_iter()
            .enumerate()
            .map(|(r, c)| {
                let vulkan = vulkan.clone();
                // Named: the memory trace (CMDGRAPH_MEMORY_TRACE) keeps a file per thread.
                let named = std::thread::Builder::new().name(format!("comm-rank-{r}"));
                named
                    .spawn_scoped(s, move || {
                        let c = Arc::new(Mutex::new(c));
                        let out = rank(r as u32, c.clone(), vulkan);
                        c.lock().unwrap().end();
                        out
                    })
                    .unwrap()
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn two_ranks_exchange_and_all_reduce_run_after_run() {
    let out = both(None);
    // The all-reduced `b` is the same on both ranks, and each rank's `a` moved on every run.
    for run in 0..3 {
        assert_eq!(out[0][run][1], out[1][run][1], "run {run}: the all-reduced b differs between ranks");
        if run > 0 {
            assert_ne!(out[0][run][0], out[0][run - 1][0]);
        }
    }
    // The first run by hand: each rank's b is 0.5 a_self + a_peer, then the sum over ranks in
    // rank order.
    let f = |v: &[u8]| -> Vec<f32> { v.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect() };
    let (a0, a1) = (f(&out[0][0][0]), f(&out[1][0][0]));
    let b = f(&out[0][0][1]);
    for i in 0..N as usize {
        let b0 = 0.5 * a0[i] + a1[i];
        let b1 = 0.5 * a1[i] + a0[i];
        assert_eq!(b[i].to_bits(), (b0 + b1).to_bits(), "element {i}");
    }
}

#[cfg(feature = "jit")]
#[test]
fn two_ranks_on_vulkan_leave_the_interpreters_bytes() {
    let dir = std::env::temp_dir().join(format!("cmdgraph-sycl-comm-{}", std::process::id()));
    let on_vulkan = both(Some(dir.clone()));
    let on_interp = both(None);
    assert!(on_vulkan == on_interp, "the ranks' memory on Vulkan differs from the interpreter's");
    let _ = std::fs::remove_dir_all(&dir);
}
