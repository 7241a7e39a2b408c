//! The N for which `racecheck(split([with_shard_bound(m, N)], N))` raises
//! (contract §3.11: *invalid*), with the first cause, in the order the
//! concrete pipeline meets them:
//!
//! 1. the concretized verifier: per core nc = 1, 2, …: 1187 (its barrier
//!    count differs from core 0's), 1198 (its GPSIMDSB2SB count), then the
//!    shared locations' remote targets (1197, 1195: a target core ≥ N does
//!    not exist); then per core and barrier 1188 (ids dense from 0) and 1189
//!    (the same names as core 0);
//! 2. 9305: a GPSIMDSB2SB present on some core with N ≠ 2;
//! 3. per function, in module order: 9303 (a `remote_local_target` naming no
//!    location, e.g. a core ≥ N), then 9302 (a footprint outside its location
//!    on the least core where one leaves); 9304 never happens on the barrier
//!    model of `epochs` (every valid N has one barrier sequence).
//!
//! Each cause is a set of N with an order key; the first cause of N is the
//! least key whose set holds N. A cause that cannot be decided is an unknown.

use hashbrown::HashMap;

use super::affine::{Dom, Forms, Range, INF};
use super::fp::{memory_args, set_of, shape, Shape};
use super::model::{for_each_instance, iv_nodes, mentions_iv, shard_presence, Arena, FnModel, CORE_CAP};
use super::nset::ISet;
use super::shard_bound::rebound_context;
use crate::analysis::access::{accumulate_op, element_size, footprint_error, unknown_set, FunctionIndex};
use crate::analysis::location::locations_of;
use crate::analysis::ranges::{Ranges, ShardRange};
use crate::analysis::walk::{static_instances, MAX_INSTANCES};
use crate::bir::{Argument, Module, OpFields, Opcode};
use crate::error::Error;
use crate::pelican::{AxisId, ExprId};

/// A set of N that raise, in the concrete order `order`.
#[derive(Clone, Debug)]
pub struct Cause {
    pub set: ISet,
    pub order: [i64; 4],
    pub code: u32,
    pub message: String,
}

/// What validity could not decide.
#[derive(Clone, Debug)]
pub struct Undecided {
    pub why: String,
}

fn describe(e: &Error) -> (u32, String) {
    match e {
        Error::Neuron { code, .. } => (*code, e.to_string()),
        other => (0, other.to_string()),
    }
}

pub struct Validity {
    pub causes: Vec<Cause>,
    pub undecided: Vec<Undecided>,
}

/// The cores each barrier (or GPSIMDSB2SB) of `module` is present on, in the
/// order the verifier counts them (functions `main` first, then the others;
/// loop bodies in place).
struct Present<'m> {
    inst: &'m crate::bir::Instruction,
    cores: ISet,
}

pub fn analyse(module: &Module, models: &[FnModel<'_>], forms: &mut Forms<'_>, max_core: Option<i64>) -> Validity {
    let mut v = Validity {
        causes: Vec::new(),
        undecided: Vec::new(),
    };
    let qs = forms.qs.clone();
    let mut barriers: Vec<Present<'_>> = Vec::new();
    let mut sb2sb: Vec<Present<'_>> = Vec::new();
    for fi in crate::passes::core_barriers::written_order(&module.functions) {
        let model = &models[fi];
        for n in &model.nodes {
            let is_b = n.inst.opcode == Opcode::CORE_BARRIER;
            let is_s = n.inst.opcode == Opcode::GPSIMD_SB2SB;
            if !is_b && !is_s {
                continue;
            }
            let cores = match shard_presence(&n.preds, &qs, max_core) {
                Ok(s) => s,
                Err(why) => {
                    v.undecided.push(Undecided {
                        why: format!("the cores {} is present on: {why}", n.inst.name),
                    });
                    ISet::from(0)
                }
            };
            let p = Present { inst: n.inst, cores };
            if is_b {
                barriers.push(p);
            } else {
                sb2sb.push(p);
            }
        }
    }
    verifier(module, &barriers, &sb2sb, max_core, &mut v);
    if let Some(m) = sb2sb.iter().filter_map(|p| p.cores.min()).min() {
        v.causes.push(Cause {
            set: ISet::from((m + 1).max(3)),
            order: [2, 0, 0, 0],
            code: 9305,
            message: "GPSIMDSB2SB needs exactly 2 cores (its partner is (c+1) & 1)".into(),
        });
    }
    for (fi, model) in models.iter().enumerate() {
        remote_targets(model, fi, &mut v);
        footprints(module, model, fi, forms, max_core, &mut v);
        let count = model
            .function
            .basic_blocks
            .iter()
            .flat_map(|b| &b.instructions)
            .fold(0u64, |a, i| a.saturating_add(static_instances(&module.ctx, i)));
        if count > MAX_INSTANCES {
            v.undecided.push(Undecided {
                why: format!(
                    "function {} may have more than {MAX_INSTANCES} instruction instances (9306)",
                    model.function.name
                ),
            });
        }
    }
    v
}

/// Phase 1: the concretized verifier on the split cores.
fn verifier(module: &Module, barriers: &[Present<'_>], sb2sb: &[Present<'_>], max_core: Option<i64>, v: &mut Validity) {
    let uniform = |p: &Present<'_>| match max_core {
        Some(m) => {
            let inside = p.cores.intersect(&ISet::range(0, m));
            inside.is_empty() || inside == ISet::range(0, m)
        }
        None => p.cores.is_empty() || p.cores == ISet::from(0),
    };
    let all_uniform = barriers.iter().chain(sb2sb).all(uniform);
    let cores: Vec<i64> = if all_uniform {
        vec![0]
    } else {
        match max_core {
            Some(m) if m < CORE_CAP => (0..=m).collect(),
            _ => {
                v.undecided.push(Undecided {
                    why: format!(
                        "CoreBarrier or GPSIMDSB2SB presence depends on the shard; give a finite lnc below {CORE_CAP}"
                    ),
                });
                vec![0]
            }
        }
    };
    let list = |c: i64| -> Vec<&crate::bir::Instruction> {
        barriers
            .iter()
            .filter(|p| p.cores.contains(c))
            .map(|p| p.inst)
            .collect()
    };
    let count_sb = |c: i64| sb2sb.iter().filter(|p| p.cores.contains(c)).count();
    let l0 = list(0);
    let sb0 = count_sb(0);
    for &nc in cores.iter().filter(|&&c| c >= 1) {
        let l = list(nc);
        if l.len() != l0.len() {
            v.causes.push(Cause {
                set: ISet::from(nc + 1),
                order: [0, nc, 0, 0],
                code: 1187,
                message: format!("core 0 has {} CoreBarriers, core {nc} has {}", l0.len(), l.len()),
            });
        }
        let sb = count_sb(nc);
        if sb != sb0 {
            v.causes.push(Cause {
                set: ISet::from(nc + 1),
                order: [0, nc, 1, 0],
                code: 1198,
                message: format!("core 0 has {sb0} GPSIMDSB2SB, core {nc} has {sb}"),
            });
        }
    }
    shared_targets(module, v);
    for &nc in &cores {
        let l = list(nc);
        for (j, (b, b0)) in l.iter().zip(&l0).enumerate() {
            let id = match &b.op {
                OpFields::CoreBarrier { id, .. } => *id,
                _ => None,
            };
            if id != Some(j as i64) {
                v.causes.push(Cause {
                    set: ISet::from((nc + 1).max(2)),
                    order: [1, nc, j as i64, 0],
                    code: 1188,
                    message: format!("core {nc}: CoreBarrier {} at index {j} has id {id:?}", b.name),
                });
            }
            if b.name != b0.name {
                v.causes.push(Cause {
                    set: ISet::from(nc + 1),
                    order: [1, nc, j as i64, 1],
                    code: 1189,
                    message: format!("core {nc}: CoreBarrier {j} is {}, core 0 has {}", b.name, b0.name),
                });
            }
        }
    }
}

/// 1197 / 1195 on core 1: every placed shared DRAM location names its remote
/// local target, which exists (its core < N) with the same address.
fn shared_targets(module: &Module, v: &mut Validity) {
    let mut index: HashMap<(&str, &str), Option<i64>> = HashMap::new();
    for f in &module.functions {
        for s in &f.allocations {
            for l in &s.locations {
                index.entry((&*f.name, &*l.name)).or_insert(l.addr);
            }
        }
    }
    let mut k = 0i64;
    for f in &module.functions {
        for s in &f.allocations {
            for l in &s.locations {
                if l.is_shared_post_dram_alloc != Some(true) || &*l.mem_type != "DRAM" {
                    continue;
                }
                k += 1;
                let (set, code, msg) = match &l.remote_local_target {
                    None => (
                        ISet::from(2),
                        1197,
                        format!(
                            "core 1: shared DRAM location {} of function {} has no remote_local_target",
                            l.name, f.name
                        ),
                    ),
                    Some(t) => {
                        let same = index.get(&(&*f.name, &*t.name)) == Some(&l.addr);
                        let msg = format!(
                            "core 1: location {} targets {} on core {} (its core or address does not match)",
                            l.name, t.name, t.core
                        );
                        if !same || t.core < 0 {
                            (ISet::from(2), 1195, msg)
                        } else {
                            (ISet::range(2, t.core), 1195, msg)
                        }
                    }
                };
                if !set.is_empty() {
                    v.causes.push(Cause {
                        set,
                        order: [0, 1, 2, k],
                        code,
                        message: msg,
                    });
                }
            }
        }
    }
}

/// 9303: a remote local target naming no location of the function (a core
/// outside [0, N), or a name it lacks).
fn remote_targets(model: &FnModel<'_>, fi: usize, v: &mut Validity) {
    let f = model.function;
    let exists = |name: &str| crate::analysis::location::find_location(f, name).is_some();
    for set in &f.allocations {
        for (own, _, loc) in locations_of(set) {
            let Some(loc) = loc else { continue };
            let rlt = loc.remote_local_target.as_ref();
            let shared = crate::analysis::location::is_shared(set, Some(loc));
            let (bad, target) = if shared {
                let name = rlt.filter(|r| r.core == 0).map_or(own, |r| &*r.name);
                (
                    if exists(name) { ISet::empty() } else { ISet::from(2) },
                    name.to_string(),
                )
            } else if let Some(r) = rlt {
                let s = if !exists(&r.name) || r.core < 0 {
                    ISet::from(2)
                } else {
                    ISet::range(2, r.core)
                };
                (s, format!("{} on core {}", r.name, r.core))
            } else {
                continue;
            };
            if !bad.is_empty() {
                v.causes.push(Cause {
                    set: bad,
                    order: [3, fi as i64, 0, 0],
                    code: 9303,
                    message: format!(
                        "remote_local_target of {own} names {target}, which does not exist (function {})",
                        f.name
                    ),
                });
            }
        }
    }
}

/// Does every memory argument of `inst` name a set of its function and fit
/// it for every core and instance (then nothing in it can be 9302)? The
/// ranges (`analysis::ranges`) span every core of `[0, max_core]`.
fn clears(ranges: &mut Ranges<'_>, index: &FunctionIndex<'_>, inst: &crate::bir::Instruction) -> bool {
    for (_, _, arg) in memory_args(inst) {
        let Some(entry) = set_of(index, arg) else { return false };
        match arg {
            Argument::Symbolic(ap) => {
                let Ok(es) = element_size(ap.dtype.as_deref(), entry.set) else {
                    return false;
                };
                let mut lo = smallvec::SmallVec::<[i64; 4]>::new();
                let mut hi = smallvec::SmallVec::<[i64; 4]>::new();
                for &a in &ap.addrs {
                    let Some((l, h)) = ranges.of(a) else { return false };
                    lo.push(l);
                    hi.push(h);
                }
                for loc in &entry.locations {
                    let Ok(layout) = &loc.layout else { return false };
                    if layout.check_symbolic(&ap.ap, &lo, es).is_err()
                        || layout.check_symbolic(&ap.ap, &hi, es).is_err()
                    {
                        return false;
                    }
                }
            }
            Argument::Physical(p) => {
                let Ok(es) = element_size(p.dtype.as_deref(), entry.set) else {
                    return false;
                };
                for loc in &entry.locations {
                    let Ok(layout) = &loc.layout else { return false };
                    if layout.physical(p, es).is_err() {
                        return false;
                    }
                }
            }
            _ => {}
        }
    }
    true
}

/// The most loop iterations tried to find an instance that leaves its
/// location, per argument and core.
const INSTANCE_BUDGET: u64 = 1 << 20;

/// 9302: the least core on which some footprint leaves its location.
fn footprints(
    module: &Module,
    model: &FnModel<'_>,
    fi: usize,
    forms: &mut Forms<'_>,
    max_core: Option<i64>,
    v: &mut Validity,
) {
    let index = FunctionIndex::new(model.function);
    // Instances are enumerated (the error path) in the arena of
    // with_shard_bound(module, CORE_CAP), built on first use: the module's
    // own ShardIds refuse cores past their ub.
    let mut rebound: Option<(crate::pelican::Context, Vec<ExprId>, HashMap<AxisId, ExprId>)> = None;
    let mut best: Option<(i64, Error)> = None;
    let top = max_core.unwrap_or(i64::MAX / 2);
    let mut ranges = Ranges::new(&module.ctx, ShardRange::UpTo(max_core));
    for n in &model.nodes {
        let args = memory_args(n.inst);
        if args.is_empty() {
            continue;
        }
        if clears(&mut ranges, &index, n.inst) && accumulate_op(n.inst).is_ok() {
            continue;
        }
        let present = match shard_presence(model.own_preds(n.pos), &forms.qs, max_core) {
            Ok(s) => match max_core {
                Some(m) => s.intersect(&ISet::range(0, m)),
                None => s,
            },
            Err(why) => {
                v.undecided.push(Undecided {
                    why: format!("where {} is present: {why}", n.inst.name),
                });
                continue;
            }
        };
        let Some(first) = present.min() else { continue };
        let limit = best.as_ref().map_or(top, |b| b.0 - 1);
        if first > limit {
            continue;
        }
        let hull_hi = match present.max().flatten() {
            Some(h) => h as i128,
            None => INF,
        };
        if let Err(e) = accumulate_op(n.inst) {
            keep(&mut best, first, e);
            continue;
        }
        for (list, k, arg) in args {
            let Some(entry) = set_of(&index, arg) else {
                keep(&mut best, first, unknown_set(9302, n.inst, list, k, arg));
                continue;
            };
            for loc in 0..entry.locations.len() {
                let fail = |e| footprint_error(9302, n.inst, list, k, &entry.set.name, &e);
                let sh = match shape(forms, arg, entry, loc) {
                    Ok(s) => s,
                    Err(e) => {
                        keep(&mut best, first, fail(e));
                        continue;
                    }
                };
                let fp = match sh {
                    Shape::Affine(fp) => fp,
                    Shape::Unmodelled(why) => {
                        v.undecided.push(Undecided {
                            why: format!("footprint of {}[{k}] of {}: {why}", list.key(), n.inst.name),
                        });
                        continue;
                    }
                    Shape::Whole(_) | Shape::Empty => continue,
                };
                let qs = &forms.qs;
                let fixed = HashMap::new();
                let hull = Range {
                    lo: first as i128,
                    hi: hull_hi,
                };
                if fp.check(&mut Dom::new(&module.ctx, qs, hull, &fixed)).is_ok() {
                    continue;
                }
                let limit = best.as_ref().map_or(top, |b| b.0 - 1);
                let search = limit.min(CORE_CAP - 1);
                let Some(cores) = present.intersect(&ISet::range(0, search)).values(CORE_CAP as usize) else {
                    continue;
                };
                let mut found = false;
                let qs = qs.clone();
                let point = !fp.start().is_some_and(|s| mentions_iv(&s, &qs));
                for s in cores {
                    let mut dom = Dom::new(&module.ctx, &qs, Range::point(s as i128), &fixed);
                    let Err(e) = fp.check(&mut dom) else { continue };
                    if point {
                        keep(&mut best, s, fail(e));
                        found = true;
                        break;
                    }
                    if rebound.is_none() {
                        match rebound_context(&module.ctx, CORE_CAP) {
                            Ok((c, ids)) => {
                                let ivs = iv_nodes(&c);
                                rebound = Some((c, ids, ivs));
                            }
                            Err(e) => {
                                v.undecided.push(Undecided {
                                    why: format!("footprint of {}: {e}", n.inst.name),
                                });
                                break;
                            }
                        }
                    }
                    let Some((c, ids, ivs)) = &rebound else { break };
                    let arena = Arena { ctx: c, ids: Some(ids) };
                    match first_bad_instance(arena, model, ivs, n.pos, arg, entry, loc, s) {
                        Ok(Some(e)) => {
                            keep(&mut best, s, fail(e));
                            found = true;
                            break;
                        }
                        Ok(None) => {}
                        Err(why) => {
                            v.undecided.push(Undecided {
                                why: format!("footprint of {}[{k}] of {} on core {s}: {why}", list.key(), n.inst.name),
                            });
                            break;
                        }
                    }
                }
                if !found && limit > search && present.intersect(&ISet::from(search + 1)).min().is_some() {
                    v.undecided.push(Undecided {
                        why: format!(
                            "footprint of {}[{k}] of {} on cores past {search}: not decided (give a smaller lnc)",
                            list.key(),
                            n.inst.name
                        ),
                    });
                }
            }
        }
    }
    if let Some((c, e)) = best {
        let (code, message) = describe(&e);
        v.causes.push(Cause {
            set: ISet::from((c + 1).max(2)),
            order: [3, fi as i64, 1, c],
            code,
            message,
        });
    }
}

fn keep(best: &mut Option<(i64, Error)>, core: i64, e: Error) {
    if best.as_ref().is_none_or(|b| core < b.0) {
        *best = Some((core, e));
    }
}

/// The footprint error of the first instance of the instruction at `pos` on
/// core `s` whose footprint leaves the location (the concrete rule, instance
/// by instance), or None; Err when there are too many instances to try.
#[allow(clippy::too_many_arguments)]
fn first_bad_instance(
    arena: Arena<'_>,
    model: &FnModel<'_>,
    ivs: &HashMap<AxisId, ExprId>,
    pos: u32,
    arg: &Argument,
    entry: &crate::analysis::access::SetEntry<'_>,
    loc: usize,
    s: i64,
) -> std::result::Result<Option<crate::analysis::footprint::FootprintError>, String> {
    let Argument::Symbolic(ap) = arg else {
        return Ok(None);
    };
    let Ok(layout) = &entry.locations[loc].layout else {
        return Ok(None);
    };
    let Ok(es) = element_size(ap.dtype.as_deref(), entry.set) else {
        return Ok(None);
    };
    let mut found = None;
    let mut budget = INSTANCE_BUDGET;
    let done = for_each_instance(model, arena, ivs, pos, s, &mut budget, &mut |b, _| {
        let mut vals = Vec::with_capacity(ap.addrs.len());
        for &a in &ap.addrs {
            match arena.ctx.eval(arena.id(a), b)? {
                Some(x) => vals.push(x),
                None => return Ok(true),
            }
        }
        if let Err(e) = layout.check_symbolic(&ap.ap, &vals, es) {
            found = Some(e);
            return Ok(false);
        }
        Ok(true)
    })
    .map_err(|e| e.to_string())?;
    if found.is_none() && !done {
        return Err(format!("more than {INSTANCE_BUDGET} instances to check"));
    }
    Ok(found)
}

/// The first cause of every N of `lnc`, as maximal intervals of N with one
/// cause: `(N set, code, message)`.
pub fn invalid_ns(causes: &[Cause], lnc: &ISet) -> Vec<(ISet, u32, String)> {
    let mut bp: Vec<i64> = Vec::new();
    for c in causes {
        for &(lo, hi) in c.set.parts() {
            bp.push(lo);
            if let Some(h) = hi {
                bp.push(h + 1);
            }
        }
    }
    for &(lo, hi) in lnc.parts() {
        bp.push(lo);
        if let Some(h) = hi {
            bp.push(h + 1);
        }
    }
    bp.sort_unstable();
    bp.dedup();
    let mut out: Vec<(ISet, u32, String)> = Vec::new();
    for (i, &lo) in bp.iter().enumerate() {
        let seg = ISet::interval(lo, bp.get(i + 1).map(|&n| n - 1)).intersect(lnc);
        if seg.is_empty() {
            continue;
        }
        let first = causes.iter().filter(|c| c.set.contains(lo)).min_by_key(|c| c.order);
        let Some(c) = first else { continue };
        match out.last_mut() {
            Some(last) if last.1 == c.code && last.2 == c.message => last.0 = last.0.union(&seg),
            _ => out.push((seg, c.code, c.message.clone())),
        }
    }
    out
}
