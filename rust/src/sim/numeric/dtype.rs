//! The dtypes the simulator computes in (contract §3.8, "Numbers, not only
//! hashes"): their encodings, exact decoding, and the conversion rule every
//! computed result goes through — float narrowing rounds to nearest even
//! (one rounding, from the exact value), float → int truncates toward zero
//! and saturates (NaN → 0), int → int wraps (two's complement: lncsplit's
//! decision, as XLA), int → float rounds to nearest even; no flush of
//! denormals. Any NaN a numeric operation writes is the dtype's canonical
//! quiet NaN (x86 makes `0xFFC00000`, so every NaN is replaced explicitly).
//!
//! Floats are described by a [`Format`] (exponent and mantissa bits, bias,
//! whether the top exponent is inf/NaN as in IEEE, or — `float8e4`, OCP
//! E4M3FN — only the all-ones pattern is NaN and there is no inf), so one
//! rounding routine ([`round_parts`]) serves every narrowing, from a float64
//! as from the exact sums of `exact.rs`.

/// A dtype the simulator can compute in. `Other` is every dtype it only
/// moves (float8e3, float8_e8m0fnu, the `_x4` containers, …): copies take
/// it, numeric instructions refuse it (9401).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F64,
    F32,
    Bf16,
    F16,
    /// `float8e4` / `float8_e4m3fn`: OCP E4M3FN (no inf, NaN 0x7F).
    F8E4,
    /// `float8e5` / `float8_e5m2`: E5M2 (IEEE-like).
    F8E5,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    /// `bool`: one byte, 0 or 1 (a uint8 predicate).
    Bool,
    /// A dtype lncsplit moves but does not compute in; its element size.
    Other(u8),
}

/// A binary floating-point format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub ebits: u32,
    pub mbits: u32,
    pub bias: i32,
    /// IEEE: the all-ones exponent is inf (mantissa 0) or NaN. False for
    /// E4M3FN, whose only non-finite pattern is S.1111.111 (NaN).
    pub ieee: bool,
    /// The canonical quiet NaN (sign clear).
    pub nan: u64,
}

pub const F64: Format = Format {
    ebits: 11,
    mbits: 52,
    bias: 1023,
    ieee: true,
    nan: 0x7FF8_0000_0000_0000,
};
pub const F32: Format = Format {
    ebits: 8,
    mbits: 23,
    bias: 127,
    ieee: true,
    nan: 0x7FC0_0000,
};
pub const BF16: Format = Format {
    ebits: 8,
    mbits: 7,
    bias: 127,
    ieee: true,
    nan: 0x7FC0,
};
pub const F16: Format = Format {
    ebits: 5,
    mbits: 10,
    bias: 15,
    ieee: true,
    nan: 0x7E00,
};
pub const F8E4: Format = Format {
    ebits: 4,
    mbits: 3,
    bias: 7,
    ieee: false,
    nan: 0x7F,
};
pub const F8E5: Format = Format {
    ebits: 5,
    mbits: 2,
    bias: 15,
    ieee: true,
    nan: 0x7E,
};

impl Format {
    fn sign_bit(&self) -> u64 {
        1u64 << (self.ebits + self.mbits)
    }

    fn exp_mask(&self) -> u64 {
        (1u64 << self.ebits) - 1
    }

    /// The largest unbiased exponent of a finite number.
    fn emax(&self) -> i32 {
        let top = self.exp_mask() as i32;
        if self.ieee {
            top - 1 - self.bias
        } else {
            top - self.bias
        }
    }

    fn emin(&self) -> i32 {
        1 - self.bias
    }

    /// ±inf, or the canonical NaN where the format has no inf.
    fn inf(&self, neg: bool) -> u64 {
        if self.ieee {
            let bits = self.exp_mask() << self.mbits;
            if neg {
                bits | self.sign_bit()
            } else {
                bits
            }
        } else {
            self.nan
        }
    }

    /// The exact value of an encoding, as a float64 (every format here but
    /// float64 itself widens exactly; float64 is itself).
    pub fn decode(&self, bits: u64) -> f64 {
        if *self == F64 {
            return f64::from_bits(bits);
        }
        if *self == F32 {
            return f64::from(f32::from_bits(bits as u32));
        }
        let neg = bits & self.sign_bit() != 0;
        let e = ((bits >> self.mbits) & self.exp_mask()) as i32;
        let m = bits & ((1u64 << self.mbits) - 1);
        let top = self.exp_mask() as i32;
        let mag = if self.ieee && e == top {
            if m == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else if !self.ieee && e == top && m == (1u64 << self.mbits) - 1 {
            f64::NAN
        } else if e == 0 {
            m as f64 * (2f64).powi(self.emin() - self.mbits as i32)
        } else {
            ((1u64 << self.mbits) | m) as f64 * (2f64).powi(e - self.bias - self.mbits as i32)
        };
        if neg {
            -mag
        } else {
            mag
        }
    }

    /// Round a float64 to this format, to nearest even (one rounding).
    pub fn encode(&self, x: f64) -> u64 {
        if *self == F64 {
            return if x.is_nan() { self.nan } else { x.to_bits() };
        }
        if *self == F32 {
            let y = x as f32; // Rust's f64 → f32 rounds to nearest even
            return if y.is_nan() { self.nan } else { u64::from(y.to_bits()) };
        }
        if x.is_nan() {
            return self.nan;
        }
        let neg = x.is_sign_negative();
        if x.is_infinite() {
            return self.inf(neg);
        }
        if x == 0.0 {
            return if neg { self.sign_bit() } else { 0 };
        }
        let bits = x.abs().to_bits();
        let (e, m) = ((bits >> 52) as i32, bits & ((1u64 << 52) - 1));
        // value = sig · 2^(msb) with sig's leading one at bit 127
        let (sig, msb) = if e == 0 {
            let lz = m.leading_zeros() as i32; // m != 0 (x != 0)
            ((m as u128) << (64 + lz), -1011 - lz)
        } else {
            ((((1u64 << 52) | m) as u128) << 75, e - 1023)
        };
        round_parts(self, neg, msb, sig, false)
    }
}

/// Round the exact value `±sig·2^(msb−127)` (sig's bit 127 set; `sticky`: a
/// nonzero tail below sig) to `fmt`, to nearest even, with overflow to ±inf
/// (E4M3FN: NaN) and gradual underflow.
pub fn round_parts(fmt: &Format, neg: bool, msb: i32, sig: u128, sticky: bool) -> u64 {
    let sign = if neg { fmt.sign_bit() } else { 0 };
    let mbits = fmt.mbits as i32;
    // Significant bits kept: mbits+1 for a normal, fewer for a subnormal.
    let keep = if msb >= fmt.emin() {
        mbits + 1
    } else {
        msb - (fmt.emin() - mbits) + 1
    };
    if keep < 0 {
        return sign; // below half the least subnormal: rounds to ±0
    }
    let shift = (128 - keep) as u32; // 1..=128
    let (q, rem_top, rem_rest) = if shift == 128 {
        (0u128, sig >> 127 & 1 == 1, (sig << 1) != 0 || sticky)
    } else {
        let q = sig >> shift;
        let rem = sig & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        (q, rem & half != 0, (rem & (half - 1)) != 0 || sticky)
    };
    let up = rem_top && (rem_rest || q & 1 == 1);
    let q = q + u128::from(up);
    let body = if msb >= fmt.emin() {
        // q in [2^mbits, 2^(mbits+1)]; a carry bumps the exponent
        let (q, e) = if q >> (mbits + 1) != 0 {
            (q >> 1, msb + 1)
        } else {
            (q, msb)
        };
        if e > fmt.emax() {
            return fmt.inf(neg);
        }
        let field = ((e + fmt.bias) as u64) << fmt.mbits | (q as u64 & ((1u64 << fmt.mbits) - 1));
        if !fmt.ieee && field == (fmt.exp_mask() << fmt.mbits) | ((1u64 << fmt.mbits) - 1) {
            return fmt.nan; // E4M3FN: S.1111.111 is NaN, so 464+ overflows
        }
        field
    } else {
        q as u64 // a subnormal; a carry into 2^mbits is the least normal
    };
    sign | body
}

impl DType {
    /// The dtype a set or AP names (contract §1.3, §1.7 names).
    pub fn parse(name: &str) -> DType {
        let d = name.to_ascii_lowercase();
        match d.as_str() {
            "float64" => DType::F64,
            "float32" | "float32r" | "tfloat32" => DType::F32,
            "bfloat16" => DType::Bf16,
            "float16" => DType::F16,
            "float8e4" | "float8_e4m3fn" | "fp8e4" | "fp8_e4m3" => DType::F8E4,
            "float8e5" | "float8_e5m2" | "fp8e5" | "fp8_e5m2" => DType::F8E5,
            "int8" => DType::I8,
            "int16" => DType::I16,
            "int32" => DType::I32,
            "int64" => DType::I64,
            "uint8" => DType::U8,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "bool" => DType::Bool,
            _ => DType::Other(crate::bir::dtype::dtype_size(&d).unwrap_or(1).clamp(1, 8) as u8),
        }
    }

    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::Bf16 | DType::F16 | DType::I16 | DType::U16 => 2,
            DType::F8E4 | DType::F8E5 | DType::I8 | DType::U8 | DType::Bool => 1,
            DType::Other(s) => s as usize,
        }
    }

    /// The float format, for float dtypes.
    pub fn format(self) -> Option<&'static Format> {
        Some(match self {
            DType::F64 => &F64,
            DType::F32 => &F32,
            DType::Bf16 => &BF16,
            DType::F16 => &F16,
            DType::F8E4 => &F8E4,
            DType::F8E5 => &F8E5,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        self.format().is_some()
    }

    /// (bits, signed) of an integer dtype (`bool` is an unsigned byte).
    pub fn int(self) -> Option<(u32, bool)> {
        Some(match self {
            DType::I8 => (8, true),
            DType::I16 => (16, true),
            DType::I32 => (32, true),
            DType::I64 => (64, true),
            DType::U8 | DType::Bool => (8, false),
            DType::U16 => (16, false),
            DType::U32 => (32, false),
            DType::U64 => (64, false),
            _ => return None,
        })
    }

    /// True for the dtypes numeric instructions compute in.
    pub fn is_numeric(self) -> bool {
        !matches!(self, DType::Other(_))
    }

    pub fn name(self) -> String {
        match self {
            DType::F64 => "float64".into(),
            DType::F32 => "float32".into(),
            DType::Bf16 => "bfloat16".into(),
            DType::F16 => "float16".into(),
            DType::F8E4 => "float8e4".into(),
            DType::F8E5 => "float8e5".into(),
            DType::I8 => "int8".into(),
            DType::I16 => "int16".into(),
            DType::I32 => "int32".into(),
            DType::I64 => "int64".into(),
            DType::U8 => "uint8".into(),
            DType::U16 => "uint16".into(),
            DType::U32 => "uint32".into(),
            DType::U64 => "uint64".into(),
            DType::Bool => "bool".into(),
            DType::Other(s) => format!("an unmodelled {s}-byte dtype"),
        }
    }
}

/// Wrap an integer into `bits` bits, signed or not (two's complement).
#[inline]
pub fn wrap(v: i128, bits: u32, signed: bool) -> i128 {
    let m = v & ((1i128 << bits) - 1);
    if signed && m >> (bits - 1) & 1 == 1 {
        m - (1i128 << bits)
    } else {
        m
    }
}

/// Read element `k` (little-endian, `dt.size()` bytes) of `b`.
#[inline]
pub fn load_bits(b: &[u8], k: usize, size: usize) -> u64 {
    let mut x = [0u8; 8];
    x[..size].copy_from_slice(&b[k * size..k * size + size]);
    u64::from_le_bytes(x)
}

#[inline]
pub fn store_bits(b: &mut [u8], k: usize, size: usize, v: u64) {
    b[k * size..k * size + size].copy_from_slice(&v.to_le_bytes()[..size]);
}

/// An integer element's value (signed as signed).
#[inline]
pub fn int_of(bits: u64, bits_n: u32, signed: bool) -> i128 {
    wrap(i128::from(bits), bits_n, signed)
}

/// A float to an integer dtype: truncate toward zero, saturate, NaN → 0.
pub fn float_to_int(x: f64, bits: u32, signed: bool) -> i128 {
    if x.is_nan() {
        return 0;
    }
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let t = x.trunc();
    if t <= lo as f64 {
        lo
    } else if t >= hi as f64 {
        // hi as f64 rounds up to 2^bits(−1) for 32+ bits: anything there saturates
        hi
    } else {
        t as i128
    }
}

/// An integer value to a float format, to nearest even (one rounding).
pub fn int_to_float(v: i128, fmt: &Format) -> u64 {
    if v == 0 {
        return 0;
    }
    let neg = v < 0;
    let mag = v.unsigned_abs();
    let lz = mag.leading_zeros();
    round_parts(fmt, neg, 127 - lz as i32, mag << lz, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_rounds_to_nearest_even_with_the_documented_overflow() {
        // bf16 (ml_dtypes' bits, notes §3.6)
        assert_eq!(BF16.encode(f64::from(f32::MAX)), 0x7F80);
        assert_eq!(BF16.encode(1.0 + 2f64.powi(-8)), 0x3F80);
        assert_eq!(BF16.encode(1.0 + 3.0 * 2f64.powi(-8)), 0x3F82);
        assert_eq!(BF16.encode(f64::NAN), 0x7FC0);
        assert_eq!(F16.encode(65520.0), 0x7C00);
        assert_eq!(F16.encode(65519.0), 0x7BFF);
        // e4m3fn: 448 max, 464 a tie to even, 465 NaN, inf NaN
        assert_eq!(F8E4.encode(448.0), 0x7E);
        assert_eq!(F8E4.encode(464.0), 0x7E);
        assert_eq!(F8E4.encode(465.0), 0x7F);
        assert_eq!(F8E4.encode(f64::INFINITY), 0x7F);
        assert_eq!(F8E4.encode(2f64.powi(-10)), 0x00);
        assert_eq!(F8E4.encode(0.75 * 2f64.powi(-9)), 0x01);
        assert_eq!(F8E5.encode(57344.0), 0x7B);
        assert_eq!(F8E5.encode(61439.0), 0x7B);
        assert_eq!(F8E5.encode(61440.0), 0x7C);
        assert_eq!(F8E5.encode(f64::NAN), 0x7E);
        assert_eq!(F8E4.encode(-0.0), 0x80);
    }

    #[test]
    fn decoding_every_small_encoding_round_trips() {
        for fmt in [&BF16, &F16, &F8E4, &F8E5] {
            let n = 1u64 << (fmt.ebits + fmt.mbits + 1);
            for bits in 0..n {
                let x = fmt.decode(bits);
                let back = fmt.encode(x);
                if x.is_nan() {
                    assert_eq!(back, fmt.nan);
                } else {
                    assert_eq!(back, bits, "{fmt:?} {bits:#x} {x}");
                }
            }
        }
    }

    #[test]
    fn narrowing_a_float32_agrees_with_the_half_crate() {
        // half's from_f32 rounds once to nearest even (its from_f64 does not
        // always: −1.0486603201635412e−2 → 0xA15E, numpy and this file 0xA15F)
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..200_000 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let y = f32::from_bits((s >> 32) as u32);
            if y.is_nan() {
                continue;
            }
            let x = f64::from(y);
            assert_eq!(F16.encode(x), u64::from(half::f16::from_f32(y).to_bits()), "{y:e}");
            assert_eq!(BF16.encode(x), u64::from(half::bf16::from_f32(y).to_bits()), "{y:e}");
        }
        assert_eq!(F16.encode(-1.0486603201635412e-2), 0xA15F);
    }

    #[test]
    fn float_to_int_truncates_and_saturates_nan_to_zero() {
        assert_eq!(float_to_int(3e9, 32, true), i128::from(i32::MAX));
        assert_eq!(float_to_int(-3e9, 32, true), i128::from(i32::MIN));
        assert_eq!(float_to_int(f64::NAN, 32, true), 0);
        assert_eq!(float_to_int(-1.9, 32, true), -1);
        assert_eq!(float_to_int(-5.0, 8, false), 0);
        assert_eq!(float_to_int(1e30, 64, false), i128::from(u64::MAX));
        assert_eq!(float_to_int(f64::INFINITY, 64, true), i128::from(i64::MAX));
    }

    #[test]
    fn int_to_float_rounds_once() {
        assert_eq!(int_to_float(16_777_217, &F32), u64::from(16_777_216f32.to_bits()));
        assert_eq!(
            int_to_float(i128::from(i64::MAX), &F32),
            u64::from((i64::MAX as f32).to_bits())
        );
        assert_eq!(int_to_float(-3, &BF16), u64::from(half::bf16::from_f32(-3.0).to_bits()));
        assert_eq!(wrap(300, 8, false), 44);
        assert_eq!(wrap(200, 8, true), -56);
    }
}
