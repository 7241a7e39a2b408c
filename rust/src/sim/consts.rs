//! `Const` sets with `values` (contract §3.8, "Inputs and outputs"): a flat
//! row-major list of numbers, or `{"hex": "<bytes>"}` (the row-major bytes,
//! little-endian), filled like an Input before each function. Numbers are
//! encoded in the set's dtype by the conversion rule (read as float64 first,
//! then rounded to nearest even; integers must fit the dtype). A value
//! lncsplit cannot take is 9403 naming the set.

use serde_json::Value;

use super::exec::LOCATION;
use super::numeric::dtype::{int_to_float, DType};
use crate::bir::memory::MemoryLocationSet;
use crate::error::{Error, Result};

fn bad(function: &str, set: &MemoryLocationSet, why: String) -> Error {
    Error::neuron_at(
        9403,
        format!("values of Const set {} of function {function}: {why}", set.name),
        LOCATION,
        format!("function {function}, set {}", set.name),
    )
}

/// The partition-major bytes a Const set's `values` fill, if it has them.
pub fn const_bytes(function: &str, set: &MemoryLocationSet) -> Result<Option<Vec<u8>>> {
    if set.kind.as_deref() != Some("Const") {
        return Ok(None);
    }
    let Some(values) = set.extra.as_ref().and_then(|x| x.get("values")) else {
        return Ok(None);
    };
    let dtype = DType::parse(&set.dtype);
    let es = dtype.size();
    let count: usize = set.tensor_shape.iter().map(|&d| d.max(0) as usize).product();
    let row_major = match values {
        Value::Object(o) => {
            let hex = o
                .get("hex")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(function, set, "an object value must be {\"hex\": \"…\"}".into()))?;
            let bytes =
                decode_hex(hex).ok_or_else(|| bad(function, set, "hex is not an even run of hex digits".into()))?;
            if bytes.len() != count * es {
                return Err(bad(
                    function,
                    set,
                    format!("{} bytes for {count} elements of {es} bytes", bytes.len()),
                ));
            }
            bytes
        }
        Value::Array(a) => {
            if a.len() != count {
                return Err(bad(function, set, format!("{} numbers for {count} elements", a.len())));
            }
            let mut out = Vec::with_capacity(count * es);
            for v in a {
                let bits = encode(v, dtype).map_err(|why| bad(function, set, why))?;
                out.extend_from_slice(&bits.to_le_bytes()[..es]);
            }
            out
        }
        v => return Err(bad(function, set, format!("{v} is neither a list nor {{\"hex\": …}}"))),
    };
    Ok(Some(partition_major(
        &row_major,
        &set.tensor_shape,
        set.partition_dim(),
        es,
    )))
}

fn encode(v: &Value, dtype: DType) -> std::result::Result<u64, String> {
    let num = match v {
        Value::Number(n) => n,
        Value::String(s) => {
            return match (dtype.format(), s.trim().parse::<f64>()) {
                (Some(f), Ok(x)) => Ok(f.encode(x)),
                _ => Err(format!("{v} is not a number of {}", dtype.name())),
            };
        }
        _ => return Err(format!("{v} is not a number")),
    };
    if let Some(f) = dtype.format() {
        if let Some(i) = num.as_i64() {
            return Ok(int_to_float(i128::from(i), f));
        }
        return num
            .as_f64()
            .map(|x| f.encode(x))
            .ok_or_else(|| format!("{v} is not a number"));
    }
    let (bits, signed) = dtype.int().ok_or_else(|| format!("{} takes no values", dtype.name()))?;
    let i = num
        .as_i64()
        .map(i128::from)
        .or_else(|| num.as_u64().map(i128::from))
        .ok_or_else(|| format!("{v} is not an integer of {}", dtype.name()))?;
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    if i < lo || i > hi || (dtype == DType::Bool && i > 1) {
        return Err(format!("{v} does not fit {}", dtype.name()));
    }
    Ok(i as u64)
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// Row-major elements of `shape` moved to partition-major (the partition
/// dim first, the others in order).
fn partition_major(b: &[u8], shape: &[i64], pdim: usize, es: usize) -> Vec<u8> {
    if pdim == 0 || shape.len() < 2 {
        return b.to_vec();
    }
    let dims: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    let mut strides = vec![1usize; dims.len()];
    for d in (0..dims.len() - 1).rev() {
        strides[d] = strides[d + 1] * dims[d + 1];
    }
    let order: Vec<usize> = std::iter::once(pdim)
        .chain((0..dims.len()).filter(|&d| d != pdim))
        .collect();
    let mut out = Vec::with_capacity(b.len());
    let mut idx = vec![0usize; dims.len()];
    let total: usize = dims.iter().product();
    for _ in 0..total {
        let src: usize = order.iter().zip(&idx).map(|(&d, &i)| i * strides[d]).sum();
        out.extend_from_slice(&b[src * es..src * es + es]);
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < dims[order[k]] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}
