//! Whether the order of the cores can matter in an interval (contract §3.8:
//! every interval runs in both core orders). It can only when some byte one
//! core writes is read or written by another core in the interval: otherwise
//! each core reads only bytes no other core writes, the cores' writes are
//! disjoint, and both orders end with the same bytes. The lockstep engine then
//! runs the interval once, without logging the bytes it overwrites — the
//! replay in the reverse order is skipped only when it provably finds nothing.
//!
//! The check is exact on bytes: cores meet only in shared, proxy and partner
//! locations, and race-free programs (every cross-core access ordered by
//! barriers, §3.6) touch disjoint bytes of them between two barriers — the
//! generator's per-core slices of a shared set, a GPSIMDSB2SB into the
//! partner's half. Only ops that write something are looked at (an op that
//! writes nothing has no effect in either order).

use super::exec::Op;
use super::memory::{for_each_run, LocId, Span};
use crate::analysis::footprint::Progression;

/// Buffers reused between intervals.
#[derive(Default)]
pub struct Scratch {
    /// Per location, the cores that read / write it in the interval.
    touched: Vec<u64>,
    written: Vec<u64>,
    /// Per core, byte ranges `[start, end)` written / touched on one location.
    writes: Vec<Vec<(i64, i64)>>,
    touches: Vec<Vec<(i64, i64)>>,
}

/// True when, in the interval whose ops (per core, in order) are `ops`, a byte
/// written by one core is read or written by another. `locations` is the
/// number of physical locations.
pub fn cores_conflict(s: &mut Scratch, ops: &[Vec<Op>], locations: usize) -> bool {
    let n = ops.len();
    if ops.iter().filter(|o| !o.is_empty()).count() < 2 {
        return false;
    }
    if n > 64 {
        return true; // the masks below have 64 bits: replay, which is always sound
    }
    s.touched.clear();
    s.touched.resize(locations, 0);
    s.written.clear();
    s.written.resize(locations, 0);
    for (c, core_ops) in ops.iter().enumerate() {
        let bit = 1u64 << c;
        for op in core_ops {
            for span in reads(op) {
                s.touched[span.loc as usize] |= bit;
            }
            for span in writes(op) {
                s.touched[span.loc as usize] |= bit;
                s.written[span.loc as usize] |= bit;
            }
        }
    }
    // Locations one core writes and another touches: the only candidates.
    let meet: Vec<LocId> = (0..locations)
        .filter(|&l| {
            let (w, t) = (s.written[l], s.touched[l]);
            w != 0 && (t & !w != 0 || w.count_ones() > 1)
        })
        .map(|l| l as LocId)
        .collect();
    meet.into_iter().any(|loc| bytes_meet(s, ops, loc))
}

/// The spans an op reads: the first location of each read argument.
fn reads(op: &Op) -> impl Iterator<Item = &Span> {
    op.reads.iter().filter_map(|a| a.spans.first())
}

/// The spans an op writes: every location of each written argument.
fn writes(op: &Op) -> impl Iterator<Item = &Span> {
    op.writes.iter().flat_map(|a| a.spans.iter())
}

/// Whether some byte of `loc` written by one core is touched by another.
fn bytes_meet(s: &mut Scratch, ops: &[Vec<Op>], loc: LocId) -> bool {
    let n = ops.len();
    for v in [&mut s.writes, &mut s.touches] {
        v.resize_with(n, Vec::new);
        v.iter_mut().for_each(Vec::clear);
    }
    for (c, core_ops) in ops.iter().enumerate() {
        for op in core_ops {
            for span in reads(op).filter(|x| x.loc == loc) {
                push_runs(span, &mut s.touches[c]);
            }
            for span in writes(op).filter(|x| x.loc == loc) {
                push_runs(span, &mut s.writes[c]);
                push_runs(span, &mut s.touches[c]);
            }
        }
    }
    for v in s.writes.iter_mut().chain(s.touches.iter_mut()) {
        normalize(v);
    }
    (0..n).any(|a| !s.writes[a].is_empty() && (0..n).any(|b| b != a && overlap(&s.writes[a], &s.touches[b])))
}

/// Append the byte ranges of `span` (as a set: the order of its points does
/// not matter here, so dims are taken by decreasing step to fold a transposed
/// enumeration back into its rows).
fn push_runs(span: &Span, out: &mut Vec<(i64, i64)>) {
    let es = span.esize;
    let set = as_set(&span.points);
    for_each_run(&set, |e, n| {
        let start = e.saturating_mul(es);
        out.push((start, start.saturating_add((n as i64).saturating_mul(es))));
    });
}

/// The same points with non-negative steps, dims by decreasing step.
fn as_set(p: &Progression) -> Progression {
    let mut q = p.clone();
    if q.is_empty() {
        return q;
    }
    for d in q.dims.iter_mut() {
        if d[0] < 0 {
            q.base = q.base.saturating_add(d[0].saturating_mul(d[1] - 1));
            d[0] = d[0].saturating_neg();
        }
    }
    q.dims.sort_by(|a, b| b[0].cmp(&a[0]));
    q
}

/// Sort and merge overlapping or adjacent ranges.
fn normalize(v: &mut Vec<(i64, i64)>) {
    v.sort_unstable();
    let mut out = 0usize;
    for i in 0..v.len() {
        if out > 0 && v[i].0 <= v[out - 1].1 {
            v[out - 1].1 = v[out - 1].1.max(v[i].1);
        } else {
            v[out] = v[i];
            out += 1;
        }
    }
    v.truncate(out);
}

/// Whether two sorted, disjoint range lists share a byte.
fn overlap(a: &[(i64, i64)], b: &[(i64, i64)]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].0 < b[j].1 && b[j].0 < a[i].1 {
            return true;
        }
        if a[i].1 <= b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_overlap_exactly() {
        let mut a = vec![(8, 12), (0, 4), (4, 6), (20, 30)];
        normalize(&mut a);
        assert_eq!(a, vec![(0, 6), (8, 12), (20, 30)]);
        assert!(!overlap(&a, &[(6, 8), (12, 20), (30, 40)]));
        assert!(overlap(&a, &[(6, 9)]));
        assert!(overlap(&a, &[(29, 31)]));
        assert!(!overlap(&a, &[]));
    }

    #[test]
    fn a_transposed_enumeration_is_the_same_set_of_rows() {
        let rows = Progression {
            base: 3,
            dims: smallvec::smallvec![[16, 4], [1, 8]],
        };
        let mut t = rows.clone();
        t.dims.swap(0, 1);
        let span = |points| Span {
            loc: 0,
            points,
            esize: 2,
            dtype: crate::sim::numeric::dtype::DType::U16,
        };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        push_runs(&span(rows), &mut x);
        push_runs(&span(t), &mut y);
        normalize(&mut x);
        normalize(&mut y);
        assert_eq!(x, y);
        assert_eq!(x.len(), 4);
    }

    #[test]
    fn negative_steps_cover_the_same_points() {
        let p = Progression {
            base: 10,
            dims: smallvec::smallvec![[-1, 4]],
        };
        let q = as_set(&p);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        p.for_each(|e| a.push(e));
        q.for_each(|e| b.push(e));
        a.sort_unstable();
        assert_eq!(a, b);
    }
}
