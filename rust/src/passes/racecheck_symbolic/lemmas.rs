//! The fast, sound lemmas that clear a pair of accesses without a solver
//! (contract §3.11's reasons): `exclusive-predicates` (no two cores s1 < s2
//! where both are present), `disjoint-bounds` (their byte ranges never
//! meet), `ownership` (a slice `k·shard + [lo, hi]` per core, the slices of
//! two cores apart: the `rows·shard` pattern), `gcd` (strided accesses on
//! disjoint residues).
//!
//! Each works on a *summary* of one access over a range of cores: a
//! coordinate as `a·s + [lo, hi]`, for the flat byte and — when both accesses
//! see the same partition size and stay in their partitions — for the
//! partition and the byte within it. A lemma that fails proves nothing; the
//! pair goes to the solver.

use hashbrown::HashMap;

use super::affine::{gcd, Dom, Lin, QDef, Range, Var, INF};
use super::fp::ArgFp;
use crate::pelican::Context;

/// `a·s + [lo, hi]` for every core s of the summary's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coord {
    pub a: i64,
    pub lo: i128,
    pub hi: i128,
}

impl Coord {
    fn finite(&self) -> bool {
        self.lo > -BIG && self.hi < BIG
    }

    pub fn describe(&self, s: &str) -> String {
        if self.a == 0 {
            format!("[{}, {}]", self.lo, self.hi)
        } else {
            format!("{}·{s} + [{}, {}]", self.a, self.lo, self.hi)
        }
    }
}

/// A bound past which a coordinate counts as unbounded for the lemmas.
const BIG: i128 = 1 << 62;

#[derive(Clone, Debug)]
pub struct Summary {
    pub flat: Coord,
    /// (partition, byte within the partition), when every point stays in
    /// its partition and dim 0 moves whole partitions.
    pub two_d: Option<(Coord, Coord)>,
    /// Bytes per partition of the accessing set.
    pub pb: i64,
    /// The residues mod `g` the bytes fall on: `[start, start + len)`;
    /// g = 0 when the summary cannot say.
    pub g: i64,
    pub g_start: i64,
    pub g_len: i64,
}

fn split_shard(l: &Lin) -> (i64, Lin) {
    let a = l.coeff(Var::Shard);
    let mut rest = l.clone();
    rest.terms.retain(|t| t.0 != Var::Shard);
    (a, rest)
}

/// The summary of `fp` for the cores in `shard`.
pub fn summarize(ctx: &Context, qs: &[QDef], fp: &ArgFp, shard: Range) -> Option<Summary> {
    let fixed = HashMap::new();
    let mut dom = Dom::new(ctx, qs, shard, &fixed);
    let es = fp.esize as i128;
    let start = dom.resolve(&fp.start()?);
    let (a, rest) = split_shard(&start);
    let r = dom.lin(&rest);
    let (dlo, dhi) = fp.dims_span(false);
    let flat = Coord {
        a: a.checked_mul(fp.esize)?,
        lo: r.lo.saturating_add(dlo).saturating_mul(es),
        hi: r.hi.saturating_add(dhi).saturating_mul(es).saturating_add(es - 1),
    };
    let f = fp.layout.free;
    let two_d = (|| {
        if f <= 0 {
            return None;
        }
        let d0_whole = !fp.dim0 || fp.dims[0][0] % f == 0;
        if !d0_whole {
            return None;
        }
        let within = dom.resolve(&fp.within);
        let (wa, wrest) = split_shard(&within);
        let wr = dom.lin(&wrest);
        let sr = dom.var(Var::Shard);
        let (wdlo, wdhi) = fp.dims_span(true);
        let whole = Range {
            lo: wr.lo + wdlo,
            hi: wr.hi + wdhi,
        }
        .plus(sr.scale(wa));
        if whole.lo < 0 || whole.hi >= f as i128 {
            return None;
        }
        let part = dom.resolve(&fp.part);
        let (pa, prest) = split_shard(&part);
        if pa % f != 0 || prest.terms.iter().any(|t| t.1 % f != 0) || prest.c % f != 0 {
            return None;
        }
        let pr = dom.lin(&prest);
        let (p0lo, p0hi) = if fp.dim0 {
            let ext = (fp.dims[0][0] / f) as i128 * (fp.dims[0][1] as i128 - 1);
            (ext.min(0), ext.max(0))
        } else {
            (0, 0)
        };
        let fi = f as i128;
        let p = Coord {
            a: pa / f,
            lo: pr.lo.div_euclid(fi) + p0lo,
            hi: pr.hi.div_euclid(fi) + p0hi,
        };
        let w = Coord {
            a: wa.checked_mul(fp.esize)?,
            lo: (wr.lo + wdlo) * es,
            hi: (wr.hi + wdhi) * es + es - 1,
        };
        Some((p, w))
    })();
    // Residues: every coefficient and step is a multiple of g (bytes).
    let mut g = 0i64;
    for &(_, k) in &start.terms {
        g = gcd(g, k.saturating_mul(fp.esize));
    }
    for &[step, _] in &fp.dims {
        g = gcd(g, step.saturating_mul(fp.esize));
    }
    let g_start = if g > 0 {
        (start.c as i128 * es).rem_euclid(g as i128) as i64
    } else {
        0
    };
    Some(Summary {
        flat,
        two_d,
        pb: fp.layout.partition_bytes(),
        g,
        g_start,
        g_len: fp.esize,
    })
}

/// The cores of one side: `[lo, hi]`, hi None for unbounded.
pub type Cores = (i64, Option<i64>);

/// min and max of `b·s2 − a·s1` over `s1 ∈ c1, s2 ∈ c2, s1 + 1 ≤ s2`
/// (None: the polygon is empty; ±INF when unbounded).
pub fn extremes(a: i64, b: i64, c1: Cores, c2: Cores) -> Option<(i128, i128)> {
    let cap = |h: Option<i64>, floor: i64| h.map_or(floor as i128 + (1 << 40), |x| x as i128);
    let (l1, l2) = (c1.0 as i128, c2.0 as i128);
    let h1 = cap(c1.1, c1.0.max(c2.0));
    let h2 = cap(c2.1, c1.0.max(c2.0) + 1);
    let h1 = h1.min(h2 - 1);
    let l2 = l2.max(l1 + 1);
    if h1 < l1 || h2 < l2 {
        return None;
    }
    let inside = |s1: i128, s2: i128| s1 >= l1 && s1 <= h1 && s2 >= l2 && s2 <= h2 && s2 > s1;
    let pts = [
        (l1, l2),
        (l1, h2),
        (h1, l2),
        (h1, h2),
        (l1, l1 + 1),
        (h1, h1 + 1),
        (l2 - 1, l2),
        (h2 - 1, h2),
    ];
    let f = |s1: i128, s2: i128| b as i128 * s2 - a as i128 * s1;
    let vals: Vec<i128> = pts.iter().filter(|p| inside(p.0, p.1)).map(|p| f(p.0, p.1)).collect();
    let mut lo = *vals.iter().min()?;
    let mut hi = *vals.iter().max()?;
    // Recession directions of the unbounded polygon: s2 → ∞, and s1, s2 → ∞.
    if c2.1.is_none() {
        if b < 0 {
            lo = -INF;
        }
        if b > 0 {
            hi = INF;
        }
        if c1.1.is_none() {
            let d = b as i128 - a as i128;
            if d < 0 {
                lo = -INF;
            }
            if d > 0 {
                hi = INF;
            }
        }
    }
    Some((lo, hi))
}

/// Are `x` (on s1 ∈ c1) and `y` (on s2 ∈ c2) apart for every s1 < s2?
pub fn separated(x: &Coord, y: &Coord, c1: Cores, c2: Cores) -> bool {
    if !x.finite() || !y.finite() {
        return false;
    }
    let Some((fmin, fmax)) = extremes(x.a, y.a, c1, c2) else {
        return true;
    };
    // y − x ∈ (y.a·s2 − x.a·s1) + [y.lo − x.hi, y.hi − x.lo]
    (fmin > -BIG && y.lo - x.hi + fmin > 0) || (fmax < BIG && y.hi - x.lo + fmax < 0)
}

/// Which lemma proves accesses `x` (core s1 ∈ c1) and `y` (core s2 ∈ c2)
/// disjoint, with a one-line detail.
pub fn prove(x: &Summary, y: &Summary, c1: Cores, c2: Cores) -> Option<(&'static str, String)> {
    let name = |p: &Coord, q: &Coord| {
        if p.a == 0 && q.a == 0 {
            "disjoint-bounds"
        } else {
            "ownership"
        }
    };
    if separated(&x.flat, &y.flat, c1, c2) {
        return Some((
            name(&x.flat, &y.flat),
            format!("bytes {} vs {}", x.flat.describe("s1"), y.flat.describe("s2")),
        ));
    }
    if let (Some((xp, xw)), Some((yp, yw))) = (&x.two_d, &y.two_d) {
        if x.pb == y.pb {
            if separated(xp, yp, c1, c2) {
                return Some((
                    name(xp, yp),
                    format!("partitions {} vs {}", xp.describe("s1"), yp.describe("s2")),
                ));
            }
            if separated(xw, yw, c1, c2) {
                return Some((
                    name(xw, yw),
                    format!(
                        "bytes within a partition {} vs {}",
                        xw.describe("s1"),
                        yw.describe("s2")
                    ),
                ));
            }
        }
    }
    let g = gcd(x.g, y.g);
    if x.g > 0 && y.g > 0 && g > x.g_len && g > y.g_len {
        let (a, b) = (x.g_start.rem_euclid(g), y.g_start.rem_euclid(g));
        let d = (b - a).rem_euclid(g);
        let meet = d < x.g_len || (g - d) < y.g_len;
        if !meet {
            return Some((
                "gcd",
                format!("bytes ≡ [{a}, {}) vs [{b}, {}) mod {g}", a + x.g_len, b + y.g_len),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(a: i64, lo: i128, hi: i128) -> Coord {
        Coord { a, lo, hi }
    }

    #[test]
    fn ownership_separates_slices_of_one_stride_for_every_pair_of_cores() {
        // Core s owns [32s, 32s + 31].
        assert!(separated(&c(32, 0, 31), &c(32, 0, 31), (0, Some(63)), (0, Some(63))));
        assert!(separated(&c(32, 0, 31), &c(32, 0, 31), (0, None), (0, None)));
        // One byte more overlaps the next core's slice.
        assert!(!separated(&c(32, 0, 32), &c(32, 0, 31), (0, Some(63)), (0, Some(63))));
        // A fixed region on the lower core against the slices: apart, as
        // s2 ≥ 1; on the higher core it meets core 0's slice.
        assert!(separated(&c(0, 0, 31), &c(32, 0, 31), (0, Some(63)), (0, Some(63))));
        assert!(!separated(&c(32, 0, 31), &c(0, 0, 31), (0, Some(63)), (0, Some(63))));
    }

    #[test]
    fn extremes_follow_the_triangle_s1_below_s2() {
        assert_eq!(extremes(1, 1, (0, Some(7)), (0, Some(7))), Some((1, 7)));
        assert_eq!(extremes(0, -1, (0, None), (0, None)).map(|e| e.0), Some(-INF));
        assert_eq!(extremes(0, 1, (5, Some(5)), (0, Some(4))), None);
    }
}
