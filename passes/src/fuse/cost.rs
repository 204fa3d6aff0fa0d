//! The cost model: bytes moved per work-item, then launches.
//!
//! Extraction picks, per e-class, the cheapest term under [`BytesCost`]: a load of the
//! group's input state costs its element size, a final store its element size, every other
//! operation 1/16 of a byte (compute is cheap next to memory traffic, but among equally
//! cheap terms the one with fewer operations wins). A load or store that still goes through
//! a memory state other than the input (a store the rules could not forward) costs
//! [`UNFORWARDED`], so extraction takes the forwarded form whenever the rules found it.
//!
//! egg's extractor sums the costs of children as trees; the term it returns is a DAG in
//! which each e-class appears once, and the bytes the pass reports ([`dag_bytes`]) are
//! counted on that DAG, so a value used twice is loaded and computed once.

use super::lang::{Term, DEAD_PREFIX, LIVE_PREFIX};
use egg::{CostFunction, EGraph, Id, Language, RecExpr, SymbolLang};

/// Cost of one byte of memory traffic, in cost units (one unit per operation).
pub const BYTE: u64 = 16;
/// Cost of a load or store that still needs an intermediate memory state.
pub const UNFORWARDED: u64 = 1 << 40;
/// Launch overhead in modelled bytes (reported separately from bytes; used when a
/// single number is wanted): about the traffic a launch costs in time on a GPU.
pub const LAUNCH_BYTES: u64 = 4096;

/// Bytes moved plus operations (see the module comment).
pub struct BytesCost<'a> {
    egraph: &'a EGraph<SymbolLang, ()>,
    elem_bytes: Vec<u64>,
}

impl<'a> BytesCost<'a> {
    /// The cost function for a term's e-graph.
    pub fn new(egraph: &'a EGraph<SymbolLang, ()>, term: &Term) -> BytesCost<'a> {
        BytesCost { egraph, elem_bytes: term.mems.iter().map(|m| m.elem.size()).collect() }
    }

    fn mem_bytes(&self, class: Id) -> u64 {
        self.egraph[class].nodes.iter().find_map(|n| leaf_bytes(n.op.as_str(), &self.elem_bytes)).unwrap_or(0)
    }
}

fn leaf_bytes(op: &str, elem_bytes: &[u64]) -> Option<u64> {
    let k: usize = op.strip_prefix(LIVE_PREFIX).or_else(|| op.strip_prefix(DEAD_PREFIX))?.parse().ok()?;
    elem_bytes.get(k).copied()
}

impl CostFunction<SymbolLang> for BytesCost<'_> {
    type Cost = u64;
    fn cost<C>(&mut self, enode: &SymbolLang, mut costs: C) -> u64
    where
        C: FnMut(Id) -> u64,
    {
        let children = enode.fold(0u64, |sum, id| sum.saturating_add(costs(id)));
        let own = match enode.op.as_str() {
            "ld" | "out" => enode.children.first().map(|&m| self.mem_bytes(m)).unwrap_or(0).saturating_mul(BYTE),
            "st" | "vbound" | "hbound" => UNFORWARDED,
            _ if enode.is_leaf() => 0,
            _ => 1,
        };
        own.saturating_add(children)
    }
}

/// Bytes one work-item of the extracted term moves: every load of the input state and every
/// final store, each once (the term is a DAG).
pub fn dag_bytes(expr: &RecExpr<SymbolLang>, term: &Term) -> u64 {
    let elem: Vec<u64> = term.mems.iter().map(|m| m.elem.size()).collect();
    let nodes = expr.as_ref();
    nodes
        .iter()
        .filter(|n| matches!(n.op.as_str(), "ld" | "out"))
        .filter_map(|n| n.children.first().and_then(|&c| nodes.get(usize::from(c))))
        .filter_map(|m| leaf_bytes(m.op.as_str(), &elem))
        .sum()
}
