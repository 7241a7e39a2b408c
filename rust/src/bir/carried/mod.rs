//! Pelican expressions inside the values lncsplit carries without modelling
//! them (contract §1: unknown keys are kept verbatim).
//!
//! lncsplit models the fields the split binds (symbolic `addrs`, predicates,
//! a collective's ranks, the matmult replication keys) and carries everything
//! else: unknown keys of every object, `register_ap` and the other argument
//! kinds it does not model, `access_shape`, `cc_channel`, loop-axis extras,
//! dependency kinds. The compiler embeds pelican expressions in some of them
//! (neuronx-facts §1.12: instruction `order`, `unroll_dependencies`
//! predicate lists, DynamicAPINFO `offset_expr`, loop lb/ub/stride).
//!
//! This file owns the two things every user of those expressions needs: what
//! counts as an expression object ([`expr_version`]) and the one walk over
//! every carried value of a module ([`walk_module`] and its parts), driven by
//! an [`ExprRewriter`]. Two rewriters use it: the split binding ShardIds
//! ([`shards`]) and the wire-version rule below.
//!
//! **Wire-version rule** (contract §1.1/§2.1; docs/bir-json.md): a written
//! file holds one expression encoding, the one of its `version`. A v1 module's
//! carried v1 expressions are converted to v2 when it is loaded
//! ([`carried_to_v2`], the loader's one call), so every module in memory
//! carries v2 and the default writer (version 2) writes v2 only. Writing
//! version 1 converts the carried v2 expressions to v1 on a copy
//! ([`for_version`]); one v1 cannot express (a `SumKind`, a bare
//! `AffIVKind`, …) is the error `Pelican Expr should be in V1 format` naming
//! the field.

pub mod shards;

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::bir::seen::SeenAddrs;
use crate::bir::{Argument, Block, Extra, Instruction, Module, OpFields};
use crate::error::{Error, Result};
use crate::pelican::{AxisId, Context, Scope};

/// Deepest JSON nesting walked (the loader already stops at 128).
pub const MAX_DEPTH: usize = 512;

/// The v2 wire tags (neuronx-facts §2.4: the eleven written ones and `CCModKind`).
pub const V2_TAGS: [&str; 12] = [
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

/// The keys a v1 expression object may have (the v1 writer emits `terms`,
/// `c` and, for the divisions and the runtime values, `op`, `op_param`).
const V1_KEYS: [&str; 4] = ["terms", "c", "op", "op_param"];

/// The wire version `o` is a pelican expression in, if it is one: 2 for an
/// object whose `kind` is a v2 tag (a bare `ShardIDKind` is the same bytes in
/// both versions and counts as 2); 1 for a v1 object — `terms` an array of
/// `{AxisLabel, coef}`, `c` present, no keys but [`V1_KEYS`].
pub fn expr_version(o: &Map<String, Value>) -> Option<u32> {
    if let Some(tag) = o.get("kind").and_then(Value::as_str) {
        return V2_TAGS.contains(&tag).then_some(2);
    }
    let terms = o.get("terms")?.as_array()?;
    let v1 = o.contains_key("c")
        && o.keys().all(|k| V1_KEYS.contains(&k.as_str()))
        && terms.iter().all(|t| {
            t.as_object()
                .is_some_and(|t| t.contains_key("AxisLabel") && t.contains_key("coef"))
        });
    v1.then_some(1)
}

/// What a walk over carried values does with the expressions in them.
pub trait ExprRewriter {
    /// Does the carried value `v` (or a part of it) hold an expression to
    /// rewrite? Values it declines are not descended into.
    fn wants(&self, v: &Value) -> bool;
    /// Rewrite one expression object `v`, read in wire `version`.
    fn expr(&mut self, v: &mut Value, version: u32, site: &str) -> Result<()>;
    /// The error for a value nested deeper than [`MAX_DEPTH`].
    fn too_deep(&self, site: &str) -> Error;
}

/// Rewrite the expressions of one carried value (found by descending it).
pub fn value<R: ExprRewriter + ?Sized>(r: &mut R, v: &mut Value, site: &str) -> Result<()> {
    if r.wants(v) {
        descend(r, v, site, 0)?;
    }
    Ok(())
}

fn descend<R: ExprRewriter + ?Sized>(r: &mut R, v: &mut Value, site: &str, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(r.too_deep(site));
    }
    match v {
        Value::Object(o) => {
            if let Some(version) = expr_version(o) {
                return r.expr(v, version, site);
            }
            for (k, child) in o.iter_mut() {
                if r.wants(child) {
                    descend(r, child, &format!("{site}.{k}"), depth + 1)?;
                }
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter_mut().enumerate() {
                if r.wants(child) {
                    descend(r, child, &format!("{site}[{i}]"), depth + 1)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A carried value shared behind an `Arc` (copied on write only).
fn shared<R: ExprRewriter + ?Sized>(r: &mut R, v: &mut Arc<Value>, site: impl FnOnce() -> String) -> Result<()> {
    if r.wants(v) {
        descend(r, Arc::make_mut(v), &site(), 0)?;
    }
    Ok(())
}

/// The unknown keys of one object (copied on write only).
pub fn map<R: ExprRewriter + ?Sized>(r: &mut R, extra: &mut Extra, site: impl Fn(&str) -> String) -> Result<()> {
    let Some(m) = extra else {
        return Ok(());
    };
    if !m.values().any(|v| r.wants(v)) {
        return Ok(());
    }
    for (k, v) in Arc::make_mut(m).iter_mut() {
        if r.wants(v) {
            descend(r, v, &site(k), 0)?;
        }
    }
    Ok(())
}

/// Module, function, set and location keys, and the module's attributes
/// (blocks and instructions are [`block`] and [`instruction`]).
pub fn module_level<R: ExprRewriter + ?Sized>(r: &mut R, m: &mut Module) -> Result<()> {
    map(r, &mut m.extra, |k| format!("module key {k:?}"))?;
    for (k, v) in m.attributes.iter_mut().flatten() {
        value(r, v, &format!("module attribute {k:?}"))?;
    }
    for f in &mut m.functions {
        let fname = &*f.name;
        map(r, &mut f.extra, |k| format!("function {fname:?} key {k:?}"))?;
        for s in &mut f.allocations {
            let sname = &*s.name;
            map(r, &mut s.extra, |k| {
                format!("function {fname:?} set {sname:?} key {k:?}")
            })?;
            for l in &mut s.locations {
                let lname = &*l.name;
                map(r, &mut l.extra, |k| {
                    format!("function {fname:?} location {lname:?} key {k:?}")
                })?;
            }
        }
    }
    Ok(())
}

/// A block's own keys (not its instructions).
pub fn block<R: ExprRewriter + ?Sized>(r: &mut R, b: &mut Block) -> Result<()> {
    let bname = &*b.name;
    map(r, &mut b.extra, |k| format!("block {bname:?} key {k:?}"))
}

/// One instruction's carried fields: unknown keys, dependency kinds,
/// unmodelled argument kinds and keys, `cc_channel`, loop-axis keys (not the
/// instructions of a loop body).
pub fn instruction<R: ExprRewriter + ?Sized>(r: &mut R, inst: &mut Instruction) -> Result<()> {
    let iname = &*inst.name;
    let at = |what: &str| format!("instruction {iname:?} {what}");
    map(r, &mut inst.extra, |k| at(&format!("key {k:?}")))?;
    for d in inst.dependencies.iter_mut().flatten() {
        if let Some(kind) = &mut d.kind {
            shared(r, kind, || at("dependency kind"))?;
        }
    }
    for (list, args) in [("ins", &mut inst.ins), ("outs", &mut inst.outs)] {
        for (i, a) in args.iter_mut().enumerate() {
            argument(r, a, &|what: &str| at(&format!("{list}[{i}] {what}")))?;
        }
    }
    for (i, a) in inst.indirection_ins.iter_mut().flatten().enumerate() {
        argument(r, a, &|what: &str| at(&format!("indirection_ins[{i}] {what}")))?;
    }
    match &mut inst.op {
        OpFields::CollectiveCompute {
            cc_channel: Some(cc), ..
        } if r.wants(cc) => value(r, cc, &at("cc_channel")),
        OpFields::Loop { axis_extra, .. } => map(r, axis_extra, |k| at(&format!("axis key {k:?}"))),
        _ => Ok(()),
    }
}

fn argument<R: ExprRewriter + ?Sized>(r: &mut R, a: &mut Argument, at: &dyn Fn(&str) -> String) -> Result<()> {
    match a {
        Argument::Symbolic(s) => {
            // Copied on write only: the shape is shared with the other
            // arguments and cores that use it (`bir/load/shared.rs`).
            if let Some(shape) = s.access_shape.as_mut().filter(|v| r.wants(v)) {
                value(r, std::sync::Arc::make_mut(shape), &at("access_shape"))?;
            }
            map(r, &mut s.extra, |k| at(&format!("key {k:?}")))
        }
        Argument::Physical(p) => map(r, &mut p.extra, |k| at(&format!("key {k:?}"))),
        Argument::Imm { value: v, extra, .. } => {
            // The site is formatted only for a value that is walked.
            if r.wants(v) {
                value(r, v, &at("value"))?;
            }
            map(r, extra, |k| at(&format!("key {k:?}")))
        }
        Argument::Other { kind, fields } => {
            if !fields.values().any(|v| r.wants(v)) {
                return Ok(());
            }
            let kind = &**kind;
            let mut extra = Some(fields.clone());
            map(r, &mut extra, |k| at(&format!("({kind}) key {k:?}")))?;
            if let Some(f) = extra {
                *fields = f;
            }
            Ok(())
        }
    }
}

fn blocks<R: ExprRewriter + ?Sized>(r: &mut R, bs: &mut [Block]) -> Result<()> {
    for b in bs {
        block(r, b)?;
        for inst in &mut b.instructions {
            instruction(r, inst)?;
            if let OpFields::Loop { blocks: body, .. } = &mut inst.op {
                blocks(r, body)?;
            }
        }
    }
    Ok(())
}

/// Every carried value of `m`: module level, then every block and
/// instruction (loop bodies included).
pub fn walk_module<R: ExprRewriter + ?Sized>(r: &mut R, m: &mut Module) -> Result<()> {
    module_level(r, m)?;
    for f in &mut m.functions {
        blocks(r, &mut f.basic_blocks)?;
    }
    Ok(())
}

/// Whether `wants` holds for some carried value of `m`: the values
/// [`walk_module`] offers its rewriter's `wants` (at the top of each carried
/// field; `wants` looks inside), read-only, in the same order, stopping at
/// the first. A probe that runs before a walk which changes the module
/// (the split asks whether any carried value holds a ShardId) takes this one:
/// no `&mut`, no site closures. `wants` must answer on the value alone: a
/// shared value of the instructions (an unknown-key map, a dependency kind,
/// an `access_shape`: one allocation for many uses) that it refused is not
/// offered again at the same address ([`Seen`]).
pub fn any_value<W: FnMut(&Value) -> bool>(m: &Module, wants: &mut W) -> bool {
    if extra_any(&m.extra, wants) || m.attributes.iter().flat_map(|a| a.values()).any(&mut *wants) {
        return true;
    }
    let seen = &mut Seen::default();
    m.functions.iter().any(|f| {
        extra_any(&f.extra, wants)
            || f.allocations
                .iter()
                .any(|s| extra_any(&s.extra, wants) || s.locations.iter().any(|l| extra_any(&l.extra, wants)))
            || blocks_any(&f.basic_blocks, wants, seen)
    })
}

/// Addresses of shared values [`any_value`]'s `wants` refused: while the
/// module is borrowed an address names one value, so it need not be looked
/// at again (the probe looked inside the same few maps and shapes on every
/// instruction).
#[derive(Default)]
struct Seen(SeenAddrs);

impl Seen {
    /// `ask()` for the value at `addr`, unless it was refused before.
    #[inline]
    fn any(&mut self, addr: usize, ask: impl FnOnce() -> bool) -> bool {
        if self.0.contains(addr) {
            return false;
        }
        let yes = ask();
        if !yes {
            self.0.insert(addr);
        }
        yes
    }

    /// [`extra_any`] of a shared unknown-key map.
    fn extra<W: FnMut(&Value) -> bool>(&mut self, e: &Extra, wants: &mut W) -> bool {
        match e {
            Some(m) => self.any(Arc::as_ptr(m) as usize, || m.values().any(wants)),
            None => false,
        }
    }

    /// `wants` of a shared value.
    fn value<W: FnMut(&Value) -> bool>(&mut self, v: &Option<Arc<Value>>, wants: &mut W) -> bool {
        match v {
            Some(v) => self.any(Arc::as_ptr(v) as usize, || wants(v)),
            None => false,
        }
    }
}

/// The unknown keys of one object.
fn extra_any<W: FnMut(&Value) -> bool>(e: &Extra, wants: &mut W) -> bool {
    e.iter().flat_map(|m| m.values()).any(wants)
}

fn blocks_any<W: FnMut(&Value) -> bool>(bs: &[Block], wants: &mut W, seen: &mut Seen) -> bool {
    bs.iter().any(|b| {
        extra_any(&b.extra, wants)
            || b.instructions.iter().any(|inst| {
                instruction_any(inst, wants, seen)
                    || matches!(&inst.op, OpFields::Loop { blocks: body, .. } if blocks_any(body, wants, seen))
            })
    })
}

/// One instruction's carried values ([`instruction`]'s, read-only).
fn instruction_any<W: FnMut(&Value) -> bool>(inst: &Instruction, wants: &mut W, seen: &mut Seen) -> bool {
    if seen.extra(&inst.extra, wants) || inst.dependencies.iter().flatten().any(|d| seen.value(&d.kind, wants)) {
        return true;
    }
    let mut arg = |a: &Argument, wants: &mut W| match a {
        Argument::Symbolic(s) => seen.value(&s.access_shape, wants) || seen.extra(&s.extra, wants),
        Argument::Physical(p) => seen.extra(&p.extra, wants),
        Argument::Imm { value, extra, .. } => wants(value) || seen.extra(extra, wants),
        Argument::Other { fields, .. } => fields.values().any(&mut *wants),
    };
    if inst.arguments().any(|a| arg(a, wants)) {
        return true;
    }
    match &inst.op {
        OpFields::CollectiveCompute {
            cc_channel: Some(cc), ..
        } => wants(cc),
        OpFields::Loop { axis_extra, .. } => extra_any(axis_extra, wants),
        _ => false,
    }
}

/// Resolves every axis name to a free axis of that name (a carried field
/// does not say which loop it means; neither binding nor re-encoding depends
/// on the bounds) and accepts every register.
pub struct AnyScope;

impl Scope for AnyScope {
    fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<AxisId> {
        ctx.free_axis(name, 0, 1, 1).ok()
    }
    fn register(&mut self, _name: &str) -> bool {
        true
    }
}

// ------------------------------------------------------ the wire-version rule

/// Re-encodes carried expressions of one wire version in another.
struct Reencode {
    from: u32,
    to: u32,
    scratch: Context,
    /// Set once something was rewritten (the copy in [`for_version`] is kept).
    changed: bool,
}

impl Reencode {
    fn new(from: u32, to: u32) -> Self {
        Reencode {
            from,
            to,
            scratch: Context::new(),
            changed: false,
        }
    }
}

/// True when some object in `v` is an expression in wire `version` that is
/// not the same bytes in the other one (a bare `ShardIDKind` is).
fn has_expr(v: &Value, version: u32, depth: usize) -> bool {
    match v {
        Value::Object(o) => match expr_version(o) {
            Some(2) if o.get("kind").and_then(Value::as_str) == Some("ShardIDKind") => false,
            Some(found) => found == version,
            None => depth > MAX_DEPTH || o.values().any(|c| has_expr(c, version, depth + 1)),
        },
        Value::Array(a) => depth > MAX_DEPTH || a.iter().any(|c| has_expr(c, version, depth + 1)),
        _ => false,
    }
}

impl ExprRewriter for Reencode {
    fn wants(&self, v: &Value) -> bool {
        has_expr(v, self.from, 0)
    }

    fn expr(&mut self, v: &mut Value, version: u32, site: &str) -> Result<()> {
        let is_bare_shard = v.get("kind").and_then(Value::as_str) == Some("ShardIDKind");
        if version != self.from || is_bare_shard {
            return Ok(());
        }
        let ctx = &mut self.scratch;
        let id = ctx
            .from_json(v, version, &mut AnyScope)
            .map_err(|e| unreadable(site, version, e))?;
        *v = ctx.to_json(id, self.to).map_err(|e| unwritable(site, e))?;
        self.changed = true;
        Ok(())
    }

    fn too_deep(&self, site: &str) -> Error {
        Error::bir(format!("nested deeper than {MAX_DEPTH} levels"), site)
    }
}

/// A carried expression the loader cannot read: a BIR-JSON error at its site.
fn unreadable(site: &str, version: u32, e: Error) -> Error {
    let why = match e {
        Error::Pelican { message, .. } | Error::PelicanWire { message, .. } => message,
        other => other.to_string(),
    };
    Error::bir(format!("carried v{version} pelican expression: {why}"), site)
}

/// A carried expression the requested version cannot express: the writer's
/// own error (`Pelican Expr should be in V1 format`, …), naming the field.
fn unwritable(site: &str, e: Error) -> Error {
    match e {
        Error::Pelican { message, location } => Error::Pelican {
            message: format!("{message} (carried {site})"),
            location,
        },
        other => other,
    }
}

/// The loader's hook: a module read as version 1 carries its expressions in
/// v2 from then on, so writing version 2 gives one encoding. Cost: nothing
/// for a version-2 module; one walk of the carried values of a version-1 one.
pub fn carried_to_v2(mut m: Module) -> Result<Module> {
    if m.version == 1 {
        walk_module(&mut Reencode::new(1, 2), &mut m)?;
    }
    Ok(m)
}

/// `m` as the writer should see it for wire `version`: itself for version 2
/// (modules carry v2, see [`carried_to_v2`]); for version 1 a copy whose
/// carried v2 expressions are v1, or the error naming one v1 cannot express.
pub fn for_version(m: &Module, version: u32) -> Result<Cow<'_, Module>> {
    reencoded(m, version, walk_module)
}

/// [`for_version`] of one instruction (its loop body included).
pub fn instruction_for_version(i: &Instruction, version: u32) -> Result<Cow<'_, Instruction>> {
    reencoded(i, version, |r, i| {
        instruction(r, i)?;
        match &mut i.op {
            OpFields::Loop { blocks: body, .. } => blocks(r, body),
            _ => Ok(()),
        }
    })
}

/// [`for_version`] of one block (its instructions and loop bodies included).
pub fn block_for_version(b: &Block, version: u32) -> Result<Cow<'_, Block>> {
    reencoded(b, version, |r, b| blocks(r, std::slice::from_mut(b)))
}

/// [`for_version`] of one argument.
pub fn argument_for_version(a: &Argument, version: u32) -> Result<Cow<'_, Argument>> {
    reencoded(a, version, |r, a| {
        argument(r, a, &|what: &str| format!("argument {what}"))
    })
}

/// `p` itself for version 2; for version 1 a copy with its carried v2
/// expressions in v1 (borrowed back when none changed). A structural copy
/// (unknown keys are shared until written): the rare path of
/// `to_json(version=1)` pays it; version 2 never does.
fn reencoded<T: Clone>(
    p: &T,
    version: u32,
    walk: impl FnOnce(&mut Reencode, &mut T) -> Result<()>,
) -> Result<Cow<'_, T>> {
    if version != 1 {
        return Ok(Cow::Borrowed(p));
    }
    let mut r = Reencode::new(2, 1);
    let mut copy = p.clone();
    walk(&mut r, &mut copy)?;
    Ok(if r.changed { Cow::Owned(copy) } else { Cow::Borrowed(p) })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::bir::{dump_module, load_module};

    fn version_of(v: Value) -> Option<u32> {
        expr_version(v.as_object().expect("an object"))
    }

    #[test]
    fn what_counts_as_an_expression_object() {
        assert_eq!(
            version_of(json!({"kind": "SumKind", "n_terms": 0, "terms": []})),
            Some(2)
        );
        assert_eq!(version_of(json!({"kind": "ShardIDKind", "ub": 2})), Some(2));
        assert_eq!(
            version_of(json!({"terms": [{"AxisLabel": "i", "coef": 1}], "c": 0})),
            Some(1)
        );
        assert_eq!(version_of(json!({"terms": [], "c": 3})), Some(1));
        assert_eq!(
            version_of(json!({"terms": [], "c": 0, "op": "Mod", "op_param": 2})),
            Some(1)
        );
        // Data that only looks alike stays data.
        assert_eq!(version_of(json!({"kind": "register_ap"})), None);
        assert_eq!(version_of(json!({"terms": [], "c": 0, "note": "x"})), None);
        assert_eq!(version_of(json!({"terms": [{"AxisLabel": "i"}], "c": 0})), None);
        assert_eq!(version_of(json!({"terms": []})), None);
    }

    fn module(version: u32, order: Value) -> Module {
        let doc = json!({"version": version, "name": "k", "functions": [{"name": "main",
            "basic_blocks": [{"name": "b", "instructions": [{"name": "x", "opcode": "NoOp", "order": order}]}]}]});
        load_module(doc.to_string().as_bytes()).unwrap()
    }

    fn order(m: &Module, version: u32) -> Value {
        let v: Value = serde_json::from_slice(&dump_module(m, version).unwrap()).unwrap();
        v["functions"][0]["basic_blocks"][0]["instructions"][0]["order"].clone()
    }

    #[test]
    fn a_v1_module_carries_v2_and_writes_each_version_in_its_own_encoding() {
        let v1 = json!([{"terms": [{"AxisLabel": "i", "coef": 2}], "c": 1}, {"kind": "ShardIDKind", "ub": 2}]);
        let m = module(1, v1.clone());
        let iv = json!({"kind": "AffIVKind", "axis": "i"});
        let v2 = json!([{"kind": "AffExprKind", "terms": [{"idx": iv, "coeff": 2}], "c": 1}, {"kind": "ShardIDKind", "ub": 2}]);
        assert_eq!(order(&m, 2), v2);
        assert_eq!(order(&m, 1), v1);
    }

    /// The wire-version rule holds on every door of the writer (house §5.4:
    /// `dump_module(m, 1)` wrote carried v2 into a v1 file).
    #[test]
    fn every_writer_entry_writes_carried_expressions_in_the_files_version() {
        let v1 = json!([{"terms": [{"AxisLabel": "i", "coef": 2}], "c": 1}]);
        let m = module(1, v1.clone());
        let order_of = |bytes: &[u8]| -> Value {
            let v: Value = serde_json::from_slice(bytes).unwrap();
            v["functions"][0]["basic_blocks"][0]["instructions"][0]["order"].clone()
        };
        let d = crate::bir::dump::dump_module_chunks(&m, 1).unwrap().concat();
        let mut streamed = Vec::new();
        crate::bir::dump::write_module(&m, 1, &mut streamed).unwrap();
        for bytes in [
            dump_module(&m, 1).unwrap(),
            crate::bir::dump::dump_module_parallel(&m, 1).unwrap(),
            d,
            streamed,
        ] {
            assert_eq!(order_of(&bytes), v1);
        }
        let inst = &m.functions[0].basic_blocks[0].instructions[0];
        let piece = crate::bir::dump::instruction_to_value(&m.ctx, inst, 1).unwrap();
        assert_eq!(piece["order"], v1);
        let block = crate::bir::dump::block_to_value(&m.ctx, &m.functions[0].basic_blocks[0], 1).unwrap();
        assert_eq!(block["instructions"][0]["order"], v1);
    }

    #[test]
    fn a_version_2_module_is_written_as_it_is_and_v1_refuses_what_it_cannot_express() {
        let sum = json!([{"kind": "SumKind", "n_terms": 1, "terms": [{"kind": "AffIVKind", "axis": "i"}]}]);
        let m = module(2, sum.clone());
        assert!(matches!(for_version(&m, 2).unwrap(), Cow::Borrowed(_)));
        assert_eq!(order(&m, 2), sum);
        let e = dump_module(&m, 1).unwrap_err().to_string();
        assert!(
            e.contains("Pelican Expr should be in V1 format") && e.contains("order"),
            "{e}"
        );
    }

    #[test]
    fn a_carried_v1_expression_that_does_not_parse_is_a_load_error_at_its_field() {
        let doc = json!({"version": 1, "name": "k", "functions": [{"name": "main",
            "basic_blocks": [{"name": "b", "instructions": [{"name": "x", "opcode": "NoOp",
                "order": [{"terms": [], "c": 0, "op": "Bogus", "op_param": 1}]}]}]}]});
        let e = load_module(doc.to_string().as_bytes()).unwrap_err().to_string();
        assert!(e.contains("Bogus") && e.contains("order"), "{e}");
    }
}
