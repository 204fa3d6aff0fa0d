//! Small graph utilities for the error paths: a compressed adjacency list, a shortest path
//! (to show a cycle) and an acyclicity test, all without recursion. The allocation checks
//! answer their many reachability questions with topo.rs and batch.rs instead.

/// Adjacency lists of `n` nodes in compressed form.
pub(super) struct Adjacency {
    /// `targets[offsets[i]..offsets[i + 1]]` are the neighbours of node `i`.
    offsets: Vec<usize>,
    targets: Vec<usize>,
}

impl Adjacency {
    /// Builds the lists from `(from, to)` index pairs; pairs out of range are skipped.
    pub(super) fn new(n: usize, pairs: &[(usize, usize)]) -> Adjacency {
        let mut offsets = vec![0usize; n + 1];
        for &(from, to) in pairs {
            if from < n && to < n {
                offsets[from + 1] += 1;
            }
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0usize; offsets[n]];
        for &(from, to) in pairs {
            if from < n && to < n {
                targets[fill[from]] = to;
                fill[from] += 1;
            }
        }
        Adjacency { offsets, targets }
    }

    /// Number of nodes.
    pub(super) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Neighbours of `i`.
    pub(super) fn next(&self, i: usize) -> &[usize] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => self.targets.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// A shortest path from `from` to `to` (both included), if there is one.
    pub(super) fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        let n = self.len();
        if from >= n || to >= n {
            return None;
        }
        let mut parent = vec![usize::MAX; n];
        parent[from] = from;
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(i) = queue.pop_front() {
            if i == to {
                let mut path = vec![to];
                let mut cur = to;
                while cur != from {
                    cur = parent[cur];
                    path.push(cur);
                }
                path.reverse();
                return Some(path);
            }
            for &j in self.next(i) {
                if parent[j] == usize::MAX {
                    parent[j] = i;
                    queue.push_back(j);
                }
            }
        }
        None
    }

    /// Whether the graph has no cycle (Kahn's algorithm).
    pub(super) fn is_acyclic(&self) -> bool {
        let n = self.len();
        let mut indegree = vec![0usize; n];
        for &t in &self.targets {
            indegree[t] += 1;
        }
        let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        let mut done = 0;
        while let Some(i) = ready.pop() {
            done += 1;
            for &j in self.next(i) {
                indegree[j] -= 1;
                if indegree[j] == 0 {
                    ready.push(j);
                }
            }
        }
        done == n
    }
}
