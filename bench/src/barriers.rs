//! `cmdgraph-bench barriers`: the barrier curve. A queue records, through `cmdgraph_sycl`,
//! two kernels and a barrier, over and over (the DPC++ pattern whose recording time grows
//! exponentially with the number of barriers); the recorded graph is then optimized with
//! `eliminate-barriers` and `transitive-reduction`. Time per barrier should be flat.

use cmdgraph_passes::{lookup, PassContext};
use cmdgraph_sycl::{
    args, Context, Device, DeviceInfo, GraphProps, ModifiableGraph, Queue, QueueProps, RecordingProps, Usm,
};
use std::fmt::Write as _;
use std::time::Instant;

/// Kernels the recording launches.
const KERNELS: &str = r#"
kernel @increment(%x: buf<f32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %one = const 1.0 : f32
  %r = add %v, %one
  store %x[%i], %r
}
"#;

/// One row of the curve.
#[derive(Clone, Debug)]
pub struct Row {
    /// Barriers recorded.
    pub barriers: usize,
    /// Nodes recorded (two kernels per barrier).
    pub nodes: usize,
    /// Seconds to record.
    pub record: f64,
    /// Seconds to convert the recorded graph to a module (`to_module`).
    pub module: f64,
    /// Seconds for eliminate-barriers + transitive-reduction.
    pub optimize: f64,
    /// Barriers left after optimizing.
    pub barriers_left: usize,
    /// Edges before and after optimizing.
    pub edges: (usize, usize),
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Records `barriers` rounds of two kernels and a barrier, then optimizes.
pub fn measure(barriers: usize) -> Result<Row, String> {
    let dev = Device::new(0, DeviceInfo::default());
    let ctx = Context::new(0, std::slice::from_ref(&dev));
    ctx.register_kernels_from_text(KERNELS).map_err(err)?;
    let inc = ctx.kernel("increment").ok_or("kernel not registered")?;
    let x = Usm::device::<f32>(&ctx, 4).map_err(err)?;
    let y = Usm::device::<f32>(&ctx, 4).map_err(err)?;
    let q = Queue::new(&ctx, &dev, QueueProps::none()).map_err(err)?;
    let graph = ModifiableGraph::new(&ctx, &dev, GraphProps::none()).map_err(err)?;
    let start = Instant::now();
    graph.begin_recording(&q, RecordingProps::default()).map_err(err)?;
    for _ in 0..barriers {
        q.parallel_for(&inc, 4u64, args![&x], &[]).map_err(err)?;
        q.parallel_for(&inc, 4u64, args![&y], &[]).map_err(err)?;
        q.ext_oneapi_submit_barrier().map_err(err)?;
    }
    graph.end_recording();
    let record = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let (mut module, _) = graph.to_module();
    let module_secs = start.elapsed().as_secs_f64();
    let count_edges = |m: &cmdgraph_ir::Module| m.graphs.iter().map(|(_, g)| g.edges.len()).sum::<usize>();
    let edges_before = count_edges(&module);
    let nodes = module.graphs.iter().map(|(_, g)| g.nodes.len()).sum();

    let start = Instant::now();
    let mut ctx_p = PassContext::default();
    for name in ["eliminate-barriers", "transitive-reduction"] {
        let pass = lookup(name).ok_or_else(|| format!("no pass {name}"))?;
        (pass.run)(&mut module, &mut ctx_p).map_err(err)?;
    }
    let optimize = start.elapsed().as_secs_f64();
    let barriers_left = module
        .graphs
        .iter()
        .flat_map(|(_, g)| g.nodes.iter())
        .filter(|(_, n)| matches!(n.kind, cmdgraph_ir::NodeKind::Barrier { .. }))
        .count();
    cmdgraph_ir::verify::verify(&module).map_err(|_| "the optimized graph does not verify".to_string())?;
    Ok(Row {
        barriers,
        nodes,
        record,
        module: module_secs,
        optimize,
        barriers_left,
        edges: (edges_before, count_edges(&module)),
    })
}

/// The Markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| barriers | nodes | edges recorded | record ms | record µs / barrier | to_module ms | optimize ms | optimize µs / barrier | barriers left | edges after |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let per = |s: f64| s * 1e6 / r.barriers.max(1) as f64;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.2} | {:.1} | {:.1} | {:.2} | {} | {} |",
            r.barriers,
            r.nodes,
            r.edges.0,
            r.record * 1e3,
            per(r.record),
            r.module * 1e3,
            r.optimize * 1e3,
            per(r.optimize),
            r.barriers_left,
            r.edges.1
        );
    }
    out
}
