//! An application that builds a command graph with the SYCL API and runs it from a
//! precompiled bundle on the default Vulkan device (llvmpipe when there is no GPU). README,
//! "AOT from the API" has the two commands:
//!
//! ```sh
//! # 1. build: run once on the interpreter, export the graph's module, compile its bundle
//! cargo run -p cmdgraph-sycl --example aot_app -- export target/aot \
//!   && cargo run -p cmdgraph-cli -- compile target/aot/cgk1-*.cgir --bundle-dir target/aot/bundles
//! # 2. run: the same graph, found by key, on Vulkan (no LLVM in this process)
//! cargo run -p cmdgraph-sycl --example aot_app -- run target/aot/bundles
//! ```
//!
//! Both modes print the result's checksum, so the two runs can be compared by eye.

use cmdgraph_sycl::*;

const KERNELS: &str = r#"
kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}
"#;

const N: u64 = 1 << 16;

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, dir) = match args.as_slice() {
        [mode, dir] if mode == "export" || mode == "run" => (mode.as_str(), std::path::PathBuf::from(dir)),
        _ => return Err("usage: aot_app export DIR | aot_app run BUNDLE_DIR".into()),
    };
    let dev = Device::new(0, DeviceInfo::default());
    let ctx = Context::new(0, std::slice::from_ref(&dev));
    if mode == "run" {
        ctx.run_from_bundles(BundleSource { dir: dir.clone(), validation: false });
    }
    ctx.register_kernels_from_text(KERNELS)?;
    let saxpy = ctx.kernel("saxpy").ok_or("kernel @saxpy is not registered")?;
    let x = Usm::device::<f32>(&ctx, N)?;
    let y = Usm::device::<f32>(&ctx, N)?;
    x.write(&(0..N).map(|i| (i as f32).sin()).collect::<Vec<f32>>())?;
    y.write(&(0..N).map(|i| (i as f32).cos()).collect::<Vec<f32>>())?;

    // A chain of four saxpy steps, each after the last.
    let graph = ModifiableGraph::new(&ctx, &dev, GraphProps::none())?;
    let mut last: Option<Node> = None;
    for step in 0..4 {
        let a = 0.5 + step as f32 * 0.25;
        let props = match &last {
            Some(n) => NodeProps::depends_on(&[n]),
            None => NodeProps::none(),
        };
        last = Some(graph.add(|h| h.parallel_for(&saxpy, N, args![&x, &y, a]), props)?);
    }
    let exec = graph.finalize(FinalizeProps::none())?;
    if mode == "export" {
        let path = exec.export_module(&dir)?;
        println!("exported {}", path.display());
    }
    let q = Queue::new(&ctx, &dev, QueueProps::none())?;
    q.ext_oneapi_graph(&exec, &[])?.wait()?;
    let out = y.read::<f32>()?;
    let sum: f64 = out.iter().map(|v| f64::from(*v)).sum();
    println!("ran on {}: y[1] = {}, sum(y) = {sum:.6}", exec.runtime().unwrap_or_default(), out[1]);
    Ok(())
}
