//! Blocks, instructions (common and op-specific keys), affine predicates and
//! dependencies.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::argument::ArgsK;
use super::expr::{int_or_expr_value, ExprK, IntOrExprK};
use super::seed::{
    extra, keep, val, visit, BoolK, DeResult, KeySeed, Kind, Rest, Seed, SeqK, SharedStrK, Src, StrK, StringK, ValueK,
    Visit, I64K,
};
use super::{compact, type_name, Seg, State};
use crate::bir::instruction::{Block, Dependency, Instruction, IntOrExpr, OpFields};
use crate::bir::opcode::Opcode;
use crate::bir::schema::{key, spelled, Spelling};
use crate::bir::Extra;
use crate::error::Error;
use crate::pelican::{AffinePredicate, AxisId};

pub(super) struct BlockK;

impl Kind for BlockK {
    type Out = Block;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Block, D::Error> {
        d.deserialize_map(visit::<BlockK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, BlockK> {
    type Value = Block;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a block object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Block, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut name, mut instructions) = (None, Vec::new());
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                key!(block name) => name = Some(val::<StrK, _>(st, &mut map, key!(block name))?),
                key!(block instructions) => instructions = val::<InstsK, _>(st, &mut map, key!(block instructions))?,
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        let Some(name) = name else {
            return Err(st.bir("a block is missing required key \"name\""));
        };
        st.leave();
        Ok(Block {
            name,
            instructions,
            extra: extra(rest),
        })
    }
}

pub(super) struct InstK;

impl Kind for InstK {
    type Out = Instruction;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Instruction, D::Error> {
        d.deserialize_map(visit::<InstK>(st))
    }
}

/// Op-specific fields being collected.
#[derive(Default)]
struct OpAcc {
    loop_axis: Option<AxisId>,
    axis_extra: Extra,
    blocks: Vec<Block>,
    barrier_id: Option<i64>,
    barrier_cores: Option<Vec<i64>>,
    barrier_semaphore: Option<i64>,
    barrier_local_id: Option<Box<i64>>,
    callee: Option<Arc<str>>,
    call_core: Option<i64>,
    cc_channel: Option<Value>,
    recv_from_rank: Option<IntOrExpr>,
    send_to_rank: Option<IntOrExpr>,
    queue: Option<IntOrExpr>,
    replication_resolution: Option<IntOrExpr>,
    replication_shift_amnt: Option<IntOrExpr>,
    replication_num_rows: Option<IntOrExpr>,
    mode: Option<Arc<str>>,
}

impl OpAcc {
    fn into_op(self, opcode: Opcode) -> OpFields {
        match opcode {
            Opcode::LOOP => OpFields::Loop {
                axis: self.loop_axis.unwrap_or(AxisId(0)),
                axis_extra: self.axis_extra,
                blocks: self.blocks,
            },
            Opcode::CORE_BARRIER => OpFields::CoreBarrier {
                id: self.barrier_id,
                cores: self.barrier_cores,
                runtime_semaphore: self.barrier_semaphore,
                local_id: self.barrier_local_id,
            },
            Opcode::COLLECTIVE_COMPUTE => OpFields::CollectiveCompute {
                cc_channel: self.cc_channel.map(Box::new),
                recv_from_rank: self.recv_from_rank,
                send_to_rank: self.send_to_rank,
                queue: self.queue,
            },
            o if o.is_matmult() => OpFields::Matmult {
                replication_resolution: self.replication_resolution,
                replication_shift_amnt: self.replication_shift_amnt,
                replication_num_rows: self.replication_num_rows,
            },
            Opcode::DMA_COPY => OpFields::DmaCopy { mode: self.mode },
            Opcode::CALL => OpFields::Call {
                callee: self.callee,
                core: self.call_core,
            },
            _ => OpFields::None,
        }
    }
}

/// A block's `instructions`: an array, or (reading a skeleton) the number of
/// a big array read in chunks.
pub(super) struct InstsK;

impl Kind for InstsK {
    type Out = Vec<Instruction>;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Self::Out, D::Error> {
        if st.splices.is_none() {
            return SeqK::<InstK>::de(st, d);
        }
        d.deserialize_any(visit::<InstsK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, InstsK> {
    type Value = Vec<Instruction>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> DeResult<Self::Value, A::Error> {
        visit::<SeqK<InstK>>(self.0).visit_seq(seq)
    }
    fn visit_u64<E: de::Error>(self, k: u64) -> DeResult<Self::Value, E> {
        self.0.splice(k)
    }
}

/// Handle one instruction key once the opcode (and a Loop's axis) is known.
fn inst_key<'de, A: MapAccess<'de>>(
    st: &mut State,
    inst: &mut Instruction,
    acc: &mut OpAcc,
    rest: &mut Rest,
    key: &str,
    mut src: Src<'_, '_, A>,
) -> DeResult<(), A::Error> {
    let op = inst.opcode;
    match key {
        key!(inst axis) | key!(compiler inst axis) if op == Opcode::LOOP => {
            // The Loop's own axis key was read before it was ready; the
            // other spelling's is a mixed spelling (a second own one is kept).
            let other = st.spelling() == Spelling::Lncsplit;
            let theirs = if other {
                key!(compiler inst axis)
            } else {
                key!(inst axis)
            };
            if key == theirs {
                let s = if other { Spelling::Compiler } else { Spelling::Lncsplit };
                return Err(st.mixed(s, theirs));
            }
            let v = src.read_owned::<ValueK>(st, key)?;
            rest.insert(key.to_string(), v);
        }
        key!(inst engine) => inst.engine = Some(src.read::<SharedStrK>(st, key!(inst engine))?),
        key!(inst ins) => inst.ins = src.read::<ArgsK>(st, key!(inst ins))?,
        key!(inst outs) => inst.outs = src.read::<ArgsK>(st, key!(inst outs))?,
        key!(inst indirection_ins) => inst.indirection_ins = Some(src.read::<ArgsK>(st, key!(inst indirection_ins))?),
        key!(inst predicates) => inst.predicates = src.read::<SeqK<PredK>>(st, key!(inst predicates))?,
        key!(inst dependencies) => inst.dependencies = Some(src.read::<SeqK<DepK>>(st, key!(inst dependencies))?),
        key!(inst blocks) if op == Opcode::LOOP => acc.blocks = src.read::<SeqK<BlockK>>(st, key!(inst blocks))?,
        key!(inst id) if op == Opcode::CORE_BARRIER => acc.barrier_id = Some(src.read::<I64K>(st, key!(inst id))?),
        key!(inst runtime_semaphore) if op == Opcode::CORE_BARRIER => {
            acc.barrier_semaphore = Some(src.read::<I64K>(st, key!(inst runtime_semaphore))?)
        }
        key!(inst cores) if op == Opcode::CORE_BARRIER => {
            acc.barrier_cores = Some(src.read::<SeqK<I64K>>(st, key!(inst cores))?)
        }
        key!(inst local_id) if op == Opcode::CORE_BARRIER => {
            acc.barrier_local_id = Some(Box::new(src.read::<I64K>(st, key!(inst local_id))?))
        }
        key!(inst callee) if op == Opcode::CALL => acc.callee = Some(src.read::<SharedStrK>(st, key!(inst callee))?),
        key!(inst core) if op == Opcode::CALL => acc.call_core = Some(src.read::<I64K>(st, key!(inst core))?),
        key!(inst cc_channel) if op == Opcode::COLLECTIVE_COMPUTE => {
            let v = src.read::<ValueK>(st, key!(inst cc_channel))?;
            if !v.is_object() {
                return Err(st.bir_at(
                    key!(inst cc_channel),
                    format!("\"cc_channel\" must be an object, got {}", type_name(&v)),
                ));
            }
            acc.cc_channel = Some(v);
        }
        key!(inst recv_from_rank) if op == Opcode::COLLECTIVE_COMPUTE => {
            acc.recv_from_rank = Some(src.read::<IntOrExprK>(st, key!(inst recv_from_rank))?)
        }
        key!(inst send_to_rank) if op == Opcode::COLLECTIVE_COMPUTE => {
            acc.send_to_rank = Some(src.read::<IntOrExprK>(st, key!(inst send_to_rank))?)
        }
        key!(inst queue) if op == Opcode::COLLECTIVE_COMPUTE => {
            // `queue` may also be a queue name (kept verbatim).
            let v = src.read::<ValueK>(st, key!(inst queue))?;
            if v.is_i64() || v.is_object() {
                match int_or_expr_value::<A::Error>(st, &v) {
                    Ok(q) => acc.queue = Some(q),
                    Err(e) => {
                        st.unwind.push(Seg::Key(key!(inst queue)));
                        return Err(e);
                    }
                }
            } else {
                rest.insert(key!(inst queue).into(), v);
            }
        }
        key!(inst replication_resolution) if op.is_matmult() => {
            acc.replication_resolution = Some(src.read::<IntOrExprK>(st, key!(inst replication_resolution))?)
        }
        key!(inst replication_shift_amnt) if op.is_matmult() => {
            acc.replication_shift_amnt = Some(src.read::<IntOrExprK>(st, key!(inst replication_shift_amnt))?)
        }
        key!(inst replication_num_rows) if op.is_matmult() => {
            acc.replication_num_rows = Some(src.read::<IntOrExprK>(st, key!(inst replication_num_rows))?)
        }
        key!(inst mode) if op == Opcode::DMA_COPY => {
            let s = src.read::<SharedStrK>(st, key!(inst mode))?;
            if !matches!(&*s, "Copy" | "Transpose" | "Replicate") {
                return Err(st.bir_at(
                    key!(inst mode),
                    format!("Unknown DMACopy mode \"{s}\" (Copy, Transpose or Replicate)"),
                ));
            }
            acc.mode = Some(s);
        }
        // Modelled keys kept as written (contract §1.4), checked here so that every tool
        // (split, racecheck, sim) agrees on them rather than the first that reads them failing.
        key!(inst accumulate) => {
            let v = src.read_owned::<ValueK>(st, key)?;
            if !matches!(v.as_str(), Some("add" | "max" | "min")) {
                return Err(st.bir_at(
                    key!(inst accumulate),
                    format!("Unknown accumulate {} (add, max or min)", compact(&v)),
                ));
            }
            rest.insert(key.to_string(), v);
        }
        key!(inst value) if op == Opcode::MEMSET => {
            let v = src.read_owned::<ValueK>(st, key)?;
            if !(v.is_i64() || v.is_u64()) {
                return Err(st.bir_at(
                    key!(inst value),
                    format!("\"value\" must be a 64-bit integer, got {}", compact(&v)),
                ));
            }
            rest.insert(key.to_string(), v);
        }
        _ => {
            let v = src.read_owned::<ValueK>(st, key)?;
            rest.insert(key.to_string(), v);
        }
    }
    Ok(())
}

/// A Loop's `axis`: `{"name", "lo", "ub", "step"}` (the compiler's
/// `LoopAxis`: `{"name", "lb", "ub", "stride"}`) plus unknown keys; defines
/// a new axis in the context.
fn loop_axis<E: de::Error>(st: &mut State, v: Value) -> DeResult<(AxisId, Extra), E> {
    let r = loop_axis_inner(st, v);
    if r.is_err() {
        st.unwind.push(Seg::Key(spelled!(st.spelling(), inst axis)));
    }
    r
}

fn loop_axis_inner<E: de::Error>(st: &mut State, v: Value) -> DeResult<(AxisId, Extra), E> {
    let Value::Object(m) = v else {
        return Err(st.bir(format!("a loop axis must be an object, got {}", type_name(&v))));
    };
    let (mut name, mut lo, mut ub, mut step) = (None, None, None, None);
    let (lo_key, step_key) = (spelled!(st.spelling(), axis lo), spelled!(st.spelling(), axis step));
    let mut rest = Map::new();
    for (k, v) in m {
        let slot = match k.as_str() {
            key!(axis name) => {
                match v {
                    Value::String(s) => name = Some(s),
                    other => {
                        return Err(st.bir_at("name", format!("\"name\" must be a string, got {}", type_name(&other))))
                    }
                }
                continue;
            }
            k if k == lo_key => &mut lo,
            key!(axis ub) => &mut ub,
            k if k == step_key => &mut step,
            _ => {
                rest.insert(k, v);
                continue;
            }
        };
        match v.as_i64() {
            Some(i) => *slot = Some(i),
            None => {
                let msg = format!("\"{k}\" must be a 64-bit integer, got {}", compact(&v));
                st.unwind.push(Seg::Owned(k.into()));
                return Err(st.bir(msg));
            }
        }
    }
    let Some(name) = name else {
        return Err(st.bir("a loop axis is missing required key \"name\""));
    };
    let Some(ub) = ub else {
        return Err(st.bir("a loop axis is missing required key \"ub\""));
    };
    match st.ctx.add_axis(&name, lo.unwrap_or(0), ub, step.unwrap_or(1)) {
        Ok(id) => Ok((id, super::seed::extra(rest))),
        Err(e) => {
            let msg = match e {
                Error::Pelican { message, .. } => message,
                other => other.to_string(),
            };
            Err(st.bir(msg))
        }
    }
}

/// The instruction being read and what is known about it so far.
struct InstRead {
    inst: Instruction,
    has_name: bool,
    opcode_seen: bool,
    /// A Loop's axis, read but not yet defined.
    axis: Option<Value>,
    /// Whether this Loop's axis is on the scope stack (popped at the end).
    axis_pushed: bool,
    /// Opcode (and a Loop's axis) known: other keys are read directly.
    ready: bool,
    acc: OpAcc,
    rest: Rest,
    /// Keys read before the instruction was ready.
    pending: Vec<(String, Box<RawValue>)>,
}

impl InstRead {
    fn new(st: &State) -> Self {
        InstRead {
            inst: Instruction::bare(st.no_name.clone(), Opcode(0), OpFields::None),
            has_name: false,
            opcode_seen: false,
            axis: None,
            axis_pushed: false,
            ready: false,
            acc: OpAcc::default(),
            rest: Rest::default(),
            pending: Vec::new(),
        }
    }

    fn is_loop(&self) -> bool {
        self.opcode_seen && self.inst.opcode == Opcode::LOOP
    }

    fn key<'de, A: MapAccess<'de>>(&mut self, st: &mut State, map: &mut A, k: &str) -> DeResult<(), A::Error> {
        match k {
            key!(inst name) => {
                self.inst.name = val::<StrK, _>(st, map, key!(inst name))?;
                self.has_name = true;
            }
            key!(inst opcode) => {
                let s = val::<StringK, _>(st, map, key!(inst opcode))?;
                self.inst.opcode = match Opcode::from_name(&s) {
                    Some(o) => o,
                    None => return Err(st.bir_at(key!(inst opcode), format!("Unknown opcode \"{s}\""))),
                };
                self.opcode_seen = true;
            }
            key!(inst axis) | key!(compiler inst axis) if self.is_loop() && !self.ready => {
                let own = spelled!(st.spelling(), inst axis);
                if k != own {
                    let s = if k == key!(inst axis) {
                        Spelling::Lncsplit
                    } else {
                        Spelling::Compiler
                    };
                    return Err(st.mixed(
                        s,
                        if k == key!(inst axis) {
                            key!(inst axis)
                        } else {
                            key!(compiler inst axis)
                        },
                    ));
                }
                self.axis = Some(val::<ValueK, _>(st, map, own)?)
            }
            _ if self.ready => inst_key(st, &mut self.inst, &mut self.acc, &mut self.rest, k, Src::Map(map))?,
            _ => match map.next_value::<Box<RawValue>>() {
                Ok(raw) => self.pending.push((k.to_string(), raw)),
                Err(e) => {
                    st.unwind.push(Seg::Owned(k.into()));
                    return Err(e);
                }
            },
        }
        if !self.ready {
            self.try_ready::<A>(st)?;
        }
        Ok(())
    }

    /// Once the opcode (and a Loop's axis) is known: define the axis, then
    /// read the keys that came too early.
    fn try_ready<'de, A: MapAccess<'de>>(&mut self, st: &mut State) -> DeResult<(), A::Error> {
        if self.is_loop() && self.axis.is_none() {
            // An axis read before the opcode was captured raw.
            let own = spelled!(st.spelling(), inst axis);
            if let Some(pos) = self.pending.iter().position(|(k, _)| k == own) {
                let (_, raw) = self.pending.remove(pos);
                match st.reparse::<ValueK, A::Error>(&raw) {
                    Ok(v) => self.axis = Some(v),
                    Err(e) => {
                        st.unwind.push(Seg::Key(own));
                        return Err(e);
                    }
                }
            }
        }
        if !self.opcode_seen || (self.is_loop() && self.axis.is_none()) {
            return Ok(());
        }
        self.ready = true;
        if let Some(v) = self.axis.take() {
            let (axis, axis_extra) = loop_axis::<A::Error>(st, v)?;
            st.axes.push((st.ctx.axis(axis).name.clone(), axis));
            self.axis_pushed = true;
            self.acc.loop_axis = Some(axis);
            self.acc.axis_extra = axis_extra;
        }
        for (key, raw) in std::mem::take(&mut self.pending) {
            inst_key(
                st,
                &mut self.inst,
                &mut self.acc,
                &mut self.rest,
                &key,
                Src::<A>::Raw(&raw),
            )?;
        }
        Ok(())
    }

    fn finish<E: de::Error>(mut self, st: &mut State) -> DeResult<Instruction, E> {
        // The compiler's Loops have no name: named `loop@<position>` once
        // the function is read (`module.rs`).
        if !(self.has_name || self.is_loop() && st.compiler()) {
            return Err(st.bir("an instruction is missing required key \"name\""));
        }
        if !self.opcode_seen {
            return Err(st.bir("an instruction is missing required key \"opcode\""));
        }
        if !self.ready {
            // Only a Loop without an axis gets here.
            let own = spelled!(st.spelling(), inst axis);
            if let Some((k, _)) = self
                .pending
                .iter()
                .find(|(k, _)| k == key!(inst axis) || k == key!(compiler inst axis))
            {
                // The other spelling's axis, captured before the opcode.
                let s = if k == key!(inst axis) {
                    Spelling::Lncsplit
                } else {
                    Spelling::Compiler
                };
                let theirs = spelled!(s, inst axis);
                return Err(st.mixed(s, theirs));
            }
            return Err(st.bir(format!("a Loop instruction is missing required key \"{own}\"")));
        }
        self.inst.op = self.acc.into_op(self.inst.opcode);
        self.inst.extra = st.extras.share_pairs(self.rest.0);
        Ok(self.inst)
    }
}

impl<'de> Visitor<'de> for Visit<'_, InstK> {
    type Value = Instruction;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an instruction object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Instruction, A::Error> {
        let st = self.0;
        st.enter()?;
        let mut r = InstRead::new(st);
        let read = (|| -> DeResult<(), A::Error> {
            while let Some(k) = map.next_key_seed(KeySeed)? {
                r.key(st, &mut map, k.as_str())?;
            }
            Ok(())
        })();
        if r.axis_pushed {
            st.axes.pop();
        }
        read?;
        let inst = r.finish(st)?;
        st.leave();
        Ok(inst)
    }
}

pub(super) struct PredK;

impl Kind for PredK {
    type Out = AffinePredicate;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<AffinePredicate, D::Error> {
        d.deserialize_map(visit::<PredK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, PredK> {
    type Value = AffinePredicate;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an affine predicate object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<AffinePredicate, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut expr, mut ge) = (None, true);
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                key!(pred expr) => expr = Some(val::<ExprK, _>(st, &mut map, key!(pred expr))?),
                key!(pred ge) => ge = val::<BoolK, _>(st, &mut map, key!(pred ge))?,
                other => {
                    let msg = format!("unknown key \"{other}\" in an affine predicate");
                    st.unwind.push(Seg::Owned(other.into()));
                    return Err(st.bir(msg));
                }
            }
        }
        let Some(expr) = expr else {
            return Err(st.bir("an affine predicate is missing required key \"expr\""));
        };
        st.leave();
        Ok(AffinePredicate { expr, ge })
    }
}

pub(super) struct DepK;

impl Kind for DepK {
    type Out = Dependency;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Dependency, D::Error> {
        d.deserialize_any(visit::<DepK>(st))
    }
}

impl<'de> Visitor<'de> for Visit<'_, DepK> {
    type Value = Dependency;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a dependency: a name or [name, kind]")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> DeResult<Dependency, E> {
        Ok(Dependency {
            name: Arc::from(s),
            kind: None,
            bare: true,
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> DeResult<Dependency, A::Error> {
        let st = self.0;
        st.enter()?;
        let name = match seq.next_element_seed(Seed::<StrK>::new(st)) {
            Ok(Some(n)) => n,
            Ok(None) => return Err(st.bir("a dependency must be a name or [name, kind], got []")),
            Err(e) => {
                st.unwind.push(Seg::Index(0));
                return Err(e);
            }
        };
        let kind: Option<Value> = match seq.next_element() {
            Ok(k) => k,
            Err(e) => {
                st.unwind.push(Seg::Index(1));
                return Err(e);
            }
        };
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(st.bir("a dependency must be a name or [name, kind], got more than 2 entries"));
        }
        st.leave();
        Ok(Dependency {
            name,
            kind: kind.map(|k| st.values.share(k)),
            bare: false,
        })
    }
}
