//! isLegalDelinearizedAddress (vtable slot 12) — neuronx-facts §1.9, contract §2.3.
//! Decides whether an index tree can be lowered to a static delinearized
//! (partition, free) address, or must fall back to the indirect path.

use super::context::Context;
use super::kinds::{ExprId, Node};
use crate::error::{Error, Result};

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}

impl Context {
    /// AffineIdx::requirePredicate: a divide by `denom` of this index needs a
    /// boundary predicate when its trip count is not a multiple of `denom`
    /// (or unknown, as for a runtime value).
    pub fn require_predicate(&self, idx: ExprId, denom: i64) -> bool {
        match self.trip_count(idx) {
            Some(tc) if denom != 0 => tc % denom != 0,
            _ => true,
        }
    }

    /// `axis` is accepted for fidelity with the compiler's signature; the
    /// rules do not depend on it.
    pub fn is_legal_delinearized_address(
        &self,
        id: ExprId,
        axis: i64,
        is_partition_dim: bool,
        require_pred: bool,
    ) -> Result<bool> {
        let _ = axis;
        Ok(match self.node(id) {
            n if n.kind().is_index_leaf() => true,
            Node::AffExpr { terms, c } => terms.is_empty() || !is_partition_dim || *c == 0,
            Node::Sum { terms } => {
                for &t in terms.iter() {
                    if !self.is_legal_delinearized_address(t, axis, is_partition_dim, require_pred)? {
                        return Ok(false);
                    }
                }
                true
            }
            Node::Mult { var, .. } => self.is_legal_delinearized_address(*var, axis, is_partition_dim, require_pred)?,
            Node::FloorDiv { numer, denom }
            | Node::Modulo { numer, denom }
            | Node::CCDiv { numer, denom, .. }
            | Node::CCMod { numer, denom, .. } => self.div_like_is_legal(*numer, *denom, require_pred),
            Node::ICmp { .. } => {
                return Err(Error::pelican("Not implemented!", "AffineExpr.h:ICmpExpr"));
            }
            // CCGetRank, IndirectArg and opaque functions are never statically
            // delinearizable: they force the indirect/register path.
            _ => false,
        })
    }

    fn div_like_is_legal(&self, numer: ExprId, denom: i64, require_pred: bool) -> bool {
        match self.node(numer) {
            n if n.kind().is_index_leaf() => !require_pred || !self.require_predicate(numer, denom),
            Node::AffExpr { terms, .. } => match terms.len() {
                0 => true,
                1 => {
                    let (idx, coeff) = terms[0];
                    let g = gcd(denom, coeff);
                    g != 0 && !self.require_predicate(idx, denom / g)
                }
                _ => false,
            },
            _ => false,
        }
    }
}
