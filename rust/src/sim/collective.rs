//! `CollectiveCompute` by its reference meaning over the LNC cores (contract
//! §3.8), run once every core has reached it (it is a sync point): footprints
//! flattened in AP order, `SendRecv`/`SendRecvCCE`/`Permute` set outs(c) ←
//! ins(recv_from(c)), `AllReduce` outs(c) ← op over every core's ins,
//! `ReduceScatter` chunk c of that reduction, `AllGather` the concatenation
//! of ins(0…N−1); op ∈ {add, max, min} (the accumulate combiners);
//! `replica_groups` must be `[[0…N−1]]` and counts must fit the kind, else 9401.
//! Every core's ins is read before any outs is written.

use serde_json::Value;
use smallvec::SmallVec;

use super::exec::{cannot_run, CoreView, Env};
use super::memory::{combine, Memory, Span, StoreLog};
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
}

/// One core's part of a collective.
pub struct Part {
    kind: CcKind,
    op: AccOp,
    src: Span,
    dsts: SmallVec<[Span; 1]>,
    recv_from: usize,
    writer: u32,
}

/// A collective compiled on every core.
pub struct Collective {
    kind: CcKind,
    op: AccOp,
    parts: Vec<Part>,
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
        other => return Err(format!("collective kind {other:?} has no reference meaning here")),
    };
    let op = ch.get("op").and_then(Value::as_str).and_then(AccOp::parse);
    Ok((kind, op))
}

fn groups_ok(ch: &Value, n: usize) -> bool {
    let want: Vec<Value> = (0..n as i64).map(Value::from).collect();
    ch.get("replica_groups") == Some(&Value::Array(vec![Value::Array(want)]))
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
    if !groups_ok(ch, n) {
        let got = ch.get("replica_groups").unwrap_or(&Value::Null);
        return Err(err(format!(
            "replica_groups must be [[0…{}]], got {got}",
            n.saturating_sub(1)
        )));
    }
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
    let recv_from = if kind == CcKind::SendRecv {
        rank(view, inst, bindings, n).map_err(err)?
    } else {
        c
    };
    Ok(Part {
        kind,
        op,
        src: src.spans[0].clone(),
        dsts: dst.spans.clone(),
        recv_from,
        writer,
    })
}

/// The collective of every core's part: kinds, ops and counts must agree.
/// `name` and `core0` locate the error.
pub fn assemble(parts: Vec<Part>, err: impl Fn(String) -> crate::Error) -> Result<Collective> {
    let (kind, op) = (parts[0].kind, parts[0].op);
    if let Some(c) = parts.iter().position(|p| p.kind != kind || p.op != op) {
        return Err(err(format!("core {c}'s collective kind or op differs from core 0's")));
    }
    check_counts(kind, &parts).map_err(err)?;
    Ok(Collective { kind, op, parts })
}

fn rank(view: &CoreView<'_>, inst: &Instruction, b: &Bindings, n: usize) -> std::result::Result<usize, String> {
    let OpFields::CollectiveCompute { recv_from_rank, .. } = &inst.op else {
        return Err("not a collective".into());
    };
    let v = match recv_from_rank {
        None => return Err("recv_from_rank is missing".into()),
        Some(IntOrExpr::Int(v)) => Some(*v),
        Some(IntOrExpr::Expr(e)) => view.ctx.eval(*e, b).map_err(|e| e.to_string())?,
    };
    match v {
        None => Err("recv_from_rank is undecided (runtime values)".into()),
        Some(r) if r >= 0 && (r as usize) < n => Ok(r as usize),
        Some(r) => Err(format!("recv_from_rank {r} is not a core in [0, {n})")),
    }
}

fn check_counts(kind: CcKind, parts: &[Part]) -> std::result::Result<(), String> {
    let n = parts.len();
    let es = parts[0].src.esize;
    for (c, p) in parts.iter().enumerate() {
        if p.src.esize != es || p.dsts[0].esize != es {
            return Err(format!("element sizes differ on core {c}"));
        }
        let (i, o) = (p.src.count(), p.dsts[0].count());
        let ok = match kind {
            CcKind::SendRecv => o == parts[p.recv_from].src.count(),
            CcKind::AllReduce => i == o && i == parts[0].src.count(),
            CcKind::ReduceScatter => i == n * o && i == parts[0].src.count(),
            CcKind::AllGather => o == n * i && i == parts[0].src.count(),
        };
        if !ok {
            return Err(format!(
                "counts do not fit {kind:?} on core {c}: ins {i} elements, outs {o} (recv from {})",
                p.recv_from
            ));
        }
    }
    Ok(())
}

/// Run the collective: read every core's ins, then write every core's outs.
pub fn execute(cc: &Collective, mem: &mut Memory, log: &mut StoreLog<'_>) {
    let ins: Vec<Vec<u8>> = cc
        .parts
        .iter()
        .map(|p| {
            let mut v = Vec::new();
            mem.gather(&p.src, &mut v);
            v
        })
        .collect();
    let es = cc.parts[0].src.esize as usize;
    let reduced = match cc.kind {
        CcKind::AllReduce | CcKind::ReduceScatter => {
            let mut acc = ins[0].clone();
            for x in &ins[1..] {
                combine(&mut acc, x, es, cc.op);
            }
            acc
        }
        _ => Vec::new(),
    };
    let gathered: Vec<u8> = if cc.kind == CcKind::AllGather {
        ins.concat()
    } else {
        Vec::new()
    };
    for (c, p) in cc.parts.iter().enumerate() {
        let data: &[u8] = match cc.kind {
            CcKind::SendRecv => &ins[p.recv_from],
            CcKind::AllReduce => &reduced,
            CcKind::ReduceScatter => {
                let len = p.dsts[0].byte_len();
                &reduced[c * len..(c + 1) * len]
            }
            CcKind::AllGather => &gathered,
        };
        log.writer = p.writer;
        for d in &p.dsts {
            mem.store(d, data, None, log);
        }
    }
}
