//! Bindings of bir_linker (contract §3.7): `link`, `unlink`, `tensor_map`.
//! Each call borrows the modules, runs with the GIL released and returns new
//! modules; the inputs are not modified.

use pyo3::prelude::*;

use super::module::PyBirModule;
use crate::bir::Module;
use crate::passes::bir_linker;

/// Link the N core modules of one kernel (core order) into one module.
#[pyfunction]
pub(crate) fn link(py: Python<'_>, cores: Vec<PyRef<'_, PyBirModule>>) -> PyResult<PyBirModule> {
    let refs: Vec<&Module> = cores.iter().map(|m| m.module()).collect();
    let linked = py.detach(|| bir_linker::link(&refs))?;
    Ok(PyBirModule::new(linked))
}

/// The N core modules of a linked module, in core order.
#[pyfunction]
pub(crate) fn unlink(py: Python<'_>, module: PyRef<'_, PyBirModule>) -> PyResult<Vec<PyBirModule>> {
    let m = module.module();
    let cores = py.detach(|| bir_linker::unlink(m))?;
    Ok(cores.into_iter().map(PyBirModule::new).collect())
}

/// The tensor map of a linked module, as JSON text.
#[pyfunction]
pub(crate) fn tensor_map_json(py: Python<'_>, module: PyRef<'_, PyBirModule>) -> PyResult<String> {
    let m = module.module();
    let v = py.detach(|| bir_linker::tensor_map(m))?;
    Ok(v.to_string())
}

/// True when the module carries the marks `link` writes (`unlink` checks the rest).
#[pyfunction]
pub(crate) fn is_linked(module: PyRef<'_, PyBirModule>) -> bool {
    bir_linker::is_linked(module.module())
}
