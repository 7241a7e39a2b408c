#![recursion_limit = "512"]
//! lncsplit core: the pelican expression algebra, the BIR module model and the
//! multi-core (LNC) split passes. Nothing in this crate outside `py/` knows about
//! Python; `cargo test` exercises it without an interpreter.

pub mod error;
pub mod pelican;
pub mod bir;
pub mod passes;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};

/// Module splitting is allocation-bound (millions of small vectors and
/// strings per clone); mimalloc is markedly faster than glibc malloc here and
/// scales across the rayon threads that concretize cores in parallel.
#[cfg(feature = "python")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
