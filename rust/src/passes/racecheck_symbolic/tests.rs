//! Tests of the symbolic race checker's sweep against the concrete checker.
