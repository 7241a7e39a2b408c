//! Tests of extend_shared_lifetimes.
