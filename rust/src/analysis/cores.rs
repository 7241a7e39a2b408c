//! The one check that N modules are cores 0…N−1 of one kernel, in core order
//! (contract §3.6, "passes that take `cores`"; code 9006): `cores[i]` must
//! carry `neuron_core_id` i, with N == 1 absent or 0. Every place that needs
//! it calls [`check_core_order`] — the tail passes (`lower_local_collectives`,
//! `extend_shared_lifetimes`, `lnc_barriercheck`), the concretized verifier,
//! the linker and the simulator — each with its own message and location
//! (the contract fixes the code only), so the diagnosis reads the same
//! everywhere. The one-kernel half ([`check_one_kernel`]: the same name once
//! each core's `nc<cc>` is taken out) is the linker's and the concretized
//! verifier's; [`symbolic_as_one_core`] words an N error for a symbolic module
//! given as one core.

use crate::bir::describe::inferred_lnc;
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

/// The core-set rule over what each entry carries (`ids[i]`: its
/// `neuron_core_id`), for any caller: the passes label entries `cores[i]
/// (<module name>)`, the CLI's discovery labels them by file name
/// (`python/lncsplit/corpus/discovery.py` through `_core.diagnose_core_set`),
/// and `rule` says what the caller's order means. None when entry i carries
/// i for every i (N == 1: absent or 0); else the first misplaced entry, then
/// what is missing, duplicated or out of range (or, when the set is right
/// but the order is not, which position holds what).
pub fn diagnose_ids(ids: &[Option<i64>], label: impl Fn(usize) -> String, rule: &str) -> Option<String> {
    let n = ids.len();
    if n == 0 {
        return Some("no core module was given".into());
    }
    let fits = |i: usize| match ids[i] {
        Some(c) => c == i as i64,
        None => n == 1,
    };
    let first = (0..n).find(|&i| !fits(i))?;
    let describe = |i: usize| match ids[i] {
        Some(id) => format!("{} carries neuron_core_id {id}", label(i)),
        None => format!("{} carries no neuron_core_id", label(i)),
    };
    let mut problems = set_problems(ids, &label, &describe, fits);
    if problems.is_empty() {
        let id = ids[first].unwrap_or(-1);
        problems.push(format!("position {first} holds core {id} ({})", label(first)));
    }
    Some(format!(
        "{}; the {n} core modules of one kernel must be nc00 … nc{:02} in core order ({rule}): {}",
        describe(first),
        n - 1,
        problems.join("; ")
    ))
}

/// What is wrong with `cores` as cores 0…N−1 in order, or None (see
/// [`diagnose_ids`]).
pub fn diagnose(cores: &[&Module]) -> Option<String> {
    let ids: Vec<Option<i64>> = cores.iter().map(|m| m.neuron_core_id()).collect();
    diagnose_ids(
        &ids,
        |i| format!("cores[{i}] ({})", cores[i].name),
        "cores[i] carries neuron_core_id i",
    )
}

/// When `cores` is one module without a core id whose ShardIds are for
/// N > 1 — a symbolic module given as one core, or the N = 1 split of one
/// (the same module) — what to say so the error a pass then raises about
/// N (9305 for a GPSIMDSB2SB) names the cause: such cores are valid as
/// N = 1 (contract §3.6), so this only words an error, never makes one.
pub fn symbolic_as_one_core(cores: &[&Module], pass: &str) -> Option<String> {
    let [m] = cores else { return None };
    let n = inferred_lnc(m).filter(|&n| n > 1 && m.neuron_core_id().is_none())?;
    Some(format!(
        "{pass} takes split cores, and cores[0] ({}) is one module without neuron_core_id \
         whose ShardIds are for N = {n}: a symbolic module (a split with N = 1 leaves it as it \
         is); split it first (lncsplit.split([module], {n}), or `lncsplit split --lnc {n}` \
         on the command line)",
        m.name
    ))
}

/// Missing and duplicated cores, and entries whose id is no core of N.
fn set_problems(
    ids: &[Option<i64>],
    label: &impl Fn(usize) -> String,
    describe: &impl Fn(usize) -> String,
    fits: impl Fn(usize) -> bool,
) -> Vec<String> {
    let n = ids.len();
    let mut given: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut outside = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        match id.and_then(|c| usize::try_from(c).ok()).filter(|&c| c < n) {
            Some(c) => given[c].push(i),
            None if fits(i) => {}
            None if id.is_none() => outside.push(describe(i)),
            None => outside.push(format!("{}, outside 0…{}", describe(i), n - 1)),
        }
    }
    let mut parts = Vec::new();
    for (c, at) in given.iter().enumerate() {
        match at.len() {
            0 => parts.push(format!("core {c} is missing")),
            1 => {}
            k => {
                let list: Vec<String> = at.iter().map(|&i| label(i)).collect();
                parts.push(format!("core {c} is given {k} times: {}", list.join(", ")))
            }
        }
    }
    parts.extend(outside);
    parts
}

/// A core's tag in names: `nc<cc>` (two digits, more past 99).
pub fn core_tag(c: usize) -> String {
    format!("nc{c:02}")
}

/// The kernel's name without core `c`'s tag: the first `nc<cc>` not followed
/// by a digit is removed with one separator (`_`, `-`, `.`) before it; a name
/// without the tag is kept whole.
pub fn kernel_base(name: &str, c: usize) -> String {
    let tag = core_tag(c);
    let mut from = 0;
    while let Some(p) = name[from..].find(&tag) {
        let at = from + p;
        let end = at + tag.len();
        if !name[end..].starts_with(|ch: char| ch.is_ascii_digit()) {
            let sep = at > 0 && matches!(name.as_bytes()[at - 1], b'_' | b'-' | b'.');
            let start = if sep { at - 1 } else { at };
            return format!("{}{}", &name[..start], &name[end..]);
        }
        // The tag is ASCII, so `at + 1` is a character boundary.
        from = at + 1;
    }
    name.to_string()
}

/// The other half of the core-set rule: the cores are of **one** kernel — the
/// same name once each core's own `nc<cc>` is taken out ([`kernel_base`]).
/// 9006 with `message` at `location` otherwise, naming both kernels; the
/// linker and the concretized verifier both check it, so cores of two
/// kernels are said to be that, not a CoreBarrier count that differs (1187).
pub fn check_one_kernel(cores: &[&Module], message: &str, location: &str) -> Result<()> {
    let Some(first) = cores.first() else {
        return Ok(());
    };
    let base0 = kernel_base(&first.name, 0);
    for (c, m) in cores.iter().enumerate().skip(1) {
        let base = kernel_base(&m.name, c);
        if base != base0 {
            return Err(bad_core_set(
                message,
                location,
                format!(
                    "cores of different kernels: cores[0] ({}) is kernel {base0:?}, cores[{c}] ({}) is kernel {base:?}",
                    first.name, m.name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::bir::module_from_value;

    /// A one-instruction module named `name`, with `neuron_core_id` `core`
    /// and (when given) a function whose ShardId bound is `shards`.
    fn module(name: &str, core: Option<i64>, shards: Option<i64>) -> Module {
        let mut f = json!({"name": "main", "allocations": [],
            "basic_blocks": [{"name": "bb", "instructions": [{"name": "i", "opcode": "NoOp"}]}]});
        if let Some(n) = shards {
            f["shard_ids"] = json!([n]);
        }
        let mut m = json!({"version": 2, "name": name, "functions": [f]});
        if let Some(c) = core {
            m["attributes"] = json!({"neuron_core_id": c});
        }
        module_from_value(m).unwrap()
    }

    fn detail(e: Error) -> (u32, String) {
        match e {
            Error::Neuron { code, .. } => (code, e.to_string()),
            other => panic!("not a NeuronAssertion: {other:?}"),
        }
    }

    #[test]
    fn cores_of_one_kernel_pass_the_one_kernel_check() {
        let (a, b) = (module("k_nc00", Some(0), None), module("k_nc01", Some(1), None));
        check_one_kernel(&[&a, &b], CORES_MESSAGE, "here").unwrap();
        assert_eq!(diagnose(&[&a, &b]), None);
    }

    #[test]
    fn cores_of_different_kernels_are_said_to_be_that() {
        let (a, b) = (module("a_nc00", Some(0), None), module("b_nc01", Some(1), None));
        let (code, text) = detail(check_one_kernel(&[&a, &b], CORES_MESSAGE, "here").unwrap_err());
        assert_eq!(code, BAD_CORE_SET);
        assert!(text.contains("cores of different kernels"), "{text}");
        assert!(text.contains("\"a\"") && text.contains("\"b\""), "{text}");
    }

    #[test]
    fn a_symbolic_module_given_as_one_core_is_named_with_how_to_split_it() {
        let m = module("k_nc_symbolic", None, Some(2));
        let text = symbolic_as_one_core(&[&m], "racecheck").unwrap();
        assert!(text.starts_with("racecheck takes split cores"), "{text}");
        assert!(
            text.contains("ShardIds are for N = 2") && text.contains("split it first"),
            "{text}"
        );
        let core = module("k_nc00", Some(0), Some(2));
        assert_eq!(symbolic_as_one_core(&[&core], "racecheck"), None);
    }

    #[test]
    fn one_module_without_a_core_id_is_an_n1_output() {
        for shards in [None, Some(1), Some(2)] {
            let m = module("k", None, shards);
            assert_eq!(diagnose(&[&m]), None);
        }
        assert_eq!(symbolic_as_one_core(&[&module("k", None, Some(1))], "racecheck"), None);
    }
}
