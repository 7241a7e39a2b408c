//! `lncsplit info` and the N of `verify`/`memory` without `--lnc`, read from
//! the typed model (no round trip through `to_json()` and `json.loads`).

use pyo3::prelude::*;

use super::convert::json_to_py;
use super::module::PyBirModule;

/// The `lncsplit info` description of a module, as a dict.
#[pyfunction]
pub(crate) fn describe_module<'py>(py: Python<'py>, module: PyRef<'_, PyBirModule>) -> PyResult<Bound<'py, PyAny>> {
    let m = module.module();
    let v = py.detach(|| crate::bir::describe::describe(m));
    json_to_py(py, &v)
}

/// The N a symbolic module was written for: its largest ShardId bound, or
/// None when it has none.
#[pyfunction]
pub(crate) fn inferred_lnc(module: PyRef<'_, PyBirModule>) -> Option<i64> {
    crate::bir::describe::inferred_lnc(module.module())
}
