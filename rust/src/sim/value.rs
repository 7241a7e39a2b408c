//! A Memset's value as the bit pattern of one element of its dtype
//! (contract §3.8: "writes ins[0]'s imm_value in its dtype").
//!
//! Integers in integer dtypes are two's complement, little-endian, and must
//! fit (signed or unsigned) in the element; numbers in float dtypes are
//! rounded to nearest-even into float64 / float32 / bfloat16 / float16; fp8
//! kinds take only zero (lncsplit does not model their encodings). A string
//! value is parsed as a number (`"inf"`, `"-inf"`, `"nan"` included).

use serde_json::Value;

/// The element bytes (first `esize` of the 8) for `value` in `dtype`.
pub fn encode(value: &Value, dtype: &str, esize: i64) -> Result<[u8; 8], String> {
    let d = dtype.to_ascii_lowercase();
    let num = as_number(value).ok_or_else(|| format!("Memset value {value} is not a number"))?;
    let mut out = [0u8; 8];
    let bits: u64 = match d.as_str() {
        "float64" => num.as_f64().to_bits(),
        "float32" | "float32r" | "tfloat32" => u64::from((num.as_f64() as f32).to_bits()),
        "bfloat16" => u64::from(half::bf16::from_f64(num.as_f64()).to_bits()),
        "float16" => u64::from(half::f16::from_f64(num.as_f64()).to_bits()),
        _ if d.starts_with("fp8") || d.starts_with("float8") => {
            if num.as_f64() != 0.0 {
                return Err(format!(
                    "Memset of {value} in {dtype}: lncsplit writes only 0 in fp8 dtypes"
                ));
            }
            0
        }
        _ => int_bits(num, esize).ok_or_else(|| format!("Memset value {value} does not fit {dtype}"))?,
    };
    out.copy_from_slice(&bits.to_le_bytes());
    Ok(out)
}

#[derive(Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

fn as_number(v: &Value) -> Option<Num> {
    match v {
        Value::Bool(b) => Some(Num::Int(i128::from(*b))),
        Value::Number(n) => n
            .as_i64()
            .map(|i| Num::Int(i128::from(i)))
            .or_else(|| n.as_u64().map(|u| Num::Int(i128::from(u))))
            .or_else(|| n.as_f64().map(Num::Float)),
        Value::String(s) => s.trim().parse::<f64>().ok().map(Num::Float),
        _ => None,
    }
}

/// Two's complement bits of an integral value that fits `esize` bytes.
fn int_bits(num: Num, esize: i64) -> Option<u64> {
    let i = match num {
        Num::Int(i) => i,
        Num::Float(f) if f.fract() == 0.0 && f.is_finite() && f.abs() < 1e30 => f as i128,
        Num::Float(_) => return None,
    };
    let bits = 8 * esize.clamp(1, 8) as u32;
    let lo = -(1i128 << (bits - 1));
    let hi = (1i128 << bits) - 1;
    if i < lo || i > hi {
        return None;
    }
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    Some((i as u64) & mask)
}
