//! The one check that N modules are cores 0…N−1 of one kernel, in core order
//! (contract §3.6, "passes that take `cores`"; code 9006): `cores[i]` must
//! carry `neuron_core_id` i, with N == 1 absent or 0. Every place that needs
//! it calls [`check_core_order`] — the tail passes (`lower_local_collectives`,
//! `extend_shared_lifetimes`, `lnc_barriercheck`), the concretized verifier,
//! the linker and the simulator — each with its own message and location
//! (the contract fixes the code only), so the diagnosis reads the same
//! everywhere.

use crate::bir::Module;
use crate::error::{Error, Result};

/// The code of a bad core list or core set.
pub const BAD_CORE_SET: u32 = 9006;
/// The message of the passes that take `cores`.
pub const CORES_MESSAGE: &str = "cores must hold the N core modules of one kernel in core order";

/// A 9006 error with the caller's message and location.
pub fn bad_core_set(message: &str, location: &str, detail: String) -> Error {
    Error::neuron_at(BAD_CORE_SET, message, location, detail)
}

/// `cores` must be one kernel's N core modules in core order (the tail
/// passes' form: location `lncsplit/<pass>`).
pub fn check_cores(cores: &[&Module], pass: &str) -> Result<()> {
    check_core_order(cores, CORES_MESSAGE, &format!("lncsplit/{pass}"))
}

/// 9006 with `message` at `location` unless `cores[i]` carries
/// `neuron_core_id` i for every i (N == 1: absent or 0).
pub fn check_core_order(cores: &[&Module], message: &str, location: &str) -> Result<()> {
    match diagnose(cores) {
        None => Ok(()),
        Some(detail) => Err(bad_core_set(message, location, detail)),
    }
}

fn fits(cores: &[&Module], i: usize) -> bool {
    match cores[i].neuron_core_id() {
        Some(c) => c == i as i64,
        None => cores.len() == 1,
    }
}

/// What is wrong with `cores` as cores 0…N−1 in order, or None: the first
/// misplaced entry, then what is missing, duplicated or out of range (or,
/// when the set is right but the order is not, which position holds what).
pub fn diagnose(cores: &[&Module]) -> Option<String> {
    let n = cores.len();
    if n == 0 {
        return Some("no core module was given".into());
    }
    let first = (0..n).find(|&i| !fits(cores, i))?;
    let mut problems = set_problems(cores);
    if problems.is_empty() {
        let id = cores[first].neuron_core_id().unwrap_or(-1);
        problems.push(format!(
            "position {first} holds core {id} (module {})",
            cores[first].name
        ));
    }
    Some(format!(
        "{}; the {n} core modules of one kernel must be nc00 … nc{:02} in core order (cores[i] carries neuron_core_id i): {}",
        describe(cores, first),
        n - 1,
        problems.join("; ")
    ))
}

fn describe(cores: &[&Module], i: usize) -> String {
    match cores[i].neuron_core_id() {
        Some(id) => format!("cores[{i}] ({}) carries neuron_core_id {id}", cores[i].name),
        None => format!("cores[{i}] ({}) carries no neuron_core_id", cores[i].name),
    }
}

/// Missing and duplicated cores, and entries whose id is no core of N.
fn set_problems(cores: &[&Module]) -> Vec<String> {
    let n = cores.len();
    let mut given: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut outside = Vec::new();
    for (i, m) in cores.iter().enumerate() {
        match m
            .neuron_core_id()
            .and_then(|c| usize::try_from(c).ok())
            .filter(|&c| c < n)
        {
            Some(c) => given[c].push(i),
            None if fits(cores, i) => {}
            None if m.neuron_core_id().is_none() => outside.push(describe(cores, i)),
            None => outside.push(format!("{}, outside 0…{}", describe(cores, i), n - 1)),
        }
    }
    let mut parts = Vec::new();
    for (c, at) in given.iter().enumerate() {
        match at.len() {
            0 => parts.push(format!("core {c} is missing")),
            1 => {}
            k => {
                let list: Vec<String> = at.iter().map(|&i| format!("cores[{i}] ({})", cores[i].name)).collect();
                parts.push(format!("core {c} is given {k} times: {}", list.join(", ")))
            }
        }
    }
    parts.extend(outside);
    parts
}
