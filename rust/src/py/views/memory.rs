//! `MemoryLocationSetView` and `MemoryLocationView` (the placement fields are
//! settable: the memory model passes write them in place, which moves
//! nothing, so views stay valid).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{func, stale, ModuleRef};
use crate::bir::{MemoryLocation, MemoryLocationSet, RemoteLocalTarget};

/// Read-only view of a memory location set (a logical tensor).
#[pyclass(name = "MemoryLocationSetView", module = "lncsplit", frozen)]
pub struct MemoryLocationSetView {
    m: ModuleRef,
    f: usize,
    s: usize,
}

impl MemoryLocationSetView {
    pub(crate) fn new(m: ModuleRef, f: usize, s: usize) -> Self {
        MemoryLocationSetView { m, f, s }
    }

    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&MemoryLocationSet) -> T) -> PyResult<T> {
        let m = self.m.get(py)?;
        let s = func(m.module(), self.f)?.allocations.get(self.s).ok_or_else(stale)?;
        Ok(f(s))
    }
}

#[pymethods]
impl MemoryLocationSetView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.name.to_string())
    }

    /// TensorKind name (None when the file gives none).
    #[getter]
    fn kind(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |s| s.kind.as_deref().map(str::to_string))
    }

    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.dtype.to_string())
    }

    #[getter]
    fn tensor_shape(&self, py: Python<'_>) -> PyResult<Vec<i64>> {
        self.with(py, |s| s.tensor_shape.clone())
    }

    /// Partition dim (default 0).
    #[getter]
    fn partition_dim(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |s| s.partition_dim())
    }

    /// `Local` (default), `Shared` or `Debug`.
    #[getter]
    fn addr_space(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.addr_space.as_deref().unwrap_or("Local").to_string())
    }

    /// `tensor_shape[partition_dim]`.
    #[getter]
    fn partitions(&self, py: Python<'_>) -> PyResult<i64> {
        self.with(py, |s| s.partitions())
    }

    /// dtype size × product of the other dims.
    #[getter]
    fn bytes_per_partition(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |s| s.bytes_per_partition())
    }

    #[getter]
    fn locations(&self, py: Python<'_>) -> PyResult<Vec<MemoryLocationView>> {
        let n = self.with(py, |s| s.locations.len())?;
        Ok((0..n)
            .map(|l| MemoryLocationView::new(self.m.child(py), self.f, self.s, l))
            .collect())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| {
            format!("<lncsplit.MemoryLocationSetView {:?} {:?}>", &*s.name, s.tensor_shape)
        })
    }
}

/// View of a memory location; the placement fields are settable (the memory
/// model passes write them).
#[pyclass(name = "MemoryLocationView", module = "lncsplit", frozen)]
pub struct MemoryLocationView {
    m: ModuleRef,
    f: usize,
    s: usize,
    l: usize,
}

impl MemoryLocationView {
    pub(crate) fn new(m: ModuleRef, f: usize, s: usize, l: usize) -> Self {
        MemoryLocationView { m, f, s, l }
    }

    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&MemoryLocationSet, &MemoryLocation) -> T) -> PyResult<T> {
        let m = self.m.get(py)?;
        let s = func(m.module(), self.f)?.allocations.get(self.s).ok_or_else(stale)?;
        let l = s.locations.get(self.l).ok_or_else(stale)?;
        Ok(f(s, l))
    }

    /// Write one placement field in place (the module's generation stays:
    /// no index path changes what it names).
    fn with_mut<T>(&self, py: Python<'_>, f: impl FnOnce(&mut MemoryLocation) -> T) -> PyResult<T> {
        let mut m = self.m.get_mut(py)?;
        let l = m
            .module_mut_in_place()
            .functions
            .get_mut(self.f)
            .and_then(|f| f.allocations.get_mut(self.s))
            .and_then(|s| s.locations.get_mut(self.l))
            .ok_or_else(stale)?;
        Ok(f(l))
    }
}

#[pymethods]
impl MemoryLocationView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, l| l.name.to_string())
    }

    /// `DRAM`, `SB` or `PSUM`.
    #[getter(r#type)]
    fn mem_type(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, l| l.mem_type.to_string())
    }

    /// Name of the memory location set this location belongs to.
    #[getter]
    fn set_name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s, _| s.name.to_string())
    }

    #[getter]
    fn addr(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |_, l| l.addr)
    }

    #[setter]
    fn set_addr(&self, py: Python<'_>, v: Option<i64>) -> PyResult<()> {
        self.with_mut(py, |l| l.addr = v)
    }

    #[getter]
    fn bank(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |_, l| l.bank)
    }

    #[setter]
    fn set_bank(&self, py: Python<'_>, v: Option<i64>) -> PyResult<()> {
        self.with_mut(py, |l| l.bank = v)
    }

    #[getter]
    fn base(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |_, l| l.base)
    }

    #[setter]
    fn set_base(&self, py: Python<'_>, v: Option<i64>) -> PyResult<()> {
        self.with_mut(py, |l| l.base = v)
    }

    #[getter]
    fn allocated(&self, py: Python<'_>) -> PyResult<Option<bool>> {
        self.with(py, |_, l| l.allocated)
    }

    #[setter]
    fn set_allocated(&self, py: Python<'_>, v: Option<bool>) -> PyResult<()> {
        self.with_mut(py, |l| l.allocated = v)
    }

    #[getter]
    fn is_shared_post_dram_alloc(&self, py: Python<'_>) -> PyResult<Option<bool>> {
        self.with(py, |_, l| l.is_shared_post_dram_alloc)
    }

    #[setter]
    fn set_is_shared_post_dram_alloc(&self, py: Python<'_>, v: Option<bool>) -> PyResult<()> {
        self.with_mut(py, |l| l.is_shared_post_dram_alloc = v)
    }

    #[getter]
    fn written_by_another_core(&self, py: Python<'_>) -> PyResult<Option<bool>> {
        self.with(py, |_, l| l.written_by_another_core)
    }

    /// `{"name": str, "core": int}` or None.
    #[getter]
    fn remote_local_target<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let t = self.with(py, |_, l| l.remote_local_target.clone())?;
        t.map(|t| {
            let d = PyDict::new(py);
            d.set_item("name", &*t.name)?;
            d.set_item("core", t.core)?;
            Ok(d)
        })
        .transpose()
    }

    #[setter]
    fn set_remote_local_target(&self, py: Python<'_>, v: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let t = match v {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => {
                let d = v.cast::<PyDict>().map_err(|_| {
                    PyTypeError::new_err("remote_local_target must be {\"name\": str, \"core\": int} or None")
                })?;
                let name: String = match d.get_item("name")? {
                    Some(n) => n.extract()?,
                    None => return Err(PyValueError::new_err("remote_local_target is missing \"name\"")),
                };
                let core: i64 = match d.get_item("core")? {
                    Some(c) => c.extract()?,
                    None => return Err(PyValueError::new_err("remote_local_target is missing \"core\"")),
                };
                if core < 0 {
                    return Err(PyValueError::new_err(format!(
                        "remote_local_target core {core} must be ≥ 0"
                    )));
                }
                Some(RemoteLocalTarget {
                    name: name.into(),
                    core,
                })
            }
        };
        self.with_mut(py, |l| l.remote_local_target = t)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, l| {
            format!("<lncsplit.MemoryLocationView {:?} {}>", &*l.name, l.mem_type)
        })
    }
}
