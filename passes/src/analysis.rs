//! Graph views built for algorithms: compressed adjacency and a stable topological order.
//! Side tables, recomputed by whoever needs them; the [`Graph`] stays the storage.

use cmdgraph_ir::Graph;

/// Compressed sparse adjacency over node indices (`Handle::index`), in edge creation order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Csr {
    /// Builds adjacency from `(from, to)` pairs over `n` vertices.
    pub fn from_pairs(n: usize, pairs: &[(u32, u32)]) -> Csr {
        let mut offsets = vec![0u32; n + 1];
        for &(from, _) in pairs {
            offsets[from as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; offsets[n] as usize];
        for &(from, to) in pairs {
            let slot = &mut fill[from as usize];
            targets[*slot as usize] = to;
            *slot += 1;
        }
        Csr { offsets, targets }
    }

    /// Adjacency from its parts, built by a caller that counted first: `offsets` starts at
    /// 0, never decreases and ends at `targets.len()`, each target below `offsets.len() - 1`.
    pub(crate) fn from_parts(offsets: Vec<u32>, targets: Vec<u32>) -> Csr {
        Csr { offsets, targets }
    }

    /// Successors of a graph's nodes.
    pub fn successors(graph: &Graph) -> Csr {
        let pairs: Vec<_> = graph.edges.iter().map(|(_, e)| (e.from.index() as u32, e.to.index() as u32)).collect();
        Csr::from_pairs(graph.nodes.len(), &pairs)
    }

    /// Predecessors of a graph's nodes.
    pub fn predecessors(graph: &Graph) -> Csr {
        let pairs: Vec<_> = graph.edges.iter().map(|(_, e)| (e.to.index() as u32, e.from.index() as u32)).collect();
        Csr::from_pairs(graph.nodes.len(), &pairs)
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether there are no vertices.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Neighbours of vertex `v`.
    pub fn neighbours(&self, v: u32) -> &[u32] {
        let (lo, hi) = (self.offsets[v as usize] as usize, self.offsets[v as usize + 1] as usize);
        &self.targets[lo..hi]
    }
}

/// A topological order of the vertices of `succ` (Kahn's algorithm, ties broken by the
/// lowest index so the order is deterministic and follows creation order where it can).
/// `None` if there is a cycle.
pub fn topological_order(succ: &Csr) -> Option<Vec<u32>> {
    let n = succ.len();
    let mut indegree = vec![0u32; n];
    for v in 0..n as u32 {
        for &w in succ.neighbours(v) {
            indegree[w as usize] += 1;
        }
    }
    let mut ready = std::collections::BinaryHeap::new();
    for (v, &d) in indegree.iter().enumerate() {
        if d == 0 {
            ready.push(std::cmp::Reverse(v as u32));
        }
    }
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(v)) = ready.pop() {
        order.push(v);
        for &w in succ.neighbours(v) {
            indegree[w as usize] -= 1;
            if indegree[w as usize] == 0 {
                ready.push(std::cmp::Reverse(w));
            }
        }
    }
    (order.len() == n).then_some(order)
}
