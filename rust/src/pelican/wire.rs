//! Pelican JSON wire: v2 (eleven written tags, `CCModKind` read-only) and v1
//! (flat affine form), neuronx-facts §2 and contract §2.1.
//!
//! Reading resolves names through a [`Scope`]: AffIVKind axes (nearest
//! enclosing loop), IntRuntimeValueKind registers, and ShardIDKind bounds
//! (getOrCreateShardId). Writing is a tree, not a DAG: a shared
//! subexpression is written at every use; [`Context::check_writable`] refuses
//! a tree whose expansion would exceed [`MAX_TREE_NODES`].
//!
//! One file past 800 lines: v1 and v2, reading and writing, share the tag
//! table and the error texts; split, they would copy them.

use std::borrow::Cow;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::context::Context;
use super::kinds::{AxisId, ExprId, ExprKind, Node};
use crate::error::{Error, Result};

/// Largest expanded tree (nodes written) one expression may produce.
pub const MAX_TREE_NODES: u64 = 1 << 24;

/// Name resolution while reading expressions.
pub trait Scope {
    /// The axis an `AffIVKind{"axis": name}` refers to (nearest enclosing loop).
    fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<AxisId>;
    /// Called for every IntRuntimeValueKind read: false when `regref`
    /// names no register of the enclosing function (an error there).
    fn register(&mut self, name: &str) -> bool;
    /// Called for every ShardIDKind read, with its bound.
    fn note_shard(&mut self, _ub: i64) {}
}

/// A scope for expressions read outside a module: axes come from an explicit
/// table (name → (lo, ub, step)), any register name is accepted.
pub struct FreeScope<'a> {
    pub axes: &'a [(String, i64, i64, i64)],
}

impl Scope for FreeScope<'_> {
    fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<AxisId> {
        let &(_, lo, ub, step) = self.axes.iter().find(|a| a.0 == name)?;
        ctx.free_axis(name, lo, ub, step).ok()
    }
    fn register(&mut self, _name: &str) -> bool {
        true
    }
}

/// The scope of `Context.from_json` outside a module: an `AffIVKind` axis
/// name is looked up in the explicit `axes` table first (see
/// [`Context::free_axis`]), then among the axes the context already has (the
/// most recently defined one of that name, as the nearest enclosing loop
/// would be). Any register name is accepted.
pub struct ContextScope<'a> {
    pub axes: &'a [(String, i64, i64, i64)],
}

impl Scope for ContextScope<'_> {
    fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<AxisId> {
        if let Some(&(_, lo, ub, step)) = self.axes.iter().find(|a| a.0 == name) {
            return ctx.free_axis(name, lo, ub, step).ok();
        }
        ctx.axes()
            .iter()
            .rposition(|a| &*a.name == name)
            .map(|i| AxisId(i as u32))
    }
    fn register(&mut self, _name: &str) -> bool {
        true
    }
}

fn at(e: Error, seg: &str) -> Error {
    match e {
        Error::PelicanWire { message, path } => Error::PelicanWire {
            message,
            path: format!("{seg}{path}"),
        },
        Error::Pelican { message, .. } => Error::PelicanWire {
            message,
            path: seg.to_string(),
        },
        other => other,
    }
}

fn missing(key: &str) -> Error {
    Error::wire(format!("missing key \"{key}\" in pelican expression"), "")
}

fn need<T>(v: Option<T>, key: &str) -> Result<T> {
    v.ok_or_else(|| missing(key))
}

/// The tags of wire v2 (contract §2.1): the eleven written ones and the
/// read-only `CCModKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    CCGetRank,
    IndirectArg,
    AffIV,
    IntRuntimeValue,
    ShardID,
    AffExpr,
    Sum,
    Mult,
    FloorDiv,
    Modulo,
    CCMod,
    CCDiv,
}

impl Tag {
    pub fn from_name(s: &str) -> Option<Tag> {
        Some(match s {
            "CCGetRankKind" => Tag::CCGetRank,
            "IndirectArgId" => Tag::IndirectArg,
            "AffIVKind" => Tag::AffIV,
            "IntRuntimeValueKind" => Tag::IntRuntimeValue,
            "ShardIDKind" => Tag::ShardID,
            "AffExprKind" => Tag::AffExpr,
            "SumKind" => Tag::Sum,
            "MultKind" => Tag::Mult,
            "FloorDivKind" => Tag::FloorDiv,
            "ModuloKind" => Tag::Modulo,
            "CCModKind" => Tag::CCMod,
            "CCDivKind" => Tag::CCDiv,
            _ => return None,
        })
    }
}

/// What one object of `terms` built: an expression (a Sum operand) or an
/// AffExpr term `{idx, coeff}` (a reader may meet `terms` before `kind`).
#[derive(Clone, Copy, Debug)]
pub enum Built {
    Expr(ExprId),
    Term(ExprId, i64),
}

/// The keys of one v2 expression object, as read. Every reader fills one and
/// hands it to [`Context::build_v2`]: one grammar for the DOM reader here and
/// the streaming one of the module loader.
#[derive(Default)]
pub struct ExprFields<'a> {
    /// `Err(text)`: a tag the wire does not define (reported when building).
    pub kind: Option<std::result::Result<Tag, Cow<'a, str>>>,
    pub terms: Option<Vec<Built>>,
    pub n_terms: Option<u64>,
    pub idx: Option<ExprId>,
    pub coeff: Option<i64>,
    pub c: Option<i64>,
    pub var: Option<ExprId>,
    pub scale: Option<i64>,
    pub numer: Option<ExprId>,
    pub denom: Option<i64>,
    pub replica_groups_id: Option<u64>,
    pub axis: Option<Cow<'a, str>>,
    pub arg_id: Option<i64>,
    pub regref: Option<Cow<'a, str>>,
    pub ub: Option<i64>,
    pub iteration_id: Option<i64>,
    pub channel_id: Option<i64>,
}

impl<'a> ExprFields<'a> {
    pub fn set_kind(&mut self, s: Cow<'a, str>) {
        self.kind = Some(Tag::from_name(&s).ok_or(s));
    }
}

fn obj(v: &Value) -> Result<&serde_json::Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::wire("pelican expression must be a JSON object", ""))
}

fn get<'v>(o: &'v serde_json::Map<String, Value>, key: &str) -> Result<&'v Value> {
    o.get(key)
        .ok_or_else(|| Error::wire(format!("missing key \"{key}\" in pelican expression"), ""))
}

fn int(o: &serde_json::Map<String, Value>, key: &str) -> Result<i64> {
    let v = get(o, key)?;
    v.as_i64().ok_or_else(|| {
        Error::wire(
            format!("key \"{key}\" must be a 64-bit integer, got {v}"),
            format!(".{key}"),
        )
    })
}

fn array<'v>(o: &'v serde_json::Map<String, Value>, key: &str) -> Result<&'v Vec<Value>> {
    let v = get(o, key)?;
    v.as_array()
        .ok_or_else(|| Error::wire(format!("key \"{key}\" must be an array, got {v}"), format!(".{key}")))
}

/// A key of a v2 object that holds no expression.
#[inline(never)]
fn read_v2_scalar<'v>(f: &mut ExprFields<'v>, key: &str, x: &'v Value) -> Result<()> {
    let int = |x: &Value| {
        x.as_i64()
            .ok_or_else(|| Error::wire(format!("key \"{key}\" must be a 64-bit integer, got {x}"), ""))
    };
    let uint = |x: &Value| {
        x.as_u64()
            .ok_or_else(|| Error::wire(format!("key \"{key}\" must be an unsigned integer, got {x}"), ""))
    };
    let text = |x: &'v Value| {
        x.as_str()
            .map(Cow::Borrowed)
            .ok_or_else(|| Error::wire(format!("key \"{key}\" must be a string, got {x}"), ""))
    };
    match key {
        "kind" => f.set_kind(text(x)?),
        "n_terms" => f.n_terms = Some(uint(x)?),
        "replica_groups_id" => f.replica_groups_id = Some(uint(x)?),
        "coeff" => f.coeff = Some(int(x)?),
        "c" => f.c = Some(int(x)?),
        "scale" => f.scale = Some(int(x)?),
        "denom" => f.denom = Some(int(x)?),
        "arg_id" => f.arg_id = Some(int(x)?),
        "ub" => f.ub = Some(int(x)?),
        "iteration_id" => f.iteration_id = Some(int(x)?),
        "channel_id" => f.channel_id = Some(int(x)?),
        "axis" => f.axis = Some(text(x)?),
        "regref" => f.regref = Some(text(x)?),
        // Keys the wire does not define are ignored, as the compiler does.
        _ => {}
    }
    Ok(())
}

impl Context {
    /// Read one expression in wire `version` (1 or 2).
    pub fn from_json(&mut self, v: &Value, version: u32, scope: &mut dyn Scope) -> Result<ExprId> {
        match version {
            2 => self.read_v2(v, scope, 0),
            1 => self.read_v1(v, scope, 0),
            _ => Err(Error::wire(
                "Check the version of bir json file - should be 1 (old) or 2 (new)",
                "",
            )),
        }
    }

    /// An axis defined outside any module (`Context.from_json(axes=...)`):
    /// the same name and bounds give the same axis, so re-reading an
    /// expression gives the same node.
    pub fn free_axis(&mut self, name: &str, lo: i64, ub: i64, step: i64) -> Result<AxisId> {
        if let Some(i) = self
            .axes()
            .iter()
            .position(|a| &*a.name == name && a.lo == lo && a.ub == ub && a.step == step)
        {
            return Ok(AxisId(i as u32));
        }
        self.add_axis(name, lo, ub, step)
    }

    fn depth_guard(depth: u32) -> Result<()> {
        if depth > super::context::MAX_DEPTH {
            return Err(Error::wire(
                format!(
                    "pelican expression nested deeper than {} levels",
                    super::context::MAX_DEPTH
                ),
                "",
            ));
        }
        Ok(())
    }

    fn read_v2(&mut self, v: &Value, scope: &mut dyn Scope, depth: u32) -> Result<ExprId> {
        match self.read_v2_any(v, scope, depth)? {
            Built::Expr(e) => Ok(e),
            Built::Term(..) => Err(missing("kind")),
        }
    }

    /// One object of the v2 wire from a DOM value: its keys fill an
    /// [`ExprFields`] (the streaming loader fills the same struct), then
    /// [`Context::build_v2`] makes the node. Kept small: this is the
    /// recursive path.
    fn read_v2_any(&mut self, v: &Value, scope: &mut dyn Scope, depth: u32) -> Result<Built> {
        Self::depth_guard(depth)?;
        let o = obj(v)?;
        let mut f = ExprFields::default();
        for (k, x) in o {
            self.read_v2_field(&mut f, k, x, scope, depth + 1)
                .map_err(|e| at(e, &format!(".{k}")))?;
        }
        self.build_v2(scope, f)
    }

    /// One key of a v2 object. Only the arms that recurse live here, so the
    /// frame on the recursive path stays small (even in debug builds).
    #[inline(never)]
    fn read_v2_field<'v>(
        &mut self,
        f: &mut ExprFields<'v>,
        key: &str,
        x: &'v Value,
        scope: &mut dyn Scope,
        d: u32,
    ) -> Result<()> {
        match key {
            "terms" => f.terms = Some(self.read_v2_terms(x, scope, d)?),
            "idx" => f.idx = Some(self.read_v2(x, scope, d)?),
            "var" => f.var = Some(self.read_v2(x, scope, d)?),
            "numer" => f.numer = Some(self.read_v2(x, scope, d)?),
            _ => read_v2_scalar(f, key, x)?,
        }
        Ok(())
    }

    #[inline(never)]
    fn read_v2_terms(&mut self, x: &Value, scope: &mut dyn Scope, d: u32) -> Result<Vec<Built>> {
        let a = x
            .as_array()
            .ok_or_else(|| Error::wire(format!("key \"terms\" must be an array, got {x}"), ""))?;
        let mut t = Vec::with_capacity(a.len());
        for (i, term) in a.iter().enumerate() {
            t.push(self.read_v2_any(term, scope, d).map_err(|e| at(e, &format!("[{i}]")))?);
        }
        Ok(t)
    }

    /// The v2 grammar: the keys of one expression object → one node (or an
    /// AffExpr term `{idx, coeff}`). Every reader of the wire ends here, so
    /// the rules and the error texts exist once. Errors carry the path
    /// relative to the object.
    pub fn build_v2(&mut self, scope: &mut dyn Scope, f: ExprFields<'_>) -> Result<Built> {
        let tag = match f.kind {
            None => {
                // An AffExpr term: {idx, coeff}.
                let idx = need(f.idx, "kind")?;
                return Ok(Built::Term(idx, need(f.coeff, "coeff")?));
            }
            Some(Err(other)) => {
                return Err(Error::wire(
                    format!("Walrus doesn't support this kind of Expr: {other}"),
                    ".kind",
                ))
            }
            Some(Ok(t)) => t,
        };
        let r = match tag {
            Tag::CCGetRank => {
                let it = need(f.iteration_id, "iteration_id")?;
                self.cc_get_rank(it, need(f.channel_id, "channel_id")?)
            }
            Tag::IndirectArg => self.indirect_arg(need(f.arg_id, "arg_id")?),
            Tag::AffIV => {
                let name = need(f.axis, "axis")?;
                match scope.axis(self, &name) {
                    Some(a) => self.affine_iv(a),
                    None => {
                        return Err(Error::wire(
                            format!("AffIVKind axis \"{name}\" is not defined by any enclosing Loop"),
                            ".axis",
                        ))
                    }
                }
            }
            Tag::IntRuntimeValue => {
                let name = need(f.regref, "regref")?;
                if !scope.register(&name) {
                    return Err(Error::wire(
                        format!("IntRuntimeValueKind regref \"{name}\" names no register of the function"),
                        "",
                    ));
                }
                self.int_runtime_value(&name)
            }
            Tag::ShardID => {
                let ub = need(f.ub, "ub")?;
                let id = self.shard_id(ub);
                if id.is_ok() {
                    scope.note_shard(ub);
                }
                id
            }
            Tag::AffExpr => {
                let terms = need(f.terms, "terms")?;
                let mut t = Vec::with_capacity(terms.len());
                for (i, x) in terms.into_iter().enumerate() {
                    match x {
                        Built::Term(idx, coeff) => t.push((idx, coeff)),
                        Built::Expr(_) => {
                            return Err(Error::wire(
                                "an AffExprKind term must be {\"idx\", \"coeff\"}",
                                format!(".terms[{i}]"),
                            ))
                        }
                    }
                }
                self.aff_expr_in_place(&mut t, f.c.unwrap_or(0))
            }
            Tag::Sum => {
                let terms = need(f.terms, "terms")?;
                if need(f.n_terms, "n_terms")? != terms.len() as u64 {
                    return Err(Error::wire("Number of terms don't match", ".n_terms"));
                }
                let mut t = Vec::with_capacity(terms.len());
                for (i, x) in terms.into_iter().enumerate() {
                    match x {
                        Built::Expr(e) => t.push(e),
                        Built::Term(..) => return Err(at(missing("kind"), &format!(".terms[{i}]"))),
                    }
                }
                self.sum_in_place(&mut t)
            }
            Tag::Mult => {
                let var = need(f.var, "var")?;
                self.mult(var, need(f.scale, "scale")?)
            }
            Tag::FloorDiv | Tag::Modulo | Tag::CCMod | Tag::CCDiv => {
                let numer = need(f.numer, "numer")?;
                let denom = need(f.denom, "denom")?;
                match tag {
                    Tag::FloorDiv => self.floor_div(numer, denom),
                    // CCModKind is read-accepted but decodes to a plain Modulo.
                    Tag::Modulo | Tag::CCMod => self.modulo(numer, denom),
                    _ => self.cc_div(numer, denom, f.replica_groups_id.unwrap_or(0)),
                }
            }
        };
        r.map(Built::Expr).map_err(|e| at(e, ""))
    }

    fn read_v1(&mut self, v: &Value, scope: &mut dyn Scope, depth: u32) -> Result<ExprId> {
        Self::depth_guard(depth)?;
        let o = obj(v)?;
        if let Some(k) = o.get("kind") {
            if k.as_str() == Some("ShardIDKind") {
                return self.read_v2(v, scope, depth);
            }
            let tag = k.as_str().map(str::to_string).unwrap_or_else(|| k.to_string());
            return Err(Error::wire(
                format!("Walrus doesn't support this kind of Expr: {tag}"),
                ".kind",
            ));
        }
        // Base: terms [{AxisLabel, coef}] + c, always parsed.
        let mut t = Vec::new();
        if o.contains_key("terms") {
            for (i, term) in array(o, "terms")?.iter().enumerate() {
                let seg = format!(".terms[{i}]");
                let to = obj(term).map_err(|e| at(e, &seg))?;
                let label = get(to, "AxisLabel").map_err(|e| at(e, &seg))?;
                let idx = match label {
                    Value::String(name) => match scope.axis(self, name) {
                        Some(a) => self.affine_iv(a).map_err(|e| at(e, &seg))?,
                        None => {
                            return Err(Error::wire(
                                format!("AxisLabel \"{name}\" is not defined by any enclosing Loop"),
                                format!("{seg}.AxisLabel"),
                            ))
                        }
                    },
                    // lncsplit extension: a non-IV index (a ShardId) as a nested object.
                    other => self
                        .read_v1(other, scope, depth + 1)
                        .map_err(|e| at(e, &format!("{seg}.AxisLabel")))?,
                };
                t.push((idx, int(to, "coef").map_err(|e| at(e, &seg))?));
            }
        }
        let c = if o.contains_key("c") { int(o, "c")? } else { 0 };
        let base = self.aff_expr(&t, c).map_err(|e| at(e, ""))?;
        let Some(op) = o.get("op") else {
            return Ok(base);
        };
        let op = op
            .as_str()
            .ok_or_else(|| Error::wire("key \"op\" must be a string", ".op"))?;
        let param = int(o, "op_param")?;
        match op {
            "Mod" => self.modulo(base, param),
            "Div" => self.floor_div(base, param),
            // v1 CCGetRank decodes to CCDiv ("Only CCDiv can be converted to CCGetRank").
            "CCGetRank" => self.cc_div(base, param, 0),
            "IndirectArgId" => {
                if !t.is_empty() || c != 0 {
                    return Err(Error::wire("IndirectArgId v1 body must be the constant 0", ""));
                }
                self.indirect_arg(param)
            }
            other => {
                return Err(Error::wire(
                    format!("Walrus doesn't support this kind of Expr: {other}"),
                    ".op",
                ))
            }
        }
        .map_err(|e| at(e, ".op_param"))
    }

    /// isV1 (neuronx-facts §2.2): kind 17; or kind ∈ {2, 3}; or kind ∈
    /// {25, 26, 27} over an AffExpr. A bare ShardId is *not* v1 (the v1 writer
    /// has a ShardId arm, but toJsonv1 asserts isV1 first).
    pub fn is_v1(&self, id: ExprId) -> bool {
        match self.node(id) {
            Node::AffExpr { .. } | Node::CCGetRank { .. } | Node::IndirectArg { .. } => true,
            Node::FloorDiv { numer, .. } | Node::Modulo { numer, .. } | Node::CCDiv { numer, .. } => {
                self.kind(*numer) == ExprKind::AffExpr
            }
            _ => false,
        }
    }

    /// Check that `id` can be written in `version` before serializing it, so
    /// serialization itself cannot fail.
    pub fn check_writable(&self, id: ExprId, version: u32) -> Result<()> {
        match version {
            2 => {
                let mut memo = hashbrown::HashMap::new();
                let n = self.tree_size_v2(id, &mut memo)?;
                if n > MAX_TREE_NODES {
                    return Err(Error::pelican(
                        format!("expression expands to {n} nodes when written as a tree (limit {MAX_TREE_NODES})"),
                        "QuasiAffineExpr.cpp",
                    ));
                }
                Ok(())
            }
            1 => {
                if !self.is_v1(id) {
                    return Err(Error::pelican(
                        "Pelican Expr should be in V1 format",
                        "QuasiAffineExpr.cpp",
                    ));
                }
                let terms: &[(ExprId, i64)] = match self.node(id) {
                    Node::AffExpr { terms, .. } => terms,
                    Node::FloorDiv { numer, .. } | Node::Modulo { numer, .. } | Node::CCDiv { numer, .. } => {
                        match self.node(*numer) {
                            Node::AffExpr { terms, .. } => terms,
                            _ => &[],
                        }
                    }
                    _ => &[],
                };
                for &(idx, _) in terms {
                    if !matches!(self.node(idx), Node::AffineIV { .. } | Node::ShardId { .. }) {
                        return Err(Error::pelican("Unsupported expression kind", "QuasiAffineExpr.cpp"));
                    }
                }
                Ok(())
            }
            _ => Err(Error::pelican(
                "Check the version - should be 1 (old) or 2 (new)",
                "QuasiAffineExpr.cpp",
            )),
        }
    }

    fn tree_size_v2(&self, id: ExprId, memo: &mut hashbrown::HashMap<ExprId, u64>) -> Result<u64> {
        if let Some(&n) = memo.get(&id) {
            return Ok(n);
        }
        let n = match self.node(id) {
            Node::APIndex { .. }
            | Node::TiledAPIndex { .. }
            | Node::SymbolicIdx { .. }
            | Node::ICmp { .. }
            | Node::CCMod { .. }
            | Node::OpaqueFn { .. } => {
                return Err(Error::pelican("Unsupported expression kind", "QuasiAffineExpr.cpp"));
            }
            node => {
                let mut n: u64 = 1;
                for c in node.children() {
                    n = n.saturating_add(self.tree_size_v2(c, memo)?);
                }
                n
            }
        };
        memo.insert(id, n);
        Ok(n)
    }

    /// The v2 (or v1) JSON of `id` as a `serde_json::Value`.
    pub fn to_json(&self, id: ExprId, version: u32) -> Result<Value> {
        self.check_writable(id, version)?;
        serde_json::to_value(Wire { ctx: self, id, version })
            .map_err(|e| Error::pelican(e.to_string(), "QuasiAffineExpr.cpp"))
    }
}

/// Serialize adaptor: writes one expression straight into any serde
/// serializer. Call [`Context::check_writable`] first.
pub struct Wire<'a> {
    pub ctx: &'a Context,
    pub id: ExprId,
    pub version: u32,
}

impl Serialize for Wire<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.version == 1 {
            self.ser_v1(s)
        } else {
            self.ser_v2(s)
        }
    }
}

impl Wire<'_> {
    fn child(&self, id: ExprId) -> Wire<'_> {
        Wire {
            ctx: self.ctx,
            id,
            version: self.version,
        }
    }

    fn ser_v2<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let ctx = self.ctx;
        match ctx.node(self.id) {
            Node::CCGetRank {
                iteration_id,
                channel_id,
            } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("kind", "CCGetRankKind")?;
                m.serialize_entry("iteration_id", iteration_id)?;
                m.serialize_entry("channel_id", channel_id)?;
                m.end()
            }
            Node::IndirectArg { arg_id } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("kind", "IndirectArgId")?;
                m.serialize_entry("arg_id", arg_id)?;
                m.end()
            }
            Node::AffineIV { axis } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("kind", "AffIVKind")?;
                m.serialize_entry("axis", &*ctx.axis(*axis).name)?;
                m.end()
            }
            Node::IntRuntimeValue { reg } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("kind", "IntRuntimeValueKind")?;
                m.serialize_entry("regref", ctx.register_name(*reg))?;
                m.end()
            }
            Node::ShardId { ub } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("kind", "ShardIDKind")?;
                m.serialize_entry("ub", ub)?;
                m.end()
            }
            Node::AffExpr { terms, c } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("kind", "AffExprKind")?;
                m.serialize_entry("terms", &Terms { w: self, terms })?;
                m.serialize_entry("c", c)?;
                m.end()
            }
            Node::Sum { terms } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("kind", "SumKind")?;
                m.serialize_entry("n_terms", &(terms.len() as u64))?;
                m.serialize_entry("terms", &Seq { w: self, ids: terms })?;
                m.end()
            }
            Node::Mult { var, scale } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("kind", "MultKind")?;
                m.serialize_entry("var", &self.child(*var))?;
                m.serialize_entry("scale", scale)?;
                m.end()
            }
            Node::FloorDiv { numer, denom } | Node::Modulo { numer, denom } => {
                let tag = if ctx.kind(self.id) == ExprKind::FloorDiv {
                    "FloorDivKind"
                } else {
                    "ModuloKind"
                };
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("kind", tag)?;
                m.serialize_entry("numer", &self.child(*numer))?;
                m.serialize_entry("denom", denom)?;
                m.end()
            }
            Node::CCDiv {
                numer,
                denom,
                replica_groups_id,
            } => {
                let mut m = s.serialize_map(Some(4))?;
                m.serialize_entry("kind", "CCDivKind")?;
                m.serialize_entry("numer", &self.child(*numer))?;
                m.serialize_entry("denom", denom)?;
                m.serialize_entry("replica_groups_id", replica_groups_id)?;
                m.end()
            }
            _ => Err(S::Error::custom("Unsupported expression kind")),
        }
    }

    fn ser_v1<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let ctx = self.ctx;
        let affine_body = |id: ExprId| -> (&[(ExprId, i64)], i64) {
            match ctx.node(id) {
                Node::AffExpr { terms, c } => (terms, *c),
                _ => (&[], 0),
            }
        };
        #[allow(clippy::type_complexity)]
        let (op, param, body): (Option<&str>, i64, (&[(ExprId, i64)], i64)) = match ctx.node(self.id) {
            Node::ShardId { .. } => return self.ser_v2(s),
            Node::AffExpr { terms, c } => (None, 0, (terms, *c)),
            Node::FloorDiv { numer, denom } => (Some("Div"), *denom, affine_body(*numer)),
            Node::Modulo { numer, denom } => (Some("Mod"), *denom, affine_body(*numer)),
            Node::CCDiv { numer, denom, .. } => (Some("CCGetRank"), *denom, affine_body(*numer)),
            Node::CCGetRank {
                iteration_id,
                channel_id,
            } => (Some("CCGetRank"), *channel_id, (&[], *iteration_id)),
            Node::IndirectArg { arg_id } => (Some("IndirectArgId"), *arg_id, (&[], 0)),
            _ => return Err(S::Error::custom("Pelican Expr should be in V1 format")),
        };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("terms", &V1Terms { ctx, terms: body.0 })?;
        m.serialize_entry("c", &body.1)?;
        if let Some(op) = op {
            m.serialize_entry("op", op)?;
            m.serialize_entry("op_param", &param)?;
        }
        m.end()
    }
}

struct Terms<'a, 'b> {
    w: &'a Wire<'b>,
    terms: &'a [(ExprId, i64)],
}

impl Serialize for Terms<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.terms.len()))?;
        for &(idx, coeff) in self.terms {
            seq.serialize_element(&Term {
                idx: self.w.child(idx),
                coeff,
            })?;
        }
        seq.end()
    }
}

struct Term<'a> {
    idx: Wire<'a>,
    coeff: i64,
}

impl Serialize for Term<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("idx", &self.idx)?;
        m.serialize_entry("coeff", &self.coeff)?;
        m.end()
    }
}

struct Seq<'a, 'b> {
    w: &'a Wire<'b>,
    ids: &'a [ExprId],
}

impl Serialize for Seq<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.ids.len()))?;
        for &id in self.ids {
            seq.serialize_element(&self.w.child(id))?;
        }
        seq.end()
    }
}

struct V1Terms<'a> {
    ctx: &'a Context,
    terms: &'a [(ExprId, i64)],
}

impl Serialize for V1Terms<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let mut seq = s.serialize_seq(Some(self.terms.len()))?;
        for &(idx, coef) in self.terms {
            let label: Value = match self.ctx.node(idx) {
                Node::AffineIV { axis } => Value::String(self.ctx.axis(*axis).name.to_string()),
                Node::ShardId { ub } => serde_json::json!({"kind": "ShardIDKind", "ub": ub}),
                _ => return Err(S::Error::custom("Unsupported expression kind")),
            };
            seq.serialize_element(&serde_json::json!({"AxisLabel": label, "coef": coef}))?;
        }
        seq.end()
    }
}
