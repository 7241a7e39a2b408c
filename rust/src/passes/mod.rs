//! The split passes (contract §3), each in the file named after it:
//! `birverifier` (3, 13), `lnc_verifier` (4, 14), `expand_replication` (7),
//! `lnc_splitter` (8), with `carried_shards` (ShardIds in unmodelled fields);
//! `bir_linker` (the linked program, contract §3.7); the LNC tail:
//! `lower_local_collectives` (80), `extend_shared_lifetimes` (81), with
//! `core_barriers` (renumbering) and `core_list` (the `cores` argument, 9006);
//! `memory_clear`, the quick proof that the memory checks (15, 90) find nothing;
//! `racecheck_symbolic`, one race proof for every N on the symbolic module.

pub mod bir_linker;
pub mod birverifier;
pub mod core_barriers;
pub mod enginecheck;
pub mod expand_replication;
pub mod extend_shared_lifetimes;
pub mod lnc_barriercheck;
pub mod lnc_splitter;
pub mod lnc_verifier;
pub mod lower_local_collectives;
pub mod memory_clear;
pub mod racecheck_symbolic;

#[cfg(test)]
pub(crate) mod tail_testkit;
#[cfg(test)]
mod tests;
