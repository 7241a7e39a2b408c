//! Numbers, not only hashes (contract §3.8, 2026-12-02): the values of the
//! compute instructions whose keys name known operations.
//!
//! - `dtype`: encodings, exact decoding, the conversion rule, canonical NaNs
//! - `exact`: exact (fixed-point) sums rounded once — order-independent accumulates
//! - `alu`: the op vocabulary (AluOp names, NKI aliases) and each op's meaning
//! - `func`: activation functions (libm: float32 functions where they keep the bound, else float64 rounded once)
//! - `spec`: which instructions compute, read from their keys (else opaque)
//! - `plan`: an instance checked against counts, dtypes and engine limits (9401)
//! - `kernel`: the hot loops over gathered runs, one vectorized loop per op
//!
//! docs/sim.md ("Numbers") has the semantics table and the accuracy per func.

pub mod alu;
pub mod dtype;
pub mod exact;
pub mod func;
pub mod kernel;
pub mod plan;
pub mod spec;
