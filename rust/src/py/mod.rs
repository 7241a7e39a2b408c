//! PyO3 bindings: thin wrappers over the pure-Rust core. Every heavy call
//! copies its inputs out of Python objects and runs inside `py.detach`.

use pyo3::prelude::*;

pub(crate) mod errors;
pub(crate) mod module;
pub(crate) mod passes;
pub(crate) mod pelican;
pub(crate) mod racecheck;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    pelican::register(m)?;
    module::register(m)?;
    passes::register(m)?;
    racecheck::register(m)?;
    Ok(())
}
