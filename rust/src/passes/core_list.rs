//! The `cores` argument of the LNC tail passes (contract §3.6): the N core
//! modules of one kernel in core order. `cores[i]` must carry
//! `neuron_core_id` i (with N == 1: absent or 0); anything else is 9006.

use crate::bir::Module;
use crate::error::{Error, Result};

/// Check that `cores` is one kernel's N core modules in core order.
pub fn check_cores(cores: &[&Module], pass: &str) -> Result<()> {
    let n = cores.len();
    let location = format!("lncsplit/{pass}");
    if n == 0 {
        return Err(Error::neuron_at(
            9006,
            "cores must hold the N core modules of one kernel in core order",
            location,
            "no core module was given",
        ));
    }
    for (i, m) in cores.iter().enumerate() {
        let id = m.neuron_core_id();
        let ok = match id {
            Some(c) => c == i as i64,
            None => n == 1,
        };
        if !ok {
            let got = id.map_or("no neuron_core_id".to_string(), |c| format!("neuron_core_id {c}"));
            return Err(Error::neuron_at(
                9006,
                "cores[i] must carry neuron_core_id i",
                location,
                format!("cores[{i}] (module {}) has {got} ({n} cores given)", m.name),
            ));
        }
    }
    Ok(())
}
