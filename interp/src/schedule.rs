//! Choosing the order nodes run in: any topological order of the expanded graph.
//!
//! [`Order::Creation`] always runs the ready node that comes first in flat creation order;
//! [`Order::Random`] picks uniformly among the ready nodes with a seeded generator, so a
//! seed names one valid schedule and different seeds explore different ones.

use super::flat::Flat;

/// How to pick the next node among those whose predecessors have all run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// The ready node created first (deterministic; the default).
    #[default]
    Creation,
    /// A uniformly random ready node, from a generator seeded with this value.
    Random(u64),
}

/// SplitMix64: small, fast, and good enough to pick among ready nodes.
#[derive(Clone, Debug)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n > 0`), by rejection so that no value is favoured.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let r = self.next_u64();
            if r < zone {
                return r % n;
            }
        }
    }
}

/// A topological order of `flat` (which is known to be acyclic).
pub(crate) fn schedule(flat: &Flat, order: Order) -> Vec<u32> {
    let n = flat.nodes.len();
    let mut indeg: Vec<usize> = flat.nodes.iter().map(|f| f.preds.len()).collect();
    let mut out = Vec::with_capacity(n);
    match order {
        Order::Creation => {
            let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<u32>> =
                (0..n as u32).filter(|&i| indeg[i as usize] == 0).map(std::cmp::Reverse).collect();
            while let Some(std::cmp::Reverse(i)) = ready.pop() {
                out.push(i);
                for &s in &flat.nodes[i as usize].succs {
                    indeg[s as usize] -= 1;
                    if indeg[s as usize] == 0 {
                        ready.push(std::cmp::Reverse(s));
                    }
                }
            }
        }
        Order::Random(seed) => {
            let mut rng = SplitMix64::new(seed);
            let mut ready: Vec<u32> = (0..n as u32).filter(|&i| indeg[i as usize] == 0).collect();
            while !ready.is_empty() {
                let pick = rng.below(ready.len() as u64) as usize;
                let i = ready.swap_remove(pick);
                out.push(i);
                for &s in &flat.nodes[i as usize].succs {
                    indeg[s as usize] -= 1;
                    if indeg[s as usize] == 0 {
                        ready.push(s);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_in_range_and_covers() {
        let mut rng = SplitMix64::new(7);
        let mut hits = [0u32; 5];
        for _ in 0..5000 {
            hits[rng.below(5) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
    }
}
