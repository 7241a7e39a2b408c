//! The pelican expression algebra (seed 003, neuronx-facts §1–2, contract §2).
//!
//! - `kinds`: ExprKind codes and node payloads
//! - `context`: the per-module arena, hash-consing interner and factories
//! - `key`: a node's index hash and content digest, for every kind
//! - `transfer`: moving nodes between contexts (loader chunks, the linker)
//! - `eval`: evaluation with undecided results, `update_shard_id`
//! - `legality`: `is_legal_delinearized_address`
//! - `predicate`: AffinePredicate and `eval_mask`
//! - `wire`: JSON v1/v2 read and write

pub mod batch;
pub mod context;
pub mod display;
pub mod eval;
pub mod free_vars;
mod index;
mod key;
pub mod kinds;
pub mod legality;
mod order;
pub mod predicate;
pub mod transfer;
pub mod wire;

pub use batch::{NO_ID, OP_ARG};
pub use context::{Axis, Context, MAX_DEPTH};
pub use eval::Bindings;
pub use free_vars::FreeVars;
pub use kinds::{AxisId, CmpOp, ExprId, ExprKind, Node, RegId};
pub use predicate::{eval_mask, eval_mask_batch, AffinePredicate};
pub use transfer::Appended;
pub use wire::{Built, ContextScope, ExprFields, FreeScope, Scope, Tag, Wire};

#[cfg(test)]
mod tests;
