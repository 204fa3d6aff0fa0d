//! Every `examples/*.cgir` parses, verifies, is already in canonical form, and printing it is
//! a deterministic fixed point: `print(parse(print(m))) == print(m)`, byte for byte.

use std::path::{Path, PathBuf};

fn examples() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cgir"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect();
    out.sort();
    out
}

fn parse_or_panic(name: &str, text: &str) -> cmdgraph_ir::Module {
    cmdgraph_ir::text::parse(text)
        .unwrap_or_else(|diags| panic!("{name} does not parse:\n{}", cmdgraph_ir::diag::render_all(&diags, name, text)))
}

#[test]
fn the_examples_are_all_there() {
    let names: Vec<String> =
        examples().iter().map(|(p, _)| p.file_name().unwrap_or_default().to_string_lossy().into_owned()).collect();
    for expected in [
        "dynamic_update.cgir",
        "mlp_layer.cgir",
        "reduction.cgir",
        "saxpy_chain.cgir",
        "stencil2d.cgir",
        "subgraph.cgir",
        "temporaries_host_task.cgir",
    ] {
        assert!(names.iter().any(|n| n == expected), "examples/{expected} is missing (have {names:?})");
    }
}

#[test]
fn every_example_parses_and_verifies() {
    for (path, text) in examples() {
        let name = path.display().to_string();
        let module = parse_or_panic(&name, &text);
        if let Err(diags) = cmdgraph_ir::verify::verify(&module) {
            panic!("{name} does not verify:\n{}", cmdgraph_ir::diag::render_all(&diags, &name, &text));
        }
        assert!(!module.graphs.is_empty(), "{name} defines no graph");
        assert!(!module.kernels.is_empty(), "{name} defines no kernel");
    }
}

#[test]
fn every_example_is_in_canonical_form() {
    for (path, text) in examples() {
        let name = path.display().to_string();
        let printed = cmdgraph_ir::text::print(&parse_or_panic(&name, &text));
        if printed != text {
            let line = printed
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .map_or_else(|| printed.lines().count().min(text.lines().count()) + 1, |i| i + 1);
            panic!(
                "{name} is not in canonical form (first difference at line {line}):\n--- file\n{}\n--- printed\n{}",
                text.lines().nth(line - 1).unwrap_or("<end of file>"),
                printed.lines().nth(line - 1).unwrap_or("<end of file>")
            );
        }
    }
}

#[test]
fn printing_is_a_deterministic_fixed_point() {
    for (path, text) in examples() {
        let name = path.display().to_string();
        let module = parse_or_panic(&name, &text);
        let first = cmdgraph_ir::text::print(&module);
        let second = cmdgraph_ir::text::print(&module);
        assert_eq!(first, second, "{name}: two prints of one module differ");
        let reparsed = parse_or_panic(&format!("{name} (printed)"), &first);
        assert!(reparsed == module, "{name}: parse(print(m)) != m");
        assert_eq!(cmdgraph_ir::text::print(&reparsed), first, "{name}: print(parse(print(m))) != print(m)");
    }
}

// ---------------------------------------------------------------------------------------
// The examples compute what their header comments say: each one runs on the reference
// interpreter with seeded random inputs, in creation order and in random valid orders with
// the race detector on, and its outputs are compared with the same computation in Rust.
// ---------------------------------------------------------------------------------------

use cmdgraph_interp::{Interpreter, Order, RunOptions};
use cmdgraph_ir::types::{LitValue, Literal, ScalarType};
use cmdgraph_ir::{ArgValue, MemRef, Pointer};

/// Orders each example runs in: creation order, then two random valid schedules.
const ORDERS: [Order; 3] = [Order::Creation, Order::Random(11), Order::Random(12)];

fn example(name: &str) -> cmdgraph_ir::Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_or_panic(name, &text)
}

/// Seeded uniform floats in `[lo, hi)` (splitmix64; no dependency).
fn random_f32(seed: u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let unit = ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * unit
        })
        .collect()
}

fn new_interp(module: &cmdgraph_ir::Module) -> Interpreter {
    Interpreter::new(module).unwrap_or_else(|e| panic!("Interpreter::new: {e}"))
}

fn bind(interp: &mut Interpreter, name: &str, values: &[f32]) {
    interp.bind_as::<f32>(name, values).unwrap_or_else(|e| panic!("bind {name}: {e}"));
}

fn read(interp: &Interpreter, name: &str) -> Vec<f32> {
    interp.read_as::<f32>(name).unwrap_or_else(|e| panic!("read {name}: {e}"))
}

/// Runs graph `graph` once in `order` with the race detector on; fails on any race.
fn run(interp: &mut Interpreter, exec: cmdgraph_interp::ExecId, order: Order, what: &str) {
    let opts = RunOptions { order, check_races: true, fuel: Some(1 << 36), ..RunOptions::default() };
    let stats = interp.run_with(exec, &opts).unwrap_or_else(|e| panic!("{what}: run in {order:?} failed: {e}"));
    assert!(stats.races.is_empty(), "{what}: races in {order:?}: {:?}", stats.races);
    assert!(stats.work_items > 0, "{what}: no kernel ran");
}

fn assert_close(what: &str, got: &[f32], want: &[f32], tolerance: f32) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let scale = w.abs().max(1.0);
        assert!((g - w).abs() <= tolerance * scale, "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn saxpy_chain_computes_minus_half_of_two_x_plus_y_plus_x() {
    let module = example("saxpy_chain.cgir");
    let mut interp = new_interp(&module);
    let (x, y) = (random_f32(1, 65536, -4.0, 4.0), random_f32(2, 65536, -4.0, 4.0));
    bind(&mut interp, "x", &x);
    bind(&mut interp, "y", &y);
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| -(0.5 * (2.0 * x + y)) + x).collect();
    let exec = interp.finalize("main").unwrap_or_else(|e| panic!("finalize: {e}"));
    for order in ORDERS {
        run(&mut interp, exec, order, "saxpy_chain");
        assert_close("z", &read(&interp, "z"), &want, 1e-5);
    }
}

#[test]
fn stencil2d_residual_matches_four_jacobi_sweeps() {
    let (h, w) = (128usize, 256usize);
    let mut a: Vec<f32> = (0..h * w)
        .map(|i| {
            let (r, c) = (i / w, i % w);
            if (48..80).contains(&r) && (112..144).contains(&c) {
                100.0
            } else {
                0.0
            }
        })
        .collect();
    let sweep = |src: &[f32]| -> Vec<f32> {
        let mut dst = src.to_vec();
        for r in 1..h - 1 {
            for c in 1..w - 1 {
                let i = r * w + c;
                let around = (src[i - 1] + src[i + 1]) + (src[i - w] + src[i + w]);
                dst[i] = around.mul_add(0.125, src[i] * 0.5);
            }
        }
        dst
    };
    let mut b = sweep(&a);
    a = sweep(&b);
    b = sweep(&a);
    a = sweep(&b);
    let want = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(want > 1.0, "the reference residual should be large after four sweeps, got {want}");

    let mut interp = new_interp(&example("stencil2d.cgir"));
    let exec = interp.finalize("jacobi").unwrap_or_else(|e| panic!("finalize: {e}"));
    for order in ORDERS {
        run(&mut interp, exec, order, "stencil2d");
        assert_close("err", &read(&interp, "err"), &[want], 1e-5);
        assert_close("a", &read(&interp, "a"), &a, 1e-4);
    }
}

#[test]
fn mlp_layer_computes_relu_of_x_times_w_plus_bias() {
    let (m, k, n) = (64usize, 128usize, 64usize);
    let x = random_f32(3, m * k, -1.0, 1.0);
    let w = random_f32(4, k * n, -1.0, 1.0);
    let bias = random_f32(5, n, -1.0, 1.0);
    let want: Vec<f32> = (0..m * n)
        .map(|i| {
            let (r, c) = (i / n, i % n);
            let dot: f32 = (0..k).map(|j| x[r * k + j] * w[j * n + c]).sum();
            (dot + bias[c]).max(0.0)
        })
        .collect();
    assert!(want.contains(&0.0) && want.iter().any(|v| *v > 0.0), "relu should clip some values");
    let mut interp = new_interp(&example("mlp_layer.cgir"));
    bind(&mut interp, "x", &x);
    bind(&mut interp, "w", &w);
    bind(&mut interp, "bias", &bias);
    let exec = interp.finalize("layer").unwrap_or_else(|e| panic!("finalize: {e}"));
    for order in ORDERS {
        run(&mut interp, exec, order, "mlp_layer");
        assert_close("y", &read(&interp, "y"), &want, 1e-4);
    }
}

#[test]
fn reduction_sums_the_data_into_host_memory() {
    let data = random_f32(6, 65536, -1.0, 1.0);
    let want: f64 = data.iter().map(|v| f64::from(*v)).sum();
    let mut interp = new_interp(&example("reduction.cgir"));
    bind(&mut interp, "data", &data);
    let exec = interp.finalize("reduce").unwrap_or_else(|e| panic!("finalize: {e}"));
    for order in ORDERS {
        run(&mut interp, exec, order, "reduction");
        let got = read(&interp, "sum_host");
        assert!((f64::from(got[0]) - want).abs() < 1e-2, "sum: got {}, want {want}", got[0]);
    }
}

#[test]
fn temporaries_host_task_builds_a_normalised_histogram() {
    let module = example("temporaries_host_task.cgir");
    let mut interp = new_interp(&module);
    let samples: Vec<u32> = random_f32(7, 65536, 0.0, 1.0).iter().map(|v| (v * 1e6) as u32).collect();
    let mut counts = vec![0u32; 256];
    for s in &samples {
        counts[(s % 256) as usize] += 1;
    }
    interp.bind_as::<u32>("staging", &samples).unwrap_or_else(|e| panic!("bind staging: {e}"));
    // The host task picks 1 / (number of samples) so that the density sums to one.
    interp.register_callback("pick_scale", |ctx| {
        let staging: Vec<u32> = ctx.read_as("staging")?;
        ctx.write_as("params", 0, &[1.0f32 / staging.len() as f32])
    });
    let want: Vec<f32> = counts.iter().map(|c| *c as f32 * (1.0 / 65536.0)).collect();
    let exec = interp.finalize("histogram_pipeline").unwrap_or_else(|e| panic!("finalize: {e}"));
    // Every run starts from zeroed bins: zero_init for the first, the trailing memset after.
    for order in ORDERS {
        run(&mut interp, exec, order, "temporaries_host_task");
        assert_close("pdf_host", &read(&interp, "pdf_host"), &want, 1e-6);
    }
    let total: f32 = read(&interp, "pdf_host").iter().sum();
    assert!((total - 1.0).abs() < 1e-4, "the density sums to {total}");
}

#[test]
fn subgraph_runs_the_child_twice_and_counts_launches() {
    let mut interp = new_interp(&example("subgraph.cgir"));
    let exec = interp.finalize("pipeline").unwrap_or_else(|e| panic!("finalize: {e}"));
    interp.register_callback("report_progress", |ctx| ctx.read("v").map(|_| ()));
    // v = ramp, twice v -> 0.5 v + 1; w = ramp; out = v + w, then the bias -1.
    let want: Vec<f32> = (0..1024).map(|i| ((i as f32 * 0.5 + 1.0) * 0.5 + 1.0) + i as f32 - 1.0).collect();
    for (runs, order) in ORDERS.into_iter().enumerate() {
        run(&mut interp, exec, order, "subgraph");
        assert_close("out_host", &read(&interp, "out_host"), &want, 1e-6);
        let counter = interp.read_device_global("launches", 0).unwrap_or_else(|e| panic!("launches: {e}"));
        let launches = u32::from_le_bytes(counter[..4].try_into().unwrap_or_else(|_| panic!("short device global")));
        assert_eq!(launches as usize, 2 * (runs + 1), "the child's kernel counts one launch per pass");
    }
}

#[test]
fn dynamic_update_switches_activation_and_parameters() {
    let module = example("dynamic_update.cgir");
    let n = 4096;
    let (input, input_alt, y0, frame) = (
        random_f32(8, n, -1.0, 1.0),
        random_f32(9, n, -1.0, 1.0),
        random_f32(10, n, -1.0, 1.0),
        random_f32(11, n, 0.0, 1.0),
    );
    let mut interp = new_interp(&module);
    bind(&mut interp, "in", &input);
    bind(&mut interp, "in_alt", &input_alt);
    bind(&mut interp, "frame", &frame);
    let blurred: Vec<f32> = (0..n)
        .map(|g| {
            let (l, base) = (g % 256, g - g % 256);
            let left = frame[base + l.max(1) - 1];
            let right = frame[base + (l + 1).min(255)];
            (left + right).mul_add(0.25, frame[g] * 0.5)
        })
        .collect();
    let exec = interp.finalize("infer").unwrap_or_else(|e| panic!("finalize: {e}"));

    let in_alt = module.memory_by_name("in_alt").unwrap_or_else(|| panic!("no @in_alt"));
    let f32_lit = |v: f64| ArgValue::Scalar(Literal { value: LitValue::Float(v), ty: Some(ScalarType::F32) });
    // (active alternative, alpha, source, gain, activation)
    type Act = fn(f32) -> f32;
    let relu: Act = |v| v.max(0.0);
    let leaky: Act = |v| if v > 0.0 { v } else { v * 0.01 };
    let gelu: Act = |v| 0.5 * v * (1.0 + (0.797_884_6 * (0.044_715f32).mul_add(v * v * v, v)).tanh());
    let cases: [(u32, f32, bool, f32, Act); 3] =
        [(0, 2.0, false, 1.0, relu), (1, -1.0, true, 2.0, leaky), (2, 0.5, true, 2.0, gelu)];
    for (active, alpha, alt, gain, act) in cases {
        interp.set_active(exec, "act", active).unwrap_or_else(|e| panic!("set_active: {e}"));
        interp.update_param(exec, "alpha", f32_lit(f64::from(alpha))).unwrap_or_else(|e| panic!("alpha: {e}"));
        interp
            .update_param(exec, "gain", ArgValue::Bytes(gain.to_le_bytes().to_vec()))
            .unwrap_or_else(|e| panic!("gain: {e}"));
        if alt {
            let ptr = ArgValue::Pointer(Pointer { base: MemRef::Memory(in_alt), offset: 0 });
            interp.update_param(exec, "src", ptr).unwrap_or_else(|e| panic!("src: {e}"));
        }
        // y is updated in place, so each case starts from the same y.
        bind(&mut interp, "y", &y0);
        run(&mut interp, exec, Order::Random(u64::from(active)), "dynamic_update");
        let src = if alt { &input_alt } else { &input };
        let y: Vec<f32> = src.iter().zip(&y0).map(|(x, y)| alpha.mul_add(*x, *y)).collect();
        let want: Vec<f32> = y.iter().map(|v| act(*v) * gain).collect();
        assert_close(&format!("out (alternative {active})"), &read(&interp, "out"), &want, 1e-5);
        assert_close("blurred", &read(&interp, "blurred"), &blurred, 1e-6);
    }
}
