//! Packaging stays linear in the module's size (issue 17): the work `compile_module` does
//! after the passes (origins, node names, launch tables), counted by
//! [`packaging_work`], grows about tenfold from a 10^3-node graph to a 10^4-node one. A
//! count, not a timing, so it is the same on every machine. Before the fix, each origin was
//! checked with a scan of all the graph's nodes (quadratic: 7 s at 10^5 nodes).

use cmdgraph_codegen::bundle::{compile_module, packaging_work, KernelCompiler};
use cmdgraph_codegen::{CodegenError, Options, Variant};
use cmdgraph_ir::bundle::{ArgLayout, CompiledKernel};
use cmdgraph_ir::{Arg, Handle, Kernel, Launch, Module};
use cmdgraph_passes::{lookup, PassInfo, DEFAULT_PIPELINE};
use std::fmt::Write;

/// One variant per kernel; no code.
struct Fake;

impl KernelCompiler for Fake {
    fn choose_variant(&self, _: &Module, _: Handle<Kernel>, l: &Launch, _: &[Arg]) -> Result<Variant, CodegenError> {
        Ok(Variant {
            workgroup_size: [64, 1, 1],
            dims: l.dims() as u8,
            local_capacity: Vec::new(),
            predicated: false,
            loop_tail: None,
        })
    }

    fn compile_kernel(
        &self,
        m: &Module,
        k: Handle<Kernel>,
        v: &Variant,
        _: &Options,
    ) -> Result<CompiledKernel, CodegenError> {
        let name = m.kernels[k].name.clone();
        Ok(CompiledKernel {
            kernel: name.clone(),
            entry: name,
            workgroup_size: v.workgroup_size,
            items_per_invocation: 1,
            spirv: vec![0x0723_0203],
            layout: ArgLayout::default(),
        })
    }
}

/// Blocks of four nodes: a temporary, two kernels through it (which fusion merges, leaving
/// origins), its free; each block after the one before.
fn module(nodes: usize) -> Module {
    let mut text = String::from(
        "kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}

usm @x : f32[1024]
usm @y : f32[1024]

graph @big {
",
    );
    for b in 0..nodes / 4 {
        let after = if b == 0 { String::new() } else { format!(" after(%f{})", b - 1) };
        let _ = writeln!(text, "  %m{b} = async_malloc f32[1024]{after}");
        // Neighbouring blocks launch different ranges, so fusion stops at block boundaries.
        let n = if b % 2 == 0 { 1024 } else { 512 };
        let _ = writeln!(text, "  %a{b} = kernel @scale range({n}) args(@x, %m{b}, 2.0) after(%m{b})");
        let _ = writeln!(text, "  %c{b} = kernel @scale range({n}) args(%m{b}, @y, 0.5) after(%a{b})");
        let _ = writeln!(text, "  %f{b} = async_free %m{b} after(%c{b})");
    }
    text.push_str("}\n");
    cmdgraph_ir::text::parse(&text).expect("generated module parses")
}

/// Packaging work and origins in the bundle for a graph of `nodes` nodes.
fn work(nodes: usize) -> (u64, usize) {
    let passes: Vec<&'static PassInfo> = DEFAULT_PIPELINE.iter().filter_map(|n| lookup(n)).collect();
    let m = module(nodes);
    let before = packaging_work();
    let (bundle, _) = compile_module(&m, &passes, &Options::default(), &Fake).expect("compiles");
    (packaging_work() - before, bundle.graphs.iter().map(|g| g.origins.len()).sum())
}

#[test]
fn packaging_work_grows_linearly_from_1000_to_10000_nodes() {
    let (small, small_origins) = work(1_000);
    let (large, large_origins) = work(10_000);
    eprintln!("packaging work: {small} at 10^3 nodes ({small_origins} origins), {large} at 10^4 ({large_origins})");
    assert!(small >= 500, "packaging visited {small} items for 1000 nodes: the counter is not counting");
    assert!(small_origins >= 100, "only {small_origins} origins: the test graph no longer exercises them");
    // Linear is 10x; quadratic would be 100x. Allow slack for fixed costs.
    assert!(large <= 12 * small, "packaging work grew {large} / {small} from 10^3 to 10^4 nodes: not linear");
}
