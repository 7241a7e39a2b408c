//! Module files: read whole files, write atomically (temporary file in the
//! same directory + fsync + rename), so a failed write never leaves a
//! half-written module behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{load_module, write_module, Module};
use crate::error::{Error, Result};

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::io(path, e)
}

/// Read and parse a module file: a regular file only (contract §6).
pub fn read_module(path: &Path) -> Result<Module> {
    // `stat` before `open`: opening a FIFO blocks until a writer appears, and
    // a device may never end.
    // (A directory fails the read at once with its own error kind.)
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    if !meta.is_file() && !meta.is_dir() {
        let kind = std::io::ErrorKind::InvalidInput;
        return Err(io_err(path, std::io::Error::new(kind, "not a regular file: not read")));
    }
    let bytes = std::fs::read(path).map_err(|e| io_err(path, e))?;
    load_module(&bytes)
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_path(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{base}.{}.{n}.tmp", std::process::id()))
}

/// The temporary file could not be created: name what the user wrote — the
/// target, and its directory when that is what is missing — not the
/// temporary file.
fn create_err(path: &Path, tmp: &Path, e: std::io::Error) -> Error {
    let dir = tmp.parent().unwrap_or(Path::new("."));
    if !dir.is_dir() {
        // The OS error (ENOENT) kept, filed under the missing directory.
        return io_err(dir, e);
    }
    io_err(path, e)
}

/// Write `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, f: impl FnOnce(&mut BufWriter<&File>) -> Result<()>) -> Result<()> {
    if path.file_name().is_none() {
        return Err(io_err(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file path"),
        ));
    }
    let tmp = temp_path(path);
    let file = File::create(&tmp).map_err(|e| create_err(path, &tmp, e))?;
    let r = (|| {
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        f(&mut w)?;
        w.flush().map_err(|e| io_err(&tmp, e))?;
        drop(w);
        file.sync_all().map_err(|e| io_err(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| io_err(path, e))
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Serialize a module straight into `path`, atomically.
pub fn write_module_atomic(m: &Module, path: &Path, version: u32) -> Result<()> {
    write_atomic(path, |w| write_module(m, version, w).map_err(|e| e.with_path(path)))
}
