//! One instruction instance on one core (docs/sim.md): its accesses are
//! resolved once to physical spans (an [`Op`]), which can then run forward
//! and again in the reverse core order without walking or evaluating again.
//!
//! Semantics, elements paired in AP order: `DMACopy`/`TensorCopy` copy
//! `ins[0]` to `outs[0]` (equal counts; `Replicate` repeats the source to fill
//! the destination; `Transpose` enumerates the destination with its first two
//! ap dims swapped), `accumulate` combines, `Memset` writes its immediate,
//! `GPSIMDSB2SB` copies to the partner core, an instruction whose keys name
//! a known operation computes its values ([`super::numeric`]), every other
//! opcode is the opaque function of [`super::opaque`]. A set with several
//! locations is read from its first and written to all of them. Every read
//! first rounds the float `add` accumulates pending on it
//! ([`Memory::settle`]).

use std::sync::Arc;

use hashbrown::HashMap;
use serde_json::Value;
use smallvec::SmallVec;

use super::memory::{LocId, Memory, Span, StoreLog};
use super::numeric::dtype::DType;
use super::numeric::kernel::{self, Lanes};
use super::numeric::plan::{self as numplan, InArg, NumOp, OutArg};
use super::numeric::spec::{self, Spec};
use super::opaque::{self, Prefix};
use crate::analysis::access::{Access, ArgList, FunctionIndex};
use crate::analysis::location::Cores;
use crate::analysis::AccOp;
use crate::bir::carried::shards::{value_has_shard, CarriedBinder};
use crate::bir::dtype::dtype_size;
use crate::bir::instruction::{Instruction, IntOrExpr, OpFields};
use crate::bir::queues::Queues;
use crate::bir::Argument;
use crate::error::{Error, Result};
use crate::pelican::{Bindings, Context, Node};

pub const LOCATION: &str = "lncsplit/birsim";

/// Most bytes one access may move (repeated points counted): a resource limit.
pub const MAX_ACCESS_BYTES: i64 = 1 << 30;

/// Control flow the walk cannot follow: the simulator refuses these.
const UNRUNNABLE: [&str; 6] = [
    "Call",
    "CompareAndBranch",
    "UnconditionalBranch",
    "DynamicForLoop",
    "DoWhile",
    "Break",
];

/// 9401: an instruction the simulator cannot run, naming it and its opcode.
pub fn cannot_run(core: usize, function: &str, inst: &Instruction, why: impl std::fmt::Display) -> Error {
    Error::neuron_at(
        9401,
        format!("the simulator cannot run {} ({}): {why}", inst.name, inst.opcode.name()),
        LOCATION,
        format!("core {core}, function {function}, instruction {}", inst.name),
    )
}

/// What an instance reads and writes: its memory arguments, physically.
pub type Spans = (SmallVec<[Arg; 2]>, SmallVec<[Arg; 1]>);

/// One argument's footprint on every location of its set (the first is read).
#[derive(Clone, Debug)]
pub struct Arg {
    pub list: ArgList,
    pub index: usize,
    pub spans: SmallVec<[Span; 1]>,
    /// Its set's first location is PSUM.
    pub psum: bool,
}

impl Arg {
    fn first(&self) -> &Span {
        &self.spans[0]
    }
}

#[derive(Clone)]
pub enum Kind {
    Copy {
        replicate: bool,
    },
    Memset {
        value: [u8; 8],
    },
    /// The static hash prefix; None when the instruction writes nothing.
    Opaque(Option<Box<Prefix>>),
    /// A computing instruction (contract §3.8, "Numbers").
    Numeric(Box<NumOp>),
}

/// A compiled instance: what it reads and writes, physically.
#[derive(Clone)]
pub struct Op {
    pub core: usize,
    pub kind: Kind,
    pub acc: Option<AccOp>,
    pub reads: SmallVec<[Arg; 2]>,
    pub writes: SmallVec<[Arg; 1]>,
    /// Writer id of the instruction (for last-writer tracking).
    pub writer: u32,
}

impl Op {
    /// Element accesses this op makes: what it reads (first locations) and
    /// writes (every location).
    pub fn elements(&self) -> u64 {
        let r = self.reads.iter().filter_map(|a| a.spans.first()).map(Span::count);
        let w = self.writes.iter().flat_map(|a| a.spans.iter()).map(Span::count);
        r.chain(w).map(|c| c as u64).sum()
    }

    pub fn writes_anything(&self) -> bool {
        self.writes.iter().any(|a| a.spans.iter().any(|s| s.count() > 0))
    }
}

/// One core's view of the function being simulated.
pub struct CoreView<'m> {
    pub core: usize,
    pub ctx: &'m Context,
    pub index: FunctionIndex<'m>,
    /// (set address, location index) → physical location.
    pub locs: HashMap<(usize, usize), LocId>,
    /// Static hash prefixes of opaque instructions, by position in the function.
    pub prefixes: Vec<Option<Prefix>>,
    /// The shard bound on a symbolic run (None for a concretized core).
    pub shard: Option<i64>,
    /// Instructions that stayed opaque though their opcode has a numeric
    /// row or their keys name ops: (position, reason), for `SimResult.opaque`.
    pub opaque: Vec<(u32, String)>,
    /// The module's DMA queues, read (`DMATrigger` runs their descriptors).
    pub queues: Option<Arc<Queues>>,
}

/// True when a field the opaque hash or a Memset reads carries a ShardId in
/// JSON lncsplit does not model (unknown keys, immediates): the split binds
/// those (`bir::carried::shards`), so a symbolic run must too.
fn has_carried_shard(inst: &Instruction) -> bool {
    let extra = inst.extra.as_ref().is_some_and(|x| x.values().any(value_has_shard));
    extra
        || inst.ins.iter().any(|a| match a {
            Argument::Imm { value, .. } => value_has_shard(value),
            Argument::Other { fields, .. } => fields.values().any(value_has_shard),
            _ => false,
        })
}

/// What compiling needs besides the core's view.
pub struct Env<'a, 'm> {
    pub cores: Cores<'m>,
    pub mem: &'a Memory,
    pub lnc: usize,
}

/// Which semantics an opcode has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Copy,
    Memset,
    Sb2sb,
    Opaque,
}

fn class_of(inst: &Instruction) -> Class {
    match inst.opcode.name() {
        "DMACopy" | "TensorCopy" => Class::Copy,
        "Memset" => Class::Memset,
        "GPSIMDSB2SB" => Class::Sb2sb,
        _ => Class::Opaque,
    }
}

impl<'m> CoreView<'m> {
    /// Compile one instance of the instruction at depth-first position `pos`.
    /// `writer` is its writer id.
    pub fn compile(
        &mut self,
        env: &Env<'_, 'm>,
        inst: &'m Instruction,
        pos: u32,
        bindings: &Bindings,
        writer: u32,
    ) -> Result<Op> {
        let fname = &*self.index.function.name;
        let core = self.core;
        let err = |why: String| cannot_run(core, fname, inst, why);
        if UNRUNNABLE.contains(&inst.opcode.name()) {
            return Err(err("control flow the simulator does not follow".into()));
        }
        let class = class_of(inst);
        if class == Class::Sb2sb && env.lnc != 2 {
            return Err(err(format!("GPSIMDSB2SB needs exactly 2 cores, not {}", env.lnc)));
        }
        let (reads, writes) = self.arguments(env, inst, bindings, class == Class::Sb2sb)?;
        let acc = crate::analysis::accumulate_op(inst).map_err(|e| err(e.to_string()))?;
        // What the split would write for this core: carried ShardIds bound.
        let bound = match self.shard {
            Some(core) if has_carried_shard(inst) => {
                let mut b = inst.clone();
                CarriedBinder::new(core, None).instruction(&mut b)?;
                Some(b)
            }
            _ => None,
        };
        let fields: &Instruction = bound.as_ref().unwrap_or(inst);
        let numeric = match class {
            Class::Opaque if !writes.is_empty() => match spec::classify(fields) {
                spec::Class::Numeric(sp) => Some(*sp),
                spec::Class::Bad(why) => return Err(err(why)),
                spec::Class::Opaque(why) => {
                    self.opaque.push((pos, why));
                    None
                }
            },
            Class::Copy if inst.opcode.name() == "TensorCopy" => match spec::classify(fields) {
                spec::Class::Numeric(sp) => Some(*sp),
                spec::Class::Bad(why) => return Err(err(why)),
                spec::Class::Opaque(_) => None,
            },
            _ => None,
        };
        check_accumulate(env.mem, acc, &writes).map_err(err)?;
        let kind = match (class, numeric) {
            (_, Some(sp)) => {
                if sp == Spec::Matmult && inst.replication_resolution().is_none_or(|r| r > 1) {
                    return Err(err("replication_resolution > 1 with contract: a contracting Matmult is not replicated (docs/sim.md)".into()));
                }
                if sp == Spec::Matmult && acc.is_some_and(|a| a != AccOp::Add) {
                    return Err(err("a contracting Matmult accumulates with add only".into()));
                }
                let base = match &sp {
                    Spec::Iota { base, .. } => carried_int(self.ctx, base, bindings).map_err(err)?,
                    _ => 0,
                };
                if let Some((arg, dtype)) = self.unmodelled_dtype(inst) {
                    return Err(err(format!(
                        "{arg} is {dtype}: {} computes in float64, float32, bfloat16, float16, float8e4, float8e5 and integer dtypes",
                        sp.name()
                    )));
                }
                let op = numeric_op(&sp, inst, &reads, &writes, base).map_err(err)?;
                Kind::Numeric(Box::new(op))
            }
            (Class::Copy | Class::Sb2sb, None) => copy_kind(inst, &reads, &writes).map_err(err)?,
            (Class::Memset, None) => Kind::Memset {
                value: memset_value(&self.index, fields, &writes).map_err(err)?,
            },
            (Class::Opaque, None) if writes.is_empty() => Kind::Opaque(None),
            (Class::Opaque, None) => Kind::Opaque(Some(Box::new(self.prefix(fields, pos, bindings)?))),
        };
        let mut op = Op {
            core,
            kind,
            acc,
            reads,
            writes,
            writer,
        };
        if matches!(op.kind, Kind::Copy { .. }) && copy_mode(inst) == Some("Transpose") {
            transpose(&mut op).map_err(err)?;
        }
        Ok(op)
    }

    /// The first memory argument whose dtype (its AP's, else its set's) the
    /// simulator does not compute in: (argument, dtype).
    fn unmodelled_dtype(&self, inst: &Instruction) -> Option<(String, String)> {
        let lists = [(ArgList::Ins, &inst.ins), (ArgList::Outs, &inst.outs)];
        for (list, args) in lists {
            for (k, a) in args.iter().enumerate() {
                let set = a.memsetref().and_then(|s| self.index.set(s)).map(|e| &*e.set.dtype);
                if let Some(d) = a.dtype().or(set) {
                    if !DType::parse(d).is_numeric() {
                        return Some((format!("{}[{k}]", list.key()), d.to_string()));
                    }
                }
            }
        }
        None
    }

    fn prefix(&mut self, inst: &Instruction, pos: u32, bindings: &Bindings) -> Result<Prefix> {
        let cacheable = !matches!(
            &inst.op,
            OpFields::Matmult {
                replication_resolution: Some(IntOrExpr::Expr(_)),
                ..
            } | OpFields::Matmult {
                replication_shift_amnt: Some(IntOrExpr::Expr(_)),
                ..
            } | OpFields::Matmult {
                replication_num_rows: Some(IntOrExpr::Expr(_)),
                ..
            }
        );
        let slot = pos as usize;
        if cacheable {
            if let Some(Some(p)) = self.prefixes.get(slot) {
                return Ok(p.clone());
            }
        }
        let p = Prefix::new(self.ctx, inst, bindings)?;
        if cacheable && slot < self.prefixes.len() {
            self.prefixes[slot] = Some(p.clone());
        }
        Ok(p)
    }

    /// Resolve every memory argument to its physical spans.
    pub(super) fn arguments(
        &self,
        env: &Env<'_, 'm>,
        inst: &Instruction,
        bindings: &Bindings,
        partner: bool,
    ) -> Result<Spans> {
        let fname = &*self.index.function.name;
        let mut accesses: Vec<Access<'_>> = Vec::with_capacity(4);
        self.index.accesses(self.ctx, inst, bindings, 9401, &mut accesses)?;
        let mut reads: SmallVec<[Arg; 2]> = SmallVec::new();
        let mut writes: SmallVec<[Arg; 1]> = SmallVec::new();
        for a in &accesses {
            let set = a.set.set;
            let Some(points) = a.points.clone() else {
                return Err(cannot_run(
                    self.core,
                    fname,
                    inst,
                    format!(
                        "the address of {}[{}] (set {}) is undecided (runtime values or a register)",
                        a.list.key(),
                        a.index,
                        set.name
                    ),
                ));
            };
            let esize = a.loc().layout.as_ref().map(|l| l.esize).unwrap_or(1);
            let bytes = points.count().and_then(|c| c.checked_mul(esize));
            if bytes.is_none_or(|b| b > MAX_ACCESS_BYTES) {
                return Err(cannot_run(
                    self.core,
                    fname,
                    inst,
                    format!(
                        "{}[{}] (set {}) moves more than {MAX_ACCESS_BYTES} bytes",
                        a.list.key(),
                        a.index,
                        set.name
                    ),
                ));
            }
            let loc = if partner && a.list == ArgList::Outs && a.index == 0 {
                let r = env
                    .cores
                    .resolve(self.core, self.index.function, set, a.loc().loc, true)?;
                env.mem.get(&r.phys)
            } else {
                self.locs.get(&(set as *const _ as usize, a.location)).copied()
            };
            let Some(loc) = loc else {
                return Err(cannot_run(
                    self.core,
                    fname,
                    inst,
                    format!("set {} has no memory", set.name),
                ));
            };
            let dtype = DType::parse(
                argument_of(inst, a.list, a.index)
                    .and_then(|x| x.dtype())
                    .unwrap_or(&set.dtype),
            );
            let span = Span {
                loc,
                points,
                esize,
                dtype,
            };
            let psum = set.locations.first().is_some_and(|l| &*l.mem_type == "PSUM");
            check_bounds(env.mem, &span).map_err(|why| {
                cannot_run(
                    self.core,
                    fname,
                    inst,
                    format!(
                        "{}[{}] is out of the bounds of set {}: {why}",
                        a.list.key(),
                        a.index,
                        set.name
                    ),
                )
            })?;
            if a.list == ArgList::Outs {
                push_span(&mut writes, a.list, a.index, span, psum);
            } else {
                push_span(&mut reads, a.list, a.index, span, psum);
            }
        }
        Ok((reads, writes))
    }
}

fn push_span<const N: usize>(list: &mut SmallVec<[Arg; N]>, l: ArgList, index: usize, span: Span, psum: bool)
where
    [Arg; N]: smallvec::Array<Item = Arg>,
{
    match list.last_mut() {
        Some(a) if a.list == l && a.index == index => a.spans.push(span),
        _ => list.push(Arg {
            list: l,
            index,
            spans: smallvec::smallvec![span],
            psum,
        }),
    }
}

/// The argument at `list[index]` of `inst`.
fn argument_of(inst: &Instruction, list: ArgList, index: usize) -> Option<&Argument> {
    match list {
        ArgList::Ins => inst.ins.get(index),
        ArgList::Outs => inst.outs.get(index),
        ArgList::IndirectionIns => inst.indirection_ins.as_ref()?.get(index),
    }
}

/// The extents of a span's AP dims.
fn extents(span: &Span) -> SmallVec<[usize; 4]> {
    span.points.dims.iter().map(|d| d[1].max(0) as usize).collect()
}

/// A computing instruction's instance, checked (docs/sim.md).
fn numeric_op(
    sp: &Spec,
    inst: &Instruction,
    reads: &[Arg],
    writes: &[Arg],
    base: i64,
) -> std::result::Result<NumOp, String> {
    if inst.outs.len() != 1 {
        return Err(format!(
            "a computing {} has exactly one outs, not {} (docs/sim.md)",
            sp.name(),
            inst.outs.len()
        ));
    }
    let ins = (0..inst.ins.len())
        .map(|k| {
            let r = reads.iter().position(|a| a.list == ArgList::Ins && a.index == k)?;
            let span = reads[r].first();
            Some(InArg {
                read: r,
                dtype: span.dtype,
                count: span.count(),
                dims: extents(span),
            })
        })
        .collect();
    let outs: Vec<OutArg> = writes
        .iter()
        .map(|a| OutArg {
            dtype: a.first().dtype,
            count: a.first().count(),
            dims: extents(a.first()),
            psum: a.psum,
        })
        .collect();
    numplan::plan(sp, ins, &outs, base)
}

/// 9401 unless every accumulating write is of a dtype accumulated by value,
/// with float `add` on the location's own elements (its pending sums are
/// kept per element).
pub(super) fn check_accumulate(mem: &Memory, acc: Option<AccOp>, writes: &[Arg]) -> std::result::Result<(), String> {
    let Some(op) = acc else {
        return Ok(());
    };
    for a in writes {
        for span in &a.spans {
            if !span.dtype.is_numeric() {
                return Err(format!(
                    "outs[{}] is {}: accumulate combines float and integer dtypes by value (docs/sim.md)",
                    a.index,
                    span.dtype.name()
                ));
            }
            let buf = mem.bufs[span.loc as usize].esize;
            if op == AccOp::Add && span.dtype.is_float() && buf != span.esize {
                return Err(format!(
                    "outs[{}] accumulates {}-byte elements on a location of {buf}-byte elements",
                    a.index, span.esize
                ));
            }
        }
    }
    Ok(())
}

/// An integer, or a pelican expression (bound by the split like `addrs`, and
/// here under the instance's loop IVs), as its value.
fn carried_int(ctx: &Context, v: &Value, b: &Bindings) -> std::result::Result<i64, String> {
    if let Some(i) = v.as_i64() {
        return Ok(i);
    }
    let version = match v.as_object().and_then(crate::bir::carried::expr_version) {
        Some(ver) => ver,
        None => return Err(format!("base {v} is neither an integer nor a pelican expression")),
    };
    struct Wide;
    impl crate::pelican::Scope for Wide {
        fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<crate::pelican::AxisId> {
            ctx.free_axis(name, -(1i64 << 40), 1i64 << 40, 1).ok()
        }
        fn register(&mut self, _name: &str) -> bool {
            true
        }
    }
    let mut scratch = Context::new();
    let id = scratch
        .from_json(v, version, &mut Wide)
        .map_err(|e| format!("base: {e}"))?;
    let mut by_name = Bindings {
        shard: b.shard,
        ..Default::default()
    };
    for (&id, &val) in &b.by_id {
        if let Node::AffineIV { axis } = ctx.node(id) {
            by_name.by_name.insert(ctx.axis(*axis).name.to_string(), val);
        }
    }
    match scratch.eval(id, &by_name).map_err(|e| format!("base: {e}"))? {
        Some(x) => Ok(x),
        None => Err("base is undecided (runtime values)".into()),
    }
}

/// The footprint on the physical buffer (the owner's size may differ from
/// the accessing core's set).
fn check_bounds(mem: &Memory, span: &Span) -> std::result::Result<(), String> {
    if span.points.is_empty() {
        return Ok(());
    }
    let len = mem.bufs[span.loc as usize].bytes.len() as i64;
    let (lo, hi) = span.points.bounds().map_err(|e| e.describe())?;
    let end = hi
        .checked_add(1)
        .and_then(|h| h.checked_mul(span.esize))
        .unwrap_or(i64::MAX);
    if lo < 0 || end > len {
        return Err(format!(
            "bytes {}..{end} of a {len}-byte location",
            lo.saturating_mul(span.esize)
        ));
    }
    Ok(())
}

fn copy_mode(inst: &Instruction) -> Option<&str> {
    match &inst.op {
        OpFields::DmaCopy { mode } => mode.as_deref(),
        _ => inst.extra.as_ref()?.get("mode")?.as_str(),
    }
}

fn copy_kind(inst: &Instruction, reads: &[Arg], writes: &[Arg]) -> std::result::Result<Kind, String> {
    copy_in_mode(copy_mode(inst).unwrap_or("Copy"), reads, writes)
}

/// A copy of `mode` (`Copy`, `Transpose`, `Replicate`) from `ins[0]` to
/// `outs[0]`, checked (element sizes, counts).
pub(super) fn copy_in_mode(mode: &str, reads: &[Arg], writes: &[Arg]) -> std::result::Result<Kind, String> {
    if !matches!(mode, "Copy" | "Transpose" | "Replicate") {
        return Err(format!("unknown copy mode {mode}"));
    }
    let src = reads.iter().find(|a| a.list == ArgList::Ins && a.index == 0);
    let dst = writes.iter().find(|a| a.index == 0);
    let (Some(src), Some(dst)) = (src, dst) else {
        return Err("a copy needs a memory ins[0] and outs[0]".into());
    };
    if writes.len() > 1 {
        return Err("a copy writes exactly one outs argument".into());
    }
    let (s, d) = (src.first(), dst.first());
    if s.esize != d.esize {
        return Err(format!(
            "element sizes differ: ins[0] {} bytes, outs[0] {} bytes",
            s.esize, d.esize
        ));
    }
    let (ns, nd) = (s.count(), d.count());
    let replicate = mode == "Replicate";
    if replicate {
        if ns == 0 && nd > 0 {
            return Err("Replicate from an empty source".into());
        }
    } else if ns != nd {
        return Err(format!("counts differ: ins[0] has {ns} elements, outs[0] has {nd}"));
    }
    Ok(Kind::Copy { replicate })
}

/// Enumerate the destination with its first two ap dims swapped.
pub(super) fn transpose(op: &mut Op) -> std::result::Result<(), String> {
    for span in op.writes[0].spans.iter_mut() {
        if span.points.dims.len() < 2 {
            return Err("Transpose needs at least two ap dims in outs[0]".into());
        }
        span.points.dims.swap(0, 1);
    }
    Ok(())
}

/// The element a Memset writes: `ins[0]`'s immediate in its dtype, else the
/// `value` key, else 0 — as the bit pattern of the destination's element.
fn memset_value(index: &FunctionIndex<'_>, inst: &Instruction, writes: &[Arg]) -> std::result::Result<[u8; 8], String> {
    let Some(dst) = writes.first() else {
        return Err("a Memset needs a memory outs[0]".into());
    };
    let esize = dst.first().esize;
    let out = inst.outs.first();
    let set_dtype = out
        .and_then(|a| a.memsetref())
        .and_then(|s| index.set(s))
        .map(|s| &*s.set.dtype);
    let out_dtype = out.and_then(|a| a.dtype()).or(set_dtype).unwrap_or("");
    if let Some(Argument::Imm { dtype, value, .. }) = inst.ins.first() {
        let d = dtype.as_deref().unwrap_or(out_dtype);
        if let Some(sz) = dtype_size(d) {
            if sz != esize {
                return Err(format!("the immediate's dtype {d} has {sz} bytes, outs[0] has {esize}"));
            }
        }
        return super::value::encode(value, d, esize);
    }
    let value = inst
        .extra
        .as_ref()
        .and_then(|x| x.get("value"))
        .cloned()
        .unwrap_or(Value::from(0));
    super::value::encode(&value, out_dtype, esize)
}

/// Scratch buffers reused across instances.
#[derive(Default)]
pub struct Scratch {
    a: Vec<u8>,
    b: Vec<u8>,
    /// The gathered bytes of a computing instruction's `ins`.
    ins: Vec<Vec<u8>>,
    lanes: Lanes,
}

/// Run one compiled instance against memory.
pub fn execute(op: &Op, mem: &mut Memory, log: &mut StoreLog<'_>, s: &mut Scratch) {
    log.writer = op.writer;
    for a in &op.reads {
        mem.settle(a.first(), log);
    }
    match &op.kind {
        Kind::Copy { replicate } => {
            s.a.clear();
            mem.gather(op.reads[0].first(), &mut s.a);
            let dst = &op.writes[0];
            let data: &[u8] = if *replicate {
                let len = dst.first().byte_len();
                s.b.clear();
                while s.b.len() < len && !s.a.is_empty() {
                    let take = (len - s.b.len()).min(s.a.len());
                    s.b.extend_from_slice(&s.a[..take]);
                }
                &s.b
            } else {
                &s.a
            };
            for span in &dst.spans {
                mem.store(span, data, op.acc, log);
            }
        }
        Kind::Memset { value } => {
            let dst = &op.writes[0];
            let es = dst.first().esize as usize;
            s.a.clear();
            for _ in 0..dst.first().count() {
                s.a.extend_from_slice(&value[..es]);
            }
            for span in &dst.spans {
                mem.store(span, &s.a, op.acc, log);
            }
        }
        Kind::Numeric(n) => {
            // each input read in place when it is one run, else gathered
            s.ins.resize_with(n.ins.len().max(1), Vec::new);
            let mut direct: SmallVec<[bool; 3]> = SmallVec::new();
            for (k, a) in n.ins.iter().enumerate() {
                s.ins[k].clear();
                let span = a.as_ref().map(|a| op.reads[a.read].first());
                let here = span.is_some_and(|sp| mem.contiguous(sp).is_some());
                if let (Some(sp), false) = (span, here) {
                    mem.gather(sp, &mut s.ins[k]);
                }
                direct.push(here);
            }
            let views: SmallVec<[&[u8]; 3]> = (s.ins.iter().enumerate())
                .map(|(k, g)| match (direct.get(k), n.ins.get(k).and_then(Option::as_ref)) {
                    (Some(true), Some(a)) => mem.contiguous(op.reads[a.read].first()).unwrap_or(&[]),
                    _ => g.as_slice(),
                })
                .collect();
            kernel::run(n, &views, &mut s.b, &mut s.lanes);
            drop(views);
            for span in &op.writes[0].spans {
                mem.store(span, &s.b, op.acc, log);
            }
        }
        Kind::Opaque(None) => {}
        Kind::Opaque(Some(prefix)) => {
            let mut h = (**prefix).clone();
            let ins = op.reads.iter().filter(|a| a.list == ArgList::Ins);
            let ind = op.reads.iter().filter(|a| a.list == ArgList::IndirectionIns);
            for arg in ins.chain(ind) {
                h.input_span(mem, arg.first());
            }
            let h = h.finish();
            for arg in &op.writes {
                opaque::fill(h, arg.index, arg.first().byte_len(), &mut s.b);
                for span in &arg.spans {
                    mem.store(span, &s.b, op.acc, log);
                }
            }
        }
    }
}
