//! Compile-time scaling without LLVM: generated graphs (bench/src/generate.rs) through
//! `compile_module` with a stand-in kernel compiler; prints the time of every pass and of
//! packaging, per size.
//!
//! `cargo run --release -p cmdgraph-codegen --example compile_scale -- 1000,10000,100000 [PASSES]`
//! (PASSES: a comma-separated pipeline, default the default pipeline; `-fuse-kernels` style
//! entries drop a pass from it).

#[path = "../../bench/src/generate.rs"]
#[allow(dead_code)]
mod generate;

use cmdgraph_codegen::bundle::{compile_module, KernelCompiler};
use cmdgraph_codegen::{CodegenError, Options, Variant};
use cmdgraph_ir::bundle::{ArgLayout, CompiledKernel};
use cmdgraph_ir::{Arg, Handle, Kernel, Launch, Module};
use cmdgraph_passes::{lookup, PassInfo, DEFAULT_PIPELINE};
use std::time::Instant;

struct Fake;

impl KernelCompiler for Fake {
    fn choose_variant(
        &self,
        _: &Module,
        _: Handle<Kernel>,
        launch: &Launch,
        _: &[Arg],
    ) -> Result<Variant, CodegenError> {
        Ok(Variant {
            workgroup_size: [64, 1, 1],
            dims: launch.dims() as u8,
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
        Ok(CompiledKernel {
            kernel: m.kernels[k].name.clone(),
            entry: m.kernels[k].name.clone(),
            workgroup_size: v.workgroup_size,
            items_per_invocation: 1,
            spirv: vec![0x0723_0203],
            layout: ArgLayout::default(),
        })
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = args
        .get(1)
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![1000, 10_000, 100_000]);
    let mut names: Vec<String> = DEFAULT_PIPELINE.iter().map(|s| s.to_string()).collect();
    if let Some(spec) = args.get(2) {
        if spec.split(',').all(|item| item.starts_with('-')) {
            names.retain(|n| !spec.split(',').any(|item| item[1..] == **n));
        } else {
            names = spec.split(',').map(str::to_string).collect();
        }
    }
    let passes: Vec<&'static PassInfo> = names.iter().filter_map(|n| lookup(n)).collect();
    let repeat: usize = std::env::var("REPEAT").ok().and_then(|r| r.parse().ok()).unwrap_or(1).max(1);
    for n in sizes {
        let text = generate::module_text(n);
        let t = Instant::now();
        let module = cmdgraph_ir::text::parse(&text).unwrap_or_else(|_| panic!("does not parse"));
        let parse = t.elapsed();
        // Per phase, the fastest of `REPEAT` compiles (the machine is shared and noisy).
        let mut best: Vec<(String, f64)> = Vec::new();
        let mut hash = String::new();
        for _ in 0..repeat {
            let (bundle, report) =
                compile_module(&module, &passes, &Options::default(), &Fake).unwrap_or_else(|e| panic!("{e}"));
            let mut row = vec![("verify".to_string(), report.verify.as_secs_f64())];
            row.extend(report.passes.passes.iter().map(|p| (p.pass.to_string(), p.wall.as_secs_f64())));
            row.push(("pipeline".into(), report.passes.total.as_secs_f64()));
            row.push(("packaging".into(), report.packaging.as_secs_f64()));
            row.push(("finishing".into(), report.finishing.as_secs_f64()));
            row.push(("total".into(), report.total.as_secs_f64()));
            if best.is_empty() {
                best = row;
            } else {
                for (b, r) in best.iter_mut().zip(row) {
                    b.1 = b.1.min(r.1);
                }
            }
            hash = bundle.content_hash;
        }
        println!("== {n} nodes (parse {:.1} ms, best of {repeat})", parse.as_secs_f64() * 1e3);
        for (name, t) in &best {
            println!("  {name:28} {:10.2} ms", t * 1e3);
        }
        println!("  hash {hash}");
    }
}
