#![recursion_limit = "512"]
//! lncsplit core: the pelican expression algebra, the BIR module model and the
//! multi-core (LNC) split passes. Nothing in this crate outside `py/` knows about
//! Python; `cargo test` exercises it without an interpreter.

pub mod analysis;
pub mod bir;
pub mod error;
pub mod gen;
pub mod passes;
pub mod pelican;
pub mod sim;
mod simd;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};
