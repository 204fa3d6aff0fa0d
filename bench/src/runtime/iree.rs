//! IREE as a standing peer of `fusion-run` and `mlp` (issue 32, item 5): the JSON
//! `scripts/iree_peer.py run` writes on the GPU machine (`--iree-json`), read into a table
//! appended to each suite's section. IREE compiles the same workloads (MLIR, linalg on tensors)
//! ahead of time to Vulkan SPIR-V; `iree-benchmark-module` reports wall time per call with the
//! inputs resident on the device, not GPU time, so its column sits beside cmdgraph's
//! `run` + `wait` wall time where the suite has one (mlp) and beside GPU time otherwise, said so.

use super::harness::read;
use std::fmt::Write as _;
use std::path::Path;

/// The peer's results, or why there are none.
pub struct Iree {
    json: Option<serde_json::Value>,
    reason: String,
}

impl Iree {
    /// Reads `path` when given.
    pub fn load(path: Option<&Path>) -> Result<Iree, String> {
        let Some(path) = path else { return Ok(Iree { json: None, reason: "not run".into() }) };
        let v: serde_json::Value =
            serde_json::from_str(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        if v.get("available").and_then(|a| a.as_bool()) != Some(true) {
            let why = v.get("reason").and_then(|r| r.as_str()).unwrap_or("unavailable").to_string();
            return Ok(Iree { json: None, reason: why });
        }
        Ok(Iree { json: Some(v), reason: String::new() })
    }

    fn list(&self, key: &str) -> Vec<&serde_json::Value> {
        self.json
            .as_ref()
            .and_then(|v| v.get(key))
            .and_then(|l| l.as_array())
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    }

    /// IREE's wall ms per call of the K-step chain over `n` floats.
    pub fn fusion(&self, k: usize, n: u64) -> Option<f64> {
        let e = self.list("fusion").into_iter().find(|e| {
            e.get("k").and_then(|v| v.as_u64()) == Some(k as u64) && e.get("n").and_then(|v| v.as_u64()) == Some(n)
        })?;
        e.get("wall_ms")?.as_f64()
    }

    /// IREE's wall ms per call of the MLP of `shape` (`8x512x4`).
    pub fn mlp(&self, shape: &str) -> Option<f64> {
        let e = self.list("mlp").into_iter().find(|e| e.get("shape").and_then(|s| s.as_str()) == Some(shape))?;
        e.get("wall_ms")?.as_f64()
    }

    /// The sentence naming the peer's build and target.
    fn how(&self) -> String {
        match &self.json {
            None => format!("IREE peer: not measured in this run ({}).", self.reason),
            Some(v) => format!(
                "IREE peer (`scripts/iree_peer.py`): IREE {} (`iree-compile --iree-hal-target-backends=vulkan-spirv \
                 --iree-vulkan-target={}`; IREE names no Hopper target, `ampere` is the nearest), the same \
                 workload in MLIR, timed by `iree-benchmark-module --device=vulkan` on the same GPU in the same \
                 machine session: wall ms per call, median of its repetitions, inputs resident on the device.",
                v.get("iree").and_then(|s| s.as_str()).unwrap_or("?"),
                v.get("target").and_then(|s| s.as_str()).unwrap_or("?"),
            ),
        }
    }

    /// The fusion-run block: per (K, n), cmdgraph's fused GPU ms beside IREE's wall ms.
    pub fn fusion_table(&self, rows: &[(usize, u64, f64)]) -> String {
        let mut s = format!("\n{}\n", self.how());
        if self.json.is_none() {
            return s;
        }
        s.push_str("\n| K | elements | cmdgraph fused GPU ms | IREE wall ms per call | IREE / cmdgraph |\n|---:|---:|---:|---:|---:|\n");
        for &(k, n, fused) in rows {
            let cell = self
                .fusion(k, n)
                .map_or(("n/a".into(), "—".into()), |w| (format!("{w:.3}"), format!("{:.2}", w / fused)));
            let _ = writeln!(s, "| {k} | 2^{} | {fused:.3} | {} | {} |", n.trailing_zeros(), cell.0, cell.1);
        }
        s
    }

    /// The mlp block: per shape, cmdgraph's GPU and `run` + `wait` ms beside IREE's wall ms.
    pub fn mlp_table(&self, rows: &[(String, f64, f64)]) -> String {
        let mut s = format!("\n{}\n", self.how());
        if self.json.is_none() {
            return s;
        }
        s.push_str("\n| batch×hidden×layers | cmdgraph GPU ms | cmdgraph host ms (run + wait) | IREE wall ms per call | IREE / cmdgraph host |\n|---|---:|---:|---:|---:|\n");
        for (shape, gpu, host) in rows {
            let cell = self
                .mlp(shape)
                .map_or(("n/a".into(), "—".into()), |w| (format!("{w:.3}"), format!("{:.2}", w / host)));
            let _ = writeln!(s, "| {shape} | {gpu:.3} | {host:.3} | {} | {} |", cell.0, cell.1);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_found_by_workload_and_a_missing_peer_says_why() {
        let v = serde_json::json!({"available": true, "iree": "3.13.0", "target": "ampere",
            "fusion": [{"k": 4, "n": 16777216, "wall_ms": 0.2}], "mlp": [{"shape": "8x512x4", "wall_ms": 0.5}]});
        let iree = Iree { json: Some(v), reason: String::new() };
        assert_eq!(iree.fusion(4, 1 << 24), Some(0.2));
        assert_eq!(iree.fusion(8, 1 << 24), None);
        let t = iree.fusion_table(&[(4, 1 << 24, 0.1)]);
        assert!(t.contains("| 4 | 2^24 | 0.100 | 0.200 | 2.00 |"), "{t}");
        let t = iree.mlp_table(&[("8x512x4".into(), 0.09, 0.25)]);
        assert!(t.contains("| 8x512x4 | 0.090 | 0.250 | 0.500 | 2.00 |"), "{t}");
        let none = Iree { json: None, reason: "no Vulkan".into() };
        assert!(none.fusion_table(&[(4, 1, 1.0)]).contains("not measured in this run (no Vulkan)"));
    }
}
