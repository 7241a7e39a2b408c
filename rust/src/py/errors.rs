//! Mapping of core errors onto the Python `LncsplitError` family, which is
//! defined in `lncsplit/errors.py` so it can carry attributes (`code`,
//! `location`, `path`) and be subclassed freely.

use pyo3::prelude::*;

use crate::error::Error;

fn raise<A>(py: Python<'_>, class: &str, args: A) -> PyErr
where
    A: for<'py> pyo3::call::PyCallArgs<'py>,
{
    match py.import("lncsplit.errors").and_then(|m| m.getattr(class)) {
        Ok(cls) => match cls.call1(args) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

/// Convert a core error into the matching Python exception.
pub(crate) fn to_pyerr(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Pelican { message, location } => raise(py, "PelicanAssertion", (message, location)),
        Error::PelicanWire { message, path } => raise(py, "PelicanWireError", (message, path)),
        Error::BirJson { message, path } => raise(py, "BirJsonError", (message, path)),
        Error::Neuron {
            code,
            message,
            location,
            detail,
        } => raise(py, "NeuronAssertion", (code, message, location, detail)),
        Error::Io(message) => raise(py, "LncsplitIOError", (message,)),
    }
}

/// `Result` → `PyResult` with the GIL token at hand.
pub(crate) trait IntoPy<T> {
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for crate::Result<T> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_pyerr(py, e))
    }
}
