//! Adjacency lists of a graph in compressed form (two flat arrays instead of a list per
//! node): the verifier's topological order and the executor's schedule check use them on
//! graphs of 10^5–10^6 nodes, where a `Vec` per node cost an allocation each.

/// Adjacency lists in compressed form over `u32` node indices.
pub struct Csr {
    /// `targets[offsets[i]..offsets[i + 1]]` are the neighbours of node `i`.
    offsets: Vec<usize>,
    targets: Vec<u32>,
}

impl Csr {
    /// Lists of `n` nodes from `(from, to)` pairs, each list in pair order. Every pair must
    /// be in range (callers filter).
    pub fn new(n: usize, pairs: &[(u32, u32)]) -> Csr {
        let mut offsets = vec![0usize; n + 1];
        for &(from, _) in pairs {
            offsets[from as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; pairs.len()];
        for &(from, to) in pairs {
            let slot = &mut fill[from as usize];
            targets[*slot] = to;
            *slot += 1;
        }
        Csr { offsets, targets }
    }

    /// The same lists with every edge reversed, each list in the order of its sources.
    pub fn transpose(&self) -> Csr {
        let n = self.len();
        let mut offsets = vec![0usize; n + 1];
        for &t in &self.targets {
            offsets[t as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; self.targets.len()];
        for from in 0..n {
            for &to in self.next(from) {
                let slot = &mut fill[to as usize];
                targets[*slot] = from as u32;
                *slot += 1;
            }
        }
        Csr { offsets, targets }
    }

    /// Every list's entries, concatenated (e.g. to count in-degrees).
    pub fn all_targets(&self) -> &[u32] {
        &self.targets
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Neighbours of `i` (none when out of range).
    pub fn next(&self, i: usize) -> &[u32] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => self.targets.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}
