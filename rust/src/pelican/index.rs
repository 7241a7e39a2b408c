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

/// Slots of the recent table at most (128 KiB: small beside the L2 cache,
/// which the arena writes stream through; 512 KiB measured ~5 % slower on
/// the Intel host; 64, 128 and 256 KiB measured alike on the AMD one).
const RECENT_SLOTS: usize = 1 << 14;

/// Bits of filter per slot of `main` (a power of two: words = slots / (64 / this)).
/// 2 (512 KiB at 1M nodes: the L2 cache of the AMD host) measured as fast as
/// 4 there with the filter words prefetched, and 1 slower (more false "maybe"s).
const FILTER_BITS_PER_SLOT: usize = 2;

/// Entries ahead of the one being placed whose slot a merge prefetches.
const MERGE_PREFETCH: usize = 32;

/// Ask the CPU to bring the cache line of `p` in. A hint only: it reads no
/// data into the program and never faults, whatever the address.
#[inline(always)]
pub(super) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` takes any address (a hint, never a load or a
    // fault); SSE is part of the x86_64 baseline, so the target feature the
    // intrinsic is declared with is always present.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A Bloom filter over the hashes stored in `main`, one 64-bit word a key
/// (three bits set in it). `main` is far larger than the L2 cache, so a
/// probe that finds nothing there (most new nodes whose children are old)
/// costs a cache miss; the filter, 1/32 of `main`'s size, answers most of
/// those "not there" from cache. A "maybe" still probes `main`.
#[derive(Clone, Default)]
struct Filter {
    /// Empty, or a power of two long.
    words: Vec<u64>,
}

impl Filter {
    fn for_slots(slots: usize) -> Self {
        let words = (slots * FILTER_BITS_PER_SLOT / 64).max(1);
        Filter { words: vec![0; words] }
    }

    /// The word and the three bits of a hash (spread by one multiply: the
    /// word from the product's top bits, the bits from its low ones).
    #[inline]
    fn bits(&self, h: u32) -> (usize, u64) {
        let x = (h as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let word = (x >> 40) as usize & (self.words.len() - 1);
        (word, 1 << (x & 63) | 1 << ((x >> 6) & 63) | 1 << ((x >> 12) & 63))
    }

    #[inline]
    fn add(&mut self, h: u32) {
        let (w, m) = self.bits(h);
        self.words[w] |= m;
    }

    /// Start fetching the word of hash `h` (a hint).
    #[inline]
    fn prefetch(&self, h: u32) {
        if !self.words.is_empty() {
            prefetch(&self.words[self.bits(h).0]);
        }
    }

    /// False only when no hash `h` was added.
    #[inline]
    fn may_contain(&self, h: u32) -> bool {
        if self.words.is_empty() {
            return true;
        }
        let (w, m) = self.bits(h);
        self.words[w] & m == m
    }
}

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
    /// Which hashes `main` may hold (rebuilt whenever `main` grows).
    filter: Filter,
    recent: Table,
    /// The hashes of the ids in `recent`, in id order (`watermark`, `watermark + 1`, …):
    /// a merge reads them in order instead of scanning `recent`'s slots.
    recent_hashes: Vec<u32>,
    watermark: u32,
    /// One past the largest id stored (ids are issued in order).
    next: u32,
}

/// Where a lookup ended: the id of an equal node, or the empty slot of
/// `recent` a new node goes into (valid until the index next changes), or
/// no equal node and no slot looked up (the node goes in by [`Index::insert`]).
pub(super) enum Probe {
    Found(u32),
    Vacant(usize),
    Absent,
}

/// A node whose newest child is at most this many ids old is looked up by
/// scanning the hashes of the ids interned since that child (see [`Index::probe`]).
const SCAN_MAX: u32 = 16;

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
        self.reserve_main(self.recent.len.saturating_add(extra));
        // a large batch fills `recent` anyway: size it once instead of doubling
        let recent_max = RECENT_SLOTS / MAX_LOAD_DEN * MAX_LOAD_NUM;
        self.recent
            .reserve(extra.min(recent_max - self.recent.len.min(recent_max)));
    }

    /// Make room for `extra` more entries in `main`; when it grows, the
    /// filter is rebuilt at its new size from the stored hashes.
    fn reserve_main(&mut self, extra: usize) {
        let before = self.main.slots.len();
        self.main.reserve(extra);
        if self.main.slots.len() != before {
            self.filter = Filter::for_slots(self.main.slots.len());
            if self.main.len > 0 {
                for &s in self.main.slots.iter().filter(|&&s| s != 0) {
                    self.filter.add(hash32(s));
                }
            }
        }
    }

    /// The id in `main` of a node with hash `h` that `eq` accepts.
    #[inline]
    fn find_main(&self, h: u32, eq: impl FnMut(u32) -> bool) -> Option<u32> {
        if !self.filter.may_contain(h) {
            return None;
        }
        self.main.find(h, eq).ok()
    }

    /// Make room for one more entry in `recent`.
    #[inline]
    fn room_for_one(&mut self) {
        // `has_room(1)` without its saturating arithmetic (a power-of-two
        // length: the load limit is exact)
        if self.recent.len >= self.recent.slots.len() / MAX_LOAD_DEN * MAX_LOAD_NUM {
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
        self.reserve_main(self.recent.len);
        // `main` is far larger than the cache: each placement is a miss,
        // so the slots of the entries a few places ahead are fetched early
        let (hashes, mask) = (&self.recent_hashes, self.main.slots.len() - 1);
        for (i, (id, &h)) in (self.watermark..).zip(hashes).enumerate() {
            if let Some(&ahead) = hashes.get(i + MERGE_PREFETCH) {
                prefetch(&self.main.slots[ahead as usize & mask]);
                // and its filter word: the filter is larger than the L2
                // cache of the AMD host, so each `add` was a miss too
                self.filter.prefetch(ahead);
            }
            self.main.put((h as u64) << 32 | (id as u64 + 1));
            self.filter.add(h);
        }
        self.recent.slots.fill(0);
        self.recent.len = 0;
        self.recent_hashes.clear();
        self.watermark = self.next;
    }

    /// Find the id whose node `eq` accepts among those stored with hash `h`,
    /// or the vacant slot for a new one. `newest_child` is the largest child
    /// id of the node looked up (None for a leaf).
    ///
    /// An equal node has the same children, so it was interned after the
    /// newest of them. When that child is one of the last [`SCAN_MAX`] ids
    /// (a DAG interned bottom-up: a parent right after its child), only the
    /// ids since are candidates, and their hashes are the tail of
    /// `recent_hashes`, just written and in cache; the tables, whose slots
    /// are a cache miss at this size, are not read at all.
    #[inline(always)]
    pub(super) fn probe(&mut self, h: u32, newest_child: Option<u32>, mut eq: impl FnMut(u32) -> bool) -> Probe {
        if let Some(c) = newest_child.filter(|&c| c >= self.watermark && c < self.next && self.next - c <= SCAN_MAX) {
            // a new node goes into `recent` after the scan: fetch its slot
            // meanwhile (the arena writes stream through the L2 cache)
            if !self.recent.slots.is_empty() {
                prefetch(&self.recent.slots[h as usize & (self.recent.slots.len() - 1)]);
            }
            let since = (c + 1 - self.watermark) as usize;
            for (id, &hh) in (c + 1..).zip(&self.recent_hashes[since..]) {
                if hh == h && eq(id) {
                    return Probe::Found(id);
                }
            }
            return Probe::Absent;
        }
        self.room_for_one();
        let in_main = newest_child.is_none_or(|c| c < self.watermark);
        if in_main {
            self.prefetch_main(h);
        }
        let slot = match self.recent.find(h, &mut eq) {
            Ok(id) => return Probe::Found(id),
            Err(slot) => slot.expect("room_for_one gave recent slots"),
        };
        if in_main {
            if let Some(id) = self.find_main(h, eq) {
                return Probe::Found(id);
            }
        }
        Probe::Vacant(slot)
    }

    /// Start fetching what a lookup of hash `h` in `main` reads: its slot
    /// and its filter word, both cache misses at 1M nodes (the filter is
    /// larger than the L2 cache of the AMD host), so that they overlap the
    /// work before the lookup needs them. A hint only.
    #[inline(always)]
    fn prefetch_main(&self, h: u32) {
        if !self.main.slots.is_empty() {
            prefetch(&self.main.slots[h as usize & (self.main.slots.len() - 1)]);
            self.filter.prefetch(h);
        }
    }

    /// [`Index::prefetch_main`] for a node that [`Index::probe`] will look
    /// up in `main` (`newest_child` is below the watermark); nothing otherwise.
    #[inline(always)]
    pub(super) fn prefetch_for(&self, h: u32, newest_child: u32) {
        if newest_child < self.watermark {
            self.prefetch_main(h);
        }
    }

    /// Like [`Index::probe`] without the option to insert.
    pub(super) fn find(&self, h: u32, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.recent.find(h, &mut eq).ok().or_else(|| self.find_main(h, eq))
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

    /// Add the next id without a slot from a probe: after [`Probe::Absent`],
    /// or for an entry that need not be unique (a fresh id for a node that
    /// may equal an existing one: `Context::insert_canonical` without sharing).
    pub(super) fn insert(&mut self, h: u32, id: u32) {
        debug_assert!(id < u32::MAX && id == self.next);
        self.room_for_one();
        self.recent.put((h as u64) << 32 | (id as u64 + 1));
        self.recent_hashes.push(h);
        self.next = id + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(ix: &mut Index, h: u32, id: u32, newest: Option<u32>) {
        match ix.probe(h, newest, |i| i == id) {
            Probe::Found(_) => panic!("{id} found before it was added"),
            Probe::Vacant(slot) => ix.fill(slot, h, id),
            Probe::Absent => ix.insert(h, id),
        }
    }

    #[test]
    fn index_scans_the_ids_since_a_newest_child_that_is_one_of_the_last() {
        let mut ix = Index::default();
        let hash = |k: u32| k.wrapping_mul(0x9E37_79B9);
        for k in 0..10u32 {
            add(&mut ix, hash(k), k, None);
        }
        // child 9 is the newest id: nothing was interned after it
        assert!(matches!(ix.probe(hash(3), Some(9), |_| true), Probe::Absent));
        // child 5: ids 6..9 are the candidates, found by their hashes alone
        assert!(matches!(ix.probe(hash(7), Some(5), |id| id == 7), Probe::Found(7)));
        assert!(matches!(ix.probe(hash(3), Some(5), |_| true), Probe::Absent));
        // an id added after an Absent probe is found by the tables too
        add(&mut ix, 0xABCD, 10, Some(9));
        assert_eq!(ix.find(0xABCD, |id| id == 10), Some(10));
        assert!(matches!(ix.probe(0xABCD, None, |id| id == 10), Probe::Found(10)));
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
    fn index_filter_never_turns_away_a_stored_hash() {
        let mut f = Filter::for_slots(1 << 12);
        let hashes: Vec<u32> = (0..3000u32).map(|k| k.wrapping_mul(0x85EB_CA6B) ^ (k >> 3)).collect();
        for &h in &hashes {
            f.add(h);
        }
        assert!(hashes.iter().all(|&h| f.may_contain(h)));
        // and it turns most others away (a filter, not a yes-machine)
        let away = (0..10_000u32)
            .filter(|k| !f.may_contain(k.wrapping_mul(0x27D4_EB2F) ^ 0x5555))
            .count();
        assert!(away > 5_000, "{away}");
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
