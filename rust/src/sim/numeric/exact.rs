//! Exact sums of floats (contract §3.8: "the `add` accumulates that land on
//! one element … are summed exactly (as real numbers) … and rounded once, to
//! nearest even"): a fixed-point ("Kulisch") accumulator wide enough for
//! every finite value of the dtype plus 2^40 additions, in two's complement.
//! The sum of a set of values is one integer whatever the order they came
//! in, so accumulates commute bit for bit.
//!
//! Non-finite values and zero signs, which an exact real sum does not cover
//! (lncsplit's rule, after IEEE): any NaN, or +inf together with −inf, gives
//! NaN; otherwise an inf gives that inf; an exact zero is −0 only when every
//! value summed was −0 (as `-0 + -0 = -0` and `x + -x = +0` in IEEE).

use super::dtype::{round_parts, Format};

/// An exact accumulator of `L` 64-bit limbs whose least bit weighs 2^LSB:
/// `Exact<5>` (LSB 2^−149) holds float32 and every narrower float exactly,
/// `Exact<34>` (LSB 2^−1074) float64.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exact<const L: usize> {
    limbs: [u64; L],
    nan: bool,
    pinf: bool,
    ninf: bool,
    /// Every value added so far was −0 (true while empty).
    neg_zeros: bool,
}

impl<const L: usize> Default for Exact<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const L: usize> Exact<L> {
    const LSB: i32 = if L <= 5 { -149 } else { -1074 };

    pub fn new() -> Self {
        Exact {
            limbs: [0; L],
            nan: false,
            pinf: false,
            ninf: false,
            neg_zeros: true,
        }
    }

    /// Add the exact value of `x` (a value of the accumulator's dtype,
    /// widened exactly to float64).
    pub fn add(&mut self, x: f64) {
        if x.is_nan() {
            self.nan = true;
            return;
        }
        if x.is_infinite() {
            if x > 0.0 {
                self.pinf = true;
            } else {
                self.ninf = true;
            }
            self.neg_zeros = false;
            return;
        }
        if x == 0.0 {
            self.neg_zeros &= x.is_sign_negative();
            return;
        }
        self.neg_zeros = false;
        let bits = x.to_bits();
        let e = ((bits >> 52) & 0x7FF) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        let (m, exp) = if e == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), e - 1075)
        };
        // x = ±m·2^exp; its bits start at exp − LSB (≥ 0 for values of the dtype).
        let shift = exp - Self::LSB;
        if shift < 0 {
            // finer than the accumulator: only a float64 in a narrow
            // accumulator, never made by the simulator; drop the bits below
            let m = m >> (-shift).min(63);
            self.add_shifted(m, 0, x < 0.0);
            return;
        }
        self.add_shifted(m, shift as u32, x < 0.0);
    }

    fn add_shifted(&mut self, m: u64, shift: u32, neg: bool) {
        let (limb, bit) = ((shift / 64) as usize, shift % 64);
        if limb >= L {
            return; // beyond any finite value of the dtype: not reachable
        }
        let wide = (m as u128) << bit;
        let parts = [wide as u64, (wide >> 64) as u64];
        if neg {
            let mut borrow = false;
            for i in limb..L {
                let p = if i - limb < 2 { parts[i - limb] } else { 0 };
                let (d, b1) = self.limbs[i].overflowing_sub(p);
                let (d, b2) = d.overflowing_sub(u64::from(borrow));
                self.limbs[i] = d;
                borrow = b1 || b2;
                if i - limb >= 1 && !borrow {
                    break;
                }
            }
        } else {
            let mut carry = false;
            for i in limb..L {
                let p = if i - limb < 2 { parts[i - limb] } else { 0 };
                let (s, c1) = self.limbs[i].overflowing_add(p);
                let (s, c2) = s.overflowing_add(u64::from(carry));
                self.limbs[i] = s;
                carry = c1 || c2;
                if i - limb >= 1 && !carry {
                    break;
                }
            }
        }
    }

    /// The sum rounded once into `fmt`, to nearest even.
    pub fn round(&self, fmt: &Format) -> u64 {
        let sign_bit = 1u64 << (fmt.ebits + fmt.mbits);
        if self.nan || (self.pinf && self.ninf) {
            return fmt.nan;
        }
        if self.pinf || self.ninf {
            return fmt.encode(if self.pinf { f64::INFINITY } else { f64::NEG_INFINITY });
        }
        let neg = self.limbs[L - 1] >> 63 == 1;
        let mut mag = self.limbs;
        if neg {
            let mut carry = true;
            for x in mag.iter_mut() {
                let (s, c) = (!*x).overflowing_add(u64::from(carry));
                *x = s;
                carry = c;
            }
        }
        let Some(top) = (0..L).rev().find(|&i| mag[i] != 0) else {
            return if self.neg_zeros { sign_bit } else { 0 };
        };
        let p = 64 * top as i64 + 63 - i64::from(mag[top].leading_zeros());
        // sig: bits p … p−127 (MSB at bit 127); sticky: anything below
        let limb = |k: i64| -> u64 {
            if (0..L as i64).contains(&k) {
                mag[k as usize]
            } else {
                0
            }
        };
        // the 64 bits starting at bit `start` (which may be negative)
        let word = |start: i64| -> u64 {
            let (i, b) = (start.div_euclid(64), start.rem_euclid(64));
            let hi = if b > 0 { limb(i + 1) << (64 - b) } else { 0 };
            (limb(i) >> b) | hi
        };
        let lo = p - 127;
        let sig = u128::from(word(lo)) | (u128::from(word(lo + 64)) << 64);
        let mut sticky = false;
        if lo > 0 {
            let full = (lo / 64) as usize;
            sticky = mag[..full].iter().any(|&x| x != 0);
            let rem = lo % 64;
            if rem > 0 {
                sticky |= mag[full] & ((1u64 << rem) - 1) != 0;
            }
        }
        round_parts(fmt, neg, (p + i64::from(Self::LSB)) as i32, sig, sticky)
    }
}

/// An exact accumulator for any float dtype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sum {
    Narrow(Exact<5>),
    Wide(Box<Exact<34>>),
}

impl Sum {
    /// An empty sum for values of `fmt`.
    pub fn for_format(fmt: &Format) -> Sum {
        if fmt.ebits > 8 {
            Sum::Wide(Box::default())
        } else {
            Sum::Narrow(Exact::new())
        }
    }

    #[inline]
    pub fn add(&mut self, x: f64) {
        match self {
            Sum::Narrow(e) => e.add(x),
            Sum::Wide(e) => e.add(x),
        }
    }

    pub fn round(&self, fmt: &Format) -> u64 {
        match self {
            Sum::Narrow(e) => e.round(fmt),
            Sum::Wide(e) => e.round(fmt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::dtype::{BF16, F32, F64};
    use super::*;

    fn sum32(xs: &[f32]) -> f32 {
        let mut s = Sum::for_format(&F32);
        xs.iter().for_each(|&x| s.add(f64::from(x)));
        f32::from_bits(s.round(&F32) as u32)
    }

    #[test]
    fn a_sum_is_exact_and_rounded_once() {
        // 1 + 2^-24 + 2^-24: sequentially 1.0 (each tie rounds to even),
        // exactly 1 + 2^-23
        let t = 2f32.powi(-24);
        assert_eq!(sum32(&[1.0, t, t]), 1.0 + 2f32.powi(-23));
        assert_eq!(sum32(&[1e30, 1.0, -1e30]), 1.0);
        assert_eq!(sum32(&[f32::MAX, f32::MAX, -f32::MAX]), f32::MAX);
        assert_eq!(sum32(&[f32::MAX, f32::MAX]), f32::INFINITY);
        assert_eq!(sum32(&[-f32::MAX, -f32::MAX]), f32::NEG_INFINITY);
        let tiny = f32::from_bits(1);
        assert_eq!(sum32(&[tiny, tiny, -tiny]), tiny);
        assert_eq!(
            sum32(&[0.1, 0.2, 0.3]),
            (0.1f64 as f32 as f64 + 0.2f32 as f64 + 0.3f32 as f64) as f32
        );
    }

    #[test]
    fn zero_signs_and_non_finite_values_follow_ieee() {
        assert!(sum32(&[-0.0, -0.0]).is_sign_negative());
        assert!(sum32(&[-0.0, 0.0]).is_sign_positive());
        assert!(sum32(&[1.0, -1.0]).is_sign_positive());
        assert_eq!(sum32(&[f32::INFINITY, 1.0]), f32::INFINITY);
        assert_eq!(sum32(&[f32::INFINITY, f32::NEG_INFINITY]).to_bits(), 0x7FC0_0000);
        assert_eq!(sum32(&[f32::NAN, 1.0]).to_bits(), 0x7FC0_0000);
    }

    #[test]
    fn the_order_does_not_change_a_bit() {
        let mut s = 0x9E37_79B9u64;
        let mut xs = Vec::new();
        for _ in 0..200 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            xs.push(f32::from_bits((s >> 33) as u32 & 0xBFFF_FFFF)); // finite, random exponents
        }
        let a = sum32(&xs);
        xs.reverse();
        assert_eq!(sum32(&xs).to_bits(), a.to_bits());
        xs.sort_by(|a, b| a.total_cmp(b));
        assert_eq!(sum32(&xs).to_bits(), a.to_bits());
    }

    #[test]
    fn float64_and_bfloat16_sums_round_once() {
        let mut s = Sum::for_format(&F64);
        for x in [1.0, 2f64.powi(-53), 2f64.powi(-53), 1e-300, -1e-300] {
            s.add(x);
        }
        assert_eq!(f64::from_bits(s.round(&F64)), 1.0 + 2f64.powi(-52));
        let mut s = Sum::for_format(&BF16);
        for x in [1.0, 2f64.powi(-8), 2f64.powi(-9)] {
            s.add(x);
        }
        assert_eq!(s.round(&BF16), 0x3F81);
        let mut s = Sum::for_format(&F64);
        s.add(f64::from_bits(1));
        s.add(f64::MAX);
        s.add(-f64::MAX);
        assert_eq!(s.round(&F64), 1);
    }
}
