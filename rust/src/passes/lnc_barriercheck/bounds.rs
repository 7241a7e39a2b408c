//! Static footprint validation for the race checker: every access of every
//! instruction must stay inside its location (9302), private ones included,
//! but walking every instance of a mostly-private module would cost far more
//! than the check itself. So each argument is checked once, with its
//! addresses replaced by their ranges over the enclosing loops (interval
//! arithmetic on the expression): a footprint is monotone in every address
//! (the partition-major strides are ≥ 0), so if it fits at the least and at
//! the greatest addresses it fits for every instance. Only an argument the
//! ranges cannot clear (an address they cannot bound, or a range that leaves
//! the location while some instance may not) is checked instance by instance
//! by the walk, which then reports exactly the instances that leave.

use hashbrown::HashMap;

use crate::analysis::access::{element_size, footprint_error, unknown_set, ArgList, FunctionIndex, SetEntry};
use crate::analysis::footprint::FootprintError;
use crate::bir::{Argument, Instruction};
use crate::error::{Error, Result};
use crate::pelican::{Context, ExprId, Node};

/// What the static check concluded about one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Every instance stays inside its locations.
    Valid,
    /// Some instance may leave: check each instance.
    PerInstance,
}

/// `[lo, hi]` of every value `id` can take over its index ranges, memoized;
/// None when it cannot be bounded (runtime values, unbound indices…).
pub(super) struct Ranges<'c> {
    ctx: &'c Context,
    memo: HashMap<ExprId, Option<(i64, i64)>>,
}

impl<'c> Ranges<'c> {
    pub fn new(ctx: &'c Context) -> Self {
        Ranges {
            ctx,
            memo: HashMap::new(),
        }
    }

    pub fn of(&mut self, id: ExprId) -> Option<(i64, i64)> {
        if let Some(c) = self.ctx.as_constant(id) {
            return Some((c, c));
        }
        if let Some(&r) = self.memo.get(&id) {
            return r;
        }
        let r = self.compute(id);
        self.memo.insert(id, r);
        r
    }

    fn compute(&mut self, id: ExprId) -> Option<(i64, i64)> {
        let ctx = self.ctx;
        match ctx.node(id) {
            Node::AffExpr { terms, c } => terms.iter().try_fold((*c, *c), |acc, &(t, k)| {
                let (lo, hi) = scale(self.of(t)?, k)?;
                Some((acc.0.checked_add(lo)?, acc.1.checked_add(hi)?))
            }),
            Node::Sum { terms } => terms.iter().try_fold((0i64, 0i64), |acc, &t| {
                let (lo, hi) = self.of(t)?;
                Some((acc.0.checked_add(lo)?, acc.1.checked_add(hi)?))
            }),
            Node::Mult { var, scale: k } => scale(self.of(*var)?, *k),
            Node::FloorDiv { numer, denom } | Node::CCDiv { numer, denom, .. } if *denom > 0 => {
                let (lo, hi) = self.of(*numer)?;
                Some((lo.div_euclid(*denom), hi.div_euclid(*denom)))
            }
            Node::Modulo { numer, denom } | Node::CCMod { numer, denom, .. } if *denom > 0 => {
                let (lo, hi) = self.of(*numer)?;
                if lo.div_euclid(*denom) == hi.div_euclid(*denom) {
                    Some((lo.rem_euclid(*denom), hi.rem_euclid(*denom)))
                } else {
                    Some((0, denom - 1))
                }
            }
            Node::AffineIV { .. } | Node::ShardId { .. } => Some((ctx.infimum(id)?, ctx.supremum(id)?)),
            Node::ICmp { .. } => Some((0, 1)),
            _ => None,
        }
    }
}

fn scale((lo, hi): (i64, i64), k: i64) -> Option<(i64, i64)> {
    let (a, b) = (lo.checked_mul(k)?, hi.checked_mul(k)?);
    Some((a.min(b), a.max(b)))
}

/// One core's function as the scan sees it: its sets by name, each with
/// whether another core reaches it.
pub(super) struct Scanner<'i, 'm> {
    index: &'i FunctionIndex<'m>,
    sets: HashMap<&'m str, (&'i SetEntry<'m>, bool)>,
    /// The same entries by the address and length of the set's name: the
    /// loader shares one string between a set and the arguments naming it,
    /// so most lookups hash a pointer instead of a name.
    by_addr: HashMap<(usize, usize), (&'i SetEntry<'m>, bool)>,
    pub ranges: Ranges<'i>,
}

/// A name's identity as a string object (address, length).
fn addr(s: &str) -> (usize, usize) {
    (s.as_ptr() as usize, s.len())
}

impl<'i, 'm> Scanner<'i, 'm> {
    /// `reachable(set)`: can another core touch this set's bytes?
    pub fn new(ctx: &'i Context, index: &'i FunctionIndex<'m>, reachable: impl Fn(&str) -> bool) -> Self {
        let sets: HashMap<&'m str, (&'i SetEntry<'m>, bool)> = (index.function.allocations.iter())
            .filter_map(|s| index.set(&s.name).map(|e| (&*s.name, (e, reachable(&s.name)))))
            .collect();
        // A pointer hit names the same string as a key of `sets`, so it
        // answers what `sets.get` would.
        let by_addr = sets.iter().map(|(&n, &v)| (addr(n), v)).collect();
        Scanner {
            index,
            sets,
            by_addr,
            ranges: Ranges::new(ctx),
        }
    }

    /// Check every memory argument of `inst` against its locations: an error
    /// for a footprint that certainly leaves (or a set that does not exist),
    /// else whether its instances need checking one by one, and whether it
    /// touches a set another core reaches.
    pub fn instruction(&mut self, inst: &Instruction) -> Result<(Verdict, bool)> {
        let lists: [(ArgList, &[Argument]); 3] = [
            (ArgList::Ins, &inst.ins),
            (ArgList::Outs, &inst.outs),
            (ArgList::IndirectionIns, inst.indirection_ins.as_deref().unwrap_or(&[])),
        ];
        let mut verdict = Verdict::Valid;
        let mut touches = false;
        for (list, args) in lists {
            for (k, arg) in args.iter().enumerate() {
                let (v, t) = self.argument(inst, list, k, arg)?;
                touches |= t;
                if v == Verdict::PerInstance {
                    verdict = Verdict::PerInstance;
                }
            }
        }
        Ok((verdict, touches))
    }

    fn entry(&self, arg: &Argument) -> Option<Option<(&'i SetEntry<'m>, bool)>> {
        let by_name = |n: &str| match self.by_addr.get(&addr(n)) {
            Some(&hit) => Some(hit),
            None => self.sets.get(n).copied(),
        };
        Some(match arg {
            Argument::Symbolic(s) => by_name(s.memsetref.as_deref()?),
            Argument::Physical(p) => match (&p.memsetref, &p.memref) {
                (Some(s), _) => by_name(s),
                (None, Some(l)) => self.index.set_of_location(l).and_then(|e| by_name(&e.set.name)),
                (None, None) => return None,
            },
            // The footprint's rules (tail::access): a register_ap covers its set.
            Argument::Other { kind, .. } if &**kind == "register_ap" => by_name(arg.memsetref()?),
            Argument::Other { .. } | Argument::Imm { .. } => return None,
        })
    }

    fn argument(&mut self, inst: &Instruction, list: ArgList, k: usize, arg: &Argument) -> Result<(Verdict, bool)> {
        let Some(found) = self.entry(arg) else {
            return Ok((Verdict::Valid, false));
        };
        let Some((entry, reach)) = found else {
            return Err(unknown_set(9302, inst, list, k, arg));
        };
        let fail = |e| footprint_error(9302, inst, list, k, &entry.set.name, &e);
        let verdict = match arg {
            Argument::Symbolic(ap) => {
                let es = esize(ap.dtype.as_deref(), entry).map_err(fail)?;
                self.symbolic(entry, ap, es).map_err(fail)?
            }
            Argument::Physical(p) => {
                let es = esize(p.dtype.as_deref(), entry).map_err(fail)?;
                for loc in entry.locations.iter().filter(|l| !l.unmodelled) {
                    let layout = loc.layout.as_ref().map_err(|e| fail(e.clone()))?;
                    layout.physical(p, es).map_err(fail)?;
                }
                Verdict::Valid
            }
            _ => Verdict::Valid,
        };
        Ok((verdict, reach))
    }

    /// A symbolic access at its least and greatest addresses.
    fn symbolic(
        &mut self,
        entry: &SetEntry<'_>,
        ap: &crate::bir::SymbolicAp,
        es: i64,
    ) -> std::result::Result<Verdict, FootprintError> {
        let mut lo = smallvec::SmallVec::<[i64; 4]>::new();
        let mut hi = smallvec::SmallVec::<[i64; 4]>::new();
        for &a in &ap.addrs {
            match self.ranges.of(a) {
                Some((l, h)) => {
                    lo.push(l);
                    hi.push(h);
                }
                None => return Ok(Verdict::PerInstance),
            }
        }
        for loc in entry.locations.iter().filter(|l| !l.unmodelled) {
            let layout = loc.tensor.as_ref().map_err(Clone::clone)?;
            let at_lo = layout.check_symbolic(&ap.ap, &lo, es);
            if hi == lo {
                at_lo?;
                continue;
            }
            if at_lo.is_err() || layout.check_symbolic(&ap.ap, &hi, es).is_err() {
                return Ok(Verdict::PerInstance);
            }
        }
        Ok(Verdict::Valid)
    }
}

/// The element size of an argument: its set's (already in the layout) unless
/// it names another dtype.
fn esize(dtype: Option<&str>, entry: &SetEntry<'_>) -> std::result::Result<i64, FootprintError> {
    // Dtype names are shared strings: the pointer test saves the compare.
    let set = &*entry.set.dtype;
    let same = dtype.is_none_or(|d| std::ptr::eq(d, set) || d == set);
    match entry.locations.first().map(|l| &l.layout) {
        Some(Ok(layout)) if same => Ok(layout.esize),
        _ => element_size(dtype, entry.set),
    }
}

/// Keep the first error of a closure that cannot return one.
pub(super) fn first_error(slot: &mut Option<Error>, r: Result<(Verdict, bool)>) -> (Verdict, bool) {
    match r {
        Ok(v) => v,
        Err(e) => {
            slot.get_or_insert(e);
            (Verdict::Valid, false)
        }
    }
}
