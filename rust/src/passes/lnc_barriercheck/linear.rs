//! The walk's fast path for the accesses that matter: an instruction whose
//! footprints the static bounds cleared ([`super::bounds`]) and whose
//! reachable arguments are `symbolic_ap`s with affine addresses (constants,
//! sums and multiples of loop IVs) gets a plan at scan time, so each instance
//! costs a few IV lookups instead of [`FunctionIndex::accesses_where`]'s set
//! lookups by name, dtype parsing and expression-tree evaluation.
//!
//! A plan gives exactly the accesses the general path gives, in the same
//! order: the same arguments (the reachable ones, ins, outs, then
//! indirection_ins), the same role, every location of the set, and the
//! points of [`Layout::symbolic`] at the same address values. Anything a plan
//! does not model — an IV without a binding or bound outside its range,
//! arithmetic past 64 bits, a footprint the layout refuses — makes the
//! instance take the general path, which then decides (and raises the same
//! error it always did). Tests compare both paths on generated modules.

use smallvec::SmallVec;

use crate::analysis::access::{accumulate_op, element_size, AccOp, Access, ArgList, FunctionIndex, Role, SetEntry};
use crate::bir::{ApPair, Argument, Instruction};
use crate::pelican::{Bindings, Context, ExprId, Node};

/// Deepest expression a plan follows (deeper ones take the general path).
const MAX_DEPTH: u32 = 32;

/// `c + Σ k·iv` over loop IVs, each with its range `(lo, ub, step)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Affine {
    c: i64,
    terms: SmallVec<[(ExprId, i64, [i64; 3]); 2]>,
}

impl Affine {
    /// `id` as an affine function of loop IVs; None for anything else
    /// (runtime values, other indices, divisions, overflow).
    pub fn of(ctx: &Context, id: ExprId) -> Option<Affine> {
        let mut out = Affine::default();
        out.add(ctx, id, 1, 0)?;
        Some(out)
    }

    fn add(&mut self, ctx: &Context, id: ExprId, k: i64, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match ctx.node(id) {
            Node::AffExpr { terms, c } => {
                self.c = self.c.checked_add(c.checked_mul(k)?)?;
                for &(t, q) in terms {
                    self.add(ctx, t, q.checked_mul(k)?, depth + 1)?;
                }
            }
            Node::Sum { terms } => {
                for &t in terms {
                    self.add(ctx, t, k, depth + 1)?;
                }
            }
            Node::Mult { var, scale } => self.add(ctx, *var, scale.checked_mul(k)?, depth + 1)?,
            Node::AffineIV { axis } => {
                let a = ctx.axis(*axis);
                // Every IV is kept, even with a coefficient that cancels: the
                // general path checks each binding's range.
                match self.terms.iter_mut().find(|t| t.0 == id) {
                    Some(t) => t.1 = t.1.checked_add(k)?,
                    None => self.terms.push((id, k, [a.lo, a.ub, a.step])),
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// The value under `b`; None when an IV is unbound or out of its range,
    /// or on overflow (the general path then decides).
    pub fn eval(&self, b: &Bindings) -> Option<i64> {
        let mut acc = self.c;
        for &(id, k, [lo, ub, step]) in &self.terms {
            let v = *b.by_id.get(&id)?;
            let aligned = step > 0 && (v as i128 - lo as i128) % step as i128 == 0;
            if v < lo || v >= ub || !aligned {
                return None;
            }
            acc = acc.checked_add(k.checked_mul(v)?)?;
        }
        Some(acc)
    }
}

/// One reachable argument of a planned instruction.
pub(super) struct ArgPlan<'i, 'm> {
    list: ArgList,
    index: usize,
    role: Role,
    entry: &'i SetEntry<'m>,
    ap: &'m [ApPair],
    esize: i64,
    addrs: SmallVec<[Affine; 4]>,
}

/// The plan of one instruction (its reachable arguments in the general
/// path's order), or None when some argument needs the general path.
pub(super) fn plan<'i, 'm>(
    ctx: &Context,
    index: &'i FunctionIndex<'m>,
    inst: &'m Instruction,
    reached: &dyn Fn(&SetEntry<'m>) -> bool,
) -> Option<Vec<ArgPlan<'i, 'm>>> {
    if index.has_descriptor_accesses(inst) {
        return None; // a DMATrigger's descriptors: the general path
    }
    let acc: Option<AccOp> = accumulate_op(inst).ok()?;
    let lists: [(ArgList, &'m [Argument]); 3] = [
        (ArgList::Ins, &inst.ins),
        (ArgList::Outs, &inst.outs),
        (ArgList::IndirectionIns, inst.indirection_ins.as_deref().unwrap_or(&[])),
    ];
    let mut out = Vec::new();
    for (list, args) in lists {
        let role = match (list, acc) {
            (ArgList::Outs, Some(op)) => Role::Accumulate(op),
            (ArgList::Outs, None) => Role::Write,
            _ => Role::Read,
        };
        for (k, arg) in args.iter().enumerate() {
            match arg {
                Argument::Symbolic(s) => {
                    let entry = index.set(s.memsetref.as_deref()?)?;
                    if !reached(entry) {
                        continue;
                    }
                    if entry.locations.iter().any(|l| l.tensor.is_err() || l.layout.is_err()) {
                        return None;
                    }
                    let addrs = s.addrs.iter().map(|&a| Affine::of(ctx, a)).collect::<Option<_>>()?;
                    out.push(ArgPlan {
                        list,
                        index: k,
                        role,
                        entry,
                        ap: &s.ap,
                        esize: element_size(s.dtype.as_deref(), entry.set).ok()?,
                        addrs,
                    });
                }
                // Imm and non-memory operands touch nothing; every other
                // addressing form takes the general path.
                Argument::Imm { .. } => {}
                Argument::Other { kind, .. } if &**kind != "register_ap" => {}
                _ => return None,
            }
        }
    }
    Some(out)
}

/// Append the accesses of one instance by its plan; false (with `out` as it
/// was) when some argument needs the general path.
pub(super) fn accesses<'i>(plan: &[ArgPlan<'i, '_>], b: &Bindings, out: &mut Vec<Access<'i>>) -> bool {
    let start = out.len();
    let mut vals: SmallVec<[i64; 4]> = SmallVec::new();
    for a in plan {
        vals.clear();
        for addr in &a.addrs {
            match addr.eval(b) {
                Some(v) => vals.push(v),
                None => {
                    out.truncate(start);
                    return false;
                }
            }
        }
        for (location, loc) in a.entry.locations.iter().enumerate() {
            if loc.unmodelled {
                continue;
            }
            let points = match loc.tensor.as_ref().map(|l| l.symbolic(a.ap, &vals, a.esize)) {
                Ok(Ok(p)) => p,
                _ => {
                    out.truncate(start);
                    return false;
                }
            };
            out.push(Access {
                list: a.list,
                index: a.index,
                role: a.role,
                set: a.entry,
                location,
                points: Some(points),
            });
        }
    }
    true
}
