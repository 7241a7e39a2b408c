//! enginecheck (contract §3.10): inside one NeuronCore, do the engines and
//! the DMA queues race?
//!
//! A core runs its engines (PE, Activation, DVE, Pool, SP) and its DMA queues
//! concurrently, ordered only by program order per engine, `ALL`
//! instructions and semaphores (`sync_info`). The check, per function:
//!
//! 1. **Read** ([`build`]): every instruction's carried keys ([`sync_keys`],
//!    the one reader of `sync_info`, `queue`, `dma_blocks`, `sema_group`,
//!    and the module's `queues`; malformed ones are a `BirJsonError`
//!    at their path) and its *physical* footprints ([`physical`]): where on
//!    the core the bytes are, so two locations the allocator placed over the
//!    same bytes conflict.
//! 2. **Walk**: each instance (static Loops unrolled) becomes nodes of the
//!    happens-before graph ([`graph`]) — engine chains, `ALL` nodes, DMA
//!    issue and completion, queues — and semaphore events.
//! 3. **Semaphores** ([`semaphores`]): each wait is bound to the first update
//!    that reaches its value; the satisfied ones become edges; statuses
//!    `early`, `deadlock`, `no-update`; undecided counts.
//! 4. **Clocks**: vector clocks over the engine chains and, for free nodes,
//!    the first chain nodes they reach: "a before b" in O(engines).
//! 5. **Sweep** ([`sweep`]): accesses in topological order against the
//!    accesses still in flight that may overlap them.
//! 6. **Report**: races (least witness per pair of instructions and
//!    locations, with the wait that would fix them), non-ok waits,
//!    undecided findings, and the pairs back-edges leave unchecked
//!    ([`unchecked`]).
//!
//! A module without any `sync_info` runs every instruction to completion
//! before the next: nothing races, its footprints are still checked.
//! Invalid input raises: 9601 (a symbolic module), 9602 (a linked one), 9302
//! (a footprint outside its location), 9306 (more than 10⁸ instances, or past
//! the check's resource limits), `BirJsonError` (malformed carried keys).

pub mod build;
pub mod graph;
pub mod physical;
pub mod report;
pub mod semaphores;
pub mod sweep;
pub mod sync_keys;
mod unchecked;
pub mod why;

#[cfg(test)]
mod tests;

use serde_json::{json, Value};

use crate::bir::module::{is_linked, Module};
use crate::error::{Error, Result};
use crate::passes::birverifier;

pub use report::{EngineRace, EngineReport, RaceLocation, Side, Undecided, WaitEntry};

/// Where the check's errors point.
pub const WHERE: &str = "lncsplit/enginecheck";

/// Refuse what §3.10 does not check: a linked module (9602), a symbolic one (9601).
pub fn check_input(m: &Module) -> Result<()> {
    if is_linked(m) {
        return Err(Error::neuron_at(
            9602,
            "enginecheck takes one core: this is a linked module (made by link); unlink it and check each core",
            WHERE,
            format!("module {}", m.name),
        ));
    }
    if m.neuron_core_id().is_none() && birverifier::has_shard_anywhere(m) {
        return Err(Error::neuron_at(
            9601,
            "enginecheck takes one core: this module is symbolic (it has ShardIds); split it and check each core",
            WHERE,
            format!("module {}", m.name),
        ));
    }
    Ok(())
}

/// enginecheck of one core module (or an N = 1 module). Reports races and
/// statuses; raises only for invalid input.
pub fn enginecheck(m: &Module) -> Result<EngineReport> {
    let phases = Phases::start();
    let lap = |what: &str| phases.lap(what);
    check_input(m)?;
    lap("input checked");
    let queues = sync_keys::dma_queues(m)?;
    lap("queues read");
    let sync = build::module_has_sync(m, &queues);
    lap("sync read");
    let mut out = EngineReport::default();
    for fidx in 0..m.functions.len() {
        let built = build::build(m, fidx, &queues, sync)?;
        lap("build");
        if sync {
            report::check_function(built, fidx, &mut out)?;
            lap("check");
        }
    }
    out.sort();
    Ok(out)
}

/// `LNCSPLIT_ENGINE_TIMING=1`: each phase's end on stderr, since the clock
/// started (docs/performance.md); nothing, and no clock read, without it.
pub(crate) struct Phases(Option<std::time::Instant>);

impl Phases {
    pub fn start() -> Phases {
        Phases(std::env::var_os("LNCSPLIT_ENGINE_TIMING").map(|_| std::time::Instant::now()))
    }

    pub fn lap(&self, what: impl std::fmt::Display) {
        if let Some(c) = self.0 {
            eprintln!("enginecheck: {what} at {:?}", c.elapsed());
        }
    }
}

impl EngineReport {
    /// `.ok` ⇔ no race, no `deadlock` or `no-update` wait, nothing undecided.
    pub fn ok(&self) -> bool {
        self.races.is_empty()
            && self.undecided.is_empty()
            && self
                .waits
                .iter()
                .all(|w| w.status != "deadlock" && w.status != "no-update")
    }

    /// The report's JSON, exactly the keys of contract §3.10: `{"ok",
    /// "races": [{"kind", "a": {"instruction", "position", "engine"}, "b",
    /// "location": {"space", "name"}, "witness": {"partition", "byte"},
    /// "fix"}], "waits": [{"instruction", "position", "from", "id",
    /// "wait_value", "status"}], "undecided": [{"reason", "instruction",
    /// "position"}], "unchecked"}`.
    pub fn to_value(&self) -> Value {
        let side = |s: &Side| json!({"instruction": &*s.instruction, "position": s.position, "engine": &*s.engine});
        json!({
            "ok": self.ok(),
            "races": self.races.iter().map(|r| json!({
                "kind": r.kind,
                "a": side(&r.a),
                "b": side(&r.b),
                "location": {"space": &*r.location.space, "name": &*r.location.name},
                "witness": {"partition": r.witness.0, "byte": r.witness.1},
                "fix": r.fix,
            })).collect::<Vec<_>>(),
            "waits": self.waits.iter().map(|w| json!({
                "instruction": &*w.instruction,
                "position": w.position,
                "from": &*w.from,
                "id": w.id,
                "wait_value": w.wait_value,
                "status": w.status,
            })).collect::<Vec<_>>(),
            "undecided": self.undecided.iter().map(|u| json!({
                "reason": u.reason,
                "instruction": &*u.instruction,
                "position": u.position,
            })).collect::<Vec<_>>(),
            "unchecked": self.unchecked,
        })
    }

    /// [`to_value`](Self::to_value) with more per entry, for the Python layer
    /// (which prints exactly §3.10's keys from `to_json()`): each side's
    /// `function`, `queue` and `dma_block`; a location's `other` (b's, when
    /// the allocator placed two over one byte), `bank` and `addr_space`; a
    /// wait's and an undecided entry's `function` (and a wait's `dma_block`).
    pub fn to_detailed_value(&self) -> Value {
        json!({
            "ok": self.ok(),
            "races": self.races.iter().map(EngineRace::to_value).collect::<Vec<_>>(),
            "waits": self.waits.iter().map(WaitEntry::to_value).collect::<Vec<_>>(),
            "undecided": self.undecided.iter().map(Undecided::to_value).collect::<Vec<_>>(),
            "unchecked": self.unchecked,
        })
    }
}
