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
/// A writer of a replicated set whose output argument cannot be shifted to
/// the replicas (a kind lncsplit carries without modelling, or no `addrs`).
pub const UNSHIFTABLE_WRITER: u32 = 9004;

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

/// Per function, the instruction names that contain `_replicate` (the only
/// ones a replicated copy's name can clash with).
type ReplicateNames = Vec<HashSet<Arc<str>>>;

/// MatmultVisitor: `main` first, then the other functions in order; blocks and
/// loop bodies in order. The same walk keeps each function's `_replicate`
/// names, so inserting the copies needs no walk of its own.
fn visit(m: &Module) -> Result<(Vec<Entry>, ReplicateNames)> {
    // The entry function (`main`, else the first: contract §1.7) first.
    let order: Vec<usize> = m.entry_first().collect();
    let mut entries: Vec<Entry> = Vec::new();
    let mut names: ReplicateNames = vec![HashSet::new(); m.functions.len()];
    for fi in order {
        let f = &m.functions[fi];
        let reps = &mut names[fi];
        let mut err = None;
        f.walk(&mut |inst| {
            if err.is_some() {
                return;
            }
            if has_replicate(&inst.name) {
                reps.insert(inst.name.clone());
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
    Ok((entries, names))
}

/// ExpandReplication::run on one symbolic module, in place. A module without
/// a replicated matmult is left untouched.
pub fn expand_replication(m: &mut Module) -> Result<()> {
    let (entries, mut names) = visit(m)?;
    let partitions = m.arch.sb_partitions();
    for (fi, set, params) in entries {
        // `names[fi]` stays every `_replicate` name of the function: the
        // copies an earlier set added went in as they were named.
        increase_ifmap_memset_size(m, fi, &set, params, partitions, &mut names[fi])?;
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
    names: &mut HashSet<Arc<str>>,
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
    let geo = f
        .memory_location_set(set)
        .map(SetGeometry::of)
        .unwrap_or(SetGeometry { elems: 1 });
    let mut x = Expansion {
        ctx,
        set,
        p,
        geo,
        names,
    };
    for b in &mut f.basic_blocks {
        x.expand_block(b)?;
    }
    Ok(())
}

/// The replicated set's layout: F elements per partition (contract §3.6
/// footprints: partition-major, F = product of the other dims).
#[derive(Clone, Copy)]
struct SetGeometry {
    elems: i64,
}

impl SetGeometry {
    fn of(s: &crate::bir::MemoryLocationSet) -> Self {
        let pd = s.partition_dim();
        let elems = s
            .tensor_shape
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != pd)
            .try_fold(1i64, |acc, (_, &d)| acc.checked_mul(d))
            .unwrap_or(i64::MAX);
        SetGeometry { elems }
    }
}

/// One set's expansion over a function: the state `expand_block` threads.
struct Expansion<'a> {
    ctx: &'a mut Context,
    set: &'a str,
    p: ReplicationParams,
    geo: SetGeometry,
    names: &'a mut HashSet<Arc<str>>,
}

fn reads_set(inst: &Instruction, set: &str) -> bool {
    inst.ins.iter().any(|a| a.memsetref() == Some(set))
}

fn writes_set<'a>(inst: &'a Instruction, set: &str) -> Option<&'a Argument> {
    inst.outs.iter().find(|a| a.memsetref() == Some(set))
}

impl Expansion<'_> {
    /// Expand one block in place; the block is rebuilt only when copies are
    /// inserted into it (each right after its writer), so the blocks that hold
    /// no writer of the set are not moved.
    fn expand_block(&mut self, b: &mut Block) -> Result<()> {
        let mut inserts: Vec<(usize, Vec<Instruction>)> = Vec::new();
        for (k, inst) in b.instructions.iter_mut().enumerate() {
            if let OpFields::Loop { blocks, .. } = &mut inst.op {
                for nb in blocks.iter_mut() {
                    self.expand_block(nb)?;
                }
            }
            if inst.opcode.is_matmult() && reads_set(inst, self.set) {
                expand_replicated_ap(inst, self.set, self.p);
            }
            if let Some(arg) = writes_set(inst, self.set) {
                let copies = self.replicated_copies(inst, arg)?;
                if !copies.is_empty() {
                    inserts.push((k, copies));
                }
            }
        }
        if inserts.is_empty() {
            return Ok(());
        }
        let added: usize = inserts.iter().map(|(_, c)| c.len()).sum();
        let mut old = std::mem::take(&mut b.instructions);
        let mut out = Vec::with_capacity(old.len() + added);
        // The runs between writers move in bulk (an Instruction is large).
        let mut drained = 0;
        for (k, copies) in inserts {
            out.extend(old.drain(..=k - drained));
            drained = k + 1;
            out.extend(copies);
        }
        out.append(&mut old);
        b.instructions = out;
        Ok(())
    }

    /// replace_with_replicated_copy (contract §3.2): when the writer spans all
    /// `rows` partitions and `shift` == rows, one DMACopy `<writer>_replicate`
    /// writing replicas 1…R−1 at once; otherwise one copy per replica r,
    /// `<writer>_replicate_<r>`, writing the writer's own AP shifted by
    /// r·shift partitions. Each reads the writer's output AP and carries the
    /// writer's predicates.
    fn replicated_copies(&mut self, writer: &Instruction, out: &Argument) -> Result<Vec<Instruction>> {
        let p = self.p;
        if p.shift == p.rows && self.spans_all_rows(out)? {
            let mut dst = self.shifted_arg(writer, out, p.shift)?;
            set_partition_count(&mut dst, p.rows * (p.resolution - 1));
            let name = unique_name(format!("{}_replicate", writer.name), self.names);
            return Ok(vec![replicate_copy(name, writer, out, dst)]);
        }
        let mut copies = Vec::with_capacity((p.resolution - 1).max(0) as usize);
        for r in 1..p.resolution {
            let by = r.checked_mul(p.shift).ok_or_else(|| Error::overflow("replica shift"))?;
            let dst = self.shifted_arg(writer, out, by)?;
            let name = unique_name(format!("{}_replicate_{r}", writer.name), self.names);
            copies.push(replicate_copy(name, writer, out, dst));
        }
        Ok(copies)
    }

    /// Does the writer's output cover partitions 0…rows−1 exactly: start at
    /// partition 0, `ap[0] = [F, rows]` (steps are flat element strides)?
    fn spans_all_rows(&self, out: &Argument) -> Result<bool> {
        let rows = self.p.rows;
        let first = out.ap().and_then(|ap| ap.first().copied());
        let Some([step, num]) = first else {
            return Ok(false);
        };
        if num != rows || (rows > 1 && step != self.geo.elems) {
            return Ok(false);
        }
        Ok(match out {
            Argument::Symbolic(s) => s.addrs.first().and_then(|&a| self.ctx.as_constant(a)) == Some(0),
            // offsets are elements (§3.2, since 2026-12-02): the writer starts
            // in partition 0 iff its offset is below F
            Argument::Physical(ph) => (0..self.geo.elems).contains(&ph.offset.unwrap_or(0)),
            _ => false,
        })
    }

    /// The writer's output argument moved `by` partitions: `addrs[0] + by` for
    /// a `symbolic_ap`, `offset + by·F` for a `physical_ap` (offsets in
    /// elements since 2026-12-02; it was `by·F·element size` bytes).
    fn shifted_arg(&mut self, writer: &Instruction, out: &Argument, by: i64) -> Result<Argument> {
        let mut dst = out.clone();
        match &mut dst {
            Argument::Symbolic(s) if !s.addrs.is_empty() => {
                s.addrs[0] = shifted(self.ctx, s.addrs[0], by)?;
            }
            Argument::Physical(ph) => {
                let elems = self
                    .geo
                    .elems
                    .checked_mul(by)
                    .and_then(|b| b.checked_add(ph.offset.unwrap_or(0)))
                    .ok_or_else(|| Error::overflow("replica offset"))?;
                ph.offset = Some(elems);
            }
            other => {
                return Err(Error::neuron_at(
                    UNSHIFTABLE_WRITER,
                    "the writer of a replicated set must be a symbolic_ap with addrs or a physical_ap",
                    loc("replace_with_replicated_copy"),
                    format!(
                        "instruction {} writes set {} through a {} argument, which cannot be shifted to the replicas",
                        writer.name,
                        self.set,
                        other.kind_name()
                    ),
                ))
            }
        }
        Ok(dst)
    }
}

/// `ap[0].num = n` on an access-pattern argument.
fn set_partition_count(a: &mut Argument, n: i64) {
    let ap = match a {
        Argument::Symbolic(s) => &mut s.ap,
        Argument::Physical(ph) => &mut ph.ap,
        _ => return,
    };
    if let Some(first) = ap.first_mut() {
        first[1] = n;
    }
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

/// The marker every name of a replicated copy contains.
const REPLICATE: &[u8] = b"_replicate";

/// Whether `name` contains `_replicate`.
fn has_replicate(name: &str) -> bool {
    let b = name.as_bytes();
    // A shorter name is answered from its length, without reading it.
    b.len() >= REPLICATE.len() && (0..=b.len() - REPLICATE.len()).any(|i| b[i] == b'_' && b[i..].starts_with(REPLICATE))
}

/// `base` when no instruction of the function has that name, else the first
/// free `base_<k>`. `names` holds (at least) every name of the function that
/// contains `_replicate`, which every candidate does.
fn unique_name(base: String, names: &mut HashSet<Arc<str>>) -> Arc<str> {
    debug_assert!(has_replicate(&base));
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

/// One DMACopy in Replicate mode after `writer`: reads the writer's output
/// AP, writes `dst`, carries the writer's predicates.
fn replicate_copy(name: Arc<str>, writer: &Instruction, src: &Argument, dst: Argument) -> Instruction {
    let op = OpFields::DmaCopy {
        mode: Some(Arc::from("Replicate")),
    };
    Instruction {
        ins: vec![src.clone()],
        outs: vec![dst],
        predicates: writer.predicates.clone(),
        ..Instruction::bare(name, Opcode::DMA_COPY, op)
    }
}
