//! The extension's global allocator.
//!
//! The extension allocates and frees millions of small objects per module
//! (load, clone, drop); mimalloc is several times faster at that than glibc
//! malloc. Only the Python extension uses it (`cargo test` keeps the system
//! allocator).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
