//! The free variables of an expression: the loop axes and runtime values it
//! still depends on. `lncsplit.explain` says on which loop axes a predicate
//! stays undecided after the shard is bound; this is that walk.

use hashbrown::HashSet;

use super::context::Context;
use super::kinds::{AxisId, ExprId, Node};

/// What an expression depends on besides constants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FreeVars {
    /// Loop axes (AffineIV leaves), in first-seen depth-first order.
    pub axes: Vec<AxisId>,
    /// Whether some leaf is a runtime value (register, collective rank,
    /// indirect argument): never decided at compile time.
    pub runtime: bool,
    /// Whether a ShardId is still present.
    pub shard: bool,
}

impl Context {
    /// The free variables of `id`. Iterative, and each node is visited once
    /// (expressions are DAGs), so any depth and any sharing is safe.
    pub fn free_vars(&self, id: ExprId) -> FreeVars {
        let mut out = FreeVars::default();
        let mut seen: HashSet<ExprId> = HashSet::new();
        let mut stack = vec![id];
        while let Some(e) = stack.pop() {
            if !seen.insert(e) {
                continue;
            }
            match self.node(e) {
                Node::AffineIV { axis } => {
                    if !out.axes.contains(axis) {
                        out.axes.push(*axis);
                    }
                }
                Node::ShardId { .. } => out.shard = true,
                Node::IntRuntimeValue { .. } | Node::CCGetRank { .. } | Node::IndirectArg { .. } => out.runtime = true,
                n => {
                    // Reverse so the first child is visited first.
                    let mut ch = n.children();
                    ch.reverse();
                    stack.extend(ch);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_vars_lists_axes_once_in_order_and_flags_shard_and_runtime() {
        let mut c = Context::new();
        let t = c.add_axis("t", 0, 4, 1).unwrap();
        let u = c.add_axis("u", 0, 2, 1).unwrap();
        let it = c.affine_iv(t).unwrap();
        let iu = c.affine_iv(u).unwrap();
        let s = c.shard_id(2).unwrap();
        let e = c.aff_expr(&[(iu, 2), (it, 3), (s, 1)], 1).unwrap();
        let e2 = c.sum(&[e, e]).unwrap();
        let fv = c.free_vars(e2);
        assert_eq!(fv.axes.len(), 2);
        assert!(fv.axes.contains(&t) && fv.axes.contains(&u));
        assert!(fv.shard && !fv.runtime);
        let k = c.aff_expr(&[], 5).unwrap();
        assert_eq!(c.free_vars(k), FreeVars::default());
    }
}
