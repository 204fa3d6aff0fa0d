//! One namespace: every name spellable (E0202) and none defined twice (E0201).
//!
//! A graph's namespace holds all of its nodes, 10^6 in large graphs, whose names lie
//! scattered over the heap. So each name is read once, for its spelling and a 32-bit
//! hash; the (hash, entity) pairs are radix-sorted, which brings equal names together
//! while touching memory in order, and only entities with equal hashes are compared by
//! name. O(entities + name bytes) time, 8 bytes of scratch per entity; many equal hashes
//! (duplicates, or names crafted to collide) cost O(k log k) for k of them.

use super::error::VerifyError;
use super::names::valid_name;
use crate::arena::{Arena, Handle};
use crate::span::Span;

/// A name and where it is defined, by position in a [`Segment`].
type Lookup<'m> = Box<dyn Fn(usize) -> Option<(&'m str, Span)> + 'm>;

/// The entities of one kind in a namespace.
pub(super) struct Segment<'m> {
    kind: &'static str,
    sigil: char,
    len: usize,
    at: Lookup<'m>,
}

impl<'m> Segment<'m> {
    /// The entities of `arena`, named by `name`.
    pub(super) fn of<T>(kind: &'static str, sigil: char, arena: &'m Arena<T>, name: fn(&T) -> &str) -> Segment<'m> {
        let at = move |i: usize| {
            let h = Handle::from_usize(i)?;
            Some((name(arena.try_get(h)?), arena.span(h)))
        };
        Segment { kind, sigil, len: arena.len(), at: Box::new(at) }
    }
}

/// Reports invalid names and duplicates among `segments`, which together form one
/// namespace. Of two equal names the one written later is reported, pointing at the first
/// (by source position; entities without a span, built through the API, count as written
/// after all others, in segment order). Errors come in segment order, which the final sort
/// by position in `check` turns into source order.
pub(super) fn check(segments: &[Segment<'_>], errors: &mut Vec<VerifyError>) {
    let total: usize = segments.iter().map(|s| s.len).sum();
    let Ok(total32) = u32::try_from(total) else { return };
    // Entity `i` of the namespace: its segment, name and span.
    let entity = |mut i: usize| {
        for s in segments {
            if i < s.len {
                return (s.at)(i).map(|(name, span)| (s, name, span));
            }
            i -= s.len;
        }
        None
    };
    let mut invalid: Vec<u32> = Vec::new();
    let mut keyed: Vec<(u32, u32)> = Vec::with_capacity(total);
    let mut i = 0u32;
    for s in segments {
        for k in 0..s.len {
            if let Some((name, _)) = (s.at)(k) {
                if !valid_name(name) {
                    invalid.push(i);
                }
                keyed.push((hash(name), i));
            }
            i += 1;
        }
    }
    debug_assert_eq!(i, total32);
    radix_sort(&mut keyed);
    // (later, first) for every duplicate, then in entity order.
    let mut dups: Vec<(u32, u32)> = Vec::new();
    let name = |i: u32| entity(i as usize).map_or(("", Span::UNDEFINED), |(_, n, span)| (n, span));
    for run in keyed.chunk_by_mut(|a, b| a.0 == b.0) {
        if run.len() < 2 {
            continue;
        }
        // Equal hashes: grouped by name, each group in definition order.
        run.sort_unstable_by(|a, b| {
            let ((na, sa), (nb, sb)) = (name(a.1), name(b.1));
            na.cmp(nb).then(sa.start.cmp(&sb.start)).then(a.1.cmp(&b.1))
        });
        for group in run.chunk_by(|a, b| name(a.1).0 == name(b.1).0) {
            dups.extend(group.iter().skip(1).map(|&(_, later)| (later, group[0].1)));
        }
    }
    dups.sort_unstable();
    // Both lists are in entity order: merge them, an entity's spelling error first.
    let (mut inv, mut dup) = (invalid.iter().peekable(), dups.iter().peekable());
    loop {
        let next_inv = inv.peek().map(|&&i| i);
        let next_dup = dup.peek().map(|&&(i, _)| i);
        match (next_inv, next_dup) {
            (Some(a), b) if b.is_none_or(|b| a <= b) => {
                inv.next();
                if let Some((s, name, span)) = entity(a as usize) {
                    errors.push(VerifyError::InvalidName { kind: s.kind, name: name.to_string(), span });
                }
            }
            (_, Some(_)) => {
                let Some(&(later, first)) = dup.next() else { break };
                if let (Some((s, name, span)), Some((_, _, first))) = (entity(later as usize), entity(first as usize)) {
                    errors.push(VerifyError::DuplicateName {
                        kind: s.kind,
                        name: format!("{}{name}", s.sigil),
                        span,
                        first,
                    });
                }
            }
            _ => break,
        }
    }
}

/// A 32-bit hash of a name: multiply and xor per 8 bytes (as rustc's own tables hash),
/// the well-mixed high half kept. Names are short; SipHash would cost more than the rest
/// of the check.
fn hash(name: &str) -> u32 {
    let mut h = (name.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut add = |word: u64| h = (h.rotate_left(5) ^ word).wrapping_mul(0xf135_7aea_2e62_a9c5);
    let mut chunks = name.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        add(u64::from_le_bytes(word));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        add(u64::from_le_bytes(word));
    }
    (h >> 32) as u32
}

/// Sorts by the first field: four passes of a byte each (least significant first), each
/// a sequential read and 256 sequential write streams, so a million entries sort in a few
/// milliseconds where a comparison sort takes tens.
fn radix_sort(v: &mut Vec<(u32, u32)>) {
    if v.len() < 256 {
        v.sort_unstable_by_key(|k| k.0);
        return;
    }
    let mut counts = [[0usize; 256]; 4];
    for &(key, _) in v.iter() {
        for (pass, count) in counts.iter_mut().enumerate() {
            count[(key >> (8 * pass)) as usize & 0xff] += 1;
        }
    }
    let mut other = vec![(0u32, 0u32); v.len()];
    for (pass, count) in counts.iter().enumerate() {
        // A byte equal in every key leaves the order as it is.
        if count.contains(&v.len()) {
            continue;
        }
        let mut next = [0usize; 256];
        let mut sum = 0;
        for (slot, &c) in next.iter_mut().zip(count) {
            *slot = sum;
            sum += c;
        }
        for &entry in v.iter() {
            let slot = &mut next[(entry.0 >> (8 * pass)) as usize & 0xff];
            other[*slot] = entry;
            *slot += 1;
        }
        std::mem::swap(v, &mut other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radix_sort_sorts_by_key_and_keeps_ties_in_order() {
        let mut state = 1u64;
        let mut v: Vec<(u32, u32)> = (0..5000)
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Few distinct keys, so that ties are common.
                (((state >> 33) as u32) % 700, i)
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_by_key(|k| k.0);
        radix_sort(&mut v);
        assert_eq!(v, expected);
    }

    #[test]
    fn hashes_differ_for_near_names() {
        let names = ["a", "b", "a0", "a1", "12345678", "123456789", "12345679", "", "x"];
        let mut hashes: Vec<u32> = names.iter().map(|n| hash(n)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), names.len());
    }
}
