//! The simulator's memory (contract §3.8): one zeroed byte buffer per physical
//! location (§3.6 — shared locations are core 0's, proxies resolve to their
//! target), partition-major, so element `e` of an access is bytes
//! `e·esize … e·esize+esize−1` of its buffer.
//!
//! Everything that moves bytes goes through [`Memory::gather`] and
//! [`Memory::store`], which walk a footprint as maximal contiguous runs (one
//! `memcpy` per run: the generator's and the front end's APs have a unit-step
//! inner dim). A store can log the bytes it overwrites to a [`Journal`] (so an
//! interval can be undone and run again in the other core order) and record
//! its instruction as the last writer of each element of an Output location
//! (so `equivalent` can name who wrote a differing element; one u32 per
//! element of the owner's layout, not per byte).
//!
//! Float `add` accumulates are kept as exact sums per element until the
//! element is next read or plainly written (`super::accumulate`): every read
//! of a span goes through [`Memory::settle`] first, a plain store drops the
//! span's pending sums, and [`Memory::settle_all`] rounds what is left when
//! the function ends.

use hashbrown::HashMap;

use super::accumulate::{self, Pending};
use super::numeric::dtype::DType;
use crate::analysis::footprint::Progression;
use crate::analysis::location::PhysLoc;
use crate::analysis::AccOp;

/// Index of a physical location in [`Memory::bufs`].
pub type LocId = u32;

/// Writer id 0: nobody (an input byte, or never written).
pub const NO_WRITER: u32 = 0;

/// One physical location's bytes.
pub struct Buffer {
    pub phys: PhysLoc,
    /// Bytes per partition of the owner's layout (for (partition, byte) coordinates).
    pub partition_bytes: i64,
    /// Element size of the owner's layout: the granularity of `writers`.
    pub esize: i64,
    pub bytes: Vec<u8>,
    /// The last writer of every element (`esize` bytes), on locations some
    /// core reads as an Output set. A store covering part of an element
    /// names its writer for the whole element.
    pub writers: Option<Vec<u32>>,
    /// Float `add` accumulates not yet rounded, by element byte offset.
    pub pending: Pending,
}

/// The footprint of one access on one physical location: element indices
/// in AP order.
#[derive(Clone, Debug)]
pub struct Span {
    pub loc: LocId,
    pub points: Progression,
    pub esize: i64,
    /// The element dtype the access reads or writes (its AP's, else its set's).
    pub dtype: DType,
}

impl Span {
    /// Number of elements (the footprint's count, repeats included).
    pub fn count(&self) -> usize {
        self.points.count().unwrap_or(0).max(0) as usize
    }

    pub fn byte_len(&self) -> usize {
        self.count() * self.esize as usize
    }
}

/// Bytes overwritten by stores, in order, so they can be undone.
#[derive(Default)]
pub struct Journal {
    pub entries: Vec<JournalEntry>,
    pub old: Vec<u8>,
}

pub struct JournalEntry {
    pub span: Span,
    /// Offset of this entry's old bytes in `old`.
    pub at: usize,
    pub writer: u32,
}

impl Journal {
    pub fn clear(&mut self) {
        self.entries.clear();
        self.old.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Where a store logs: the journal (None: not undoable) and whether it
/// records its writer on tracked locations.
pub struct StoreLog<'j> {
    pub journal: Option<&'j mut Journal>,
    pub writer: u32,
    pub track: bool,
}

#[derive(Default)]
pub struct Memory {
    pub bufs: Vec<Buffer>,
    index: HashMap<PhysLoc, LocId>,
}

impl Memory {
    pub fn clear(&mut self) {
        self.bufs.clear();
        self.index.clear();
    }

    pub fn get(&self, phys: &PhysLoc) -> Option<LocId> {
        self.index.get(phys).copied()
    }

    /// The buffer of `phys`, allocated zeroed with `len` bytes on first use.
    pub fn allocate(&mut self, phys: PhysLoc, partition_bytes: i64, esize: i64, len: usize) -> LocId {
        if let Some(&id) = self.index.get(&phys) {
            return id;
        }
        let id = self.bufs.len() as LocId;
        self.index.insert(phys.clone(), id);
        self.bufs.push(Buffer {
            phys,
            partition_bytes,
            esize: esize.max(1),
            bytes: vec![0; len],
            writers: None,
            pending: Pending::new(),
        });
        id
    }

    pub fn track_writers(&mut self, loc: LocId) {
        let b = &mut self.bufs[loc as usize];
        if b.writers.is_none() {
            let elements = b.bytes.len().div_ceil(b.esize as usize);
            b.writers = Some(vec![NO_WRITER; elements]);
        }
    }

    /// Append the bytes of `span` in AP order to `out`.
    pub fn gather(&self, span: &Span, out: &mut Vec<u8>) {
        out.reserve(span.byte_len());
        self.for_each_slice(span, |b| out.extend_from_slice(b));
    }

    /// The bytes of `span` in AP order in place, when they are one run of
    /// the buffer (the common whole tile): no gathered copy needed.
    pub fn contiguous(&self, span: &Span) -> Option<&[u8]> {
        let buf = &self.bufs[span.loc as usize].bytes;
        let es = span.esize as usize;
        let (mut first, mut runs) = (None, 0usize);
        for_each_run(&span.points, |e, n| {
            runs += 1;
            first.get_or_insert((e as usize * es, n * es));
        });
        match (runs, first) {
            (1, Some((s, len))) => buf.get(s..s + len),
            _ => None,
        }
    }

    /// Call `f` on the bytes of `span`, run by run, in AP order.
    pub fn for_each_slice(&self, span: &Span, mut f: impl FnMut(&[u8])) {
        let buf = &self.bufs[span.loc as usize].bytes;
        let es = span.esize as usize;
        for_each_run(&span.points, |e, n| {
            let s = e as usize * es;
            f(&buf[s..s + n * es]);
        });
    }

    /// Write `data` (the span's bytes in AP order) into the span, combining
    /// with `acc` when given (by value, in the span's dtype:
    /// `super::accumulate`); log the old bytes and the writer per `log`.
    pub fn store(&mut self, span: &Span, data: &[u8], acc: Option<AccOp>, log: &mut StoreLog<'_>) {
        let float_add = acc == Some(AccOp::Add) && span.dtype.is_float();
        if !float_add {
            // a plain write drops the pending sums it overwrites; another
            // accumulate reads the element first
            if acc.is_some() {
                self.settle(span, log);
            } else {
                self.drop_pending(span);
            }
        }
        if let Some(j) = log.journal.as_deref_mut() {
            if !float_add {
                let at = j.old.len();
                self.gather(span, &mut j.old);
                j.entries.push(JournalEntry {
                    span: span.clone(),
                    at,
                    writer: log.writer,
                });
            }
        }
        let b = &mut self.bufs[span.loc as usize];
        let es = span.esize as usize;
        let wes = b.esize as usize;
        let mut k = 0usize;
        for_each_run(&span.points, |e, n| {
            let s = e as usize * es;
            let len = n * es;
            let src = &data[k..k + len];
            match acc {
                None => b.bytes[s..s + len].copy_from_slice(src),
                Some(_) if float_add => {
                    accumulate::add_pending(&mut b.pending, s as u64, &b.bytes[s..s + len], src, span.dtype)
                }
                Some(op) => accumulate::combine(&mut b.bytes[s..s + len], src, span.dtype, op),
            }
            if log.track {
                if let Some(w) = b.writers.as_mut() {
                    w[s / wes..(s + len).div_ceil(wes)].fill(log.writer);
                }
            }
            k += len;
        });
    }

    /// Round the pending sums of the elements `span` touches into their
    /// bytes (the element is read), logging the old bytes per `log`.
    pub fn settle(&mut self, span: &Span, log: &mut StoreLog<'_>) {
        let b = &mut self.bufs[span.loc as usize];
        if b.pending.is_empty() {
            return;
        }
        let es = span.esize as u64;
        let keys = touched_keys(&b.pending, span, b.esize as u64);
        for key in keys {
            let Some(slot) = b.pending.remove(&key) else {
                continue;
            };
            let size = slot.dtype.size();
            let at = key as usize;
            if let Some(j) = log.journal.as_deref_mut() {
                let old = j.old.len();
                j.old.extend_from_slice(&b.bytes[at..at + size]);
                j.entries.push(JournalEntry {
                    span: Span {
                        loc: span.loc,
                        points: Progression {
                            base: (key / es.max(1)) as i64,
                            dims: smallvec::SmallVec::new(),
                        },
                        esize: size as i64,
                        dtype: slot.dtype,
                    },
                    at: old,
                    writer: log.writer,
                });
            }
            b.bytes[at..at + size].copy_from_slice(&slot.bits().to_le_bytes()[..size]);
        }
    }

    /// Drop the pending sums of the elements `span` overwrites.
    fn drop_pending(&mut self, span: &Span) {
        let b = &mut self.bufs[span.loc as usize];
        if b.pending.is_empty() {
            return;
        }
        for key in touched_keys(&b.pending, span, b.esize as u64) {
            b.pending.remove(&key);
        }
    }

    /// Round every pending sum (the function ends).
    pub fn settle_all(&mut self) {
        for b in &mut self.bufs {
            for (key, slot) in b.pending.drain() {
                let (at, size) = (key as usize, slot.dtype.size());
                b.bytes[at..at + size].copy_from_slice(&slot.bits().to_le_bytes()[..size]);
            }
        }
    }

    /// Every buffer's pending sums (to run an interval again in the other
    /// core order from the same state).
    pub fn pending_snapshot(&self) -> Vec<(LocId, Pending)> {
        (self.bufs.iter().enumerate())
            .filter(|(_, b)| !b.pending.is_empty())
            .map(|(i, b)| (i as LocId, b.pending.clone()))
            .collect()
    }

    pub fn pending_restore(&mut self, snap: &[(LocId, Pending)]) {
        for b in &mut self.bufs {
            b.pending.clear();
        }
        for (loc, p) in snap {
            self.bufs[*loc as usize].pending = p.clone();
        }
    }

    /// Undo every store of `journal`, last first.
    pub fn undo(&mut self, journal: &Journal) {
        for e in journal.entries.iter().rev() {
            let len = e.span.byte_len();
            let old = &journal.old[e.at..e.at + len];
            let b = &mut self.bufs[e.span.loc as usize].bytes;
            let es = e.span.esize as usize;
            let mut k = 0usize;
            for_each_run(&e.span.points, |x, n| {
                let s = x as usize * es;
                b[s..s + n * es].copy_from_slice(&old[k..k + n * es]);
                k += n * es;
            });
        }
    }
}

/// Call `f(first element, element count)` for every maximal run of
/// consecutive elements of `p`, in AP order. Inner dims fold into one run
/// when the unit-step innermost dim and each enclosing step line up.
pub fn for_each_run(p: &Progression, mut f: impl FnMut(i64, usize)) {
    if p.is_empty() {
        return;
    }
    let mut dims: smallvec::SmallVec<[[i64; 2]; 4]> = p.dims.iter().copied().filter(|d| d[1] != 1).collect();
    let mut run = 1i64;
    if dims.last().is_some_and(|d| d[0] == 1) {
        while let Some(&[s, n]) = dims.last() {
            if s != run {
                break;
            }
            run *= n;
            dims.pop();
        }
    }
    let outer = Progression {
        base: p.base,
        dims: dims.into_iter().collect(),
    };
    let n = run as usize;
    outer.for_each(|e| f(e, n));
}

/// `dst ← op(dst, src)` element by element on little-endian unsigned bit
/// patterns of `es` bytes: wrapping add, unsigned max, unsigned min (the
/// dtypes lncsplit moves but does not compute in).
pub fn combine_bits(dst: &mut [u8], src: &[u8], es: usize, op: AccOp) {
    for (d, s) in dst.chunks_exact_mut(es).zip(src.chunks_exact(es)) {
        let (a, b) = (read_le(d), read_le(s));
        let r = match op {
            AccOp::Add => a.wrapping_add(b),
            AccOp::Max => a.max(b),
            AccOp::Min => a.min(b),
        };
        write_le(d, r);
    }
}

/// The unsigned value of up to 8 little-endian bytes.
pub fn read_le(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(x)
}

/// Store the low `b.len()` bytes of `v`, little-endian (wrapping).
pub fn write_le(b: &mut [u8], v: u64) {
    let n = b.len();
    b.copy_from_slice(&v.to_le_bytes()[..n]);
}

/// The pending keys (element byte offsets) among the bytes `span` touches:
/// probed element by element when its elements are the buffer's, else (a
/// view of another element size: rare) every pending element overlapping it.
fn touched_keys(pending: &Pending, span: &Span, buf_esize: u64) -> Vec<u64> {
    let es = span.esize as u64;
    let mut out = Vec::new();
    if es == buf_esize && (span.count() as u64) <= 4 * pending.len() as u64 + 64 {
        span.points.for_each(|e| {
            let key = e as u64 * es;
            if pending.contains_key(&key) {
                out.push(key);
            }
        });
        return out;
    }
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for_each_run(&span.points, |e, n| {
        let s = e as u64 * es;
        runs.push((s, s + n as u64 * es));
    });
    runs.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
    for r in runs {
        match merged.last_mut() {
            Some(m) if r.0 <= m.1 => m.1 = m.1.max(r.1),
            _ => merged.push(r),
        }
    }
    let runs = merged;
    for (&key, slot) in pending.iter() {
        let end = key + slot.dtype.size() as u64;
        let i = runs.partition_point(|r| r.1 <= key);
        if runs.get(i).is_some_and(|r| r.0 < end) {
            out.push(key);
        }
    }
    out.sort_unstable();
    out
}
