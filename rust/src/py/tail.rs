//! Bindings of the LNC tail passes that rewrite cores in place
//! (`lower_local_collectives`, `extend_shared_lifetimes`). Each call moves the
//! cores' Rust values out of their Python objects, runs the pass with the GIL
//! released and puts them back, so the objects keep their identity.

use pyo3::prelude::*;

use super::module::PyBirModule;
use crate::analysis::cores as core_set;
use crate::bir::Module;
use crate::passes::extend_shared_lifetimes as extend;
use crate::passes::lower_local_collectives::{self as lower, LowerOptions};

/// The same Python object twice would be taken twice (and lose a module).
fn distinct(modules: &[Py<PyBirModule>]) -> crate::Result<()> {
    for (i, m) in modules.iter().enumerate() {
        if let Some(j) = modules[..i].iter().position(|x| x.is(m)) {
            return Err(core_set::bad_core_set(
                core_set::CORES_MESSAGE,
                "lncsplit/cores",
                format!("cores[{j}] and cores[{i}] are the same module object"),
            ));
        }
    }
    Ok(())
}

/// Run `pass` on the cores in place, the GIL released.
fn in_place<T: Send>(
    py: Python<'_>,
    cores: &[Py<PyBirModule>],
    pass: impl FnOnce(&mut [Module]) -> crate::Result<T> + Send,
) -> PyResult<T> {
    distinct(cores)?;
    super::passes::on_taken(py, cores, pass)
}

/// `lower_local_collectives` (order 80): returns `(function, name, kind, how)`
/// for every collective.
#[pyfunction]
#[pyo3(signature = (cores, sendrecv_to_gpsimd_max_bpp = 1024))]
pub(crate) fn lower_local_collectives(
    py: Python<'_>,
    cores: Vec<Py<PyBirModule>>,
    sendrecv_to_gpsimd_max_bpp: i64,
) -> PyResult<Vec<(String, String, String, String)>> {
    let opts = LowerOptions {
        sendrecv_to_gpsimd_max_bpp,
    };
    let report = in_place(py, &cores, |m| lower::lower_local_collectives(m, &opts))?;
    Ok(report
        .into_iter()
        .map(|l| (l.function, l.name, l.kind.to_string(), l.how.to_string()))
        .collect())
}

/// `(function, k, location, start block, end block)`.
type ExtendedRow = (String, usize, String, String, String);

/// `extend_shared_lifetimes` (order 81): returns `(function, k, location,
/// start block, end block)` for every bracketed location.
#[pyfunction]
pub(crate) fn extend_shared_lifetimes(py: Python<'_>, cores: Vec<Py<PyBirModule>>) -> PyResult<Vec<ExtendedRow>> {
    let report = in_place(py, &cores, extend::extend_shared_lifetimes)?;
    Ok(report
        .into_iter()
        .map(|e| (e.function, e.k, e.location, e.start_block, e.end_block))
        .collect())
}
