//! Asynchronous submission on a Vulkan device (llvmpipe in CI), through the API: a graph run
//! from a bundle compiled at finalize (`jit`), with the validation layer on (any message
//! fails the run). What is checked (docs/semantics.md, "Running asynchronously"):
//!
//! - a long kernel's submission returns before the run completes: its event is `Running`,
//!   then `Complete` after `wait`, and memory read in between waits for the run;
//! - a second submission of the same executable graph waits for the first: both runs'
//!   effects compose (an overlap would make the second start from the initial data);
//! - an update made while a run is in flight reaches only runs submitted after it;
//! - a wait leaves the memory with the device: runs waited one after another compose, and a
//!   partial host write after them keeps the device's results for the rest;
//! - profiling information comes from the device's timestamps.
//!
//! The kernel is an integer recurrence (exact on every device), iterated `ITERATIONS`
//! times per work-item so that one run takes long enough on llvmpipe (a second or so) to be
//! observed in flight; the host recomputes every element.
#![cfg(feature = "jit")]

use cmdgraph_sycl::*;
use std::time::Instant;

const KERNEL: &str = r#"
// x[i] = (LCG applied n times to x[i]) + add
kernel @spin(%x: buf<u32, read_write>, %n: u32, %add: u32) {
  %i = global_id 0
  %v = load %x[%i]
  %zero = const 0 : u32
  %one = const 1 : u32
  %m = const 1664525 : u32
  %c = const 1013904223 : u32
  %r = for %j = %zero to %n step %one carry(%a = %v) {
    %p = mul %a, %m
    %q = add %p, %c
    yield %q
  }
  %out = add %r, %add
  store %x[%i], %out
}
"#;

/// Enough work that a run lasts tens of milliseconds on llvmpipe even when this binary's
/// tests share two cores: a submission there was once descheduled for 6-9 ms in CI (the
/// other tests' llvmpipe threads), against runs of 24 ms with 8192 items.
const ITEMS: u64 = 32768;
/// llvmpipe stops a work-item's loops after 65535 iterations in all (Mesa's
/// `LP_MAX_TGSI_LOOP_ITERATIONS`, one counter per invocation; docs/executor.md, "Devices"), so
/// the work is spread over work-items instead.
const ITERATIONS: u32 = 65535;

/// What one run does to one element.
fn spin(x: u32, add: u32) -> u32 {
    (0..ITERATIONS).fold(x, |a, _| a.wrapping_mul(1664525).wrapping_add(1013904223)).wrapping_add(add)
}

/// Random initial data (xorshift), so every element's history differs.
fn initial() -> Vec<u32> {
    let mut s = 0x9e37_79b9_u32;
    (0..ITEMS)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s
        })
        .collect()
}

struct Setup {
    ctx: Context,
    queue: Queue,
    x: Usm,
    _dir: TempDir,
}

/// A temporary directory removed on drop.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn setup(name: &str, profiling: bool) -> Setup {
    let dir = std::env::temp_dir().join(format!("cmdgraph-async-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dev = Device::new(0, DeviceInfo::default());
    let ctx = Context::new(0, std::slice::from_ref(&dev));
    ctx.run_from_bundles(BundleSource { dir: dir.clone(), validation: true });
    ctx.register_kernels_from_text(KERNEL).unwrap();
    let props = QueueProps { enable_profiling: profiling, ..QueueProps::in_order() };
    let queue = Queue::new(&ctx, &dev, props).unwrap();
    let x = Usm::device::<u32>(&ctx, ITEMS).unwrap();
    x.write(&initial()).unwrap();
    Setup { ctx, queue, x, _dir: TempDir(dir) }
}

/// A one-node updatable graph running `@spin` with dynamic parameter `add`.
fn spin_graph(s: &Setup, add: u32, profiling: bool) -> (ExecutableGraph, DynamicParameter, Node) {
    let dev = s.queue.device();
    let g = ModifiableGraph::new(&s.ctx, &dev, GraphProps::none()).unwrap();
    let p = DynamicParameter::new(&g, add).unwrap();
    let k = s.ctx.kernel("spin").unwrap();
    let node = g.add(|h| h.parallel_for(&k, ITEMS, args![&s.x, ITERATIONS, &p]), NodeProps::none()).unwrap();
    let props = FinalizeProps { updatable: true, enable_profiling: profiling };
    (g.finalize(props).unwrap(), p, node)
}

/// Runs the graph once and waits, so the runtime exists before the timed submissions
/// (building it creates the Vulkan device and pipelines, which is not the run).
fn warm_up(s: &Setup, exec: &ExecutableGraph) -> Vec<u32> {
    s.queue.ext_oneapi_graph(exec, &[]).unwrap().wait().unwrap();
    assert!(exec.runtime().unwrap().contains("Vulkan"), "ran on {:?}, not a Vulkan device", exec.runtime());
    s.x.read::<u32>().unwrap()
}

#[test]
fn a_submission_returns_before_the_run_completes() {
    let s = setup("returns", false);
    let (exec, _, _) = spin_graph(&s, 7, false);
    let before = warm_up(&s, &exec);
    let start = Instant::now();
    let e = s.queue.ext_oneapi_graph(&exec, &[]).unwrap();
    let submitted = start.elapsed();
    assert_eq!(e.get_status().unwrap(), EventStatus::Running, "the run completed within the submission");
    // A host read waits for the run in flight.
    let x = s.x.read::<u32>().unwrap();
    let finished = start.elapsed();
    assert_eq!(e.get_status().unwrap(), EventStatus::Complete);
    e.wait().unwrap();
    let expect: Vec<u32> = before.iter().map(|&v| spin(v, 7)).collect();
    assert_eq!(x, expect);
    assert!(submitted * 4 < finished, "submission took {submitted:?} of a run of {finished:?}");
}

#[test]
fn a_second_submission_of_the_same_graph_waits_for_the_first() {
    let s = setup("second", false);
    let (exec, _, _) = spin_graph(&s, 3, false);
    let before = warm_up(&s, &exec);
    let e1 = s.queue.ext_oneapi_graph(&exec, &[]).unwrap();
    let e2 = s.queue.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(e1.get_status().unwrap(), EventStatus::Running);
    assert_eq!(e2.get_status().unwrap(), EventStatus::Running);
    e2.wait().unwrap();
    assert_eq!(e1.get_status().unwrap(), EventStatus::Complete, "the second run completed before the first");
    // Overlapping runs would both start from `before`: the result would be one run's.
    let expect: Vec<u32> = before.iter().map(|&v| spin(spin(v, 3), 3)).collect();
    assert_eq!(s.x.read::<u32>().unwrap(), expect);
    e1.wait().unwrap();
}

#[test]
fn a_wait_leaves_memory_on_the_device_until_the_host_touches_it() {
    let s = setup("resident", false);
    let (exec, _, _) = spin_graph(&s, 5, false);
    let before = warm_up(&s, &exec);
    // Two waited runs in a row: the second starts from what the first left on the device.
    s.queue.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    s.queue.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    s.queue.wait().unwrap();
    // A host write of part of the memory after the waits brings the rest back first: the
    // elements it does not write keep both runs' results.
    let patch = [11u32, 22, 33, 44];
    let bytes: Vec<u8> = patch.iter().flat_map(|v| v.to_le_bytes()).collect();
    s.x.write_bytes(0, &bytes).unwrap();
    s.queue.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    let expect: Vec<u32> = before
        .iter()
        .enumerate()
        .map(|(i, &v)| match patch.get(i) {
            Some(&p) => spin(p, 5),
            None => spin(spin(spin(v, 5), 5), 5),
        })
        .collect();
    assert_eq!(s.x.read::<u32>().unwrap(), expect);
    // Dropped while its runtime holds the memory, the executable graph hands it back.
    s.queue.ext_oneapi_graph(&exec, &[]).unwrap().wait().unwrap();
    drop(exec);
    let expect: Vec<u32> = expect.iter().map(|&v| spin(v, 5)).collect();
    assert_eq!(s.x.read::<u32>().unwrap(), expect, "the last run's results were lost with the graph");
}

#[test]
fn an_update_during_a_run_reaches_only_later_runs() {
    let s = setup("update", false);
    let (exec, p, node) = spin_graph(&s, 11, false);
    let before = warm_up(&s, &exec);
    let e1 = s.queue.ext_oneapi_graph(&exec, &[]).unwrap();
    assert_eq!(e1.get_status().unwrap(), EventStatus::Running);
    p.update(0x8000_0001_u32).unwrap();
    exec.update_node(&node).unwrap();
    assert_eq!(e1.get_status().unwrap(), EventStatus::Running, "the update waited for the run in flight");
    let e2 = s.queue.ext_oneapi_graph(&exec, &[]).unwrap();
    e2.wait().unwrap();
    e1.wait().unwrap();
    let expect: Vec<u32> = before.iter().map(|&v| spin(spin(v, 11), 0x8000_0001)).collect();
    assert_eq!(s.x.read::<u32>().unwrap(), expect);
}

#[test]
fn profiling_comes_from_device_timestamps() {
    let s = setup("profile", true);
    let (exec, _, _) = spin_graph(&s, 5, true);
    warm_up(&s, &exec);
    let start = Instant::now();
    let e = s.queue.ext_oneapi_graph(&exec, &[]).unwrap();
    e.wait().unwrap();
    let wall = start.elapsed().as_nanos() as u64;
    let info = e.get_profiling_info().unwrap();
    assert!(info.submit <= info.start && info.start < info.end, "{info:?}");
    let device = info.end - info.start;
    // The device measured the kernel: most of the wall time, never more.
    assert!(device <= wall && device * 4 > wall, "device {device} ns of {wall} ns wall");
}

#[test]
fn eager_commands_run_on_the_device_and_complete_in_order() {
    let s = setup("eager", false);
    let k = s.ctx.kernel("spin").unwrap();
    let before = s.x.read::<u32>().unwrap();
    let e1 = s.queue.parallel_for(&k, ITEMS, args![&s.x, ITERATIONS, 1u32], &[]).unwrap();
    let e2 = s.queue.parallel_for(&k, ITEMS, args![&s.x, ITERATIONS, 2u32], &[&e1]).unwrap();
    s.queue.wait().unwrap();
    assert_eq!(e1.get_status().unwrap(), EventStatus::Complete);
    assert_eq!(e2.get_status().unwrap(), EventStatus::Complete);
    let expect: Vec<u32> = before.iter().map(|&v| spin(spin(v, 1), 2)).collect();
    assert_eq!(s.x.read::<u32>().unwrap(), expect);
}
