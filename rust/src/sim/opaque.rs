//! The opaque deterministic function (contract §3.8): every opcode the
//! simulator does not model (Activation, Matmult, TensorTensor, …) fills each
//! of its `outs` footprints from an 8-byte BLAKE2b of what it reads and what it
//! is, so translation validation sees *any* change of what an instruction
//! reads, where from, in which order, or with which static fields — without
//! modelling arithmetic.
//!
//! The hash input is a sequence of fields, each `u32 LE len(tag) ‖ tag ‖ u64 LE
//! len(value) ‖ value`, in this order:
//! 1. `opcode`: the opcode name;
//! 2. `op:<key>`: the op-specific keys other than addresses, ranks and
//!    `queue` (the Matmult replication keys, a DMACopy `mode`), as compact
//!    JSON of their value (an expression field evaluated under the instance's
//!    bindings);
//! 3. `key:<key>`: every unknown key of the instruction, in its order, as
//!    compact JSON;
//! 4. `imm`: every immediate argument of `ins`, in order, as compact JSON of
//!    its wire object;
//! 5. `in`: the bytes of every memory argument of `ins` and then of
//!    `indirection_ins`, each in AP order (its set's first location).
//!
//! The digest is BLAKE2b with an 8-byte output (Python:
//! `hashlib.blake2b(data, digest_size=8)`), read as a little-endian u64 `h`.
//! `outs[j]` (every location of its set) gets, in AP order, the bytes of the
//! SplitMix64 stream seeded with `h ^ ((j+1)·0x9E3779B97F4A7C15)`: each step
//! yields 8 little-endian bytes, element k takes bytes k·esize … of the
//! concatenation. The instruction's name, engine, predicates and dependencies
//! do not enter: identical inputs give identical bytes on every path.

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;
use serde_json::Value;

use super::memory::{Memory, Span};
use crate::bir::argument::Argument;
use crate::bir::dump::argument_to_value;
use crate::bir::instruction::{Instruction, IntOrExpr, OpFields};
use crate::error::Result;
use crate::pelican::{Bindings, Context};

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A BLAKE2b-8 hasher that has absorbed an instruction's static fields.
#[derive(Clone)]
pub struct Prefix(Blake2bVar);

impl Prefix {
    /// Absorb fields 1–4 of `inst` (its bindings decide expression fields).
    pub fn new(ctx: &Context, inst: &Instruction, bindings: &Bindings) -> Result<Prefix> {
        let mut h = Blake2bVar::new(8)
            .map_err(|_| crate::error::Error::neuron(9401, "BLAKE2b refused an 8-byte output", super::LOCATION))?;
        field(&mut h, "opcode", inst.opcode.name().as_bytes());
        for (key, value) in op_keys(ctx, inst, bindings)? {
            field(&mut h, &format!("op:{key}"), value.to_string().as_bytes());
        }
        if let Some(extra) = &inst.extra {
            for (key, value) in extra.iter() {
                field(&mut h, &format!("key:{key}"), value.to_string().as_bytes());
            }
        }
        for arg in &inst.ins {
            if is_immediate(arg) {
                let v = argument_to_value(ctx, arg, 2)?;
                field(&mut h, "imm", v.to_string().as_bytes());
            }
        }
        Ok(Prefix(h))
    }

    /// Absorb one `in` field: the bytes an argument reads, in AP order.
    pub fn input(&mut self, bytes: &[u8]) {
        field(&mut self.0, "in", bytes);
    }

    /// Absorb one `in` field straight from memory: the same bytes as
    /// [`Prefix::input`] of the span gathered, without the copy.
    pub fn input_span(&mut self, mem: &Memory, span: &Span) {
        let tag = "in";
        self.0.update(&(tag.len() as u32).to_le_bytes());
        self.0.update(tag.as_bytes());
        self.0.update(&(span.byte_len() as u64).to_le_bytes());
        mem.for_each_slice(span, |bytes| self.0.update(bytes));
    }

    pub fn finish(self) -> u64 {
        let mut out = [0u8; 8];
        // The output size was fixed at 8 when the hasher was made.
        let _ = self.0.finalize_variable(&mut out);
        u64::from_le_bytes(out)
    }
}

fn field(h: &mut Blake2bVar, tag: &str, value: &[u8]) {
    h.update(&(tag.len() as u32).to_le_bytes());
    h.update(tag.as_bytes());
    h.update(&(value.len() as u64).to_le_bytes());
    h.update(value);
}

/// True for the immediate argument kinds (no memory behind them).
pub fn is_immediate(arg: &Argument) -> bool {
    match arg {
        Argument::Imm { .. } => true,
        Argument::Other { kind, .. } => matches!(&**kind, "imm_array" | "symbolic_imm_value"),
        _ => false,
    }
}

/// The op-specific keys that enter the hash, in a fixed order.
fn op_keys(ctx: &Context, inst: &Instruction, b: &Bindings) -> Result<Vec<(&'static str, Value)>> {
    let mut out = Vec::new();
    let mut int_or = |key: &'static str, v: &Option<IntOrExpr>| -> Result<()> {
        let val = match v {
            None => return Ok(()),
            Some(IntOrExpr::Int(i)) => Value::from(*i),
            Some(IntOrExpr::Expr(e)) => match ctx.eval(*e, b)? {
                Some(i) => Value::from(i),
                None => Value::from(ctx.display(*e, 4096)),
            },
        };
        out.push((key, val));
        Ok(())
    };
    match &inst.op {
        OpFields::Matmult {
            replication_resolution,
            replication_shift_amnt,
            replication_num_rows,
        } => {
            int_or("replication_resolution", replication_resolution)?;
            int_or("replication_shift_amnt", replication_shift_amnt)?;
            int_or("replication_num_rows", replication_num_rows)?;
        }
        OpFields::DmaCopy { mode: Some(m) } => out.push(("mode", Value::from(&**m))),
        _ => {}
    }
    Ok(out)
}

/// The bytes `outs[j]` gets: `len` bytes of the SplitMix64 stream of `h`.
pub fn fill(h: u64, j: usize, len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.reserve(len + 8);
    let mut state = h ^ (j as u64 + 1).wrapping_mul(GOLDEN);
    while out.len() < len {
        state = state.wrapping_add(GOLDEN);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        out.extend_from_slice(&z.to_le_bytes());
    }
    out.truncate(len);
}
