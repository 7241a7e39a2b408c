//! Written JSON handed to Python as `str` or `bytes`, without `unsafe`.
//!
//! The writer's output arrives in chunks (`bir::dump::Chunks`).
//! `bytes`: the object is allocated at its final size (`PyBytes::new_with`)
//! and the chunks are copied into it in parallel with the GIL released.
//! `str`: the chunks are joined in parallel with the GIL released, then
//! CPython builds the `str` from the UTF-8 (`PyString::from_bytes`: for
//! ASCII output one word-at-a-time copy, no separate validation pass).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::module::PyBirModule;
use crate::bir::dump::Chunks;
use crate::bir::Module;

/// The chunks as a Python `str`.
pub(crate) fn str<'py>(py: Python<'py>, chunks: Chunks) -> PyResult<Bound<'py, PyString>> {
    let joined = py.detach(|| chunks.concat_parallel());
    let s = PyString::from_bytes(py, &joined);
    py.detach(|| drop(joined));
    s
}

/// The chunks as Python `bytes`.
pub(crate) fn bytes<'py>(py: Python<'py>, chunks: Chunks) -> PyResult<Bound<'py, PyBytes>> {
    let out = PyBytes::new_with(py, chunks.len(), |dst| {
        py.detach(|| chunks.copy_into(dst));
        Ok(())
    });
    py.detach(|| drop(chunks));
    out
}

/// Every module as BIR-JSON `bytes` (the N cores of a split): written with
/// the GIL released, on rayon's pool when `parallel`, each module's big
/// blocks in parallel chunks too. The same bytes as `m.to_bytes(version)`
/// for each module in turn.
#[pyfunction]
#[pyo3(signature = (modules, version = 2, parallel = true))]
pub(crate) fn to_bytes_all<'py>(
    py: Python<'py>,
    modules: Vec<PyRef<'py, PyBirModule>>,
    version: u32,
    parallel: bool,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let refs: Vec<&Module> = modules.iter().map(|m| m.module()).collect();
    let all = py.detach(|| crate::bir::dump::dump_modules_chunks(&refs, version, parallel))?;
    all.into_iter().map(|c| bytes(py, c)).collect()
}
