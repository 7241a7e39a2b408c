//! The one op vocabulary (contract §3.8): the compiler's AluOp names with
//! the NKI aliases, serving TensorTensor `op`, TensorScalar `op0`/`op1`,
//! TensorReduce `op`, `accumulate` and `cc_channel.op`; and what each op does
//! on floats (one IEEE rounding per op in the computation type, no FMA) and on
//! integers (the output's integer type, two's complement, XLA's division
//! rules).
//!
//! Decisions where the contract is silent (docs/sim.md, "Numbers"): float
//! `max`/`min` propagate NaN and order −0 < +0 (IEEE 754-2019
//! maximum/minimum, as StableHLO); float `mod` is `fmod` (the dividend's
//! sign; x mod 0 is NaN — the contract's "x mod 0 = x" is the integer
//! rule); float `pow` is C `pow` computed in float64 and rounded once;
//! `bitwise_*` take integer dtypes only (9401 otherwise); `bypass` passes
//! the data-path value through and ignores `reverse`.

/// An ALU operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AluOp {
    Add,
    Subtract,
    Mult,
    Divide,
    Max,
    Min,
    Pow,
    Mod,
    IsEqual,
    NotEqual,
    IsGt,
    IsGe,
    IsLt,
    IsLe,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    Bypass,
}

impl AluOp {
    /// The op a name denotes (compiler AluOp names and NKI aliases); None
    /// for a name outside the vocabulary (the instruction stays opaque).
    pub fn parse(name: &str) -> Option<AluOp> {
        Some(match name {
            "add" => AluOp::Add,
            "subtract" => AluOp::Subtract,
            "mult" | "multiply" => AluOp::Mult,
            "divide" => AluOp::Divide,
            "max" | "maximum" => AluOp::Max,
            "min" | "minimum" => AluOp::Min,
            "pow" | "power" => AluOp::Pow,
            "mod" => AluOp::Mod,
            "is_equal" | "equal" => AluOp::IsEqual,
            "not_equal" => AluOp::NotEqual,
            "is_gt" | "greater" => AluOp::IsGt,
            "is_ge" | "greater_equal" => AluOp::IsGe,
            "is_lt" | "less" => AluOp::IsLt,
            "is_le" | "less_equal" => AluOp::IsLe,
            "logical_and" => AluOp::LogicalAnd,
            "logical_or" => AluOp::LogicalOr,
            "logical_xor" => AluOp::LogicalXor,
            "bitwise_and" => AluOp::BitwiseAnd,
            "bitwise_or" => AluOp::BitwiseOr,
            "bitwise_xor" => AluOp::BitwiseXor,
            "bypass" => AluOp::Bypass,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            AluOp::Add => "add",
            AluOp::Subtract => "subtract",
            AluOp::Mult => "mult",
            AluOp::Divide => "divide",
            AluOp::Max => "max",
            AluOp::Min => "min",
            AluOp::Pow => "pow",
            AluOp::Mod => "mod",
            AluOp::IsEqual => "is_equal",
            AluOp::NotEqual => "not_equal",
            AluOp::IsGt => "is_gt",
            AluOp::IsGe => "is_ge",
            AluOp::IsLt => "is_lt",
            AluOp::IsLe => "is_le",
            AluOp::LogicalAnd => "logical_and",
            AluOp::LogicalOr => "logical_or",
            AluOp::LogicalXor => "logical_xor",
            AluOp::BitwiseAnd => "bitwise_and",
            AluOp::BitwiseOr => "bitwise_or",
            AluOp::BitwiseXor => "bitwise_xor",
            AluOp::Bypass => "bypass",
        }
    }

    pub fn is_bitwise(self) -> bool {
        matches!(self, AluOp::BitwiseAnd | AluOp::BitwiseOr | AluOp::BitwiseXor)
    }

    /// The ops a reduction (TensorReduce, `accumulate`, collectives) may use.
    pub fn is_reduction(self) -> bool {
        matches!(self, AluOp::Add | AluOp::Max | AluOp::Min)
    }
}

/// A float computation type: f32 or f64, each op rounded once in it.
pub trait Real: Copy + PartialOrd + Send + Sync + 'static {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn zero() -> Self;
    fn one() -> Self;
    fn is_nan(self) -> bool;
    fn neg_bit(self) -> bool;
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    fn div(self, b: Self) -> Self;
}

impl Real for f32 {
    #[inline]
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
    #[inline]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    #[inline]
    fn neg_bit(self) -> bool {
        self.is_sign_negative()
    }
    #[inline]
    fn add(self, b: Self) -> Self {
        self + b
    }
    #[inline]
    fn sub(self, b: Self) -> Self {
        self - b
    }
    #[inline]
    fn mul(self, b: Self) -> Self {
        self * b
    }
    #[inline]
    fn div(self, b: Self) -> Self {
        self / b
    }
}

impl Real for f64 {
    #[inline]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
    #[inline]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    #[inline]
    fn neg_bit(self) -> bool {
        self.is_sign_negative()
    }
    #[inline]
    fn add(self, b: Self) -> Self {
        self + b
    }
    #[inline]
    fn sub(self, b: Self) -> Self {
        self - b
    }
    #[inline]
    fn mul(self, b: Self) -> Self {
        self * b
    }
    #[inline]
    fn div(self, b: Self) -> Self {
        self / b
    }
}

/// IEEE 754-2019 maximum: NaN propagates, −0 < +0.
#[inline]
pub fn fmax<T: Real>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        return a.add(b); // a NaN (canonicalised by the caller)
    }
    // equal: +0 over −0 (the same value otherwise)
    if a > b || (a == b && !a.neg_bit()) {
        a
    } else {
        b
    }
}

/// IEEE 754-2019 minimum: NaN propagates, −0 < +0.
#[inline]
pub fn fmin<T: Real>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        return a.add(b);
    }
    if a < b || (a == b && a.neg_bit()) {
        a
    } else {
        b
    }
}

#[inline]
fn flag<T: Real>(c: bool) -> T {
    if c {
        T::one()
    } else {
        T::zero()
    }
}

/// `a op b` in the float computation type `T` (bitwise ops never reach
/// here: they are refused on floats when the instruction is compiled).
#[inline]
pub fn float_op<T: Real>(op: AluOp, a: T, b: T) -> T {
    match op {
        AluOp::Add => a.add(b),
        AluOp::Subtract => a.sub(b),
        AluOp::Mult => a.mul(b),
        AluOp::Divide => a.div(b),
        AluOp::Max => fmax(a, b),
        AluOp::Min => fmin(a, b),
        AluOp::Pow => T::from_f64(libm::pow(a.to_f64(), b.to_f64())),
        AluOp::Mod => T::from_f64(libm::fmod(a.to_f64(), b.to_f64())),
        AluOp::IsEqual => flag(a == b),
        AluOp::NotEqual => flag(a != b),
        AluOp::IsGt => flag(a > b),
        AluOp::IsGe => flag(a >= b),
        AluOp::IsLt => flag(a < b),
        AluOp::IsLe => flag(a <= b),
        AluOp::LogicalAnd => flag(a != T::zero() && b != T::zero()),
        AluOp::LogicalOr => flag(a != T::zero() || b != T::zero()),
        AluOp::LogicalXor => flag((a != T::zero()) != (b != T::zero())),
        AluOp::BitwiseAnd | AluOp::BitwiseOr | AluOp::BitwiseXor | AluOp::Bypass => a,
    }
}

/// `a op b` in an integer type of `bits` bits (values already in it),
/// wrapped into it: two's complement; `divide` truncates toward zero,
/// x/0 = −1 (all ones), MIN/−1 = MIN; `mod` takes the dividend's sign,
/// x mod 0 = x, MIN mod −1 = 0; `pow` with a negative exponent is 0 except
/// for bases ±1 (±1 by the exponent's parity), 0⁰ = 1.
pub fn int_op(op: AluOp, a: i128, b: i128, bits: u32, signed: bool) -> i128 {
    use super::dtype::wrap;
    let w = |v: i128| wrap(v, bits, signed);
    match op {
        AluOp::Add => w(a.wrapping_add(b)),
        AluOp::Subtract => w(a.wrapping_sub(b)),
        AluOp::Mult => w(a.wrapping_mul(b)),
        AluOp::Divide => {
            if b == 0 {
                w(-1)
            } else {
                w(a / b) // i128 holds MIN/−1 of every ≤ 64-bit type; wrapping gives MIN
            }
        }
        AluOp::Mod => {
            if b == 0 {
                a
            } else {
                w(a % b)
            }
        }
        AluOp::Max => a.max(b),
        AluOp::Min => a.min(b),
        AluOp::Pow => int_pow(a, b, bits, signed),
        AluOp::IsEqual => i128::from(a == b),
        AluOp::NotEqual => i128::from(a != b),
        AluOp::IsGt => i128::from(a > b),
        AluOp::IsGe => i128::from(a >= b),
        AluOp::IsLt => i128::from(a < b),
        AluOp::IsLe => i128::from(a <= b),
        AluOp::LogicalAnd => i128::from(a != 0 && b != 0),
        AluOp::LogicalOr => i128::from(a != 0 || b != 0),
        AluOp::LogicalXor => i128::from((a != 0) != (b != 0)),
        AluOp::BitwiseAnd => w(a & b),
        AluOp::BitwiseOr => w(a | b),
        AluOp::BitwiseXor => w(a ^ b),
        AluOp::Bypass => a,
    }
}

fn int_pow(base: i128, exp: i128, bits: u32, signed: bool) -> i128 {
    use super::dtype::wrap;
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    // square and multiply modulo 2^bits (the low bits of the true power)
    let modulus_mask = if bits >= 128 { -1i128 } else { (1i128 << bits) - 1 };
    let (mut r, mut b, mut e) = (1i128, base & modulus_mask, exp);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(b) & modulus_mask;
        }
        b = b.wrapping_mul(b) & modulus_mask;
        e >>= 1;
    }
    wrap(r, bits, signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_alias_parses_and_unknown_names_do_not() {
        for (a, b) in [
            ("multiply", "mult"),
            ("maximum", "max"),
            ("minimum", "min"),
            ("power", "pow"),
            ("equal", "is_equal"),
            ("greater", "is_gt"),
            ("greater_equal", "is_ge"),
            ("less", "is_lt"),
            ("less_equal", "is_le"),
        ] {
            assert_eq!(AluOp::parse(a), AluOp::parse(b));
            assert_eq!(AluOp::parse(b).map(AluOp::name), Some(b));
        }
        for opaque in ["abs", "rsqrt", "average", "arith_shift_left", "bitwise_not", "Add"] {
            assert_eq!(AluOp::parse(opaque), None);
        }
    }

    #[test]
    fn integer_division_follows_xla() {
        let (min, b, s) = (i128::from(i32::MIN), 32, true);
        assert_eq!(int_op(AluOp::Divide, 7, 0, b, s), -1);
        assert_eq!(int_op(AluOp::Divide, 7, 0, b, false), i128::from(u32::MAX));
        assert_eq!(int_op(AluOp::Divide, min, -1, b, s), min);
        assert_eq!(int_op(AluOp::Divide, -7, 2, b, s), -3);
        assert_eq!(int_op(AluOp::Mod, -7, 2, b, s), -1);
        assert_eq!(int_op(AluOp::Mod, 7, -2, b, s), 1);
        assert_eq!(int_op(AluOp::Mod, 7, 0, b, s), 7);
        assert_eq!(int_op(AluOp::Mod, min, -1, b, s), 0);
        assert_eq!(int_op(AluOp::Add, i128::from(i32::MAX), 1, b, s), min);
        assert_eq!(int_op(AluOp::Pow, 3, 4, b, s), 81);
        assert_eq!(int_op(AluOp::Pow, 2, 40, b, s), 0);
        assert_eq!(int_op(AluOp::Pow, 0, 0, b, s), 1);
        assert_eq!(int_op(AluOp::Pow, 2, -1, b, s), 0);
        assert_eq!(int_op(AluOp::Pow, -1, -3, b, s), -1);
        assert_eq!(int_op(AluOp::Pow, -1, -2, b, s), 1);
        assert_eq!(int_op(AluOp::Pow, 1, -5, b, s), 1);
        assert_eq!(int_op(AluOp::Pow, 3, 3, 8, true), 27);
        assert_eq!(int_op(AluOp::Pow, 3, 5, 8, true), -13); // 243 wraps
    }

    #[test]
    fn float_max_min_order_signed_zeros_and_propagate_nan() {
        assert!(fmax(-0.0f32, 0.0).is_sign_positive());
        assert!(fmax(0.0f32, -0.0).is_sign_positive());
        assert!(fmin(0.0f32, -0.0).is_sign_negative());
        assert!(fmin(-0.0f32, 0.0).is_sign_negative());
        assert!(fmax(f32::NAN, 1.0).is_nan() && fmax(1.0, f32::NAN).is_nan());
        assert!(fmin(f32::NAN, 1.0).is_nan());
        assert_eq!(float_op(AluOp::IsGt, f32::NAN, 1.0), 0.0);
        assert_eq!(float_op(AluOp::NotEqual, f32::NAN, f32::NAN), 1.0);
        assert_eq!(float_op(AluOp::LogicalAnd, f32::NAN, 1.0), 1.0);
        assert!(float_op(AluOp::Mod, 1.0f32, 0.0).is_nan());
        assert_eq!(float_op(AluOp::Mod, -7.5f32, 2.0), -1.5);
        assert_eq!(float_op(AluOp::Pow, f32::NAN, 0.0), 1.0);
    }
}
