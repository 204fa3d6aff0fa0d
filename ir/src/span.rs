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
#[derive(Clone, Debug)]
pub struct SpanTable<K: Ord>(pub std::collections::BTreeMap<K, Span>);

impl<K: Ord> Default for SpanTable<K> {
    fn default() -> Self {
        SpanTable(std::collections::BTreeMap::new())
    }
}

impl<K: Ord> PartialEq for SpanTable<K> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<K: Ord> SpanTable<K> {
    /// The span recorded for `key`, or [`Span::UNDEFINED`].
    pub fn get(&self, key: &K) -> Span {
        self.0.get(key).copied().unwrap_or(Span::UNDEFINED)
    }

    /// Records the span of `key`.
    pub fn insert(&mut self, key: K, span: Span) {
        self.0.insert(key, span);
    }
}
