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
/// rest of `base` fixed). The mask depends only on the core id, so each
/// distinct core id is evaluated once: through a dense table when the ids span
/// a small range (the usual case: 0 ≤ core < lnc), else through a hash map.
pub fn eval_mask_batch(ctx: &Context, preds: &[AffinePredicate], base: &Bindings, cores: &[i64]) -> Result<Vec<u8>> {
    if preds.is_empty() {
        return Ok(vec![1; cores.len()]);
    }
    let mut b = base.clone();
    let mut eval_core = |c: i64| -> Result<u8> {
        b.shard = Some(c);
        eval_mask(ctx, preds, &b)
    };
    let (Some(&lo), Some(&hi)) = (cores.iter().min(), cores.iter().max()) else {
        return Ok(Vec::new());
    };
    const DENSE_SPAN: i128 = 1 << 16;
    if (hi as i128) - (lo as i128) < DENSE_SPAN {
        const UNSET: u8 = 2;
        let mut table = vec![UNSET; (hi - lo) as usize + 1];
        let mut out = Vec::with_capacity(cores.len());
        for &c in cores {
            let slot = &mut table[(c - lo) as usize];
            if *slot == UNSET {
                *slot = eval_core(c)?;
            }
            out.push(*slot);
        }
        return Ok(out);
    }
    let mut cache: hashbrown::HashMap<i64, u8> = hashbrown::HashMap::new();
    let mut out = Vec::with_capacity(cores.len());
    for &c in cores {
        let m = match cache.get(&c) {
            Some(&m) => m,
            None => {
                let m = eval_core(c)?;
                cache.insert(c, m);
                m
            }
        };
        out.push(m);
    }
    Ok(out)
}
