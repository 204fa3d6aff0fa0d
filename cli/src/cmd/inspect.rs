//! `cmdgraph inspect`: read a bundle, check it exactly as `cmdgraph run` does before it
//! touches Vulkan (the executor's loader: version, hash, IR, layouts, SPIR-V, plans; with
//! `--trust`, the signature by a trusted key, as `run --trust` requires it), and
//! summarize it: pipeline, graphs with node counts before and after, kernel variants,
//! schedule, memory plan. Everything shown as a fact is read from the checked bundle or
//! computed here; the one piece of free text the bundle carries (the planner's report) is
//! shown only under a label saying it is the bundle's own, unchecked text.

use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_ir::bundle::signature::BundleSignature;
use cmdgraph_ir::bundle::{ArgFieldKind, Bundle, GraphPlan, Segment};
use cmdgraph_ir::{Module, NodeKind};
use std::fmt::Write as _;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph inspect app.cgb              summary of every graph
  cmdgraph inspect --schedule app.cgb   also list every stage's nodes
  cmdgraph inspect --memory app.cgb     also print the memory plan reports
  cmdgraph inspect --ir source app.cgb  print the IR the bundle was compiled from
  cmdgraph inspect --trust release.key.pub app.cgb
                                        refuse it, as `run --trust` would, unless signed by that key";

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
    /// Print the IR the bundle carries instead of the summary, after the same checks:
    /// `source` (the module as compiled) or `optimized` (after the pass pipeline).
    #[arg(long, value_name = "WHICH")]
    pub ir: Option<io::BundleIr>,
    /// Require the bundle to be signed by the key in PUBKEYFILE, as `cmdgraph run --trust`
    /// does (repeatable, any one of them will do), so that inspect answers whether `run` with
    /// the same keys would take the bundle. Without it a signature is optional (one that is
    /// present must still verify).
    #[arg(long = "trust", value_name = "PUBKEYFILE")]
    pub trust: Vec<PathBuf>,
    /// Show progress on stderr: `auto` (a terminal, once the work passes a second),
    /// `always` (one line per phase) or `never`.
    #[arg(long, value_name = "WHEN", default_value = "auto")]
    pub progress: crate::progress::When,
}

/// Runs `cmdgraph inspect`.
pub fn run(args: &InspectArgs) -> Outcome {
    let mut shown = crate::progress::Progress::new(args.progress);
    shown.update("reading the bundle", None);
    let input = io::read_input_bytes(&args.input)?;
    let name = &input.name;
    // Keys are read as `run` reads them (same messages for a missing, seed or junk file).
    let trusted_keys = if args.trust.is_empty() {
        None
    } else {
        Some(args.trust.iter().map(|p| super::keygen::read_public_key(p)).collect::<Result<Vec<_>, _>>()?)
    };
    let options = cmdgraph_executor::load::LoadOptions { trusted_keys };
    // The same call `cmdgraph run` makes, with the same trust requirement, so a bundle `run`
    // refuses is refused here too, with the same message (inspect exited 0 on inconsistent
    // bundles, and on bundles `run --trust` refuses, issue 18).
    let reject = |e| load_error(name, &input.bytes, &e);
    shown.update("checking the bundle (format, IR, layouts, SPIR-V, plans)", None);
    let loaded = cmdgraph_executor::load::load_bytes_with(&input.bytes, &options).map_err(reject)?;
    if let Some(which) = args.ir {
        shown.finish();
        return io::write_output(None, which.text(&loaded.bundle));
    }
    shown.update("parsing the source module", None);
    // `run` reads the source only for updates, so a damaged one is reported, not refused:
    // both commands give one answer (issue 28).
    let source = loaded.source();
    let signature = loaded.signature.as_ref();
    shown.update("summarizing", None);
    let mut text = summary(name, &loaded.bundle, signature, source.as_ref().ok().copied(), &loaded.module, args);
    if let Err(e) = source {
        let _ = writeln!(text, "source module: not readable ({e}); graph updates, which need it, will be refused");
    }
    shown.finish();
    io::write_output(None, &text)
}

/// The message of a refused load, the same for `run` and `inspect`. When the file itself is
/// unreadable (not a bundle, another version, framing, hash, payload) the reader's own
/// message, which names byte ranges and both versions: the loader failed on that same
/// condition, and got there only past the trust requirement, so reading again never decodes
/// a payload `--trust` refused. Otherwise the loader's.
pub(crate) fn load_error(name: &str, bytes: &[u8], e: &cmdgraph_executor::ExecError) -> Failure {
    use cmdgraph_executor::ExecError;
    let read = match e {
        ExecError::Malformed(_) | ExecError::Version { .. } | ExecError::Hash(_) => {
            Bundle::read_framing(bytes).and_then(|f| f.decode()).err()
        }
        _ => None,
    };
    match read {
        Some(read) => Failure::Rejected(format!("error: `{name}`: {read}")),
        None => Failure::Rejected(format!("error: `{name}`: {e}")),
    }
}

fn summary(
    name: &str,
    b: &Bundle,
    signature: Option<&BundleSignature>,
    source: Option<&Module>,
    optimized: &Module,
    args: &InspectArgs,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "bundle {name}");
    let _ = writeln!(out, "  format version  {}", b.format_version);
    let _ = writeln!(out, "  content hash    {}", b.content_hash);
    let pipeline = if b.pipeline.is_empty() { "(none)" } else { b.pipeline.as_str() };
    let _ = writeln!(out, "  pipeline        {pipeline}");
    // A signature that does not verify never gets here: the loader refuses it, naming the key.
    // Unsigned bundles get no line, so their summary is what it was before signatures.
    if let Some(s) = signature {
        let _ = writeln!(out, "  signature       ed25519 by key {}, valid", s.key.fingerprint());
    }
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
    source: Option<&Module>,
    optimized: &Module,
    args: &InspectArgs,
) {
    let count = |m: &Module| m.graph_by_name(&plan.name).map(|h| m.graphs[h].nodes.len());
    let before = source.and_then(count).map_or("-".to_string(), |n| n.to_string());
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
    conditional_summary(out, b, optimized, &plan.name);
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
    if args.memory && !plan.memory.offsets.is_empty() {
        memory_details(out, b, plan, optimized);
    }
    let alternatives = plan.launches.iter().filter(|l| l.alternative.is_some()).count();
    let _ = writeln!(
        out,
        "  launches: {} kernel node(s), {alternatives} dynamic alternative(s); origins: {}",
        plan.launches.len() - alternatives,
        origins_summary(plan)
    );
    for o in plan.origins.iter().filter(|_| args.schedule) {
        let _ = writeln!(out, "    {}", origin_line(&plan.name, o));
    }
    for l in plan.launches.iter().filter(|_| args.schedule) {
        let Some(k) = b.kernels.get(l.kernel as usize) else { continue };
        let alt = l.alternative.map_or(String::new(), |a| format!(" alternative {a}"));
        let [x, y, z] = k.workgroup_size;
        let _ = writeln!(out, "    %{}{alt} -> [{}] @{} {x}x{y}x{z}", l.node, l.kernel, k.kernel);
    }
}

/// How the executor runs each conditional node of graph `name` (docs/conditional.md,
/// "Executor"); the same on every device with `VK_EXT_conditional_rendering`, and refused at
/// finalize on one without.
fn conditional_summary(out: &mut String, b: &Bundle, m: &Module, name: &str) {
    let Some(g) = m.graph_by_name(name).map(|h| &m.graphs[h]) else { return };
    for (_, n) in g.nodes.iter() {
        let cmdgraph_ir::NodeKind::Conditional { kind, bodies, .. } = &n.kind else { continue };
        let names: Vec<String> =
            bodies.iter().filter_map(|b| m.graphs.try_get(*b)).map(|b| format!("@{}", b.name)).collect();
        let how = match kind {
            cmdgraph_ir::graph::CondKind::While => {
                let ladder: Vec<String> = cmdgraph_executor::LOOP_LADDER.iter().map(u32::to_string).collect();
                // A loop predicate (docs/abi.md): the body's one kernel writes each round's
                // successor predicate, when the executor finds it on one work-group.
                let body = bodies.first().and_then(|h| m.graphs.try_get(*h));
                let plan = body.and_then(|body| b.graphs.iter().find(|p| p.name == body.name));
                let slots = plan.into_iter().flat_map(|p| &p.launches).filter_map(|l| b.kernels.get(l.kernel as usize));
                let tail = slots.filter_map(|k| k.layout.slots.last()).any(|s| {
                    matches!(s, cmdgraph_ir::bundle::MemorySlot::LoopPredicate { .. })
                });
                format!(
                    "a segment of its own: predicated rounds in chunks of {} (fewer for bodies of many commands), a submission as many rounds as the last run took, more while the condition the last round left is non-zero{}",
                    ladder.join(", "),
                    if tail { "; the body's kernel writes each round's successor predicate itself (a loop predicate: on one work-group, else a predicate dispatch does)" } else { "" }
                )
            }
            _ => "the bodies' kernels test their predicate and return at once when their body does not run; no host round trip".into(),
        };
        let _ = writeln!(out, "  conditional %{}: {} over {}: {how}", n.name, kind.keyword(), names.join(", "));
    }
}

/// What the pipeline made of the graph's nodes, from the origins the bundle records: nodes
/// several source nodes were fused into (`fuse-kernels`) and nodes that came from another
/// graph (`inline-subgraphs`). A node can be both (a fused chain of inlined nodes).
fn origins_summary(plan: &GraphPlan) -> String {
    let fused: Vec<_> = plan.origins.iter().filter(|o| o.sources.len() > 1).collect();
    let absorbed: usize = fused.iter().map(|o| o.sources.len()).sum();
    let inlined = plan.origins.iter().filter(|o| o.sources.iter().any(|(g, _)| *g != plan.name)).count();
    if plan.origins.is_empty() {
        return "none (every node is a source node of this graph)".into();
    }
    format!("{} fused node(s) from {absorbed} node(s), {inlined} node(s) inlined from other graphs", fused.len())
}

/// One origin for `--schedule`: `%k2 fused from %k0, %k1, %k2`, `%s.k inlined from @child %k`,
/// sources of another graph named with it.
fn origin_line(graph: &str, o: &cmdgraph_ir::bundle::NodeOrigin) -> String {
    let names: Vec<String> =
        o.sources.iter().map(|(g, n)| if g == graph { format!("%{n}") } else { format!("@{g} %{n}") }).collect();
    let how = match o.sources.as_slice() {
        [_, _, ..] => "fused from",
        [(g, _)] if g != graph => "inlined from",
        _ => "from",
    };
    format!("%{} {how} {}", o.node, names.join(", "))
}

/// `--memory`: the offsets the executor will bind, with sizes from the optimized module and
/// any offset that leaves the pool or its alignment marked, then the planner's report stored
/// in the bundle under a label. That report is text written at compile time: nothing ties it
/// to the offsets (a damaged or crafted bundle can say anything there), so it is never shown
/// as if it were this command's own finding.
fn memory_details(out: &mut String, b: &Bundle, plan: &GraphPlan, optimized: &Module) {
    let sizes = allocation_sizes(optimized, &plan.name);
    let memory = &plan.memory;
    let a = memory.alignment.max(1);
    let mut naive_at = 0u64;
    let mut naive = true;
    let mut rows = Vec::new();
    for (node, offset) in &memory.offsets {
        let node = node.trim_start_matches('%');
        let size = sizes.iter().find(|(n, _)| n == node).map(|(_, s)| *s);
        naive &= *offset == naive_at;
        naive_at = naive_at.saturating_add(size.unwrap_or(0).div_ceil(a).saturating_mul(a));
        let mut notes = Vec::new();
        match size {
            None => notes.push(format!("not an async_malloc of @{}", plan.name)),
            Some(s) if offset.checked_add(s).is_none_or(|end| end > memory.size) => notes.push("past the pool".into()),
            Some(_) => {}
        }
        if offset % a != 0 {
            notes.push(format!("not a multiple of {a}"));
        }
        let size = size.map_or("-".to_string(), |s| s.to_string());
        rows.push([format!("%{node}"), offset.to_string(), size, notes.join(", ")]);
    }
    // Said only when the offsets are the naive layout and the recorded pipeline has no
    // plan-memory: then that is why there is no reuse.
    let layout = if naive && !b.pipeline.split(',').any(|p| p.trim() == "plan-memory") {
        "naive layout (plan-memory was not in the pipeline)"
    } else if naive {
        "naive layout (no reuse)"
    } else {
        "planned layout"
    };
    let _ = writeln!(out, "    {layout}: offsets the executor binds, sizes from the optimized module");
    let header = ["allocation".to_string(), "offset".into(), "size".into(), String::new()];
    let width = |c: usize| rows.iter().chain([&header]).map(|r| r[c].len()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for r in [&header].into_iter().chain(&rows) {
        let line = format!("      {:<w0$}  {:>w1$}  {:>w2$}  {}", r[0], r[1], r[2], r[3]);
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if !memory.report.is_empty() {
        let _ = writeln!(out, "    report stored in the bundle at compile time (its text as written, not checked):");
        for line in memory.report.lines() {
            let _ = writeln!(out, "      | {line}");
        }
    }
}

/// (node name, bytes) of every `async_malloc` of `graph` in `m`.
fn allocation_sizes(m: &Module, graph: &str) -> Vec<(String, u64)> {
    let Some(h) = m.graph_by_name(graph) else { return Vec::new() };
    m.graphs[h]
        .nodes
        .iter()
        .filter_map(|(_, n)| match &n.kind {
            NodeKind::AsyncMalloc { elem, count, .. } => Some((n.name.clone(), elem.size().saturating_mul(*count))),
            _ => None,
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use cmdgraph_ir::bundle::PoolPlan;

    #[test]
    fn offsets_outside_the_pool_or_alignment_or_module_are_marked() {
        let text = "graph @g {\n  %t = async_malloc f32[64]\n  %f = async_free %t after(%t)\n}\n";
        let module = cmdgraph_ir::text::parse(text).expect("parses");
        let memory = PoolPlan {
            size: 256,
            alignment: 256,
            offsets: vec![("t".into(), 100), ("ghost".into(), 0)],
            report: "all fine\n".into(),
        };
        let plan = GraphPlan { name: "g".into(), segments: vec![], memory, origins: vec![], launches: vec![] };
        let b = Bundle {
            format_version: cmdgraph_ir::bundle::FORMAT_VERSION,
            content_hash: String::new(),
            source: text.into(),
            optimized: text.into(),
            pipeline: "plan-memory".into(),
            kernels: vec![],
            graphs: vec![],
        };
        let mut out = String::new();
        memory_details(&mut out, &b, &plan, &module);
        assert_eq!(
            out,
            "    planned layout: offsets the executor binds, sizes from the optimized module\n\
             \x20     allocation  offset  size\n\
             \x20     %t             100   256  past the pool, not a multiple of 256\n\
             \x20     %ghost           0     -  not an async_malloc of @g\n\
             \x20   report stored in the bundle at compile time (its text as written, not checked):\n\
             \x20     | all fine\n"
        );
    }
}
