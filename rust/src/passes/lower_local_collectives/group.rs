//! Grouping the SPMD copies of each `CollectiveCompute` by name (9101), the
//! checks on their own fields (ranks: 9103; kind, op, arguments and copies
//! that disagree: 9105), and the static facts the lowering needs.

use std::sync::Arc;

use hashbrown::HashMap;
use serde_json::Value;

use super::{fail, CODE_BAD};
use crate::analysis::AccOp;
use crate::bir::{Argument, Function, Instruction, IntOrExpr, Module, OpFields, Opcode};
use crate::error::Result;
use crate::passes::core_barriers::written_order;
use crate::pelican::{AffinePredicate, AxisId, Context};

/// CollectiveKind names in enum order (neuronx-facts §3.6): 0 SendRecv,
/// 1 SendRecvCCE, 2 AllReduce, 3 ReduceScatter, ….
pub const KIND_NAMES: [&str; 11] = [
    "SendRecv",
    "SendRecvCCE",
    "AllReduce",
    "ReduceScatter",
    "AllGather",
    "AllToAll",
    "AllToAllV",
    "Permute",
    "PermuteReduce",
    "PermuteImplicit",
    "PermuteReduceImplicit",
];

/// The CollectiveKind of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind(pub u8);

impl Kind {
    pub const SEND_RECV: Kind = Kind(0);
    pub const SEND_RECV_CCE: Kind = Kind(1);
    pub const ALL_REDUCE: Kind = Kind(2);
    pub const PERMUTE: Kind = Kind(7);

    pub fn name(self) -> &'static str {
        KIND_NAMES[self.0 as usize]
    }

    /// Kinds whose ranks are checked (contract §3.6).
    pub fn has_ranks(self) -> bool {
        matches!(self, Kind::SEND_RECV | Kind::SEND_RECV_CCE | Kind::PERMUTE)
    }

    /// Kinds 0–2 are lowered; the others keep the op behind a fence.
    pub fn is_lowered(self) -> bool {
        self.0 <= 2
    }
}

/// One copy of a collective on one core.
pub struct Site<'m> {
    pub inst: &'m Instruction,
    /// Enclosing loops, outermost first.
    pub loops: Vec<&'m Instruction>,
}

impl Site<'_> {
    pub fn axes(&self) -> Vec<AxisId> {
        self.loops
            .iter()
            .filter_map(|l| match &l.op {
                OpFields::Loop { axis, .. } => Some(*axis),
                _ => None,
            })
            .collect()
    }
}

/// The SPMD copies of one collective, core by core.
pub struct Group<'m> {
    pub function: Arc<str>,
    pub name: Arc<str>,
    pub kind: Kind,
    /// The reduction op (AllReduce).
    pub op: Option<AccOp>,
    pub sites: Vec<Site<'m>>,
    /// `send_to_rank` and `recv_from_rank` of each core (rank-checked kinds).
    pub send: Vec<usize>,
    pub recv: Vec<usize>,
}

impl Group<'_> {
    pub fn n(&self) -> usize {
        self.sites.len()
    }
}

fn collect_block<'m>(
    blocks: &'m [crate::bir::Block],
    stack: &mut Vec<&'m Instruction>,
    out: &mut Vec<(&'m Instruction, Vec<&'m Instruction>)>,
) {
    for b in blocks {
        for inst in &b.instructions {
            if inst.opcode == Opcode::COLLECTIVE_COMPUTE {
                out.push((inst, stack.clone()));
            }
            if let OpFields::Loop { blocks, .. } = &inst.op {
                stack.push(inst);
                collect_block(blocks, stack, out);
                stack.pop();
            }
        }
    }
}

/// Every CollectiveCompute of `f` in program order, with its enclosing loops.
pub fn collectives_of(f: &Function) -> Vec<(&Instruction, Vec<&Instruction>)> {
    let mut out = Vec::new();
    collect_block(&f.basic_blocks, &mut Vec::new(), &mut out);
    out
}

fn missing(function: &str, name: &str, core: usize) -> crate::Error {
    fail(
        9101,
        "every SPMD copy of a CollectiveCompute must exist on every core",
        format!("collective {name} of function {function} is missing on core {core}"),
    )
}

/// Group the collectives of every function (core 0's written order, then
/// program order) across the N cores, and check each group.
pub fn collect<'m>(cores: &'m [Module], ctxs: &[Context]) -> Result<Vec<Group<'m>>> {
    let n = cores.len();
    let mut groups = Vec::new();
    for fi in written_order(&cores[0].functions) {
        let f0 = &cores[0].functions[fi];
        let per_core: Vec<Vec<(&Instruction, Vec<&Instruction>)>> = (0..n)
            .map(|c| cores[c].function(&f0.name).map(collectives_of).unwrap_or_default())
            .collect();
        let mut by_name: Vec<HashMap<&str, usize>> = per_core
            .iter()
            .map(|v| v.iter().enumerate().map(|(i, (inst, _))| (&*inst.name, i)).collect())
            .collect();
        for (inst0, loops0) in &per_core[0] {
            let mut sites = vec![Site {
                inst: inst0,
                loops: loops0.clone(),
            }];
            for c in 1..n {
                let i = by_name[c]
                    .remove(&*inst0.name)
                    .ok_or_else(|| missing(&f0.name, &inst0.name, c))?;
                let (inst, loops) = &per_core[c][i];
                sites.push(Site {
                    inst,
                    loops: loops.clone(),
                });
            }
            groups.push(make_group(ctxs, &f0.name, sites)?);
        }
        // A collective on some core that core 0 does not have.
        for left in by_name.iter().skip(1) {
            if let Some(name) = left.keys().min() {
                return Err(missing(&f0.name, name, 0));
            }
        }
    }
    Ok(groups)
}

fn make_group<'m>(ctxs: &[Context], function: &Arc<str>, sites: Vec<Site<'m>>) -> Result<Group<'m>> {
    let x = sites[0].inst;
    let where_ = |what: String| format!("collective {} of function {function}: {what}", x.name);
    let channel = match &x.op {
        OpFields::CollectiveCompute { cc_channel, .. } => cc_channel.as_deref(),
        _ => None,
    };
    let kind = parse_kind(channel).map_err(|e| fail(CODE_BAD, "CollectiveKind", where_(e)))?;
    let op = if kind == Kind::ALL_REDUCE {
        Some(parse_op(channel).map_err(|e| fail(CODE_BAD, "AllReduce op", where_(e)))?)
    } else {
        None
    };
    check_copies_agree(ctxs, &sites).map_err(|e| fail(CODE_BAD, "SPMD copies of a collective agree", where_(e)))?;
    if kind.is_lowered() {
        check_operands(x).map_err(|e| fail(CODE_BAD, "a lowered collective moves one AP", where_(e)))?;
    }
    let mut g = Group {
        function: function.clone(),
        name: x.name.clone(),
        kind,
        op,
        sites,
        send: Vec::new(),
        recv: Vec::new(),
    };
    if kind.has_ranks() {
        check_ranks(ctxs, &mut g)?;
    }
    Ok(g)
}

fn parse_kind(channel: Option<&Value>) -> std::result::Result<Kind, String> {
    // The compiler's default kind is AllReduce (neuronx-facts §3.6).
    let Some(k) = channel.and_then(|c| c.get("kind")) else {
        return Ok(Kind::ALL_REDUCE);
    };
    let name = k
        .as_str()
        .ok_or_else(|| format!("cc_channel.kind must be a CollectiveKind name, got {k}"))?;
    KIND_NAMES
        .iter()
        .position(|n| *n == name)
        .map(|i| Kind(i as u8))
        .ok_or_else(|| format!("unknown CollectiveKind {name:?}"))
}

fn parse_op(channel: Option<&Value>) -> std::result::Result<AccOp, String> {
    let op = channel.and_then(|c| c.get("op"));
    op.and_then(Value::as_str)
        .and_then(AccOp::parse)
        .ok_or_else(|| match op {
            Some(v) => format!("cc_channel.op must be \"add\", \"max\" or \"min\", got {v}"),
            None => "AllReduce needs cc_channel.op (\"add\", \"max\" or \"min\")".to_string(),
        })
}

/// The memory arguments a lowered collective moves: exactly one `ins` and
/// one `outs`, each a `symbolic_ap` or `physical_ap` naming its set.
fn check_operands(x: &Instruction) -> std::result::Result<(), String> {
    let memory = |a: &Argument| matches!(a, Argument::Symbolic(_) | Argument::Physical(_));
    if x.ins.len() != 1 || x.outs.len() != 1 || !memory(&x.ins[0]) || !memory(&x.outs[0]) {
        return Err(format!(
            "needs exactly one ins and one outs access pattern, has {} ins and {} outs",
            x.ins.len(),
            x.outs.len()
        ));
    }
    for (list, a) in [("ins", &x.ins[0]), ("outs", &x.outs[0])] {
        let named = match a {
            Argument::Symbolic(s) => s.memsetref.is_some(),
            Argument::Physical(p) => p.memsetref.is_some() || p.memref.is_some(),
            _ => false,
        };
        if !named {
            return Err(format!("{list}[0] names no memory location set"));
        }
    }
    if x.indirection_ins.as_ref().is_some_and(|v| !v.is_empty()) {
        return Err("indirection_ins cannot be lowered".to_string());
    }
    Ok(())
}

fn predicates_json(ctx: &Context, preds: &[AffinePredicate]) -> Result<Vec<(Value, bool)>> {
    preds.iter().map(|p| Ok((ctx.to_json(p.expr, 2)?, p.ge))).collect()
}

/// Loop axis (name, lo, ub, step) and predicates of each enclosing loop.
type LoopKey = (String, i64, i64, i64, Vec<(Value, bool)>);

fn loop_keys(ctx: &Context, site: &Site<'_>) -> Result<Vec<LoopKey>> {
    site.loops
        .iter()
        .map(|l| {
            let a = match &l.op {
                OpFields::Loop { axis, .. } => ctx.axis(*axis).clone(),
                _ => unreachable!("enclosing instructions are Loops"),
            };
            Ok((
                a.name.to_string(),
                a.lo,
                a.ub,
                a.step,
                predicates_json(ctx, &l.predicates)?,
            ))
        })
        .collect()
}

/// The copies must fire together: same `cc_channel`, same predicates, same
/// enclosing loops (bounds and predicates). Otherwise the barriers that
/// lowering inserts around them would not line up between cores.
fn check_copies_agree(ctxs: &[Context], sites: &[Site<'_>]) -> std::result::Result<(), String> {
    let channel = |s: &Site<'_>| match &s.inst.op {
        OpFields::CollectiveCompute { cc_channel, .. } => cc_channel.clone(),
        _ => None,
    };
    let text = |e: crate::Error| e.to_string();
    let p0 = predicates_json(&ctxs[0], &sites[0].inst.predicates).map_err(text)?;
    let l0 = loop_keys(&ctxs[0], &sites[0]).map_err(text)?;
    for (c, s) in sites.iter().enumerate().skip(1) {
        if channel(s) != channel(&sites[0]) {
            return Err(format!("cc_channel differs between core 0 and core {c}"));
        }
        if predicates_json(&ctxs[c], &s.inst.predicates).map_err(text)? != p0 {
            return Err(format!("predicates differ between core 0 and core {c}"));
        }
        if loop_keys(&ctxs[c], s).map_err(text)? != l0 {
            return Err(format!("enclosing loops differ between core 0 and core {c}"));
        }
    }
    Ok(())
}

fn rank_of(ctx: &Context, v: Option<&IntOrExpr>) -> Option<i64> {
    match v? {
        IntOrExpr::Int(i) => Some(*i),
        IntOrExpr::Expr(e) => ctx.as_constant(*e),
    }
}

/// After the split `send_to_rank`/`recv_from_rank` are constant core ids in
/// [0, N) with `recv_from(send_to(c)) = c` (9103).
fn check_ranks(ctxs: &[Context], g: &mut Group<'_>) -> Result<()> {
    let n = g.n();
    let bad = |what: String| {
        fail(
            9103,
            "send_to_rank and recv_from_rank are constant core ids in [0, N) with recv_from(send_to(c)) == c",
            format!("{} {} of function {}: {what}", g.kind.name(), g.name, g.function),
        )
    };
    let mut send = Vec::with_capacity(n);
    let mut recv = Vec::with_capacity(n);
    for (c, site) in g.sites.iter().enumerate() {
        let (s, r) = match &site.inst.op {
            OpFields::CollectiveCompute {
                send_to_rank,
                recv_from_rank,
                ..
            } => (send_to_rank.as_ref(), recv_from_rank.as_ref()),
            _ => (None, None),
        };
        for (key, v, out) in [("send_to_rank", s, &mut send), ("recv_from_rank", r, &mut recv)] {
            let value =
                rank_of(&ctxs[c], v).ok_or_else(|| bad(format!("{key} on core {c} is not a constant core id")))?;
            if !(0..n as i64).contains(&value) {
                return Err(bad(format!("{key} on core {c} is {value}, outside [0, {n})")));
            }
            out.push(value as usize);
        }
    }
    for c in 0..n {
        if recv[send[c]] != c {
            return Err(bad(format!(
                "core {c} sends to core {} whose recv_from_rank is {}",
                send[c], recv[send[c]]
            )));
        }
    }
    g.send = send;
    g.recv = recv;
    Ok(())
}
