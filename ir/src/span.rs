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
