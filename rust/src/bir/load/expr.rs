//! Pelican expressions inside a module. v2 objects are streamed: their keys
//! fill the [`ExprFields`] of `pelican/wire.rs` and [`Context::build_v2`]
//! makes the node (the one grammar every reader shares). v1 and the
//! int-or-expression fields go through the wire's DOM reader. Names resolve
//! against the loader state ([`LoadScope`]).

use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use super::json;
use super::seed::{val, visit, DeResult, Key, KeySeed, Kind, SeqK, Visit, I64K, U64K};
use super::{compact, Locate, Seg, State};
use crate::bir::instruction::IntOrExpr;
use crate::error::Error;
use crate::pelican::{AxisId, Built, Context, ExprFields, ExprId, Scope};

/// Name resolution against the loader state: axes of the enclosing loops
/// (nearest first), the function's registers, its shard-id set.
struct LoadScope<'a> {
    axes: &'a [(Arc<str>, AxisId)],
    /// Counts axis lookups (whether an expression depends on its scope).
    lookups: &'a mut u64,
    shards: &'a mut Vec<i64>,
    registers: Option<&'a [Arc<str>]>,
    pending: &'a mut Vec<Arc<str>>,
    /// While locating a register's first use: the name to report.
    locate: Option<&'a str>,
}

impl Scope for LoadScope<'_> {
    fn axis(&mut self, _ctx: &mut Context, name: &str) -> Option<AxisId> {
        *self.lookups += 1;
        self.axes.iter().rev().find(|(n, _)| &**n == name).map(|(_, a)| *a)
    }

    fn register(&mut self, name: &str) -> bool {
        if self.locate == Some(name) {
            return false;
        }
        match self.registers {
            Some(regs) => regs.iter().any(|r| &**r == name),
            None => {
                // `registers` may still come: checked when the function ends.
                if !self.pending.iter().any(|r| &**r == name) {
                    self.pending.push(Arc::from(name));
                }
                true
            }
        }
    }

    fn note_shard(&mut self, ub: i64) {
        if !self.shards.contains(&ub) {
            self.shards.push(ub);
        }
    }
}

impl State {
    /// Run `f` with the context and a scope over this state.
    fn with_scope<T>(&mut self, f: impl FnOnce(&mut Context, &mut dyn Scope) -> T) -> T {
        let locate = match &self.locate {
            Some(Locate { function, register }) if *function == self.function => Some(&**register),
            _ => None,
        };
        let mut scope = LoadScope {
            axes: &self.axes,
            lookups: &mut self.axis_lookups,
            shards: &mut self.shards,
            registers: self.registers.as_deref(),
            pending: &mut self.pending_registers,
            locate,
        };
        f(&mut self.ctx, &mut scope)
    }
}

/// An expression from a small DOM value (v1, and int-or-expression fields)
/// with the wire's DOM reader.
fn expr_from_value<E: de::Error>(st: &mut State, v: &Value) -> DeResult<ExprId, E> {
    let version = st.version;
    match st.with_scope(|ctx, scope| ctx.from_json(v, version, scope)) {
        Ok(id) => Ok(id),
        Err(e) => Err(st.pelican(e)),
    }
}

/// An integer or an expression (the CollectiveCompute ranks, the Matmult
/// replication fields).
pub(super) fn int_or_expr_value<E: de::Error>(st: &mut State, v: &Value) -> DeResult<IntOrExpr, E> {
    if let Some(i) = v.as_i64() {
        return Ok(IntOrExpr::Int(i));
    }
    if v.is_object() {
        return expr_from_value(st, v).map(IntOrExpr::Expr);
    }
    Err(st.bir(format!("expected an integer or an expression, got {}", compact(v))))
}

pub(super) struct IntOrExprK;

impl Kind for IntOrExprK {
    type Out = IntOrExpr;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<IntOrExpr, D::Error> {
        let v = <Value as de::Deserialize>::deserialize(d)?;
        int_or_expr_value(st, &v)
    }
}

/// One pelican expression (an argument's address, a predicate): v2 text
/// already met in this function and scope is looked up rather than parsed
/// again (see [`ExprCache`]).
pub(super) struct ExprK;

impl Kind for ExprK {
    type Out = ExprId;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<ExprId, D::Error> {
        if st.version != 2 || st.locate.is_some() {
            return NodeK::de(st, d);
        }
        let text = if st.fast {
            // Found by its structure alone: a cache hit equals a text that
            // was read in full, a miss is read in full below.
            d.deserialize_newtype_struct(json::UNCHECKED_RAW, json::RawText)?
        } else {
            <&RawValue as de::Deserialize>::deserialize(d)?.get()
        };
        let scope = st.axes.last().map_or(0, |(_, axis)| axis.0 + 1);
        if let Some(id) = st.exprs.get(text, scope) {
            return Ok(id);
        }
        let lookups = st.axis_lookups;
        let id = st.reparse_str::<NodeK, D::Error>(text)?;
        // An expression naming no loop axis means the same in every scope.
        let scope = if st.axis_lookups == lookups { ANY_SCOPE } else { scope };
        st.exprs.insert(text, scope, id);
        Ok(id)
    }
}

/// Scope tag of an expression that names no loop axis.
const ANY_SCOPE: u32 = u32::MAX;

/// The expressions of the current function by their exact text: real
/// modules repeat a few address expressions thousands of times, and finding
/// the text is much cheaper than parsing it. The text of an expression
/// naming a loop axis means something else under another loop, so such
/// entries also record the innermost loop they were read in. Cleared at
/// every function (ShardId and register notes are per function).
#[derive(Default)]
pub(super) struct ExprCache {
    table: HashTable<(Box<str>, u32, ExprId)>,
}

fn hash_text(s: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x6578_7072).hash_one(s)
}

impl ExprCache {
    /// Longest text worth keeping.
    const MAX_LEN: usize = 1024;

    fn get(&self, text: &str, scope: u32) -> Option<ExprId> {
        let (_, s, id) = self.table.find(hash_text(text), |e| &*e.0 == text)?;
        (*s == ANY_SCOPE || *s == scope).then_some(*id)
    }

    fn insert(&mut self, text: &str, scope: u32, id: ExprId) {
        if text.len() > Self::MAX_LEN {
            return;
        }
        let h = hash_text(text);
        match self.table.find_mut(h, |e| &*e.0 == text) {
            Some(e) => (e.1, e.2) = (scope, id),
            None => {
                self.table
                    .insert_unique(h, (text.into(), scope, id), |e| hash_text(&e.0));
            }
        }
    }

    pub(super) fn clear(&mut self) {
        self.table.clear();
    }
}

/// One pelican expression node: streamed (v2) or through the DOM reader (v1).
struct NodeK;

impl Kind for NodeK {
    type Out = ExprId;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<ExprId, D::Error> {
        if st.version == 1 {
            let v = <Value as de::Deserialize>::deserialize(d)?;
            return expr_from_value(st, &v);
        }
        match d.deserialize_map(visit::<NodeK>(st))? {
            Built::Expr(e) => Ok(e),
            Built::Term(..) => Err(st.pelican(Error::wire("missing key \"kind\" in pelican expression", ""))),
        }
    }
}

/// An element of `terms`: an AffExpr term `{idx, coeff}` or a Sum operand.
struct TermK;

impl Kind for TermK {
    type Out = Built;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Built, D::Error> {
        d.deserialize_map(visit::<NodeK>(st))
    }
}

/// A string field of an expression, borrowed from the input.
fn text<'de, A: MapAccess<'de>>(st: &mut State, map: &mut A, key: &'static str) -> DeResult<Key<'de>, A::Error> {
    let r = map.next_value_seed(KeySeed);
    if r.is_err() {
        st.unwind.push(Seg::Key(key));
    }
    r
}

impl<'de> Visitor<'de> for Visit<'_, NodeK> {
    type Value = Built;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a pelican expression object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Built, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut f = ExprFields::default();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                "kind" => f.set_kind(text(st, &mut map, "kind")?.into_cow()),
                "terms" => f.terms = Some(val::<SeqK<TermK>, _>(st, &mut map, "terms")?),
                "n_terms" => f.n_terms = Some(val::<U64K, _>(st, &mut map, "n_terms")?),
                "idx" => f.idx = Some(val::<NodeK, _>(st, &mut map, "idx")?),
                "coeff" => f.coeff = Some(val::<I64K, _>(st, &mut map, "coeff")?),
                "c" => f.c = Some(val::<I64K, _>(st, &mut map, "c")?),
                "var" => f.var = Some(val::<NodeK, _>(st, &mut map, "var")?),
                "scale" => f.scale = Some(val::<I64K, _>(st, &mut map, "scale")?),
                "numer" => f.numer = Some(val::<NodeK, _>(st, &mut map, "numer")?),
                "denom" => f.denom = Some(val::<I64K, _>(st, &mut map, "denom")?),
                "replica_groups_id" => f.replica_groups_id = Some(val::<U64K, _>(st, &mut map, "replica_groups_id")?),
                "axis" => f.axis = Some(text(st, &mut map, "axis")?.into_cow()),
                "arg_id" => f.arg_id = Some(val::<I64K, _>(st, &mut map, "arg_id")?),
                "regref" => f.regref = Some(text(st, &mut map, "regref")?.into_cow()),
                "ub" => f.ub = Some(val::<I64K, _>(st, &mut map, "ub")?),
                "iteration_id" => f.iteration_id = Some(val::<I64K, _>(st, &mut map, "iteration_id")?),
                "channel_id" => f.channel_id = Some(val::<I64K, _>(st, &mut map, "channel_id")?),
                // Keys the wire does not define are ignored, as the compiler does.
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let built = st.with_scope(|ctx, scope| ctx.build_v2(scope, f));
        st.leave();
        built.map_err(|e| st.fail(e))
    }
}
