//! Bindings of bir_linker (contract §3.7): `link`, `unlink`, `tensor_map`.
//! Each call borrows the modules, runs with the GIL released and returns new
//! modules; the inputs are not modified.

use pyo3::prelude::*;

use super::errors::IntoPy;
use super::module::PyBirModule;
use crate::bir::Module;
use crate::passes::bir_linker;

/// Link the N core modules of one kernel (core order) into one module.
#[pyfunction]
fn link(py: Python<'_>, cores: Vec<PyRef<'_, PyBirModule>>) -> PyResult<PyBirModule> {
    let refs: Vec<&Module> = cores.iter().map(|m| &m.inner).collect();
    let linked = py.detach(|| bir_linker::link(&refs)).py(py)?;
    Ok(PyBirModule::new(linked))
}

/// The N core modules of a linked module, in core order.
#[pyfunction]
fn unlink(py: Python<'_>, module: PyRef<'_, PyBirModule>) -> PyResult<Vec<PyBirModule>> {
    let m = &module.inner;
    let cores = py.detach(|| bir_linker::unlink(m)).py(py)?;
    Ok(cores.into_iter().map(PyBirModule::new).collect())
}

/// The tensor map of a linked module, as JSON text.
#[pyfunction]
fn tensor_map_json(py: Python<'_>, module: PyRef<'_, PyBirModule>) -> PyResult<String> {
    let m = &module.inner;
    let v = py.detach(|| bir_linker::tensor_map(m)).py(py)?;
    Ok(v.to_string())
}

/// True when the module has the layout `link` writes.
#[pyfunction]
fn is_linked(py: Python<'_>, module: PyRef<'_, PyBirModule>) -> bool {
    let m = &module.inner;
    py.detach(|| bir_linker::is_linked(m))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(link, m)?)?;
    m.add_function(wrap_pyfunction!(unlink, m)?)?;
    m.add_function(wrap_pyfunction!(tensor_map_json, m)?)?;
    m.add_function(wrap_pyfunction!(is_linked, m)?)?;
    Ok(())
}
