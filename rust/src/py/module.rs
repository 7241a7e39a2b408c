//! `lncsplit.Module` (contract §1, §4) and the module-level functions that
//! read, write and generate modules (`load`, `dump`, `generate_module`,
//! `generate_corpus`). The read-only views live in `py/views/`.
//!
//! The module counts its structural mutations in a *generation*: every call
//! that may change what an index path names (a pass run on it, `release`)
//! goes through [`PyBirModule::take`]/[`PyBirModule::put`] or
//! [`PyBirModule::module_mut`], which bump it, and every view checks it on
//! each access, so a view made before the change raises `IndexError` instead
//! of reading whatever now sits at its index.

use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use serde_json::Value;

use super::convert::json_to_py;
use super::output::{self, OutputBuffer};
use super::views::FunctionView;
use crate::bir::dump::Form;
use crate::bir::{Module, Spelling};
use crate::gen::GenOptions;

/// A `spelling=` argument (contract §1.7): None (the module's own),
/// `"lncsplit"` or `"compiler"`.
fn form(version: u32, spelling: Option<&str>) -> PyResult<Form> {
    let spelling = match spelling {
        None => None,
        Some(s) => Some(Spelling::from_name(s).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown spelling {s:?}: expected \"lncsplit\" or \"compiler\" (or None: the spelling read)"
            ))
        })?),
    };
    Ok(Form::new(version, spelling))
}

/// A BIR module (contract §1, §4).
#[pyclass(name = "Module", module = "lncsplit")]
pub struct PyBirModule {
    inner: Module,
    /// Bumped by every structural mutation (see the file header).
    generation: u64,
}

impl PyBirModule {
    pub(crate) fn new(inner: Module) -> Self {
        PyBirModule { inner, generation: 0 }
    }

    /// The module, read-only.
    pub(crate) fn module(&self) -> &Module {
        &self.inner
    }

    /// The module for a change that may move what index paths name: every
    /// view made before it becomes stale.
    pub(crate) fn module_mut(&mut self) -> &mut Module {
        self.generation += 1;
        &mut self.inner
    }

    /// The module for a write in place that leaves every index path naming
    /// what it named (a location's placement, a node appended to the
    /// expression arena): views made before it stay valid.
    pub(crate) fn module_mut_in_place(&mut self) -> &mut Module {
        &mut self.inner
    }

    /// Move the module out (leaving an empty one) to run a pass on it
    /// without the GIL; views made before become stale.
    pub(crate) fn take(&mut self) -> Module {
        std::mem::take(self.module_mut())
    }

    /// Put a (changed) module back after [`PyBirModule::take`].
    pub(crate) fn put(&mut self, m: Module) {
        *self.module_mut() = m;
    }

    /// The structural generation views compare against.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
}

thread_local! {
    /// The bytes of a buffer input (`bytearray`, `memoryview`), copied out of
    /// Python so parsing runs without the GIL; kept for the thread's next
    /// input (a corpus job reads file after file into one buffer).
    static INPUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffer input larger than this is not kept for the next one.
const KEEP_INPUT_BUFFER: usize = 64 << 20;

/// Copy a buffer-protocol input into the thread's reused buffer and run `f` on it.
fn with_buffer_input<T>(py: Python<'_>, buf: &pyo3::buffer::PyBuffer<u8>, f: impl FnOnce(&[u8]) -> T) -> PyResult<T> {
    INPUT.with_borrow_mut(|v| {
        // Resized from the last input's length, not from empty: the copy
        // overwrites every byte, so only a longer input's extra bytes are
        // zeroed first (clearing first zeroed all of them: 1 MB per corpus
        // file, 2.5 % of its load's instructions).
        v.resize(buf.len_bytes(), 0);
        buf.copy_to_slice(py, v)?;
        let out = f(v);
        if v.capacity() > KEEP_INPUT_BUFFER {
            *v = Vec::new();
        }
        Ok(out)
    })
}

/// Borrow `str` or `bytes` input as bytes without copying (a buffer such as
/// `bytearray` or `memoryview` is copied once, into a reused buffer).
fn with_input_bytes<T>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> T) -> PyResult<T> {
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(f(s.to_str()?.as_bytes()));
    }
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if data.is_instance_of::<pyo3::types::PyDict>() {
        // A parsed document: back to text with Python's json (exact ints).
        let text = data.py().import("json")?.call_method1("dumps", (data,))?;
        return Ok(f(text.cast::<PyString>()?.to_str()?.as_bytes()));
    }
    if let Ok(buf) = pyo3::buffer::PyBuffer::<u8>::get(data) {
        return with_buffer_input(data.py(), &buf, f);
    }
    Err(PyTypeError::new_err(format!(
        "Module.from_json expects str, bytes or dict (or a bytes-like buffer), got {}",
        data.get_type().name()?
    )))
}

#[pymethods]
impl PyBirModule {
    /// Parse BIR-JSON text (`str` or `bytes`); the GIL is released while parsing.
    /// `parallel=False` reads on the calling thread only: no pre-scan for big
    /// instruction arrays, nothing handed to rayon's pool (a corpus that
    /// already runs one file per core; same module or error either way).
    #[staticmethod]
    #[pyo3(signature = (data, parallel = true))]
    fn from_json(py: Python<'_>, data: &Bound<'_, PyAny>, parallel: bool) -> PyResult<Self> {
        let m = with_input_bytes(data, |b| {
            py.detach(|| crate::bir::load::load(b, crate::bir::load::LoadOptions { parallel }))
        })??;
        Ok(PyBirModule::new(m))
    }

    /// The module as BIR-JSON text (wire `version` 2, or 1 on request), in
    /// `spelling` (`"lncsplit"` | `"compiler"`; None: the spelling read).
    #[pyo3(signature = (version = 2, spelling = None))]
    fn to_json<'py>(&self, py: Python<'py>, version: u32, spelling: Option<&str>) -> PyResult<Bound<'py, PyString>> {
        let m = &self.inner;
        let f = form(version, spelling)?;
        let chunks = py.detach(|| crate::bir::dump::dump_module_chunks(m, f))?;
        output::str(py, chunks)
    }

    /// The module as BIR-JSON bytes (see `to_json`).
    #[pyo3(signature = (version = 2, spelling = None))]
    fn to_bytes<'py>(&self, py: Python<'py>, version: u32, spelling: Option<&str>) -> PyResult<Bound<'py, PyBytes>> {
        let m = &self.inner;
        let f = form(version, spelling)?;
        let chunks = py.detach(|| crate::bir::dump::dump_module_chunks(m, f))?;
        output::bytes(py, chunks)
    }

    /// The key names the module was read with and is written back in:
    /// `"lncsplit"` or `"compiler"` (contract §1.7).
    #[getter]
    fn spelling(&self) -> &'static str {
        self.inner.spelling.name()
    }

    /// A deep copy: `"structural"` (fast Rust clone) or `"json"` (the
    /// compiler's save → load round trip). Both are observably identical.
    #[pyo3(signature = (method = "structural"))]
    fn clone(&self, py: Python<'_>, method: &str) -> PyResult<Self> {
        let m = &self.inner;
        let inner = match method {
            "structural" => py.detach(|| m.structural_clone()),
            "json" => py.detach(|| m.json_clone())?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown clone method {other:?}: expected \"structural\" or \"json\""
                )))
            }
        };
        Ok(PyBirModule::new(inner))
    }

    fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
        self.clone(py, "structural")
    }

    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.clone(py, "structural")
    }

    /// Pickle as BIR-JSON bytes.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let ctor = py.get_type::<PyBirModule>().getattr("from_json")?;
        let bytes = slf.borrow().to_bytes(py, 2, None)?;
        Ok((ctor, (bytes,)))
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Renaming moves nothing, so views stay valid.
    #[setter]
    fn set_name(&mut self, name: String) {
        self.module_mut_in_place().name = name;
    }

    /// The concrete core id (attribute `neuron_core_id`), None while symbolic.
    #[getter]
    fn neuron_core_id(&self) -> Option<i64> {
        self.inner.neuron_core_id()
    }

    /// The wire version the module was read with (writers always emit 2).
    #[getter]
    fn version(&self) -> u32 {
        self.inner.version
    }

    /// Canonical arch name (`inferentia`, `sunda`, `gen3`, `core_v4`).
    #[getter]
    fn arch(&self) -> &'static str {
        self.inner.arch.name()
    }

    #[getter]
    fn artifact_path(&self) -> Option<&str> {
        self.inner.artifact_path.as_deref()
    }

    /// A copy of the module attributes.
    #[getter]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.attributes {
            Some(a) => json_to_py(py, &Value::Object(a.clone())),
            None => Ok(PyDict::new(py).into_any()),
        }
    }

    /// Views of the functions, in module order.
    #[getter]
    fn functions(slf: &Bound<'_, Self>) -> Vec<FunctionView> {
        let n = slf.borrow().inner.functions.len();
        (0..n).map(|f| FunctionView::new(slf, f)).collect()
    }

    /// The function named `name`, or None.
    fn function(slf: &Bound<'_, Self>, name: &str) -> Option<FunctionView> {
        let f = slf.borrow().inner.functions.iter().position(|f| &*f.name == name)?;
        Some(FunctionView::new(slf, f))
    }

    /// Number of instructions, loop bodies included.
    fn instruction_count(&self) -> usize {
        self.inner.instruction_count()
    }

    fn __repr__(&self) -> String {
        let core = match self.inner.neuron_core_id() {
            Some(c) => format!(" neuron_core_id={c}"),
            None => String::new(),
        };
        format!(
            "<lncsplit.Module {:?} arch={}{} functions={} instructions={}>",
            self.inner.name,
            self.inner.arch.name(),
            core,
            self.inner.functions.len(),
            self.inner.instruction_count()
        )
    }
}

// ---------------------------------------------------------------- functions

/// The streaming half of `lncsplit.dump` (`python/lncsplit/_atomic.py` owns
/// the policy: temporary name, rename, durability): write the module into
/// the new file `tmp`, naming `target` in errors; the GIL is released.
#[pyfunction]
#[pyo3(signature = (module, tmp, target, version = 2, fsync = true, spelling = None))]
pub(crate) fn write_module_file(
    py: Python<'_>,
    module: PyRef<'_, PyBirModule>,
    tmp: PathBuf,
    target: PathBuf,
    version: u32,
    fsync: bool,
    spelling: Option<&str>,
) -> PyResult<()> {
    let m = &module.inner;
    let f = form(version, spelling)?;
    Ok(py.detach(|| crate::bir::dump::write_module_file(m, f, &tmp, &target, fsync))?)
}

/// Internal (`lncsplit.load_cores`, dump roots): the core id a module's
/// `nc<cc>/` directory gives it when its file carries no `neuron_core_id`
/// (read by `neuron_core_id`, never written). None forgets it.
#[pyfunction]
pub(crate) fn set_implied_core(mut module: PyRefMut<'_, PyBirModule>, core: Option<i64>) -> PyResult<()> {
    if core.is_some_and(|c| c < 0) {
        return Err(PyValueError::new_err("a core id is >= 0"));
    }
    module.module_mut_in_place().implied_core = core;
    Ok(())
}

/// Internal: whether the module's file carries `neuron_core_id` (the
/// attribute), as opposed to a core id a dump root implied.
#[pyfunction]
pub(crate) fn written_core_id(module: PyRef<'_, PyBirModule>) -> Option<i64> {
    module.inner.written_core_id()
}

/// Internal (tests of the parallel loader): read BIR-JSON reading
/// instruction arrays of at least `min_elements` elements in parallel.
/// Returns the module (or the error it raises) and which way the load went:
/// `"serial"`, `"parallel"` or `"fallback"`.
#[pyfunction]
pub(crate) fn _load_traced(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    min_elements: usize,
) -> PyResult<(Py<PyAny>, &'static str)> {
    let (r, path) = with_input_bytes(data, |b| py.detach(|| crate::bir::load_module_traced(b, min_elements)))?;
    let path = match path {
        crate::bir::load::LoadPath::Serial => "serial",
        crate::bir::load::LoadPath::Parallel => "parallel",
        crate::bir::load::LoadPath::Fallback => "fallback",
    };
    let out = match r {
        Ok(m) => Py::new(py, PyBirModule::new(m))?.into_any(),
        Err(e) => PyErr::from(e).into_value(py).into_any(),
    };
    Ok((out, path))
}

/// A seeded synthetic symbolic module (`lncsplit gen`); `scheduled=True`: a
/// one-core scheduled module (`gen --scheduled`, contract §3.10).
#[pyfunction]
#[pyo3(signature = (seed, instructions, lnc = 2, arch = None, index = 0, racy = false, ap_partitions = None, ap_columns = None, numeric = false, lnc_generic = false, *, scheduled = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn generate_module(
    py: Python<'_>,
    seed: u64,
    instructions: usize,
    lnc: i64,
    arch: Option<String>,
    index: usize,
    racy: bool,
    ap_partitions: Option<i64>,
    ap_columns: Option<i64>,
    numeric: bool,
    lnc_generic: bool,
    scheduled: bool,
) -> PyResult<PyBirModule> {
    let opts = GenOptions {
        seed,
        instructions,
        lnc,
        arch,
        index,
        racy,
        ap_partitions,
        ap_columns,
        numeric,
        lnc_generic,
        scheduled,
    };
    let m = py.detach(|| crate::gen::generate_module(&opts))?;
    Ok(PyBirModule::new(m))
}

/// Write a synthetic corpus `dir/gen_0000.json …`; returns the paths. Each
/// module is generated with the GIL released and written through the one
/// write policy (`lncsplit._atomic.write_module_atomic`).
#[pyfunction]
#[pyo3(signature = (dir, modules, instructions, lnc = 2, seed = 0, racy = false, ap_partitions = None, ap_columns = None, numeric = false, lnc_generic = false, *, scheduled = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn generate_corpus(
    py: Python<'_>,
    dir: PathBuf,
    modules: usize,
    instructions: usize,
    lnc: i64,
    seed: u64,
    racy: bool,
    ap_partitions: Option<i64>,
    ap_columns: Option<i64>,
    numeric: bool,
    lnc_generic: bool,
    scheduled: bool,
) -> PyResult<Vec<PathBuf>> {
    let opts = GenOptions {
        seed,
        instructions,
        lnc,
        racy,
        ap_partitions,
        ap_columns,
        numeric,
        lnc_generic,
        scheduled,
        ..Default::default()
    };
    std::fs::create_dir_all(&dir).map_err(|e| crate::Error::io(&dir, e))?;
    let write = py.import("lncsplit._atomic")?.getattr("write_module_atomic")?;
    let mut out = Vec::with_capacity(modules);
    for k in 0..modules {
        let o = crate::gen::corpus_module_options(&opts, k);
        let m = py.detach(|| crate::gen::generate_module(&o))?;
        let path = dir.join(format!("gen_{k:04}.json"));
        let kw = pyo3::types::PyDict::new(py);
        kw.set_item("durable_now", py.None())?;
        write.call((PyBirModule::new(m), &path), Some(&kw))?;
        out.push(path);
    }
    Ok(out)
}

/// Every module as BIR-JSON `bytes` (the N cores of a split): written with
/// the GIL released, on rayon's pool when `parallel`, each module's big
/// blocks in parallel chunks too. The same bytes as `m.to_bytes(version)`
/// for each module in turn.
#[pyfunction]
#[pyo3(signature = (modules, version = 2, parallel = true, spelling = None))]
pub(crate) fn to_bytes_all<'py>(
    py: Python<'py>,
    modules: Vec<PyRef<'py, PyBirModule>>,
    version: u32,
    parallel: bool,
    spelling: Option<&str>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let refs: Vec<&Module> = modules.iter().map(|m| m.module()).collect();
    let f = form(version, spelling)?;
    let all = py.detach(|| crate::bir::dump::dump_modules_chunks(&refs, f, parallel))?;
    all.into_iter().map(|c| output::bytes(py, c)).collect()
}

/// [`to_bytes_all`] as [`OutputBuffer`]s: the same bytes, each module's
/// JSON left in one Rust buffer (its chunks joined only when it was written
/// in several) instead of copied into a `bytes`. For a caller that only
/// writes the bytes to a file (the corpus split).
#[pyfunction]
#[pyo3(signature = (modules, version = 2, parallel = true, spelling = None))]
pub(crate) fn to_buffers_all(
    py: Python<'_>,
    modules: Vec<PyRef<'_, PyBirModule>>,
    version: u32,
    parallel: bool,
    spelling: Option<&str>,
) -> PyResult<Vec<OutputBuffer>> {
    let refs: Vec<&Module> = modules.iter().map(|m| m.module()).collect();
    let f = form(version, spelling)?;
    let all = py.detach(|| {
        crate::bir::dump::dump_modules_chunks_in(&refs, f, parallel, output::reuse(refs.len())).map(|all| {
            all.into_iter()
                .map(crate::bir::dump::Chunks::concat)
                .collect::<Vec<_>>()
        })
    })?;
    Ok(all.into_iter().map(OutputBuffer::new).collect())
}

/// The architecture table (contract §1.1): `(canonical name, ArchLevel,
/// aliases)` per arch, in level order — the one home of the names
/// (`rust/src/bir/arch.rs`); `lncsplit.arch` builds its alias map from it.
#[pyfunction]
pub(crate) fn arch_table() -> Vec<(&'static str, u32, Vec<&'static str>)> {
    crate::bir::arch::TABLE
        .iter()
        .map(|r| (r.name, r.level, r.aliases.to_vec()))
        .collect()
}
