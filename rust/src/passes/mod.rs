//! The split passes (contract §3).
