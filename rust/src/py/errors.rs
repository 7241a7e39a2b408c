//! Core errors → the Python `LncsplitError` family, which is defined in
//! `lncsplit/errors.py` so it can carry attributes (`code`, `location`,
//! `path`) and be subclassed freely.
//!
//! `import_exception!` caches each class after its first use, and
//! `From<Error> for PyErr` builds a lazy exception (the Python object is only
//! made if the error reaches Python), so `?` works on every core `Result`.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::error::Error;

pyo3::import_exception!(lncsplit.errors, PelicanAssertion);
pyo3::import_exception!(lncsplit.errors, PelicanWireError);
pyo3::import_exception!(lncsplit.errors, NeuronAssertion);
pyo3::import_exception!(lncsplit.errors, BirJsonError);
pyo3::import_exception!(lncsplit.errors, LncsplitIOError);

impl From<Error> for PyErr {
    #[cold]
    fn from(e: Error) -> PyErr {
        match e {
            Error::Pelican { message, location } => PelicanAssertion::new_err((message, location)),
            Error::PelicanWire { message, path } => PelicanWireError::new_err((message, path)),
            Error::BirJson { message, path } => BirJsonError::new_err((message, path)),
            Error::Neuron {
                code,
                message,
                location,
                detail,
            } => NeuronAssertion::new_err((code, message, location, detail)),
            Error::Io { path, source } => io_error(path, source),
        }
    }
}

/// `LncsplitIOError(errno, strerror, filename)` for an OS error — Python then
/// picks the class that is also the matching `OSError` subclass
/// (`FileNotFoundError` for `ENOENT`, …) — and `LncsplitIOError(message)` for
/// an error the OS did not raise.
#[cold]
fn io_error(path: PathBuf, source: std::io::Error) -> PyErr {
    let Some(code) = source.raw_os_error() else {
        return LncsplitIOError::new_err((Error::Io { path, source }.to_string(),));
    };
    // std prints an OS error as "<strerror> (os error <code>)".
    let text = source.to_string();
    let strerror = text
        .strip_suffix(&format!(" (os error {code})"))
        .unwrap_or(&text)
        .to_string();
    let filename = (!path.as_os_str().is_empty()).then(|| path.into_os_string());
    LncsplitIOError::new_err((code, strerror, filename))
}
