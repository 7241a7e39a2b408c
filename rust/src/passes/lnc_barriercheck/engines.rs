//! The cross-core check on a core with `sync_info` (contract §3.10's last
//! rule): a CoreBarrier orders an access of its core before or after it only
//! when the engine relation of that core orders them so.
//!
//! Without `sync_info` every instruction completes before the next starts,
//! so an access after g barriers (in execution order) is after exactly those
//! and before every later one: its band is one epoch. With `sync_info` the
//! engines run concurrently: an access is *after* the barriers whose issue
//! happens before its start, and *before* the barriers its end (a DMA's
//! completion) happens before. This module builds enginecheck's relation for
//! one core's function and gives every access instance the pair
//! `(after, before)` in the core's counted barrier instances: `after` = how
//! many of them happen before its start, `before` = the first one its end
//! happens before (the count when none) — `after == before` is one epoch,
//! `after < before` a band over several.
//!
//! Reading the two as a prefix and a suffix needs the core's counted
//! barriers to be ordered among themselves (each happens before the next).
//! When they are not, or when cross-core order may come from what lncsplit
//! does not model (semaphores of other cores, `remote_semaphores`; a
//! function with `sync_info` and no CoreBarrier, whose barriers may have been
//! lowered into semaphores), the core's races are not reported as races but
//! as `RaceReport.undecided` with the reason, never as ok.

use std::sync::Arc;

use crate::bir::queues::Queues;
use crate::bir::{Function, Module};
use crate::error::Result;
use crate::passes::enginecheck::build::{self, Built};
use crate::passes::enginecheck::report;
use crate::passes::enginecheck::sync_keys::{self, DmaBlock};

/// The engine order of one core's function, for the cross-core bands.
pub(super) struct CoreOrder<'q> {
    built: Built<'q>,
    /// Nodes of the counted barrier instances (mask true), execution order.
    counted: Vec<u32>,
    /// Why this core's order across cores cannot be trusted, if so.
    pub unmodelled: Option<String>,
    /// The barriers are not ordered among themselves: every band is wide.
    wide: bool,
}

impl<'q> CoreOrder<'q> {
    /// The order of function `fidx` of `m` on core `core`, when `m` uses
    /// semaphores (None: every CoreBarrier fences every engine, as before);
    /// `queues` are `m`'s DMA queues (`sync_keys::dma_queues`).
    pub fn of(
        m: &'q Module,
        fidx: usize,
        core: usize,
        queues: &'q [DmaBlock],
        sync: bool,
    ) -> Result<Option<CoreOrder<'q>>> {
        if !sync {
            return Ok(None);
        }
        let f = &m.functions[fidx];
        let mut built = build::build(m, fidx, queues, true)?;
        report::order(&mut built)?;
        let counted: Vec<u32> = built.barriers.iter().filter(|b| b.1).map(|b| b.0).collect();
        let mut unmodelled = None;
        let wide = counted.windows(2).position(|w| !built.graph.reaches(w[0], w[1]));
        if let Some(k) = wide {
            unmodelled.get_or_insert_with(|| {
                format!(
                    "on core {core}, function {}, counted CoreBarrier instances {k} and {} are not ordered by the engine relation (no program order, ALL instruction or semaphore wait between them): no access of the core is credited as before or after a barrier",
                    f.name,
                    k + 1
                )
            });
        }
        if built.barriers.is_empty() && unmodelled.is_none() {
            unmodelled = Some(format!(
                "core {core} has sync_info and no CoreBarrier in function {}: its cross-core order may have been lowered into semaphores, which lncsplit does not model",
                f.name
            ));
        }
        Ok(Some(CoreOrder {
            built,
            counted,
            unmodelled,
            wide: wide.is_some(),
        }))
    }

    /// `(after, before)` of instance `k` (walk order) of position `pos`.
    pub fn band(&self, pos: u32, k: u32) -> (u32, u32) {
        let total = self.counted.len() as u32;
        let nodes = self.built.instances.get(pos as usize).and_then(|v| v.get(k as usize));
        let (Some(&(start, end)), false) = (nodes, self.wide) else {
            return (0, total);
        };
        let g = &self.built.graph;
        let after = self.counted.partition_point(|&b| g.reaches(b, start)) as u32;
        let before = self.counted.partition_point(|&b| !g.reaches(end, b)) as u32;
        (after, before.max(after))
    }
}

/// What the cross-core check reads of one core's module once, for all its
/// functions: its `queues` (one read, shared by the DMA-trigger accesses
/// and the engine order), their DMA blocks, and whether the module uses
/// semaphores at all (contract §3.10).
pub(super) struct CoreSync {
    pub queues: Option<Arc<Queues>>,
    pub blocks: Vec<DmaBlock>,
    pub sync: bool,
}

impl CoreSync {
    pub fn of(m: &Module) -> Result<CoreSync> {
        let queues = Queues::of_module(m)?.map(Arc::new);
        let blocks = match &queues {
            Some(q) => sync_keys::dma_queues_of(q)?,
            None => Vec::new(),
        };
        let sync = build::module_has_sync(m, &blocks);
        Ok(CoreSync { queues, blocks, sync })
    }
}

/// The first instruction of `f` whose `sync_info` names another core's
/// semaphores or notifies another core, in words (with or without any other
/// `sync_info`: such order is never credited).
pub(super) fn remote(f: &Function, core: usize) -> Option<String> {
    let mut found = None;
    f.walk(&mut |inst| {
        if found.is_none() && inst.extra.is_some() {
            if let Some(k) = sync_keys::remote_sync(inst) {
                found = Some(format!(
                    "on core {core}, {} in function {} carries {k}: cross-core order through another core's semaphores is not modelled by lncsplit",
                    inst.name, f.name
                ));
            }
        }
    });
    found
}
