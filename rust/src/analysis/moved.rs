//! Bytes per partition an instruction moves (contract §3.4): the largest
//! number of footprint bytes (§3.6) in any one partition over its `ins[0]`
//! and `outs[0]`, over every instance — not the size of the sets it names.
//! The memory model's GPSIMDSB2SB gate (≤ 1024 bytes per partition) reads it.

use std::sync::Arc;

use hashbrown::HashMap;

use super::access::{Access, ArgList, FunctionIndex};
use super::walk::{prune_table, walk_function_pruned, Instance, Limit};
use crate::bir::{Function, Opcode};
use crate::error::Result;
use crate::pelican::Context;

pub use super::walk::MAX_INSTANCES;

/// One argument (`ins[0]` or `outs[0]`) of one instruction and the most bytes
/// it touches in one partition of one location of its set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub instruction: Arc<str>,
    pub list: ArgList,
    pub set: Arc<str>,
    pub bytes: i64,
}

/// Bytes per partition of one access: its run set's fullest partition (the
/// whole partition when its address is undecided).
fn bytes_of(a: &Access<'_>) -> Option<i64> {
    let layout = a.loc().layout.as_ref().ok()?;
    let pb = layout.partition_bytes();
    match &a.points {
        None => Some(pb),
        Some(p) => Some(p.run_set(layout.esize).ok()?.max_bytes_per_window(pb)),
    }
}

/// [`Moved`] for every `ins[0]` / `outs[0]` of the instructions of `opcodes`
/// in `function`, in first-seen order, maximized over instances and
/// locations. An access whose footprint is invalid is left out (the race
/// checker reports it, 9302); the walk stops with 9306 past 10⁸ instances.
pub fn bytes_per_partition_moved(ctx: &Context, function: &Function, opcodes: &[Opcode]) -> Result<Vec<Moved>> {
    let skip = prune_table(ctx, function, &mut |i| opcodes.contains(&i.opcode));
    let index = FunctionIndex::new(function);
    let mut out: Vec<Moved> = Vec::new();
    let mut seen: HashMap<(u32, ArgList), usize> = HashMap::new();
    let mut scratch = Vec::new();
    let limit = Limit {
        max: MAX_INSTANCES,
        code: 9306,
        location: "lncsplit/memory",
    };
    let prune = |_: &crate::bir::Instruction, pos: u32| skip.get(pos as usize).copied().flatten();
    walk_function_pruned(ctx, function, None, limit, &prune, &mut |at: &Instance<'_, '_>| {
        if !opcodes.contains(&at.inst.opcode) {
            return Ok(());
        }
        scratch.clear();
        if index.accesses(ctx, at.inst, at.bindings, 9302, &mut scratch).is_err() {
            return Ok(());
        }
        for a in scratch
            .iter()
            .filter(|a| a.index == 0 && a.list != ArgList::IndirectionIns)
        {
            let Some(bytes) = bytes_of(a) else {
                continue;
            };
            let k = *seen.entry((at.pos, a.list)).or_insert_with(|| {
                out.push(Moved {
                    instruction: at.inst.name.clone(),
                    list: a.list,
                    set: a.set.set.name.clone(),
                    bytes: 0,
                });
                out.len() - 1
            });
            out[k].bytes = out[k].bytes.max(bytes);
        }
        Ok(())
    })?;
    Ok(out)
}
