//! Expression evaluation (contract §2.3) and shard binding (`update_shard_id`).
//!
//! `eval` returns `Ok(None)` — *undecided* — when the value depends on an index
//! the bindings do not fix or on a runtime value. Arithmetic is checked: an
//! overflow is an error, never a wrap. Modulo is Euclidean, divisions floor.

use hashbrown::HashMap;

use super::context::Context;
use super::kinds::{ExprId, Node};
use crate::error::{Error, Result};

/// Values for index leaves: AffineIVs by axis name, the ShardId by `shard`,
/// and any index leaf by its id (the compiler's `DenseMap<AffineIdx*, long>`).
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    pub by_name: HashMap<String, i64>,
    pub by_id: HashMap<ExprId, i64>,
    pub shard: Option<i64>,
}

impl Bindings {
    pub fn shard(core: i64) -> Self {
        Bindings {
            shard: Some(core),
            ..Default::default()
        }
    }
}

fn mul(a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b).ok_or_else(|| Error::overflow("eval (mul)"))
}

/// The value of an n-ary node: undecided if any term was, else the sum, or
/// the overflow error when it did not fit.
fn finish(decided: bool, acc: std::result::Result<i64, &'static str>) -> Result<Option<i64>> {
    if !decided {
        return Ok(None);
    }
    acc.map(Some).map_err(Error::overflow)
}

/// Floor division toward −∞ (denominators are > 0 by construction).
pub fn floor_div(a: i64, d: i64) -> Result<i64> {
    a.checked_div_euclid(d)
        .ok_or_else(|| Error::overflow("eval (floordiv)"))
}

/// Euclidean modulo: result in [0, d).
pub fn euclid_mod(a: i64, d: i64) -> Result<i64> {
    a.checked_rem_euclid(d).ok_or_else(|| Error::overflow("eval (modulo)"))
}

fn out_of_range(what: &str, v: i64, lo: i64, ub: i64, step: i64) -> Error {
    Error::pelican(
        format!("binding {v} for {what} is outside its range [{lo}, {ub}) step {step}"),
        "lncsplit/eval",
    )
}

fn check_in_range(what: &str, v: i64, lo: i64, ub: i64, step: i64) -> Result<i64> {
    check_in_range_named(|| what.to_string(), v, lo, ub, step)
}

/// [`check_in_range`] with the value's name made only for the error (an
/// axis is named `axis <name>`: formatting it for every evaluation of a loop
/// variable was 5 % of the race checker, docs/performance.md).
#[inline]
fn check_in_range_named(what: impl FnOnce() -> String, v: i64, lo: i64, ub: i64, step: i64) -> Result<i64> {
    let aligned = step > 0 && (v as i128 - lo as i128) % step as i128 == 0;
    if v < lo || v >= ub || !aligned {
        return Err(out_of_range(&what(), v, lo, ub, step));
    }
    Ok(v)
}

impl Context {
    /// Evaluate `id` under `b`. `Ok(None)` means undecided.
    ///
    /// Every child is evaluated before the node combines them, so a binding
    /// outside its index's range is an error even where the result would be
    /// undecided anyway. Arithmetic overflow is checked only once every operand
    /// of a node is decided (an undecided value has no magnitude to overflow).
    pub fn eval(&self, id: ExprId, b: &Bindings) -> Result<Option<i64>> {
        // The recursive path is kept to small frames (each arm in its own
        // non-inlined function), so MAX_DEPTH fits a 2 MiB stack in debug.
        match self.node(id) {
            Node::AffExpr { terms, c } => self.eval_aff(terms, *c, b),
            Node::Sum { terms } => self.eval_sum(terms, b),
            Node::Mult { var, scale } => {
                let v = self.eval(*var, b)?;
                v.map(|v| mul(v, *scale)).transpose()
            }
            Node::FloorDiv { numer, denom } | Node::CCDiv { numer, denom, .. } => {
                let v = self.eval(*numer, b)?;
                v.map(|v| floor_div(v, *denom)).transpose()
            }
            Node::Modulo { numer, denom } | Node::CCMod { numer, denom, .. } => {
                let v = self.eval(*numer, b)?;
                v.map(|v| euclid_mod(v, *denom)).transpose()
            }
            _ => self.eval_other(id, b),
        }
    }

    /// One pass, no allocation: every child is evaluated (so a binding out of
    /// range is an error even when another term is undecided), the sum is
    /// accumulated in order with checked arithmetic, and an overflow is
    /// reported only once every term is decided — the same result as
    /// combining afterwards.
    #[inline(never)]
    fn eval_aff(&self, terms: &[(ExprId, i64)], c: i64, b: &Bindings) -> Result<Option<i64>> {
        let mut acc: std::result::Result<i64, &'static str> = Ok(c);
        let mut decided = true;
        for &(idx, coeff) in terms {
            match self.eval(idx, b)? {
                Some(v) => {
                    acc = acc.and_then(|a| {
                        let t = coeff.checked_mul(v).ok_or("eval (mul)")?;
                        a.checked_add(t).ok_or("eval (add)")
                    })
                }
                None => decided = false,
            }
        }
        finish(decided, acc)
    }

    #[inline(never)]
    fn eval_sum(&self, terms: &[ExprId], b: &Bindings) -> Result<Option<i64>> {
        let mut acc: std::result::Result<i64, &'static str> = Ok(0);
        let mut decided = true;
        for &t in terms {
            match self.eval(t, b)? {
                Some(v) => acc = acc.and_then(|a| a.checked_add(v).ok_or("eval (add)")),
                None => decided = false,
            }
        }
        finish(decided, acc)
    }

    #[inline(never)]
    fn eval_other(&self, id: ExprId, b: &Bindings) -> Result<Option<i64>> {
        Ok(match self.node(id) {
            Node::CCGetRank { .. }
            | Node::IndirectArg { .. }
            | Node::IntRuntimeValue { .. }
            | Node::OpaqueFn { .. } => None,
            Node::AffineIV { axis } => {
                let a = self.axis(*axis);
                let v = b.by_id.get(&id).or_else(|| b.by_name.get(&*a.name));
                match v {
                    Some(&v) => Some(check_in_range_named(
                        || format!("axis {}", a.name),
                        v,
                        a.lo,
                        a.ub,
                        a.step,
                    )?),
                    None => None,
                }
            }
            Node::ShardId { ub } => match b.by_id.get(&id).copied().or(b.shard) {
                Some(v) => Some(check_in_range("shard", v, 0, *ub, 1)?),
                None => None,
            },
            Node::TiledAPIndex { child, tile_size, .. } if !b.by_id.contains_key(&id) => {
                // Unbound tiled index: the outer tile of its child's iteration.
                match self.eval(*child, b)? {
                    Some(v) => Some(self.tile_of(*child, v, *tile_size)?),
                    None => None,
                }
            }
            Node::APIndex { .. } | Node::TiledAPIndex { .. } | Node::SymbolicIdx { .. } => match b.by_id.get(&id) {
                Some(&v) => match self.index_geometry(id) {
                    Some((lo, ub, step)) => Some(check_in_range("index", v, lo, ub, step)?),
                    None => Some(v),
                },
                None => None,
            },
            Node::ICmp { op, lhs, rhs } => match (self.eval(*lhs, b)?, self.eval(*rhs, b)?) {
                (Some(l), Some(r)) => Some(op.apply(l, r) as i64),
                _ => None,
            },
            Node::AffExpr { .. }
            | Node::Sum { .. }
            | Node::Mult { .. }
            | Node::FloorDiv { .. }
            | Node::CCDiv { .. }
            | Node::Modulo { .. }
            | Node::CCMod { .. } => return self.eval(id, b),
        })
    }

    /// The outer tile of a tiled index whose child has value `v`: the child's
    /// iteration ordinal `(v − lo) / step`, floor-divided by the tile size.
    fn tile_of(&self, child: ExprId, v: i64, tile_size: i64) -> Result<i64> {
        let (lo, _, step) = self.index_geometry(child).unwrap_or((0, 0, 1));
        let ordinal = floor_div(v.checked_sub(lo).ok_or_else(|| Error::overflow("eval (sub)"))?, step)?;
        floor_div(ordinal, tile_size)
    }

    /// Check that a binding table only binds what can be bound: index leaves
    /// of this context (by id). Runtime values (IntRuntimeValue) are never
    /// decided at compile time, so binding one is an error rather than being
    /// silently ignored.
    pub fn check_bindings(&self, b: &Bindings) -> Result<()> {
        for &id in b.by_id.keys() {
            if !self.contains(id) {
                return Err(Error::pelican(format!("unknown expression id {id}"), "lncsplit/eval"));
            }
            let k = self.kind(id);
            if !k.is_index_leaf() {
                return Err(Error::pelican(
                    format!(
                        "only index leaves (kinds 6-13) can be bound, got {} (kind {})",
                        k.name(),
                        k as u8
                    ),
                    "lncsplit/eval",
                ));
            }
            if k == super::kinds::ExprKind::IntRuntimeValue {
                return Err(Error::pelican(
                    "a runtime value (IntRuntimeValue) cannot be bound: it is never decided at compile time",
                    "lncsplit/eval",
                ));
            }
        }
        Ok(())
    }

    /// The constant value of `id` if it is a folded constant (an AffExpr
    /// without terms).
    pub fn as_constant(&self, id: ExprId) -> Option<i64> {
        match self.node(id) {
            Node::AffExpr { terms, c } if terms.is_empty() => Some(*c),
            _ => None,
        }
    }

    /// QuasiAffineExpr::update_shard_id: substitute the constant `core` for
    /// every ShardId and fold constants. `core ≥ ub` (or < 0) is an error.
    pub fn update_shard_id(&mut self, id: ExprId, core: i64) -> Result<ExprId> {
        let mut memo = HashMap::new();
        self.update_shard_id_memo(id, core, &mut memo)
    }

    /// `update_shard_id` with a caller-owned memo, so a whole module's
    /// expressions are bound once per distinct subtree.
    pub fn update_shard_id_memo(
        &mut self,
        id: ExprId,
        core: i64,
        memo: &mut HashMap<ExprId, ExprId>,
    ) -> Result<ExprId> {
        if !self.has_shard(id) {
            return Ok(id);
        }
        if let Some(&r) = memo.get(&id) {
            return Ok(r);
        }
        let r = self.update_node(id, core, memo)?;
        memo.insert(id, r);
        Ok(r)
    }

    /// Bind the children first (the only recursion, kept in a small frame),
    /// then rebuild this node from them with constants folded.
    fn update_node(&mut self, id: ExprId, core: i64, memo: &mut HashMap<ExprId, ExprId>) -> Result<ExprId> {
        let children = self.node(id).children();
        let mut bound = Vec::with_capacity(children.len());
        for c in children {
            bound.push(self.update_shard_id_memo(c, core, memo)?);
        }
        self.rebuild_folded(id, core, &bound)
    }

    /// Rebuild `id` over its bound children `ch` (same order as
    /// `Node::children`), folding every constant operand.
    #[inline(never)]
    fn rebuild_folded(&mut self, id: ExprId, core: i64, ch: &[ExprId]) -> Result<ExprId> {
        let fold = || Error::overflow("folding");
        let node = self.node(id).clone();
        Ok(match node {
            Node::ShardId { ub } => {
                check_in_range("shard", core, 0, ub, 1)?;
                self.constant(core)
            }
            Node::AffExpr { terms, c } => {
                let mut c = c;
                let mut rest = Vec::with_capacity(terms.len());
                for (&(_, coeff), &b) in terms.iter().zip(ch) {
                    match self.as_constant(b) {
                        Some(v) => {
                            c = c.checked_add(coeff.checked_mul(v).ok_or_else(fold)?).ok_or_else(fold)?;
                        }
                        None => rest.push((b, coeff)),
                    }
                }
                self.aff_expr(&rest, c)?
            }
            Node::Sum { .. } => {
                let mut c: i64 = 0;
                let mut rest = Vec::with_capacity(ch.len());
                for &b in ch {
                    match self.as_constant(b) {
                        Some(v) => c = c.checked_add(v).ok_or_else(fold)?,
                        None => rest.push(b),
                    }
                }
                if rest.is_empty() {
                    self.constant(c)
                } else {
                    if c != 0 {
                        let k = self.constant(c);
                        rest.push(k);
                    }
                    if rest.len() == 1 {
                        rest[0]
                    } else {
                        self.sum(&rest)?
                    }
                }
            }
            Node::Mult { scale, .. } => match self.as_constant(ch[0]) {
                Some(v) => self.constant(v.checked_mul(scale).ok_or_else(fold)?),
                None => self.mult(ch[0], scale)?,
            },
            Node::FloorDiv { denom, .. } => match self.as_constant(ch[0]) {
                Some(v) => self.constant(floor_div(v, denom)?),
                None => self.floor_div(ch[0], denom)?,
            },
            Node::Modulo { denom, .. } => match self.as_constant(ch[0]) {
                Some(v) => self.constant(euclid_mod(v, denom)?),
                None => self.modulo(ch[0], denom)?,
            },
            Node::CCDiv {
                denom,
                replica_groups_id,
                ..
            } => match self.as_constant(ch[0]) {
                Some(v) => self.constant(floor_div(v, denom)?),
                None => self.cc_div(ch[0], denom, replica_groups_id)?,
            },
            Node::CCMod {
                denom,
                replica_groups_id,
                ..
            } => match self.as_constant(ch[0]) {
                Some(v) => self.constant(euclid_mod(v, denom)?),
                None => self.cc_mod(ch[0], denom, replica_groups_id)?,
            },
            Node::ICmp { op, .. } => match (self.as_constant(ch[0]), self.as_constant(ch[1])) {
                (Some(a), Some(b)) => self.constant(op.apply(a, b) as i64),
                _ => self.icmp(op, ch[0], ch[1])?,
            },
            Node::OpaqueFn { name, .. } => {
                let name = self.register_name(name).to_string();
                self.opaque_fn(&name, ch)?
            }
            Node::TiledAPIndex {
                child,
                tile_size,
                tile_pos_flags,
                is_partition,
            } => {
                // A tiled shard index binds to the outer tile of the bound shard.
                match self.as_constant(ch[0]) {
                    Some(v) => self.constant(self.tile_of(child, v, tile_size)?),
                    None => self.tiled_ap_index(ch[0], tile_pos_flags, tile_size, is_partition)?,
                }
            }
            Node::APIndex {
                stride, lo, ub, step, ..
            } => match ch.first() {
                Some(&inner) if self.kind(inner) == super::kinds::ExprKind::APIndex => {
                    self.ap_index(lo, ub, step, stride, Some(inner))?
                }
                _ => id,
            },
            Node::SymbolicIdx { .. }
            | Node::AffineIV { .. }
            | Node::CCGetRank { .. }
            | Node::IndirectArg { .. }
            | Node::IntRuntimeValue { .. } => id,
        })
    }
}
