//! The parser's name tables: source names (`&str` slices of the input) to small values.
//!
//! Every node statement defines one name and looks up one to three, so these lookups are a
//! large part of parsing a big graph. A general `HashMap<&str, V>` hashes through the
//! `Hasher` byte stream (a length prefix, a variable-length copy of the tail, a call per
//! key) and moves whole entries when it grows. This table hashes a name in a few word
//! reads and stores the entries apart, in insertion order: the entries of recent names,
//! which most lookups are for, stay in cache, and growing moves slots only. Entry numbers
//! are dense, so the module symbol table uses them as symbol numbers.
//!
//! Defining a name must first find out whether it is new, and in a large graph the slot it
//! hashes to is almost never in cache: that miss was most of the cost of a definition.
//! So which slots are used is kept in a bitmap of one bit per slot, 64 times smaller than
//! the slots and so mostly in cache, and the table is kept at most a quarter full: most
//! new names find their first slot unused in the bitmap, and then the slot is only
//! written, which the processor does not wait for.
//!
//! The hash is not keyed: an input crafted to collide makes lookups slower (linear probing
//! over equal hashes), never wrong, and the file size bounds the work.

/// Names to values, with entries kept in insertion order.
pub(super) struct NameMap<'s, V> {
    /// One bit per slot: whether it is used.
    used: Vec<u64>,
    /// Per used slot: the hash's high 32 bits, then the entry number in the low 32 bits.
    slots: Vec<u64>,
    entries: Vec<(&'s str, V)>,
}

impl<V> Default for NameMap<'_, V> {
    fn default() -> Self {
        NameMap { used: Vec::new(), slots: Vec::new(), entries: Vec::new() }
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

/// Slots per name, at most: probes rarely go past the first slot.
const SLOTS_PER_NAME: usize = 4;

impl<'s, V> NameMap<'s, V> {
    /// Makes room for `additional` more entries, so that they are not moved as names come.
    /// Allocation failure (a huge estimate) is ignored: the entries then grow as usual. The
    /// slots are not sized here: they grow by doubling, which costs little, and sizing them
    /// for an estimate would write memory the estimate may not need.
    pub fn reserve(&mut self, additional: usize) {
        let _ = self.entries.try_reserve(additional);
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    fn is_used(&self, slot: usize) -> bool {
        self.used.get(slot / 64).is_some_and(|bits| bits >> (slot % 64) & 1 != 0)
    }

    /// The slot of `name` if it is present (`Ok`), or the free slot where it goes (`Err`).
    /// The table must have slots.
    fn probe(&self, name: &str, h: u64) -> Result<usize, usize> {
        let tag = h >> 32;
        let mask = self.mask();
        let mut i = h as usize & mask;
        // The table is never full, so an unused slot ends every probe sequence; the bound
        // only makes that evident.
        for _ in 0..self.slots.len() {
            if !self.is_used(i) {
                return Err(i);
            }
            let slot = self.slots.get(i).copied().unwrap_or(0);
            if slot >> 32 == tag && self.entries.get(slot as u32 as usize).is_some_and(|(n, _)| same(n, name)) {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
        Err(i)
    }

    /// The entry number of `name`, if present.
    pub fn find(&self, name: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let slot = self.probe(name, hash(name)).ok()?;
        self.slots.get(slot).map(|&s| s as u32 as usize)
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
        // Grow before probing, so that the probe finds the slot to fill.
        if (self.entries.len() + 1) * SLOTS_PER_NAME > self.slots.len() {
            self.rehash((self.slots.len() * 2).max(64));
        }
        let h = hash(name);
        match self.probe(name, h) {
            Ok(slot) => Err(self.slots.get(slot).map_or(0, |&s| s as u32 as usize)),
            Err(slot) => {
                let entry = self.entries.len();
                self.fill(slot, h, entry);
                self.entries.push((name, value()));
                Ok(entry)
            }
        }
    }

    /// Marks `slot` used by `entry`, whose name hashes to `h`.
    fn fill(&mut self, slot: usize, h: u64, entry: usize) {
        if let Some(bits) = self.used.get_mut(slot / 64) {
            *bits |= 1 << (slot % 64);
        }
        if let Some(s) = self.slots.get_mut(slot) {
            // Entry numbers fit 32 bits: there are fewer names than bytes of input (< 1 GiB).
            *s = (h >> 32) << 32 | entry as u64 & 0xffff_ffff;
        }
    }

    /// Rebuilds the slots with `size` of them (a power of two, above 4 per entry).
    fn rehash(&mut self, size: usize) {
        // Zeroed vectors come from the allocator already zeroed, untouched until used.
        self.used = vec![0u64; size.div_ceil(64)];
        self.slots = vec![0u64; size];
        for entry in 0..self.entries.len() {
            let Some(&(name, _)) = self.entries.get(entry) else { break };
            // Names in the table are distinct: only an unused slot is needed.
            let h = hash(name);
            let mask = self.mask();
            let mut slot = h as usize & mask;
            while self.is_used(slot) {
                slot = (slot + 1) & mask;
            }
            self.fill(slot, h, entry);
        }
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
