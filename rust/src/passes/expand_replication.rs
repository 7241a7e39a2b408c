//! expand_replication (pipeline order 7): make multi-LNC replication explicit
//! on the one symbolic module, before any clone (seed 000 §7, contract §3.2).
//!
//! `MatmultVisitor` collects, function `main` first, the ReplicationParams of
//! every matmult with `replication_resolution` R > 1, keyed by its ifmap set
//! (`ins[0].memsetref`). `increase_ifmap_memset_size` then grows each set by
//! R, widens the matmults' access patterns over all replicas
//! (`expand_replicated_ap`), and inserts one replicated DMACopy after every
//! writer of the set (`replace_with_replicated_copy`).

use std::sync::Arc;

use hashbrown::HashSet;

use crate::bir::{Argument, Block, Instruction, IntOrExpr, Module, OpFields, Opcode};
use crate::error::{Error, Result};
use crate::pelican::{Context, ExprId, Node};

/// lncsplit's error codes for this pass (the compiler's are not published).
pub const CONFLICTING_PARAMS: u32 = 9001;
pub const BAD_GROWTH: u32 = 9002;
pub const BAD_PARAMS: u32 = 9003;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicationParams {
    /// Replication factor R.
    pub resolution: i64,
    /// Partition shift between consecutive replicas.
    pub shift: i64,
    /// Rows (partitions) per replica.
    pub rows: i64,
}

fn loc(line: &str) -> String {
    format!("expand_replication.cpp:{line}")
}

fn int_field(f: &Option<IntOrExpr>, name: &str, inst: &str) -> Result<Option<i64>> {
    match f {
        None => Ok(None),
        Some(IntOrExpr::Int(v)) => Ok(Some(*v)),
        Some(IntOrExpr::Expr(_)) => Err(Error::neuron_at(
            BAD_PARAMS,
            format!("{name} must be a constant"),
            loc("MatmultVisitor"),
            format!("matmult {inst} has a symbolic {name}"),
        )),
    }
}

/// What one replicated matmult says about its ifmap set.
struct MatmultReplication {
    set: Arc<str>,
    shift: Option<i64>,
    rows: Option<i64>,
    resolution: i64,
}

/// The replication key and params of one matmult, if it is replicated.
fn matmult_params(inst: &Instruction) -> Result<Option<MatmultReplication>> {
    let OpFields::Matmult {
        replication_resolution,
        replication_shift_amnt,
        replication_num_rows,
    } = &inst.op
    else {
        return Ok(None);
    };
    let r = int_field(replication_resolution, "replication_resolution", &inst.name)?.unwrap_or(1);
    if r <= 1 {
        return Ok(None);
    }
    let Some(Argument::Symbolic(ap)) = inst.ins.first() else {
        return Ok(None);
    };
    let Some(set) = ap.memsetref.clone() else {
        return Ok(None);
    };
    let shift = int_field(replication_shift_amnt, "replication_shift_amnt", &inst.name)?;
    let rows = int_field(replication_num_rows, "replication_num_rows", &inst.name)?;
    Ok(Some(MatmultReplication {
        set,
        shift,
        rows,
        resolution: r,
    }))
}

/// One replicated ifmap set: (function index, set name, params).
type Entry = (usize, Arc<str>, ReplicationParams);

/// MatmultVisitor: `main` first, then the other functions in order; blocks and
/// loop bodies in order.
fn visit(m: &Module) -> Result<Vec<Entry>> {
    let mut order: Vec<usize> = m
        .functions
        .iter()
        .position(|f| &*f.name == "main")
        .into_iter()
        .collect();
    order.extend((0..m.functions.len()).filter(|i| &*m.functions[*i].name != "main"));
    let mut entries: Vec<Entry> = Vec::new();
    for fi in order {
        let f = &m.functions[fi];
        let mut err = None;
        f.walk(&mut |inst| {
            if err.is_some() {
                return;
            }
            let r = (|| -> Result<()> {
                let Some(MatmultReplication {
                    set,
                    shift,
                    rows,
                    resolution: r,
                }) = matmult_params(inst)?
                else {
                    return Ok(());
                };
                let extent = f.memory_location_set(&set).map(|s| s.partitions()).unwrap_or(0);
                let rows = rows.unwrap_or(extent);
                let params = ReplicationParams {
                    resolution: r,
                    shift: shift.unwrap_or(rows),
                    rows,
                };
                match entries.iter().find(|e| e.0 == fi && e.1 == set) {
                    Some(e) if e.2 != params => Err(Error::neuron_at(
                        CONFLICTING_PARAMS,
                        "conflicting ReplicationParams for one ifmap set",
                        loc("MatmultVisitor"),
                        format!(
                            "set {set} in function {}: {:?} vs {:?} (matmult {})",
                            f.name, e.2, params, inst.name
                        ),
                    )),
                    Some(_) => Ok(()),
                    None => {
                        entries.push((fi, set, params));
                        Ok(())
                    }
                }
            })();
            if let Err(e) = r {
                err = Some(e);
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
    }
    Ok(entries)
}

/// ExpandReplication::run on one symbolic module, in place. A module without
/// a replicated matmult is left untouched.
pub fn expand_replication(m: &mut Module) -> Result<()> {
    let entries = visit(m)?;
    let partitions = m.arch.sb_partitions();
    for (fi, set, params) in entries {
        increase_ifmap_memset_size(m, fi, &set, params, partitions)?;
    }
    Ok(())
}

/// Grow the set, widen the matmult APs, insert the replicated copies.
fn increase_ifmap_memset_size(
    m: &mut Module,
    fi: usize,
    set: &Arc<str>,
    p: ReplicationParams,
    partitions: i64,
) -> Result<()> {
    let fname = m.functions[fi].name.clone();
    let grown = p.rows.checked_mul(p.resolution).unwrap_or(i64::MAX);
    {
        let f = &mut m.functions[fi];
        let Some(s) = f.allocations.iter_mut().find(|s| &s.name == set) else {
            return Err(Error::neuron_at(
                BAD_GROWTH,
                "replicated ifmap set must exist",
                loc("increase_ifmap_memset_size"),
                format!("set {set} of function {fname}"),
            ));
        };
        let pd = s.partition_dim();
        let extent = s.tensor_shape.get(pd).copied().unwrap_or(0);
        if extent != p.rows {
            return Err(Error::neuron_at(
                BAD_GROWTH,
                "ifmap extent must equal replication_num_rows",
                loc("increase_ifmap_memset_size"),
                format!("set {set} of function {fname}: extent {extent}, rows {}", p.rows),
            ));
        }
        if grown > partitions {
            return Err(Error::neuron_at(
                BAD_GROWTH,
                "rows * replication_resolution <= numPartitions",
                loc("increase_ifmap_memset_size"),
                format!(
                    "set {set} of function {fname}: {} rows x {} replicas = {grown} > {partitions} partitions",
                    p.rows, p.resolution
                ),
            ));
        }
        s.tensor_shape[pd] = grown;
    }
    let ctx = &mut m.ctx;
    let f = &mut m.functions[fi];
    let mut names: HashSet<Arc<str>> = HashSet::new();
    f.walk(&mut |i| {
        names.insert(i.name.clone());
    });
    for b in &mut f.basic_blocks {
        expand_block(ctx, b, set, p, &mut names)?;
    }
    Ok(())
}

fn reads_set(inst: &Instruction, set: &str) -> bool {
    inst.ins.iter().any(|a| a.memsetref() == Some(set))
}

fn writes_set<'a>(inst: &'a Instruction, set: &str) -> Option<&'a Argument> {
    inst.outs.iter().find(|a| a.memsetref() == Some(set))
}

fn expand_block(
    ctx: &mut Context,
    b: &mut Block,
    set: &str,
    p: ReplicationParams,
    names: &mut HashSet<Arc<str>>,
) -> Result<()> {
    let mut out = Vec::with_capacity(b.instructions.len());
    for mut inst in std::mem::take(&mut b.instructions) {
        if let OpFields::Loop { blocks, .. } = &mut inst.op {
            for nb in blocks.iter_mut() {
                expand_block(ctx, nb, set, p, names)?;
            }
        }
        if inst.opcode.is_matmult() && reads_set(&inst, set) {
            expand_replicated_ap(&mut inst, set, p);
        }
        let copy = match writes_set(&inst, set) {
            Some(arg) => Some(replace_with_replicated_copy(ctx, &inst, arg, p, names)?),
            None => None,
        };
        out.push(inst);
        out.extend(copy);
    }
    b.instructions = out;
    Ok(())
}

/// expand_replicated_ap: the matmult's ifmap AP spans all replicas.
fn expand_replicated_ap(inst: &mut Instruction, set: &str, p: ReplicationParams) {
    for a in &mut inst.ins {
        if a.memsetref() != Some(set) {
            continue;
        }
        let ap = match a {
            Argument::Symbolic(s) => &mut s.ap,
            Argument::Physical(ph) => &mut ph.ap,
            _ => continue,
        };
        if let Some(first) = ap.first_mut() {
            first[1] = p.rows * p.resolution;
        }
    }
}

/// `addr + shift` as an expression, folded when `addr` is affine.
fn shifted(ctx: &mut Context, addr: ExprId, shift: i64) -> Result<ExprId> {
    if let Node::AffExpr { terms, c } = ctx.node(addr).clone() {
        let c = c.checked_add(shift).ok_or_else(|| Error::overflow("replica shift"))?;
        return ctx.aff_expr(&terms, c);
    }
    let k = ctx.constant(shift);
    ctx.sum(&[addr, k])
}

fn unique_name(base: String, names: &mut HashSet<Arc<str>>) -> Arc<str> {
    let mut name = base.clone();
    let mut k = 1;
    while names.contains(name.as_str()) {
        name = format!("{base}_{k}");
        k += 1;
    }
    let name: Arc<str> = Arc::from(name);
    names.insert(name.clone());
    name
}

/// replace_with_replicated_copy: one DMACopy (mode Replicate) after the
/// writer, reading the writer's output AP and writing replicas 1…R−1,
/// carrying the writer's predicates.
fn replace_with_replicated_copy(
    ctx: &mut Context,
    writer: &Instruction,
    out: &Argument,
    p: ReplicationParams,
    names: &mut HashSet<Arc<str>>,
) -> Result<Instruction> {
    let src = out.clone();
    let mut dst = out.clone();
    match &mut dst {
        Argument::Symbolic(s) => {
            if let Some(a0) = s.addrs.first_mut() {
                *a0 = shifted(ctx, *a0, p.shift)?;
            }
            if let Some(first) = s.ap.first_mut() {
                first[1] = p.rows * (p.resolution - 1);
            }
        }
        Argument::Physical(ph) => {
            if let Some(first) = ph.ap.first_mut() {
                first[1] = p.rows * (p.resolution - 1);
            }
        }
        _ => {}
    }
    Ok(Instruction {
        name: unique_name(format!("{}_replicate", writer.name), names),
        opcode: Opcode::DMA_COPY,
        engine: None,
        ins: vec![src],
        outs: vec![dst],
        indirection_ins: None,
        predicates: writer.predicates.clone(),
        dependencies: None,
        op: OpFields::DmaCopy {
            mode: Some(Arc::from("Replicate")),
        },
        extra: None,
    })
}
