//! The solver's question for one pair of accesses: a union of conjunctions
//! of linear (in)equalities over integers, with output dims
//! `[s1, s2, x, a_t…, b_t…]` (the two cores, the common flat byte, the
//! iteration of each side's loops) and existential variables (each side's AP
//! indices `j`, byte in the element `r`, quotients `q`). It is empty iff the
//! pair cannot race; its lexicographic minimum is the witness. The JSON form
//! is rendered for isl and z3 by the Python side (`racecheck_symbolic`).

use hashbrown::HashSet;
use serde_json::{json, Value};

use super::affine::{Lin, QDef, Var};
use super::fp::ArgFp;
use super::model::{LoopInfo, Pred};

/// `Σ coeff·var + k` compared with 0 (`eq`: `= 0`, else `≥ 0`).
#[derive(Clone, Debug)]
pub struct Con {
    pub t: Vec<(String, i128)>,
    pub k: i128,
    pub eq: bool,
}

impl Con {
    fn to_value(&self) -> Option<Value> {
        let fit = |x: i128| i64::try_from(x).ok();
        let mut t = Vec::with_capacity(self.t.len());
        for (v, c) in &self.t {
            if *c != 0 {
                t.push(json!([v, fit(*c)?]));
            }
        }
        Some(json!({"t": t, "k": fit(self.k)?, "eq": self.eq}))
    }
}

pub fn ge(t: Vec<(String, i128)>, k: i128) -> Con {
    Con { t, k, eq: false }
}

pub fn eq(t: Vec<(String, i128)>, k: i128) -> Con {
    Con { t, k, eq: true }
}

/// One side of a pair as the query sees it.
pub struct Side<'a> {
    /// `a` or `b`.
    pub prefix: &'static str,
    /// `s1` or `s2`.
    pub shard: &'static str,
    pub loops: Vec<&'a LoopInfo>,
    /// Every predicate on the instance's path (the loops' and its own).
    pub preds: Vec<&'a Pred>,
    pub fp: &'a ArgFp,
}

pub struct Builder<'q> {
    pub qs: &'q [QDef],
    pub dims: Vec<String>,
    pub exists: Vec<String>,
    pub base: Vec<Con>,
    quotients: HashSet<String>,
}

impl<'q> Builder<'q> {
    pub fn new(qs: &'q [QDef]) -> Self {
        Builder {
            qs,
            dims: vec!["s1".into(), "s2".into(), "x".into()],
            exists: Vec::new(),
            base: Vec::new(),
            quotients: HashSet::new(),
        }
    }

    /// The loop variable of `side`'s loop number `k` (outermost 0).
    pub fn t(side: &Side<'_>, k: usize) -> String {
        format!("{}_t{k}", side.prefix)
    }

    /// `l` on `side` as terms and a constant (IVs as `lo + step·t`,
    /// quotients as existential variables with their definitions).
    pub fn terms(&mut self, side: &Side<'_>, l: &Lin) -> (Vec<(String, i128)>, i128) {
        let mut t = Vec::new();
        let mut k = l.c as i128;
        for &(v, c) in &l.terms {
            let c = c as i128;
            match v {
                Var::Shard => t.push((side.shard.to_string(), c)),
                Var::Iv(axis) => {
                    // The innermost enclosing loop of that axis.
                    match side.loops.iter().rposition(|lp| lp.axis == axis) {
                        Some(i) => {
                            let lp = side.loops[i];
                            t.push((Self::t(side, i), c * lp.step as i128));
                            k += c * lp.lo as i128;
                        }
                        None => k += 0,
                    }
                }
                Var::Q(q) => {
                    let name = format!("{}_q{q}", side.prefix);
                    self.quotient(side, q, &name);
                    t.push((name, c));
                }
            }
        }
        (t, k)
    }

    /// `den·q ≤ num ≤ den·q + den − 1` for quotient `q`, once per side.
    fn quotient(&mut self, side: &Side<'_>, q: u32, name: &str) {
        if !self.quotients.insert(name.to_string()) {
            return;
        }
        self.exists.push(name.to_string());
        let def = self.qs[q as usize].clone();
        let (mut t, k) = self.terms(side, &def.num);
        let d = def.den as i128;
        // num − d·q ≥ 0
        let mut lo = t.clone();
        lo.push((name.to_string(), -d));
        self.base.push(ge(lo, k));
        // d·q + d − 1 − num ≥ 0
        for x in &mut t {
            x.1 = -x.1;
        }
        t.push((name.to_string(), d));
        self.base.push(ge(t, d - 1 - k));
    }

    /// Loops, predicates and footprint of one side: the byte `x` is one of
    /// the bytes of an existing instance of it on core `side.shard`.
    pub fn side(&mut self, side: &Side<'_>) {
        for (i, lp) in side.loops.iter().enumerate() {
            let t = Self::t(side, i);
            self.dims.push(t.clone());
            self.base.push(ge(vec![(t.clone(), 1)], 0));
            self.base.push(ge(vec![(t, -1)], lp.trip as i128 - 1));
        }
        for p in &side.preds {
            if let Pred::Lin { form, eq: is_eq } = p {
                let (t, k) = self.terms(side, form);
                self.base.push(Con { t, k, eq: *is_eq });
            }
        }
        let fp = side.fp;
        let es = fp.esize as i128;
        let Some(start) = fp.start() else { return };
        let (mut t, k) = self.terms(side, &start);
        for x in &mut t {
            x.1 *= es;
        }
        for (d, &[step, num]) in fp.dims.iter().enumerate() {
            let j = format!("{}_j{d}", side.prefix);
            self.exists.push(j.clone());
            self.base.push(ge(vec![(j.clone(), 1)], 0));
            self.base.push(ge(vec![(j.clone(), -1)], num as i128 - 1));
            t.push((j, step as i128 * es));
        }
        if fp.esize > 1 {
            let r = format!("{}_r", side.prefix);
            self.exists.push(r.clone());
            self.base.push(ge(vec![(r.clone(), 1)], 0));
            self.base.push(ge(vec![(r.clone(), -1)], es - 1));
            t.push((r, 1));
        }
        t.push(("x".into(), -1));
        self.base.push(eq(t, k * es));
    }

    /// The JSON form; None when a coefficient does not fit 64 bits.
    pub fn finish(self, pieces: &[Vec<Con>]) -> Option<Value> {
        let base: Option<Vec<Value>> = self.base.iter().map(Con::to_value).collect();
        let pieces: Option<Vec<Vec<Value>>> = pieces
            .iter()
            .map(|p| p.iter().map(Con::to_value).collect::<Option<Vec<_>>>())
            .collect();
        Some(json!({
            "dims": self.dims,
            "exists": self.exists,
            "base": base?,
            "pieces": pieces?,
        }))
    }
}
