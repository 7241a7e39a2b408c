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

use hashbrown::HashMap;

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
}

/// The footprint of one access on one physical location: element indices
/// in AP order.
#[derive(Clone, Debug)]
pub struct Span {
    pub loc: LocId,
    pub points: Progression,
    pub esize: i64,
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
    /// with `acc` when given; log the old bytes and the writer per `log`.
    pub fn store(&mut self, span: &Span, data: &[u8], acc: Option<AccOp>, log: &mut StoreLog<'_>) {
        if let Some(j) = log.journal.as_deref_mut() {
            let at = j.old.len();
            self.gather(span, &mut j.old);
            j.entries.push(JournalEntry {
                span: span.clone(),
                at,
                writer: log.writer,
            });
        }
        let b = &mut self.bufs[span.loc as usize];
        let es = span.esize as usize;
        let wes = b.esize as usize;
        let mut k = 0usize;
        for_each_run(&span.points, |e, n| {
            let s = e as usize * es;
            let len = n * es;
            let dst = &mut b.bytes[s..s + len];
            let src = &data[k..k + len];
            match acc {
                None => dst.copy_from_slice(src),
                Some(op) => combine(dst, src, es, op),
            }
            if log.track {
                if let Some(w) = b.writers.as_mut() {
                    w[s / wes..(s + len).div_ceil(wes)].fill(log.writer);
                }
            }
            k += len;
        });
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
/// patterns of `es` bytes: wrapping add, unsigned max, unsigned min.
pub fn combine(dst: &mut [u8], src: &[u8], es: usize, op: AccOp) {
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
