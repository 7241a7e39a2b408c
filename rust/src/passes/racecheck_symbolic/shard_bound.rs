//! `with_shard_bound(module, N)` (contract §3.11, §4): a copy of a symbolic
//! module with every ShardId's `ub` set to N — in the modelled expressions
//! (addresses, predicates, a collective's ranks, the replication keys) and in
//! the carried fields alike — and every function's shard-id set `[N]`. It is
//! the reference `racecheck_symbolic` answers for: `racecheck(split(
//! [with_shard_bound(m, N)], N))`.
//!
//! The copy goes through the module's JSON: every `ShardIDKind` object,
//! wherever it sits, gets `ub` N, so no field can be missed.

use serde_json::Value;

use crate::bir::dump::dump_module;
use crate::bir::load::{load, LoadOptions};
use crate::bir::Module;
use crate::error::{Error, Result};

/// The copy of `m` whose ShardIds all range over [0, n).
pub fn with_shard_bound(m: &Module, n: i64) -> Result<Module> {
    if n < 1 {
        return Err(Error::neuron_at(
            9000,
            "lnc_size >= 1",
            super::WHERE,
            format!("with_shard_bound needs N ≥ 1, got {n}"),
        ));
    }
    let bytes = dump_module(m, 2)?;
    let mut v: Value = serde_json::from_slice(&bytes).map_err(|e| Error::bir(format!("malformed JSON: {e}"), "$"))?;
    rebind(&mut v, n, 0);
    if let Some(fs) = v.get_mut("functions").and_then(Value::as_array_mut) {
        for f in fs {
            if let Some(ids) = f.get_mut("shard_ids").and_then(Value::as_array_mut) {
                if !ids.is_empty() {
                    *ids = vec![Value::from(n)];
                }
            }
        }
    }
    let bytes = serde_json::to_vec(&v).map_err(|e| Error::bir(format!("malformed JSON: {e}"), "$"))?;
    let mut out = load(&bytes, LoadOptions::default())?;
    out.version = m.version;
    Ok(out)
}

/// Set `ub` of every `ShardIDKind` object in `v` (depth-bounded like the
/// loader; deeper values cannot have been read).
fn rebind(v: &mut Value, n: i64, depth: usize) {
    if depth > 4096 {
        return;
    }
    match v {
        Value::Object(o) => {
            if o.get("kind").and_then(Value::as_str) == Some("ShardIDKind") {
                o.insert("ub".into(), Value::from(n));
            }
            for c in o.values_mut() {
                rebind(c, n, depth + 1);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| rebind(c, n, depth + 1)),
        _ => {}
    }
}
