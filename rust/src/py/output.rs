//! Written JSON handed to Python as `str` or `bytes` with one copy.
//!
//! The writer's output arrives in chunks (`bir::dump::Chunks`). The Python
//! object is allocated at its final size with the GIL held, then filled with
//! the GIL released: no intermediate joined buffer, no zero-fill, and for
//! `str` no UTF-8 decoding (ASCII output is stored as it is by a compact
//! `str`). Fresh memory of that size comes straight from the OS: its pages
//! are faulted in with one call per piece (`populate`), pieces on rayon's
//! threads.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::bir::dump::Chunks;

/// A raw destination pointer handed to the threads that fill it.
struct Dest(*mut u8, usize);
// SAFETY: the object behind the pointer was just created and nothing else
// references it until it is returned; its pieces are disjoint.
unsafe impl Send for Dest {}

/// Largest piece one thread prepares and copies.
const PIECE: usize = 8 << 20;

/// Fill `len` bytes at `ptr` with `chunks`, the GIL released.
///
/// # Safety
/// `ptr` must be valid for `chunks.len()` writes and referenced by nobody else.
unsafe fn fill(py: Python<'_>, ptr: *mut u8, chunks: &Chunks) {
    use rayon::prelude::*;
    let dest = Dest(ptr, chunks.len());
    py.detach(move || {
        let d = dest;
        // SAFETY: guaranteed by the caller.
        let dst = unsafe { std::slice::from_raw_parts_mut(d.0, d.1) };
        chunks.pieces(dst, PIECE).into_par_iter().for_each(|(src, d)| {
            populate(d);
            d.copy_from_slice(src);
        });
    });
}

/// Fault in the whole pages of a fresh destination with one system call
/// (`MADV_POPULATE_WRITE`) instead of one page fault per 4 KB page: about
/// half the kernel time of filling a large new `str`. A hint: where it is
/// not supported the copy faults the pages in as usual.
fn populate(d: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        if d.len() < 16 * PAGE {
            return;
        }
        let start = (d.as_mut_ptr() as usize).next_multiple_of(PAGE);
        let end = (d.as_mut_ptr() as usize + d.len()) & !(PAGE - 1);
        if end > start {
            // SAFETY: the range lies inside `d`; populating never changes
            // what memory holds (fresh pages read as zero, touched ones stay).
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_POPULATE_WRITE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = d;
}

/// The chunks as a Python `str`; every byte must be ASCII.
pub(crate) fn ascii_str<'py>(py: Python<'py>, chunks: &Chunks) -> PyResult<Bound<'py, PyString>> {
    let len = chunks.len();
    let n = ffi::Py_ssize_t::try_from(len).map_err(|_| pyo3::exceptions::PyOverflowError::new_err("output too large"))?;
    // SAFETY: PyUnicode_New(n, 127) makes a compact ASCII string of n
    // one-byte characters (its terminating NUL already written); its data
    // is filled before the object is shared, with ASCII bytes only.
    unsafe {
        let obj = ffi::PyUnicode_New(n, 127);
        let owned = Bound::from_owned_ptr_or_err(py, obj)?;
        fill(py, ffi::PyUnicode_DATA(obj).cast::<u8>(), chunks);
        Ok(owned.cast_into_unchecked())
    }
}

/// The chunks as Python `bytes`.
pub(crate) fn bytes<'py>(py: Python<'py>, chunks: &Chunks) -> PyResult<Bound<'py, PyBytes>> {
    let len = chunks.len();
    let n = ffi::Py_ssize_t::try_from(len).map_err(|_| pyo3::exceptions::PyOverflowError::new_err("output too large"))?;
    // SAFETY: PyBytes_FromStringAndSize(NULL, n) makes an uninitialized bytes
    // object of n bytes (NUL-terminated), filled before it is shared.
    unsafe {
        let obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), n);
        let owned = Bound::from_owned_ptr_or_err(py, obj)?;
        fill(py, ffi::PyBytes_AsString(obj).cast::<u8>(), chunks);
        Ok(owned.cast_into_unchecked())
    }
}
