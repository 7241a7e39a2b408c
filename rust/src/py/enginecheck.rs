//! Binding of enginecheck (contract §3.10): `_core.enginecheck(module)` runs
//! the check with the GIL released and returns the report as its JSON text;
//! `_core.enginecheck_why(module, a, b)` explains the order between two
//! instructions. `lncsplit.passes.enginecheck` builds the typed report.

use pyo3::prelude::*;

use super::module::PyBirModule;
use crate::passes::enginecheck as check;

/// The engine report of one core module, as JSON (the detailed form: the
/// Python layer's `to_json()` keeps exactly §3.10's keys).
#[pyfunction]
pub(crate) fn enginecheck(py: Python<'_>, module: PyRef<'_, PyBirModule>) -> PyResult<String> {
    let m = module.module();
    let report = py.detach(|| check::enginecheck(m))?;
    Ok(report.to_detailed_value().to_string())
}

/// The chain of orderings between instructions `a` and `b` of one core
/// module, or where it breaks, as JSON.
#[pyfunction]
pub(crate) fn enginecheck_why(py: Python<'_>, module: PyRef<'_, PyBirModule>, a: &str, b: &str) -> PyResult<String> {
    let m = module.module();
    let why = py.detach(|| check::why::why(m, a, b))?;
    Ok(why.to_string())
}
