//! Bindings of the simulator (contract §3.8). `lncsplit.sim` (Python) turns
//! numpy arrays into partition-major bytes and back; these calls plan a run
//! and run it with the GIL released.

use std::borrow::Cow;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyDict, PyList};

use super::module::PyBirModule;
use crate::bir::Module;
use crate::sim::{self, SimInput, Writer};

/// `(lnc, symbolic, sets)`: how `modules` would run and every Input/Output
/// set of every core as `(core, function, set, kind, dtype, shape,
/// partition_dim, esize)`.
#[pyfunction]
#[pyo3(signature = (modules, lnc = None))]
#[allow(clippy::type_complexity)]
pub(crate) fn sim_plan(
    modules: Vec<PyRef<'_, PyBirModule>>,
    lnc: Option<usize>,
) -> PyResult<(
    usize,
    bool,
    Vec<(usize, String, String, String, String, Vec<i64>, usize, i64)>,
)> {
    let refs: Vec<&Module> = modules.iter().map(|m| m.module()).collect();
    let plan = sim::plan(&refs, lnc)?;
    let sets = sim::sets(&plan)
        .into_iter()
        .map(|s| {
            (
                s.core,
                s.function.to_string(),
                s.set.to_string(),
                s.kind.to_string(),
                s.dtype.to_string(),
                s.shape,
                s.partition_dim,
                s.esize,
            )
        })
        .collect();
    Ok((plan.lnc, plan.symbolic, sets))
}

fn writer_tuple(w: &Option<Writer>) -> Option<(usize, String)> {
    w.as_ref().map(|w| (w.core, w.instruction.to_string()))
}

/// Run the simulator. `inputs`: `(core, function, set, bytes)` with the
/// set's bytes partition-major. Returns a dict with `lnc`, `symbolic`,
/// `steps`, `elements`, `outputs` (`(core, function, set, esize, bytes, writers)`:
/// the bytes a uint8 array, the writers a uint32 array per element — both
/// moved, not copied), `writers` (`(core, name)` of
/// writer id k+1) and `races` (dicts).
#[pyfunction]
#[pyo3(signature = (modules, inputs, lnc = None))]
pub(crate) fn sim_run<'py>(
    py: Python<'py>,
    modules: Vec<PyRef<'py, PyBirModule>>,
    inputs: Vec<(usize, String, String, PyBackedBytes)>,
    lnc: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let refs: Vec<&Module> = modules.iter().map(|m| m.module()).collect();
    // the Python bytes are read in place (no copy of each Input set)
    let inputs: Vec<SimInput<PyBackedBytes>> = inputs
        .into_iter()
        .map(|(core, function, set, bytes)| SimInput {
            core,
            function,
            set,
            bytes,
        })
        .collect();
    let mut r = py.detach(|| sim::run_with(&refs, lnc, &inputs))?;
    let d = PyDict::new(py);
    d.set_item("lnc", r.lnc)?;
    d.set_item("symbolic", r.symbolic)?;
    d.set_item("steps", r.steps)?;
    d.set_item("elements", r.elements)?;
    let outputs = PyList::empty(py);
    for o in std::mem::take(&mut r.outputs) {
        outputs.append((
            o.core,
            &*o.function,
            &*o.set,
            o.esize,
            PyArray1::from_vec(py, o.bytes),
            PyArray1::from_vec(py, o.writers),
        ))?;
    }
    d.set_item("outputs", outputs)?;
    let writers: Vec<(usize, String)> = r.writers.iter().map(|w| (w.core, w.instruction.to_string())).collect();
    d.set_item("writers", writers)?;
    let races = PyList::empty(py);
    for x in &r.races {
        let rd = PyDict::new(py);
        rd.set_item("function", &*x.function)?;
        rd.set_item("interval", x.interval)?;
        rd.set_item("sync", x.sync.as_deref())?;
        rd.set_item("location", (x.location.core, &*x.location.name))?;
        rd.set_item("partition", x.partition)?;
        rd.set_item("byte", x.byte)?;
        rd.set_item("bytes", x.bytes)?;
        rd.set_item("forward", writer_tuple(&x.forward))?;
        rd.set_item("reverse", writer_tuple(&x.reverse))?;
        races.append(rd)?;
    }
    d.set_item("races", races)?;
    let opaque: Vec<(usize, String, String, String, String)> = r
        .opaque
        .iter()
        .map(|o| {
            (
                o.core,
                o.function.to_string(),
                o.instruction.to_string(),
                o.opcode.to_string(),
                o.why.clone(),
            )
        })
        .collect();
    d.set_item("opaque", opaque)?;
    Ok(d)
}

/// Float64 values encoded in a float `dtype` (nearest even, NaN canonical);
/// None for a dtype that is not a float.
#[pyfunction]
pub(crate) fn sim_encode(py: Python<'_>, values: PyBackedBytes, dtype: &str) -> Option<Cow<'static, [u8]>> {
    let v: Vec<f64> = values
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    py.detach(|| sim::encode_values(&v, dtype)).map(Cow::Owned)
}

/// The exact float64 values of float `dtype` elements; None for another dtype.
#[pyfunction]
pub(crate) fn sim_decode(py: Python<'_>, data: PyBackedBytes, dtype: &str) -> Option<Cow<'static, [u8]>> {
    py.detach(|| sim::decode_values(&data, dtype))
        .map(|v| Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect()))
}
