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
//! Decision: **bind them**. A JSON object that is a pelican expression — a v2
//! object whose `kind` is one of the wire tags, or a v1 affine object
//! (`terms` of `{AxisLabel, coef}`) — and contains a `ShardIDKind` is read
//! with the wire reader into a scratch context (loop axes and registers
//! resolved by name, as the carried field cannot say which loop it means),
//! bound with `update_shard_id(core)` (constants folded) and written back in
//! the wire version it was read in. A ShardId lncsplit cannot bind this way
//! (a malformed expression, a `ub` ≤ core, a result with no wire form) makes
//! the split refuse the module with `NeuronAssertion` 9007 naming the field.
//! The split binds these fields during its own walk (no extra pass over the
//! module); core 0's clone also tries the original's core on each of them,
//! so a refusal comes before the original is touched.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::bir::{Argument, Block, Extra, Instruction, Module, OpFields};
use crate::error::{Error, Result};
use crate::pelican::{AxisId, Context, Scope};

/// lncsplit's code: a carried field holds a ShardId that cannot be bound.
pub const UNBINDABLE_SHARD: u32 = 9007;

/// Deepest JSON nesting walked (the loader already stops at 128).
const MAX_DEPTH: usize = 512;

/// The v2 wire tags (neuronx-facts §2.4: the eleven written ones and `CCModKind`).
const V2_TAGS: [&str; 12] = [
    "CCGetRankKind",
    "IndirectArgId",
    "AffIVKind",
    "IntRuntimeValueKind",
    "ShardIDKind",
    "AffExprKind",
    "SumKind",
    "MultKind",
    "FloorDivKind",
    "ModuloKind",
    "CCDivKind",
    "CCModKind",
];

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

/// The wire version `o` is a pelican expression in, if it is one.
fn expr_version(o: &Map<String, Value>, module_version: u32) -> Option<u32> {
    if let Some(tag) = o.get("kind").and_then(Value::as_str) {
        return match tag {
            // Byte-identical in v1 and v2: the module's version decides.
            "ShardIDKind" => Some(module_version),
            t if V2_TAGS.contains(&t) => Some(2),
            _ => None,
        };
    }
    let terms = o.get("terms")?.as_array()?;
    let v1 = !terms.is_empty() && terms.iter().all(|t| t.get("AxisLabel").is_some());
    v1.then_some(1)
}

/// Resolves every axis name to a free axis of that name (the carried field
/// does not say which loop it means; binding does not depend on the bounds)
/// and accepts every register.
struct AnyScope;

impl Scope for AnyScope {
    fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<AxisId> {
        ctx.free_axis(name, 0, 1, 1).ok()
    }
    fn register(&mut self, _name: &str) -> bool {
        true
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

/// Binds the ShardIds of one core's carried values. The split calls
/// [`CarriedBinder::instruction`] on every instruction it keeps, while the
/// instruction is hot in cache, and [`CarriedBinder::module_level`] once per
/// core, so a module without carried ShardIds costs no extra walk.
pub struct CarriedBinder {
    core: i64,
    version: u32,
    scratch: Context,
    /// Also try binding every carried expression to this core (on a copy):
    /// the clones check the original's core, so its in-place binding cannot
    /// fail half way and a refusal leaves the input untouched.
    probe: Option<i64>,
}

impl CarriedBinder {
    /// A binder for `core` of a module read in wire `version`.
    pub fn new(version: u32, core: i64, probe: Option<i64>) -> Self {
        CarriedBinder {
            core,
            version,
            scratch: Context::new(),
            probe,
        }
    }

    fn bind_value(&mut self, v: &mut Value, site: &str, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(unbindable(site, format!("nested deeper than {MAX_DEPTH} levels")));
        }
        match v {
            Value::Object(o) => {
                if let Some(version) = expr_version(o, self.version) {
                    return self.bind_expr(v, version, site);
                }
                for (k, child) in o.iter_mut() {
                    if value_has_shard(child) {
                        self.bind_value(child, &format!("{site}.{k}"), depth + 1)?;
                    }
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter_mut().enumerate() {
                    if value_has_shard(child) {
                        self.bind_value(child, &format!("{site}[{i}]"), depth + 1)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn bind_expr(&mut self, v: &mut Value, version: u32, site: &str) -> Result<()> {
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

    /// One carried value.
    fn slot(&mut self, v: &mut Value, site: impl FnOnce() -> String) -> Result<()> {
        if value_has_shard(v) {
            self.bind_value(v, &site(), 0)?;
        }
        Ok(())
    }

    /// A carried value shared behind an `Arc` (copied on write only).
    fn shared_slot(&mut self, v: &mut Arc<Value>, site: impl FnOnce() -> String) -> Result<()> {
        if value_has_shard(v) {
            self.bind_value(Arc::make_mut(v), &site(), 0)?;
        }
        Ok(())
    }

    /// The unknown keys of one object (copied on write only).
    pub fn map(&mut self, extra: &mut Extra, site: impl Fn(&str) -> String) -> Result<()> {
        let Some(map) = extra else {
            return Ok(());
        };
        if !map.values().any(value_has_shard) {
            return Ok(());
        }
        for (k, v) in Arc::make_mut(map).iter_mut() {
            if value_has_shard(v) {
                self.bind_value(v, &site(k), 0)?;
            }
        }
        Ok(())
    }

    /// Module, function, set and location keys, and the module's attributes.
    /// Blocks and instructions are the split walk's ([`Self::block`],
    /// [`Self::instruction`]).
    pub fn module_level(&mut self, m: &mut Module) -> Result<()> {
        self.map(&mut m.extra, |k| format!("module key {k:?}"))?;
        for (k, v) in m.attributes.iter_mut().flatten() {
            self.slot(v, || format!("module attribute {k:?}"))?;
        }
        for f in &mut m.functions {
            let fname = &*f.name;
            self.map(&mut f.extra, |k| format!("function {fname:?} key {k:?}"))?;
            for s in &mut f.allocations {
                let sname = &*s.name;
                self.map(&mut s.extra, |k| format!("function {fname:?} set {sname:?} key {k:?}"))?;
                for l in &mut s.locations {
                    let lname = &*l.name;
                    self.map(&mut l.extra, |k| {
                        format!("function {fname:?} location {lname:?} key {k:?}")
                    })?;
                }
            }
        }
        Ok(())
    }

    /// A block's own keys (its instructions are visited one by one).
    pub fn block(&mut self, b: &mut Block) -> Result<()> {
        let bname = &*b.name;
        self.map(&mut b.extra, |k| format!("block {bname:?} key {k:?}"))
    }

    /// One instruction's carried fields: unknown keys, dependency kinds,
    /// unmodelled argument kinds and keys, `cc_channel`, loop-axis keys (the
    /// instructions of a loop body are visited on their own).
    pub fn instruction(&mut self, inst: &mut Instruction) -> Result<()> {
        let iname = &*inst.name;
        let at = |what: &str| format!("instruction {iname:?} {what}");
        self.map(&mut inst.extra, |k| at(&format!("key {k:?}")))?;
        for d in inst.dependencies.iter_mut().flatten() {
            if let Some(kind) = &mut d.kind {
                self.shared_slot(kind, || at("dependency kind"))?;
            }
        }
        for (list, args) in [("ins", &mut inst.ins), ("outs", &mut inst.outs)] {
            for (i, a) in args.iter_mut().enumerate() {
                self.argument(a, &|what: &str| at(&format!("{list}[{i}] {what}")))?;
            }
        }
        for (i, a) in inst.indirection_ins.iter_mut().flatten().enumerate() {
            self.argument(a, &|what: &str| at(&format!("indirection_ins[{i}] {what}")))?;
        }
        match &mut inst.op {
            OpFields::CollectiveCompute {
                cc_channel: Some(cc), ..
            } => self.slot(cc, || at("cc_channel")),
            OpFields::Loop { axis_extra, .. } => self.map(axis_extra, |k| at(&format!("axis key {k:?}"))),
            _ => Ok(()),
        }
    }

    fn argument(&mut self, a: &mut Argument, at: &dyn Fn(&str) -> String) -> Result<()> {
        match a {
            Argument::Symbolic(s) => {
                // Copied on write only: the shape is shared with the other
                // arguments and cores that use it (`bir/share.rs`).
                if let Some(shape) = s.access_shape.as_mut().filter(|v| value_has_shard(v)) {
                    self.slot(std::sync::Arc::make_mut(shape), || at("access_shape"))?;
                }
                self.map(&mut s.extra, |k| at(&format!("key {k:?}")))
            }
            Argument::Physical(p) => self.map(&mut p.extra, |k| at(&format!("key {k:?}"))),
            Argument::Imm { value, extra, .. } => {
                self.slot(value, || at("value"))?;
                self.map(extra, |k| at(&format!("key {k:?}")))
            }
            Argument::Other { kind, fields } => {
                if !fields.values().any(value_has_shard) {
                    return Ok(());
                }
                let kind = &**kind;
                let mut extra = Some(fields.clone());
                self.map(&mut extra, |k| at(&format!("({kind}) key {k:?}")))?;
                if let Some(f) = extra {
                    *fields = f;
                }
                Ok(())
            }
        }
    }
}
