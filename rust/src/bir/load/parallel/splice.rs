//! Splicing: a big array's chunks into the module being read from the
//! skeleton — each chunk's context absorbed (as soon as the chunk is read),
//! its shard-id and register notes replayed, its instructions moved into
//! place with their ids remapped.

use std::mem::MaybeUninit;
use std::sync::Arc;

use rayon::prelude::*;
use serde::de;

use super::handover::Board;
use crate::bir::instruction::Instruction;
use crate::bir::load::seed::DeResult;
use crate::bir::load::State;
use crate::pelican::{AxisId, ExprId};

/// The chunks of every big array, spliced in as the skeleton is read.
pub(in crate::bir::load) struct Splices {
    pub(super) board: Arc<Board>,
    /// Each array's chunks (their sequence numbers), in order.
    pub(super) arrays: Vec<Vec<usize>>,
    /// The array the skeleton must name next.
    pub(super) next: usize,
    /// The spliced arrays (the address of their instructions) and their
    /// instructions' [`name_hashes`].
    pub(super) hashed: Vec<(usize, Vec<u64>)>,
    /// The spelling the chunks were read in (the scan's).
    pub(super) spelling: crate::bir::schema::Spelling,
}

/// Splice big array `k` in: absorb each chunk's context (as soon as the
/// chunk is read), replay its notes, move its instructions into place with
/// their ids remapped.
impl State {
    /// [`splice`]: called by the grammar (`instruction.rs`) through the
    /// state, so the grammar does not import the parallel loader.
    pub(in crate::bir::load) fn splice<E: de::Error>(&mut self, k: u64) -> DeResult<Vec<Instruction>, E> {
        splice(self, k)
    }
}

fn splice<E: de::Error>(st: &mut State, k: u64) -> DeResult<Vec<Instruction>, E> {
    let Some(sp) = st.splices.as_mut() else {
        return Err(st.bir("internal: no big array to splice"));
    };
    if usize::try_from(k).ok() != Some(sp.next) || sp.next >= sp.arrays.len() {
        return Err(st.bir("internal: big arrays out of order"));
    }
    if st.spelling != Some(sp.spelling) {
        // The skeleton read decided otherwise: the serial read reports why.
        return Err(st.bir("internal: the chunks were read in the other spelling"));
    }
    let Some(sp) = st.splices.as_mut() else {
        return Err(st.bir("internal: no big array to splice"));
    };
    let seqs = std::mem::take(&mut sp.arrays[sp.next]);
    sp.next += 1;
    let board = sp.board.clone();
    // In order: each chunk's context, then its notes.
    let mut parts = Vec::with_capacity(seqs.len());
    let mut hashes = Vec::new();
    for seq in seqs {
        let Some(c) = board.take(seq) else {
            return Err(st.bir("internal: a chunk was not read"));
        };
        st.ctx.reserve(c.ctx.len());
        let map = match st.ctx.absorb(&c.ctx) {
            Ok(m) => m,
            Err(e) => return Err(st.fail(e)),
        };
        drop(c.ctx);
        for ub in c.shards {
            if !st.shards.contains(&ub) {
                st.shards.push(ub);
            }
        }
        for r in c.registers {
            note_register(st, r)?;
        }
        parts.push((c.insts, map));
        hashes.extend(c.hashes);
    }
    let out = place(parts, board.all_delivered());
    if let Some(sp) = st.splices.as_mut() {
        sp.hashed.push((out.as_ptr().addr(), hashes));
    }
    Ok(out)
}

/// What [`Context::absorb`] returns: the chunk's expression ids in the
/// module's context, and the offset of its axes.
type IdMap = (Vec<u32>, u32);

/// The instructions of an array's chunks, in order, their ids remapped
/// (`maps`: [`Context::absorb`]'s). With `parallel` (the pool is free) every
/// chunk moves its own instructions into its part of the array, so the
/// array's fresh pages are touched on every core.
fn place(chunks: Vec<(Vec<Instruction>, IdMap)>, parallel: bool) -> Vec<Instruction> {
    let total = chunks.iter().map(|c| c.0.len()).sum();
    let mut out: Vec<Instruction> = Vec::with_capacity(total);
    let mut free = &mut out.spare_capacity_mut()[..total];
    let mut jobs = Vec::with_capacity(chunks.len());
    for (insts, map) in chunks {
        let (part, rest) = std::mem::take(&mut free).split_at_mut(insts.len());
        free = rest;
        jobs.push((insts, map, part));
    }
    type Job<'a> = (Vec<Instruction>, IdMap, &'a mut [MaybeUninit<Instruction>]);
    let fill = |(insts, (table, aoff), part): Job<'_>| {
        let identity = aoff == 0 && table.iter().enumerate().all(|(i, &t)| i as u32 == t);
        let e = |x: ExprId| ExprId(table.get(x.index()).copied().unwrap_or(u32::MAX));
        let a = |x: AxisId| AxisId(x.0.wrapping_add(aoff));
        for (slot, mut i) in part.iter_mut().zip(insts) {
            if !identity {
                i.remap_ids(&e, &a);
            }
            slot.write(i);
        }
    };
    if parallel {
        jobs.into_par_iter().for_each(fill);
    } else {
        jobs.into_iter().for_each(fill);
    }
    // SAFETY: the parts tile `out`'s first `total` slots (consecutive,
    // each as long as its chunk's instructions) and every slot of every
    // part was written above; a panic there would skip this line and only
    // leak the instructions written.
    unsafe { out.set_len(total) };
    out
}

/// A register a chunk's expression named, as the serial read would have
/// checked it (`LoadScope::register`).
fn note_register<E: de::Error>(st: &mut State, r: Arc<str>) -> DeResult<(), E> {
    match &st.registers {
        Some(regs) if regs.contains(&r) => Ok(()),
        Some(_) => Err(st.bir("internal: a register the function lacks")),
        None => {
            if !st.pending_registers.contains(&r) {
                st.pending_registers.push(r);
            }
            Ok(())
        }
    }
}
