//! `cmdgraph run` of a graph that spans devices (docs/cli.md, docs/multi-device.md): two
//! logical devices of the default device (llvmpipe in CI), validation on. The outputs match
//! the interpreter under the float rules (`interp --compare`) and, bit for bit, the same
//! graph run on one device; `--set` reaches the second device; `--profile` shows every stage
//! graph's nodes on its device; what the multi-device path does not do is refused before a
//! device is touched.

use std::path::Path;
use std::process::{Command, Output};

const PLACED: &str = "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
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

graph @g properties(updatable) {
  dyn %s = 1.5 : f32
  %k0 = kernel @axpy range(256) args(@w, @a, 1.25)
  %t = memcpy @b, @a, 1024 after(%k0)
  %k1 = kernel @axpy range(256) args(@w, @b, %s) device(1) after(%t)
  %back = memcpy @out, @b, 1024 after(%k1)
  %k2 = kernel @axpy range(256) args(@a, @out, 0.5) after(%back)
}
";

fn cmdgraph(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// 256 full-precision floats in [1, 2) from `seed`, as raw little-endian bytes.
fn floats(seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..256)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (1.0f32 + (x >> 40) as f32 / (1u64 << 24) as f32).to_le_bytes()
        })
        .collect()
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

#[test]
fn a_graph_across_two_devices_runs_as_on_one_device_and_the_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("placed.cgir"), PLACED).unwrap();
    let one = PLACED.replace(" replicated", "").replace(" home(1)", "").replace(" device(1)", "");
    std::fs::write(d.join("one.cgir"), one).unwrap();
    std::fs::write(d.join("a.bin"), floats(1)).unwrap();
    std::fs::write(d.join("w.bin"), floats(2)).unwrap();
    let o = cmdgraph(&["compile", &path(d, "placed.cgir"), "-o", &path(d, "placed.cgb")]);
    assert!(o.status.success(), "{}", text(&o));
    let inputs = ["--input", &format!("a={}", path(d, "a.bin")), "--input", &format!("w={}", path(d, "w.bin"))];
    let steps = ["--runs", "2", "--then", "--set", "s=-0.734375", "--runs", "1"];
    // Two devices: the compiled bundle, then the IR text compiled on the spot.
    for (source, out) in [("placed.cgb", "two"), ("placed.cgir", "two_ir")] {
        let mut args = vec!["run", "--validation"];
        let (o_out, o_b) =
            (format!("out={}", path(d, &format!("{out}_out.bin"))), format!("b={}", path(d, &format!("{out}_b.bin"))));
        let src = path(d, source);
        args.extend([src.as_str(), "--output", &o_out, "--output", &o_b]);
        args.extend(inputs);
        args.extend(steps);
        let o = cmdgraph(&args);
        let t = text(&o);
        assert!(o.status.success(), "{source}: {t}");
        assert!(t.contains("graph @g: 3 run(s) on 2 devices"), "{source}: {t}");
        assert!(t.contains("step 2: set %s = -0.734375 : f32; 1 run(s)"), "{source}: {t}");
    }
    // One device, the same graph unplaced.
    let (o_out, o_b) = (format!("out={}", path(d, "one_out.bin")), format!("b={}", path(d, "one_b.bin")));
    let one_src = path(d, "one.cgir");
    let mut args = vec!["run", "--validation", one_src.as_str(), "--output", &o_out, "--output", &o_b];
    args.extend(inputs);
    args.extend(steps);
    let o = cmdgraph(&args);
    assert!(o.status.success(), "{}", text(&o));
    for name in ["out", "b"] {
        let one = std::fs::read(d.join(format!("one_{name}.bin"))).unwrap();
        for two in ["two", "two_ir"] {
            assert!(
                one == std::fs::read(d.join(format!("{two}_{name}.bin"))).unwrap(),
                "@{name} of {two} differs from one device"
            );
        }
    }
    // The interpreter on the source, under the float rules (llvmpipe rounds `fma` twice).
    let (c_out, c_b) = (format!("out={}", path(d, "two_out.bin")), format!("b={}", path(d, "two_b.bin")));
    let placed_src = path(d, "placed.cgir");
    let mut args = vec!["interp", placed_src.as_str(), "--compare", &c_out, "--compare", &c_b];
    args.extend(inputs);
    args.extend(steps);
    let o = cmdgraph(&args);
    assert!(o.status.success(), "{}", text(&o));
    // Refused before a device is touched.
    let bundle = path(d, "placed.cgb");
    let o = cmdgraph(&["run", bundle.as_str(), "--devices", "0"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("the module names 2 devices and `--devices` gives 1"), "{}", text(&o));
}

#[test]
fn profile_shows_every_stage_graph_with_its_nodes_on_its_device() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let src = PLACED.replace("properties(updatable)", "properties(updatable, enable_profiling)");
    std::fs::write(d.join("p.cgir"), src).unwrap();
    let o = cmdgraph(&["run", "--validation", &path(d, "p.cgir"), "--profile", "--runs", "2"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("profile of the last run, per stage graph"), "{t}");
    // Each stage graph under its heading, each node in the table of the device it ran on.
    let table = |heading: &str| {
        let at = t.find(heading).unwrap_or_else(|| panic!("no `{heading}` in {t}"));
        let rest = &t[at + heading.len()..];
        rest[..rest.find("\n  run ").expect("a run row")].to_string()
    };
    let first = table("@g.s0.d0 (stage 0, device 0):");
    assert!(first.contains("%k0 ") && first.contains("%t.out "), "{first}");
    let second = table("@g.s1.d1 (stage 1, device 1):");
    assert!(second.contains("%t.in ") && second.contains("%k1 ") && second.contains("%back.out "), "{second}");
    assert!(!second.contains("%k0 "), "{second}");
    let third = table("@g.s2.d0 (stage 2, device 0):");
    assert!(third.contains("%back.in ") && third.contains("%k2 "), "{third}");
    // Durations are numbers that add up: every node ends after it starts.
    for line in [first, second, third].iter().flat_map(|x| x.lines()).filter(|l| l.trim_start().starts_with('%')) {
        let cols: Vec<f64> = line.split_whitespace().skip(1).map(|c| c.parse().unwrap()).collect();
        assert!(cols.len() == 3 && cols[1] >= cols[0] && (cols[1] - cols[0] - cols[2]).abs() < 0.002, "{line}");
    }
}
