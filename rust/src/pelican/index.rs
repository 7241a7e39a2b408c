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

use crate::simd::prefetch;

/// Largest load before a table doubles: 3/4 keeps an unsuccessful linear
/// probe at a few slots, i.e. within one or two cache lines.
const MAX_LOAD_NUM: usize = 3;
const MAX_LOAD_DEN: usize = 4;

/// A segment holds the nodes whose newest child (largest child id) lies
/// in one range of `1 << SEG_SHIFT` ids (see [`Index`]).
const SEG_SHIFT: u32 = 14;

/// Entries a segment is first made for at most, while reserved ids remain
/// (see [`Index::reserve`]): as many as its range has ids. 32k slots,
/// 256 KiB: within the L2 cache.
const SEG_ENTRIES: usize = 1 << SEG_SHIFT;

/// One open-addressing table.
#[derive(Clone, Default)]
struct Table {
    /// `hash << 32 | (id + 1)`, or 0 when empty; the length is 0 or a power of two.
    slots: Vec<u64>,
    len: usize,
}

impl Table {
    /// An empty table with room for `n` entries.
    fn with_entries(n: usize) -> Self {
        Table {
            slots: vec![0; Self::slots_for(n)],
            len: 0,
        }
    }

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
    #[inline(always)]
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

/// The index: one table per *segment* of newest-child ids. A node whose
/// newest child (largest child id) is `c` lives in segment
/// `1 + c >> SEG_SHIFT`; a node without a child in segment 0. Whatever an
/// equal node is, it has the same children, so a lookup reads one segment:
///
/// - A DAG is interned bottom-up, so most new nodes have a newest child
///   among the last ids: their segment is the one being filled, small and
///   in cache, for lookups and new entries alike.
/// - A node over an old child (a delinearized address over the loop IVs)
///   reads the segment of that child, one cache miss as in a single large
///   table, and a new one goes into the very slot that ended its probe.
///
/// Before this, young nodes went into a small `recent` table and were
/// merged into one large `main` table (16 MB at 1M nodes) each time it
/// filled: one cache miss per merged node, ~10 % of a 1M-node batch
/// (docs/performance.md, interning, tenth round). A segment needs no merge:
/// its nodes stay where they were put.
#[derive(Clone, Default)]
pub(super) struct Index {
    segs: Vec<Table>,
    /// The hashes of the last [`SCAN_MAX`] ids (`ring[id % SCAN_MAX]`): the
    /// scan of [`Index::probe`] reads them.
    ring: [u32; SCAN_MAX as usize],
    /// One past the largest id stored (ids are issued in order).
    next: u32,
    /// New segments are made for the ids still reserved below this (at
    /// most [`SEG_ENTRIES`]), for a few otherwise: a batch of 1M rows does
    /// not grow its segments, a small module does not get large ones.
    reserved_until: u32,
}

/// An empty slot a lookup ended on (valid until the index next changes).
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    seg: usize,
    pos: usize,
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

/// The segment of a node with this newest child.
#[inline(always)]
fn seg_of(newest_child: Option<u32>) -> usize {
    newest_child.map_or(0, |c| (c >> SEG_SHIFT) as usize + 1)
}

impl Index {
    pub(super) fn with_capacity(n: usize) -> Self {
        let mut ix = Index::default();
        ix.reserve(n);
        ix
    }

    /// Expect `extra` more entries: the segments made for them start at
    /// their full size instead of growing into it.
    pub(super) fn reserve(&mut self, extra: usize) {
        let until = (self.next as usize).saturating_add(extra).min(u32::MAX as usize) as u32;
        self.reserved_until = self.reserved_until.max(until);
    }

    /// The segment `k`, made (with its predecessors) if it is new, with
    /// room for one more entry.
    #[inline(always)]
    fn seg_with_room(&mut self, k: usize) -> &mut Table {
        if k >= self.segs.len() || !self.segs[k].has_room(1) {
            self.make_room(k);
        }
        &mut self.segs[k]
    }

    #[cold]
    #[inline(never)]
    fn make_room(&mut self, k: usize) {
        if k >= self.segs.len() {
            self.segs.resize_with(k + 1, Table::default);
        }
        let t = &mut self.segs[k];
        if t.slots.is_empty() {
            // the ids still reserved, at most a segment's worth (a node
            // has about one parent whose newest child it is)
            let reserved = self.reserved_until.saturating_sub(self.next) as usize;
            let n = if k > 0 { reserved.clamp(8, SEG_ENTRIES) } else { 8 };
            *t = Table::with_entries(n);
        } else {
            t.reserve(1);
        }
    }

    /// Find the id whose node `eq` accepts among those stored with hash `h`,
    /// or the vacant slot for a new one. `newest_child` is the largest child
    /// id of the node looked up (None for a leaf).
    ///
    /// An equal node has the same children, so it was interned after the
    /// newest of them. When that child is one of the last [`SCAN_MAX`] ids
    /// (a DAG interned bottom-up: a parent right after its child), only the
    /// ids since are candidates, and their hashes are in `ring`; the table
    /// is not read at all.
    #[inline(always)]
    pub(super) fn probe(&mut self, h: u32, newest_child: Option<u32>, mut eq: impl FnMut(u32) -> bool) -> Probe {
        if let Some(c) = newest_child.filter(|&c| c < self.next && self.next - c <= SCAN_MAX) {
            // a new node goes into the table after the scan: fetch its slot meanwhile
            self.prefetch_for(h, newest_child);
            for id in c + 1..self.next {
                if self.ring[(id % SCAN_MAX) as usize] == h && eq(id) {
                    return Probe::Found(id);
                }
            }
            return Probe::Absent;
        }
        let seg = seg_of(newest_child);
        match self.seg_with_room(seg).find(h, &mut eq) {
            Ok(id) => Probe::Found(id),
            Err(pos) => Probe::Vacant(Slot {
                seg,
                pos: pos.expect("room was made in the table"),
            }),
        }
    }

    /// Start fetching what a lookup of hash `h` for a node with this newest
    /// child reads from its segment (its first slot: a cache miss when the
    /// segment is an old one), so that it overlaps the work before the
    /// lookup needs it. A hint only.
    #[inline(always)]
    pub(super) fn prefetch_for(&self, h: u32, newest_child: Option<u32>) {
        if let Some(t) = self.segs.get(seg_of(newest_child)) {
            t.prefetch(h);
        }
    }

    /// The first id stored with hash `h` in the segment of a node with
    /// this newest child (the candidate a lookup would compare first). A
    /// hint for prefetching: it compares no node.
    #[inline]
    pub(super) fn peek(&self, h: u32, newest_child: Option<u32>) -> Option<u32> {
        self.segs.get(seg_of(newest_child))?.find(h, |_| true).ok()
    }

    /// Like [`Index::probe`] without the option to insert.
    pub(super) fn find(&self, h: u32, newest_child: Option<u32>, eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.segs.get(seg_of(newest_child))?.find(h, eq).ok()
    }

    /// Fill the slot a [`Probe::Vacant`] named with a new id (the next one:
    /// ids are issued in order; it must be below `u32::MAX`).
    #[inline]
    pub(super) fn fill(&mut self, slot: Slot, h: u32, id: u32) {
        debug_assert!(id < u32::MAX && id == self.next);
        self.segs[slot.seg].fill(slot.pos, h, id);
        self.issued(h, id);
    }

    /// Add the next id without a slot from a probe: after [`Probe::Absent`],
    /// or for an entry that need not be unique (a fresh id for a node that
    /// may equal an existing one: `Context::insert_canonical` without sharing).
    #[inline(always)]
    pub(super) fn insert(&mut self, h: u32, id: u32, newest_child: Option<u32>) {
        debug_assert!(id < u32::MAX && id == self.next);
        self.seg_with_room(seg_of(newest_child))
            .put((h as u64) << 32 | (id as u64 + 1));
        self.issued(h, id);
    }

    #[inline(always)]
    fn issued(&mut self, h: u32, id: u32) {
        self.ring[(id % SCAN_MAX) as usize] = h;
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
        assert_eq!(ix.find(0xABCD, Some(9), |id| id == 10), Some(10));
    }

    /// Ids `0..n` in `ix`, id k with newest child k − 1 (a chain, young when
    /// added: the way a DAG is interned bottom-up), hashes from `hash`.
    fn chain(ix: &mut Index, n: u32, hash: impl Fn(u32) -> u32) {
        for k in 0..n {
            add(ix, hash(k), k, k.checked_sub(1));
        }
    }

    #[test]
    fn index_finds_what_was_filled_across_growth_segments_and_colliding_hashes() {
        // pairs of keys share a hash: lookups must go by eq
        let key_hash = |k: u32| (k / 2).wrapping_mul(0x9E37_79B9);
        let n = 200_000u32; // many segments
        for young in [true, false] {
            let mut ix = Index::default();
            if young {
                chain(&mut ix, n, key_hash);
                assert!(ix.segs.len() > 10);
            } else {
                // leaves: all in segment 0
                (0..n).for_each(|k| add(&mut ix, key_hash(k), k, None));
                assert_eq!(ix.segs.len(), 1);
            }
            assert_eq!(ix.segs.iter().map(|t| t.len).sum::<usize>(), n as usize);
            for t in &ix.segs {
                assert!(t.slots.is_empty() || (t.slots.len().is_power_of_two() && t.len * 4 <= t.slots.len() * 3));
            }
            for k in 0..n {
                let newest = if young { k.checked_sub(1) } else { None };
                assert_eq!(ix.find(key_hash(k), newest, |id| id == k), Some(k));
                assert!(matches!(ix.probe(key_hash(k), newest, |id| id == k), Probe::Found(id) if id == k));
            }
            assert_eq!(ix.find(key_hash(2 * n), None, |id| id == 2 * n), None);
        }
    }

    #[test]
    fn index_keeps_a_node_in_the_segment_of_its_newest_child() {
        let mut ix = Index::default();
        chain(&mut ix, 100_000, |k| k.wrapping_mul(0x9E37_79B9));
        let lens = |ix: &Index| ix.segs.iter().map(|t| t.len).collect::<Vec<_>>();
        // a node over an old child goes into that child's segment …
        let before = lens(&ix);
        let next = ix.next;
        add(&mut ix, 0x1234_5678, next, Some(5));
        let after = lens(&ix);
        assert_eq!(after[seg_of(Some(5))], before[seg_of(Some(5))] + 1);
        assert_eq!(after.iter().sum::<usize>(), before.iter().sum::<usize>() + 1);
        // … and is found there, and only by a lookup with that newest child
        assert_eq!(ix.find(0x1234_5678, Some(5), |id| id == next), Some(next));
        assert_eq!(ix.find(0x1234_5678, Some(90_000), |id| id == next), None);
        assert!(matches!(
            ix.probe(0x1234_5678, Some(90_000), |id| id == next),
            Probe::Vacant(Slot { seg, .. }) if seg == seg_of(Some(90_000))
        ));
    }

    #[test]
    fn index_reserved_segments_start_full_size_and_others_small() {
        let mut ix = Index::with_capacity(50_000);
        chain(&mut ix, 40_000, |k| k.wrapping_mul(0x9E37_79B9));
        assert_eq!(ix.segs[1].slots.len(), Table::slots_for(SEG_ENTRIES));
        // a small reservation makes small segments
        let mut ix = Index::with_capacity(1000);
        chain(&mut ix, 500, |k| k.wrapping_mul(0x9E37_79B9));
        assert_eq!(ix.segs[1].slots.len(), Table::slots_for(1000));
        // without a reservation a segment starts small (and grows as it fills)
        let mut small = Index::default();
        add(&mut small, 7, 0, None);
        add(&mut small, 8, 1, Some(0));
        assert!(small.segs.iter().all(|t| t.slots.len() <= 16));
    }

    #[test]
    fn index_insert_keeps_duplicates_apart() {
        let mut ix = Index::with_capacity(100);
        for id in 0..100 {
            ix.insert(7, id, None);
        }
        // every entry with hash 7 is there; eq picks which one is meant
        assert_eq!(ix.find(7, None, |id| id == 42), Some(42));
        assert!(ix.find(7, None, |_| true).is_some_and(|id| id < 100));
        assert_eq!(Index::default().find(7, None, |_| true), None);
    }
}
