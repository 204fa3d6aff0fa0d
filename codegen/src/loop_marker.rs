//! The marker by which a module records the most loop back-edges one invocation takes
//! (docs/abi.md, "Loop back-edges"), for the executor's llvmpipe warning: llvmpipe stops
//! every loop of an invocation after 65535 iterations in all, silently (lower/budget.rs).

use crate::vectorize::mark_processed;

/// The `OpModuleProcessed` string by which a module records the most loop back-edges one
/// invocation takes; one definition for codegen and the executor, in the bundle's ABI.
pub use cmdgraph_ir::bundle::LOOP_BACK_EDGES_MARKER;

/// `words` with the marker saying at most `back_edges` loop back-edges per invocation
/// (`None`: unbounded), after the module's other debug instructions.
pub fn mark_loop_back_edges(words: &[u32], back_edges: Option<u128>) -> Vec<u32> {
    let n = back_edges.map_or_else(|| "unbounded".to_string(), |n| n.to_string());
    mark_processed(words, &format!("{LOOP_BACK_EDGES_MARKER}{n}"))
}

/// The back-edge count that `processed` (a module's `OpModuleProcessed` strings) records:
/// `None` without a marker, `Some(None)` for `unbounded` or one that does not parse (two
/// markers: the larger).
pub fn marked_loop_back_edges(processed: &[String]) -> Option<Option<u128>> {
    let mut found: Option<Option<u128>> = None;
    for text in processed {
        let Some(n) = text.strip_prefix(LOOP_BACK_EDGES_MARKER) else { continue };
        let n = n.parse::<u128>().ok();
        found = Some(match found {
            None => n,
            Some(m) => m.zip(n).map(|(a, b)| a.max(b)),
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_reads_back() {
        assert_eq!(marked_loop_back_edges(&["cmdgraph loop_back_edges 12500".into()]), Some(Some(12500)));
        assert_eq!(marked_loop_back_edges(&["cmdgraph loop_back_edges unbounded".into()]), Some(None));
        assert_eq!(marked_loop_back_edges(&["cmdgraph loop_back_edges x".into()]), Some(None));
        assert_eq!(marked_loop_back_edges(&["other".into()]), None);
        let two = ["cmdgraph loop_back_edges 3".to_string(), "cmdgraph loop_back_edges 9".to_string()];
        assert_eq!(marked_loop_back_edges(&two), Some(Some(9)));
        // Not a module: unchanged, never a panic.
        assert_eq!(mark_loop_back_edges(&[1, 2], Some(4)), vec![1, 2]);
    }
}
