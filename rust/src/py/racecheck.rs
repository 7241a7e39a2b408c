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

/// The symbolic checker's sweep (contract §3.11) over the N in `lnc`, given
/// as intervals `(lo, hi)` (hi None: unbounded), as its JSON plan: invalid N,
/// proved pairs, unknowns and the queries left for the solver.
#[pyfunction]
pub(crate) fn racecheck_symbolic_plan(
    py: Python<'_>,
    module: PyRef<'_, PyBirModule>,
    lnc: Vec<(i64, Option<i64>)>,
) -> PyResult<String> {
    let set = lnc_set(lnc);
    let m = module.module();
    let v = py.detach(|| crate::passes::racecheck_symbolic::plan(m, &set))?;
    Ok(v.to_string())
}

/// The N of `lnc`, given as intervals `(lo, hi)` (hi None: unbounded).
fn lnc_set(lnc: Vec<(i64, Option<i64>)>) -> crate::passes::racecheck_symbolic::nset::ISet {
    use crate::passes::racecheck_symbolic::nset::ISet;
    (lnc.into_iter()).fold(ISet::empty(), |set, (lo, hi)| set.union(&ISet::interval(lo, hi)))
}

/// JSON kept in Rust until it is asked for: the symbolic checker's proved
/// pairs (one entry per candidate pair, 18k on the benchmark's module, whose
/// text and parse cost more than the sweep that found them).
#[pyclass(module = "lncsplit._core", frozen)]
pub(crate) struct DeferredJson(serde_json::Value);

#[pymethods]
impl DeferredJson {
    /// The JSON text (made with the GIL released).
    fn dumps(&self, py: Python<'_>) -> String {
        py.detach(|| self.0.to_string())
    }

    fn __len__(&self) -> usize {
        self.0.as_array().map_or(0, Vec::len)
    }
}

/// [`racecheck_symbolic_plan`] with the plan's `proved` list apart: the plan
/// without it as JSON text, and the list kept in Rust ([`DeferredJson`]).
#[pyfunction]
pub(crate) fn racecheck_symbolic_sweep(
    py: Python<'_>,
    module: PyRef<'_, PyBirModule>,
    lnc: Vec<(i64, Option<i64>)>,
) -> PyResult<(String, DeferredJson)> {
    let set = lnc_set(lnc);
    let m = module.module();
    let (text, proved) = py.detach(|| {
        crate::passes::racecheck_symbolic::plan(m, &set).map(|mut v| {
            let proved = v.as_object_mut().and_then(|o| o.remove("proved")).unwrap_or_default();
            (v.to_string(), proved)
        })
    })?;
    Ok((text, DeferredJson(proved)))
}

/// `with_shard_bound(module, n)`: a copy with every ShardId's `ub` set to n.
#[pyfunction]
pub(crate) fn with_shard_bound(py: Python<'_>, module: PyRef<'_, PyBirModule>, n: i64) -> PyResult<PyBirModule> {
    let m = module.module();
    let out = py.detach(|| crate::passes::racecheck_symbolic::shard_bound::with_shard_bound(m, n))?;
    Ok(PyBirModule::new(out))
}
