//! Binding of lnc_barriercheck (contract §3.6): `_core.racecheck(cores, mode)`
//! runs the checker with the GIL released and returns the report as its JSON
//! text; `lncsplit.barriercheck` builds the typed `RaceReport` from it.

use pyo3::prelude::*;

use super::module::PyBirModule;
use crate::bir::Module;
use crate::passes::lnc_barriercheck::{self, Mode};

/// The race report of the N core modules `cores` (core order) as JSON;
/// `parallel=False` walks the cores on the calling thread (same report).
#[pyfunction]
#[pyo3(signature = (cores, mode = "exact", parallel = true))]
pub(crate) fn racecheck(
    py: Python<'_>,
    cores: Vec<PyRef<'_, PyBirModule>>,
    mode: &str,
    parallel: bool,
) -> PyResult<String> {
    let mode = Mode::parse(mode).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!("mode must be 'exact' or 'interval', got {mode:?}"))
    })?;
    let refs: Vec<&Module> = cores.iter().map(|m| m.module()).collect();
    let report = py.detach(|| lnc_barriercheck::racecheck_with(&refs, mode, parallel))?;
    Ok(report.to_value().to_string())
}
