//! Bindings of the split passes. Each call moves the modules' Rust values out
//! of their Python objects, runs the pass with the GIL released, and puts them
//! back, so the Python objects keep their identity (`split(mods, n)[n-1] is
//! mods[0]`).

use pyo3::prelude::*;

use super::module::PyBirModule;
use crate::bir::Module;
use crate::passes::lnc_splitter::{self, CloneMode, SplitOptions};
use crate::passes::{birverifier, expand_replication as expand, lnc_verifier, memory_clear};

fn clone_mode(s: &str) -> PyResult<CloneMode> {
    match s {
        "structural" => Ok(CloneMode::Structural),
        "json" => Ok(CloneMode::Json),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "clone must be 'structural' or 'json', got {other:?}"
        ))),
    }
}

/// Move the Rust modules out of their Python objects (their views go stale:
/// the pass may restructure them).
fn take_all(py: Python<'_>, mods: &[Py<PyBirModule>]) -> PyResult<Vec<Module>> {
    mods.iter().map(|m| Ok(m.try_borrow_mut(py)?.take())).collect()
}

fn put_back(py: Python<'_>, mods: &[Py<PyBirModule>], owned: Vec<Module>) -> PyResult<()> {
    for (m, inner) in mods.iter().zip(owned) {
        m.try_borrow_mut(py)?.put(inner);
    }
    Ok(())
}

/// Run `pass` on the modules moved out of their Python objects, the GIL
/// released, and put them back (also when the pass fails), so the objects
/// keep their identity. Every binding that rewrites modules goes through here.
pub(super) fn on_taken<T: Send>(
    py: Python<'_>,
    mods: &[Py<PyBirModule>],
    pass: impl FnOnce(&mut [Module]) -> crate::Result<T> + Send,
) -> PyResult<T> {
    let mut owned = take_all(py, mods)?;
    let r = py.detach(|| pass(&mut owned));
    put_back(py, mods, owned)?;
    Ok(r?)
}

/// `lnc_splitter` over the module list: returns M·N modules, `[module][core]`.
#[pyfunction]
#[pyo3(signature = (modules, lnc, clone = "structural", parallel = true))]
pub(crate) fn split(
    py: Python<'_>,
    modules: Vec<Py<PyBirModule>>,
    lnc: usize,
    clone: &str,
    parallel: bool,
) -> PyResult<Vec<Py<PyBirModule>>> {
    let opts = SplitOptions {
        lnc,
        clone: clone_mode(clone)?,
        parallel,
    };
    if lnc == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err("lnc must be >= 1"));
    }
    if lnc == 1 {
        return Ok(modules);
    }
    let clones: Vec<Vec<Module>> = on_taken(py, &modules, |owned| {
        owned.iter_mut().map(|m| lnc_splitter::split_module(m, &opts)).collect()
    })?;
    let mut out = Vec::with_capacity(modules.len() * lnc);
    for (orig, cl) in modules.iter().zip(clones) {
        for m in cl {
            out.push(Py::new(py, PyBirModule::new(m))?);
        }
        out.push(orig.clone_ref(py));
    }
    Ok(out)
}

/// `concretizeModule` of one module to one core, in place (for tools/tests).
#[pyfunction]
pub(crate) fn concretize(py: Python<'_>, module: Py<PyBirModule>, core: i64) -> PyResult<()> {
    on_taken(py, std::slice::from_ref(&module), |owned| {
        lnc_splitter::concretize_module(&mut owned[0], core)
    })
}

#[pyfunction]
pub(crate) fn expand_replication(py: Python<'_>, module: Py<PyBirModule>) -> PyResult<()> {
    let mut owned = take_all(py, std::slice::from_ref(&module))?;
    let r = py.detach(|| expand::expand_replication(&mut owned[0]));
    put_back(py, std::slice::from_ref(&module), owned)?;
    Ok(r?)
}

#[pyfunction]
pub(crate) fn verify_symbolic(py: Python<'_>, module: PyRef<'_, PyBirModule>, lnc: usize) -> PyResult<()> {
    let m = &module.module();
    Ok(py.detach(|| lnc_verifier::verify_symbolic(m, lnc))?)
}

#[pyfunction]
pub(crate) fn verify_concretized(py: Python<'_>, modules: Vec<PyRef<'_, PyBirModule>>, lnc: usize) -> PyResult<()> {
    let refs: Vec<&Module> = modules.iter().map(|m| m.module()).collect();
    Ok(py.detach(|| lnc_verifier::verify_concretized(&refs, lnc))?)
}

#[pyfunction]
#[pyo3(signature = (module, lnc = 1))]
pub(crate) fn verify_bir(py: Python<'_>, module: PyRef<'_, PyBirModule>, lnc: usize) -> PyResult<()> {
    let m = &module.module();
    Ok(py.detach(|| birverifier::verify_module(m, lnc))?)
}

/// True when any expression of the module still contains a ShardId.
#[pyfunction]
pub(crate) fn has_shard_ids(module: PyRef<'_, PyBirModule>) -> bool {
    birverifier::has_shard_anywhere(module.module())
}

/// Free the modules' contents now, with the GIL released (a large module
/// takes tens of milliseconds to drop; inside Python's deallocator that time
/// would hold the GIL and serialize corpus worker threads). The objects stay
/// valid as empty modules.
#[pyfunction]
pub(crate) fn release(py: Python<'_>, modules: Vec<Py<PyBirModule>>) -> PyResult<()> {
    let owned = take_all(py, &modules)?;
    py.detach(move || drop(owned));
    Ok(())
}

/// `(arch_level, sb_size, sb_partitions, psum_banks, psum_bank_size,
/// psum_partitions, dram_bytes)` of one module's arch.
type GeometryRow = (i64, i64, i64, i64, i64, i64, i64);

/// Whether the memory checks (`check_memory`, or with `cc_only`
/// `check_collective_buffers`) provably find nothing on every module, each
/// with its arch's geometry; False means "run them" (see
/// `passes/memory_clear.rs`). The GIL is released.
#[pyfunction]
#[pyo3(signature = (modules, geometries, lnc, cc_buffer_bytes, cc_only = false))]
pub(crate) fn memory_proven_clear(
    py: Python<'_>,
    modules: Vec<PyRef<'_, PyBirModule>>,
    geometries: Vec<GeometryRow>,
    lnc: usize,
    cc_buffer_bytes: i64,
    cc_only: bool,
) -> PyResult<bool> {
    if geometries.len() != modules.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{} geometries for {} modules",
            geometries.len(),
            modules.len()
        )));
    }
    let work: Vec<(&Module, memory_clear::Question)> = modules
        .iter()
        .zip(geometries)
        .map(|(m, g)| {
            let geometry = memory_clear::Geometry {
                arch_level: g.0,
                sb_size: g.1,
                sb_partitions: g.2,
                psum_banks: g.3,
                psum_bank_size: g.4,
                psum_partitions: g.5,
                dram_bytes: g.6,
            };
            let q = memory_clear::Question {
                geometry,
                lnc,
                cc_buffer_bytes,
                cc_only,
            };
            (m.module(), q)
        })
        .collect();
    Ok(py.detach(|| work.iter().all(|(m, q)| memory_clear::proven_clear(m, q))))
}

/// The core-set rule (`analysis/cores.rs`, 9006) over what N files carry:
/// `ids[c]` is file c's `neuron_core_id`, `labels[c]` its name. None when
/// file c carries c for every c (one file: absent or 0); else the diagnosis
/// the passes give, in the files' names (`corpus/discovery.py`).
#[pyfunction]
pub(crate) fn diagnose_core_set(ids: Vec<Option<i64>>, labels: Vec<String>) -> PyResult<Option<String>> {
    if ids.len() != labels.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{} ids for {} labels",
            ids.len(),
            labels.len()
        )));
    }
    Ok(crate::analysis::cores::diagnose_ids(
        &ids,
        |i| labels[i].clone(),
        "file ncCC.json carries neuron_core_id CC",
    ))
}
