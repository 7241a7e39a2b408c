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
use crate::analysis::ranges::{Ranges, ShardRange};
use crate::bir::{Argument, Instruction};
use crate::error::{Error, Result};
use crate::pelican::Context;

/// What the static check concluded about one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Every instance stays inside its locations.
    Valid,
    /// Some instance may leave: check each instance.
    PerInstance,
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
            ranges: Ranges::new(ctx, ShardRange::Arena),
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
