//! ShardIds in carried-through JSON (contract §3.1: after the split no
//! expression anywhere contains a ShardId).
//!
//! lncsplit models the fields the split binds (symbolic `addrs`, predicates,
//! a collective's ranks, the matmult replication keys) and carries everything
//! else verbatim: unknown keys of every object, `register_ap` and the other
//! argument kinds it does not model, `access_shape`, `cc_channel`, loop-axis
//! extras. The compiler embeds pelican expressions in some of those
//! (neuronx-facts §1.12: instruction `order`, `unroll_dependencies`
//! predicate lists, DynamicAPINFO `offset_expr`, loop lb/ub/stride), so a
//! ShardId can hide there.
//!
//! Decision: **bind them**. A JSON object that is a pelican expression
//! (`bir::carried::expr_version`: a v2 object whose `kind` is one of the wire
//! tags, or a v1 affine object) and contains a `ShardIDKind` is read
//! with the wire reader into a scratch context (loop axes and registers
//! resolved by name, as the carried field cannot say which loop it means),
//! bound with `update_shard_id(core)` (constants folded) and written back in
//! the wire version it was read in. A ShardId lncsplit cannot bind this way
//! (a malformed expression, a `ub` ≤ core, a result with no wire form) makes
//! the split refuse the module with `NeuronAssertion` 9007 naming the field.
//! The split binds these fields during its own walk (no extra pass over the
//! module); core 0's clone also tries the original's core on each of them,
//! so a refusal comes before the original is touched. The walk over the
//! carried values is `bir::carried`'s (one walk for every carried-expression
//! rule).

use serde_json::Value;

use crate::bir::carried::{self, AnyScope, ExprRewriter, MAX_DEPTH};
use crate::bir::{Block, Instruction, Module};
use crate::error::{Error, Result};
use crate::pelican::Context;

/// lncsplit's code: a carried field holds a ShardId that cannot be bound.
pub const UNBINDABLE_SHARD: u32 = 9007;

/// True when some object in `v` is a `{"kind": "ShardIDKind", …}` (also,
/// conservatively, when `v` nests deeper than [`MAX_DEPTH`]: binding then
/// refuses it by name).
pub fn value_has_shard(v: &Value) -> bool {
    has_shard_at(v, 0)
}

fn has_shard_at(v: &Value, depth: usize) -> bool {
    match v {
        Value::Object(o) => {
            depth > MAX_DEPTH
                || o.get("kind").and_then(Value::as_str) == Some("ShardIDKind")
                || o.values().any(|c| has_shard_at(c, depth + 1))
        }
        Value::Array(a) => depth > MAX_DEPTH || a.iter().any(|c| has_shard_at(c, depth + 1)),
        _ => false,
    }
}

fn unbindable(site: &str, why: impl std::fmt::Display) -> Error {
    Error::neuron_at(
        UNBINDABLE_SHARD,
        "no ShardId remains after the split",
        "lnc_splitter.cpp",
        format!("{site} holds a ShardId lncsplit cannot bind: {why}"),
    )
}

/// Whether any carried value of `m` holds a ShardId ([`value_has_shard`]),
/// over the values the binder's walk offers it (`bir::carried::any_value`):
/// the split asks once per module and, when none does (the usual module),
/// its cores skip the binder (its walk was a fifth of the split's time in
/// `perf`, once per core).
pub fn module_has_carried_shard(m: &Module) -> bool {
    carried::any_value(m, &mut |v: &Value| value_has_shard(v))
}

/// Binds the ShardIds of one core's carried values. The split calls
/// [`CarriedBinder::instruction`] on every instruction it keeps, while the
/// instruction is hot in cache, and [`CarriedBinder::module_level`] once per
/// core, so a module without carried ShardIds costs no extra walk.
pub struct CarriedBinder {
    core: i64,
    scratch: Context,
    /// Also try binding every carried expression to this core (on a copy):
    /// the clones check the original's core, so its in-place binding cannot
    /// fail half way and a refusal leaves the input untouched.
    probe: Option<i64>,
}

impl ExprRewriter for CarriedBinder {
    fn wants(&self, v: &Value) -> bool {
        value_has_shard(v)
    }

    /// Bound and written back in the wire version it was read in.
    fn expr(&mut self, v: &mut Value, version: u32, site: &str) -> Result<()> {
        let ctx = &mut self.scratch;
        let id = ctx
            .from_json(v, version, &mut AnyScope)
            .map_err(|e| unbindable(site, e))?;
        if let Some(core) = self.probe {
            let probe = ctx.update_shard_id(id, core).map_err(|e| unbindable(site, e))?;
            ctx.check_writable(probe, version).map_err(|e| unbindable(site, e))?;
        }
        let bound = ctx.update_shard_id(id, self.core).map_err(|e| unbindable(site, e))?;
        *v = ctx.to_json(bound, version).map_err(|e| unbindable(site, e))?;
        Ok(())
    }

    fn too_deep(&self, site: &str) -> Error {
        unbindable(site, format!("nested deeper than {MAX_DEPTH} levels"))
    }
}

impl CarriedBinder {
    /// A binder for `core`.
    pub fn new(core: i64, probe: Option<i64>) -> Self {
        CarriedBinder {
            core,
            scratch: Context::new(),
            probe,
        }
    }

    /// Module, function, set and location keys, and the module's attributes.
    /// Blocks and instructions are the split walk's ([`Self::block`],
    /// [`Self::instruction`]).
    pub fn module_level(&mut self, m: &mut Module) -> Result<()> {
        carried::module_level(self, m)
    }

    /// A block's own keys (its instructions are visited one by one).
    pub fn block(&mut self, b: &mut Block) -> Result<()> {
        carried::block(self, b)
    }

    /// One instruction's carried fields (the instructions of a loop body are
    /// visited on their own).
    pub fn instruction(&mut self, inst: &mut Instruction) -> Result<()> {
        carried::instruction(self, inst)
    }
}
