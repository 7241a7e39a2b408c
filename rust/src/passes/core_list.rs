//! The `cores` argument of the LNC tail passes (contract §3.6): the N core
//! modules of one kernel in core order. `cores[i]` must carry
//! `neuron_core_id` i (with N == 1: absent or 0); anything else is 9006,
//! with the concretized verifier's diagnosis of the core set.

use crate::bir::Module;
use crate::error::{Error, Result};
use crate::passes::lnc_verifier::{verify_core_set, BAD_CORE_SET};

/// Check that `cores` is one kernel's N core modules in core order.
pub fn check_cores(cores: &[&Module], pass: &str) -> Result<()> {
    match cores {
        [] => Err(Error::neuron_at(
            BAD_CORE_SET,
            "cores must hold the N core modules of one kernel in core order",
            format!("lncsplit/{pass}"),
            "no core module was given",
        )),
        [one] if matches!(one.neuron_core_id(), None | Some(0)) => Ok(()),
        _ => verify_core_set(cores),
    }
}
