//! Helpers shared by the builder tests: a device and context, kernels in `.cgir` text,
//! and the round trip every built graph must survive (print, parse, compare, verify).

#![allow(dead_code)]

use cmdgraph_ir::text::{parse, print};
use cmdgraph_ir::verify::{verify_with, VerifyOptions};
use cmdgraph_ir::{EdgeKind, Module};
use cmdgraph_sycl::*;

/// Kernels the tests launch.
pub const KERNELS: &str = r#"
// y = a * x + y
kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

// out = s * in
kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}

// x += 1
kernel @increment(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}

// b += a
kernel @add(%a: buf<f32, read>, %b: buf<f32, read_write>) {
  %i = global_id 0
  %va = load %a[%i]
  %vb = load %b[%i]
  %r = add %vb, %va
  store %b[%i], %r
}

// c -= a
kernel @subtract(%a: buf<f32, read>, %c: buf<f32, read_write>) {
  %i = global_id 0
  %va = load %a[%i]
  %vc = load %c[%i]
  %r = sub %vc, %va
  store %c[%i], %r
}

// b -= 1, c -= 1
kernel @decrement(%b: buf<f32, read_write>, %c: buf<f32, read_write>) {
  %i = global_id 0
  %one = const 1.0 : f32
  %vb = load %b[%i]
  %rb = sub %vb, %one
  store %b[%i], %rb
  %vc = load %c[%i]
  %rc = sub %vc, %one
  store %c[%i], %rc
}

// x[0] += 1 (one work-item)
kernel @bump(%x: buf<u32, read_write>) {
  %z = const 0 : u32
  %v = load %x[%z]
  %one = const 1 : u32
  %r = add %v, %one
  store %x[%z], %r
}

// x[i] = x[i] * 2 (2D: row-major over global_range 1)
kernel @double2d(%x: buf<f32, read_write>) {
  %r = global_id 0
  %c = global_id 1
  %w = global_range 1
  %row = mul %r, %w
  %i = add %row, %c
  %v = load %x[%i]
  %two = const 2.0 : f32
  %d = mul %v, %two
  store %x[%i], %d
}

// out = a + b
kernel @relu(%in: buf<f32, read>, %out: buf<f32, write>) {
  %i = global_id 0
  %v = load %in[%i]
  %zero = const 0.0 : f32
  %r = max %v, %zero
  store %out[%i], %r
}

kernel @negate(%in: buf<f32, read>, %out: buf<f32, write>) {
  %i = global_id 0
  %v = load %in[%i]
  %r = neg %v
  store %out[%i], %r
}
"#;

/// A test environment: one full-featured device in one context, the test kernels
/// registered.
pub struct Env {
    pub dev: Device,
    pub ctx: Context,
}

impl Env {
    pub fn new() -> Env {
        let dev = Device::new(0, DeviceInfo::default());
        let ctx = Context::new(0, std::slice::from_ref(&dev));
        ctx.register_kernels_from_text(KERNELS).expect("test kernels register");
        Env { dev, ctx }
    }

    pub fn kernel(&self, name: &str) -> KernelRef {
        self.ctx.kernel(name).expect("kernel registered")
    }

    pub fn queue(&self, props: QueueProps) -> Queue {
        Queue::new(&self.ctx, &self.dev, props).expect("queue")
    }

    pub fn named_queue(&self, name: &str, props: QueueProps) -> Queue {
        Queue::named(&self.ctx, &self.dev, name, props).expect("queue")
    }

    pub fn graph(&self, props: GraphProps) -> ModifiableGraph {
        ModifiableGraph::new(&self.ctx, &self.dev, props).expect("graph")
    }

    pub fn usm_f32(&self, data: &[f32]) -> Usm {
        let u = Usm::device::<f32>(&self.ctx, data.len() as u64).expect("usm");
        u.write(data).expect("write");
        u
    }
}

/// Prints the graph's module, parses it back, checks that the result is the same module
/// and that it verifies; returns the text.
pub fn roundtrip(g: &ModifiableGraph) -> String {
    let (m, _) = g.to_module();
    roundtrip_module(&m)
}

/// [`roundtrip`] for a module.
pub fn roundtrip_module(m: &Module) -> String {
    let text = print(m);
    let back = match parse(&text) {
        Ok(back) => back,
        Err(d) => {
            panic!("printed module does not parse:\n{}\n{text}", cmdgraph_ir::diag::render_all(&d, "built", &text))
        }
    };
    assert_eq!(&back, m, "parse(print(m)) != m for:\n{text}");
    assert_eq!(print(&back), text, "printing is not a fixed point");
    // Races are allowed, as finalize allows them: SYCL does not forbid racy graphs.
    let options = VerifyOptions { allow_races: true };
    let errors: Vec<_> = match verify_with(m, &options) {
        Ok(()) => Vec::new(),
        Err(d) => d.into_iter().filter(|d| d.severity == cmdgraph_ir::diag::Severity::Error).collect(),
    };
    if !errors.is_empty() {
        panic!("built module does not verify:\n{}\n{text}", cmdgraph_ir::diag::render_all(&errors, "built", &text));
    }
    text
}

/// The graph's edges as (from name, to name, provenance), in creation order.
pub fn edges(g: &ModifiableGraph) -> Vec<(String, String, EdgeKind)> {
    let (m, h) = g.to_module();
    let graph = &m.graphs[h];
    graph
        .edges
        .iter()
        .map(|(_, e)| (graph.nodes[e.from].name.clone(), graph.nodes[e.to].name.clone(), e.kind))
        .collect()
}

/// (from, to, kind) with names of nodes.
pub fn edge(from: &Node, to: &Node, kind: EdgeKind) -> (String, String, EdgeKind) {
    (from.name(), to.name(), kind)
}

/// Asserts that `r` failed with `code` and §22 row `row`; returns the message.
#[track_caller]
pub fn expect_err<T: std::fmt::Debug>(r: Result<T>, code: Errc, row: u32) -> String {
    match r {
        Ok(v) => panic!("expected {code:?} row {row}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!((e.code, e.row), (code, row), "wrong error: {e}");
            assert!(!e.message.is_empty());
            e.message
        }
    }
}

/// `@saxpy` with a separate multiply and add: each rounds once on every runtime (an `fma`
/// may round once or twice, docs/ir.md), so the runtimes agree byte for byte.
pub const SAXPY_EXACT: &str = r#"
kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %p = mul %a, %xv
  %r = add %p, %yv
  store %y[%i], %r
}
"#;

/// `n` full-precision pseudo-random floats in [`lo`, `lo + width`) from `seed` (xorshift).
pub fn random_f32(n: usize, seed: u32, lo: f32, width: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 24) as f32 * width + lo
        })
        .collect()
}
