//! The race-freedom check of each lowering, with the race checker's own
//! footprints and location resolution (contract §3.6).
//!
//! A lowered collective is bracketed on every core by an all-core barrier
//! before and one after, with nothing but its own instructions between them.
//! Every access of a user instruction on another core is therefore on the
//! far side of one of those barriers: ordered. What remains are pairs of the
//! collective's own instructions on two cores between the same two of its
//! barriers, and this module checks exactly those, instance by instance:
//! footprints that meet (at least one write, not two accumulates with one
//! op) are a conflict, and the caller falls back to a staged plan.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

use super::build::Lowering;
use super::group::Group;
use super::survey::{bindings, Survey};
use super::{Facts, CODE_BAD};
use crate::analysis::access::ArgList;
use crate::analysis::{Cores, FunctionIndex, PhysLoc, Progression, Reach, Role, RunSet};
use crate::bir::{Function, Instruction, Module, Opcode};
use crate::error::Result;
use crate::pelican::Context;

/// Two cores touching one byte between the same two barriers.
#[derive(Clone, Debug)]
pub struct Conflict {
    pub group: usize,
    pub a: (usize, Arc<str>),
    pub b: (usize, Arc<str>),
    pub location: PhysLoc,
    pub byte: i64,
}

impl Conflict {
    pub fn describe(&self) -> String {
        format!(
            "even through a DRAM stage, {} on core {} and {} on core {} touch byte {} of {} (core {}) between the same two barriers",
            self.a.1, self.a.0, self.b.1, self.b.0, self.byte, self.location.name, self.location.core
        )
    }
}

/// A location written by a core other than its owner.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Written {
    pub location: PhysLoc,
    /// Shared: every core's location of that name is the same memory.
    pub shared: bool,
}

struct Rec {
    phase: usize,
    core: usize,
    phys: PhysLoc,
    reach: Reach,
    role: Role,
    bytes: RunSet,
    inst: Arc<str>,
}

fn conflicting(a: Role, b: Role) -> bool {
    match (a, b) {
        (Role::Read, Role::Read) => false,
        (Role::Accumulate(x), Role::Accumulate(y)) => x != y,
        _ => true,
    }
}

/// One core's function as the lowering sees it (its sets and the new ones),
/// with the created instructions by name.
struct Indexed<'m> {
    access: FunctionIndex<'m>,
    insts: HashMap<&'m str, &'m Instruction>,
}

/// The modules the check resolves locations in: each core's functions that
/// hold collectives, with their sets plus the new ones and no blocks, and
/// the lowering's expression context.
fn shadows(orig: &[Module], ctxs: &mut [Context], groups: &[Group<'_>], low: &Lowering) -> Vec<Module> {
    let mut fnames: Vec<&str> = groups.iter().map(|g| &*g.function).collect();
    fnames.sort_unstable();
    fnames.dedup();
    orig.iter()
        .enumerate()
        .map(|(c, m)| {
            let functions = fnames
                .iter()
                .filter_map(|name| m.function(name))
                .map(|f| {
                    let mut allocations = f.allocations.clone();
                    allocations.extend(low.new_sets[c].get(&f.name).into_iter().flatten().cloned());
                    Function {
                        name: f.name.clone(),
                        shard_ids: Vec::new(),
                        registers: f.registers.clone(),
                        allocations,
                        basic_blocks: Vec::new(),
                        extra: None,
                    }
                })
                .collect();
            Module {
                version: m.version,
                name: m.name.clone(),
                arch: m.arch,
                arch_given: m.arch_given,
                artifact_path: None,
                attributes: m.attributes.clone(),
                functions,
                extra: None,
                ctx: std::mem::take(&mut ctxs[c]),
                spelling: m.spelling,
                implied_core: m.implied_core,
            }
        })
        .collect()
}

/// The accesses of group `gi`'s created instructions on every core for one
/// instance (its loop IVs at `values`).
fn instance_records(
    shadow: &[Module],
    refs: &[&Module],
    g: &Group<'_>,
    created: &[Vec<(Arc<str>, usize)>],
    index: &[Indexed<'_>],
    values: &[i64],
) -> Result<Vec<Rec>> {
    let cores = Cores { modules: refs };
    let mut recs = Vec::new();
    for (c, m) in shadow.iter().enumerate() {
        let f = index[c].access.function;
        let b = bindings(&m.ctx, &g.sites[c].axes(), values);
        for (name, phase) in &created[c] {
            let Some(inst) = index[c].insts.get(&**name) else {
                continue;
            };
            let mut acc = Vec::new();
            index[c].access.accesses(&m.ctx, inst, &b, CODE_BAD, &mut acc)?;
            for a in acc {
                let partner = inst.opcode == Opcode::GPSIMD_SB2SB && a.list == ArgList::Outs && a.index == 0;
                let r = cores.resolve(c, f, a.set.set, a.loc().loc, partner)?;
                let Ok(layout) = &a.loc().layout else { continue };
                let points = a.points.clone().unwrap_or(Progression {
                    base: 0,
                    dims: smallvec::smallvec![[1, layout.elements()]],
                });
                let bytes = points
                    .run_set(layout.esize)
                    .map_err(|e| super::fail(CODE_BAD, "footprint of a lowered collective", e.describe()))?;
                recs.push(Rec {
                    phase: *phase,
                    core: c,
                    phys: r.phys,
                    reach: r.reach,
                    role: a.role,
                    bytes,
                    inst: name.clone(),
                });
            }
        }
    }
    Ok(recs)
}

fn first_conflict(gi: usize, recs: &mut [Rec]) -> Option<Conflict> {
    recs.sort_by(|a, b| (a.phase, &a.phys, a.core).cmp(&(b.phase, &b.phys, b.core)));
    let mut start = 0;
    while start < recs.len() {
        let mut end = start + 1;
        while end < recs.len() && recs[end].phase == recs[start].phase && recs[end].phys == recs[start].phys {
            end += 1;
        }
        let run = &recs[start..end];
        for (i, a) in run.iter().enumerate() {
            for b in &run[i + 1..] {
                if a.core == b.core || !conflicting(a.role, b.role) {
                    continue;
                }
                if let Some(byte) = a.bytes.least_common(&b.bytes) {
                    return Some(Conflict {
                        group: gi,
                        a: (a.core, a.inst.clone()),
                        b: (b.core, b.inst.clone()),
                        location: a.phys.clone(),
                        byte,
                    });
                }
            }
        }
        start = end;
    }
    None
}

/// Check every instance of every lowered group. `Ok(Ok(written))` gives the
/// locations written by another core; `Ok(Err(conflicts))` one conflict per
/// group that has one.
pub fn windows(
    orig: &[Module],
    ctxs: &mut [Context],
    groups: &[Group<'_>],
    facts: &[Facts],
    low: &Lowering,
    surveys: &[Survey],
) -> Result<std::result::Result<Vec<Written>, Vec<Conflict>>> {
    let shadow = shadows(orig, ctxs, groups, low);
    let r = check_all(&shadow, groups, facts, low, surveys);
    for (c, m) in shadow.into_iter().enumerate() {
        ctxs[c] = m.ctx;
    }
    r
}

fn check_all(
    shadow: &[Module],
    groups: &[Group<'_>],
    facts: &[Facts],
    low: &Lowering,
    surveys: &[Survey],
) -> Result<std::result::Result<Vec<Written>, Vec<Conflict>>> {
    let refs: Vec<&Module> = shadow.iter().collect();
    let mut written: Vec<Written> = Vec::new();
    let mut seen: HashSet<Written> = HashSet::new();
    let mut conflicts = Vec::new();
    let mut indexes: HashMap<Arc<str>, Vec<Indexed<'_>>> = HashMap::new();
    for (gi, g) in groups.iter().enumerate() {
        if low.created[gi].iter().all(|v| v.is_empty()) {
            continue;
        }
        let index = indexes.entry(g.function.clone()).or_insert_with(|| {
            shadow
                .iter()
                .enumerate()
                .map(|(c, m)| Indexed {
                    access: FunctionIndex::new(m.function(&g.function).expect("checked by the verifier")),
                    insts: low.instructions(c, &g.function),
                })
                .collect()
        });
        let instances = &surveys[gi].instances;
        let take = if facts[gi].iv_free {
            instances.len().min(1)
        } else {
            instances.len()
        };
        for values in &instances[..take] {
            let mut recs = instance_records(shadow, &refs, g, &low.created[gi], index, values)?;
            if let Some(c) = first_conflict(gi, &mut recs) {
                conflicts.push(c);
                break;
            }
            for r in recs {
                if matches!(r.role, Role::Write | Role::Accumulate(_)) && r.phys.core as usize != r.core {
                    let w = Written {
                        location: r.phys,
                        shared: r.reach == Reach::Shared,
                    };
                    if seen.insert(w.clone()) {
                        written.push(w);
                    }
                }
            }
        }
    }
    Ok(if conflicts.is_empty() {
        Ok(written)
    } else {
        Err(conflicts)
    })
}

/// `written_by_another_core: true` on every location another core writes
/// (a shared location on every core: they are one memory).
pub fn mark_written(work: &mut [Module], written: &[Written]) {
    for w in written {
        for (c, m) in work.iter_mut().enumerate() {
            if !w.shared && c != w.location.core as usize {
                continue;
            }
            let Some(f) = m.functions.iter_mut().find(|f| f.name == w.location.function) else {
                continue;
            };
            for s in &mut f.allocations {
                for l in &mut s.locations {
                    if l.name == w.location.name {
                        l.written_by_another_core = Some(true);
                    }
                }
            }
        }
    }
}
