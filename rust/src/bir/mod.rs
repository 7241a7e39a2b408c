//! The BIR module model (contract §1): a module owns its functions, memory,
//! blocks and instructions, and the pelican [`Context`](crate::pelican::Context)
//! their expressions live in.
//!
//! - `module`: Module, Function; `memory`: memory location sets and locations;
//!   `instruction`: blocks, instructions, op-specific fields; `argument`: arguments
//! - `load` / `dump`: BIR-JSON read (with JSON paths in errors) and write
//! - `clone`: the structural clone and the JSON round-trip clone

use std::sync::Arc;

pub mod arch;
pub mod argument;
pub mod carried;
pub mod clone;
pub mod describe;
pub mod dtype;
pub mod dump;
pub mod instruction;
pub mod load;
pub mod memory;
pub mod module;
pub mod names;
pub mod opcode;
pub mod queues;
pub mod schema;
pub mod seen;

/// Unknown keys of one object, kept verbatim in input order (None when there
/// are none, so the common case costs nothing to clone).
pub type Extra = Option<Arc<serde_json::Map<String, serde_json::Value>>>;

pub use arch::Arch;
pub use argument::{Addrs, Ap, ApPair, Argument, PhysicalAp, SymbolicAp};
pub use dump::{dump_module, write_module, Form};
pub use instruction::{Block, Dependency, Instruction, IntOrExpr, OpFields};
pub use load::module_from_value;

/// Parse a module from BIR-JSON bytes ([`load::load`] with its defaults).
pub fn load_module(bytes: &[u8]) -> crate::error::Result<Module> {
    load::load(bytes, load::LoadOptions::default())
}

/// [`load_module`], reading instruction arrays of at least `min_elements`
/// elements in parallel, and which way the load went (tests, benchmarks).
pub fn load_module_traced(bytes: &[u8], min_elements: usize) -> (crate::error::Result<Module>, load::LoadPath) {
    load::load_traced(bytes, min_elements)
}

/// [`load_module`] of text.
pub fn load_module_str(text: &str) -> crate::error::Result<Module> {
    load::load_str(text, load::LoadOptions::default())
}
pub use memory::{MemoryLocation, MemoryLocationSet, RemoteLocalTarget};
pub use module::{Function, Module, NEURON_CORE_ID};
pub use opcode::Opcode;
pub use schema::Spelling;

#[cfg(test)]
mod spelling_tests;
#[cfg(test)]
mod tests;
