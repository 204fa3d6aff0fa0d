//! Happens-before reachability over a graph's edges: a compressed adjacency list built
//! for one check and breadth-first searches over it (no recursion, any graph size).

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

    /// The same lists with every edge reversed.
    pub(super) fn reversed(n: usize, pairs: &[(usize, usize)]) -> Adjacency {
        let flipped: Vec<(usize, usize)> = pairs.iter().map(|&(a, b)| (b, a)).collect();
        Adjacency::new(n, &flipped)
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

/// Repeated reachability searches over one graph that share their scratch memory, so that
/// many small queries on a large graph cost what they visit, not the graph's size each.
pub(super) struct Search {
    /// `stamp[i] == epoch` marks node `i` as reached by the current search.
    stamp: Vec<u32>,
    /// `target[i] == epoch` marks node `i` as a target of the current search.
    target: Vec<u32>,
    epoch: u32,
    stack: Vec<usize>,
}

impl Search {
    /// Scratch space for a graph of `n` nodes.
    pub(super) fn new(n: usize) -> Search {
        Search { stamp: vec![0; n], target: vec![0; n], epoch: 0, stack: Vec::new() }
    }

    /// Searches from `start` along `adj` until every node of `targets` is reached or
    /// nothing more is; afterwards [`Search::reached`] answers for the targets (and
    /// `start`, which counts as reached).
    pub(super) fn run(&mut self, adj: &Adjacency, start: usize, targets: &[usize]) {
        if self.epoch == u32::MAX {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.target.iter_mut().for_each(|s| *s = 0);
            self.epoch = 0;
        }
        self.epoch += 1;
        let epoch = self.epoch;
        self.stack.clear();
        if start >= self.stamp.len() {
            return;
        }
        self.stamp[start] = epoch;
        self.stack.push(start);
        let mut left = 0usize;
        for &t in targets {
            if let Some(slot) = self.target.get_mut(t) {
                if *slot != epoch && t != start {
                    *slot = epoch;
                    left += 1;
                }
            }
        }
        while left > 0 {
            let Some(i) = self.stack.pop() else { break };
            for &j in adj.next(i) {
                if self.stamp[j] != epoch {
                    self.stamp[j] = epoch;
                    if self.target[j] == epoch {
                        left -= 1;
                    }
                    self.stack.push(j);
                }
            }
        }
    }

    /// Whether the last search reached `i`.
    pub(super) fn reached(&self, i: usize) -> bool {
        self.stamp.get(i).is_some_and(|&s| s == self.epoch)
    }
}
