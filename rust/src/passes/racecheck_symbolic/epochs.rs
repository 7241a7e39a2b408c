//! Bands as §3.6 forms them, symbolically. For a pair of cores only the
//! counted instances of the `CoreBarrier`s whose `cores` include both count;
//! with the barrier sequences equal on both cores (the verifier and 9304 make
//! them so on every valid N) two accesses are ordered iff the number of such
//! instances before them differs. Barriers are grouped in *classes* by their
//! `cores` list; the count of class c before an instance of the instruction at
//! position p, in iteration t of its loops, is affine:
//! `E_c(p, t) = base_c(p) + Σ_l weight_c(l)·t_l`.
//!
//! What this model needs, else the function is not modelled: a barrier that
//! can count has predicates on the shard only (at a valid N its presence is
//! the same on every core, so it counts iff it is present on core 0), and the
//! loops around it have constant masks (no shard, no IV). A barrier whose
//! mask is undecided (a runtime value) never counts, on any core.

use super::affine::QDef;
use super::model::{mentions_iv, mentions_shard, shard_presence, FnModel, Pred};
use super::nset::ISet;
use crate::bir::{Instruction, OpFields, Opcode};

/// One class of barriers: their `cores` list (None: every core).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub cores: Option<Vec<i64>>,
    /// Counts for every pair of cores asked about.
    pub universal: bool,
}

impl Class {
    pub fn contains(&self, c: i64) -> bool {
        self.cores.as_ref().is_none_or(|l| l.binary_search(&c).is_ok())
    }
}

pub struct Epochs {
    pub classes: Vec<Class>,
    k: usize,
    /// `base[pos·k + c]`.
    base: Vec<i64>,
    /// `weight[loop·k + c]`: instances of class c per iteration of the loop.
    weight: Vec<i64>,
    /// Why the function's barriers are not modelled.
    pub unmodelled: Option<String>,
}

/// The canonical `cores` list of a barrier: None for every core.
fn cores_of(inst: &Instruction) -> Option<Vec<i64>> {
    match &inst.op {
        OpFields::CoreBarrier { cores, .. } => match cores.as_deref() {
            None | Some([]) => None,
            Some(l) => {
                let mut v = l.to_vec();
                v.sort_unstable();
                v.dedup();
                Some(v)
            }
        },
        _ => None,
    }
}

/// Whether a loop's mask is constant: Some(true/false), None when it depends
/// on the shard, an IV or a runtime value (`Err` for the last: undecided).
fn loop_mask(preds: &[Pred], qs: &[QDef]) -> Result<Option<bool>, ()> {
    let mut all = true;
    for p in preds {
        match p {
            Pred::Undecided(_) => return Err(()),
            Pred::Unmodelled(_) => return Ok(None),
            Pred::Lin { form, eq } => {
                if mentions_iv(form, qs) || mentions_shard(form, qs) || !form.is_const() {
                    return Ok(None);
                }
                let v = form.c;
                all &= if *eq { v == 0 } else { v >= 0 };
            }
        }
    }
    Ok(Some(all))
}

impl Epochs {
    /// `max_core`: the greatest core asked about (None: every core), which
    /// decides which explicit `cores` lists cover every pair.
    pub fn build(model: &FnModel<'_>, qs: &[QDef], max_core: Option<i64>) -> Epochs {
        let mut classes: Vec<Class> = Vec::new();
        let mut class_of = vec![u32::MAX; model.nodes.len()];
        let mut unmodelled = None;
        // Which barriers can count (on core 0 at a valid N).
        let mut counts = vec![false; model.nodes.len()];
        for n in &model.nodes {
            if n.inst.opcode != Opcode::CORE_BARRIER {
                continue;
            }
            let cores = cores_of(n.inst);
            let k = match classes.iter().position(|c| c.cores == cores) {
                Some(k) => k,
                None => {
                    let universal = match (&cores, max_core) {
                        (None, _) => true,
                        (Some(l), Some(m)) => (0..=m).all(|c| l.binary_search(&c).is_ok()),
                        (Some(_), None) => false,
                    };
                    classes.push(Class { cores, universal });
                    classes.len() - 1
                }
            };
            class_of[n.pos as usize] = k as u32;
            let mut own = true;
            for p in &n.preds {
                match p {
                    Pred::Undecided(_) => own = false,
                    Pred::Unmodelled(why) => {
                        unmodelled.get_or_insert(format!("CoreBarrier {}: {why}", n.inst.name));
                    }
                    Pred::Lin { form, .. } if mentions_iv(form, qs) => {
                        unmodelled.get_or_insert(format!(
                            "CoreBarrier {} has a predicate on a loop IV (its count is not affine)",
                            n.inst.name
                        ));
                    }
                    Pred::Lin { .. } => {}
                }
            }
            if own {
                let present = shard_presence(&n.preds, qs, Some(0)).is_ok_and(|s| s.contains(0));
                counts[n.pos as usize] = present;
            }
            // The loops around it: constant masks, or undecided (never counts).
            for l in model.chain(n.pos) {
                match loop_mask(&model.loops[l as usize].preds, qs) {
                    Err(()) => counts[n.pos as usize] = false,
                    Ok(Some(true)) => {}
                    Ok(Some(false)) => counts[n.pos as usize] = false,
                    Ok(None) => {
                        if own {
                            unmodelled.get_or_insert(format!(
                                "CoreBarrier {} is in a Loop whose mask depends on the shard or an IV",
                                n.inst.name
                            ));
                        }
                    }
                }
            }
        }
        let k = classes.len();
        let mut e = Epochs {
            classes,
            k,
            base: vec![0; model.nodes.len() * k],
            weight: vec![0; model.loops.len() * k],
            unmodelled,
        };
        if k > 0 {
            let mut run = vec![0i64; k];
            let tops: Vec<u32> = (0..model.nodes.len() as u32)
                .filter(|&p| model.nodes[p as usize].lp.is_none())
                .collect();
            for p in tops {
                e.walk(model, qs, &class_of, &counts, p, &mut run);
            }
        }
        e
    }

    /// Number the barrier instances of the subtree at `pos` from `run` (the
    /// counts before it, iteration 0 of every enclosing loop); returns the
    /// subtree's own counts per class.
    fn walk(
        &mut self,
        model: &FnModel<'_>,
        qs: &[QDef],
        class_of: &[u32],
        counts: &[bool],
        pos: u32,
        run: &mut [i64],
    ) -> Vec<i64> {
        let k = self.k;
        let p = pos as usize;
        self.base[p * k..p * k + k].copy_from_slice(run);
        let n = &model.nodes[p];
        let mut own = vec![0i64; k];
        if n.inst.opcode == Opcode::CORE_BARRIER {
            if counts[p] {
                own[class_of[p] as usize] = 1;
                run[class_of[p] as usize] += 1;
            }
            return own;
        }
        let Some(l) = n.own_loop else {
            return own;
        };
        let info = &model.loops[l as usize];
        let runs = matches!(loop_mask(&info.preds, qs), Ok(Some(true)) | Ok(None)) && info.trip > 0;
        let start = run.to_vec();
        let mut body = vec![0i64; k];
        // Children in depth-first order: the next positions whose loop is l.
        let mut child = pos + 1;
        let end = pos + crate::analysis::walk::subtree_size(n.inst);
        while child < end {
            let c = self.walk(model, qs, class_of, counts, child, run);
            for (b, x) in body.iter_mut().zip(&c) {
                *b += x;
            }
            child += crate::analysis::walk::subtree_size(model.nodes[child as usize].inst);
        }
        let trip = if runs { info.trip } else { 0 };
        for c in 0..k {
            self.weight[l as usize * k + c] = if runs { body[c] } else { 0 };
            own[c] = body[c].saturating_mul(trip);
            run[c] = start[c].saturating_add(own[c]);
        }
        own
    }

    pub fn k(&self) -> usize {
        self.k
    }

    pub fn base(&self, pos: u32, c: usize) -> i64 {
        self.base[pos as usize * self.k + c]
    }

    pub fn weight(&self, lp: u32, c: usize) -> i64 {
        self.weight[lp as usize * self.k + c]
    }

    /// `[lo, hi]` of the count of every universal class before an instance of
    /// `pos` (its loops over their iterations).
    pub fn universal_range(&self, model: &FnModel<'_>, pos: u32) -> (i64, i64) {
        let mut lo = 0i64;
        let mut hi = 0i64;
        let chain = model.chain(pos);
        for (c, class) in self.classes.iter().enumerate() {
            if !class.universal {
                continue;
            }
            lo += self.base(pos, c);
            hi += self.base(pos, c);
            for &l in &chain {
                let trip = model.loops[l as usize].trip.max(1);
                hi += self.weight(l, c).saturating_mul(trip - 1);
            }
        }
        (lo, hi)
    }

    /// Does any class count differently inside `pos`'s loops (an epoch that
    /// depends on the iteration)?
    pub fn moves(&self, model: &FnModel<'_>, pos: u32) -> bool {
        model
            .chain(pos)
            .iter()
            .any(|&l| (0..self.k).any(|c| self.weight(l, c) != 0))
    }

    /// The *atoms* of the cores: intervals on which every non-universal
    /// class's membership is constant, over `[0, max_core]`.
    pub fn atoms(&self, max_core: Option<i64>) -> Vec<(i64, Option<i64>)> {
        let mut bp: Vec<i64> = vec![0];
        for c in &self.classes {
            if c.universal {
                continue;
            }
            if let Some(l) = &c.cores {
                for &v in l {
                    if v >= 0 {
                        bp.push(v);
                        bp.push(v + 1);
                    }
                }
            }
        }
        bp.sort_unstable();
        bp.dedup();
        let top = max_core;
        let mut out = Vec::new();
        for (i, &lo) in bp.iter().enumerate() {
            if top.is_some_and(|t| lo > t) {
                break;
            }
            let hi = bp.get(i + 1).map(|&n| n - 1);
            let hi = match (hi, top) {
                (Some(h), Some(t)) => Some(h.min(t)),
                (None, t) => t,
                (h, None) => h,
            };
            out.push((lo, hi));
        }
        out
    }

    /// Which classes count for a pair of cores in atoms (`a1`, `a2`) (by
    /// their least core; universal ones always).
    pub fn counted(&self, c1: i64, c2: i64) -> Vec<bool> {
        self.classes
            .iter()
            .map(|c| c.universal || (c.contains(c1) && c.contains(c2)))
            .collect()
    }
}

/// The cores a set of atoms covers (for messages).
pub fn atoms_set(atoms: &[(i64, Option<i64>)]) -> ISet {
    let mut s = ISet::empty();
    for &(lo, hi) in atoms {
        s = s.union(&ISet::interval(lo, hi));
    }
    s
}
