//! Accumulates by value (contract §3.8, "Accumulates stay order-independent").
//!
//! - **Integers** wrap on `add` and compare in their dtype (signed as
//!   signed) on `max`/`min`: applied at once, in any order the same bits.
//! - **Floats**, `max`/`min`: by value, NaN propagating (canonical NaN),
//!   −0 < +0 — commutative and associative, applied at once.
//! - **Floats**, `add`: the accumulates that land on one element between two
//!   plain accesses of it are summed exactly with the value they start from
//!   ([`Pending`], one exact sum per element, keyed by its byte offset) and
//!   rounded once, to nearest even, when the element is next read
//!   ([`super::memory::Memory::settle`]) or plainly written (the sum is then
//!   dropped), or when the function ends. Until then the bytes hold the
//!   start value. A sum is one integer whatever the order of its addends, so
//!   accumulates from several cores in one interval end the same in both core
//!   orders: no dynamic race.
//!
//! A collective's reduction ([`reduce`]) follows the same rules: the exact
//! sum of its inputs rounded once, max/min by value, integers in their dtype.

use hashbrown::HashMap;

use super::numeric::alu::{fmax, fmin};
use super::numeric::dtype::{int_of, load_bits, store_bits, wrap, DType, Format};
use super::numeric::exact::Sum;
use crate::analysis::AccOp;

/// One element's pending exact sum: its dtype and the sum so far (the start
/// value included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub dtype: DType,
    pub sum: Sum,
}

impl Slot {
    /// The sum rounded into the element's dtype, as its bits.
    pub fn bits(&self) -> u64 {
        match self.dtype.format() {
            Some(f) => self.sum.round(f),
            None => 0, // only float dtypes have slots
        }
    }
}

/// Pending sums of one buffer, by the byte offset of their element.
pub type Pending = HashMap<u64, Slot>;

/// `dst ← op(dst, src)` element by element for `dtype` (`es` bytes each),
/// except float `add`, which [`add_pending`] takes. `start` is the byte
/// offset of `dst` in its buffer.
pub fn combine(dst: &mut [u8], src: &[u8], dtype: DType, op: AccOp) {
    let es = dtype.size();
    let n = dst.len() / es.max(1);
    if let Some(fmt) = dtype.format() {
        for k in 0..n {
            let (a, b) = (load_bits(dst, k, es), load_bits(src, k, es));
            store_bits(dst, k, es, float_pick(fmt, a, b, op));
        }
        return;
    }
    match dtype.int() {
        Some((bits, signed)) => {
            for k in 0..n {
                let (a, b) = (load_bits(dst, k, es), load_bits(src, k, es));
                let (x, y) = (int_of(a, bits, signed), int_of(b, bits, signed));
                let r = match op {
                    AccOp::Add => wrap(x.wrapping_add(y), bits, signed),
                    AccOp::Max => x.max(y),
                    AccOp::Min => x.min(y),
                };
                store_bits(dst, k, es, r as u64);
            }
        }
        None => super::memory::combine_bits(dst, src, es, op),
    }
}

/// max/min of two float encodings by value; NaN gives the canonical NaN.
fn float_pick(fmt: &Format, a: u64, b: u64, op: AccOp) -> u64 {
    let (x, y) = (fmt.decode(a), fmt.decode(b));
    if x.is_nan() || y.is_nan() {
        return fmt.nan;
    }
    let r = match op {
        AccOp::Max => fmax(x, y),
        AccOp::Min => fmin(x, y),
        AccOp::Add => x + y, // not reached: float add is pending
    };
    // r is one of x, y (exact): return that operand's encoding
    if r.to_bits() == x.to_bits() {
        a
    } else {
        b
    }
}

/// Add `src` (elements of `dtype`) to the pending sums of the elements at
/// byte offsets `start + k·es` of a buffer whose current bytes are `cur`.
pub fn add_pending(pending: &mut Pending, start: u64, cur: &[u8], src: &[u8], dtype: DType) {
    let Some(fmt) = dtype.format() else {
        return;
    };
    let es = dtype.size();
    for k in 0..cur.len() / es {
        let key = start + (k * es) as u64;
        let slot = pending.entry(key).or_insert_with(|| {
            let mut sum = Sum::for_format(fmt);
            sum.add(fmt.decode(load_bits(cur, k, es)));
            Slot { dtype, sum }
        });
        slot.sum.add(fmt.decode(load_bits(src, k, es)));
    }
}

/// The reduction of a collective over its inputs (each the same length, in
/// AP order), for `dtype`.
pub fn reduce(inputs: &[Vec<u8>], dtype: DType, op: AccOp) -> Vec<u8> {
    let Some(first) = inputs.first() else {
        return Vec::new();
    };
    match (dtype.format(), op) {
        (Some(fmt), AccOp::Add) => {
            let es = dtype.size();
            let mut out = vec![0u8; first.len()];
            for k in 0..first.len() / es {
                let mut sum = Sum::for_format(fmt);
                for x in inputs {
                    sum.add(fmt.decode(load_bits(x, k, es)));
                }
                store_bits(&mut out, k, es, sum.round(fmt));
            }
            out
        }
        _ => {
            let mut acc = first.clone();
            for x in &inputs[1..] {
                combine(&mut acc, x, dtype, op);
            }
            if let Some(fmt) = dtype.format() {
                canonical_nans(&mut acc, fmt, dtype.size());
            }
            acc
        }
    }
}

/// Replace every NaN encoding by the canonical one (a lone input's NaN).
fn canonical_nans(b: &mut [u8], fmt: &Format, es: usize) {
    for k in 0..b.len() / es {
        if fmt.decode(load_bits(b, k, es)).is_nan() {
            store_bits(b, k, es, fmt.nan);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(xs: &[f32]) -> Vec<u8> {
        xs.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn integer_accumulates_compare_signed_as_signed() {
        let mut d = (-1i32).to_le_bytes().to_vec();
        combine(&mut d, &1i32.to_le_bytes(), DType::I32, AccOp::Max);
        assert_eq!(i32::from_le_bytes(d[..4].try_into().unwrap()), 1);
        let mut d = (-1i32).to_le_bytes().to_vec();
        combine(&mut d, &1i32.to_le_bytes(), DType::U32, AccOp::Max);
        assert_eq!(u32::from_le_bytes(d[..4].try_into().unwrap()), u32::MAX);
        let mut d = u32::MAX.to_le_bytes().to_vec();
        combine(&mut d, &2u32.to_le_bytes(), DType::I32, AccOp::Add);
        assert_eq!(i32::from_le_bytes(d[..4].try_into().unwrap()), 1);
    }

    #[test]
    fn float_max_min_are_by_value() {
        let mut d = f32s(&[-2.0, -0.0, 1.0]);
        combine(&mut d, &f32s(&[1.0, 0.0, f32::NAN]), DType::F32, AccOp::Max);
        assert_eq!(d, f32s(&[1.0, 0.0, f32::from_bits(0x7FC0_0000)]));
    }

    #[test]
    fn a_collective_add_is_the_exact_sum_rounded_once() {
        let t = 2f32.powi(-24);
        let ins = vec![f32s(&[1.0]), f32s(&[t]), f32s(&[t])];
        let fwd = reduce(&ins, DType::F32, AccOp::Add);
        let rev: Vec<Vec<u8>> = ins.iter().rev().cloned().collect();
        assert_eq!(fwd, f32s(&[1.0 + 2f32.powi(-23)]));
        assert_eq!(reduce(&rev, DType::F32, AccOp::Add), fwd);
    }
}
