//! Footprints of one argument on one location as quasi-affine forms
//! (contract §3.6's rule, symbolically): the flat element
//! `e = part + within + Σ_d step_d·j_d` (`0 ≤ j_d < num_d`), where `part` is
//! the partition part of the start (`addrs[0]·S′[0]`, or a `physical_ap`'s
//! `(offset div F)·F`) and `within` the rest of it; ap dim 0 moves the
//! partition, the others the within-partition part. Bytes are
//! `e·esize … e·esize + esize − 1`.

use smallvec::SmallVec;

use super::affine::{Dom, Forms, Lin, Opaque, Range};
use crate::analysis::access::{element_size, ArgList, FunctionIndex, SetEntry};
use crate::analysis::footprint::{FootprintError, Layout};
use crate::bir::{Argument, Instruction};

/// How one argument touches one location.
#[derive(Clone, Debug)]
pub enum Shape {
    Affine(Box<ArgFp>),
    /// The whole location: a `register_ap`, or an address undecided with every
    /// IV bound (a runtime value). The concrete checker covers the location;
    /// the symbolic one cannot prove anything about it.
    Whole(String),
    /// An address the symbolic checker does not model.
    Unmodelled(String),
    /// An AP with an empty dim: it touches nothing.
    Empty,
}

#[derive(Clone, Debug)]
pub struct ArgFp {
    pub part: Lin,
    pub within: Lin,
    /// `[step, num]` per ap dim with num > 1 (dims of one point fold away),
    /// dim 0 first; `dim0` says whether the first one is ap dim 0.
    pub dims: SmallVec<[[i64; 2]; 4]>,
    pub dim0: bool,
    pub esize: i64,
    pub layout: Layout,
}

impl ArgFp {
    /// `[lo, hi]` of `Σ step·j` over the dims (all, or only the within ones).
    pub fn dims_span(&self, within_only: bool) -> (i128, i128) {
        let (mut lo, mut hi) = (0i128, 0i128);
        for (k, &[step, num]) in self.dims.iter().enumerate() {
            if within_only && k == 0 && self.dim0 {
                continue;
            }
            let ext = step as i128 * (num as i128 - 1);
            if ext < 0 {
                lo += ext;
            } else {
                hi += ext;
            }
        }
        (lo, hi)
    }

    /// The start `part + within` as one form.
    pub fn start(&self) -> Option<Lin> {
        self.part.add(&self.within)
    }

    /// Does every point stay in the location over `dom` (contract §3.6, the
    /// 9302 rule)? `Err` with the concrete checker's error when a bound leaves
    /// it — exact when `dom` is one instance, an over-approximation otherwise.
    pub fn check(&self, dom: &mut Dom<'_>) -> std::result::Result<(), FootprintError> {
        let w = dom.lin(&self.within);
        let p = dom.lin(&self.part);
        let (dwlo, dwhi) = self.dims_span(true);
        let (dlo, dhi) = self.dims_span(false);
        let big = |x: i128| i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX });
        if self.layout.on_chip {
            let (wlo, whi) = (w.lo + dwlo, w.hi + dwhi);
            if wlo < 0 || whi >= self.layout.free as i128 {
                return Err(FootprintError::WrapsPartition {
                    within: big(if wlo < 0 { wlo } else { whi }),
                    free: self.layout.free,
                });
            }
        }
        let (lo, hi) = (p.lo + w.lo + dlo, p.hi + w.hi + dhi);
        let n = self.layout.elements() as i128;
        if lo < 0 || hi >= n {
            return Err(FootprintError::OutsideLocation {
                element: big(if lo < 0 { lo } else { hi }),
                elements: self.layout.elements(),
            });
        }
        Ok(())
    }
}

/// The memory arguments of an instruction in the concrete checker's order
/// (`ins`, `outs`, `indirection_ins`).
pub fn memory_args(inst: &Instruction) -> SmallVec<[(ArgList, usize, &Argument); 4]> {
    let mut out = SmallVec::new();
    let lists: [(ArgList, &[Argument]); 3] = [
        (ArgList::Ins, &inst.ins),
        (ArgList::Outs, &inst.outs),
        (ArgList::IndirectionIns, inst.indirection_ins.as_deref().unwrap_or(&[])),
    ];
    for (list, args) in lists {
        for (k, a) in args.iter().enumerate() {
            let memory = match a {
                Argument::Symbolic(s) => s.memsetref.is_some(),
                Argument::Physical(p) => p.memsetref.is_some() || p.memref.is_some(),
                Argument::Other { kind, .. } => &**kind == "register_ap" && a.memsetref().is_some(),
                Argument::Imm { .. } => false,
            };
            if memory {
                out.push((list, k, a));
            }
        }
    }
    out
}

/// The set an argument addresses (None: it names nothing in the function).
pub fn set_of<'i, 'm>(index: &'i FunctionIndex<'m>, arg: &Argument) -> Option<&'i SetEntry<'m>> {
    match arg {
        Argument::Physical(p) => match (&p.memsetref, &p.memref) {
            (Some(s), _) => index.set(s),
            (None, Some(l)) => index.set_of_location(l),
            (None, None) => None,
        },
        _ => index.set(arg.memsetref()?),
    }
}

/// The argument's shape on one location of its set (`Err`: the footprint is
/// invalid whatever the instance — the static part of 9302).
pub fn shape(
    forms: &mut Forms<'_>,
    arg: &Argument,
    entry: &SetEntry<'_>,
    location: usize,
) -> std::result::Result<Shape, FootprintError> {
    let layout = entry.locations[location].layout.clone()?;
    match arg {
        Argument::Symbolic(s) => {
            let es = element_size(s.dtype.as_deref(), entry.set)?;
            if es != layout.esize {
                return Err(FootprintError::DtypeSize {
                    ap: es,
                    set: layout.esize,
                });
            }
            let mut forms_of = Vec::with_capacity(s.addrs.len());
            for &a in &s.addrs {
                match forms.of(a) {
                    Ok(l) => forms_of.push(l),
                    Err(Opaque::Runtime(why)) => return Ok(Shape::Whole(format!("its address holds {why}"))),
                    Err(Opaque::Unsupported(why)) => return Ok(Shape::Unmodelled(format!("its address holds {why}"))),
                }
            }
            if forms_of.len() != s.ap.len() {
                return Err(FootprintError::AddrsCount {
                    ap: s.ap.len(),
                    addrs: forms_of.len(),
                });
            }
            if s.ap.iter().any(|d| d[1] <= 0) {
                return Ok(Shape::Empty);
            }
            let rank_match = s.ap.len() == layout.rank();
            let strides = partition_major_strides(entry.set);
            let mut part = Lin::constant(0);
            let mut within = Lin::constant(0);
            let ovf = FootprintError::Overflow;
            for (d, l) in forms_of.iter().enumerate() {
                let st = if rank_match {
                    strides.get(d).copied().unwrap_or(1)
                } else if d == 0 {
                    layout.free
                } else {
                    1
                };
                let term = l.scale(st).ok_or(ovf.clone())?;
                if d == 0 {
                    part = term;
                } else {
                    within = within.add(&term).ok_or(ovf.clone())?;
                }
            }
            Ok(Shape::Affine(Box::new(with_dims(part, within, &s.ap, layout))))
        }
        Argument::Physical(p) => {
            let es = element_size(p.dtype.as_deref(), entry.set)?;
            // The concrete rule, once: the same error when it leaves.
            layout.physical(p, es)?;
            if p.ap.iter().any(|d| d[1] <= 0) {
                return Ok(Shape::Empty);
            }
            let off = p.offset.unwrap_or(0);
            let f = layout.free.max(1);
            let part = Lin::constant(off.div_euclid(f) * f);
            let within = Lin::constant(off.rem_euclid(f));
            Ok(Shape::Affine(Box::new(with_dims(part, within, &p.ap, layout))))
        }
        _ => Ok(Shape::Whole("a register_ap (its address lives in a register)".into())),
    }
}

fn with_dims(part: Lin, within: Lin, ap: &[[i64; 2]], layout: Layout) -> ArgFp {
    let mut dims: SmallVec<[[i64; 2]; 4]> = SmallVec::new();
    let mut dim0 = false;
    for (k, &[step, num]) in ap.iter().enumerate() {
        if num > 1 && step != 0 {
            if k == 0 {
                dim0 = true;
            }
            dims.push([step, num]);
        }
    }
    ArgFp {
        part,
        within,
        dims,
        dim0,
        esize: layout.esize,
        layout,
    }
}

/// S′: the partition-major stride of each tensor dim in ap order (the
/// partition dim first), as `Layout` computes it.
fn partition_major_strides(set: &crate::bir::memory::MemoryLocationSet) -> SmallVec<[i64; 4]> {
    let pdim = set.partition_dim();
    let others: SmallVec<[i64; 4]> = (set.tensor_shape.iter().enumerate())
        .filter(|&(i, _)| i != pdim)
        .map(|(_, &d)| d.max(0))
        .collect();
    let mut strides: SmallVec<[i64; 4]> = SmallVec::new();
    let mut acc = 1i64;
    for &d in others.iter().rev() {
        strides.push(acc);
        acc = acc.saturating_mul(d);
    }
    strides.push(acc);
    strides.reverse();
    strides
}

/// A range as a pair of i128 (for messages and summaries).
pub fn span(r: Range) -> (i128, i128) {
    (r.lo, r.hi)
}
