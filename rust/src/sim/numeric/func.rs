//! Activation functions (contract §3.8): `func` matched case-insensitively
//! against the contract's names and the compiler's ActivationFunctionType
//! names. Each is the mathematical function from the `libm` crate (the same
//! bits on every machine, unlike the platform libm): in float32 by libm's
//! float32 function where that keeps the documented bound (exp, log, sin,
//! cos, erf ≤ 1 ulp; tanh ≤ 2 — [`Native::libm`]), else evaluated in float64
//! and rounded once to the computation type (≤ 0.5 ulp + 2⁻²⁹ for the 1-ulp
//! float64 functions); float64 results carry libm's float64 accuracy. Funcs
//! that are exact or correctly rounded in the computation type itself
//! (identity, relu, square, reciprocal, negative, abs, sign, sqrt) are
//! computed there.
//! Numerically stable forms where the textbook one cancels: sigmoid
//! `1/(1+e^−x)` for x ≥ 0 and `e^x/(1+e^x)` below, gelu = ½x·erfc(−x/√2),
//! gelu_tanh = x·σ(2√(2/π)(x + 0.044715x³)) (= ½x(1+tanh(…)) exactly),
//! softplus = max(x,0) + log1p(e^−|x|). docs/sim.md has the accuracy table.

use super::alu::Real;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    Identity,
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Relu,
    Gelu,
    GeluTanh,
    Silu,
    Rsqrt,
    Sqrt,
    Square,
    Reciprocal,
    Negative,
    Abs,
    Sign,
    Sin,
    Cos,
    Erf,
    Softplus,
}

/// Every func, for tests and the generator.
pub const ALL: [Func; 20] = [
    Func::Identity,
    Func::Exp,
    Func::Log,
    Func::Tanh,
    Func::Sigmoid,
    Func::Relu,
    Func::Gelu,
    Func::GeluTanh,
    Func::Silu,
    Func::Rsqrt,
    Func::Sqrt,
    Func::Square,
    Func::Reciprocal,
    Func::Negative,
    Func::Abs,
    Func::Sign,
    Func::Sin,
    Func::Cos,
    Func::Erf,
    Func::Softplus,
];

impl Func {
    /// The func a name denotes (case-insensitively): the contract's names,
    /// the compiler's spellings (`Ln`, `Copy`, `Gelu_apprx_tanh`, …) and NKI's
    /// (`copy`, `gelu_apprx_tanh`); None for any other (stays opaque).
    pub fn parse(name: &str) -> Option<Func> {
        Some(match name.to_ascii_lowercase().as_str() {
            "identity" | "copy" => Func::Identity,
            "exp" => Func::Exp,
            "log" | "ln" => Func::Log,
            "tanh" => Func::Tanh,
            "sigmoid" => Func::Sigmoid,
            "relu" => Func::Relu,
            "gelu" => Func::Gelu,
            "gelu_tanh" | "gelu_apprx_tanh" => Func::GeluTanh,
            "silu" => Func::Silu,
            "rsqrt" => Func::Rsqrt,
            "sqrt" => Func::Sqrt,
            "square" => Func::Square,
            "reciprocal" => Func::Reciprocal,
            "negative" => Func::Negative,
            "abs" => Func::Abs,
            "sign" => Func::Sign,
            "sin" => Func::Sin,
            "cos" => Func::Cos,
            "erf" => Func::Erf,
            "softplus" => Func::Softplus,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Func::Identity => "identity",
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Tanh => "tanh",
            Func::Sigmoid => "sigmoid",
            Func::Relu => "relu",
            Func::Gelu => "gelu",
            Func::GeluTanh => "gelu_tanh",
            Func::Silu => "silu",
            Func::Rsqrt => "rsqrt",
            Func::Sqrt => "sqrt",
            Func::Square => "square",
            Func::Reciprocal => "reciprocal",
            Func::Negative => "negative",
            Func::Abs => "abs",
            Func::Sign => "sign",
            Func::Sin => "sin",
            Func::Cos => "cos",
            Func::Erf => "erf",
            Func::Softplus => "softplus",
        }
    }

    /// func(x) in the computation type `T`.
    #[inline]
    pub fn eval<T: Real + Native>(self, x: T) -> T {
        match self {
            Func::Identity => x,
            Func::Relu => {
                // max(x, 0) with −0 < +0: relu(−0) = +0; NaN propagates
                if x.is_nan() || x > T::zero() {
                    x
                } else {
                    T::zero()
                }
            }
            Func::Square => x.mul(x),
            Func::Reciprocal => T::one().div(x),
            Func::Negative => x.negate(),
            Func::Abs => x.absolute(),
            Func::Sign => {
                if x.is_nan() || x == T::zero() {
                    x // NaN stays NaN, ±0 stays ±0
                } else if x > T::zero() {
                    T::one()
                } else {
                    T::one().negate()
                }
            }
            Func::Sqrt => x.root(),
            _ => match x.libm(self) {
                Some(y) => y,
                None => T::from_f64(self.eval_f64(x.to_f64())),
            },
        }
    }

    /// The transcendental funcs in float64 (libm).
    fn eval_f64(self, x: f64) -> f64 {
        match self {
            Func::Exp => libm::exp(x),
            Func::Log => libm::log(x),
            Func::Tanh => libm::tanh(x),
            Func::Sigmoid => sigmoid(x),
            Func::Gelu => {
                if x.is_infinite() {
                    return if x > 0.0 { x } else { -0.0 }; // the limits (∞·0 otherwise)
                }
                0.5 * x * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
            }
            Func::GeluTanh => {
                const C: f64 = 0.797_884_560_802_865_4; // √(2/π)
                if x.is_infinite() {
                    return if x > 0.0 { x } else { -0.0 };
                }
                x * sigmoid(2.0 * C * (x + 0.044715 * x * x * x))
            }
            Func::Silu => {
                if x == f64::NEG_INFINITY {
                    return -0.0;
                }
                x * sigmoid(x)
            }
            Func::Rsqrt => 1.0 / libm::sqrt(x),
            Func::Sin => libm::sin(x),
            Func::Cos => libm::cos(x),
            Func::Erf => libm::erf(x),
            Func::Softplus => x.max(0.0) + libm::log1p(libm::exp(-x.abs())),
            _ => x,
        }
    }
}

fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + libm::exp(-x))
    } else {
        let e = libm::exp(x);
        e / (1.0 + e)
    }
}

/// The operations the exact funcs need natively in the computation type.
pub trait Native: Real {
    fn negate(self) -> Self;
    fn absolute(self) -> Self;
    fn root(self) -> Self;
    /// `f(self)` by the `libm` crate's function of this type, for the funcs
    /// whose float32 function keeps the accuracy docs/sim.md states (None:
    /// evaluate in float64 and round once).
    fn libm(self, f: Func) -> Option<Self>;
}

impl Native for f32 {
    #[inline]
    fn negate(self) -> Self {
        -self
    }
    #[inline]
    fn absolute(self) -> Self {
        self.abs()
    }
    #[inline]
    fn root(self) -> Self {
        self.sqrt()
    }
    /// libm's float32 functions (FreeBSD msun ports): exp, log, sin, cos
    /// and erf within 1 ulp of the true value, tanh within 2 (libm's own
    /// precision table; `tests::float32_funcs_keep_their_ulp_bounds` checks
    /// them against the float64 result rounded). 1.5–2× faster than the
    /// float64 functions, which is what the simulator's speed against
    /// numpy's float32 loops needs (docs/sim.md).
    #[inline]
    fn libm(self, f: Func) -> Option<Self> {
        Some(match f {
            Func::Exp => libm::expf(self),
            Func::Log => libm::logf(self),
            Func::Tanh => libm::tanhf(self),
            Func::Sin => libm::sinf(self),
            Func::Cos => libm::cosf(self),
            Func::Erf => libm::erff(self),
            _ => return None,
        })
    }
}

impl Native for f64 {
    #[inline]
    fn negate(self) -> Self {
        -self
    }
    #[inline]
    fn absolute(self) -> Self {
        self.abs()
    }
    #[inline]
    fn root(self) -> Self {
        self.sqrt()
    }
    #[inline]
    fn libm(self, _f: Func) -> Option<Self> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_func_has_its_names() {
        for f in ALL {
            assert_eq!(Func::parse(f.name()), Some(f));
            assert_eq!(Func::parse(&f.name().to_uppercase()), Some(f));
        }
        for (compiler, f) in [
            ("Ln", Func::Log),
            ("Copy", Func::Identity),
            ("Identity", Func::Identity),
            ("Gelu_apprx_tanh", Func::GeluTanh),
            ("Gelu", Func::Gelu),
            ("Exp", Func::Exp),
        ] {
            assert_eq!(Func::parse(compiler), Some(f));
        }
        for opaque in [
            "Mish",
            "Gelu_apprx_sigmoid",
            "Arctan",
            "Lrelu",
            "Derivative_Erf",
            "Unknown",
        ] {
            assert_eq!(Func::parse(opaque), None);
        }
    }

    /// Distance in float32 steps (ulps) between two finite floats or
    /// equal specials.
    fn ulps(a: f32, b: f32) -> u64 {
        if a.is_nan() && b.is_nan() || a == b {
            return 0;
        }
        let key = |x: f32| {
            let i = x.to_bits() as i32;
            i64::from(if i < 0 { i32::MIN - i } else { i })
        };
        (key(a) - key(b)).unsigned_abs()
    }

    #[test]
    fn float32_funcs_keep_their_ulp_bounds() {
        // every 4099th float32 (≈ a million, all binades and both signs)
        // and the specials, against libm's float64 function rounded once
        let bound = |f: Func| if f == Func::Tanh { 2 } else { 1 };
        let mut worst = [0u64; 6];
        let funcs = [Func::Exp, Func::Log, Func::Tanh, Func::Sin, Func::Cos, Func::Erf];
        let specials = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            1e-45,
        ];
        let grid = (0..=u32::MAX).step_by(4099).map(f32::from_bits);
        for x in grid.chain(specials) {
            for (k, f) in funcs.iter().enumerate() {
                let got = f.eval(x);
                let want = f.eval_f64(f64::from(x)) as f32;
                if got.is_nan() || want.is_nan() {
                    assert!(got.is_nan() && want.is_nan(), "{} {x:e}: {got} vs {want}", f.name());
                    continue;
                }
                let u = ulps(got, want);
                assert!(u <= bound(*f), "{} {x:e}: {got:e} is {u} ulps from {want:e}", f.name());
                worst[k] = worst[k].max(u);
            }
        }
        // the bounds are met, and not vacuously: the float32 functions differ somewhere
        assert!(worst.iter().all(|&w| w >= 1), "{worst:?}");
    }

    #[test]
    fn special_values_follow_ieee() {
        assert_eq!(Func::Relu.eval(-0.0f32).to_bits(), 0);
        assert!(Func::Relu.eval(f32::NAN).is_nan());
        assert!(Func::Sign.eval(-0.0f32).is_sign_negative());
        assert_eq!(Func::Sign.eval(-3.0f32), -1.0);
        assert_eq!(Func::Log.eval(0.0f32), f32::NEG_INFINITY);
        assert!(Func::Log.eval(-1.0f32).is_nan());
        assert_eq!(Func::Rsqrt.eval(-0.0f32), f32::NEG_INFINITY);
        assert_eq!(Func::Exp.eval(f32::NEG_INFINITY), 0.0);
        assert_eq!(Func::Sigmoid.eval(-1000.0f32), 0.0);
        assert_eq!(Func::Sigmoid.eval(1000.0f32), 1.0);
        assert_eq!(Func::Softplus.eval(100.0f32), 100.0);
        assert_eq!(Func::GeluTanh.eval(f32::NEG_INFINITY).to_bits(), 0x8000_0000);
        assert_eq!(Func::Gelu.eval(-40.0f32), -0.0);
        assert!(Func::Tanh.eval(-0.0f32).is_sign_negative());
    }
}
