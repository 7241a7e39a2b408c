//! Sets of integers as sorted, disjoint, non-adjacent closed intervals, the
//! last one possibly unbounded: the N a question is asked for (`lnc`), the N
//! that are invalid, the cores an instruction is present on.

/// `[lo, hi]` inclusive; `hi == None` is unbounded above.
pub type Interval = (i64, Option<i64>);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ISet {
    parts: Vec<Interval>,
}

fn le_hi(a: Option<i64>, b: Option<i64>) -> bool {
    match (a, b) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(x), Some(y)) => x <= y,
    }
}

fn min_hi(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    if le_hi(a, b) {
        a
    } else {
        b
    }
}

impl ISet {
    pub fn empty() -> ISet {
        ISet::default()
    }

    /// Every integer ≥ `lo`.
    pub fn from(lo: i64) -> ISet {
        ISet {
            parts: vec![(lo, None)],
        }
    }

    /// `[lo, hi]` (empty when hi < lo).
    pub fn range(lo: i64, hi: i64) -> ISet {
        if hi < lo {
            return ISet::empty();
        }
        ISet {
            parts: vec![(lo, Some(hi))],
        }
    }

    pub fn interval(lo: i64, hi: Option<i64>) -> ISet {
        match hi {
            Some(h) => ISet::range(lo, h),
            None => ISet::from(lo),
        }
    }

    pub fn point(v: i64) -> ISet {
        ISet::range(v, v)
    }

    /// The set of the given values.
    pub fn of_values(values: impl IntoIterator<Item = i64>) -> ISet {
        let mut v: Vec<i64> = values.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        let mut s = ISet::empty();
        for x in v {
            s.push(x, Some(x));
        }
        s
    }

    /// Append an interval that starts after every interval so far (merging
    /// with the last one when they touch).
    fn push(&mut self, lo: i64, hi: Option<i64>) {
        if let Some(last) = self.parts.last_mut() {
            if let Some(lh) = last.1 {
                if lo <= lh.saturating_add(1) {
                    if !le_hi(hi, last.1) {
                        last.1 = hi;
                    }
                    return;
                }
            } else {
                return;
            }
        }
        self.parts.push((lo, hi));
    }

    pub fn parts(&self) -> &[Interval] {
        &self.parts
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    pub fn is_bounded(&self) -> bool {
        self.parts.last().is_none_or(|p| p.1.is_some())
    }

    pub fn min(&self) -> Option<i64> {
        self.parts.first().map(|p| p.0)
    }

    /// The greatest element: None when empty, Some(None) when unbounded.
    pub fn max(&self) -> Option<Option<i64>> {
        self.parts.last().map(|p| p.1)
    }

    pub fn contains(&self, v: i64) -> bool {
        self.parts.iter().any(|&(lo, hi)| lo <= v && hi.is_none_or(|h| v <= h))
    }

    pub fn union(&self, other: &ISet) -> ISet {
        let mut all: Vec<Interval> = self.parts.iter().chain(&other.parts).copied().collect();
        all.sort_by_key(|p| p.0);
        let mut out = ISet::empty();
        for (lo, hi) in all {
            out.push(lo, hi);
        }
        out
    }

    pub fn intersect(&self, other: &ISet) -> ISet {
        let mut out = ISet::empty();
        for &(a, ah) in &self.parts {
            for &(b, bh) in &other.parts {
                let lo = a.max(b);
                let hi = min_hi(ah, bh);
                if hi.is_none_or(|h| lo <= h) {
                    out.push(lo, hi);
                }
            }
        }
        out
    }

    /// Elements of `self` not in `other`.
    pub fn minus(&self, other: &ISet) -> ISet {
        self.intersect(&other.complement_from(i64::MIN / 4))
    }

    /// Every integer ≥ `floor` not in `self`.
    pub fn complement_from(&self, floor: i64) -> ISet {
        let mut out = ISet::empty();
        let mut next = Some(floor);
        for &(lo, hi) in &self.parts {
            if let Some(n) = next {
                if n < lo {
                    out.push(n, Some(lo - 1));
                }
            }
            next = hi.map(|h| h + 1);
        }
        if let Some(n) = next {
            out.push(n, None);
        }
        out
    }

    /// The least element ≥ `v`.
    pub fn first_at_least(&self, v: i64) -> Option<i64> {
        self.parts
            .iter()
            .find(|&&(_, hi)| hi.is_none_or(|h| h >= v))
            .map(|&(lo, _)| lo.max(v))
    }

    /// The elements, when the set is bounded and has at most `cap` of them.
    pub fn values(&self, cap: usize) -> Option<Vec<i64>> {
        let mut out = Vec::new();
        for &(lo, hi) in &self.parts {
            let hi = hi?;
            for v in lo..=hi {
                if out.len() >= cap {
                    return None;
                }
                out.push(v);
            }
        }
        Some(out)
    }

    /// `2, 4-7, 9-` style text (documentation and messages).
    pub fn describe(&self) -> String {
        if self.parts.is_empty() {
            return "none".into();
        }
        let items: Vec<String> = self
            .parts
            .iter()
            .map(|&(lo, hi)| match hi {
                Some(h) if h == lo => format!("{lo}"),
                Some(h) => format!("{lo}-{h}"),
                None => format!("{lo}-"),
            })
            .collect();
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::ISet;

    #[test]
    fn union_intersection_and_complement_keep_intervals_disjoint() {
        let a = ISet::range(2, 5).union(&ISet::range(7, 9)).union(&ISet::point(6));
        assert_eq!(a, ISet::range(2, 9));
        let b = ISet::from(4).intersect(&ISet::range(0, 6));
        assert_eq!(b, ISet::range(4, 6));
        let c = ISet::range(2, 10).minus(&ISet::range(4, 5));
        assert_eq!(c.parts(), &[(2, Some(3)), (6, Some(10))]);
        assert_eq!(ISet::range(3, 4).complement_from(0).parts(), &[(0, Some(2)), (5, None)]);
        assert_eq!(ISet::of_values([5, 2, 3]).describe(), "2-3, 5");
        assert_eq!(ISet::from(9).first_at_least(3), Some(9));
        assert!(ISet::from(9).contains(1 << 40));
    }
}
