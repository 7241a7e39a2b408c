//! racecheck_symbolic (contract §3.11): one answer for every N, on the
//! symbolic module, before any split. For each N of `lnc` the answer is
//! `racecheck(split([with_shard_bound(module, N)], N))`'s (§3.6 on the raw
//! split): races, or *invalid* when that split or racecheck raises.
//!
//! The Rust side is the sweep (`plan`): it reads every ShardId as a core s
//! ranging over [0, N) — N enters only through that range, barrier `cores`
//! lists, `remote_local_target.core` and GPSIMDSB2SB's N == 2 — and
//!
//! 1. decides which N are invalid and why, in the concrete order
//!    (`validity`);
//! 2. builds every access to a location another core reaches, as a
//!    quasi-affine footprint of (s, loop IVs, AP indices) with floor and
//!    modulo by constants as existential quotients (`affine`, `fp`), and the
//!    affine count of each barrier class before it (`epochs`);
//! 3. pairs the accesses of one physical location that no barrier for every
//!    pair of cores orders, with two symbolic cores s1 < s2 (`pairs`), and
//!    clears what the fast lemmas can (`lemmas`); every other pair becomes one
//!    integer-set query (`query`), which the Python side decides with isl
//!    and whose witnesses it replays with the concrete checker.
//!
//! Because the cores, footprints and bands of a pair of cores do not depend
//! on N, a pair that races at N races at every larger valid N: the racing N
//! of a pair are `{N ≥ 1 + least racing s2} ∩ valid N`, one query for all N.

pub mod affine;
pub mod epochs;
pub mod fp;
pub mod lemmas;
pub mod model;
pub mod nset;
pub mod pairs;
pub mod query;
pub mod shard_bound;
#[cfg(test)]
mod tests;
pub mod validity;

use serde_json::{json, Value};

use crate::bir::Module;
use crate::error::{Error, Result};
use affine::Forms;
use epochs::Epochs;
use model::FnModel;
use nset::ISet;

/// Where this pass's errors point.
pub const WHERE: &str = "lncsplit/racecheck_symbolic";

fn parts_json(s: &ISet) -> Value {
    Value::Array(s.parts().iter().map(|&(lo, hi)| json!([lo, hi])).collect())
}

/// The sweep over `module` for the N of `lnc` (every N ≥ 2): the invalid N,
/// the pairs the lemmas proved, the unknown ones, and the queries left for
/// the solver, as one JSON document (`python/lncsplit/passes/racecheck_symbolic`
/// reads it).
pub fn plan(module: &Module, lnc: &ISet) -> Result<Value> {
    if module.neuron_core_id().is_some() {
        return Err(Error::neuron_at(
            9005,
            "racecheck_symbolic needs the symbolic module (no neuron_core_id)",
            WHERE,
            format!(
                "module {} is core {} of a split: check the split with racecheck instead",
                module.name,
                module.neuron_core_id().unwrap_or(-1)
            ),
        ));
    }
    if crate::bir::module::is_linked(module) {
        return Err(Error::neuron_at(
            9008,
            "a linked module (made by link): unlink it first",
            WHERE,
            format!("module {}", module.name),
        ));
    }
    if lnc.is_empty() || lnc.min().is_some_and(|m| m < 2) {
        return Err(Error::neuron_at(
            9000,
            "lnc holds N ≥ 2",
            WHERE,
            format!("lnc = {}", lnc.describe()),
        ));
    }
    let clock = std::time::Instant::now();
    let timing = std::env::var_os("LNCSPLIT_SYMBOLIC_TIMING").is_some();
    let lap = |what: &str| {
        if timing {
            eprintln!("racecheck_symbolic: {what} at {:?}", clock.elapsed());
        }
    };
    let mut forms = Forms::new(&module.ctx);
    let models: Vec<FnModel<'_>> = module.functions.iter().map(|f| FnModel::build(&mut forms, f)).collect();
    lap("models");
    let max_core = lnc.max().flatten().map(|n| n - 1);
    let validity = validity::analyse(module, &models, &mut forms, max_core);
    let invalid = validity::invalid_ns(&validity.causes, lnc);
    lap("validity");
    let mut valid = lnc.clone();
    for (s, _, _) in &invalid {
        valid = valid.minus(s);
    }
    let mut unknown: Vec<Value> = validity
        .undecided
        .iter()
        .map(|u| json!({"a": null, "b": null, "location": null, "why": u.why}))
        .collect();
    let mut out = pairs::Outcome::default();
    let valid_max_core = match valid.max() {
        None => Some(-1),
        Some(m) => m.map(|n| n - 1),
    };
    if !valid.is_empty() {
        let qs = forms.qs.clone();
        for model in &models {
            let epochs = Epochs::build(model, &qs, valid_max_core);
            if let Some(why) = &epochs.unmodelled {
                unknown.push(json!({
                    "a": null, "b": null, "location": null,
                    "why": format!("function {}: {why}", model.function.name),
                }));
                continue;
            }
            lap("epochs");
            let accs = pairs::accesses(model, &mut forms, &epochs, valid_max_core);
            lap("accesses");
            let qs = forms.qs.clone();
            let cx = pairs::Ctx {
                model,
                forms_qs: &qs,
                ctx: &module.ctx,
                epochs: &epochs,
                max_core: valid_max_core,
                function: &model.function.name,
            };
            pairs::analyse(&cx, &accs, &mut out);
            lap("pairs");
        }
    }
    unknown.extend(out.unknown);
    let n_queries = out.queries.len();
    let lemmas: u64 = out.by_reason.values().sum();
    let by_reason: serde_json::Map<String, Value> =
        out.by_reason.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    Ok(json!({
        "lnc": parts_json(lnc),
        "valid": parts_json(&valid),
        "invalid": invalid.iter().map(|(s, code, message)| json!({
            "n": parts_json(s), "code": code, "message": message,
        })).collect::<Vec<_>>(),
        "unknown": unknown,
        "proved": out.proved,
        "queries": out.queries,
        "stats": {
            "candidates": out.candidates,
            "lemmas": lemmas,
            "queries": n_queries,
            "by_reason": by_reason,
        },
    }))
}
