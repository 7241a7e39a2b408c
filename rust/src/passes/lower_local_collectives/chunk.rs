//! The scatter chunks of an `AllReduce` (contract §3.6): one chunk per core,
//! taken over the first non-partition ap dim whose extent is ≥ 4 and
//! divisible by N.
//!
//! Elements of a collective pair up in *AP order* (flat index k, last dim
//! fastest). Scattering dim d of the reference AP (core 0's `ins[0]`) into N
//! equal ranges makes chunk j the points whose flat index k satisfies
//! `k mod W ∈ [j·C, (j+1)·C)` with `W = num_d·Q_d`, `C = W / N` (`Q_d` the
//! number of points inside one step of dim d). Every other AP of the
//! collective (outputs, other cores, the DRAM stage) is cut by the same flat
//! rule, so the same elements meet in the reduction whatever shape each AP
//! has: its dims are refined (a dim split into an outer and an inner part) so
//! that C and W fall on dim boundaries, then the dims between C and W are
//! fixed to the digits of j. The result is again an affine box (an AP), in
//! the same order.

use crate::bir::ApPair;

/// A sub-box of an AP: the start moves by `offset` elements, the dims are `dims`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub offset: i64,
    pub dims: Vec<ApPair>,
}

/// `(W, C)` of the reference AP: scatter over the first ap dim d ≥ 1 with
/// `num ≥ 4` and `num % n == 0`; None when there is none.
pub fn scatter_period(dims: &[ApPair], n: i64) -> Option<(usize, i64, i64)> {
    if n < 1 || dims.iter().any(|d| d[1] <= 0) {
        return None;
    }
    let d = (1..dims.len()).find(|&d| dims[d][1] >= 4 && dims[d][1] % n == 0)?;
    let q = dims[d + 1..].iter().try_fold(1i64, |acc, x| acc.checked_mul(x[1]))?;
    let w = dims[d][1].checked_mul(q)?;
    Some((d, w, w / n))
}

/// Split the dims so that `b` (a number of points) is a boundary: the
/// points inside dims `d+1…` number exactly `b` for some d. False when `b`
/// does not divide the count of an enclosing dim boundary.
fn insert_boundary(dims: &mut Vec<ApPair>, b: i64) -> bool {
    let mut q = 1i64; // points inside dim `i`
    let mut i = dims.len();
    while i > 0 {
        if q == b {
            return true;
        }
        i -= 1;
        let [s, n] = dims[i];
        let Some(outer) = q.checked_mul(n) else {
            return false;
        };
        if b < outer {
            if b % q != 0 || outer % b != 0 {
                return false;
            }
            let k = b / q;
            let Some(s_outer) = s.checked_mul(k) else {
                return false;
            };
            dims[i] = [s, k];
            dims.insert(i, [s_outer, n / k]);
            return true;
        }
        q = outer;
    }
    q == b
}

/// Chunk `j` of an AP: the points whose flat index k (in AP order) has
/// `k mod period ∈ [j·chunk, (j+1)·chunk)`, in the same order. None when the
/// AP's count is not a multiple of `period`, or its dims cannot be refined
/// to put `chunk` and `period` on dim boundaries.
pub fn chunk_ap(dims: &[ApPair], period: i64, chunk: i64, j: i64) -> Option<Chunk> {
    if chunk <= 0 || period % chunk != 0 || j < 0 || j >= period / chunk || dims.iter().any(|d| d[1] <= 0) {
        return None;
    }
    let mut v: Vec<ApPair> = dims.to_vec();
    if !insert_boundary(&mut v, chunk) || !insert_boundary(&mut v, period) {
        return None;
    }
    // Walk from the innermost dim: inside `chunk` stays, [chunk, period) is
    // fixed to the digits of j, the rest stays.
    let mut q = 1i64;
    let mut digits = j;
    let mut offset = 0i64;
    let mut keep_inner: Vec<ApPair> = Vec::new();
    let mut keep_outer: Vec<ApPair> = Vec::new();
    for &[s, n] in v.iter().rev() {
        if q < chunk {
            keep_inner.push([s, n]);
        } else if q < period {
            offset = offset.checked_add((digits % n).checked_mul(s)?)?;
            digits /= n;
        } else {
            keep_outer.push([s, n]);
        }
        q = q.checked_mul(n)?;
    }
    let mut out: Vec<ApPair> = keep_outer.into_iter().rev().collect();
    out.extend(keep_inner.into_iter().rev());
    if out.is_empty() {
        out.push([1, 1]);
    }
    Some(Chunk { offset, dims: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(base: i64, dims: &[ApPair]) -> Vec<i64> {
        let mut out = vec![base];
        for &[s, n] in dims {
            out = out.iter().flat_map(|&b| (0..n).map(move |i| b + s * i)).collect();
        }
        out
    }

    /// The chunk by definition: every point whose flat index is in it.
    fn by_definition(dims: &[ApPair], period: i64, chunk: i64, j: i64) -> Vec<i64> {
        points(0, dims)
            .into_iter()
            .enumerate()
            .filter(|(k, _)| (*k as i64 % period) / chunk == j)
            .map(|(_, e)| e)
            .collect()
    }

    #[test]
    fn scatter_dim_is_the_first_non_partition_dim_with_extent_at_least_4_divisible_by_n() {
        assert_eq!(scatter_period(&[[512, 128], [1, 512]], 2), Some((1, 512, 256)));
        assert_eq!(scatter_period(&[[64, 8], [16, 2], [1, 12]], 4), Some((2, 12, 3)));
        assert_eq!(scatter_period(&[[64, 8], [8, 6], [1, 8]], 4), Some((2, 8, 2)));
        // The partition dim never scatters; extent 2 is too small; 6 is not divisible by 4.
        assert_eq!(scatter_period(&[[64, 128], [1, 2]], 2), None);
        assert_eq!(scatter_period(&[[64, 128], [1, 6]], 4), None);
        assert_eq!(scatter_period(&[[1, 128]], 2), None);
    }

    #[test]
    fn chunks_keep_exactly_their_points_in_ap_order() {
        let shapes: &[&[ApPair]] = &[
            &[[512, 128], [1, 512]],
            &[[1024, 64], [1, 1024]],
            &[[512, 256], [1, 256]],
            &[[3, 4], [100, 8], [1, 3]],
            &[[7, 16], [1, 4]],
            &[[64, 2], [2, 16], [1, 2]],
            &[[0, 4], [1, 8]],
        ];
        for &reference in shapes {
            for n in [2i64, 4, 8] {
                let Some((_, w, c)) = scatter_period(reference, n) else {
                    continue;
                };
                for &dims in shapes {
                    for j in 0..n {
                        let want = by_definition(dims, w, c, j);
                        match chunk_ap(dims, w, c, j) {
                            Some(ch) => assert_eq!(points(ch.offset, &ch.dims), want, "{dims:?} w {w} c {c} j {j}"),
                            None => assert!(
                                points(0, dims).len() as i64 % w != 0 || !refinable(dims, w, c),
                                "{dims:?} w {w} c {c} refused"
                            ),
                        }
                    }
                }
            }
        }
    }

    /// Whether both boundaries are multiples-chains of the dims' suffix counts.
    fn refinable(dims: &[ApPair], w: i64, c: i64) -> bool {
        let mut v = dims.to_vec();
        insert_boundary(&mut v, c) && insert_boundary(&mut v, w)
    }

    #[test]
    fn the_partition_dim_stays_whole_when_the_shapes_match() {
        let ch = chunk_ap(&[[512, 128], [1, 512]], 512, 256, 1).unwrap();
        assert_eq!(
            ch,
            Chunk {
                offset: 256,
                dims: vec![[512, 128], [1, 256]]
            }
        );
    }

    #[test]
    fn incompatible_shapes_are_refused() {
        // 3·4 points cut in chunks of 2 out of 4: 4 does not divide a suffix count.
        assert_eq!(chunk_ap(&[[10, 3], [1, 4]], 8, 4, 1), None);
        assert_eq!(chunk_ap(&[[10, 2], [1, 6]], 4, 2, 0), None);
        assert_eq!(chunk_ap(&[[1, 0]], 4, 2, 0), None);
    }
}
