//! The fusion suite: element-wise chains of K kernels through graph-owned temporaries, the
//! examples, and one graph of about 10^4 nodes, optimized by `fuse-kernels`.

use cmdgraph_ir::graph::NodeKind;
use cmdgraph_ir::Module;
use cmdgraph_passes::fuse::legality;
use cmdgraph_passes::PassContext;
use std::time::Instant;

/// One row of the table.
pub struct Row {
    /// What was optimized.
    pub name: String,
    /// Nodes in the input graph(s).
    pub nodes: usize,
    /// Kernel nodes before and after.
    pub kernels: (usize, usize),
    /// Modelled bytes moved by element-wise kernels before and after (fused kernels are
    /// element-wise too, so one model counts both).
    pub bytes: (u64, u64),
    /// Best optimizer time in seconds.
    pub secs: f64,
    /// E-nodes over all groups after saturation.
    pub egraph: u64,
}

/// A chain `x -> t0 -> ... -> y` of `k` kernels over `n` elements; `chains` copies side by side.
pub fn chain_text(k: usize, n: u64, chains: usize) -> String {
    let mut s = String::from(
        "kernel @step(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {\n  %i = global_id 0\n  %v = load %in[%i]\n  %m = mul %v, %s\n  %r = add %m, %v\n  store %out[%i], %r\n}\n",
    );
    for c in 0..chains {
        s.push_str(&format!("usm @x{c} : f32[{n}]\nusm @y{c} : f32[{n}]\n"));
    }
    s.push_str("graph @g {\n");
    for c in 0..chains {
        let mut src = format!("@x{c}");
        let mut prev: Option<String> = None;
        for j in 0..k {
            let dst = if j + 1 == k { format!("@y{c}") } else { format!("%c{c}t{j}") };
            let mut after: Vec<String> = prev.iter().cloned().collect();
            if j + 1 < k {
                s.push_str(&format!("  %c{c}t{j} = async_malloc f32[{n}]\n"));
                after.push(format!("%c{c}t{j}"));
            }
            let after = if after.is_empty() { String::new() } else { format!(" after({})", after.join(", ")) };
            s.push_str(&format!("  %c{c}k{j} = kernel @step range({n}) args({src}, {dst}, 0.5){after}\n"));
            if j > 0 {
                s.push_str(&format!("  %c{c}f{} = async_free %c{c}t{} after(%c{c}k{j})\n", j - 1, j - 1));
            }
            prev = Some(format!("%c{c}k{j}"));
            src = dst;
        }
    }
    s.push_str("}\n");
    s
}

fn kernels(m: &Module) -> usize {
    m.graphs.iter().flat_map(|(_, g)| g.nodes.iter()).filter(|(_, n)| matches!(n.kind, NodeKind::Kernel(_))).count()
}

fn bytes(m: &Module) -> u64 {
    m.graphs
        .iter()
        .flat_map(|(_, g)| g.nodes.handles().filter_map(move |h| legality::candidate(m, g, h)))
        .map(|c| c.bytes.saturating_mul(c.n))
        .sum()
}

/// Parses `text` and measures `fuse-kernels` on it (best of `runs`).
pub fn measure(name: &str, text: &str, runs: usize) -> Result<Row, String> {
    let module = cmdgraph_ir::text::parse(text).map_err(|d| format!("{name}: {} parse errors", d.len()))?;
    let pass = cmdgraph_passes::lookup("fuse-kernels").ok_or("fuse-kernels is not registered")?;
    let mut best = f64::INFINITY;
    let mut out = module.clone();
    let mut egraph = 0;
    for _ in 0..runs.max(1) {
        let mut m = module.clone();
        let mut ctx = PassContext::default();
        let start = Instant::now();
        (pass.run)(&mut m, &mut ctx).map_err(|e| format!("{name}: {e}"))?;
        best = best.min(start.elapsed().as_secs_f64());
        egraph = ctx.stats.get("egraph-nodes").copied().unwrap_or(0);
        out = m;
    }
    cmdgraph_ir::verify::verify(&out)
        .map_err(|d| format!("{name}: the verifier rejected the result ({} errors)", d.len()))?;
    let nodes = module.graphs.iter().map(|(_, g)| g.nodes.len()).sum();
    Ok(Row {
        name: name.to_string(),
        nodes,
        kernels: (kernels(&module), kernels(&out)),
        bytes: (bytes(&module), bytes(&out)),
        secs: best,
        egraph,
    })
}

/// The markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| input | nodes | kernels before | kernels after | modelled bytes before | modelled bytes after | optimize ms | e-graph nodes |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.2} | {} |\n",
            r.name,
            r.nodes,
            r.kernels.0,
            r.kernels.1,
            r.bytes.0,
            r.bytes.1,
            r.secs * 1e3,
            r.egraph
        ));
    }
    s
}
