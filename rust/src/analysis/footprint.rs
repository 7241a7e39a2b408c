//! Footprints of access patterns (contract §3.6): the exact bytes of a memory
//! location that one access instance touches.
//!
//! A set is laid out partition-major: P partitions of F elements. An access is
//! an affine box over flat element indices `e = base + Σ_d step_d·i_d`
//! (`0 ≤ i_d < num_d`), and the bytes it touches are `e·esize … e·esize+esize−1`.
//! Two views of the same points serve the two kinds of user:
//!
//! - [`Progression`] keeps the points in *AP order* (ap dim 0 outermost, the last
//!   dim fastest): copies pair source and destination elements in that order,
//!   and the simulator gathers and scatters through it;
//! - [`RunSet`] is the same points as a *set* of bytes, normalized to an
//!   arithmetic progression of contiguous runs (mixed radix), or — where strides
//!   overlap — an explicit sorted list of runs. The race checker intersects
//!   these exactly without enumerating bytes: a residue (gcd) test first, then a
//!   leapfrog of `seek` (least byte ≥ t) on the two sets, one run at a time.

use smallvec::SmallVec;

use crate::bir::argument::{ApPair, PhysicalAp};
use crate::bir::dtype::dtype_size;
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};

/// Most explicit runs one overlapping-stride access may expand to before the
/// checker refuses it (a resource limit, documented in docs/passes.md).
pub const MAX_EXPLICIT_RUNS: u64 = 1 << 22;

/// Why an access has no valid footprint. Callers turn it into their error
/// (9302 in the race checker, 9401 in the simulator) with the instruction,
/// argument and set names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FootprintError {
    UnknownDtype(String),
    /// The AP's element size differs from its set's.
    DtypeSize {
        ap: i64,
        set: i64,
    },
    /// `addrs` must have one entry per `ap` dim.
    AddrsCount {
        ap: usize,
        addrs: usize,
    },
    /// A point outside the location (`e < 0` or `e ≥ P·F`).
    OutsideLocation {
        element: i64,
        elements: i64,
    },
    /// An on-chip (SB/PSUM) run that leaves its partition.
    WrapsPartition {
        within: i64,
        free: i64,
    },
    /// Arithmetic past 64 bits, or a location too large to address.
    Overflow,
    /// More than [`MAX_EXPLICIT_RUNS`] runs with overlapping strides.
    TooManyRuns(u64),
}

impl FootprintError {
    /// One line, for the error message of the caller.
    pub fn describe(&self) -> String {
        match self {
            FootprintError::UnknownDtype(d) => format!("unknown dtype {d}"),
            FootprintError::DtypeSize { ap, set } => {
                format!("the access's element size {ap} differs from its set's {set}")
            }
            FootprintError::AddrsCount { ap, addrs } => {
                format!("addrs has {addrs} entries for an ap of {ap} dims")
            }
            FootprintError::OutsideLocation { element, elements } => {
                format!("element {element} is outside the location's {elements} elements")
            }
            FootprintError::WrapsPartition { within, free } => format!(
                "within-partition element {within} leaves [0, {free}): on-chip runs never wrap into the next partition"
            ),
            FootprintError::Overflow => "address arithmetic overflows 64 bits".to_string(),
            FootprintError::TooManyRuns(n) => {
                format!("{n} runs with overlapping strides (more than {MAX_EXPLICIT_RUNS})")
            }
        }
    }
}

type FResult<T> = std::result::Result<T, FootprintError>;

fn mul(a: i64, b: i64) -> FResult<i64> {
    a.checked_mul(b).ok_or(FootprintError::Overflow)
}

fn add(a: i64, b: i64) -> FResult<i64> {
    a.checked_add(b).ok_or(FootprintError::Overflow)
}

/// The geometry of one memory location set: partition-major, `partitions`
/// partitions of `free` elements of `esize` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub partitions: i64,
    pub free: i64,
    pub esize: i64,
    /// SB and PSUM: runs never wrap into the next partition.
    pub on_chip: bool,
    /// S′: the partition-major stride of each tensor dim in ap order (S′[0] =
    /// F for the partition dim, then the other dims in order).
    strides: SmallVec<[i64; 4]>,
}

impl Layout {
    /// The layout of `set` placed in memory of type `mem_type` (`SB`, `PSUM`, `DRAM`).
    pub fn of(set: &MemoryLocationSet, mem_type: &str) -> FResult<Layout> {
        let esize = dtype_size(&set.dtype).ok_or_else(|| FootprintError::UnknownDtype(set.dtype.to_string()))?;
        let pdim = set.partition_dim();
        let partitions = set.tensor_shape.get(pdim).copied().unwrap_or(1).max(0);
        let others: SmallVec<[i64; 4]> = (set.tensor_shape.iter().enumerate())
            .filter(|&(i, _)| i != pdim)
            .map(|(_, &d)| d.max(0))
            .collect();
        let mut strides: SmallVec<[i64; 4]> = SmallVec::with_capacity(others.len() + 1);
        let mut acc = 1i64;
        for &d in others.iter().rev() {
            strides.push(acc);
            acc = mul(acc, d)?;
        }
        strides.push(acc); // S′[0] = F
        strides.reverse();
        // The whole location must be addressable in bytes.
        mul(mul(partitions, acc)?, esize)?;
        Ok(Layout {
            partitions,
            free: acc,
            esize,
            on_chip: matches!(mem_type, "SB" | "PSUM"),
            strides,
        })
    }

    /// A location of `partitions` partitions of `free` elements of `esize`
    /// bytes, laid out as a rank-2 tensor `[partitions, free]`: the geometry
    /// of a location's own `dims` (contract §1.7, §3.10).
    pub fn flat(partitions: i64, free: i64, esize: i64, on_chip: bool) -> FResult<Layout> {
        let (partitions, free) = (partitions.max(0), free.max(0));
        mul(mul(partitions, free)?, esize)?;
        Ok(Layout {
            partitions,
            free,
            esize,
            on_chip,
            strides: smallvec::smallvec![free, 1],
        })
    }

    /// The geometry of location `loc` of `set` (contract §1.7): the
    /// location's `dims` when it has them — `dims[0]` partitions of a pitch
    /// of `dims[1] ÷ element size` elements — else the set's. `physical_ap`
    /// accesses and the location's memory use it; a `symbolic_ap` addresses
    /// its set's tensor ([`Layout::of`]; the two agree unless the file's
    /// `dims` disagree with the set's shape).
    pub fn of_location(set: &MemoryLocationSet, loc: Option<&MemoryLocation>, mem_type: &str) -> FResult<Layout> {
        let mut l = Layout::of(set, mem_type)?;
        if let Some((p, bpp)) = loc.and_then(MemoryLocation::dims_geometry) {
            let pitch = bpp.div_euclid(l.esize.max(1));
            mul(mul(p, pitch)?, l.esize)?;
            l.partitions = p;
            l.free = pitch;
        }
        Ok(l)
    }

    /// P·F, the number of elements of the location.
    pub fn elements(&self) -> i64 {
        self.partitions * self.free
    }

    /// Bytes per partition, F·esize.
    pub fn partition_bytes(&self) -> i64 {
        self.free * self.esize
    }

    /// (partition, byte within the partition) of a flat byte offset.
    pub fn coord(&self, byte: i64) -> (i64, i64) {
        let pb = self.partition_bytes().max(1);
        (byte.div_euclid(pb), byte.rem_euclid(pb))
    }

    /// The tensor rank the strides were computed for.
    pub fn rank(&self) -> usize {
        self.strides.len()
    }

    /// The points of a `symbolic_ap` whose `addrs` evaluated to `addrs`
    /// (contract §3.6): with one ap dim per tensor dim the start is
    /// `Σ addrs[d]·S′[d]`, otherwise `addrs[0]·F + Σ_{d≥1} addrs[d]`.
    pub fn symbolic(&self, ap: &[ApPair], addrs: &[i64], esize: i64) -> FResult<Progression> {
        let (part, within) = self.symbolic_start(ap, addrs, esize)?;
        self.progression(part, within, ap)
    }

    /// [`Layout::symbolic`]'s verdict without building the points: the same
    /// error, or `Ok` where it would return a progression (the race checker's
    /// static bounds test only whether an access fits).
    pub fn check_symbolic(&self, ap: &[ApPair], addrs: &[i64], esize: i64) -> FResult<()> {
        let (part, within) = self.symbolic_start(ap, addrs, esize)?;
        self.check_box(add(part, within)?, within, ap)
    }

    /// The (partition part, within-partition part) of a symbolic access's start.
    fn symbolic_start(&self, ap: &[ApPair], addrs: &[i64], esize: i64) -> FResult<(i64, i64)> {
        self.check_esize(esize)?;
        if addrs.len() != ap.len() {
            return Err(FootprintError::AddrsCount {
                ap: ap.len(),
                addrs: addrs.len(),
            });
        }
        let mut within = 0i64;
        let mut part = 0i64;
        for (d, &a) in addrs.iter().enumerate() {
            let s = if ap.len() == self.rank() {
                self.strides[d]
            } else if d == 0 {
                self.free
            } else {
                1
            };
            let term = mul(a, s)?;
            if d == 0 {
                part = term;
            } else {
                within = add(within, term)?;
            }
        }
        Ok((part, within))
    }

    /// The points of a `physical_ap`: `e = offset + Σ_d step_d·i_d`, `offset`
    /// in **elements** within the location (contract §1.7, §3.6; it was bytes
    /// before 2026-12-02, as real neuronx-cc dumps are read): the partition
    /// part is `(offset div F)·F + step_0·i_0`, the within-partition part
    /// `(offset mod F) + Σ_{d≥1} step_d·i_d`.
    pub fn physical(&self, ap: &PhysicalAp, esize: i64) -> FResult<Progression> {
        self.check_esize(esize)?;
        let e = ap.offset.unwrap_or(0);
        let f = self.free.max(1);
        self.progression(mul(e.div_euclid(f), f)?, e.rem_euclid(f), &ap.ap)
    }

    fn check_esize(&self, esize: i64) -> FResult<()> {
        if esize != self.esize {
            return Err(FootprintError::DtypeSize {
                ap: esize,
                set: self.esize,
            });
        }
        Ok(())
    }

    /// Build and bounds-check `part + within + Σ step·i`, where ap dim 0 moves
    /// the partition part and the other dims the within-partition part.
    fn progression(&self, part: i64, within: i64, ap: &[ApPair]) -> FResult<Progression> {
        let base = add(part, within)?;
        self.check_box(base, within, ap)?;
        Ok(Progression {
            base,
            dims: ap.iter().copied().collect(),
        })
    }

    /// The bounds checks of [`Layout::progression`] on `base + Σ step·i`
    /// (`within`: its within-partition part), without building it.
    fn check_box(&self, base: i64, within: i64, ap: &[ApPair]) -> FResult<()> {
        if ap.iter().any(|d| d[1] <= 0) {
            return Ok(()); // empty: touches nothing
        }
        let (wlo, whi) = span(within, ap.get(1..).unwrap_or(&[]))?;
        if self.on_chip && (wlo < 0 || whi >= self.free) {
            let bad = if wlo < 0 { wlo } else { whi };
            return Err(FootprintError::WrapsPartition {
                within: bad,
                free: self.free,
            });
        }
        let (lo, hi) = span(base, ap)?;
        let n = self.elements();
        if lo < 0 || hi >= n {
            let bad = if lo < 0 { lo } else { hi };
            return Err(FootprintError::OutsideLocation {
                element: bad,
                elements: n,
            });
        }
        Ok(())
    }
}

/// [min, max] of `base + Σ step·i` over the box (non-empty dims).
fn span(base: i64, dims: &[ApPair]) -> FResult<(i64, i64)> {
    let (mut lo, mut hi) = (base, base);
    for &[step, num] in dims {
        let ext = mul(step, num - 1)?;
        if ext < 0 {
            lo = add(lo, ext)?;
        } else {
            hi = add(hi, ext)?;
        }
    }
    Ok((lo, hi))
}

/// The flat element indices of one access instance, in AP order:
/// `base + Σ_d dims[d].step·i_d` with `0 ≤ i_d < dims[d].num`, dim 0 outermost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progression {
    pub base: i64,
    pub dims: SmallVec<[ApPair; 4]>,
}

impl Progression {
    /// A single element.
    pub fn point(e: i64) -> Self {
        Progression {
            base: e,
            dims: SmallVec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.dims.iter().any(|d| d[1] <= 0)
    }

    /// Number of points (with repeats), None past 64 bits.
    pub fn count(&self) -> Option<i64> {
        if self.is_empty() {
            return Some(0);
        }
        self.dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(d[1]))
    }

    /// Least and greatest element (a non-empty progression).
    pub fn bounds(&self) -> FResult<(i64, i64)> {
        span(self.base, &self.dims)
    }

    /// Call `f` on every element in AP order (the last dim fastest).
    pub fn for_each(&self, mut f: impl FnMut(i64)) {
        if self.is_empty() {
            return;
        }
        let n = self.dims.len();
        if n == 0 {
            f(self.base);
            return;
        }
        let mut idx: SmallVec<[i64; 4]> = smallvec::smallvec![0; n];
        let mut e = self.base;
        let [inner_step, inner_num] = self.dims[n - 1];
        loop {
            let mut x = e;
            for _ in 0..inner_num {
                f(x);
                x = x.wrapping_add(inner_step);
            }
            // Odometer over the outer dims.
            let mut d = n - 1;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                e = e.wrapping_add(self.dims[d][0]);
                if idx[d] < self.dims[d][1] {
                    break;
                }
                e = e.wrapping_sub(self.dims[d][0].wrapping_mul(self.dims[d][1]));
                idx[d] = 0;
            }
        }
    }

    /// Append every element in AP order to `out`.
    pub fn extend_into(&self, out: &mut Vec<i64>) {
        if let Some(n) = self.count() {
            out.reserve(n.max(0) as usize);
        }
        self.for_each(|e| out.push(e));
    }

    /// The most elements of this access that fall in any one partition of `layout`.
    pub fn max_elements_per_partition(&self, layout: &Layout) -> FResult<i64> {
        let set = self.run_set(layout.esize)?;
        Ok(set.max_bytes_per_window(layout.partition_bytes()) / layout.esize.max(1))
    }

    /// The same points as a set of bytes (element `e` covers `e·esize … +esize`).
    pub fn run_set(&self, esize: i64) -> FResult<RunSet> {
        RunSet::new(self, esize)
    }
}

/// A set of byte offsets: `{base + Σ_k step_k·i_k + r : 0 ≤ i_k < count_k, 0 ≤ r < run}`
/// with `step_k` decreasing and each step at least the extent of the dims
/// inside it (a mixed radix: points in lexicographic order are increasing), or
/// an explicit sorted list of disjoint runs where the strides overlap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSet {
    base: i64,
    /// Two dims inline (a tile's partition and free dims): a run set is held
    /// per recorded access by the race checker, whose peak memory it sets.
    dims: SmallVec<[(i64, i64); 2]>,
    run: i64,
    /// Sorted, disjoint, non-adjacent `[start, end)` runs (absolute), when the
    /// strides overlap; `dims` is then unused.
    explicit: Option<Box<[(i64, i64)]>>,
    empty: bool,
}

impl RunSet {
    fn new(p: &Progression, esize: i64) -> FResult<RunSet> {
        if p.is_empty() {
            return Ok(RunSet {
                base: 0,
                dims: SmallVec::new(),
                run: 0,
                explicit: None,
                empty: true,
            });
        }
        let mut base = mul(p.base, esize)?;
        let mut dims: SmallVec<[(i64, i64); 2]> = SmallVec::new();
        for &[step, num] in &p.dims {
            let s = mul(step, esize)?;
            if num <= 1 || s == 0 {
                continue;
            }
            if s < 0 {
                base = add(base, mul(s, num - 1)?)?;
            }
            dims.push((s.abs(), num));
        }
        dims.sort_by_key(|d| std::cmp::Reverse(d.0));
        // Fold every dim whose step is within the run into the run.
        let mut run = esize;
        while let Some(&(s, n)) = dims.last() {
            if s > run {
                break;
            }
            run = add(mul(s, n - 1)?, run)?;
            dims.pop();
        }
        let mut set = RunSet {
            base,
            dims,
            run,
            explicit: None,
            empty: false,
        };
        if !set.is_mixed_radix()? {
            set.explicit = Some(set.enumerate_runs()?.into_boxed_slice());
        }
        Ok(set)
    }

    /// The bytes of explicit runs `[start, end)`, in any order, overlapping
    /// or not (empty runs are dropped): sorted and merged.
    pub fn from_runs(mut runs: Vec<(i64, i64)>) -> RunSet {
        runs.retain(|r| r.0 < r.1);
        runs.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(runs.len());
        for (s, e) in runs {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        RunSet {
            base: 0,
            dims: SmallVec::new(),
            run: 0,
            empty: merged.is_empty(),
            explicit: Some(merged.into_boxed_slice()),
        }
    }

    fn is_mixed_radix(&self) -> FResult<bool> {
        let mut extent = self.run;
        for &(s, n) in self.dims.iter().rev() {
            if s < extent {
                return Ok(false);
            }
            extent = add(mul(s, n - 1)?, extent)?;
        }
        Ok(true)
    }

    fn enumerate_runs(&self) -> FResult<Vec<(i64, i64)>> {
        let total = self.dims.iter().try_fold(1u64, |acc, d| acc.checked_mul(d.1 as u64));
        let total = total.unwrap_or(u64::MAX);
        if total > MAX_EXPLICIT_RUNS {
            return Err(FootprintError::TooManyRuns(total));
        }
        let p = Progression {
            base: self.base,
            dims: self.dims.iter().map(|&(s, n)| [s, n]).collect(),
        };
        let mut starts = Vec::with_capacity(total as usize);
        p.for_each(|s| starts.push(s));
        starts.sort_unstable();
        let mut runs: Vec<(i64, i64)> = Vec::new();
        for s in starts {
            let e = add(s, self.run)?;
            match runs.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => runs.push((s, e)),
            }
        }
        Ok(runs)
    }

    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// `[lo, hi)`: the least byte and one past the greatest.
    pub fn bounds(&self) -> Option<(i64, i64)> {
        if self.empty {
            return None;
        }
        if let Some(runs) = &self.explicit {
            return Some((runs.first()?.0, runs.last()?.1));
        }
        Some((self.base, self.base.saturating_add(self.extent_from(0))))
    }

    /// Number of maximal runs (a measure of the set's complexity).
    pub fn run_count(&self) -> u64 {
        if self.empty {
            return 0;
        }
        match &self.explicit {
            Some(r) => r.len() as u64,
            None => self.dims.iter().map(|d| d.1 as u64).product(),
        }
    }

    /// The least byte of the set that is ≥ `t`.
    pub fn seek(&self, t: i64) -> Option<i64> {
        if self.empty {
            return None;
        }
        if let Some(runs) = &self.explicit {
            let i = runs.partition_point(|r| r.1 <= t);
            let r = runs.get(i)?;
            return Some(t.max(r.0));
        }
        let mut off = t.checked_sub(self.base)?;
        if off <= 0 {
            return Some(self.base);
        }
        // Mixed radix: take the digit of each dim, outermost first; when the
        // rest cannot reach `off`, carry into the next digit and stop.
        let mut acc = self.base;
        for (k, &(s, n)) in self.dims.iter().enumerate() {
            let i = off / s;
            if i >= n {
                return None;
            }
            let inner_reach = self.extent_from(k + 1);
            if off - i * s < inner_reach {
                acc += i * s;
                off -= i * s;
                continue;
            }
            // Nothing with digit i reaches off: the next digit, inner digits 0.
            return if i + 1 < n { Some(acc + (i + 1) * s) } else { None };
        }
        if off < self.run {
            Some(acc + off)
        } else {
            None
        }
    }

    /// Extent (max offset + 1) of the dims from `k` inward plus the run.
    fn extent_from(&self, k: usize) -> i64 {
        self.dims[k..].iter().map(|&(s, n)| s * (n - 1)).sum::<i64>() + self.run
    }

    /// The residues mod `g` the set's bytes fall into: `[start, start+len)`
    /// mod g (len ≥ g means every residue).
    fn residues(&self, g: i64) -> (i64, i64) {
        if self.explicit.is_some() {
            return (0, g);
        }
        (self.base.rem_euclid(g), self.run)
    }

    fn steps_gcd(&self) -> i64 {
        if self.explicit.is_some() {
            return 1;
        }
        self.dims.iter().fold(0, |g, &(s, _)| gcd(g, s))
    }

    /// The least byte in both sets, exactly.
    pub fn least_common(&self, other: &RunSet) -> Option<i64> {
        let (alo, ahi) = self.bounds()?;
        let (blo, bhi) = other.bounds()?;
        let (lo, hi) = (alo.max(blo), ahi.min(bhi));
        if lo >= hi || !self.residues_meet(other) {
            return None;
        }
        // Leapfrog: each seek jumps at least to the other's next byte.
        let mut t = lo;
        loop {
            let x = self.seek(t)?;
            if x >= hi {
                return None;
            }
            let y = other.seek(x)?;
            if y >= hi {
                return None;
            }
            if y == x {
                return Some(x);
            }
            t = y;
        }
    }

    /// Every step of both sets is a multiple of g; if their runs land on
    /// disjoint residue arcs mod g (interleaved accesses), they never meet.
    fn residues_meet(&self, other: &RunSet) -> bool {
        let g = gcd(self.steps_gcd(), other.steps_gcd());
        if g <= 1 {
            return true;
        }
        let (a, la) = self.residues(g);
        let (b, lb) = other.residues(g);
        if la >= g || lb >= g {
            return true;
        }
        // Arcs [a, a+la) and [b, b+lb) on a circle of length g.
        let d = (b - a).rem_euclid(g);
        d < la || (g - d) < lb
    }

    /// The most bytes of the set inside any one aligned window of `w` bytes
    /// (a partition of `w` bytes: the per-partition size of a transfer).
    pub fn max_bytes_per_window(&self, w: i64) -> i64 {
        if self.empty || w <= 0 {
            return 0;
        }
        let mut best = 0i64;
        let mut cur_win = i64::MIN;
        let mut cur = 0i64;
        self.for_each_run(|s, e| {
            let (mut s, e) = (s, e);
            while s < e {
                let win = s.div_euclid(w);
                let end = ((win + 1) * w).min(e);
                if win != cur_win {
                    cur_win = win;
                    cur = 0;
                }
                cur += end - s;
                best = best.max(cur);
                s = end;
            }
        });
        best
    }

    /// Visit the maximal runs `[start, end)` in increasing order.
    pub fn for_each_run(&self, mut f: impl FnMut(i64, i64)) {
        if self.empty {
            return;
        }
        if let Some(runs) = &self.explicit {
            runs.iter().for_each(|&(s, e)| f(s, e));
            return;
        }
        let p = Progression {
            base: self.base,
            dims: self.dims.iter().map(|&(s, n)| [s, n]).collect(),
        };
        let run = self.run;
        // Mixed radix: AP order is increasing order; adjacent runs merge.
        let mut open: Option<(i64, i64)> = None;
        p.for_each(|s| match &mut open {
            Some((_, e)) if *e == s => *e = s + run,
            _ => {
                if let Some((a, b)) = open.take() {
                    f(a, b);
                }
                open = Some((s, s + run));
            }
        });
        if let Some((a, b)) = open {
            f(a, b);
        }
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
