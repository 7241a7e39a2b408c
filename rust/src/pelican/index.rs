//! The hash-consing index of a [`super::Context`]: which id holds a node.
//!
//! Open addressing with linear probing over one `u64` per slot: the upper
//! 32 bits of the node's hash beside `id + 1` (0 marks an empty slot). A
//! lookup reads one cache line of slots and touches the node arena only for
//! a slot whose stored hash equals the key's (a real match, barring a 1 in
//! 2^32 collision), and growing re-places slots from their stored hash
//! without reading a single node. hashbrown's `HashTable<ExprId>` kept
//! control bytes and slots apart and compared every tag-matching candidate
//! against the arena, so a lookup at 1M nodes cost two or three cache misses
//! and its growth re-hashed every node (docs/performance.md, interning).
//!
//! The index decides nothing about ids: they are issued by the arena in
//! insertion order, so the table's layout never shows in any output.

/// Largest load before a table doubles: 3/4 keeps an unsuccessful linear
/// probe at a few slots, i.e. within one or two cache lines.
const MAX_LOAD_NUM: usize = 3;
const MAX_LOAD_DEN: usize = 4;

/// Slots of the recent table at most (512 KiB: it stays in the L2 cache).
const RECENT_SLOTS: usize = 1 << 16;

/// One open-addressing table.
#[derive(Clone, Default)]
struct Table {
    /// `hash << 32 | (id + 1)`, or 0 when empty; the length is 0 or a power of two.
    slots: Vec<u64>,
    len: usize,
}

impl Table {
    fn slots_for(n: usize) -> usize {
        // room for n entries at most at the maximum load
        n.saturating_mul(MAX_LOAD_DEN)
            .div_ceil(MAX_LOAD_NUM)
            .max(8)
            .next_power_of_two()
    }

    fn has_room(&self, extra: usize) -> bool {
        self.len.saturating_add(extra).saturating_mul(MAX_LOAD_DEN) <= self.slots.len().saturating_mul(MAX_LOAD_NUM)
    }

    fn reserve(&mut self, extra: usize) {
        if !self.has_room(extra) {
            let cap = Self::slots_for(self.len.saturating_add(extra));
            // a zeroed allocation: fresh pages from the OS need no fill
            let old = std::mem::replace(&mut self.slots, vec![0; cap]);
            self.len = 0;
            old.into_iter().filter(|&s| s != 0).for_each(|s| self.put(s));
        }
    }

    /// Store an entry (room must have been made).
    #[inline]
    fn put(&mut self, s: u64) {
        let mask = self.slots.len() - 1;
        let mut pos = (s >> 32) as usize & mask;
        while self.slots[pos] != 0 {
            pos = (pos + 1) & mask;
        }
        self.slots[pos] = s;
        self.len += 1;
    }

    /// The id of an entry with hash `h` that `eq` accepts, or the empty slot
    /// that ended the probe (`Err(None)` for a table without slots).
    #[inline]
    fn find(&self, h: u32, mut eq: impl FnMut(u32) -> bool) -> Result<u32, Option<usize>> {
        if self.slots.is_empty() {
            return Err(None);
        }
        let mask = self.slots.len() - 1;
        let mut pos = h as usize & mask;
        loop {
            let s = self.slots[pos];
            if s == 0 {
                return Err(Some(pos));
            }
            if (s >> 32) as u32 == h && eq(s as u32 - 1) {
                return Ok(s as u32 - 1);
            }
            pos = (pos + 1) & mask;
        }
    }
}

/// The index: `main` holds the ids below `watermark`, `recent` (small, so
/// it stays in cache) the ids from it on. A node whose newest child is at
/// or past the watermark can only equal a node interned after that child,
/// i.e. one in `recent`: it is looked up there alone, without touching the
/// large table. A DAG is interned bottom-up, so most new nodes have a child
/// that was itself just interned and cost no miss in `main` at all. When
/// `recent` is full its entries move to `main` and the watermark moves up.
#[derive(Clone, Default)]
pub(super) struct Index {
    main: Table,
    recent: Table,
    /// The hashes of the ids in `recent`, in id order (`watermark`, `watermark + 1`, …):
    /// a merge reads them in order instead of scanning `recent`'s slots.
    recent_hashes: Vec<u32>,
    watermark: u32,
    /// One past the largest id stored (ids are issued in order).
    next: u32,
}

/// Where a lookup ended: the id of an equal node, or the empty slot of
/// `recent` a new node goes into (valid until the index next changes).
pub(super) enum Probe {
    Found(u32),
    Vacant(usize),
}

/// The 32 bits of a 64-bit hash the index keeps (its upper half).
#[inline]
pub(super) fn hash32(h: u64) -> u32 {
    (h >> 32) as u32
}

impl Index {
    pub(super) fn with_capacity(n: usize) -> Self {
        let mut ix = Index::default();
        ix.reserve(n);
        ix
    }

    /// Make room for `extra` more entries in `main` (where every entry ends up).
    pub(super) fn reserve(&mut self, extra: usize) {
        self.main.reserve(self.recent.len.saturating_add(extra));
        // a large batch fills `recent` anyway: size it once instead of doubling
        let recent_max = RECENT_SLOTS / MAX_LOAD_DEN * MAX_LOAD_NUM;
        self.recent
            .reserve(extra.min(recent_max - self.recent.len.min(recent_max)));
    }

    /// Make room for one more entry in `recent`.
    #[inline]
    fn room_for_one(&mut self) {
        if !self.recent.has_room(1) {
            self.make_room();
        }
    }

    /// Grow `recent` up to its limit, then move its entries to `main`.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) {
        if self.recent.slots.len() < RECENT_SLOTS {
            self.recent.reserve(1);
            return;
        }
        self.main.reserve(self.recent.len);
        for (id, &h) in (self.watermark..).zip(&self.recent_hashes) {
            self.main.put((h as u64) << 32 | (id as u64 + 1));
        }
        self.recent.slots.fill(0);
        self.recent.len = 0;
        self.recent_hashes.clear();
        self.watermark = self.next;
    }

    /// Find the id whose node `eq` accepts among those stored with hash `h`,
    /// or the vacant slot for a new one. `newest_child` is the largest child
    /// id of the node looked up (None for a leaf).
    #[inline]
    pub(super) fn probe(&mut self, h: u32, newest_child: Option<u32>, mut eq: impl FnMut(u32) -> bool) -> Probe {
        self.room_for_one();
        let slot = match self.recent.find(h, &mut eq) {
            Ok(id) => return Probe::Found(id),
            Err(slot) => slot.expect("room_for_one gave recent slots"),
        };
        if newest_child.is_none_or(|c| c < self.watermark) {
            if let Ok(id) = self.main.find(h, eq) {
                return Probe::Found(id);
            }
        }
        Probe::Vacant(slot)
    }

    /// Like [`Index::probe`] without the option to insert.
    pub(super) fn find(&self, h: u32, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.recent.find(h, &mut eq).or_else(|_| self.main.find(h, eq)).ok()
    }

    /// Fill the slot a [`Probe::Vacant`] named with a new id (the next one:
    /// ids are issued in order; it must be below `u32::MAX`).
    #[inline]
    pub(super) fn fill(&mut self, slot: usize, h: u32, id: u32) {
        // ids are issued in order: `recent_hashes` is indexed by `id - watermark`
        debug_assert!(self.recent.slots[slot] == 0 && id < u32::MAX && id == self.next);
        self.recent.slots[slot] = (h as u64) << 32 | (id as u64 + 1);
        self.recent.len += 1;
        self.recent_hashes.push(h);
        self.next = id + 1;
    }

    /// Add an entry that need not be unique (a fresh id for a node that may
    /// equal an existing one: `Context::insert_canonical` without sharing).
    pub(super) fn insert(&mut self, h: u32, id: u32) {
        if let Probe::Vacant(slot) = self.probe(h, Some(u32::MAX), |_| false) {
            self.fill(slot, h, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(ix: &mut Index, h: u32, id: u32, newest: Option<u32>) {
        match ix.probe(h, newest, |i| i == id) {
            Probe::Found(_) => panic!("{id} found before it was added"),
            Probe::Vacant(slot) => ix.fill(slot, h, id),
        }
    }

    #[test]
    fn index_finds_what_was_filled_across_growth_flushes_and_colliding_hashes() {
        let mut ix = Index::default();
        // pairs of keys share a hash: lookups must go by eq
        let key_hash = |k: u32| (k / 2).wrapping_mul(0x9E37_79B9);
        let n = 200_000u32; // several flushes of `recent` into `main`
        for k in 0..n {
            add(&mut ix, key_hash(k), k, None);
        }
        assert!(ix.watermark > 0 && ix.main.len + ix.recent.len == n as usize);
        assert!(ix.recent.slots.len() <= RECENT_SLOTS);
        for t in [&ix.main, &ix.recent] {
            assert!(t.slots.len().is_power_of_two() && t.len * 4 <= t.slots.len() * 3);
        }
        for k in 0..n {
            assert_eq!(ix.find(key_hash(k), |id| id == k), Some(k));
            assert!(matches!(ix.probe(key_hash(k), None, |id| id == k), Probe::Found(id) if id == k));
        }
        assert_eq!(ix.find(key_hash(2 * n), |id| id == 2 * n), None);
    }

    #[test]
    fn index_looks_only_in_recent_for_a_node_with_a_child_past_the_watermark() {
        let mut ix = Index::default();
        for k in 0..100_000u32 {
            add(&mut ix, k.wrapping_mul(0x9E37_79B9), k, None);
        }
        let w = ix.watermark;
        assert!(w > 0);
        let old = w - 1; // in main
        let h = old.wrapping_mul(0x9E37_79B9);
        // a child below the watermark: main is searched
        assert!(matches!(ix.probe(h, Some(old - 1), |id| id == old), Probe::Found(id) if id == old));
        // a child at the watermark: main is not searched (no equal node can be there)
        assert!(matches!(ix.probe(h, Some(w), |id| id == old), Probe::Vacant(_)));
    }

    #[test]
    fn index_insert_keeps_duplicates_apart_and_reserve_prevents_growth() {
        let mut ix = Index::with_capacity(100);
        let cap = ix.main.slots.len();
        for id in 0..100 {
            ix.insert(7, id);
        }
        ix.reserve(0);
        assert_eq!(ix.main.slots.len(), cap, "reserved room must not grow");
        // every entry with hash 7 is there; eq picks which one is meant
        assert_eq!(ix.find(7, |id| id == 42), Some(42));
        assert!(ix.find(7, |_| true).is_some_and(|id| id < 100));
        assert_eq!(Index::default().find(7, |_| true), None);
    }
}
