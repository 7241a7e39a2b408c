//! Pelican expressions as quasi-affine forms (contract §2.3, §3.11): an
//! integer constant plus integer multiples of the shard, loop IVs and
//! *quotients* `q = floor(lin / d)` (a floor division, or the quotient of a
//! Euclidean modulo: `x mod d = x − d·floor(x/d)`), each quotient an
//! existential variable with `d·q ≤ lin ≤ d·q + d − 1` in a query.
//!
//! Runtime values (registers, ranks, indirect args, opaque functions) and the
//! index kinds lncsplit's modules never put in addresses (APIndex and the
//! tiled / symbolic indices, ICmp) have no form: the caller reads them as
//! undecided, as the concrete checker does.

use hashbrown::HashMap;
use smallvec::SmallVec;

use crate::pelican::{AxisId, Context, ExprId, Node};

/// A variable of a form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Var {
    Shard,
    Iv(AxisId),
    /// Quotient number k of the [`Forms`] table.
    Q(u32),
}

/// `c + Σ coeff·var`, terms sorted by variable, no zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Lin {
    pub c: i64,
    pub terms: SmallVec<[(Var, i64); 4]>,
}

impl Lin {
    pub fn constant(c: i64) -> Lin {
        Lin {
            c,
            terms: SmallVec::new(),
        }
    }

    pub fn var(v: Var) -> Lin {
        Lin {
            c: 0,
            terms: smallvec::smallvec![(v, 1)],
        }
    }

    pub fn is_const(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn coeff(&self, v: Var) -> i64 {
        self.terms.iter().find(|t| t.0 == v).map_or(0, |t| t.1)
    }

    /// `self + k·other`, None on overflow.
    pub fn add_scaled(&self, other: &Lin, k: i64) -> Option<Lin> {
        let mut terms: SmallVec<[(Var, i64); 4]> = SmallVec::new();
        let (mut i, mut j) = (0, 0);
        let (a, b) = (&self.terms, &other.terms);
        while i < a.len() || j < b.len() {
            let take_a = j >= b.len() || (i < a.len() && a[i].0 < b[j].0);
            let take_b = i >= a.len() || (j < b.len() && b[j].0 < a[i].0);
            let (v, c) = if take_a {
                i += 1;
                (a[i - 1].0, a[i - 1].1)
            } else if take_b {
                j += 1;
                (b[j - 1].0, b[j - 1].1.checked_mul(k)?)
            } else {
                i += 1;
                j += 1;
                (a[i - 1].0, a[i - 1].1.checked_add(b[j - 1].1.checked_mul(k)?)?)
            };
            if c != 0 {
                terms.push((v, c));
            }
        }
        Some(Lin {
            c: self.c.checked_add(other.c.checked_mul(k)?)?,
            terms,
        })
    }

    pub fn add(&self, other: &Lin) -> Option<Lin> {
        self.add_scaled(other, 1)
    }

    pub fn scale(&self, k: i64) -> Option<Lin> {
        Lin::constant(0).add_scaled(self, k)
    }

    pub fn add_const(&self, k: i64) -> Option<Lin> {
        let mut l = self.clone();
        l.c = l.c.checked_add(k)?;
        Some(l)
    }

    /// Every variable, quotients included (not those inside quotients).
    pub fn vars(&self) -> impl Iterator<Item = Var> + '_ {
        self.terms.iter().map(|t| t.0)
    }

    /// gcd of the coefficients (0 for a constant).
    pub fn coeff_gcd(&self) -> i64 {
        self.terms.iter().fold(0, |g, t| gcd(g, t.1))
    }
}

pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.min(i64::MAX as u64) as i64
}

/// `q = floor(num / den)`, den > 0.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct QDef {
    pub num: Lin,
    pub den: i64,
}

/// Why an expression has no form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opaque {
    /// A runtime value: undecided at compile time.
    Runtime(String),
    /// A kind the symbolic checker does not model (or arithmetic past 64 bits).
    Unsupported(String),
}

impl Opaque {
    pub fn describe(&self) -> &str {
        match self {
            Opaque::Runtime(s) | Opaque::Unsupported(s) => s,
        }
    }
}

pub type Form = Result<Lin, Opaque>;

/// The forms of one module's expressions, memoized, with the quotient table.
pub struct Forms<'c> {
    pub ctx: &'c Context,
    pub qs: Vec<QDef>,
    qindex: HashMap<QDef, u32>,
    memo: HashMap<ExprId, Form>,
}

impl<'c> Forms<'c> {
    pub fn new(ctx: &'c Context) -> Self {
        Forms {
            ctx,
            qs: Vec::new(),
            qindex: HashMap::new(),
            memo: HashMap::new(),
        }
    }

    pub fn of(&mut self, id: ExprId) -> Form {
        if let Some(c) = self.ctx.as_constant(id) {
            return Ok(Lin::constant(c));
        }
        if let Some(f) = self.memo.get(&id) {
            return f.clone();
        }
        let f = self.compute(id);
        self.memo.insert(id, f.clone());
        f
    }

    fn overflow() -> Opaque {
        Opaque::Unsupported("address arithmetic past 64 bits".into())
    }

    fn compute(&mut self, id: ExprId) -> Form {
        let ctx = self.ctx;
        match ctx.node(id) {
            Node::AffExpr { terms, c } => {
                let mut acc = Lin::constant(*c);
                for &(t, k) in terms.iter() {
                    let f = self.of(t)?;
                    acc = acc.add_scaled(&f, k).ok_or_else(Self::overflow)?;
                }
                Ok(acc)
            }
            Node::Sum { terms } => {
                let mut acc = Lin::constant(0);
                for &t in terms.iter() {
                    let f = self.of(t)?;
                    acc = acc.add(&f).ok_or_else(Self::overflow)?;
                }
                Ok(acc)
            }
            Node::Mult { var, scale } => self.of(*var)?.scale(*scale).ok_or_else(Self::overflow),
            Node::FloorDiv { numer, denom } | Node::CCDiv { numer, denom, .. } => {
                let n = self.of(*numer)?;
                self.floor(n, *denom)
            }
            Node::Modulo { numer, denom } | Node::CCMod { numer, denom, .. } => {
                let n = self.of(*numer)?;
                let q = self.floor(n.clone(), *denom)?;
                n.add_scaled(&q, -*denom).ok_or_else(Self::overflow)
            }
            Node::ShardId { .. } => Ok(Lin::var(Var::Shard)),
            Node::AffineIV { axis } => Ok(Lin::var(Var::Iv(*axis))),
            Node::IntRuntimeValue { reg } => Err(Opaque::Runtime(format!(
                "register {} (a runtime value)",
                ctx.register_name(*reg)
            ))),
            Node::CCGetRank { .. } => Err(Opaque::Runtime("a collective rank (a runtime value)".into())),
            Node::IndirectArg { .. } => Err(Opaque::Runtime("an indirect argument (a runtime value)".into())),
            Node::OpaqueFn { .. } => Err(Opaque::Runtime("an opaque function (a runtime value)".into())),
            Node::APIndex { .. } | Node::TiledAPIndex { .. } | Node::SymbolicIdx { .. } => Err(Opaque::Unsupported(
                "an AP index (APIndex, TiledAPIndex or SymbolicIdx), which the symbolic checker does not model".into(),
            )),
            Node::ICmp { .. } => Err(Opaque::Unsupported("a comparison (ICmp)".into())),
        }
    }

    /// `floor(n / d)`: exact when d divides every coefficient, else a quotient.
    fn floor(&mut self, n: Lin, d: i64) -> Form {
        if d <= 0 {
            return Err(Opaque::Unsupported(format!("a division by {d}")));
        }
        if d == 1 {
            return Ok(n);
        }
        if n.terms.iter().all(|t| t.1 % d == 0) {
            let mut out = Lin::constant(n.c.div_euclid(d));
            for &(v, k) in &n.terms {
                out.terms.push((v, k / d));
            }
            return Ok(out);
        }
        // floor((d·y + c)/d) = y + floor(c/d) is above; otherwise move the
        // multiples of d out of the numerator to keep quotients small.
        let def = QDef { num: n, den: d };
        let k = match self.qindex.get(&def) {
            Some(&k) => k,
            None => {
                let k = self.qs.len() as u32;
                self.qs.push(def.clone());
                self.qindex.insert(def, k);
                k
            }
        };
        Ok(Lin::var(Var::Q(k)))
    }
}

// ------------------------------------------------------------------ ranges

/// Interval bounds in i128 with saturation at ±[`INF`] (unbounded).
pub const INF: i128 = 1 << 100;

fn clamp(x: i128) -> i128 {
    x.clamp(-INF, INF)
}

/// `[lo, hi]` of a value; lo = −INF / hi = INF when unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: i128,
    pub hi: i128,
}

impl Range {
    pub fn point(v: i128) -> Range {
        Range { lo: v, hi: v }
    }

    pub fn scale(self, k: i64) -> Range {
        let k = k as i128;
        let (a, b) = (clamp(self.lo.saturating_mul(k)), clamp(self.hi.saturating_mul(k)));
        Range {
            lo: a.min(b),
            hi: a.max(b),
        }
    }

    pub fn plus(self, o: Range) -> Range {
        Range {
            lo: clamp(self.lo.saturating_add(o.lo)),
            hi: clamp(self.hi.saturating_add(o.hi)),
        }
    }

    pub fn is_finite(&self) -> bool {
        self.lo > -INF && self.hi < INF
    }
}

/// The ranges of the variables of a form over one domain: the shard's, each
/// IV's (its axis' values), and the quotients' (from their numerators).
pub struct Dom<'a> {
    pub shard: Range,
    pub ctx: &'a Context,
    pub qs: &'a [QDef],
    /// IVs with a narrower range than their axis (e.g. fixed for one instance).
    pub fixed: &'a HashMap<AxisId, Range>,
    memo: HashMap<u32, Range>,
}

impl<'a> Dom<'a> {
    pub fn new(ctx: &'a Context, qs: &'a [QDef], shard: Range, fixed: &'a HashMap<AxisId, Range>) -> Self {
        Dom {
            shard,
            ctx,
            qs,
            fixed,
            memo: HashMap::new(),
        }
    }

    /// The values of an axis' IV: lo … lo + step·(trip − 1); None when the
    /// loop runs no iteration.
    pub fn axis_range(ctx: &Context, axis: AxisId) -> Option<Range> {
        let a = ctx.axis(axis);
        let trip = a.trip_count();
        if a.step <= 0 || trip <= 0 {
            return None;
        }
        Some(Range {
            lo: a.lo as i128,
            hi: a.lo as i128 + a.step as i128 * (trip as i128 - 1),
        })
    }

    pub fn var(&mut self, v: Var) -> Range {
        match v {
            Var::Shard => self.shard,
            Var::Iv(axis) => match self.fixed.get(&axis) {
                Some(&r) => r,
                None => Dom::axis_range(self.ctx, axis).unwrap_or(Range::point(0)),
            },
            Var::Q(k) => {
                if let Some(&r) = self.memo.get(&k) {
                    return r;
                }
                let def = &self.qs[k as usize];
                let n = self.lin(&def.num.clone());
                let d = def.den as i128;
                let r = Range {
                    lo: if n.lo <= -INF { -INF } else { n.lo.div_euclid(d) },
                    hi: if n.hi >= INF { INF } else { n.hi.div_euclid(d) },
                };
                self.memo.insert(k, r);
                r
            }
        }
    }

    pub fn lin(&mut self, l: &Lin) -> Range {
        let mut r = Range::point(l.c as i128);
        for &(v, k) in &l.terms {
            let vr = self.var(v);
            r = r.plus(vr.scale(k));
        }
        r
    }

    /// `l` with every quotient whose numerator stays inside one period of
    /// its denominator over the domain replaced by its value (a floor that
    /// is constant, a modulo that does not wrap): the form stays exact.
    pub fn resolve(&mut self, l: &Lin) -> Lin {
        let mut out = Lin::constant(l.c);
        for &(v, k) in &l.terms {
            if let Var::Q(q) = v {
                let r = self.var(v);
                if r.lo == r.hi && r.is_finite() {
                    if let Some(x) = out.add_const_checked(r.lo, k) {
                        out = x;
                        continue;
                    }
                }
                let _ = q;
            }
            out.terms.push((v, k));
        }
        out
    }
}

impl Lin {
    fn add_const_checked(&self, v: i128, k: i64) -> Option<Lin> {
        let add = i64::try_from(v.checked_mul(k as i128)?).ok()?;
        self.add_const(add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_and_modulo_by_divisors_stay_affine_others_become_quotients() {
        let mut ctx = Context::new();
        let s = ctx.shard_id(8).unwrap();
        let two_s = ctx.aff_expr(&[(s, 4)], 1).unwrap();
        let d = ctx.floor_div(two_s, 2).unwrap();
        let m = ctx.modulo(s, 2).unwrap();
        let mut f = Forms::new(&ctx);
        assert_eq!(f.of(d).unwrap(), Lin::var(Var::Shard).scale(2).unwrap());
        let lm = f.of(m).unwrap();
        assert_eq!(lm.coeff(Var::Shard), 1);
        assert_eq!(lm.coeff(Var::Q(0)), -2);
        assert_eq!(f.qs[0].den, 2);
    }

    #[test]
    fn a_modulo_that_does_not_wrap_resolves_to_an_affine_form() {
        let mut ctx = Context::new();
        let s = ctx.shard_id(64).unwrap();
        let t = ctx.aff_expr(&[(s, 16)], 3).unwrap();
        let m = ctx.modulo(t, 1016).unwrap();
        let mut f = Forms::new(&ctx);
        let l = f.of(m).unwrap();
        let fixed = HashMap::new();
        let qs = f.qs.clone();
        let mut dom = Dom::new(&ctx, &qs, Range { lo: 0, hi: 63 }, &fixed);
        let r = dom.resolve(&l);
        assert_eq!(r, Lin::var(Var::Shard).scale(16).unwrap().add_const(3).unwrap());
        let mut wide = Dom::new(&ctx, &qs, Range { lo: 0, hi: 100 }, &fixed);
        assert!(wide.resolve(&l).vars().any(|v| matches!(v, Var::Q(_))));
    }
}
