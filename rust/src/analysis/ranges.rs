//! `[lo, hi]` of every value an expression takes over its index ranges
//! (interval arithmetic, memoized by id; None when it cannot be bounded:
//! runtime values, unbound indices, overflow).
//!
//! The fast path of both footprint checks: a footprint is monotone in every
//! address (partition-major strides are ≥ 0), so fitting at the least and the
//! greatest addresses means fitting for every instance. The concrete race
//! checker (`lnc_barriercheck::bounds`) reads a ShardId's range from the
//! arena; the symbolic one (`racecheck_symbolic::validity`) asks about every
//! core of `[0, hi]` for an N the module's own `ub` does not say.

use hashbrown::HashMap;

use crate::pelican::{Context, ExprId, Node};

/// Where a ShardId's range comes from.
#[derive(Clone, Copy, Debug)]
pub enum ShardRange {
    /// The arena's own bounds (the ShardId's `ub`, or its bound core).
    Arena,
    /// Every core of `[0, hi]`; `None`: unbounded (no range).
    UpTo(Option<i64>),
}

pub struct Ranges<'c> {
    ctx: &'c Context,
    shard: ShardRange,
    memo: HashMap<ExprId, Option<(i64, i64)>>,
}

impl<'c> Ranges<'c> {
    pub fn new(ctx: &'c Context, shard: ShardRange) -> Self {
        Ranges {
            ctx,
            shard,
            memo: HashMap::new(),
        }
    }

    /// The arena the ranges read.
    pub fn ctx(&self) -> &'c Context {
        self.ctx
    }

    pub fn of(&mut self, id: ExprId) -> Option<(i64, i64)> {
        if let Some(c) = self.ctx.as_constant(id) {
            return Some((c, c));
        }
        if let Some(&r) = self.memo.get(&id) {
            return r;
        }
        let r = self.compute(id);
        self.memo.insert(id, r);
        r
    }

    fn compute(&mut self, id: ExprId) -> Option<(i64, i64)> {
        let ctx = self.ctx;
        match ctx.node(id) {
            Node::AffExpr { terms, c } => terms.iter().try_fold((*c, *c), |acc, &(t, k)| {
                let (lo, hi) = scale(self.of(t)?, k)?;
                Some((acc.0.checked_add(lo)?, acc.1.checked_add(hi)?))
            }),
            Node::Sum { terms } => terms.iter().try_fold((0i64, 0i64), |acc, &t| {
                let (lo, hi) = self.of(t)?;
                Some((acc.0.checked_add(lo)?, acc.1.checked_add(hi)?))
            }),
            Node::Mult { var, scale: k } => scale(self.of(*var)?, *k),
            Node::FloorDiv { numer, denom } | Node::CCDiv { numer, denom, .. } if *denom > 0 => {
                let (lo, hi) = self.of(*numer)?;
                Some((lo.div_euclid(*denom), hi.div_euclid(*denom)))
            }
            Node::Modulo { numer, denom } | Node::CCMod { numer, denom, .. } if *denom > 0 => {
                let (lo, hi) = self.of(*numer)?;
                if lo.div_euclid(*denom) == hi.div_euclid(*denom) {
                    Some((lo.rem_euclid(*denom), hi.rem_euclid(*denom)))
                } else {
                    Some((0, denom - 1))
                }
            }
            Node::ShardId { .. } => match self.shard {
                ShardRange::Arena => Some((ctx.infimum(id)?, ctx.supremum(id)?)),
                ShardRange::UpTo(hi) => Some((0, hi?)),
            },
            Node::AffineIV { .. } => Some((ctx.infimum(id)?, ctx.supremum(id)?)),
            // A comparison is 0 or 1.
            Node::ICmp { .. } => Some((0, 1)),
            _ => None,
        }
    }
}

fn scale((lo, hi): (i64, i64), k: i64) -> Option<(i64, i64)> {
    let (a, b) = (lo.checked_mul(k)?, hi.checked_mul(k)?);
    Some((a.min(b), a.max(b)))
}
