//! The split passes (contract §3), each in the file named after it:
//! `birverifier` (3, 13), `lnc_verifier` (4, 14), `expand_replication` (7),
//! `lnc_splitter` (8), with `carried_shards` (ShardIds in unmodelled fields);
//! `bir_linker` (the linked program, contract §3.7).

pub mod bir_linker;
pub mod birverifier;
pub mod carried_shards;
pub mod expand_replication;
pub mod lnc_splitter;
pub mod lnc_verifier;

#[cfg(test)]
mod tests;
