//! lnc_barriercheck (the compiler's LncBarrierCheck; contract §3.6,
//! neuronx-facts §4): do the N per-core programs of one kernel race?
//!
//! A race is a pair of access instances on different cores whose footprints
//! intersect, at least one a write, not both accumulates of one op, and not
//! ordered by the `CoreBarrier`s both cores pass. The check runs in four steps:
//!
//! 1. **Reach.** Every location of every core is resolved to the physical
//!    location it touches ([`Cores::resolve`]); only the ones another core can
//!    also reach (shared DRAM, proxy targets, GPSIMDSB2SB partner writes) can
//!    race. Instructions touching none of them, and loop nests holding no such
//!    instruction and no barrier, are skipped without being walked, so a
//!    mostly-private module costs little more than one pass over its
//!    instructions.
//! 2. **Walk.** Each core's function is walked in execution order (loops
//!    unrolled, masks evaluated; [`walk_function_pruned`]): counted barrier
//!    instances (mask not undecided) are numbered, and every access instance
//!    to a reachable location is recorded with its footprint and the number of
//!    barrier instances before it. Identical consecutive instances (a loop that
//!    does not move the address) are kept once.
//! 3. **Bands.** For a pair of cores (a, b) only the barriers whose `cores`
//!    (core 0's list; empty = all) include both count; their sequences must be
//!    equal on a and b (9304). An access after k such barriers has band
//!    (k−1, k) (k = ∞ after the last): two accesses are ordered iff their
//!    bands are disjoint, i.e. iff k differs. So the candidates of a pair are
//!    the accesses of one *epoch* k.
//! 4. **Sweep** ([`sweep`]): per physical location, pair of cores and epoch,
//!    the accesses sorted by their least byte are swept with an active list:
//!    only pairs whose address ranges overlap are compared (cost ~ accesses ×
//!    log, plus the overlapping pairs). `Mode::Exact` intersects the run sets
//!    exactly (the least common byte); `Mode::Interval` intersects the
//!    bounding boxes (partition range × byte interval), the compiler's
//!    over-approximating filter. Each pair of instructions is reported once per
//!    location, with the least witness over all its racing instance pairs.
//!
//! Invalid input raises: 9006 (the core list), the concretized verifier's own
//! error, 9305 (GPSIMDSB2SB with N ≠ 2), 9303 (a `remote_local_target` naming
//! nothing), 9302 (a footprint outside its location), 9304 (barrier sequences
//! that differ), 9306 (more than 10⁸ instances in one function).
//!
//! One file past 800 lines: the checker's driver (instances, bands, the
//! pairing of accesses and the report) is one algorithm; its parts with
//! their own invariants live beside it (`bounds`, `linear`, `sweep`).

use std::sync::Arc;

use hashbrown::HashMap;
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::analysis::access::{footprint_error, Access, ArgList, FunctionIndex, Role, SetEntry};
use crate::analysis::cores as core_set;
use crate::analysis::footprint::Progression;
use crate::analysis::location::{locations_of, Cores, PhysLoc};
use crate::analysis::walk::{prune_table, walk_function_pruned, Instance, Limit, Mask, Skip};
use crate::bir::{Argument, Function, Instruction, Module, OpFields, Opcode};
use crate::error::{Error, Result};
use crate::passes::lnc_verifier;

mod bounds;
mod engines;
mod linear;
mod sweep;
#[cfg(test)]
mod tests;

use sweep::{Footprint, Item};

/// Where the checker's errors point.
pub const WHERE: &str = "lncsplit/lnc_barriercheck";

/// Whether the walk uses the planned fast path ([`linear`]); the tests
/// compare it with the general path.
const FAST: bool = true;

/// The most instruction instances one function may have before the checker
/// refuses it (9306).
pub use crate::analysis::walk::MAX_INSTANCES;

/// How footprints are intersected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The exact (partition, byte) sets: strided accesses that never share a
    /// byte do not race.
    Exact,
    /// Bounding boxes (partition range × byte interval): the compiler's filter.
    Interval,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "exact" => Some(Mode::Exact),
            "interval" => Some(Mode::Interval),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Exact => "exact",
            Mode::Interval => "interval",
        }
    }
}

/// `write-write` (no side only reads) or `read-write`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RaceKind {
    WriteWrite,
    ReadWrite,
}

impl RaceKind {
    pub fn name(self) -> &'static str {
        match self {
            RaceKind::WriteWrite => "write-write",
            RaceKind::ReadWrite => "read-write",
        }
    }
}

/// A band `(lo, hi)`: the latest counted barrier before the access (−1: none)
/// and the earliest after it (None: none, written `null`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Band {
    pub lo: i64,
    pub hi: Option<i64>,
}

/// One side of a race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceSide {
    pub core: u32,
    pub function: Arc<str>,
    pub instruction: Arc<str>,
    /// Depth-first index of the instruction in its function, on its core.
    pub position: u32,
    pub band: Band,
}

/// One race: a pair of instructions on two cores and the location they both
/// touch, unordered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    /// The lower core's side.
    pub a: RaceSide,
    pub b: RaceSide,
    /// The physical location: its owning core and name.
    pub location: (u32, Arc<str>),
    /// The least (partition, byte) both touch (interval mode: the least point
    /// of the intersection of the two bounding boxes).
    pub witness: (i64, i64),
    pub kind: RaceKind,
    /// One line: which barrier to add where.
    pub fix: String,
}

impl Race {
    fn sort_key(&self) -> (&str, u32, u32, u32, u32, u32, &str) {
        (
            &self.a.function,
            self.a.position,
            self.b.position,
            self.a.core,
            self.b.core,
            self.location.0,
            &self.location.1,
        )
    }

    /// The race as its JSON object (contract §3.6).
    pub fn to_value(&self) -> Value {
        let side = |s: &RaceSide| {
            json!({
                "core": s.core,
                "function": &*s.function,
                "instruction": &*s.instruction,
                "position": s.position,
                "band": [s.band.lo, s.band.hi],
            })
        };
        json!({
            "a": side(&self.a),
            "b": side(&self.b),
            "location": {"core": self.location.0, "name": &*self.location.1},
            "witness": {"partition": self.witness.0, "byte": self.witness.1},
            "kind": self.kind.name(),
            "fix": self.fix,
        })
    }

    /// One line naming both sides, the location, the witness and the kind.
    pub fn describe(&self) -> String {
        let band = |b: Band| match b.hi {
            Some(hi) => format!("[{}, {hi}]", b.lo),
            None => format!("[{}, inf]", b.lo),
        };
        format!(
            "{} race in {}: {} (core {}, band {}) and {} (core {}, band {}) both touch {} of core {} at partition {}, byte {}",
            self.kind.name(),
            self.a.function,
            self.a.instruction,
            self.a.core,
            band(self.a.band),
            self.b.instruction,
            self.b.core,
            band(self.b.band),
            self.location.1,
            self.location.0,
            self.witness.0,
            self.witness.1
        )
    }
}

/// What [`racecheck`] found: every race, sorted by (function, a's position,
/// b's position, cores, location).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceReport {
    pub mode: Mode,
    pub races: Vec<Race>,
    /// Pairs the check cannot decide (contract §3.10's cross-core rule): a
    /// candidate race that order lncsplit does not model may prevent.
    pub undecided: Vec<Undecided>,
}

/// A candidate race on cores whose cross-core order may come from what
/// lncsplit does not model, with the reason: never reported as ok.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided {
    pub reason: String,
    /// The race the modelled order leaves (both sides, location, witness).
    pub race: Race,
}

impl Undecided {
    /// `{"reason", "race": {…}}`.
    pub fn to_value(&self) -> Value {
        json!({"reason": self.reason, "race": self.race.to_value()})
    }
}

impl RaceReport {
    /// No race and nothing undecided.
    pub fn ok(&self) -> bool {
        self.races.is_empty() && self.undecided.is_empty()
    }

    /// `{"ok", "mode", "races": [...]}` (contract §3.6), with `"undecided":
    /// [...]` when something is (§3.10's cross-core rule).
    pub fn to_value(&self) -> Value {
        let mut v = json!({
            "ok": self.ok(),
            "mode": self.mode.name(),
            "races": self.races.iter().map(Race::to_value).collect::<Vec<_>>(),
        });
        if !self.undecided.is_empty() {
            v["undecided"] = self.undecided.iter().map(Undecided::to_value).collect();
        }
        v
    }
}

/// lnc_barriercheck over the N core modules of one kernel, in core order.
/// Reports races; raises only for invalid input.
pub fn racecheck(modules: &[&Module], mode: Mode) -> Result<RaceReport> {
    racecheck_with(modules, mode, true)
}

/// [`racecheck`], each core's walk on rayon's pool when `parallel` (the same
/// report either way). A corpus split runs files side by side with
/// `parallel` off: its per-core walks (~1 ms for a 1 MB module) are cheaper
/// on the calling thread than handed to a pool whose threads are busy with
/// the other files (a wake-up per hand-off, and the idle worker's spinning).
pub fn racecheck_with(modules: &[&Module], mode: Mode, parallel: bool) -> Result<RaceReport> {
    let cores = Cores::checked(modules, "lnc_barriercheck")?;
    let n = modules.len();
    if n > 1 {
        lnc_verifier::verify_concretized(modules, n)?;
    }
    check_sb2sb(modules)?;
    let syncs: Vec<engines::CoreSync> = modules
        .iter()
        .map(|m| engines::CoreSync::of(m))
        .collect::<Result<_>>()?;
    let (mut races, mut undecided) = (Vec::new(), Vec::new());
    for f in &modules[0].functions {
        let (r, u) = check_function(cores, &syncs, &f.name, mode, parallel)?;
        races.extend(r);
        undecided.extend(u);
    }
    races.sort_by(|x, y| x.sort_key().cmp(&y.sort_key()));
    undecided.sort_by(|x: &Undecided, y: &Undecided| x.race.sort_key().cmp(&y.race.sort_key()));
    Ok(RaceReport { mode, races, undecided })
}

/// 9305: GPSIMDSB2SB writes the partner core `(c+1) & 1`, defined for N == 2 only.
fn check_sb2sb(modules: &[&Module]) -> Result<()> {
    if modules.len() == 2 {
        return Ok(());
    }
    for (c, m) in modules.iter().enumerate() {
        for f in &m.functions {
            let mut found: Option<&Instruction> = None;
            f.walk(&mut |i| {
                if found.is_none() && i.opcode == Opcode::GPSIMD_SB2SB {
                    found = Some(i);
                }
            });
            if let Some(i) = found {
                return Err(Error::neuron_at(
                    9305,
                    format!(
                        "GPSIMDSB2SB needs exactly 2 cores (its partner is (c+1) & 1), got {}",
                        modules.len()
                    ),
                    WHERE,
                    sb2sb_detail(
                        modules,
                        &format!("instruction {} in function {} of core {c}", i.name, f.name),
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// 9305's detail: the instruction, after the cause when the one core is a
/// symbolic module (the new user's `racecheck([module])`).
fn sb2sb_detail(modules: &[&Module], at: &str) -> String {
    match core_set::symbolic_as_one_core(modules, "racecheck") {
        Some(why) => format!("{why}; {at}"),
        None => at.to_string(),
    }
}

// ------------------------------------------------------------------ reach

/// The physical locations of one function across cores, interned.
#[derive(Default)]
struct Reach {
    ids: HashMap<PhysLoc, u32>,
    locs: Vec<PhysLoc>,
    /// Another core than the owner reaches it: only these can race.
    multi: Vec<bool>,
    /// Bytes per partition of the owner's location (witness coordinates).
    partition_bytes: Vec<i64>,
}

impl Reach {
    fn intern(&mut self, phys: PhysLoc, owner_pb: i64) -> u32 {
        if let Some(&id) = self.ids.get(&phys) {
            return id;
        }
        let id = self.locs.len() as u32;
        self.ids.insert(phys.clone(), id);
        self.locs.push(phys);
        self.multi.push(false);
        self.partition_bytes.push(owner_pb);
        id
    }
}

/// One core's view of a function: its index and where each of its locations
/// (and each GPSIMDSB2SB destination) resolves.
struct CoreFn<'m> {
    module: &'m Module,
    function: &'m Function,
    /// The function's index in its module and the core's index.
    fidx: usize,
    core: usize,
    index: FunctionIndex<'m>,
    /// Set name → phys id of each of its locations.
    phys: HashMap<&'m str, Vec<u32>>,
    /// Set name → phys id on the partner core (GPSIMDSB2SB `outs[0]` sets).
    partner: HashMap<&'m str, Vec<u32>>,
}

fn owner_partition_bytes(r: &crate::analysis::location::Resolved<'_>) -> i64 {
    r.layout().map_or(1, |l| l.partition_bytes().max(1))
}

/// Resolve every location of every core (9303 for a dangling target).
fn resolve_all<'m>(
    cores: Cores<'m>,
    syncs: &[engines::CoreSync],
    fname: &str,
    reach: &mut Reach,
) -> Result<Vec<CoreFn<'m>>> {
    let mut out = Vec::with_capacity(cores.len());
    for (c, m) in cores.modules.iter().enumerate() {
        let Some(fidx) = m.functions.iter().position(|x| &*x.name == fname) else {
            continue;
        };
        let f = &m.functions[fidx];
        let mut phys = HashMap::new();
        for set in &f.allocations {
            let mut ids = Vec::new();
            for (_, _, loc) in locations_of(set) {
                let r = cores.resolve(c, f, set, loc, false)?;
                let pb = owner_partition_bytes(&r);
                let owner = r.phys.core as usize;
                let id = reach.intern(r.phys, pb);
                if owner != c {
                    reach.multi[id as usize] = true;
                }
                ids.push(id);
            }
            phys.entry(&*set.name).or_insert(ids);
        }
        let mut partner = HashMap::new();
        if cores.len() == 2 {
            resolve_partner_writes(cores, c, f, reach, &mut partner)?;
        }
        // A DMATrigger accesses its descriptors' arguments (§3.6 via §3.8).
        let queues = syncs[c].queues.clone();
        out.push(CoreFn {
            module: m,
            function: f,
            fidx,
            core: c,
            index: FunctionIndex::with_queues(f, queues),
            phys,
            partner,
        });
    }
    Ok(out)
}

/// The partner-core locations the GPSIMDSB2SBs of core `c` write.
fn resolve_partner_writes<'m>(
    cores: Cores<'m>,
    c: usize,
    f: &'m Function,
    reach: &mut Reach,
    partner: &mut HashMap<&'m str, Vec<u32>>,
) -> Result<()> {
    let mut sets: Vec<&'m str> = Vec::new();
    f.walk(&mut |i| {
        if i.opcode == Opcode::GPSIMD_SB2SB {
            if let Some(s) = i.outs.first().and_then(Argument::memsetref) {
                sets.push(s);
            }
        }
    });
    for name in sets {
        if partner.contains_key(name) {
            continue;
        }
        let Some(set) = f.memory_location_set(name) else {
            continue; // accesses() reports the unknown set with its argument
        };
        let mut ids = Vec::new();
        for (_, _, loc) in locations_of(set) {
            let r = cores.resolve(c, f, set, loc, true)?;
            let pb = owner_partition_bytes(&r);
            let id = reach.intern(r.phys, pb);
            reach.multi[id as usize] = true;
            ids.push(id);
        }
        partner.insert(name, ids);
    }
    Ok(())
}

// ----------------------------------------------------------------- static scan

/// Per depth-first position of one core's function: what the walk must do.
struct Scan<'i, 'm> {
    /// `Some`: skip the subtree (nothing in it can race or order).
    skip: Vec<Option<Skip>>,
    /// The instruction itself may touch a location another core reaches.
    touches: Vec<bool>,
    /// Its footprints must be checked instance by instance (the static
    /// bounds could not clear them).
    verify: Vec<bool>,
    /// Barrier ordinal (depth-first among the function's CoreBarriers).
    barrier: Vec<u32>,
    /// Index into `plans` of the instruction's fast-path plan
    /// ([`linear`]), or [`NO_PLAN`].
    plan: Vec<u32>,
    plans: Vec<Vec<linear::ArgPlan<'i, 'm>>>,
}

const NO_PLAN: u32 = u32::MAX;

/// The sets (by their index entry's address) whose bytes another core reaches.
type Reached = hashbrown::HashSet<usize>;

fn reached_sets(cf: &CoreFn<'_>, reach: &Reach) -> Reached {
    (cf.function.allocations.iter())
        .filter(|s| reachable(cf, reach, &s.name))
        .filter_map(|s| cf.index.set(&s.name))
        .map(|e| e as *const SetEntry<'_> as usize)
        .collect()
}

const NOT_A_BARRIER: u32 = u32::MAX;

/// Can another core touch the bytes of this set of one core (one of its
/// locations resolves to a physical location another core reaches, or it is
/// a GPSIMDSB2SB destination)?
fn reachable(cf: &CoreFn<'_>, reach: &Reach, set: &str) -> bool {
    let multi = cf
        .phys
        .get(set)
        .is_some_and(|ids| ids.iter().any(|&id| reach.multi[id as usize]));
    multi || cf.partner.contains_key(set)
}

/// What the walk must do per position, and the static footprint check of
/// every instruction ([`bounds`]): a footprint that certainly leaves its
/// location is an error here.
/// `fast`: plan the statically valid instructions that touch reachable sets
/// (off: every instance takes the general path, for the tests that compare).
fn scan<'i, 'm>(cf: &'i CoreFn<'m>, reach: &Reach, reached: &Reached, fast: bool) -> Result<Scan<'i, 'm>> {
    let ctx = &cf.module.ctx;
    let mut scanner = bounds::Scanner::new(ctx, &cf.index, |set| reachable(cf, reach, set));
    let mut error = None;
    // Per-position tables sized once (see `prune_table`).
    let n = cf.function.instruction_count();
    let (mut touches, mut verify, mut barrier) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut plan, mut plans) = (Vec::with_capacity(n), Vec::new());
    let mut barriers = 0u32;
    let is_reached = |e: &SetEntry<'m>| reached.contains(&(e as *const _ as usize));
    let skip = prune_table(ctx, cf.function, &mut |inst| {
        let (v, t) = bounds::first_error(&mut error, scanner.instruction(inst));
        // A DMATrigger's accesses are its descriptors' (not its own
        // arguments, which the static scan reads): checked per instance.
        let v = v == bounds::Verdict::PerInstance || cf.index.has_descriptor_accesses(inst);
        touches.push(t);
        verify.push(v);
        let planned = (fast && t && !v)
            .then(|| linear::plan(ctx, &cf.index, inst, &is_reached))
            .flatten();
        plan.push(planned.map_or(NO_PLAN, |p| {
            plans.push(p);
            plans.len() as u32 - 1
        }));
        let is_barrier = inst.opcode == Opcode::CORE_BARRIER;
        barrier.push(if is_barrier { barriers } else { NOT_A_BARRIER });
        barriers += is_barrier as u32;
        t || v || is_barrier
    });
    match error {
        Some(e) => Err(e),
        None => Ok(Scan {
            skip,
            touches,
            verify,
            barrier,
            plan,
            plans,
        }),
    }
}

// ------------------------------------------------------------------ walk

/// What one core's walk collected.
struct Collected<'m> {
    /// Ordinals of the counted barrier instances, in execution order.
    barriers: Vec<u32>,
    items: Chunked<Item<'m>>,
    /// Why cross-core order on this core may come from what lncsplit does
    /// not model ([`engines`]): its races are undecided.
    unmodelled: Option<String>,
}

/// A growing list kept in fixed-size chunks: the recorded accesses of a big
/// module (~100k of 152 bytes per core) are never copied to a buffer twice
/// the size, whose old copy the allocator would keep for its purge delay (the
/// race check's share of the CLI split's peak, docs/performance.md).
struct Chunked<T> {
    chunks: Vec<Vec<T>>,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: Vec::new() }
    }
}

impl<T> Chunked<T> {
    const CHUNK: usize = 8192;

    fn push(&mut self, x: T) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < Self::CHUNK => c.push(x),
            _ => {
                let mut c = Vec::with_capacity(Self::CHUNK);
                c.push(x);
                self.chunks.push(c);
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

/// The last instance recorded for one (position, argument list, index,
/// physical location): its band and points, to drop repeats.
type Last = HashMap<(u32, u8, u32, u32), ((u32, u32), Option<Progression>)>;

/// One core's barrier instances and recorded accesses; `fast` plans the
/// accesses it can ([`linear`]; the same items either way).
fn collect<'m>(
    cf: &CoreFn<'m>,
    cs: &engines::CoreSync,
    reach: &Reach,
    mode: Mode,
    fast: bool,
) -> Result<Collected<'m>> {
    let reached = reached_sets(cf, reach);
    let sc = scan(cf, reach, &reached, fast)?;
    // With sync_info, the engine relation places each access among the
    // barriers ([`engines`]); without it, execution order does.
    let remote = engines::remote(cf.function, cf.core);
    let order = engines::CoreOrder::of(cf.module, cf.fidx, cf.core, &cs.blocks, cs.sync)?;
    let mut visits: Vec<u32> = if order.is_some() {
        vec![0; sc.skip.len()]
    } else {
        Vec::new()
    };
    let mut out = Collected {
        barriers: Vec::new(),
        items: Chunked::default(),
        unmodelled: remote.or_else(|| order.as_ref().and_then(|o| o.unmodelled.clone())),
    };
    let mut scratch: Vec<Access<'_>> = Vec::new();
    let mut last = Last::new();
    let limit = Limit {
        max: MAX_INSTANCES,
        code: 9306,
        location: WHERE,
    };
    let ctx = &cf.module.ctx;
    let prune = |_: &Instruction, pos: u32| sc.skip.get(pos as usize).copied().flatten();
    walk_function_pruned(ctx, cf.function, None, limit, &prune, &mut |at: &Instance<'_, 'm>| {
        let p = at.pos as usize;
        // This instance's index among its position's (the engine order's key).
        let k = visits.get_mut(p).map_or(0, |v| {
            *v += 1;
            *v - 1
        });
        if sc.barrier[p] != NOT_A_BARRIER {
            if at.mask == Mask::True {
                out.barriers.push(sc.barrier[p]);
            }
            return Ok(());
        }
        if !sc.touches[p] && !sc.verify[p] {
            return Ok(());
        }
        scratch.clear();
        let planned = sc.plans.get(sc.plan[p] as usize);
        if planned.is_some_and(|plan| linear::accesses(plan, at.bindings, &mut scratch)) {
            // Planned: the same accesses, computed from the plan.
        } else if sc.verify[p] {
            cf.index.accesses(ctx, at.inst, at.bindings, 9302, &mut scratch)?;
        } else {
            // Statically valid: only the arguments another core reaches matter.
            let keep = |_: ArgList, _: usize, e: &SetEntry<'_>| reached.contains(&(e as *const _ as usize));
            cf.index
                .accesses_where(ctx, at.inst, at.bindings, 9302, &keep, &mut scratch)?;
        }
        let g = out.barriers.len() as u32;
        let band = order.as_ref().map_or((g, g), |o| o.band(at.pos, k));
        for a in scratch.drain(..) {
            record(cf, reach, mode, at, a, band, &mut out.items, &mut last)?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// Record one access if another core can reach its location (deduplicating
/// an instance identical to the previous one of the same argument).
#[allow(clippy::too_many_arguments)]
fn record<'m>(
    cf: &CoreFn<'m>,
    reach: &Reach,
    mode: Mode,
    at: &Instance<'_, 'm>,
    a: Access<'_>,
    band: (u32, u32),
    items: &mut Chunked<Item<'m>>,
    last: &mut Last,
) -> Result<()> {
    let set = &*a.set.set.name;
    let partner_write = at.inst.opcode == Opcode::GPSIMD_SB2SB && a.list == ArgList::Outs && a.index == 0;
    let table = if partner_write { &cf.partner } else { &cf.phys };
    let Some(&phys) = table.get(set).and_then(|ids| ids.get(a.location)) else {
        return Ok(());
    };
    if !reach.multi[phys as usize] {
        return Ok(());
    }
    let key = (at.pos, a.list as u8, a.index as u32, phys);
    // One lookup: the slot is read for the repeat test and written below.
    let slot = last.entry(key);
    if let hashbrown::hash_map::Entry::Occupied(o) = &slot {
        let (pg, pp) = o.get();
        if *pg == band && pp.as_ref() == a.points.as_ref() {
            return Ok(());
        }
    }
    let layout = match &a.loc().layout {
        Ok(l) => l,
        Err(e) => return Err(footprint_error(9302, at.inst, a.list, a.index, set, e)),
    };
    let fp = Footprint::new(mode, layout, a.points.as_ref())
        .map_err(|e| footprint_error(9302, at.inst, a.list, a.index, set, &e))?;
    let Some(fp) = fp else {
        return Ok(()); // an empty access touches nothing
    };
    // The points move into the repeat test's slot (the footprint is built).
    slot.insert((band, a.points));
    items.push(Item {
        inst: at.inst,
        phys,
        pos: at.pos,
        g: band.0,
        gb: band.1,
        role: a.role,
        fp,
    });
    Ok(())
}

// ------------------------------------------------------------------ bands

/// Which cores each barrier (by ordinal) orders: core 0's `cores` list,
/// empty = all.
struct BarrierCores {
    names: Vec<Arc<str>>,
    /// None: every core.
    cores: Vec<Option<Vec<bool>>>,
}

impl BarrierCores {
    fn of(f0: &Function, n: usize) -> BarrierCores {
        let mut b = BarrierCores {
            names: Vec::new(),
            cores: Vec::new(),
        };
        f0.walk(&mut |i| {
            if let OpFields::CoreBarrier { cores, .. } = &i.op {
                b.names.push(i.name.clone());
                b.cores.push(match cores.as_deref() {
                    None | Some([]) => None,
                    Some(list) => {
                        let mut m = vec![false; n];
                        for &c in list {
                            if let Some(x) = usize::try_from(c).ok().and_then(|c| m.get_mut(c)) {
                                *x = true;
                            }
                        }
                        Some(m)
                    }
                });
            }
        });
        b
    }

    fn all_cores(&self) -> bool {
        self.cores.iter().all(Option::is_none)
    }

    fn orders(&self, k: u32, a: usize, b: usize) -> bool {
        match self.cores.get(k as usize) {
            Some(None) => true,
            Some(Some(m)) => m[a] && m[b],
            None => false,
        }
    }

    fn name(&self, k: u32) -> String {
        self.names
            .get(k as usize)
            .map_or_else(|| format!("#{k}"), |n| n.to_string())
    }
}

/// The epoch numbering of one pair of cores: `prefix[c][g]` = the number of
/// barrier instances among core c's first g that order the pair.
struct PairEpochs {
    prefix: [Option<Vec<u32>>; 2],
    total: u32,
}

impl PairEpochs {
    fn epoch(&self, side: usize, g: u32) -> u32 {
        match &self.prefix[side] {
            None => g,
            Some(p) => p[g as usize],
        }
    }

    /// The epochs an item of `side` spans: from the pair barriers before it
    /// to the first one after it (one epoch without `sync_info`).
    fn span(&self, side: usize, it: &Item<'_>) -> (u32, u32) {
        (self.epoch(side, it.g), self.epoch(side, it.gb))
    }

    /// The band of an item of `side` (contract §3.6): the latest pair
    /// barrier before it (−1: none), the earliest after it (None: none).
    fn band(&self, side: usize, it: &Item<'_>) -> Band {
        let (lo, hi) = self.span(side, it);
        Band {
            lo: lo as i64 - 1,
            hi: (hi < self.total).then_some(hi as i64),
        }
    }
}

/// The pair's barrier sequences (9304 when they differ) and epochs.
fn pair_epochs(fname: &str, bc: &BarrierCores, seqs: &[&[u32]], a: usize, b: usize) -> Result<PairEpochs> {
    if bc.all_cores() {
        if seqs[a] != seqs[b] {
            return Err(sequence_error(fname, bc, seqs, a, b));
        }
        return Ok(PairEpochs {
            prefix: [None, None],
            total: seqs[a].len() as u32,
        });
    }
    let filtered = |c: usize| -> Vec<u32> { seqs[c].iter().copied().filter(|&k| bc.orders(k, a, b)).collect() };
    if filtered(a) != filtered(b) {
        return Err(sequence_error(fname, bc, seqs, a, b));
    }
    let prefix = |c: usize| -> Vec<u32> {
        let mut p = Vec::with_capacity(seqs[c].len() + 1);
        let mut n = 0u32;
        p.push(0);
        for &k in seqs[c] {
            n += bc.orders(k, a, b) as u32;
            p.push(n);
        }
        p
    };
    let pa = prefix(a);
    let total = *pa.last().unwrap_or(&0);
    Ok(PairEpochs {
        prefix: [Some(pa), Some(prefix(b))],
        total,
    })
}

fn sequence_error(fname: &str, bc: &BarrierCores, seqs: &[&[u32]], a: usize, b: usize) -> Error {
    let fa: Vec<u32> = seqs[a].iter().copied().filter(|&k| bc.orders(k, a, b)).collect();
    let fb: Vec<u32> = seqs[b].iter().copied().filter(|&k| bc.orders(k, a, b)).collect();
    let i = fa.iter().zip(&fb).take_while(|(x, y)| x == y).count();
    let show = |s: &[u32]| s.get(i).map_or("none (the sequence ends)".to_string(), |&k| bc.name(k));
    Error::neuron_at(
        9304,
        format!("the CoreBarrier sequences of cores {a} and {b} differ in function {fname}"),
        WHERE,
        format!(
            "barrier instance {i} ordering the pair is {} on core {a} but {} on core {b} ({} vs {} instances)",
            show(&fa),
            show(&fb),
            fa.len(),
            fb.len()
        ),
    )
}

// ------------------------------------------------------------------ function

/// The races of one function and the candidate races left undecided.
type Found = (Vec<Race>, Vec<Undecided>);

fn check_function(
    cores: Cores<'_>,
    syncs: &[engines::CoreSync],
    fname: &str,
    mode: Mode,
    parallel: bool,
) -> Result<Found> {
    let n = cores.len();
    let mut reach = Reach::default();
    let fns = resolve_all(cores, syncs, fname, &mut reach)?;
    let collected: Vec<Result<Collected>> = if parallel {
        fns.par_iter()
            .map(|cf| collect(cf, &syncs[cf.core], &reach, mode, FAST))
            .collect()
    } else {
        fns.iter()
            .map(|cf| collect(cf, &syncs[cf.core], &reach, mode, FAST))
            .collect()
    };
    let collected: Vec<Collected<'_>> = collected.into_iter().collect::<Result<_>>()?;
    if n < 2 || fns.len() < 2 {
        return Ok((Vec::new(), Vec::new()));
    }
    let bc = BarrierCores::of(fns[0].function, n);
    let seqs: Vec<&[u32]> = collected.iter().map(|c| c.barriers.as_slice()).collect();
    // 9304 is a property of the input, whether or not any access is at stake.
    let mut epochs: HashMap<(usize, usize), PairEpochs> = HashMap::new();
    for a in 0..fns.len() {
        for b in a + 1..fns.len() {
            epochs.insert((a, b), pair_epochs(fname, &bc, &seqs, a, b)?);
        }
    }
    let mut by_phys: HashMap<u32, Vec<Vec<&Item<'_>>>> = HashMap::new();
    for (c, col) in collected.iter().enumerate() {
        for it in col.items.iter() {
            by_phys.entry(it.phys).or_insert_with(|| vec![Vec::new(); fns.len()])[c].push(it);
        }
    }
    let mut phys_ids: Vec<u32> = by_phys.keys().copied().collect();
    phys_ids.sort_unstable();
    let function: Arc<str> = fns[0].function.name.clone();
    let (mut races, mut undecided) = (Vec::new(), Vec::new());
    for id in phys_ids {
        let per_core = &by_phys[&id];
        for a in 0..per_core.len() {
            for b in a + 1..per_core.len() {
                if per_core[a].is_empty() || per_core[b].is_empty() {
                    continue;
                }
                let ep = &epochs[&(a, b)];
                spans_within_limit(&function, [a, b], [&per_core[a], &per_core[b]], ep)?;
                let found = sweep::sweep([&per_core[a], &per_core[b]], ep);
                let loc = &reach.locs[id as usize];
                let pb = reach.partition_bytes[id as usize];
                let why = collected[a].unmodelled.as_ref().or(collected[b].unmodelled.as_ref());
                for w in found {
                    let race = make_race(&function, [a, b], loc, pb, &w, ep);
                    match why {
                        None => races.push(race),
                        Some(reason) => undecided.push(Undecided {
                            reason: reason.clone(),
                            race,
                        }),
                    }
                }
            }
        }
    }
    Ok((races, undecided))
}

/// The most sweep entries one pair of cores may need on one location: an
/// access of a core with `sync_info` enters the sweep once per epoch of its
/// span, so a DMA nothing waits for, on a core with many barriers, could
/// otherwise ask for (accesses × barriers) entries.
const MAX_SPAN_ENTRIES: u64 = 1 << 26;

/// 9306 when the spans of one location's accesses would pass [`MAX_SPAN_ENTRIES`].
fn spans_within_limit(function: &str, cores: [usize; 2], sides: [&[&Item<'_>]; 2], ep: &PairEpochs) -> Result<()> {
    let mut total = 0u64;
    for (s, items) in sides.iter().enumerate() {
        for it in items.iter() {
            let (lo, hi) = ep.span(s, it);
            total += u64::from(hi - lo) + 1;
        }
    }
    if total <= MAX_SPAN_ENTRIES {
        return Ok(());
    }
    Err(Error::neuron_at(
        9306,
        format!(
            "the race check of cores {} and {} in function {function} is past its resource limits: accesses ordered by no barrier span {total} epochs in all (at most {MAX_SPAN_ENTRIES})",
            cores[0], cores[1]
        ),
        WHERE,
        "on a core with sync_info an access spans the barriers the engines do not order it against: add the semaphore waits that order its DMAs before the next CoreBarrier".to_string(),
    ))
}

fn make_race(
    function: &Arc<str>,
    cores: [usize; 2],
    loc: &PhysLoc,
    pb: i64,
    w: &sweep::Witness<'_, '_>,
    ep: &PairEpochs,
) -> Race {
    let side = |s: usize, it: &Item<'_>| RaceSide {
        core: cores[s] as u32,
        function: function.clone(),
        instruction: it.inst.name.clone(),
        position: it.pos,
        band: ep.band(s, it),
    };
    let a = side(0, w.items[0]);
    let b = side(1, w.items[1]);
    // Program order is read from the positions; at a tie a writer goes first
    // (a def before its use).
    let b_first = b.position < a.position
        || (b.position == a.position && w.items[0].role == Role::Read && w.items[1].role != Role::Read);
    let fix = fix_line(&a, &b, b_first, &loc.name);
    Race {
        a,
        b,
        location: (loc.core, loc.name.clone()),
        witness: (w.point.div_euclid(pb), w.point.rem_euclid(pb)),
        kind: w.kind,
        fix,
    }
}

/// Where a barrier would order the two sides (one line).
fn fix_line(a: &RaceSide, b: &RaceSide, b_first: bool, loc: &str) -> String {
    if a.instruction == b.instruction {
        return format!(
            "{} runs on cores {} and {} and both copies touch {loc}: give each core its own bytes (a shard-dependent address) or predicate it to one core; no barrier can order an instruction with its own copy",
            a.instruction, a.core, b.core
        );
    }
    let (first, second) = if b_first { (b, a) } else { (a, b) };
    format!(
        "insert a CoreBarrier with cores [{}, {}] after {} and before {} in function {} (on every core), so {} on core {} completes before {} on core {} touches {loc}",
        a.core, b.core, first.instruction, second.instruction, a.function, first.instruction, first.core, second.instruction, second.core
    )
}

/// Role pairs that can race: at least one write, not two accumulates of one op.
pub(crate) fn conflict(x: Role, y: Role) -> Option<RaceKind> {
    match (x, y) {
        (Role::Read, Role::Read) => None,
        (Role::Accumulate(p), Role::Accumulate(q)) if p == q => None,
        (Role::Read, _) | (_, Role::Read) => Some(RaceKind::ReadWrite),
        _ => Some(RaceKind::WriteWrite),
    }
}
