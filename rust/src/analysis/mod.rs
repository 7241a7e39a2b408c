//! The LNC tail (contract §3.6): what the N per-core programs touch together.
//!
//! - `footprint`: the exact bytes an access pattern touches (progressions in AP
//!   order, run sets, exact intersection)
//! - `location`: which physical memory an access reaches (private, shared,
//!   proxy, GPSIMDSB2SB partner)
//! - `access`: the accesses of one instruction instance, per argument and location
//! - `walk`: the dynamic order of instruction instances (loops unrolled, masks)
//! - `ranges`: an expression's `[lo, hi]` over its index ranges (both footprint checks' fast path)
//! - `moved`: bytes per partition an instruction moves (the GPSIMDSB2SB gate)
//! - `replica_groups`: a collective's replica groups, every form expanded
//! - `lnc_barriercheck`: the race checker (`racecheck`: bands, sweep, witnesses)

pub mod access;
pub mod cores;
pub mod footprint;
pub mod location;
pub mod moved;
pub mod ranges;
pub mod replica_groups;
pub mod walk;

pub use access::{accumulate_op, AccOp, Access, ArgList, FunctionIndex, Role, SetEntry};
pub use footprint::{FootprintError, Layout, Progression, RunSet};
pub use location::{Cores, PhysLoc, Reach, Resolved};
pub use walk::{
    prune_table, static_instances, walk_function, walk_function_pruned, Instance, Limit, Mask, Prune, Skip, WalkCursor,
};

#[cfg(test)]
mod tests;
