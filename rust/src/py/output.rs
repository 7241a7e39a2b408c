//! Written JSON handed to Python as `str` or `bytes`.
//!
//! The writer's output arrives in chunks (`bir::dump::Chunks`). Both
//! objects are allocated at their final size, uninitialized, and the chunks
//! are copied straight into them on rayon's pool with the GIL released: one
//! copy, no zero-fill, no intermediate joined buffer, and the page faults of
//! the fresh 50 MB object are taken by both cores. That needs `unsafe` (the crate keeps
//! it to a few small blocks, each with its SAFETY note): CPython's own "allocate, then fill before
//! anyone sees it" idiom, as jiter and orjson build their strings. `str` is
//! built as a compact ASCII object, each piece checked for ASCII right after
//! its copy (one pass); the writer escapes nothing above 0x7f, so a module
//! with a non-ASCII name fails the check, its object is dropped unseen and
//! the safe `PyString::from_bytes` path is taken instead.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::bir::dump::Chunks;

/// The chunks as a Python `str`.
pub(crate) fn str<'py>(py: Python<'py>, chunks: Chunks) -> PyResult<Bound<'py, PyString>> {
    let len = chunks.len();
    let size = ffi::Py_ssize_t::try_from(len).map_err(|_| pyo3::exceptions::PyMemoryError::new_err(()))?;
    // Optimistically a compact ASCII object, filled and checked in one pass
    // (the writer escapes nothing above 0x7f, so only a non-ASCII name fails
    // the check); a failed check drops the object unseen and takes the safe
    // path.
    // SAFETY: `PyUnicode_New(len, 127)` returns a new, uniquely owned compact
    // ASCII object (or NULL with an exception set) whose data buffer holds
    // `len` bytes plus the NUL it already wrote, at `PyUnicode_DATA`. Nobody
    // else sees the object before it is returned, and it is returned only
    // when every byte copied into it is ASCII (the invariant of a
    // max-char-127 string); otherwise it is released here, and deallocating a
    // string does not read its characters.
    unsafe {
        let obj = Bound::from_owned_ptr_or_err(py, ffi::PyUnicode_New(size, 127))?;
        let dst = std::slice::from_raw_parts_mut(ffi::PyUnicode_DATA(obj.as_ptr()).cast::<u8>(), len);
        let ascii = py.detach(|| chunks.copy_into_ascii(dst));
        if ascii {
            py.detach(|| drop(chunks));
            return Ok(obj.cast_into_unchecked());
        }
        drop(obj);
    }
    let joined = py.detach(|| chunks.concat_parallel());
    let s = PyString::from_bytes(py, &joined);
    py.detach(|| drop(joined));
    s
}

/// The chunks as Python `bytes`.
pub(crate) fn bytes<'py>(py: Python<'py>, chunks: Chunks) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: `PyBytes_FromStringAndSize(NULL, len)` returns a new, uniquely
    // owned `bytes` of `len` uninitialized bytes (NUL-terminated) at
    // `PyBytes_AsString`, or NULL with an exception set; CPython documents
    // filling it before use.
    unsafe {
        fill(
            py,
            chunks,
            |len| ffi::PyBytes_FromStringAndSize(std::ptr::null(), len),
            |o| ffi::PyBytes_AsString(o).cast(),
        )
    }
}

/// Allocate a Python object of `chunks.len()` bytes with `new`, then copy
/// the chunks into its buffer (`data`) on rayon's pool, GIL released.
///
/// # Safety
/// `new(len)` must return a new reference to a uniquely owned object of
/// type `T` (or NULL with an exception set) whose buffer at `data(obj)`
/// holds at least `len` writable bytes that the object owns and that may be
/// filled with the chunks' bytes before the object is shared.
unsafe fn fill<'py, T>(
    py: Python<'py>,
    chunks: Chunks,
    new: impl FnOnce(ffi::Py_ssize_t) -> *mut ffi::PyObject,
    data: impl FnOnce(*mut ffi::PyObject) -> *mut u8,
) -> PyResult<Bound<'py, T>> {
    let len = chunks.len();
    let size = ffi::Py_ssize_t::try_from(len).map_err(|_| pyo3::exceptions::PyMemoryError::new_err(()))?;
    // SAFETY: the caller's contract: `new` gives an owned reference or NULL
    // with an exception (turned into the error), `data` its `len` bytes,
    // which nobody else can see until the object is returned.
    unsafe {
        let obj = Bound::from_owned_ptr_or_err(py, new(size))?;
        let dst = std::slice::from_raw_parts_mut(data(obj.as_ptr()), len);
        py.detach(|| {
            chunks.copy_into(dst);
            drop(chunks);
        });
        Ok(obj.cast_into_unchecked())
    }
}

/// One module's written JSON kept in the Rust buffer it was written into,
/// read by Python through the buffer protocol (`memoryview(b)`,
/// `os.write(fd, b)`): a corpus split writes each core to its file straight
/// from here, with no Python `bytes` copy. A 1 MB `bytes` comes from glibc's
/// heap, which hands the pages back (trims) when it is freed and faults them
/// in again for the next file; the writer's buffer comes from mimalloc, which
/// keeps them (`alloc.rs`).
#[pyclass(frozen, name = "OutputBuffer", module = "lncsplit._core")]
pub(crate) struct OutputBuffer {
    data: Vec<u8>,
}

/// A freed [`OutputBuffer`]'s vector goes to [`POOL`] and the next
/// [`to_buffers_all`] writes into it. mimalloc serves a ~1 MB buffer as a
/// fresh "huge" page whose memory the kernel faults in and zeroes on first
/// touch, every time (a fifth of the corpus writer's CPU in `perf`:
/// `clear_page_erms` under `Out::memory`); a kept vector's pages are
/// resident. Bounded: at most [`POOL_BUFFERS`] vectors of at most
/// [`POOL_MAX_BYTES`] each (a corpus keeps its cores' ~1 MB buffers; a big
/// module's are freed as before).
static POOL: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

/// Vectors kept (two corpus threads × two cores, twice over).
const POOL_BUFFERS: usize = 8;

/// Largest vector kept.
const POOL_MAX_BYTES: usize = 8 << 20;

/// Keep `v` for a later output, if the pool has room for it.
fn recycle(v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > POOL_MAX_BYTES {
        return;
    }
    if let Ok(mut pool) = POOL.lock() {
        if pool.len() < POOL_BUFFERS {
            pool.push(v);
        }
    }
}

/// Up to `n` kept vectors (fewer when the pool has fewer).
pub(crate) fn reuse(n: usize) -> Vec<Vec<u8>> {
    match POOL.lock() {
        Ok(mut pool) => {
            let keep = pool.len().saturating_sub(n);
            pool.split_off(keep)
        }
        Err(_) => Vec::new(),
    }
}

impl Drop for OutputBuffer {
    fn drop(&mut self) {
        recycle(std::mem::take(&mut self.data));
    }
}

impl OutputBuffer {
    /// A buffer holding `data`.
    pub(crate) fn new(data: Vec<u8>) -> Self {
        OutputBuffer { data }
    }
}

#[pymethods]
impl OutputBuffer {
    fn __len__(&self) -> usize {
        self.data.len()
    }

    /// A read-only, contiguous buffer of unsigned bytes (format `B`).
    ///
    /// # Safety
    /// Called by CPython with a valid `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(pyo3::exceptions::PyBufferError::new_err("view is null"));
        }
        let data = &slf.get().data;
        let len = ffi::Py_ssize_t::try_from(data.len()).map_err(|_| pyo3::exceptions::PyMemoryError::new_err(()))?;
        // SAFETY: the object is frozen, so `data` is never changed or moved
        // while it lives, and `PyBuffer_FillInfo` takes a reference to the
        // object (released with the view), so it outlives every export. The
        // buffer is exported read-only (a writable request fails with
        // BufferError inside `PyBuffer_FillInfo`, which returns -1).
        let rc = unsafe { ffi::PyBuffer_FillInfo(view, slf.as_ptr(), data.as_ptr() as *mut _, len, 1, flags) };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}
