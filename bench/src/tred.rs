//! `cmdgraph-bench tred`: transitive reduction of random layered DAGs, cmdgraph's
//! [`transitive_reduction`] beside petgraph's `dag_transitive_reduction_closure`.
//!
//! Each measurement runs in a child process of this binary (`tred-one`), so that its peak
//! memory is the child's own high-water mark (`VmHWM` in /proc/self/status; the project
//! allows no `unsafe`, so no counting global allocator) and a run that takes too long or
//! too much memory can be stopped: the child runs under `ulimit -v` and is killed after
//! the timeout. The child prints its time, the memory before and after, and a hash of the
//! kept `(from, to)` pairs so the parent can check that both algorithms agree.
//!
//! Generator ([`layered`]): nodes in layers of [`WIDTH`], numbered layer by layer; every
//! node of a layer but the last gets [`EDGES`] edges to uniformly chosen nodes of the next
//! [`SPAN`] layers, and one node in 64 one more edge [`LONG_SPAN`] layers ahead (beyond the
//! 512-position window of the bitsets, so the bounded search runs). xorshift64 seeded by
//! the node count: the same graph every run.

use cmdgraph_passes::analysis::Csr;
use cmdgraph_passes::reduce::transitive_reduction;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Nodes per layer.
pub const WIDTH: u32 = 100;
/// Edges per node into the next layers.
pub const EDGES: u32 = 3;
/// Layers ahead an edge may go.
pub const SPAN: u32 = 3;
/// Layers ahead of the occasional long edge.
pub const LONG_SPAN: u32 = 12;

/// The edges of the random layered DAG of `n` nodes (node indices are a topological order).
pub fn layered(n: u32) -> Vec<(u32, u32)> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(n);
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut pairs = Vec::with_capacity(n as usize * (EDGES as usize + 1));
    for v in 0..n {
        let layer = v / WIDTH;
        let first = (layer + 1) * WIDTH;
        if first >= n {
            break;
        }
        for _ in 0..EDGES {
            let to = first + (next() % u64::from(SPAN * WIDTH)) as u32;
            pairs.push((v, to.min(n - 1)));
        }
        if next() % 64 == 0 {
            let to = (layer + LONG_SPAN) * WIDTH + (next() % u64::from(WIDTH)) as u32;
            if to < n {
                pairs.push((v, to));
            }
        }
    }
    pairs
}

/// What one child run reports.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Seconds of the reduction call.
    pub secs: f64,
    /// Peak resident memory of the child (bytes).
    pub peak: u64,
    /// Resident memory just before the reduction (input built).
    pub base: u64,
    /// Edges kept.
    pub kept: u64,
    /// Hash of the sorted kept pairs.
    pub hash: u64,
}

fn status_kb(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn fnv(pairs: &BTreeSet<(u32, u32)>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &(a, b) in pairs {
        for byte in a.to_le_bytes().into_iter().chain(b.to_le_bytes()) {
            h = (h ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// The child: builds the input for `algo` and reduces it once; prints one line.
pub fn run_one(algo: &str, n: u32) -> Result<String, String> {
    let pairs = layered(n);
    let kept: BTreeSet<(u32, u32)>;
    let (secs, base);
    match algo {
        "cmdgraph" => {
            let csr = Csr::from_pairs(n as usize, &pairs);
            drop(pairs);
            base = status_kb("VmRSS:");
            let start = Instant::now();
            let keep = transitive_reduction(&csr).ok_or("the generated graph has a cycle")?;
            secs = start.elapsed().as_secs_f64();
            let mut set = BTreeSet::new();
            let mut slot = 0;
            for v in 0..n {
                for &w in csr.neighbours(v) {
                    if keep.get(slot).copied().unwrap_or(false) {
                        set.insert((v, w));
                    }
                    slot += 1;
                }
            }
            kept = set;
        }
        "petgraph" => {
            use petgraph::adj::{List, NodeIndex};
            let mut succ: Vec<Vec<u32>> = vec![Vec::new(); n as usize];
            for &(a, b) in &pairs {
                succ[a as usize].push(b);
            }
            drop(pairs);
            let mut list: List<(), u32> = List::with_capacity(n as usize);
            for _ in 0..n {
                list.add_node();
            }
            for (a, targets) in succ.iter_mut().enumerate() {
                targets.sort_unstable();
                targets.dedup();
                for &b in targets.iter() {
                    list.add_edge(NodeIndex::from(a as u32), NodeIndex::from(b), ());
                }
            }
            drop(succ);
            base = status_kb("VmRSS:");
            let start = Instant::now();
            let (tred, closure) = petgraph::algo::tred::dag_transitive_reduction_closure(&list);
            secs = start.elapsed().as_secs_f64();
            drop(closure);
            kept = tred.edge_indices().filter_map(|e| tred.edge_endpoints(e)).collect();
        }
        other => return Err(format!("unknown algorithm `{other}` (cmdgraph, petgraph)")),
    }
    let peak = status_kb("VmHWM:");
    Ok(format!("{secs} {} {} {} {}", peak * 1024, base * 1024, kept.len(), fnv(&kept)))
}

/// Runs `tred-one` in a child under a memory cap (bytes) and a timeout; `Ok(None)` when it
/// did not finish within them.
pub fn spawn(algo: &str, n: u32, timeout: Duration, mem_cap: u64) -> Result<Option<Outcome>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let script = format!("ulimit -v {}; exec \"$0\" tred-one --algo {algo} --nodes {n}", mem_cap / 1024);
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(exe)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start a child: {e}"))?;
    let start = Instant::now();
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) if status.success() => break,
            Some(_) => return Ok(None),
            None if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        s.read_to_string(&mut out).map_err(|e| e.to_string())?;
    }
    let f: Vec<&str> = out.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| format!("bad child output `{out}`"));
    let secs = f.first().and_then(|v| v.parse::<f64>().ok()).ok_or_else(|| format!("bad child output `{out}`"))?;
    Ok(Some(Outcome { secs, peak: num(1)?, base: num(2)?, kept: num(3)?, hash: num(4)? }))
}

/// One table row.
pub struct Row {
    /// Nodes.
    pub nodes: u32,
    /// Edges in the input.
    pub edges: usize,
    /// cmdgraph's best run (the fastest of the runs).
    pub ours: Outcome,
    /// petgraph's run, `None` when it did not finish.
    pub theirs: Option<Outcome>,
}

/// The Markdown table.
pub fn table(rows: &[Row], timeout: Duration, mem_cap: u64) -> String {
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut out = String::from(
        "| nodes | edges in | edges kept | cmdgraph ms | cmdgraph peak MB (input MB) | petgraph ms | petgraph peak MB (input MB) | speed-up | same edge set |\n|---:|---:|---:|---:|---:|---:|---:|---:|:--|\n",
    );
    for r in rows {
        let (their_ms, their_mem, speedup, same) = match &r.theirs {
            Some(t) => (
                format!("{:.1}", t.secs * 1e3),
                format!("{:.0} ({:.0})", mb(t.peak), mb(t.base)),
                format!("{:.0}×", t.secs / r.ours.secs.max(1e-9)),
                if t.hash == r.ours.hash && t.kept == r.ours.kept { "yes" } else { "**NO**" }.to_string(),
            ),
            None => (
                format!("did not finish in {} s / {} GB", timeout.as_secs(), mem_cap >> 30),
                "-".to_string(),
                format!("> {:.0}×", timeout.as_secs_f64() / r.ours.secs.max(1e-9)),
                "- (no petgraph result)".to_string(),
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.0} ({:.0}) | {} | {} | {} | {} |",
            r.nodes,
            r.edges,
            r.ours.kept,
            r.ours.secs * 1e3,
            mb(r.ours.peak),
            mb(r.ours.base),
            their_ms,
            their_mem,
            speedup,
            same
        );
    }
    out
}
