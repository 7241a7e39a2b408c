//! One function of the symbolic module as the symbolic checker reads it:
//! every instruction by depth-first position with its enclosing loops and
//! its predicates as quasi-affine forms, and the two kinds of presence the
//! concrete pipeline uses (contract §3.1, §3.6):
//!
//! - *structural*: the split keeps an instruction on core c iff its mask with
//!   only the shard bound is not 0 (a predicate on a loop IV or a runtime
//!   value is undecided, so kept) — what the verifier counts and the static
//!   footprint check sees;
//! - *dynamic*: an instance exists iff its own mask and every enclosing
//!   Loop's mask are not 0 with the IVs bound — what the walk visits.

use std::sync::Arc;

use hashbrown::HashMap;
use smallvec::SmallVec;

use super::affine::{Forms, Lin, Opaque, QDef, Var};
use super::nset::ISet;
use crate::bir::{Function, Instruction, OpFields};
use crate::error::Result;
use crate::pelican::{eval_mask, AffinePredicate, AxisId, Bindings, Context, ExprId, Node as ENode};

/// A predicate `form ≥ 0` (`eq`: `form == 0`), undecided at run time (a
/// runtime value: may fire), or one the symbolic checker does not model.
#[derive(Clone, Debug)]
pub enum Pred {
    Lin { form: Lin, eq: bool },
    Undecided(String),
    Unmodelled(String),
}

/// One Loop instruction.
#[derive(Clone, Debug)]
pub struct LoopInfo {
    pub axis: AxisId,
    pub name: Arc<str>,
    pub lo: i64,
    pub step: i64,
    /// Iterations (0 when the loop never runs).
    pub trip: i64,
    pub pos: u32,
    pub parent: Option<u32>,
    /// The loop's own predicates, read with its own IV unbound (a predicate
    /// on its own axis is undecided when the walk evaluates it).
    pub preds: Vec<Pred>,
}

/// One instruction.
pub struct Node<'m> {
    pub inst: &'m Instruction,
    pub pos: u32,
    /// Index among the function's top-level instructions (blocks in order).
    pub top: u32,
    /// Innermost enclosing loop (index into `loops`).
    pub lp: Option<u32>,
    /// This instruction's own loop, when it is a Loop.
    pub own_loop: Option<u32>,
    pub preds: Vec<Pred>,
}

pub struct FnModel<'m> {
    pub function: &'m Function,
    pub nodes: Vec<Node<'m>>,
    pub loops: Vec<LoopInfo>,
}

/// The most cores whose presence is computed one by one (a predicate with a
/// floor or modulo of the shard); beyond it the answer is unknown.
pub const CORE_CAP: i64 = 4096;

impl<'m> FnModel<'m> {
    pub fn build(forms: &mut Forms<'_>, function: &'m Function) -> FnModel<'m> {
        let mut m = FnModel {
            function,
            nodes: Vec::new(),
            loops: Vec::new(),
        };
        let mut top = 0u32;
        for b in &function.basic_blocks {
            for inst in &b.instructions {
                m.visit(forms, inst, top, None);
                top += 1;
            }
        }
        m
    }

    fn visit(&mut self, forms: &mut Forms<'_>, inst: &'m Instruction, top: u32, lp: Option<u32>) {
        let pos = self.nodes.len() as u32;
        let own_axis = match &inst.op {
            OpFields::Loop { axis, .. } => Some(*axis),
            _ => None,
        };
        let preds: Vec<Pred> = inst.predicates.iter().map(|p| pred_form(forms, p, own_axis)).collect();
        let own_loop = own_axis.map(|axis| {
            let a = forms.ctx.axis(axis);
            let trip = if a.step > 0 { a.trip_count().max(0) } else { 0 };
            self.loops.push(LoopInfo {
                axis,
                name: a.name.clone(),
                lo: a.lo,
                step: a.step,
                trip,
                pos,
                parent: lp,
                preds: preds.clone(),
            });
            self.loops.len() as u32 - 1
        });
        self.nodes.push(Node {
            inst,
            pos,
            top,
            lp,
            own_loop,
            preds: if own_loop.is_some() { Vec::new() } else { preds },
        });
        if let OpFields::Loop { blocks, .. } = &inst.op {
            for b in blocks {
                for child in &b.instructions {
                    self.visit(forms, child, top, own_loop);
                }
            }
        }
    }

    /// The loops enclosing `pos`, outermost first.
    pub fn chain(&self, pos: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cur = self.nodes[pos as usize].lp;
        while let Some(l) = cur {
            out.push(l);
            cur = self.loops[l as usize].parent;
        }
        out.reverse();
        out
    }

    /// The predicates an instruction's own mask holds (a Loop's are in its
    /// `LoopInfo`).
    pub fn own_preds(&self, pos: u32) -> &[Pred] {
        let n = &self.nodes[pos as usize];
        match n.own_loop {
            Some(l) => &self.loops[l as usize].preds,
            None => &n.preds,
        }
    }
}

fn pred_form(forms: &mut Forms<'_>, p: &AffinePredicate, own_axis: Option<AxisId>) -> Pred {
    match forms.of(p.expr) {
        Ok(form) => {
            if own_axis.is_some_and(|a| mentions_axis(&form, &forms.qs, a)) {
                return Pred::Undecided("a Loop predicate on its own IV".into());
            }
            Pred::Lin { form, eq: !p.ge }
        }
        Err(Opaque::Runtime(s)) => Pred::Undecided(s),
        Err(Opaque::Unsupported(s)) => Pred::Unmodelled(s),
    }
}

/// Does `l` (or a quotient in it) use `Var::Iv(axis)`?
pub fn mentions_axis(l: &Lin, qs: &[QDef], axis: AxisId) -> bool {
    l.vars().any(|v| match v {
        Var::Iv(a) => a == axis,
        Var::Q(k) => mentions_axis(&qs[k as usize].num, qs, axis),
        Var::Shard => false,
    })
}

/// Does `l` use any loop IV?
pub fn mentions_iv(l: &Lin, qs: &[QDef]) -> bool {
    l.vars().any(|v| match v {
        Var::Iv(_) => true,
        Var::Q(k) => mentions_iv(&qs[k as usize].num, qs),
        Var::Shard => false,
    })
}

/// Does `l` use the shard?
pub fn mentions_shard(l: &Lin, qs: &[QDef]) -> bool {
    l.vars().any(|v| match v {
        Var::Shard => true,
        Var::Q(k) => mentions_shard(&qs[k as usize].num, qs),
        Var::Iv(_) => false,
    })
}

/// Does `l` use a quotient?
pub fn has_quotient(l: &Lin) -> bool {
    l.vars().any(|v| matches!(v, Var::Q(_)))
}

/// The value of a form with only the shard (and no IV) in it.
pub fn eval_shard(l: &Lin, qs: &[QDef], s: i64) -> Option<i64> {
    let mut acc = l.c as i128;
    for &(v, k) in &l.terms {
        let x = match v {
            Var::Shard => s as i128,
            Var::Q(q) => {
                let d = &qs[q as usize];
                eval_shard(&d.num, qs, s)?.div_euclid(d.den) as i128
            }
            Var::Iv(_) => return None,
        };
        acc = acc.checked_add(x.checked_mul(k as i128)?)?;
    }
    i64::try_from(acc).ok()
}

/// The cores `s ≥ 0` on which the shard-only predicates among `preds` hold
/// (the others count as true: undecided with only the shard bound). `hi`:
/// the greatest core asked about (None: every core). Err when the set cannot
/// be computed (a floor or modulo of the shard with too many cores to try).
pub fn shard_presence<'p>(
    preds: impl IntoIterator<Item = &'p Pred>,
    qs: &[QDef],
    hi: Option<i64>,
) -> std::result::Result<ISet, String> {
    let mut set = ISet::from(0);
    for p in preds {
        let Pred::Lin { form, eq } = p else { continue };
        if mentions_iv(form, qs) {
            continue;
        }
        set = set.intersect(&pred_cores(form, *eq, qs, hi)?);
        if set.is_empty() {
            break;
        }
    }
    Ok(set)
}

fn pred_cores(form: &Lin, eq: bool, qs: &[QDef], hi: Option<i64>) -> std::result::Result<ISet, String> {
    if !has_quotient(form) {
        let (a, c) = (form.coeff(Var::Shard) as i128, form.c as i128);
        return Ok(affine_cores(a, c, eq));
    }
    let top = match hi {
        Some(h) if h < CORE_CAP => h,
        _ => {
            return Err(format!(
                "a predicate with a floor or modulo of the shard, asked for more than {CORE_CAP} cores"
            ))
        }
    };
    let mut vals = Vec::new();
    for s in 0..=top {
        let v = eval_shard(form, qs, s).ok_or("predicate arithmetic past 64 bits")?;
        if if eq { v == 0 } else { v >= 0 } {
            vals.push(s);
        }
    }
    Ok(ISet::of_values(vals))
}

/// `{s ≥ 0 : a·s + c ≥ 0}` (or `== 0`).
fn affine_cores(a: i128, c: i128, eq: bool) -> ISet {
    let clip = |x: i128| x.clamp(-1, i64::MAX as i128 / 2) as i64;
    if eq {
        if a == 0 {
            return if c == 0 { ISet::from(0) } else { ISet::empty() };
        }
        if (-c) % a != 0 {
            return ISet::empty();
        }
        let s = -c / a;
        return if s >= 0 { ISet::point(clip(s)) } else { ISet::empty() };
    }
    match a.cmp(&0) {
        std::cmp::Ordering::Equal => {
            if c >= 0 {
                ISet::from(0)
            } else {
                ISet::empty()
            }
        }
        // s ≥ ceil(−c / a)
        std::cmp::Ordering::Greater => ISet::from(clip((-c).div_euclid(a) + ((-c).rem_euclid(a) != 0) as i128).max(0)),
        // s ≤ floor(c / −a)
        std::cmp::Ordering::Less => {
            let h = c.div_euclid(-a);
            if h < 0 {
                ISet::empty()
            } else {
                ISet::range(0, clip(h))
            }
        }
    }
}

// ------------------------------------------------------------ instances

/// The AffineIV node of each axis of `ctx` (None when no expression uses it).
pub fn iv_nodes(ctx: &Context) -> HashMap<AxisId, ExprId> {
    let mut out = HashMap::new();
    for k in 0..ctx.axes().len() {
        let axis = AxisId(k as u32);
        if let Some(id) = ctx.lookup(&ENode::AffineIV { axis }) {
            out.insert(axis, id);
        }
    }
    out
}

/// An arena to evaluate the model's expressions in: `ctx`, where the model's
/// id `e` is `ids[e]` (None: the model's own arena). The symbolic checker
/// asks about cores past the module's ShardId bound; it evaluates in the
/// arena of `with_shard_bound(module, CORE_CAP)`, whose ShardIds admit them.
#[derive(Clone, Copy)]
pub struct Arena<'a> {
    pub ctx: &'a Context,
    pub ids: Option<&'a [ExprId]>,
}

impl Arena<'_> {
    pub fn id(&self, e: ExprId) -> ExprId {
        self.ids.map_or(e, |m| m[e.index()])
    }

    fn mask(&self, preds: &[AffinePredicate], b: &Bindings) -> Result<u8> {
        match self.ids {
            None => eval_mask(self.ctx, preds, b),
            Some(_) => {
                let mapped: SmallVec<[AffinePredicate; 4]> = preds
                    .iter()
                    .map(|p| AffinePredicate {
                        expr: self.id(p.expr),
                        ge: p.ge,
                    })
                    .collect();
                eval_mask(self.ctx, &mapped, b)
            }
        }
    }
}

/// Visit every existing instance of instruction `pos` on core `shard` (the
/// walk's rule: every enclosing Loop's mask and its own are not 0), with the
/// IV values of its loops (outermost first); `visit` returns false to stop.
/// Stops with `Ok(false)` after `budget` loop iterations. `ivs` are the IV
/// nodes of `arena.ctx` (`iv_nodes`).
#[allow(clippy::too_many_arguments)]
pub fn for_each_instance(
    model: &FnModel<'_>,
    arena: Arena<'_>,
    ivs: &HashMap<AxisId, ExprId>,
    pos: u32,
    shard: i64,
    budget: &mut u64,
    visit: &mut dyn FnMut(&Bindings, &[i64]) -> Result<bool>,
) -> Result<bool> {
    let chain = model.chain(pos);
    let mut b = Bindings::shard(shard);
    let mut vals = vec![0i64; chain.len()];
    enumerate(model, arena, ivs, &chain, 0, pos, &mut b, &mut vals, budget, visit)
}

#[allow(clippy::too_many_arguments)]
fn enumerate(
    model: &FnModel<'_>,
    arena: Arena<'_>,
    ivs: &HashMap<AxisId, ExprId>,
    chain: &[u32],
    level: usize,
    pos: u32,
    b: &mut Bindings,
    vals: &mut [i64],
    budget: &mut u64,
    visit: &mut dyn FnMut(&Bindings, &[i64]) -> Result<bool>,
) -> Result<bool> {
    if level == chain.len() {
        let inst = model.nodes[pos as usize].inst;
        if arena.mask(&inst.predicates, b)? == 0 {
            return Ok(true);
        }
        return visit(b, vals);
    }
    let l = &model.loops[chain[level] as usize];
    let linst = model.nodes[l.pos as usize].inst;
    if arena.mask(&linst.predicates, b)? == 0 {
        return Ok(true);
    }
    let iv = ivs.get(&l.axis).copied();
    for t in 0..l.trip {
        if *budget == 0 {
            return Ok(false);
        }
        *budget -= 1;
        let v = l.lo + l.step * t;
        vals[level] = v;
        if let Some(id) = iv {
            b.by_id.insert(id, v);
        }
        if !enumerate(model, arena, ivs, chain, level + 1, pos, b, vals, budget, visit)? {
            return Ok(false);
        }
    }
    if let Some(id) = iv {
        b.by_id.remove(&id);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_shard_predicates_give_the_cores_they_hold_on() {
        assert_eq!(affine_cores(1, -2, false), ISet::from(2));
        assert_eq!(affine_cores(-1, 3, false), ISet::range(0, 3));
        assert_eq!(affine_cores(1, -3, true), ISet::point(3));
        assert_eq!(affine_cores(2, -3, true), ISet::empty());
        assert_eq!(affine_cores(2, -3, false), ISet::from(2));
        assert_eq!(affine_cores(-1, -1, false), ISet::empty());
        assert_eq!(affine_cores(0, 0, true), ISet::from(0));
    }
}
