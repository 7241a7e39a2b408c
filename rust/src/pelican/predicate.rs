//! AffinePredicate and the instruction mask (contract §1.6, §2.4).
//!
//! A predicate is `expr ≥ 0` (`ge`) or `expr == 0`. An instruction's mask is
//! the conjunction of its predicates: `eval_mask` is 0 iff some predicate is
//! false; undecided counts as may-fire; no predicates → 1.

use super::context::Context;
use super::eval::Bindings;
use super::kinds::ExprId;
use crate::error::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AffinePredicate {
    pub expr: ExprId,
    pub ge: bool,
}

impl AffinePredicate {
    /// True, false, or undecided (None) under `b`.
    pub fn eval(&self, ctx: &Context, b: &Bindings) -> Result<Option<bool>> {
        Ok(ctx.eval(self.expr, b)?.map(|v| if self.ge { v >= 0 } else { v == 0 }))
    }
}

/// bir::Instruction::evalMask: 0 iff some predicate is false under `b`.
pub fn eval_mask(ctx: &Context, preds: &[AffinePredicate], b: &Bindings) -> Result<u8> {
    for p in preds {
        if p.eval(ctx, b)? == Some(false) {
            return Ok(0);
        }
    }
    Ok(1)
}

/// `eval_mask` for many core ids at once (the shard bound to each core, the
/// rest of `base` fixed). Each distinct core id is evaluated once.
pub fn eval_mask_batch(
    ctx: &Context,
    preds: &[AffinePredicate],
    base: &Bindings,
    cores: &[i64],
) -> Result<Vec<u8>> {
    let mut cache: hashbrown::HashMap<i64, u8> = hashbrown::HashMap::new();
    let mut b = base.clone();
    let mut out = Vec::with_capacity(cores.len());
    for &c in cores {
        let m = match cache.get(&c) {
            Some(&m) => m,
            None => {
                b.shard = Some(c);
                let m = eval_mask(ctx, preds, &b)?;
                cache.insert(c, m);
                m
            }
        };
        out.push(m);
    }
    Ok(out)
}
