//! `CollectiveCompute` by its reference meaning (contract §3.8), run once
//! every core has reached it (it is a sync point). `replica_groups` splits
//! 0…N−1 into groups of one size G (a list of lists, `[]` for one group of
//! all, or XLA's iota form `[a,b]<=[dims]T(perm)`, expanded); a collective
//! runs within each group, where a core is its position p and N is G.
//! Footprints are flattened in AP order:
//!
//! - `SendRecv`/`SendRecvCCE`/`Permute`: outs(p) ← ins(recv_from(p)); a core
//!   without a sender (`recv_from_rank` < 0, or no core of the group whose
//!   `send_to_rank` names it) gets zeros (XLA's collective-permute);
//! - `AllReduce`: outs(p) ← op over the group's ins; `ReduceScatter`: chunk p
//!   of it (G equal chunks); `AllGather`: the concatenation of ins(0…G−1);
//!   `AllToAll`: outs(p) chunk j ← ins(j) chunk p;
//! - op ∈ {add, max, min}, by value (`super::accumulate::reduce`: a float
//!   `add` is the exact sum rounded once);
//! - counts must fit the kind, else 9401. Every core's ins is read before any
//!   outs is written.

use serde_json::Value;
use smallvec::SmallVec;

use super::accumulate;
use super::exec::{cannot_run, CoreView, Env};
use super::memory::{Memory, Span, StoreLog};
use crate::analysis::replica_groups::replica_groups;
use crate::analysis::AccOp;
use crate::bir::instruction::{Instruction, IntOrExpr, OpFields};
use crate::error::Result;
use crate::pelican::Bindings;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CcKind {
    SendRecv,
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
}

/// One core's part of a collective.
pub struct Part {
    kind: CcKind,
    op: AccOp,
    src: Span,
    dsts: SmallVec<[Span; 1]>,
    /// SendRecv: the sender's position in the group (None: no sender).
    recv_from: Option<usize>,
    /// SendRecv: the position this core sends to, when decided.
    send_to: Option<i64>,
    groups: Vec<Vec<usize>>,
    writer: u32,
}

/// A collective compiled on every core.
pub struct Collective {
    kind: CcKind,
    op: AccOp,
    parts: Vec<Part>,
    groups: Vec<Vec<usize>>,
}

fn channel(inst: &Instruction) -> Option<&Value> {
    match &inst.op {
        OpFields::CollectiveCompute { cc_channel, .. } => cc_channel.as_deref(),
        _ => None,
    }
}

fn parse_kind(ch: &Value) -> std::result::Result<(CcKind, Option<AccOp>), String> {
    let kind = ch.get("kind").and_then(Value::as_str).unwrap_or("");
    let kind = match kind {
        "SendRecv" | "SendRecvCCE" | "Permute" => CcKind::SendRecv,
        "AllReduce" => CcKind::AllReduce,
        "ReduceScatter" => CcKind::ReduceScatter,
        "AllGather" => CcKind::AllGather,
        "AllToAll" => CcKind::AllToAll,
        other => return Err(format!("collective kind {other:?} has no reference meaning here")),
    };
    let op = ch.get("op").and_then(Value::as_str).and_then(AccOp::parse);
    Ok((kind, op))
}

/// One core's part of the collective it reached (compiled when it gets there).
pub fn compile_part<'m>(
    view: &CoreView<'m>,
    env: &Env<'_, 'm>,
    inst: &'m Instruction,
    bindings: &Bindings,
    writer: u32,
) -> Result<Part> {
    let n = env.lnc;
    let c = view.core;
    let fname = &*view.index.function.name;
    let err = |why: String| cannot_run(c, fname, inst, why);
    let ch = channel(inst).ok_or_else(|| err("no cc_channel".into()))?;
    let (kind, op) = parse_kind(ch).map_err(err)?;
    let groups = replica_groups(ch, n).map_err(err)?;
    let g = groups[0].len();
    let op = match (kind, op) {
        (CcKind::AllReduce | CcKind::ReduceScatter, None) => {
            let got = ch.get("op").unwrap_or(&Value::Null);
            return Err(err(format!("op must be add, max or min, got {got}")));
        }
        (_, op) => op.unwrap_or(AccOp::Add),
    };
    let (reads, writes) = view.arguments(env, inst, bindings, false)?;
    let src = reads
        .iter()
        .find(|a| a.index == 0 && a.list == crate::analysis::ArgList::Ins);
    let (Some(src), Some(dst)) = (src, writes.iter().find(|a| a.index == 0)) else {
        return Err(err("a collective needs a memory ins[0] and outs[0]".into()));
    };
    let (recv_from, send_to) = if kind == CcKind::SendRecv {
        ranks(view, inst, bindings, g).map_err(err)?
    } else {
        (None, None)
    };
    Ok(Part {
        kind,
        op,
        src: src.spans[0].clone(),
        dsts: dst.spans.clone(),
        recv_from,
        send_to,
        groups,
        writer,
    })
}

/// The collective of every core's part: kinds, ops, groups and counts must agree.
pub fn assemble(parts: Vec<Part>, err: impl Fn(String) -> crate::Error) -> Result<Collective> {
    let (kind, op) = (parts[0].kind, parts[0].op);
    if let Some(c) = parts
        .iter()
        .position(|p| p.kind != kind || p.op != op || p.groups != parts[0].groups)
    {
        return Err(err(format!(
            "core {c}'s collective kind, op or replica_groups differ from core 0's"
        )));
    }
    let groups = parts[0].groups.clone();
    for group in &groups {
        check_counts(kind, &parts, group).map_err(&err)?;
    }
    Ok(Collective {
        kind,
        op,
        parts,
        groups,
    })
}

fn rank_of(view: &CoreView<'_>, v: &Option<IntOrExpr>, b: &Bindings) -> std::result::Result<Option<i64>, String> {
    Ok(match v {
        None => None,
        Some(IntOrExpr::Int(v)) => Some(*v),
        Some(IntOrExpr::Expr(e)) => view.ctx.eval(*e, b).map_err(|e| e.to_string())?,
    })
}

/// (recv_from, send_to) positions; recv_from None when it is negative.
fn ranks(
    view: &CoreView<'_>,
    inst: &Instruction,
    b: &Bindings,
    g: usize,
) -> std::result::Result<(Option<usize>, Option<i64>), String> {
    let OpFields::CollectiveCompute {
        recv_from_rank,
        send_to_rank,
        ..
    } = &inst.op
    else {
        return Err("not a collective".into());
    };
    if recv_from_rank.is_none() {
        return Err("recv_from_rank is missing".into());
    }
    let send_to = rank_of(view, send_to_rank, b)?;
    match rank_of(view, recv_from_rank, b)? {
        None => Err("recv_from_rank is undecided (runtime values)".into()),
        Some(r) if r < 0 => Ok((None, send_to)),
        Some(r) if (r as usize) < g => Ok((Some(r as usize), send_to)),
        Some(r) => Err(format!("recv_from_rank {r} is not a position in a group of {g}")),
    }
}

/// The sender of position `p` in `group`, if it has one.
fn sender(parts: &[Part], group: &[usize], p: usize) -> Option<usize> {
    let r = parts[group[p]].recv_from?;
    let sends: Vec<Option<i64>> = group.iter().map(|&c| parts[c].send_to).collect();
    if sends.iter().all(Option::is_some) && !sends.contains(&Some(p as i64)) {
        return None; // nobody in the group sends to p
    }
    Some(r)
}

fn check_counts(kind: CcKind, parts: &[Part], group: &[usize]) -> std::result::Result<(), String> {
    let g = group.len();
    let first = &parts[group[0]];
    let es = first.src.esize;
    for (p, &c) in group.iter().enumerate() {
        let part = &parts[c];
        if part.src.esize != es || part.dsts[0].esize != es {
            return Err(format!("element sizes differ on core {c}"));
        }
        let (i, o) = (part.src.count(), part.dsts[0].count());
        let ok = match kind {
            CcKind::SendRecv => sender(parts, group, p).is_none_or(|s| o == parts[group[s]].src.count()),
            CcKind::AllReduce => i == o && i == first.src.count(),
            CcKind::ReduceScatter => i == g * o && i == first.src.count(),
            CcKind::AllGather => o == g * i && i == first.src.count(),
            CcKind::AllToAll => i == o && i % g == 0 && i == first.src.count(),
        };
        if !ok {
            return Err(format!(
                "counts do not fit {kind:?} over a group of {g} on core {c}: ins {i} elements, outs {o}{}",
                match part.recv_from {
                    Some(r) if kind == CcKind::SendRecv => format!(" (recv from position {r})"),
                    _ => String::new(),
                }
            ));
        }
    }
    Ok(())
}

/// Run the collective: read every core's ins, then write every core's outs.
pub fn execute(cc: &Collective, mem: &mut Memory, log: &mut StoreLog<'_>) {
    for p in &cc.parts {
        mem.settle(&p.src, log);
    }
    let ins: Vec<Vec<u8>> = cc
        .parts
        .iter()
        .map(|p| {
            let mut v = Vec::new();
            mem.gather(&p.src, &mut v);
            v
        })
        .collect();
    let mut writes: Vec<(usize, Vec<u8>)> = Vec::with_capacity(cc.parts.len());
    for group in &cc.groups {
        let g = group.len();
        let members: Vec<Vec<u8>> = group.iter().map(|&c| ins[c].clone()).collect();
        let dtype = cc.parts[group[0]].dsts[0].dtype;
        let reduced = match cc.kind {
            CcKind::AllReduce | CcKind::ReduceScatter => accumulate::reduce(&members, dtype, cc.op),
            _ => Vec::new(),
        };
        for (p, &c) in group.iter().enumerate() {
            let part = &cc.parts[c];
            let len = part.dsts[0].byte_len();
            let data = match cc.kind {
                CcKind::SendRecv => match sender(&cc.parts, group, p) {
                    Some(s) => members[s].clone(),
                    None => vec![0u8; len],
                },
                CcKind::AllReduce => reduced.clone(),
                CcKind::ReduceScatter => reduced[p * len..(p + 1) * len].to_vec(),
                CcKind::AllGather => members.concat(),
                CcKind::AllToAll => {
                    let chunk = len / g.max(1);
                    members
                        .iter()
                        .flat_map(|m| m[p * chunk..(p + 1) * chunk].iter().copied())
                        .collect()
                }
            };
            writes.push((c, data));
        }
    }
    for (c, data) in writes {
        let p = &cc.parts[c];
        log.writer = p.writer;
        for d in &p.dsts {
            mem.store(d, &data, None, log);
        }
    }
}
