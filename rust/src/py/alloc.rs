//! The extension's global allocator.
//!
//! The extension allocates and frees millions of small objects per module
//! (load, clone, drop); mimalloc is several times faster at that than glibc
//! malloc. Only the Python extension uses it (`cargo test` keeps the system
//! allocator).
//!
//! **Purge delay.** mimalloc hands freed memory back to the kernel
//! (`madvise`) 10 ms after it became free, so a call that frees a big
//! result and the next call that allocates one again have their pages
//! faulted and zeroed by the kernel anew. [`tune`] raises the delay to
//! [`PURGE_DELAY_MS`]: `perf stat` of six 50 MB loads in one process counted
//! 116,670 page faults with the default; 81,487, 60,861 and 41,326 with
//! 200 ms, 500 ms and 2 s. On a quiet machine the loads took as long either
//! way (their time is the parser's), while `to_json` on the same module went
//! from 49.7 ms to 40.7 ms (its chunk buffers are reused). The price is peak
//! memory (`split_peak_memory` ~2.4× → ~2.8× the input, docs/performance.md).
//! Memory a run does not reuse still goes back to the kernel some seconds
//! later (mimalloc purges when it is next called; arenas wait ten times the
//! delay). A user who sets `MIMALLOC_PURGE_DELAY` keeps their value.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long (ms) freed memory stays with the process before mimalloc
/// returns it; arenas wait `arena_purge_mult` (10) times longer.
pub const PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (the sys crate
/// names only the options v2 and v3 share).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Set the allocator's options once, when the extension is imported.
pub fn tune() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: `mi_option_set` only stores an integer in mimalloc's option
        // table (atomically); any value is valid for this option.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// Hand the memory this thread's heap has freed back to the kernel now,
/// whatever the purge delay (`mi_collect(true)`). The split of one big file
/// calls it between its heavy phases: each phase's freed working memory
/// would otherwise still count in the process's peak when the next phase
/// allocates its own (docs/performance.md, `cli_split_peak_memory`).
#[pyo3::pyfunction]
pub(crate) fn trim_memory(py: pyo3::Python<'_>) {
    // SAFETY: `mi_collect` only walks and frees mimalloc's own free pages.
    py.detach(|| unsafe { libmimalloc_sys::mi_collect(true) });
}
