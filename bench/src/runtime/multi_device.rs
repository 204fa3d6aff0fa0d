//! `multi-device` (issue 34): one graph on several GPUs, run by `MultiExecutor`
//! (docs/multi-device.md), against the same graph on one GPU in the same process.
//!
//! (a) *wide*: C independent chains of L kernels, each kernel `K` dependent `fma`s per
//! element over its chain's N floats (compute-bound, so that each device has real work);
//! on one device, and on D devices placed by hand (chain c on device c mod D, its memory
//! with it) and by `place-devices` (`--devices D`, its default 10 GB/s). Throughput ratio
//! = one device's wall time / D devices' wall time (target ≥ 1.8x on 2, ≥ 3.4x on 4).
//! (b) *pipeline*: two stages of the same kernels over a 64 MiB activation, the first on
//! device 0 and the second on device 1, joined by one transfer; its time and bandwidth
//! against the host-staged bandwidth of a hand-written copy in the same call (the source
//! device read into a host buffer, the host buffer written to the destination, through the
//! executors' transfer paths) and against a host `memcpy` of the same bytes.
//! (c) *place-devices* against the manual placement of (a): wall time ratio (target
//! within 10 %).
//!
//! Every output is checked: each configuration's memory equals the one-device run's, bit
//! for bit (the same kernels on the same kind of device).

use super::harness::{self, Common, Phase};
use clap::Args as ClapArgs;
use cmdgraph_executor::{ContextOptions, DeviceChoice, DeviceKind, MultiExecutor};
use std::fmt::Write as _;
use std::time::Instant;

/// Command-line arguments of `cmdgraph-bench multi-device`.
#[derive(ClapArgs, Clone, Debug)]
pub struct Args {
    #[command(flatten)]
    pub common: Common,
    /// Independent chains of the wide graph.
    #[arg(long, default_value_t = 8)]
    pub chains: u32,
    /// Kernels per chain.
    #[arg(long, default_value_t = 4)]
    pub length: u32,
    /// Floats per chain.
    #[arg(long, default_value_t = 1 << 22)]
    pub n: u64,
    /// Dependent `fma`s per element in each kernel.
    #[arg(long, default_value_t = 256)]
    pub fmas: u32,
    /// Floats of the pipeline's activation (64 MiB by default; llvmpipe launches at most
    /// 65535 groups in a dimension, so use 2^21 or fewer there).
    #[arg(long, default_value_t = 1 << 24)]
    pub activation: u64,
    /// Device counts to run on (each at most the GPUs present; 2 logical devices of one
    /// physical device where there is one GPU or none).
    #[arg(long, value_delimiter = ',', default_values_t = [2u32, 4])]
    pub devices: Vec<u32>,
}

fn kernel(fmas: u32) -> String {
    format!(
        "kernel @work(%x: buf<f32, read_write>, %w: buf<f32, read>, %a: f32) {{
  %i = global_id 0
  %v = load %x[%i]
  %c = load %w[%i]
  %zero = const 0 : u32
  %k = const {fmas} : u32
  %one = const 1 : u32
  %r = for %j = %zero to %k step %one carry(%acc = %v) {{
    %t = fma %acc, %a, %c
    yield %t
  }}
  store %x[%i], %r
}}
"
    )
}

/// The wide graph; `place(c)`: the device of chain c (`None`: not written).
fn wide(args: &Args, place: &dyn Fn(u32) -> Option<u32>) -> String {
    let mut s = kernel(args.fmas);
    let rep = if place(0).is_some() { " replicated" } else { "" };
    let _ = writeln!(s, "usm @w : f32[{}]{rep}", args.n);
    for c in 0..args.chains {
        let home = place(c).filter(|&d| d > 0).map_or(String::new(), |d| format!(" home({d})"));
        let _ = writeln!(s, "usm @x{c} : f32[{}]{home}", args.n);
    }
    s.push_str("\ngraph @wide {\n");
    for c in 0..args.chains {
        let dev = place(c).filter(|&d| d > 0).map_or(String::new(), |d| format!(" device({d})"));
        for l in 0..args.length {
            let after = if l == 0 { String::new() } else { format!(" after(%c{c}k{})", l - 1) };
            let _ = writeln!(s, "  %c{c}k{l} = kernel @work range({}) args(@x{c}, @w, 0.5){dev}{after}", args.n);
        }
    }
    s.push_str("}\n");
    s
}

/// The two-stage pipeline; `two`: the second stage on device 1 behind a transfer.
fn pipeline(args: &Args, two: bool) -> String {
    let n = args.activation;
    let mut s = kernel(args.fmas);
    let (rep, home, dev) = if two { (" replicated", " home(1)", " device(1)") } else { ("", "", "") };
    let _ = writeln!(s, "usm @w : f32[{n}]{rep}\nusm @act : f32[{n}]\nusm @act1 : f32[{n}]{home}\n\ngraph @pipe {{");
    let _ = writeln!(s, "  %a0 = kernel @work range({n}) args(@act, @w, 0.5)");
    let _ = writeln!(s, "  %a1 = kernel @work range({n}) args(@act, @w, 0.25) after(%a0)");
    let _ = writeln!(s, "  %t = memcpy @act1, @act, {} after(%a1)", n * 4);
    let _ = writeln!(s, "  %b0 = kernel @work range({n}) args(@act1, @w, 0.5){dev} after(%t)");
    let _ = writeln!(s, "  %b1 = kernel @work range({n}) args(@act1, @w, 0.25){dev} after(%b0)\n}}");
    // The transfer alone: a device copy on one device, two device copies through imported
    // host memory (or a host copy) on two.
    let _ = writeln!(s, "\ngraph @move {{\n  %t = memcpy @act1, @act, {}\n}}", n * 4);
    s
}

fn compile(text: &str, devices: Option<u32>) -> Result<Vec<u8>, String> {
    let module = cmdgraph_ir::text::parse(text).map_err(|d| format!("bench IR does not parse: {d:?}"))?;
    let passes = match devices {
        Some(_) => cmdgraph_passes::with_place_devices(cmdgraph_passes::default_pipeline()),
        None => cmdgraph_passes::default_pipeline(),
    };
    let pipeline = cmdgraph_codegen::bundle::PipelineOptions { devices, ..Default::default() };
    let (bundle, _) = cmdgraph_codegen::bundle::compile_module_configured(
        &module,
        &passes,
        &pipeline,
        &cmdgraph_codegen::Options { opt_level: 2 },
        &cmdgraph_codegen::bundle::Llvm,
        &mut |_| {},
    )
    .map_err(|e| e.to_string())?;
    bundle.to_bytes().map_err(|e| e.to_string())
}

/// Device options for `count` devices: the GPUs in order, or the default device repeated
/// where there is no GPU; `None` where there are GPUs but fewer than `count`.
fn device_options(count: u32) -> Option<(Vec<ContextOptions>, String)> {
    let gpus: Vec<_> = cmdgraph_executor::vulkan_devices()
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.kind == DeviceKind::DiscreteGpu)
        .collect();
    let opts = |device| ContextOptions { validation: false, device, ..Default::default() };
    if gpus.len() >= count as usize {
        let names: Vec<String> =
            gpus.iter().take(count as usize).map(|g| format!("{} (index {})", g.name, g.index)).collect();
        Some(((0..count as usize).map(|i| opts(DeviceChoice::Index(gpus[i].index))).collect(), names.join(", ")))
    } else if gpus.is_empty() {
        Some((
            (0..count).map(|_| opts(DeviceChoice::Default)).collect(),
            format!("{count} logical devices of the default device (no GPU)"),
        ))
    } else {
        None
    }
}

pub fn main(args: &Args) -> Result<(), String> {
    let phase = Phase::of(&args.common, "multi-device")?;
    let r = run(args, &phase);
    phase.cleanup();
    r
}

fn run(args: &Args, phase: &Phase) -> Result<(), String> {
    let counts: Vec<u32> = args.devices.iter().copied().filter(|&d| d >= 2).collect();
    if phase.prepares() {
        harness::write_bytes(&phase.dir().join("wide_1.cgb"), &compile(&wide(args, &|_| None), None)?)?;
        for &d in &counts {
            let manual = wide(args, &|c| Some(c % d));
            harness::write_bytes(&phase.dir().join(format!("wide_manual_{d}.cgb")), &compile(&manual, Some(1))?)?;
            let placed = compile(&wide(args, &|_| None), Some(d))?;
            harness::write_bytes(&phase.dir().join(format!("wide_placed_{d}.cgb")), &placed)?;
        }
        harness::write_bytes(&phase.dir().join("pipe_1.cgb"), &compile(&pipeline(args, false), None)?)?;
        harness::write_bytes(&phase.dir().join("pipe_2.cgb"), &compile(&pipeline(args, true), Some(1))?)?;
    }
    if !phase.runs() {
        return Ok(());
    }
    let reps = args.common.runs.max(3);
    let err = |e: cmdgraph_executor::ExecError| e.to_string();
    let rng_bytes = |n: u64, seed: u64| -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Full-precision floats in [-1, 1).
                ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
            })
            .collect()
    };
    let w = rng_bytes(args.n, 7);
    let xs: Vec<Vec<f32>> = (0..args.chains).map(|c| rng_bytes(args.n, 100 + u64::from(c))).collect();
    // One device.
    let mut one = harness::executor(&harness::bundle_bytes(phase.dir(), "wide_1")?, &args.common)?;
    let device_name = one.context().device_name().to_string();
    let e1 = one.finalize("wide").map_err(err)?;
    let bind_one = |ex: &mut cmdgraph_executor::Executor| -> Result<(), String> {
        ex.bind_as("w", &w).map_err(err)?;
        for (c, x) in xs.iter().enumerate() {
            ex.bind_as(&format!("x{c}"), x).map_err(err)?;
        }
        Ok(())
    };
    bind_one(&mut one)?;
    one.run(e1).map_err(err)?;
    one.wait(e1).map_err(err)?;
    let want: Vec<Vec<u8>> =
        (0..args.chains).map(|c| one.read(&format!("x{c}"))).collect::<Result<_, _>>().map_err(err)?;
    let mut t1 = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        one.run(e1).map_err(err)?;
        one.wait(e1).map_err(err)?;
        t1.push(t.elapsed().as_secs_f64());
    }
    drop(one);
    let one_s = harness::median(&t1);
    let mut rows = Vec::new();
    let mut where_ = Vec::new();
    for &d in &counts {
        let Some((opts, names)) = device_options(d) else {
            where_.push(format!("{d} devices: not run (fewer GPUs)"));
            continue;
        };
        where_.push(format!("{d} devices: {names}"));
        let mut row = vec![d.to_string()];
        let mut manual_s = 0.0;
        for which in ["manual", "placed"] {
            let bundle = harness::bundle_bytes(phase.dir(), &format!("wide_{which}_{d}"))?;
            let mut multi = MultiExecutor::new(&bundle, &opts).map_err(err)?;
            let e = multi.finalize("wide").map_err(err)?;
            multi.bind("w", &to_bytes(&w)).map_err(err)?;
            for (c, x) in xs.iter().enumerate() {
                multi.bind(&format!("x{c}"), &to_bytes(x)).map_err(err)?;
            }
            multi.run(e).map_err(err)?;
            for (c, want) in want.iter().enumerate() {
                if &multi.read(&format!("x{c}")).map_err(err)? != want {
                    return Err(format!("multi-device: wide, {which} on {d} devices: @x{c} differs from one device"));
                }
            }
            let mut times = Vec::new();
            for _ in 0..reps {
                let t = Instant::now();
                multi.run(e).map_err(err)?;
                multi.wait(e).map_err(err)?;
                times.push(t.elapsed().as_secs_f64());
            }
            let s = harness::median(&times);
            if which == "manual" {
                manual_s = s;
            }
            row.push(harness::ms(s));
            row.push(format!("{:.2}x", one_s / s));
            if which == "placed" {
                row.push(format!("{:.2}x", s / manual_s));
            }
            eprintln!("multi-device: wide on {d} devices ({which}): {:.3} ms ({:.2}x of one)", s * 1e3, one_s / s);
        }
        rows.push(row);
    }
    // (b) the pipeline.
    let act = rng_bytes(args.activation, 11);
    let wp = rng_bytes(args.activation, 12);
    let mut pone = harness::executor(&harness::bundle_bytes(phase.dir(), "pipe_1")?, &args.common)?;
    let ep = pone.finalize("pipe").map_err(err)?;
    pone.bind_as("w", &wp).map_err(err)?;
    let mut pt1 = Vec::new();
    for _ in 0..reps + 1 {
        pone.bind_as("act", &act).map_err(err)?;
        let t = Instant::now();
        pone.run(ep).map_err(err)?;
        pone.wait(ep).map_err(err)?;
        pt1.push(t.elapsed().as_secs_f64());
    }
    let pwant = pone.read("act1").map_err(err)?;
    drop(pone);
    let (opts, names) = device_options(2).ok_or("the pipeline needs two devices")?;
    let pipe_2 = harness::bundle_bytes(phase.dir(), "pipe_2")?;
    // Each transfer path: through host memory imported into both devices (where they have
    // it), and through a copy per device the host copies between (a fresh executor each:
    // the first finalize fixes the path).
    let mut paths = Vec::new();
    let mut last = None;
    for imported in [true, false] {
        let mut pm = MultiExecutor::new(&pipe_2, &opts).map_err(err)?;
        pm.set_imported_transfers(imported).map_err(err)?;
        let em = pm.finalize("pipe").map_err(err)?;
        let path = match imported {
            true => format!("{}, devices ordered by {}", pm.transfer_path(), pm.semaphore_path()),
            false => pm.transfer_path().to_string(),
        };
        let mv = pm.finalize("move").map_err(err)?;
        pm.bind("w", &to_bytes(&wp)).map_err(err)?;
        let (mut pt2, mut tt) = (Vec::new(), Vec::new());
        for _ in 0..reps + 1 {
            pm.bind("act", &to_bytes(&act)).map_err(err)?;
            let t = Instant::now();
            pm.run(em).map_err(err)?;
            pm.wait(em).map_err(err)?;
            pt2.push(t.elapsed().as_secs_f64());
        }
        if pm.read("act1").map_err(err)? != pwant {
            return Err(format!("multi-device: the pipeline's @act1 differs between one and two devices ({path})"));
        }
        for _ in 0..reps + 1 {
            let t = Instant::now();
            pm.run(mv).map_err(err)?;
            pm.wait(mv).map_err(err)?;
            tt.push(t.elapsed().as_secs_f64());
        }
        if pm.read("act1").map_err(err)? != pm.read("act").map_err(err)? {
            return Err(format!("multi-device: @move did not copy @act to device 1 ({path})"));
        }
        if paths.iter().all(|(p, _, _): &(String, f64, f64)| *p != path) {
            paths.push((path, harness::median(&pt2), harness::median(&tt)));
        }
        last = Some(pm);
    }
    let mut pm = last.ok_or("no two-device executor")?;
    // The hand-written host-staged copy: read into a host buffer, write it to the other device.
    let bytes = args.activation * 4;
    let mut buf = vec![0u8; bytes as usize];
    let mut other = vec![0u8; bytes as usize];
    let (mut hand_s, mut up_s, mut memcpy_s) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let t = Instant::now();
        pm.device(0).ok_or("no device 0")?.read_into("act", &mut buf).map_err(err)?;
        hand_s.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        other.copy_from_slice(&buf);
        memcpy_s.push(t.elapsed().as_secs_f64());
        std::hint::black_box(&other);
        let t = Instant::now();
        pm.bind("act1", &buf).map_err(err)?;
        up_s.push(t.elapsed().as_secs_f64());
    }
    let (down, up) = (harness::median(&hand_s), harness::median(&up_s));
    let gbps = |s: f64| bytes as f64 / s / 1e9;
    let mut body = harness::header(
        "One graph on several devices (issue 34)",
        &device_name,
        &args.common,
        &format!("wall time of `run` + `wait` (one `run` submits to every device, one `wait` waits for all), median of {reps} runs after a checked one"),
    );
    let _ = writeln!(
        body,
        "Input (bench/src/runtime/multi_device.rs): *wide*: {} independent chains of {} kernels, each {} dependent `fma`s per element over its chain's {} floats; *manual*: chain c on device c mod D with its memory (`device(N)`, `home(N)`), `@w` replicated; *placed*: the unplaced graph through `place-devices` (`--devices D`, 10 GB/s assumed) and `split-devices`. All run by `MultiExecutor` (docs/multi-device.md: every stage graph submitted at once, ordered by timeline semaphores across the devices, transfers as device copies through host memory imported into both). Devices: {}. Every chain's output equals the one-device run's, bit for bit.\n",
        args.chains, args.length, args.fmas, args.n, where_.join("; ")
    );
    let _ = writeln!(body, "| devices | manual ms | manual / one device | place-devices ms | place-devices / one device | place-devices / manual |");
    let _ = writeln!(body, "|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(body, "| 1 | {} | 1.00x | — | — | — |", harness::ms(one_s));
    for r in &rows {
        let _ = writeln!(body, "| {} |", r.join(" | "));
    }
    let _ = writeln!(
        body,
        "\nTargets: throughput on 2 devices ≥ 1.8x one device's, on 4 ≥ 3.4x; `place-devices` within 10 % of the manual placement.\n"
    );
    let _ = writeln!(
        body,
        "*pipeline*: two kernels on a {} MiB activation on device 0, one transfer to device 1 ({names}), two kernels there; on one device the same four kernels and a device copy.\n",
        (args.activation * 4) >> 20
    );
    let _ = writeln!(body, "| | ms | GB/s |");
    let _ = writeln!(body, "|---|---:|---:|");
    let _ = writeln!(body, "| pipeline on one device | {} | — |", harness::ms(harness::median(&pt1)));
    for (path, total, transfer) in &paths {
        let _ = writeln!(body, "| pipeline on two devices, transfers through {path} | {} | — |", harness::ms(*total));
        let _ = writeln!(
            body,
            "| the transfer alone ({} MiB, graph `@move`, run + wait) through {path} | {} | {:.1} |",
            bytes >> 20,
            harness::ms(*transfer),
            gbps(*transfer)
        );
    }
    let _ = writeln!(body, "| hand-written: device 0 to a host buffer | {} | {:.1} |", harness::ms(down), gbps(down));
    let _ = writeln!(body, "| hand-written: host buffer to device 1 | {} | {:.1} |", harness::ms(up), gbps(up));
    let _ = writeln!(
        body,
        "| hand-written host-staged copy (the two above) | {} | {:.1} |",
        harness::ms(down + up),
        gbps(down + up)
    );
    let _ = writeln!(
        body,
        "| host `memcpy` of the same bytes | {} | {:.1} |",
        harness::ms(harness::median(&memcpy_s)),
        gbps(harness::median(&memcpy_s))
    );
    let _ = writeln!(
        body,
        "\n*imported host memory*: one host allocation imported into both devices (`VK_EXT_external_memory_host`); the source device copies into it in its stage graph, the destination copies out of it in its next one, ordered by timeline semaphores (shared between the devices where they allow it, as the H200s do; relayed by a host thread otherwise), no CPU copy. *host buffer*: each device holds its own copy of the `home(host)` memory; between the stages the host reads device 0's into a host buffer and writes it to device 1 (docs/multi-device.md)."
    );
    // Whether the two devices could share a timeline semaphore instead of the relay.
    let gpus = cmdgraph_executor::vulkan_devices()
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.kind == DeviceKind::DiscreteGpu)
        .count();
    let probe = match gpus {
        0 | 1 => cmdgraph_executor::vk::semaphore_probe::shared_timeline(0, 0, false),
        _ => cmdgraph_executor::vk::semaphore_probe::shared_timeline(0, 1, true),
    };
    eprintln!("multi-device: semaphore probe: {probe}");
    let _ = writeln!(
        body,
        "\nA timeline semaphore of one device shared with the other through an OPAQUE_FD (`executor/src/vk/semaphore_probe.rs`; the runtime shares its progress semaphores this way where every device allows it, and relays them through a host thread otherwise): {probe}.\n"
    );
    harness::finish(&args.common, "multi-device", &body)
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
