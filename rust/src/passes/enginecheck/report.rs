//! The report of enginecheck (contract §3.10) and the per-function step
//! that fills it: bind the waits, order the graph, sweep, and turn what was
//! found into races (with the wait that would fix each), wait statuses,
//! undecided findings and the unchecked count.

use std::sync::Arc;

use hashbrown::HashMap;
use serde_json::{json, Map, Value};

use super::build::{Acc, Built, Site};
use super::physical::SpaceKey;
use super::semaphores::{Status, UpdateEv};
use super::sweep;
use super::unchecked;
use crate::error::Result;

/// One side of a race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Side {
    pub function: Arc<str>,
    pub instruction: Arc<str>,
    /// Depth-first position of the instruction (a DMABlock's: its trigger's).
    pub position: u32,
    pub engine: Arc<str>,
    pub queue: Option<Arc<str>>,
    /// The DMABlock, when the access is one a `DMATrigger` started.
    pub dma_block: Option<Arc<str>>,
}

impl Side {
    /// The side of site `s` of `function`.
    pub fn of_site(function: &Arc<str>, s: &Site) -> Side {
        Side {
            function: function.clone(),
            instruction: s.instruction.clone(),
            position: s.position,
            engine: s.engine.clone(),
            queue: s.queue.clone(),
            dma_block: s.dma_block.clone(),
        }
    }

    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("instruction".into(), Value::from(&*self.instruction));
        o.insert("position".into(), Value::from(self.position));
        o.insert("engine".into(), Value::from(&*self.engine));
        o.insert("function".into(), Value::from(&*self.function));
        if let Some(q) = &self.queue {
            o.insert("queue".into(), Value::from(&**q));
        }
        if let Some(b) = &self.dma_block {
            o.insert("dma_block".into(), Value::from(&**b));
        }
        Value::Object(o)
    }

    /// `name` or `name (DMABlock b)`.
    pub fn label(&self) -> String {
        match &self.dma_block {
            Some(b) => format!("{} (DMABlock {b})", self.instruction),
            None => self.instruction.to_string(),
        }
    }
}

/// Where a race is: the space, a's location and (when it differs) b's.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RaceLocation {
    /// `SB`, `PSUM`, `DRAM` (an unplaced location: its type).
    pub space: Arc<str>,
    pub name: Arc<str>,
    /// b's location when the allocator placed two locations over one byte.
    pub other: Option<Arc<str>>,
    pub bank: Option<i64>,
    pub addr_space: Option<Arc<str>>,
}

impl RaceLocation {
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("space".into(), Value::from(&*self.space));
        o.insert("name".into(), Value::from(&*self.name));
        if let Some(x) = &self.other {
            o.insert("other".into(), Value::from(&**x));
        }
        if let Some(b) = self.bank {
            o.insert("bank".into(), Value::from(b));
        }
        if let Some(s) = &self.addr_space {
            o.insert("addr_space".into(), Value::from(&**s));
        }
        Value::Object(o)
    }
}

/// Two unordered accesses with a common byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineRace {
    /// `RAW` (a writes, b reads), `WAR`, `WAW`; a is the earlier position.
    pub kind: &'static str,
    pub a: Side,
    pub b: Side,
    pub location: RaceLocation,
    /// The least common physical point: (partition, byte) on chip, (0, arena byte) on DRAM.
    pub witness: (i64, i64),
    /// The semaphore wait that would order them.
    pub fix: String,
    pub(crate) fidx: usize,
}

impl EngineRace {
    pub fn to_value(&self) -> Value {
        json!({
            "kind": self.kind,
            "a": self.a.to_value(),
            "b": self.b.to_value(),
            "location": self.location.to_value(),
            "witness": {"partition": self.witness.0, "byte": self.witness.1},
            "fix": self.fix,
        })
    }

    /// One line: kind, both sides, location, witness.
    pub fn describe(&self) -> String {
        let other = self
            .location
            .other
            .as_ref()
            .map_or(String::new(), |o| format!(" (and {o}, placed over the same bytes)"));
        format!(
            "{} race: {} ({}, position {}) and {} ({}, position {}) both touch {} {}{} at partition {}, byte {}",
            self.kind,
            self.a.label(),
            self.a.engine,
            self.a.position,
            self.b.label(),
            self.b.engine,
            self.b.position,
            self.location.space,
            self.location.name,
            other,
            self.witness.0,
            self.witness.1
        )
    }
}

/// A wait whose status is not `ok`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitEntry {
    pub function: Arc<str>,
    pub instruction: Arc<str>,
    pub position: u32,
    pub dma_block: Option<Arc<str>>,
    pub from: Arc<str>,
    pub id: i64,
    pub wait_value: i64,
    /// `early`, `deadlock` or `no-update`.
    pub status: &'static str,
    pub(crate) fidx: usize,
    pub(crate) index: usize,
}

impl WaitEntry {
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("instruction".into(), Value::from(&*self.instruction));
        o.insert("position".into(), Value::from(self.position));
        o.insert("from".into(), Value::from(&*self.from));
        o.insert("id".into(), Value::from(self.id));
        o.insert("wait_value".into(), Value::from(self.wait_value));
        o.insert("status".into(), Value::from(self.status));
        o.insert("function".into(), Value::from(&*self.function));
        if let Some(b) = &self.dma_block {
            o.insert("dma_block".into(), Value::from(&**b));
        }
        Value::Object(o)
    }
}

/// Something the check cannot decide (never silently ordered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undecided {
    pub function: Arc<str>,
    pub reason: String,
    pub instruction: Arc<str>,
    pub position: u32,
    pub(crate) fidx: usize,
}

impl Undecided {
    pub fn to_value(&self) -> Value {
        json!({
            "reason": self.reason,
            "instruction": &*self.instruction,
            "position": self.position,
            "function": &*self.function,
        })
    }
}

/// What [`enginecheck`](super::enginecheck) found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineReport {
    /// Sorted by (function, a's position, b's position, location).
    pub races: Vec<EngineRace>,
    /// The waits that are not `ok`, by (function, position).
    pub waits: Vec<WaitEntry>,
    pub undecided: Vec<Undecided>,
    /// Pairs back-edges leave unchecked (they do not make `.ok` false).
    pub unchecked: u64,
}

impl EngineReport {
    pub(crate) fn sort(&mut self) {
        self.races.sort_by(|x, y| {
            (
                x.fidx,
                x.a.position,
                x.b.position,
                &x.location,
                &x.a.dma_block,
                &x.b.dma_block,
            )
                .cmp(&(
                    y.fidx,
                    y.a.position,
                    y.b.position,
                    &y.location,
                    &y.a.dma_block,
                    &y.b.dma_block,
                ))
        });
        self.waits
            .sort_by_key(|w| (w.fidx, w.position, w.dma_block.clone(), w.index));
        self.undecided
            .sort_by(|x, y| (x.fidx, x.position, &x.reason).cmp(&(y.fidx, y.position, &y.reason)));
        self.undecided.dedup();
    }
}

/// The graph of a built function ordered: its waits bound and credited,
/// the cycles broken, and which waiters can never run.
pub struct Ordered {
    /// Per wait: its status and the update that satisfies it.
    pub statuses: Vec<(Status, Option<u32>)>,
    pub blocked: Vec<bool>,
    /// Sites of the waits whose edges closed a cycle through another wait.
    pub cycle_sites: Vec<u32>,
    pub two_streams: Vec<(i64, u32)>,
    pub groupless: Vec<u32>,
}

/// Bind the waits of `b`, credit the satisfied ones as edges and order the
/// graph (its clocks and frontiers built).
pub fn order(b: &mut Built<'_>) -> Result<Ordered> {
    let names = std::mem::take(&mut b.names);
    let resolved = b.sems.resolve(&|n| names.contains(n));
    b.names = names;
    let mut statuses: Vec<(Status, Option<u32>)> = resolved.waits;
    let mut edges = Vec::new();
    for (i, &(st, u)) in statuses.iter().enumerate() {
        if let (Some(u), false) = (u, st == Status::Unknown) {
            edges.push((b.sems.updates[u as usize].node, b.sems.waits[i].waiter, i as u32));
        }
    }
    let cyclic = b.graph.finish(edges)?;
    let mut blocked = vec![false; b.graph.len()];
    let mut cycle_sites: Vec<u32> = Vec::new();
    for &(s, d, wi) in &cyclic {
        statuses[wi as usize] = (Status::Deadlock, None);
        if s != d {
            cycle_sites.push(b.sems.waits[wi as usize].site);
        }
    }
    for (i, &(st, u)) in statuses.iter().enumerate() {
        if u.is_none() && matches!(st, Status::Deadlock | Status::NoUpdate) {
            blocked[b.sems.waits[i].waiter as usize] = true;
        }
    }
    for &(s, issue) in &b.block_starts {
        if blocked[issue as usize] {
            blocked[s as usize] = true;
        }
    }
    Ok(Ordered {
        statuses,
        blocked,
        cycle_sites,
        two_streams: resolved.two_streams,
        groupless: resolved.groupless,
    })
}

/// Check one built function and add its findings to `out`.
pub fn check_function(mut b: Built<'_>, fidx: usize, out: &mut EngineReport) -> Result<()> {
    let function = b.function.name.clone();
    let phases = super::Phases::start();
    let Ordered {
        statuses,
        blocked,
        cycle_sites,
        two_streams,
        groupless,
    } = order(&mut b)?;
    phases.lap(format_args!("order ({} nodes)", b.graph.len()));
    let site = |s: u32| &b.sites[s as usize];
    let undecided = |reason: String, s: u32| Undecided {
        function: function.clone(),
        reason,
        instruction: site(s).instruction.clone(),
        position: site(s).position,
        fidx,
    };
    if cycle_sites.len() >= 2 {
        let names: Vec<String> = cycle_sites.iter().map(|&s| site(s).instruction.to_string()).collect();
        out.undecided.push(undecided(
            format!(
                "a cycle in the happens-before relation through the waits of {}: they can never be satisfied",
                names.join(", ")
            ),
            cycle_sites[0],
        ));
    }
    for &(id, u) in &two_streams {
        let up = &b.sems.updates[u as usize];
        let first = b.sems.updates.iter().find(|x| x.id == id).map_or(String::new(), |x| {
            format!("{} ({})", x.stream.describe(), b.sites[x.site as usize].instruction)
        });
        out.undecided.push(undecided(
            format!(
                "semaphore {id} is updated by two streams, {first} and {} ({}): its count has no order, so no wait on it is credited",
                up.stream.describe(),
                site(up.site).instruction
            ),
            up.site,
        ));
    }
    for &r in &groupless {
        let s = b.sems.resets[r as usize].site;
        out.undecided.push(undecided(
            format!(
                "{} resets semaphores without a sema_group: the counts after it are unknown, so no wait that depends on them is credited",
                site(s).instruction
            ),
            s,
        ));
    }
    for u in std::mem::take(&mut b.undecided) {
        out.undecided.push(undecided(u.reason, u.site));
    }
    for (i, &(st, _)) in statuses.iter().enumerate() {
        if matches!(st, Status::Ok | Status::Unknown) {
            continue;
        }
        let w = &b.sems.waits[i];
        let s = site(w.site);
        out.waits.push(WaitEntry {
            function: function.clone(),
            instruction: s.instruction.clone(),
            position: s.position,
            dma_block: s.dma_block.clone(),
            from: w.from.clone(),
            id: w.id,
            wait_value: w.wait_value,
            status: st.name(),
            fidx,
            index: i,
        });
    }
    // The accesses of instances that can run.
    let accs: Vec<Acc> = b.accs.iter().copied().filter(|a| !blocked[a.start as usize]).collect();
    let sites_pos = |s: u32| b.sites[s as usize].position;
    let spaces = &b.places.spaces;
    let found = sweep::sweep(&accs, &b.feet, spaces, &b.graph, &sites_pos);
    phases.lap(format_args!("sweep of {} accesses", accs.len()));
    let mut by_node: HashMap<u32, Vec<&UpdateEv>> = HashMap::new();
    for u in &b.sems.updates {
        by_node.entry(u.node).or_default().push(u);
    }
    let next_id = b.sems.updates.iter().map(|u| u.id).max().map_or(0, |m| m + 1);
    for (&(sa, sb, la, lb), hit) in &found.races {
        let xa = &accs[hit.accs[0] as usize];
        let fa = &b.feet[xa.foot as usize];
        let space = &spaces[fa.space as usize];
        let loc_a = &b.places.locs[la as usize];
        let loc_b = &b.places.locs[lb as usize];
        let location = RaceLocation {
            space: space.name.clone(),
            name: Arc::from(loc_a.name),
            other: (la != lb).then(|| Arc::from(loc_b.name)),
            bank: match space.key {
                SpaceKey::Psum { bank } => Some(bank),
                _ => None,
            },
            addr_space: match &space.key {
                SpaceKey::Dram { addr_space } => Some(addr_space.clone()),
                _ => None,
            },
        };
        let a = Side::of_site(&function, site(sa));
        let bs = Side::of_site(&function, site(sb));
        let fix = fix_line(&a, &bs, by_node.get(&xa.end).map(Vec::as_slice).unwrap_or(&[]), next_id);
        out.races.push(EngineRace {
            kind: hit.kind.name(),
            a,
            b: bs,
            location,
            witness: sweep::coord(hit.point, space.on_chip),
            fix,
            fidx,
        });
    }
    let mut uncertain: Vec<(&(u32, u32), &[u32; 2])> = found.uncertain.iter().collect();
    uncertain.sort();
    for (&(su, so), pair) in uncertain {
        let why = b.why[accs[pair[0] as usize].foot as usize].map_or("its footprint is not known", |w| w.describe());
        let other = site(so);
        out.undecided.push(undecided(
            format!(
                "{} may touch the bytes of {} (position {}), and nothing orders them: {why}",
                site(su).instruction,
                other.instruction,
                other.position
            ),
            su,
        ));
    }
    out.unchecked += unchecked::count(&b.regions, &accs, &b.feet, &b.sites);
    Ok(())
}

/// The wait that would order `a` before `b`.
pub fn fix_line(a: &Side, b: &Side, updates: &[&UpdateEv], next_id: i64) -> String {
    let target = match &b.dma_block {
        Some(blk) => format!("{} (the trigger of DMABlock {blk})", b.instruction),
        None => b.instruction.to_string(),
    };
    match updates.first() {
        Some(u) => format!(
            "make {target} wait for {}: add {{\"from\": \"{}\", \"id\": {}, \"wait_value\": {}}} to its sync_info.on_wait",
            a.label(),
            u.name,
            u.id,
            u.count
        ),
        None => format!(
            "{} updates no semaphore when it completes: give it an on_update (e.g. {{\"id\": {next_id}, \"update_value\": 1}}, a semaphore only its {} updates) and make {target} wait for that count",
            a.label(),
            match (&a.dma_block, &a.queue) {
                (Some(_), Some(q)) | (None, Some(q)) => format!("queue {q}"),
                _ => format!("engine {}", a.engine),
            }
        ),
    }
}
