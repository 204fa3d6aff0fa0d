//! `cmdgraph inspect`: read a bundle (version, hash and references checked) and summarize
//! it: pipeline, graphs with node counts before and after, kernel variants, schedule,
//! memory plan.

use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_ir::bundle::{ArgFieldKind, Bundle, GraphPlan, Segment};
use cmdgraph_ir::{Module, NodeKind};
use std::fmt::Write as _;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph inspect app.cgb              summary of every graph
  cmdgraph inspect --schedule app.cgb   also list every stage's nodes
  cmdgraph inspect --memory app.cgb     also print the memory plan reports";

/// Arguments of `cmdgraph inspect`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct InspectArgs {
    /// The bundle (`.cgb`); `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// List the nodes of every stage and segment.
    #[arg(long)]
    pub schedule: bool,
    /// Print the memory planner's report of every graph.
    #[arg(long)]
    pub memory: bool,
}

/// Runs `cmdgraph inspect`.
pub fn run(args: &InspectArgs) -> Outcome {
    let input = io::read_input_bytes(&args.input)?;
    let bundle =
        Bundle::from_bytes(&input.bytes).map_err(|e| Failure::Rejected(format!("error: `{}`: {e}", input.name)))?;
    let parse = |what: &str, text: &str| {
        cmdgraph_ir::text::parse(text).map_err(|d| {
            let first = d.first().map(|d| d.message.clone()).unwrap_or_default();
            Failure::Rejected(format!(
                "error: `{}`: malformed bundle: its {what} module does not parse: {first}",
                input.name
            ))
        })
    };
    let source = parse("source", &bundle.source)?;
    let optimized = parse("optimized", &bundle.optimized)?;
    io::write_output(None, &summary(&input.name, &bundle, &source, &optimized, args))
}

fn summary(name: &str, b: &Bundle, source: &Module, optimized: &Module, args: &InspectArgs) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "bundle {name}");
    let _ = writeln!(out, "  format version  {}", b.format_version);
    let _ = writeln!(out, "  content hash    {}", b.content_hash);
    let pipeline = if b.pipeline.is_empty() { "(none)" } else { b.pipeline.as_str() };
    let _ = writeln!(out, "  pipeline        {pipeline}");
    let spirv: usize = b.kernels.iter().map(|k| k.spirv.len() * 4).sum();
    let _ = writeln!(out, "kernels: {} variant(s), {spirv} bytes of SPIR-V", b.kernels.len());
    for (i, k) in b.kernels.iter().enumerate() {
        let [x, y, z] = k.workgroup_size;
        let locals: Vec<String> = k
            .layout
            .fields
            .iter()
            .filter_map(|f| match f.kind {
                ArgFieldKind::Local { capacity, .. } => Some(capacity.to_string()),
                _ => None,
            })
            .collect();
        let locals = if locals.is_empty() { String::new() } else { format!(", local capacity {}", locals.join("/")) };
        let _ = writeln!(
            out,
            "  [{i}] @{} work-group {x}x{y}x{z}, {} item(s)/invocation, SPIR-V {} bytes, argument block {} bytes, {} slot(s){locals}",
            k.kernel,
            k.items_per_invocation,
            k.spirv.len() * 4,
            k.layout.block_size,
            k.layout.slots.len()
        );
    }
    for plan in &b.graphs {
        graph_summary(&mut out, b, plan, source, optimized, args);
    }
    out
}

fn graph_summary(
    out: &mut String,
    b: &Bundle,
    plan: &GraphPlan,
    source: &Module,
    optimized: &Module,
    args: &InspectArgs,
) {
    let count = |m: &Module| m.graph_by_name(&plan.name).map(|h| m.graphs[h].nodes.len());
    let before = count(source).map_or("-".to_string(), |n| n.to_string());
    let after = count(optimized).map_or("-".to_string(), |n| n.to_string());
    let _ = writeln!(out, "graph @{}: {before} node(s) in the source, {after} after the pipeline", plan.name);
    let device = plan.segments.iter().filter(|s| matches!(s, Segment::Device { .. })).count();
    let stages: usize = plan
        .segments
        .iter()
        .map(|s| match s {
            Segment::Device { stages } => stages.len(),
            Segment::Host { .. } => 0,
        })
        .sum();
    let barriers = stages.saturating_sub(device);
    let _ = writeln!(
        out,
        "  schedule: {} segment(s) ({device} device, {} host), {stages} stage(s), {barriers} barrier(s)",
        plan.segments.len(),
        plan.segments.len() - device
    );
    if args.schedule {
        for (i, s) in plan.segments.iter().enumerate() {
            match s {
                Segment::Host { node } => {
                    let _ = writeln!(out, "    segment {i}: host %{node}");
                }
                Segment::Device { stages } => {
                    let _ = writeln!(out, "    segment {i}: device");
                    for (j, nodes) in stages.iter().enumerate() {
                        let names: Vec<String> = nodes.iter().map(|n| format!("%{n}")).collect();
                        let _ = writeln!(out, "      stage {j}: {}", names.join(" "));
                    }
                }
            }
        }
    }
    let naive = naive_pool(optimized, &plan.name, plan.memory.alignment);
    if plan.memory.offsets.is_empty() {
        let _ = writeln!(out, "  memory: no graph-owned allocations");
    } else {
        let saved = if naive > 0 { 100.0 * (1.0 - plan.memory.size as f64 / naive as f64) } else { 0.0 };
        let _ = writeln!(
            out,
            "  memory: pool {} bytes for {} allocation(s) (naive {naive} bytes, {saved:.0}% less), alignment {}",
            plan.memory.size,
            plan.memory.offsets.len(),
            plan.memory.alignment
        );
    }
    if args.memory && !plan.memory.report.is_empty() {
        for line in plan.memory.report.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    let alternatives = plan.launches.iter().filter(|l| l.alternative.is_some()).count();
    let _ = writeln!(
        out,
        "  launches: {} kernel node(s), {alternatives} dynamic alternative(s); origins: {} node(s) from other graphs",
        plan.launches.len() - alternatives,
        plan.origins.len()
    );
    for l in plan.launches.iter().filter(|_| args.schedule) {
        let Some(k) = b.kernels.get(l.kernel as usize) else { continue };
        let alt = l.alternative.map_or(String::new(), |a| format!(" alternative {a}"));
        let [x, y, z] = k.workgroup_size;
        let _ = writeln!(out, "    %{}{alt} -> [{}] @{} {x}x{y}x{z}", l.node, l.kernel, k.kernel);
    }
}

/// The pool with no reuse: every allocation of the graph at its own aligned offset.
fn naive_pool(m: &Module, graph: &str, alignment: u64) -> u64 {
    let Some(h) = m.graph_by_name(graph) else { return 0 };
    let a = alignment.max(1);
    m.graphs[h]
        .nodes
        .iter()
        .filter_map(|(_, n)| match &n.kind {
            NodeKind::AsyncMalloc { elem, count, .. } => {
                Some(elem.size().saturating_mul(*count).div_ceil(a).saturating_mul(a))
            }
            _ => None,
        })
        .fold(0u64, u64::saturating_add)
}
