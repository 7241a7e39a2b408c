//! Where the parallel loader's jobs hand their results to the thread that
//! reads the skeleton: the pre-scan's plan, then each chunk as soon as it
//! is read, so the reader can absorb the chunks of the first arrays while
//! the pool still reads the later ones.
//!
//! Every hand-over happens exactly once, also when a job fails or panics
//! (its guard hands over a failure as it unwinds): the reader never waits
//! for a result that cannot come. A poisoned lock reads as a failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use std::sync::Arc;

use super::plan::Plan;
use crate::bir::instruction::Instruction;
use crate::pelican::Context;

/// One chunk of a big array, read on its own.
pub(super) struct Chunk {
    pub(super) insts: Vec<Instruction>,
    pub(super) ctx: Context,
    pub(super) shards: Vec<i64>,
    /// Register names the chunk's expressions used.
    pub(super) registers: Vec<Arc<str>>,
    /// The [`name_hashes`] of its instructions (pass 2 inserts them without
    /// hashing again on the reading thread).
    pub(super) hashes: Vec<u64>,
}

/// What the jobs handed over so far.
#[derive(Default)]
struct Progress {
    /// The scan's outcome once it ended (`Some(None)`: no plan).
    plan: Option<Option<Plan>>,
    /// Per chunk, in the order the scan found them: its array, and the
    /// chunk once read (`Some(None)`: its read failed), until taken.
    chunks: Vec<(usize, Option<Option<Chunk>>)>,
    /// Chunks handed over (read or failed).
    delivered: usize,
}

#[derive(Default)]
pub(super) struct Board {
    progress: Mutex<Progress>,
    changed: Condvar,
    /// Set when the result can no longer be used: chunks not started yet
    /// are not read.
    cancelled: AtomicBool,
}

impl Board {
    /// Wait until `ready` finds what it needs (None on a poisoned lock).
    /// Only for what a job hands over for sure (see the guards).
    fn wait<T>(&self, mut ready: impl FnMut(&mut Progress) -> Option<T>) -> Option<T> {
        let mut p = self.progress.lock().ok()?;
        loop {
            if let Some(t) = ready(&mut p) {
                return Some(t);
            }
            p = self.changed.wait(p).ok()?;
        }
    }

    fn update(&self, f: impl FnOnce(&mut Progress)) {
        if let Ok(mut p) = self.progress.lock() {
            f(&mut p);
        }
        self.changed.notify_all();
    }

    /// A chunk of array `array` was found: its sequence number.
    pub(super) fn register(&self, array: usize) -> usize {
        let mut seq = usize::MAX;
        self.update(|p| {
            seq = p.chunks.len();
            p.chunks.push((array, None));
        });
        seq
    }

    pub(super) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// The scan's plan once it ended: `Some(None)` when it found none, None
    /// when the board is broken.
    pub(super) fn plan(&self) -> Option<Option<Plan>> {
        self.wait(|p| p.plan.take())
    }

    /// The sequence numbers of each array's chunks, in order (the scan has
    /// ended: no chunk comes after it).
    pub(super) fn arrays(&self, n: usize) -> Option<Vec<Vec<usize>>> {
        let p = self.progress.lock().ok()?;
        let mut arrays = vec![Vec::new(); n];
        for (seq, (k, _)) in p.chunks.iter().enumerate() {
            arrays.get_mut(*k)?.push(seq);
        }
        Some(arrays)
    }

    /// Chunk `seq` once read (None: its read failed, or the board is broken).
    pub(super) fn take(&self, seq: usize) -> Option<Chunk> {
        self.wait(|p| match p.chunks.get_mut(seq) {
            Some((_, slot)) => slot.take(),
            None => Some(None),
        })
        .flatten()
    }

    /// Whether every chunk found has been handed over (the pool is free).
    pub(super) fn all_delivered(&self) -> bool {
        self.progress.lock().is_ok_and(|p| p.delivered == p.chunks.len())
    }
}

/// Hands the scan's plan over when dropped: `Some(plan)` once set, else
/// no plan (the scan gave up or panicked).
pub(super) struct PlanGuard<'b> {
    pub(super) board: &'b Board,
    pub(super) plan: Option<Plan>,
}

impl Drop for PlanGuard<'_> {
    fn drop(&mut self) {
        let plan = self.plan.take();
        if plan.is_none() {
            self.board.cancel();
        }
        self.board.update(|p| p.plan = Some(plan));
    }
}

/// Hands chunk `seq` over when dropped: the chunk once set, else a failure
/// (its read failed or panicked).
pub(super) struct ChunkGuard<'b> {
    pub(super) board: &'b Board,
    pub(super) seq: usize,
    pub(super) chunk: Option<Chunk>,
}

impl Drop for ChunkGuard<'_> {
    fn drop(&mut self) {
        let chunk = self.chunk.take();
        let seq = self.seq;
        self.board.update(|p| {
            if let Some((_, slot)) = p.chunks.get_mut(seq) {
                *slot = Some(chunk);
                p.delivered += 1;
            }
        });
    }
}
