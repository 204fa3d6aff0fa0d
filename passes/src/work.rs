//! A count of the elements the graph passes visit, for tests that hold each pass to
//! near-linear work (issue 17): `passes/tests/scaling.rs` runs a pass on generated graphs
//! of 10^3 and 10^4 nodes and fails when the count grows much more than tenfold. A count,
//! not a timing, so it is the same on every machine. Passes add to it where a per-element
//! loop could go quadratic (frontier merges, worklists, chain labels, sweeps); it never
//! changes what a pass does.

use std::cell::Cell;

thread_local! {
    static WORK: Cell<u64> = const { Cell::new(0) };
}

/// Adds `items` visited elements.
pub(crate) fn count(items: usize) {
    WORK.with(|w| w.set(w.get().saturating_add(items as u64)));
}

/// Elements the passes have visited on this thread so far.
pub fn visited() -> u64 {
    WORK.with(Cell::get)
}
