//! Typed arenas: the storage spine of the IR.
//!
//! Every entity (kernel, memory object, graph, node, edge, value, op, ...) lives in an
//! [`Arena`] and is referred to by a small `Copy` [`Handle`]. Insertion order is kept and is
//! meaningful: for nodes and edges it is the SYCL creation order that whole-graph update
//! pairs by. Each element carries the [`Span`] of the text it came from (or
//! [`Span::UNDEFINED`] when built through the API).

use crate::span::Span;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::num::NonZeroU32;

/// A typed index into an [`Arena<T>`].
#[derive(Serialize, Deserialize)]
#[serde(transparent)]
pub struct Handle<T> {
    index: NonZeroU32,
    #[serde(skip)]
    marker: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    /// Builds a handle from a zero-based index.
    ///
    /// Returns `None` when the index does not fit the handle (more than `u32::MAX - 1` items).
    pub fn from_usize(index: usize) -> Option<Self> {
        let raw = u32::try_from(index).ok()?.checked_add(1)?;
        Some(Handle { index: NonZeroU32::new(raw)?, marker: PhantomData })
    }

    /// The zero-based index of this handle, usable to index side tables.
    pub fn index(self) -> usize {
        (self.index.get() - 1) as usize
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}
impl<T> PartialEq for Handle<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}
impl<T> Eq for Handle<T> {}
impl<T> PartialOrd for Handle<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Handle<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index.cmp(&other.index)
    }
}
impl<T> Hash for Handle<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.index.hash(state)
    }
}
impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.index())
    }
}

/// An append-only vector of `T` addressed by [`Handle<T>`], with a span per element.
#[derive(Clone, Serialize, Deserialize)]
pub struct Arena<T> {
    data: Vec<T>,
    #[serde(skip)]
    spans: Vec<Span>,
}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { data: Vec::new(), spans: Vec::new() }
    }
}

impl<T: fmt::Debug> fmt::Debug for Arena<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<T: PartialEq> PartialEq for Arena<T> {
    /// Arenas compare by contents and order; spans are not part of the value.
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl<T> Arena<T> {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `value` and returns its handle.
    ///
    /// # Panics
    /// Panics past `u32::MAX - 1` elements, a size no parser input can reach (inputs are
    /// bounded far below that by [`crate::text`]'s limits).
    pub fn append(&mut self, value: T, span: Span) -> Handle<T> {
        let handle = Handle::from_usize(self.data.len()).expect("arena overflow");
        self.data.push(value);
        self.spans.push(span);
        handle
    }

    /// Makes room for at least `additional` more elements, so that appending them does not
    /// move the arena. A request that cannot be allocated is ignored (the arena then grows
    /// as elements are appended), so callers may pass generous estimates: memory reserved and
    /// never written is only address space.
    pub fn reserve(&mut self, additional: usize) {
        if self.data.try_reserve(additional).is_ok() && self.spans.try_reserve(additional).is_err() {
            self.data.shrink_to_fit();
        }
    }

    /// Gives back the room [`Arena::reserve`] made and appending did not use.
    pub fn shrink_to_fit(&mut self) {
        self.data.shrink_to_fit();
        self.spans.shrink_to_fit();
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the arena is empty.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The element behind `handle`, or `None` if the handle is out of range.
    pub fn try_get(&self, handle: Handle<T>) -> Option<&T> {
        self.data.get(handle.index())
    }

    /// The element behind `handle`, mutably, or `None` if the handle is out of range.
    pub fn try_get_mut(&mut self, handle: Handle<T>) -> Option<&mut T> {
        self.data.get_mut(handle.index())
    }

    /// The span `handle` was created with.
    pub fn span(&self, handle: Handle<T>) -> Span {
        self.spans.get(handle.index()).copied().unwrap_or(Span::UNDEFINED)
    }

    /// Replaces the span of `handle`.
    pub fn set_span(&mut self, handle: Handle<T>, span: Span) {
        if self.spans.len() < self.data.len() {
            self.spans.resize(self.data.len(), Span::UNDEFINED);
        }
        if let Some(slot) = self.spans.get_mut(handle.index()) {
            *slot = span;
        }
    }

    /// Elements with their handles, in insertion order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (Handle<T>, &T)> + ExactSizeIterator {
        self.data.iter().enumerate().map(|(i, v)| (Handle::from_usize(i).expect("in range"), v))
    }

    /// Mutable elements with their handles, in insertion order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (Handle<T>, &mut T)> {
        self.data.iter_mut().enumerate().map(|(i, v)| (Handle::from_usize(i).expect("in range"), v))
    }

    /// Elements with their handles and spans, in insertion order, consuming the arena (for
    /// rebuilding one without cloning its elements).
    pub fn into_entries(self) -> impl Iterator<Item = (Handle<T>, T, Span)> {
        let spans = self.spans.into_iter().chain(std::iter::repeat(Span::UNDEFINED));
        self.data.into_iter().zip(spans).enumerate().map(|(i, (v, s))| (Handle::from_usize(i).expect("in range"), v, s))
    }

    /// Handles in insertion order.
    pub fn handles(&self) -> impl DoubleEndedIterator<Item = Handle<T>> + ExactSizeIterator {
        (0..self.data.len()).map(|i| Handle::from_usize(i).expect("in range"))
    }
}

impl<T> std::ops::Index<Handle<T>> for Arena<T> {
    type Output = T;
    fn index(&self, handle: Handle<T>) -> &T {
        &self.data[handle.index()]
    }
}

impl<T> std::ops::IndexMut<Handle<T>> for Arena<T> {
    fn index_mut(&mut self, handle: Handle<T>) -> &mut T {
        &mut self.data[handle.index()]
    }
}
