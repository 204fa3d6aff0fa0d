//! Source locations.

use serde::{Deserialize, Serialize};

/// A byte range `[start, end)` in the source text a module was parsed from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// Byte offset of the first character.
    pub start: u32,
    /// Byte offset one past the last character.
    pub end: u32,
}

impl Span {
    /// The span of entities built through the API rather than parsed.
    pub const UNDEFINED: Span = Span { start: u32::MAX, end: u32::MAX };

    /// A span from byte offsets.
    pub fn new(start: usize, end: usize) -> Span {
        let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX - 1);
        Span { start: clamp(start), end: clamp(end) }
    }

    /// Whether this span points into real source text.
    pub fn is_defined(self) -> bool {
        self != Span::UNDEFINED
    }

    /// The smallest span covering both.
    pub fn join(self, other: Span) -> Span {
        match (self.is_defined(), other.is_defined()) {
            (true, true) => Span { start: self.start.min(other.start), end: self.end.max(other.end) },
            (true, false) => self,
            _ => other,
        }
    }

    /// The byte range, for slicing source text and for diagnostics.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// Spans of parts of an entity that are not arena elements (a kernel argument, a parameter),
/// keyed by `K`. Side information only: it never takes part in equality or serialization, so
/// a parsed module equals the same module built through the API.
///
/// Stored as a vector sorted by key: the parser produces the keys in order, so building the
/// table is appending (no tree nodes, no rebalancing), and lookups are binary searches.
#[derive(Clone)]
pub struct SpanTable<K: Ord> {
    /// Sorted by key, each key once.
    entries: Vec<(K, Span)>,
}

impl<K: Ord> Default for SpanTable<K> {
    fn default() -> Self {
        SpanTable { entries: Vec::new() }
    }
}

impl<K: Ord> PartialEq for SpanTable<K> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<K: Ord + std::fmt::Debug> std::fmt::Debug for SpanTable<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        /// The entries shown as a map, as the table read when it was a `BTreeMap`.
        struct Entries<'a, K>(&'a [(K, Span)]);
        impl<K: std::fmt::Debug> std::fmt::Debug for Entries<'_, K> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map().entries(self.0.iter().map(|(k, v)| (k, v))).finish()
            }
        }
        f.debug_tuple("SpanTable").field(&Entries(&self.entries)).finish()
    }
}

impl<K: Ord> SpanTable<K> {
    /// The span recorded for `key`, or [`Span::UNDEFINED`].
    pub fn get(&self, key: &K) -> Span {
        match self.entries.binary_search_by(|(k, _)| k.cmp(key)) {
            Ok(i) => self.entries.get(i).map_or(Span::UNDEFINED, |&(_, span)| span),
            Err(_) => Span::UNDEFINED,
        }
    }

    /// Records the span of `key`, replacing any span recorded for it. Keys recorded in
    /// increasing order are appended.
    pub fn insert(&mut self, key: K, span: Span) {
        if self.entries.last().is_none_or(|(last, _)| *last < key) {
            self.entries.push((key, span));
            return;
        }
        match self.entries.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => {
                if let Some(slot) = self.entries.get_mut(i) {
                    slot.1 = span;
                }
            }
            Err(i) => self.entries.insert(i, (key, span)),
        }
    }

    /// Number of keys with a span.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no span is recorded.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keys and spans in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, Span)> + ExactSizeIterator {
        self.entries.iter().map(|(k, span)| (k, *span))
    }
}

impl<K: Ord> FromIterator<(K, Span)> for SpanTable<K> {
    /// A table of `(key, span)` pairs; a key given twice keeps its last span. Pairs already
    /// in increasing key order (what the parser produces) are taken as they are.
    fn from_iter<I: IntoIterator<Item = (K, Span)>>(iter: I) -> Self {
        let mut entries: Vec<(K, Span)> = iter.into_iter().collect();
        if !entries.windows(2).all(|w| matches!(w, [a, b] if a.0 < b.0)) {
            // Stable, so that among equal keys the last given comes last and is kept.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut kept: Vec<(K, Span)> = Vec::with_capacity(entries.len());
            for (key, span) in entries {
                match kept.last_mut() {
                    Some(last) if last.0 == key => last.1 = span,
                    _ => kept.push((key, span)),
                }
            }
            entries = kept;
        }
        SpanTable { entries }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_table_keeps_keys_sorted_and_the_last_span() {
        let s = |n: usize| Span::new(n, n + 1);
        let mut t = SpanTable::default();
        for k in [5u32, 1, 9, 3, 5] {
            t.insert(k, s(k as usize * 10));
        }
        t.insert(5, s(7));
        assert_eq!(t.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec![1, 3, 5, 9]);
        assert_eq!(t.get(&5), s(7));
        assert_eq!(t.get(&9), s(90));
        assert_eq!(t.get(&4), Span::UNDEFINED);
        assert_eq!(t.len(), 4);

        let from: SpanTable<u32> = [(3u32, s(1)), (1, s(2)), (3, s(3))].into_iter().collect();
        assert_eq!(from.iter().collect::<Vec<_>>(), vec![(&1, s(2)), (&3, s(3))]);
        let sorted: SpanTable<u32> = (0..100u32).map(|k| (k, s(k as usize))).collect();
        assert!((0..100u32).all(|k| sorted.get(&k) == s(k as usize)));
        assert_eq!(format!("{sorted:?}").matches(": Span {").count(), 100);
        assert_eq!(format!("{:?}", SpanTable::<u32>::default()), "SpanTable({})");
    }
}
