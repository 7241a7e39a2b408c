//! JSON ↔ Python objects, one converter each way: module views hand out
//! attributes and `to_dict()` results, pelican `Expr.to_json()` its wire form,
//! and `Context.from_json` reads a Python dict.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::error::Error;

/// A JSON number as a Python `int` or `float`, exactly: numbers are kept
/// as written (serde_json's `arbitrary_precision`), so an integer beyond 64
/// bits becomes an `int` of the same value and a float is parsed from its
/// own text.
pub(crate) fn number_to_py<'py>(py: Python<'py>, n: &serde_json::Number) -> PyResult<Bound<'py, PyAny>> {
    if let Some(i) = n.as_i64() {
        return Ok(i.into_pyobject(py)?.into_any());
    }
    if let Some(u) = n.as_u64() {
        return Ok(u.into_pyobject(py)?.into_any());
    }
    let text = n.to_string();
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        // An integer beyond 64 bits: Python's int parses it exactly.
        return py.get_type::<PyInt>().call1((text,));
    }
    py.get_type::<PyFloat>().call1((text,))
}

/// serde_json value → Python object (dict, list, str, int, float, bool, None).
pub(crate) fn json_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => number_to_py(py, n)?,
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(json_to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, json_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// Python JSON-like object → `serde_json::Value`, at most `max_depth` levels
/// deep so no input can exhaust the stack. Errors are pelican wire errors
/// naming the path of the bad value (`.key[3]`).
pub(crate) fn py_to_json(obj: &Bound<'_, PyAny>, max_depth: u32) -> PyResult<Value> {
    to_json(obj, 0, max_depth, &mut String::new())
}

fn wire_err(msg: impl Into<String>, path: &str) -> PyErr {
    Error::wire(msg, path).into()
}

fn to_json(obj: &Bound<'_, PyAny>, depth: u32, max_depth: u32, path: &mut String) -> PyResult<Value> {
    if depth > max_depth {
        return Err(wire_err(format!("JSON nested deeper than {max_depth} levels"), path));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.cast::<PyInt>().is_ok() {
        return int_to_json(obj, path);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| wire_err(format!("{obj} is not a JSON number"), path));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return dict_to_json(d, depth, max_depth, path);
    }
    if obj.cast::<PyList>().is_ok() || obj.cast::<PyTuple>().is_ok() {
        return seq_to_json(obj, depth, max_depth, path);
    }
    Err(wire_err(
        format!("{} is not a JSON value", obj.get_type().name()?),
        path,
    ))
}

fn int_to_json(obj: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
    if let Ok(v) = obj.extract::<i64>() {
        return Ok(Value::from(v));
    }
    if let Ok(v) = obj.extract::<u64>() {
        return Ok(Value::from(v));
    }
    Err(wire_err(format!("integer {obj} does not fit in 64 bits"), path))
}

fn dict_to_json(d: &Bound<'_, PyDict>, depth: u32, max_depth: u32, path: &mut String) -> PyResult<Value> {
    let mut m = serde_json::Map::with_capacity(d.len());
    for (k, v) in d.iter() {
        let Ok(k) = k.cast::<PyString>() else {
            return Err(wire_err(format!("JSON object key {k} is not a string"), path));
        };
        let k = k.to_cow()?.into_owned();
        let len = path.len();
        path.push('.');
        path.push_str(&k);
        let v = to_json(&v, depth + 1, max_depth, path)?;
        path.truncate(len);
        m.insert(k, v);
    }
    Ok(Value::Object(m))
}

fn seq_to_json(obj: &Bound<'_, PyAny>, depth: u32, max_depth: u32, path: &mut String) -> PyResult<Value> {
    let mut out = Vec::new();
    for (i, item) in obj.try_iter()?.enumerate() {
        let len = path.len();
        path.push_str(&format!("[{i}]"));
        out.push(to_json(&item?, depth + 1, max_depth, path)?);
        path.truncate(len);
    }
    Ok(Value::Array(out))
}
