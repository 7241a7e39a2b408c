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

/// Ids since the watermark after which the watermark moves up even if
/// `recent` is not full (nodes placed straight into `main` do not fill it,
/// but each keeps an entry in `recent_hashes`).
const RECENT_IDS_MAX: usize = 4 * RECENT_SLOTS;

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

    #[inline]
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

    /// Fill an empty slot that a [`Table::find`] returned.
    #[inline]
    fn fill(&mut self, pos: usize, h: u32, id: u32) {
        debug_assert!(self.slots[pos] == 0);
        self.slots[pos] = (h as u64) << 32 | (id as u64 + 1);
        self.len += 1;
    }

    /// Start fetching the first slot a lookup of hash `h` reads.
    #[inline(always)]
    fn prefetch(&self, h: u32) {
        if !self.slots.is_empty() {
            prefetch(&self.slots[h as usize & (self.slots.len() - 1)]);
        }
    }
}

/// The index: two tables, split by the *newest child* of a node (its
/// largest child id) against the `watermark`. Whatever an equal node is,
/// it has the same children, so it was interned after that child and is
/// kept by the same rule:
///
/// - **old** nodes (no child, or the newest below the watermark) live in
///   `main`, the large table, far larger than the cache. Their lookup reads
///   one slot there, and a new one goes into the very slot that ended the
///   probe, in cache by then.
/// - **young** nodes (the newest child at or past the watermark) go into
///   `recent`, small enough to stay in cache, and are looked up there alone.
///   A DAG is interned bottom-up, so most new nodes are young, and most
///   lookups touch no line of `main` at all. When `recent` is full its
///   entries move to `main` and the watermark moves up to the next id: every
///   node in `main` is then old, as the rule wants.
#[derive(Clone, Default)]
pub(super) struct Index {
    main: Table,
    recent: Table,
    /// The hashes of every id from `watermark` on, in id order (young or
    /// old): a scan of the last ids reads them (see [`Index::probe`]).
    recent_hashes: Vec<u32>,
    watermark: u32,
    /// One past the largest id stored (ids are issued in order).
    next: u32,
}

/// An empty slot a lookup ended on (valid until the index next changes).
#[derive(Clone, Copy, Debug)]
pub(super) enum Slot {
    Main(usize),
    Recent(usize),
}

/// Where a lookup ended: the id of an equal node, or the empty slot a new
/// node goes into, or no equal node and no slot looked up (the node goes in
/// by [`Index::insert`]).
pub(super) enum Probe {
    Found(u32),
    Vacant(Slot),
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
        self.main.reserve(self.recent.len.saturating_add(extra));
        // a large batch fills `recent` anyway: size it once instead of doubling
        let recent_max = RECENT_SLOTS / MAX_LOAD_DEN * MAX_LOAD_NUM;
        self.recent
            .reserve(extra.min(recent_max - self.recent.len.min(recent_max)));
    }

    /// A node with this newest child lives in `main` (see [`Index`]).
    #[inline(always)]
    fn is_old(&self, newest_child: Option<u32>) -> bool {
        newest_child.is_none_or(|c| c < self.watermark)
    }

    /// Make room for one more entry in `recent`, or one more id since the watermark.
    #[inline]
    fn room_for_one(&mut self) {
        // `has_room(1)` without its saturating arithmetic (a power-of-two
        // length: the load limit is exact)
        if self.recent.len >= self.recent.slots.len() / MAX_LOAD_DEN * MAX_LOAD_NUM
            || self.recent_hashes.len() >= RECENT_IDS_MAX
        {
            self.make_room();
        }
    }

    /// Grow `recent` up to its limit, then move its entries to `main`.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) {
        if self.recent.slots.len() < RECENT_SLOTS && self.recent_hashes.len() < RECENT_IDS_MAX {
            self.recent.reserve(1);
            return;
        }
        self.main.reserve(self.recent.len);
        // `main` is far larger than the cache: each placement is a miss,
        // so the slots of the entries a few places ahead are fetched early
        let entries = &self.recent.slots;
        let mask = self.main.slots.len() - 1;
        let mut ahead = entries.iter().filter(|&&s| s != 0).skip(MERGE_PREFETCH);
        for &s in entries.iter().filter(|&&s| s != 0) {
            if let Some(&a) = ahead.next() {
                prefetch(&self.main.slots[(a >> 32) as usize & mask]);
            }
            self.main.put(s);
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
            self.recent.prefetch(h);
            let since = (c + 1 - self.watermark) as usize;
            for (id, &hh) in (c + 1..).zip(&self.recent_hashes[since..]) {
                if hh == h && eq(id) {
                    return Probe::Found(id);
                }
            }
            return Probe::Absent;
        }
        self.room_for_one();
        let old = self.is_old(newest_child);
        let table = if old {
            if !self.main.has_room(1) {
                self.main.reserve(1);
            }
            &self.main
        } else {
            &self.recent
        };
        match table.find(h, &mut eq) {
            Ok(id) => Probe::Found(id),
            Err(pos) => {
                let pos = pos.expect("room was made in the table");
                Probe::Vacant(if old { Slot::Main(pos) } else { Slot::Recent(pos) })
            }
        }
    }

    /// Start fetching what a lookup of hash `h` in `main` reads (its first
    /// slot, a cache miss at 1M nodes), so that it overlaps the work before
    /// the lookup needs it. A hint only.
    #[inline(always)]
    fn prefetch_main(&self, h: u32) {
        self.main.prefetch(h);
    }

    /// [`Index::prefetch_main`] for a node that [`Index::probe`] will look
    /// up in `main` (an old one); nothing otherwise.
    #[inline(always)]
    pub(super) fn prefetch_for(&self, h: u32, newest_child: Option<u32>) {
        if self.is_old(newest_child) {
            self.prefetch_main(h);
        }
    }

    /// The first id of `main` stored with hash `h` (the candidate a lookup
    /// of a node with that hash and largest child `newest` would compare
    /// first), when that lookup reads `main`. A hint for prefetching: it
    /// compares no node.
    #[inline]
    pub(super) fn peek_main(&self, h: u32, newest_child: Option<u32>) -> Option<u32> {
        if !self.is_old(newest_child) {
            return None;
        }
        self.main.find(h, |_| true).ok()
    }

    /// Like [`Index::probe`] without the option to insert.
    pub(super) fn find(&self, h: u32, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.recent.find(h, &mut eq).ok().or_else(|| self.main.find(h, eq).ok())
    }

    /// Fill the slot a [`Probe::Vacant`] named with a new id (the next one:
    /// ids are issued in order; it must be below `u32::MAX`).
    #[inline]
    pub(super) fn fill(&mut self, slot: Slot, h: u32, id: u32) {
        // ids are issued in order: `recent_hashes` is indexed by `id - watermark`
        debug_assert!(id < u32::MAX && id == self.next);
        match slot {
            Slot::Main(pos) => self.main.fill(pos, h, id),
            Slot::Recent(pos) => self.recent.fill(pos, h, id),
        }
        self.recent_hashes.push(h);
        self.next = id + 1;
    }

    /// Add the next id without a slot from a probe: after [`Probe::Absent`],
    /// or for an entry that need not be unique (a fresh id for a node that
    /// may equal an existing one: `Context::insert_canonical` without sharing).
    /// `newest_child` places it by the rule of [`Index`].
    pub(super) fn insert(&mut self, h: u32, id: u32, newest_child: Option<u32>) {
        debug_assert!(id < u32::MAX && id == self.next);
        self.room_for_one();
        if self.is_old(newest_child) {
            self.main.reserve(1);
            self.main.put((h as u64) << 32 | (id as u64 + 1));
        } else {
            self.recent.put((h as u64) << 32 | (id as u64 + 1));
        }
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
            Probe::Absent => ix.insert(h, id, newest),
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
    }

    /// Ids `0..n` in `ix`, id k with newest child k − 1 (a chain, young when
    /// added: the way a DAG is interned bottom-up), hashes from `hash`.
    fn chain(ix: &mut Index, n: u32, hash: impl Fn(u32) -> u32) {
        for k in 0..n {
            add(ix, hash(k), k, k.checked_sub(1));
        }
    }

    #[test]
    fn index_finds_what_was_filled_across_growth_flushes_and_colliding_hashes() {
        // pairs of keys share a hash: lookups must go by eq
        let key_hash = |k: u32| (k / 2).wrapping_mul(0x9E37_79B9);
        let n = 200_000u32; // several flushes of `recent` into `main`
        for young in [true, false] {
            let mut ix = Index::default();
            if young {
                chain(&mut ix, n, key_hash);
                assert!(ix.watermark > 0);
            } else {
                // leaves: old, straight into `main`
                (0..n).for_each(|k| add(&mut ix, key_hash(k), k, None));
            }
            assert_eq!(ix.main.len + ix.recent.len, n as usize);
            assert!(ix.recent.slots.len() <= RECENT_SLOTS && ix.recent_hashes.len() <= RECENT_IDS_MAX);
            for t in [&ix.main, &ix.recent] {
                assert!(t.slots.len().is_power_of_two() && t.len * 4 <= t.slots.len() * 3);
            }
            for k in 0..n {
                assert_eq!(ix.find(key_hash(k), |id| id == k), Some(k));
                let newest = if young { k.checked_sub(1) } else { None };
                assert!(matches!(ix.probe(key_hash(k), newest, |id| id == k), Probe::Found(id) if id == k));
            }
            assert_eq!(ix.find(key_hash(2 * n), |id| id == 2 * n), None);
        }
    }

    #[test]
    fn index_keeps_old_nodes_in_main_and_young_ones_in_recent() {
        let mut ix = Index::default();
        chain(&mut ix, 100_000, |k| k.wrapping_mul(0x9E37_79B9));
        let w = ix.watermark;
        assert!(w > 2 && ix.next > w + SCAN_MAX);
        // a node over children below the watermark goes into `main` …
        let before = (ix.main.len, ix.recent.len);
        let next = ix.next;
        add(&mut ix, 0x1234_5678, next, Some(w - 2));
        assert_eq!((ix.main.len, ix.recent.len), (before.0 + 1, before.1));
        // … and one over a child past the watermark (not one of the last ids) into `recent`
        let next = ix.next;
        add(&mut ix, 0x2345_6789, next, Some(w));
        assert_eq!((ix.main.len, ix.recent.len), (before.0 + 1, before.1 + 1));
        // a lookup reads only the table of its newest child's age
        let old = w - 1; // in main (merged)
        let h = old.wrapping_mul(0x9E37_79B9);
        assert!(matches!(ix.probe(h, Some(old - 1), |id| id == old), Probe::Found(id) if id == old));
        assert!(matches!(
            ix.probe(h, Some(w), |id| id == old),
            Probe::Vacant(Slot::Recent(_))
        ));
        assert!(matches!(
            ix.probe(0x2345_6789, None, |_| true),
            Probe::Vacant(Slot::Main(_))
        ));
    }

    #[test]
    fn index_moves_the_watermark_after_many_old_ids() {
        // old nodes never fill `recent`, but their hashes must not pile up
        let mut ix = Index::default();
        for k in 0..(3 * RECENT_IDS_MAX as u32) {
            add(&mut ix, k.wrapping_mul(0x9E37_79B9), k, None);
        }
        assert!(ix.watermark > 0 && ix.recent_hashes.len() <= RECENT_IDS_MAX);
        assert_eq!(ix.find(7u32.wrapping_mul(0x9E37_79B9), |id| id == 7), Some(7));
    }

    #[test]
    fn index_insert_keeps_duplicates_apart_and_reserve_prevents_growth() {
        let mut ix = Index::with_capacity(100);
        let cap = ix.main.slots.len();
        for id in 0..100 {
            ix.insert(7, id, None);
        }
        ix.reserve(0);
        assert_eq!(ix.main.slots.len(), cap, "reserved room must not grow");
        // every entry with hash 7 is there; eq picks which one is meant
        assert_eq!(ix.find(7, |id| id == 42), Some(42));
        assert!(ix.find(7, |_| true).is_some_and(|id| id < 100));
        assert_eq!(Index::default().find(7, |_| true), None);
    }
}
