//! The priority orders of the greedy placements: allocations sorted by a key, larger
//! first, ties by start position then index, so every order is deterministic. Sorting
//! 10^5 allocations is a visible part of planning, so the keys are packed into one
//! integer where they fit and radix sorted.

/// `by_start` (allocations by start position, then index) sorted by `key`, larger keys
/// first and ties kept in `by_start` order: the greedy orders, deterministic.
pub(super) fn priority(by_start: &[u32], key: impl Fn(u32) -> (u64, u64)) -> Vec<u32> {
    // Keys are computed once per allocation, not per comparison. When the two keys and the
    // rank in `by_start` fit in 64 bits together (always on generated graphs), they are
    // packed into one integer, which sorts several times faster than a tuple, by radix.
    let keys: Vec<(u64, u64)> = by_start.iter().map(|&i| key(i)).collect();
    let bits = |x: u64| 64 - x.leading_zeros();
    let (m1, m2) = keys.iter().fold((0, 0), |(a, b), &(k1, k2)| (a.max(k1), b.max(k2)));
    let (b2, br) = (bits(m2), bits(by_start.len().saturating_sub(1) as u64));
    if bits(m1) + b2 + br <= 64 {
        // Larger keys first: sort `max - key` ascending; the rank breaks ties.
        let mut packed: Vec<u64> = keys
            .iter()
            .enumerate()
            .map(|(r, &(k1, k2))| {
                let v = (u128::from(m1 - k1) << (b2 + br)) | (u128::from(m2 - k2) << br) | r as u128;
                v as u64
            })
            .collect();
        radix_sort(&mut packed);
        let mask = if br == 0 { 0 } else { u64::MAX >> (64 - br) };
        return packed.iter().filter_map(|&p| by_start.get((p & mask) as usize).copied()).collect();
    }
    let mut keyed: Vec<(std::cmp::Reverse<(u64, u64)>, u32)> =
        keys.into_iter().enumerate().map(|(r, k)| (std::cmp::Reverse(k), r as u32)).collect();
    keyed.sort_unstable();
    keyed.into_iter().filter_map(|(_, r)| by_start.get(r as usize).copied()).collect()
}

/// Sorts `v` ascending: least significant digit first, 8 bits a pass, skipping digits
/// that every element shares.
fn radix_sort(v: &mut Vec<u64>) {
    let n = v.len();
    if n < 512 {
        v.sort_unstable();
        return;
    }
    let mut counts = [[0usize; 256]; 8];
    for &x in v.iter() {
        for (d, c) in counts.iter_mut().enumerate() {
            c[((x >> (8 * d)) & 0xff) as usize] += 1;
        }
    }
    let mut tmp = vec![0u64; n];
    for (d, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue;
        }
        let mut pos = [0usize; 256];
        let mut sum = 0;
        for (p, &k) in pos.iter_mut().zip(c.iter()) {
            *p = sum;
            sum += k;
        }
        for &x in v.iter() {
            let p = &mut pos[((x >> (8 * d)) & 0xff) as usize];
            if let Some(t) = tmp.get_mut(*p) {
                *t = x;
            }
            *p += 1;
        }
        std::mem::swap(v, &mut tmp);
    }
}
