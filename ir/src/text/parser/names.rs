//! The parser's name tables: source names (`&str` slices of the input) to small values.
//!
//! Every node statement defines one name and looks up one to three, so these lookups are a
//! large part of parsing a big graph. A general `HashMap<&str, V>` hashes through the
//! `Hasher` byte stream (a length prefix, a variable-length copy of the tail, a call per
//! key) and moves whole entries when it grows. This table hashes a name in a few word
//! reads, keeps only an 8-byte slot (hash bits and entry number) in the probed array, and
//! stores the entries in insertion order, so that growing moves slots only and the entries
//! of recent names, which most lookups are for, stay in cache. Entry numbers are dense, so
//! the module symbol table uses them as symbol numbers.
//!
//! The hash is not keyed: an input crafted to collide makes lookups slower (linear probing
//! over equal hashes), never wrong, and the file size bounds the work.

/// A slot: the hash's high bits (never 0 in a used slot) and the entry number.
#[derive(Clone, Copy, Default)]
struct Slot {
    tag: u32,
    entry: u32,
}

/// Names to values, with entries kept in insertion order.
pub(super) struct NameMap<'s, V> {
    slots: Vec<Slot>,
    entries: Vec<(&'s str, V)>,
}

impl<V> Default for NameMap<'_, V> {
    fn default() -> Self {
        NameMap { slots: Vec::new(), entries: Vec::new() }
    }
}

/// The multiplier of FxHash; any odd constant with well-spread bits would do.
const K: u64 = 0xf135_7aea_2e62_a9c5;

/// The 8 bytes of `bytes` at `at`, little-endian (0 past the end, which callers avoid).
fn word(bytes: &[u8], at: usize) -> u64 {
    bytes.get(at..).and_then(|b| b.first_chunk::<8>()).map_or(0, |w| u64::from_le_bytes(*w))
}

/// The 4 bytes of `bytes` at `at`, little-endian (0 past the end, which callers avoid).
fn half(bytes: &[u8], at: usize) -> u64 {
    bytes.get(at..).and_then(|b| b.first_chunk::<4>()).map_or(0, |w| u64::from(u32::from_le_bytes(*w)))
}

/// The bytes of a name shorter than 4 bytes, as one number (first, middle and last byte:
/// together every byte).
fn small(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let byte = |i: usize| u64::from(bytes.get(i).copied().unwrap_or(0));
    byte(0) | byte(n / 2) << 8 | byte(n.wrapping_sub(1)) << 16
}

/// Hashes a name: whole words, with the tail read as an overlapping word (or two
/// overlapping half words, or three bytes) rather than copied byte by byte.
fn hash(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let n = bytes.len();
    let mut h = (n as u64).wrapping_mul(K);
    let tail = if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            h = (h ^ word(bytes, at)).wrapping_mul(K);
            at += 8;
        }
        word(bytes, n - 8)
    } else if n >= 4 {
        half(bytes, 0) | half(bytes, n - 4) << 32
    } else {
        small(bytes)
    };
    // A folded 64x64->128 multiply spreads every input bit over both halves.
    let m = u128::from(h ^ tail) * u128::from(K.rotate_left(17));
    (m as u64) ^ (m >> 64) as u64
}

/// Whether two names are equal: short names (almost all) by a few word compares rather than
/// a call to `memcmp`.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0..4 => small(a) == small(b),
        4..8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

impl<'s, V> NameMap<'s, V> {
    /// Makes room for `additional` more names. Allocation failure (a huge estimate) is
    /// ignored: the table then grows as names come.
    pub fn reserve(&mut self, additional: usize) {
        let wanted = self.entries.len().saturating_add(additional);
        if self.entries.try_reserve(additional).is_err() {
            return;
        }
        // Load factor at most 1/2: short probe sequences.
        let slots = wanted.checked_mul(2).and_then(usize::checked_next_power_of_two).unwrap_or(0);
        if slots > self.slots.len() {
            self.rehash(slots);
        }
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// The tag stored for `h` (never 0, which marks an empty slot).
    fn tag(h: u64) -> u32 {
        ((h >> 32) as u32) | 1
    }

    /// The entry number of `name`, if present.
    pub fn find(&self, name: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let h = hash(name);
        let tag = Self::tag(h);
        let mask = self.mask();
        let mut i = h as usize & mask;
        loop {
            let slot = *self.slots.get(i)?;
            if slot.tag == 0 {
                return None;
            }
            if slot.tag == tag {
                let entry = slot.entry as usize;
                if self.entries.get(entry).is_some_and(|(n, _)| same(n, name)) {
                    return Some(entry);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.find(name).and_then(|e| self.entries.get(e)).map(|(_, v)| v)
    }

    /// The value of entry `entry`.
    pub fn entry(&self, entry: usize) -> Option<&V> {
        self.entries.get(entry).map(|(_, v)| v)
    }

    /// The value of entry `entry`, mutably.
    pub fn entry_mut(&mut self, entry: usize) -> Option<&mut V> {
        self.entries.get_mut(entry).map(|(_, v)| v)
    }

    /// Every entry, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &(&'s str, V)> {
        self.entries.iter()
    }

    /// The entry number of `name`, inserting it with `value()` if absent; `Ok` when it was
    /// inserted, `Err` when it was already there (and `value` was not called).
    pub fn insert_with(&mut self, name: &'s str, value: impl FnOnce() -> V) -> Result<usize, usize> {
        // Grow before probing, so that the probe below finds the slot to fill.
        if (self.entries.len() + 1) * 2 > self.slots.len() {
            self.rehash((self.slots.len() * 2).max(16));
        }
        let h = hash(name);
        let tag = Self::tag(h);
        let mask = self.mask();
        let mut i = h as usize & mask;
        loop {
            let Some(slot) = self.slots.get_mut(i) else { return Err(0) };
            if slot.tag == 0 {
                let entry = self.entries.len();
                *slot = Slot { tag, entry: entry as u32 };
                self.entries.push((name, value()));
                return Ok(entry);
            }
            if slot.tag == tag {
                let entry = slot.entry as usize;
                if self.entries.get(entry).is_some_and(|(n, _)| same(n, name)) {
                    return Err(entry);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Rebuilds the slot array with `size` slots (a power of two above twice the entries).
    fn rehash(&mut self, size: usize) {
        let mut slots = Vec::new();
        if slots.try_reserve_exact(size).is_err() {
            // Keep the old table if it still has a free slot; otherwise there is no memory
            // for even this one, which the allocation below reports as any Vec would.
            if (self.entries.len() + 1) * 2 <= self.slots.len() {
                return;
            }
        }
        slots.resize(size, Slot::default());
        let mask = size - 1;
        for (entry, (name, _)) in self.entries.iter().enumerate() {
            let h = hash(name);
            let mut i = h as usize & mask;
            while slots.get(i).is_some_and(|s| s.tag != 0) {
                i = (i + 1) & mask;
            }
            if let Some(slot) = slots.get_mut(i) {
                *slot = Slot { tag: Self::tag(h), entry: entry as u32 };
            }
        }
        self.slots = slots;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_finds_and_keeps_insertion_order() {
        let names: Vec<String> = (0..5000).map(|i| format!("n{i}")).collect();
        let mut map = NameMap::default();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(map.insert_with(n, || i * 10), Ok(i));
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(map.find(n), Some(i));
            assert_eq!(map.get(n), Some(&(i * 10)));
            assert_eq!(map.insert_with(n, || unreachable!()), Err(i));
        }
        assert_eq!(map.get("n5000"), None);
        assert_eq!(map.len(), 5000);
        assert!(map.iter().map(|(n, _)| *n).eq(names.iter().map(String::as_str)));
    }

    #[test]
    fn names_of_every_length_are_told_apart() {
        // Lengths around the 4- and 8-byte boundaries of the hash, and names that differ
        // only in a middle byte, which the short-name hash reads only at n / 2.
        let mut names = Vec::new();
        for len in 0..20 {
            for c in ['a', 'b'] {
                for at in 0..len {
                    let mut s: Vec<char> = std::iter::repeat_n('x', len).collect();
                    s[at] = c;
                    names.push(s.into_iter().collect::<String>());
                }
            }
            names.push("x".repeat(len));
        }
        names.sort();
        names.dedup();
        let mut map = NameMap::default();
        map.reserve(4);
        for (i, n) in names.iter().enumerate() {
            assert_eq!(map.insert_with(n, || i), Ok(i), "{n:?}");
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(map.get(n), Some(&i), "{n:?}");
        }
    }

    #[test]
    fn empty_table_finds_nothing() {
        let map: NameMap<'_, u32> = NameMap::default();
        assert_eq!(map.find("a"), None);
        assert_eq!(map.get(""), None);
    }
}
