//! JSON numbers → Python, exactly: numbers are kept as written
//! (serde_json's `arbitrary_precision`), so an integer beyond 64 bits becomes
//! a Python `int` of the same value and a float is parsed from its own text.

use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt};

/// A JSON number as a Python `int` or `float`.
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
