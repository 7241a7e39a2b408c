//! The instruction sequences of each plan, the proxy and staging sets they
//! use, and their insertion in place of the collective (contract §3.6).
//!
//! Every created instruction carries the collective's predicates, engine and
//! dependencies; barriers span all cores. Core c writes another core's DRAM
//! through a proxy set `<set>_remote_<core>` (each location
//! `<loc>_remote_<core>` with `remote_local_target`), the same proxies on
//! every core; a shared output needs none (every core's access already
//! reaches core 0's location). Names of created instructions and stages start
//! with the collective's name; a user name they would take is 9104.
//!
//! One file past 800 lines: each collective kind's lowering is a sequence of
//! the same few builders (proxies, stages, chunked DMAs, fences), and the
//! kinds read best beside the builders they share.

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::{HashMap, HashSet};
use serde_json::{Map, Value};

use super::chunk::{chunk_ap, Chunk};
use super::filter::NameFilter;
use super::group::{Group, Kind};
use super::{fail, operand, Facts, Plan};
use crate::analysis::AccOp;
use crate::bir::{
    Argument, Block, Dependency, Function, Instruction, MemoryLocation, MemoryLocationSet, Module, OpFields, Opcode,
    RemoteLocalTarget, SymbolicAp,
};
use crate::error::Result;
use crate::passes::core_barriers::all_cores_op;
use crate::pelican::{AxisId, Context, ExprId, Node, Scope};

/// Names a collective's lowering creates.
struct Names {
    x: Arc<str>,
}

impl Names {
    fn s(&self, suffix: &str) -> Arc<str> {
        Arc::from(format!("{}_{suffix}", self.x))
    }
    fn stage(&self) -> Arc<str> {
        self.s("stage")
    }
    fn stage_loc(&self) -> Arc<str> {
        self.s("stage_dram")
    }
    fn gather(&self) -> Arc<str> {
        self.s("gather_stage")
    }
}

/// The proxy name of `name` (a set or a location) on core `core`.
fn remote(name: &str, core: usize) -> Arc<str> {
    Arc::from(format!("{name}_remote_{core}"))
}

/// One proxy set every core gets, in the function of group `group`.
#[derive(Clone)]
struct ProxySpec {
    group: usize,
    name: Arc<str>,
    target: MemoryLocationSet,
    core: usize,
}

/// Geometry of a set for re-expressing a chunk of an AP on it: the tensor
/// rank, F (elements per partition) and S′ (partition-major strides).
struct Geometry {
    rank: usize,
    free: i64,
    strides: Vec<i64>,
}

fn geometry(set: &MemoryLocationSet) -> Option<Geometry> {
    let pdim = set.partition_dim();
    let others: Vec<i64> = (set.tensor_shape.iter().enumerate())
        .filter(|&(i, _)| i != pdim)
        .map(|(_, &d)| d.max(0))
        .collect();
    let mut strides = Vec::with_capacity(others.len() + 1);
    let mut acc = 1i64;
    for &d in others.iter().rev() {
        strides.push(acc);
        acc = acc.checked_mul(d)?;
    }
    strides.push(acc);
    strides.reverse();
    Some(Geometry {
        rank: strides.len(),
        free: acc,
        strides,
    })
}

fn overflow() -> crate::Error {
    crate::Error::overflow("collective lowering")
}

/// `Σ coeff·e + c` as one expression: one AffExpr when every part is
/// affine, else a Sum of the scaled parts.
fn linear(ctx: &mut Context, parts: &[(ExprId, i64)], c: i64) -> Result<ExprId> {
    let mut terms: Vec<(ExprId, i64)> = Vec::new();
    let mut konst = c;
    let mut other: Vec<ExprId> = Vec::new();
    for &(e, k) in parts {
        if k == 0 {
            continue;
        }
        match ctx.node(e).clone() {
            Node::AffExpr { terms: t, c: c0 } => {
                for (idx, coeff) in t.iter() {
                    terms.push((*idx, coeff.checked_mul(k).ok_or_else(overflow)?));
                }
                konst = konst
                    .checked_add(c0.checked_mul(k).ok_or_else(overflow)?)
                    .ok_or_else(overflow)?;
            }
            _ if k == 1 => other.push(e),
            _ => other.push(ctx.mult(e, k)?),
        }
    }
    let aff = ctx.aff_expr(&terms, konst)?;
    if other.is_empty() {
        return Ok(aff);
    }
    if !terms.is_empty() || konst != 0 {
        other.push(aff);
    }
    if other.len() == 1 {
        return Ok(other[0]);
    }
    ctx.sum(&other)
}

/// Reads expressions written by another core's copy: an `AffIVKind` axis
/// names the nearest enclosing loop of the copy on this core.
struct AxisScope<'a> {
    axes: &'a [AxisId],
}

impl Scope for AxisScope<'_> {
    fn axis(&mut self, ctx: &mut Context, name: &str) -> Option<AxisId> {
        self.axes.iter().rev().copied().find(|&a| &*ctx.axis(a).name == name)
    }
    fn register(&mut self, _name: &str) -> bool {
        true
    }
}

fn import_expr(src: &Context, id: ExprId, dst: &mut Context, axes: &[AxisId]) -> Result<ExprId> {
    let v = src.to_json(id, 2)?;
    dst.from_json(&v, 2, &mut AxisScope { axes })
}

/// `arg` of another core's copy, its expressions moved into `dst`.
fn import_arg(src: &Context, arg: &Argument, dst: &mut Context, axes: &[AxisId]) -> Result<Argument> {
    let mut a = arg.clone();
    if let Argument::Symbolic(s) = &mut a {
        for e in s.addrs.iter_mut() {
            *e = import_expr(src, *e, dst, axes)?;
        }
        if let Some(e) = s.tile_addrs.as_mut() {
            *e = import_expr(src, *e, dst, axes)?;
        }
        if let Some(e) = s.block_addrs.as_mut() {
            *e = import_expr(src, *e, dst, axes)?;
        }
    }
    Ok(a)
}

/// Core `src`'s context to read and core `dst`'s to write (`src != dst`).
fn pair(ctxs: &mut [Context], src: usize, dst: usize) -> (&Context, &mut Context) {
    if src < dst {
        let (a, b) = ctxs.split_at_mut(dst);
        (&a[src], &mut b[0])
    } else {
        let (a, b) = ctxs.split_at_mut(src);
        (&b[0], &mut a[dst])
    }
}

/// Point `arg` at the proxy of its set (and location) on core `core`.
fn retarget(arg: &mut Argument, core: usize) {
    match arg {
        Argument::Symbolic(s) => s.memsetref = s.memsetref.as_deref().map(|n| remote(n, core)),
        Argument::Physical(p) => {
            p.memsetref = p.memsetref.as_deref().map(|n| remote(n, core));
            p.memref = p.memref.as_deref().map(|n| remote(n, core));
        }
        _ => {}
    }
}

/// The chunk `ch` of `arg` (an AP on a set of geometry `geo`) as an argument
/// of its own: a `symbolic_ap` keeps its partition start `addrs[0]` and puts
/// the within-partition start in its last `addrs` entry (flat steps, contract
/// §3.6); a `physical_ap` moves its offset (in elements, since 2026-12-02).
fn chunk_arg(ctx: &mut Context, arg: &Argument, geo: &Geometry, ch: &Chunk) -> Result<Argument> {
    let mut dims: crate::bir::Ap = ch.dims.iter().copied().collect();
    if dims.len() < 2 {
        dims.push([1, 1]);
    }
    let f = geo.free.max(1);
    match arg {
        Argument::Symbolic(s) => {
            let within: Vec<(ExprId, i64)> = if s.ap.len() == geo.rank {
                (1..s.addrs.len()).map(|d| (s.addrs[d], geo.strides[d])).collect()
            } else {
                (1..s.addrs.len()).map(|d| (s.addrs[d], 1)).collect()
            };
            let a0 = linear(ctx, &[(s.addrs[0], 1)], ch.offset.div_euclid(f))?;
            let x = linear(ctx, &within, ch.offset.rem_euclid(f))?;
            let zero = ctx.constant(0);
            let mut addrs: crate::bir::Addrs = smallvec::smallvec![zero; dims.len()];
            addrs[0] = a0;
            let last = addrs.len() - 1;
            addrs[last] = x;
            Ok(Argument::Symbolic(SymbolicAp {
                pwap: s.pwap,
                ap: dims,
                dtype: s.dtype.clone(),
                memsetref: s.memsetref.clone(),
                addrs,
                tile_addrs: None,
                block_addrs: None,
                access_shape: None,
                extra: s.extra.clone(),
            }))
        }
        Argument::Physical(p) => {
            let mut q = p.clone();
            q.offset = Some(p.offset.unwrap_or(0).checked_add(ch.offset).ok_or_else(overflow)?);
            q.ap = dims;
            Ok(Argument::Physical(q))
        }
        other => Ok(other.clone()),
    }
}

/// The DRAM stage of a collective: `[1, count]` elements of the outputs'
/// dtype, one location, unplaced (private DRAM, placed like any other).
fn stage_set(names: &Names, dtype: &Arc<str>, count: i64) -> MemoryLocationSet {
    MemoryLocationSet {
        name: names.stage(),
        kind: Some(Arc::from("Internal")),
        dtype: dtype.clone(),
        tensor_shape: vec![1, count],
        partition_dim: Some(0),
        addr_space: None,
        locations: vec![MemoryLocation::unplaced(names.stage_loc(), "DRAM")],
        extra: None,
    }
}

/// The gather stage of a gather-and-reduce AllReduce: `[G, count]` elements,
/// slot j holding the ins of the group's j-th core.
fn gather_set(names: &Names, dtype: &Arc<str>, count: i64, g: usize) -> MemoryLocationSet {
    MemoryLocationSet {
        name: names.gather(),
        tensor_shape: vec![g as i64, count],
        locations: vec![MemoryLocation::unplaced(names.s("gather_stage_dram"), "DRAM")],
        ..stage_set(names, dtype, count)
    }
}

/// Slot `j` of a `[G, count]` gather stage.
fn slot_arg(ctx: &mut Context, set: &Arc<str>, dtype: &Arc<str>, count: i64, j: usize) -> Argument {
    let mut a = stage_arg(ctx, set, dtype, count);
    if let Argument::Symbolic(s) = &mut a {
        s.addrs[0] = ctx.constant(j as i64);
    }
    a
}

fn stage_arg(ctx: &mut Context, set: &Arc<str>, dtype: &Arc<str>, count: i64) -> Argument {
    let zero = ctx.constant(0);
    Argument::Symbolic(SymbolicAp {
        pwap: false,
        ap: smallvec::smallvec![[count, 1], [1, count]],
        dtype: Some(dtype.clone()),
        memsetref: Some(set.clone()),
        addrs: smallvec::smallvec![zero, zero],
        tile_addrs: None,
        block_addrs: None,
        access_shape: None,
        extra: None,
    })
}

fn proxy_set(target: &MemoryLocationSet, core: usize) -> MemoryLocationSet {
    let loc = |name: &str, l: Option<&MemoryLocation>| MemoryLocation {
        addr: l.and_then(|l| l.addr),
        bank: l.and_then(|l| l.bank),
        base: l.and_then(|l| l.base),
        allocated: l.and_then(|l| l.allocated),
        remote_local_target: Some(RemoteLocalTarget {
            name: Arc::from(name),
            core: core as i64,
        }),
        dims: l.and_then(|l| l.dims.clone()),
        extra: l.and_then(|l| l.extra.clone()),
        ..MemoryLocation::unplaced(
            remote(name, core),
            l.map_or_else(|| Arc::from("DRAM"), |l| l.mem_type.clone()),
        )
    };
    let locations = if target.locations.is_empty() {
        vec![loc(&target.name, None)]
    } else {
        target.locations.iter().map(|l| loc(&l.name, Some(l))).collect()
    };
    MemoryLocationSet {
        name: remote(&target.name, core),
        kind: Some(Arc::from("Internal")),
        dtype: target.dtype.clone(),
        tensor_shape: target.tensor_shape.clone(),
        partition_dim: target.partition_dim,
        addr_space: None,
        locations,
        extra: target.extra.clone(),
    }
}

fn base_instruction(name: Arc<str>, opcode: Opcode, x: &Instruction, op: OpFields) -> Instruction {
    Instruction {
        engine: x.engine.clone(),
        predicates: x.predicates.clone(),
        dependencies: x.dependencies.clone(),
        ..Instruction::bare(name, opcode, op)
    }
}

fn barrier(name: Arc<str>, x: &Instruction, n: usize) -> Instruction {
    base_instruction(name, Opcode::CORE_BARRIER, x, all_cores_op(n))
}

fn dma(name: Arc<str>, x: &Instruction, src: Argument, dst: Argument, acc: Option<AccOp>) -> Instruction {
    let mut i = base_instruction(name, Opcode::DMA_COPY, x, OpFields::DmaCopy { mode: None });
    i.ins.push(src);
    i.outs.push(dst);
    if let Some(op) = acc {
        let mut m = Map::new();
        let s = match op {
            AccOp::Add => "add",
            AccOp::Max => "max",
            AccOp::Min => "min",
        };
        m.insert("accumulate".into(), Value::from(s));
        i.extra = Some(Arc::new(m));
    }
    i
}

/// Building the sequence of one group on one core.
struct Seq<'a, 'm> {
    orig: &'a [Module],
    gi: usize,
    g: &'a Group<'m>,
    facts: &'a Facts,
    c: usize,
    names: Names,
    axes: Vec<AxisId>,
    out: Vec<Instruction>,
    phase: usize,
    created: Vec<(Arc<str>, usize)>,
    proxies: Vec<ProxySpec>,
}

impl<'a, 'm> Seq<'a, 'm> {
    fn x(&self) -> &'m Instruction {
        self.g.sites[self.c].inst
    }

    fn n(&self) -> usize {
        self.g.n()
    }

    fn function(&self, core: usize) -> &'a Function {
        // Present on every core: the concretized verifier passed (1191).
        self.orig[core]
            .function(&self.g.function)
            .expect("the group's function exists on every core")
    }

    fn push_barrier(&mut self, suffix: &str) {
        let name = if suffix.is_empty() {
            self.names.x.clone()
        } else {
            self.names.s(suffix)
        };
        self.out.push(barrier(name, self.x(), self.n()));
        self.phase += 1;
    }

    fn push(&mut self, inst: Instruction) {
        self.created.push((inst.name.clone(), self.phase));
        self.out.push(inst);
    }

    fn set_of(&self, core: usize, arg: &'m Argument) -> &'a MemoryLocationSet {
        operand(self.function(core), arg).expect("checked when the facts were gathered")
    }

    /// `ins[0]` / `outs[0]` of core `p`'s copy, in this core's expressions.
    fn operand_of(&self, ctxs: &mut [Context], p: usize, outs: bool) -> Result<(Argument, &'a MemoryLocationSet)> {
        let xp = self.g.sites[p].inst;
        let arg = if outs { &xp.outs[0] } else { &xp.ins[0] };
        let set = self.set_of(p, arg);
        let a = if p == self.c {
            arg.clone()
        } else {
            {
                let (src, dst) = pair(ctxs, p, self.c);
                import_arg(src, arg, dst, &self.axes)?
            }
        };
        Ok((a, set))
    }

    /// Core p's output as this core writes it: its own, a shared set's
    /// (core 0's location for everyone), or through the proxy on core p.
    fn output_on(&mut self, ctxs: &mut [Context], p: usize) -> Result<(Argument, &'a MemoryLocationSet)> {
        let (mut a, set) = self.operand_of(ctxs, p, true)?;
        if p != self.c && !self.facts.out_shared {
            retarget(&mut a, p);
            self.proxy(set, p);
        }
        Ok((a, set))
    }

    fn proxy(&mut self, target: &MemoryLocationSet, core: usize) {
        let name = remote(&target.name, core);
        if !self.proxies.iter().any(|p| p.name == name) {
            self.proxies.push(ProxySpec {
                group: self.gi,
                name,
                target: target.clone(),
                core,
            });
        }
    }

    /// The DRAM stage of core p as this core writes it.
    fn stage_on(&mut self, ctxs: &mut [Context], p: usize) -> (Argument, MemoryLocationSet) {
        let set = stage_set(&self.names, &self.facts.dtype, self.facts.count);
        let name = if p == self.c {
            set.name.clone()
        } else {
            remote(&set.name, p)
        };
        if p != self.c {
            self.proxy(&set, p);
        }
        (
            stage_arg(&mut ctxs[self.c], &name, &self.facts.dtype, self.facts.count),
            set,
        )
    }

    fn chunk(&self, ctxs: &mut [Context], arg: &Argument, set: &MemoryLocationSet, j: usize) -> Result<Argument> {
        let (w, c) = self.facts.period.expect("AllReduce has a scatter period");
        let bad = || {
            fail(
                9102,
                "AllReduce scatters over the first non-partition dim whose extent is >= 4 and divisible by N",
                format!(
                    "AllReduce {} of function {}: chunk {j} of an access to {} (ap {:?}) is not an access pattern",
                    self.g.name,
                    self.g.function,
                    set.name,
                    arg.ap().unwrap_or(&[])
                ),
            )
        };
        let dims = arg.ap().ok_or_else(bad)?;
        let ch = chunk_ap(dims, w, c, j as i64).ok_or_else(bad)?;
        let geo = geometry(set).ok_or_else(overflow)?;
        chunk_arg(&mut ctxs[self.c], arg, &geo, &ch)
    }

    fn sb2sb(&mut self, ctxs: &mut [Context]) -> Result<()> {
        let x = self.x();
        let (src, _) = self.operand_of(ctxs, self.c, false)?;
        let (dst, _) = self.operand_of(ctxs, 1 - self.c, true)?;
        self.push_barrier("before");
        let mut i = base_instruction(x.name.clone(), Opcode::GPSIMD_SB2SB, x, OpFields::None);
        i.ins.push(src);
        i.outs.push(dst);
        self.push(i);
        self.push_barrier("after");
        Ok(())
    }

    fn send_recv(&mut self, ctxs: &mut [Context], staged: bool) -> Result<()> {
        let x = self.x();
        let r = self.g.send[self.c];
        let (src, _) = self.operand_of(ctxs, self.c, false)?;
        self.push_barrier("before");
        if staged {
            let (stage, _) = self.stage_on(ctxs, r);
            self.push(dma(self.names.s("send"), x, src, stage, None));
            self.push_barrier("mid");
            let (own_stage, _) = self.stage_on(ctxs, self.c);
            let (out, _) = self.operand_of(ctxs, self.c, true)?;
            self.push(dma(x.name.clone(), x, own_stage, out, None));
        } else {
            let (dst, _) = self.output_on(ctxs, r)?;
            self.push(dma(x.name.clone(), x, src, dst, None));
        }
        self.push_barrier("after");
        Ok(())
    }

    /// Gather-and-reduce within the core's replica group: its ins to slot q
    /// (its position) of the gather stage of every core of the group (its
    /// own by a local DMA, the peers' through proxies), a barrier, then
    /// outs ← slot 0, accumulated with slots 1…G−1 in group order.
    fn gather_reduce(&mut self, ctxs: &mut [Context]) -> Result<()> {
        let x = self.x();
        let c = self.c;
        let group = (self.facts.groups.iter())
            .find(|g| g.contains(&c))
            .cloned()
            .unwrap_or_else(|| (0..self.n()).collect());
        let q = group.iter().position(|&p| p == c).unwrap_or(0);
        let (count, dtype) = (self.facts.count, self.facts.dtype.clone());
        let set = gather_set(&self.names, &dtype, count, group.len());
        let (src, _) = self.operand_of(ctxs, c, false)?;
        self.push_barrier("before");
        for &p in &group {
            let name = if p == c {
                set.name.clone()
            } else {
                self.proxy(&set, p);
                remote(&set.name, p)
            };
            let dst = slot_arg(&mut ctxs[c], &name, &dtype, count, q);
            self.push(dma(self.names.s(&format!("gather_{p}")), x, src.clone(), dst, None));
        }
        self.push_barrier("gathered");
        let (out, _) = self.operand_of(ctxs, c, true)?;
        for j in 0..group.len() {
            let slot = slot_arg(&mut ctxs[c], &set.name, &dtype, count, j);
            let acc = if j == 0 { None } else { self.g.op };
            let name = if j + 1 == group.len() {
                x.name.clone()
            } else {
                self.names.s(&format!("reduce_{j}"))
            };
            self.push(dma(name, x, slot, out.clone(), acc));
        }
        self.push_barrier("after");
        Ok(())
    }

    /// Reduce-scatter (core c owns chunk c), barrier, all-gather.
    fn all_reduce(&mut self, ctxs: &mut [Context], staged: bool) -> Result<()> {
        let x = self.x();
        let (c, n) = (self.c, self.n());
        let op = self.g.op;
        let (src, src_set) = self.operand_of(ctxs, c, false)?;
        let target = |s: &mut Self, ctxs: &mut [Context], p: usize| -> Result<(Argument, MemoryLocationSet)> {
            if staged {
                Ok(s.stage_on(ctxs, p))
            } else {
                let (a, set) = s.output_on(ctxs, p)?;
                Ok((a, set.clone()))
            }
        };
        self.push_barrier("before");
        let (own, own_set) = target(self, ctxs, c)?;
        let src_c = self.chunk(ctxs, &src, src_set, c)?;
        let own_c = self.chunk(ctxs, &own, &own_set, c)?;
        self.push(dma(self.names.s("rs_init"), x, src_c, own_c.clone(), None));
        self.push_barrier("rs");
        for p in (0..n).filter(|&p| p != c) {
            let (dst, dst_set) = target(self, ctxs, p)?;
            let s = self.chunk(ctxs, &src, src_set, p)?;
            let d = self.chunk(ctxs, &dst, &dst_set, p)?;
            self.push(dma(self.names.s(&format!("rs_{p}")), x, s, d, op));
        }
        self.push_barrier("ag");
        for p in (0..n).filter(|&p| p != c) {
            let (dst, dst_set) = target(self, ctxs, p)?;
            let d = self.chunk(ctxs, &dst, &dst_set, c)?;
            self.push(dma(self.names.s(&format!("ag_{p}")), x, own_c.clone(), d, None));
        }
        if staged {
            self.push_barrier("mid");
            let (out, _) = self.operand_of(ctxs, c, true)?;
            self.push(dma(x.name.clone(), x, own, out, None));
        }
        self.push_barrier("after");
        Ok(())
    }
}

/// What replaces a collective in its block.
pub enum Replacement {
    /// The collective stays; a fence barrier goes before it (unless the
    /// instruction before it already is that fence).
    Fence(Box<Instruction>),
    Sequence(Vec<Instruction>),
}

fn taken(g: &Group<'_>, core: usize, name: &str, what: &str) -> crate::Error {
    fail(
        9104,
        "names created by lowering a collective are not taken",
        format!(
            "{} {} of function {}: the {what} {name} it creates is already a name on core {core}",
            g.kind.name(),
            g.name,
            g.function
        ),
    )
}

/// Whether the instruction before `x` in its block is a CoreBarrier named `fence`.
fn already_fenced(blocks: &[Block], x: &str, fence: &str) -> bool {
    for b in blocks {
        for (i, inst) in b.instructions.iter().enumerate() {
            if &*inst.name == x {
                return i > 0 && {
                    let prev = &b.instructions[i - 1];
                    prev.opcode == Opcode::CORE_BARRIER && &*prev.name == fence
                };
            }
            if already_fenced(inst.nested_blocks(), x, fence) {
                return true;
            }
        }
    }
    false
}

/// Replace the collectives of `blocks` (`seqs`) and point the dependencies
/// on a replaced collective at its completion barrier (`from`), loop bodies
/// included, in one walk. The created instructions carry the collective's
/// dependencies, so they are redirected too.
fn rewrite(blocks: &mut [Block], seqs: &mut HashMap<Arc<str>, Replacement>, from: &Redirect<'_>) {
    for b in blocks {
        let mut here = false;
        for inst in &mut b.instructions {
            if let OpFields::Loop { blocks, .. } = &mut inst.op {
                rewrite(blocks, seqs, from);
            }
            here |= inst.opcode == Opcode::COLLECTIVE_COMPUTE && seqs.contains_key(&inst.name);
        }
        if here {
            replace_top(b, seqs);
        }
        // Loop bodies were redirected above; created instructions are no loops.
        for inst in &mut b.instructions {
            from.apply(inst);
        }
    }
}

/// Replace the collectives at the top level of one block. The runs between
/// them move as runs (an Instruction is large; most of a block is kept).
fn replace_top(b: &mut Block, seqs: &mut HashMap<Arc<str>, Replacement>) {
    let at: Vec<usize> = (b.instructions.iter().enumerate())
        .filter(|(_, i)| i.opcode == Opcode::COLLECTIVE_COMPUTE && seqs.contains_key(&i.name))
        .map(|(k, _)| k)
        .collect();
    let mut old = std::mem::take(&mut b.instructions).into_iter();
    let mut out = Vec::with_capacity(old.len() + 8 * at.len());
    let mut next = 0;
    for k in at {
        out.extend(old.by_ref().take(k - next));
        next = k + 1;
        let Some(inst) = old.next() else { break };
        match seqs.remove(&inst.name) {
            Some(Replacement::Sequence(seq)) => {
                out.extend(seq);
                continue;
            }
            Some(Replacement::Fence(fence)) => {
                let fenced = out
                    .last()
                    .is_some_and(|p: &Instruction| p.opcode == Opcode::CORE_BARRIER && p.name == fence.name);
                if !fenced {
                    out.push(*fence);
                }
            }
            None => {}
        }
        out.push(inst);
    }
    out.extend(old);
    b.instructions = out;
}

/// The dependency redirects of one function: old name → new one.
struct Redirect<'a> {
    from: Option<&'a HashMap<Arc<str>, Arc<str>>>,
    filter: NameFilter,
}

impl<'a> Redirect<'a> {
    fn new(from: Option<&'a HashMap<Arc<str>, Arc<str>>>) -> Self {
        let filter = NameFilter::new(from.into_iter().flat_map(|m| m.keys()).map(|k| &**k));
        Redirect { from, filter }
    }

    /// Dependencies on a collective that no longer exists by name now name
    /// its completion barrier.
    fn apply(&self, inst: &mut Instruction) {
        let Some(from) = self.from else { return };
        for d in inst.dependencies.iter_mut().flatten() {
            if !self.filter.may_hold(&d.name) {
                continue;
            }
            if let Some(to) = from.get(&d.name) {
                *d = Dependency {
                    name: to.clone(),
                    ..d.clone()
                };
            }
        }
    }
}

/// The created data instructions of one group on one core, with the phase
/// each runs in.
pub type Created = Vec<(Arc<str>, usize)>;

/// A collective's replacement on one core, its created data instructions
/// with their phases, and the proxies they need.
type Built = (Replacement, Created, Vec<ProxySpec>);

/// Each core's map: function → (collective name → what replaces it).
pub type Replacements = Vec<HashMap<Arc<str>, HashMap<Arc<str>, Replacement>>>;

/// Each core's map: function → (old dependency name → new one).
pub type Redirects = Vec<HashMap<Arc<str>, HashMap<Arc<str>, Arc<str>>>>;

/// The sequence of group `gi` on core `c`, or its fence.
fn build_one(
    orig: &[Module],
    gi: usize,
    g: &Group<'_>,
    facts: &Facts,
    plan: Plan,
    c: usize,
    ctxs: &mut [Context],
) -> Result<Built> {
    let x = g.sites[c].inst;
    let mut seq = Seq {
        orig,
        gi,
        g,
        facts,
        c,
        names: Names { x: x.name.clone() },
        axes: g.sites[c].axes(),
        out: Vec::new(),
        phase: 0,
        created: Vec::new(),
        proxies: Vec::new(),
    };
    match plan {
        Plan::Fence => {
            let fence = barrier(seq.names.s("fence"), x, g.n());
            return Ok((Replacement::Fence(Box::new(fence)), Vec::new(), Vec::new()));
        }
        Plan::Sb2sb => seq.sb2sb(ctxs)?,
        Plan::Gather => seq.gather_reduce(ctxs)?,
        Plan::Direct | Plan::Staged if g.kind == Kind::ALL_REDUCE => seq.all_reduce(ctxs, plan == Plan::Staged)?,
        Plan::Direct | Plan::Staged => seq.send_recv(ctxs, plan == Plan::Staged)?,
    }
    Ok((Replacement::Sequence(seq.out), seq.created, seq.proxies))
}

/// The lowering of every group, not yet in the modules (its expressions are
/// already in the cores' contexts): per core, the replacement of each
/// collective, the dependency redirects and the new sets of each function.
pub struct Lowering {
    pub replace: Replacements,
    pub redirect: Redirects,
    pub new_sets: Vec<HashMap<Arc<str>, Vec<MemoryLocationSet>>>,
    /// Per group and core, the created data-moving instructions with the
    /// phase (the number of the group's barriers before it) each runs in.
    pub created: Vec<Vec<Created>>,
}

impl Lowering {
    /// The created instructions of core `c`'s function `f`, by name.
    pub fn instructions(&self, c: usize, f: &str) -> HashMap<&str, &Instruction> {
        let mut out = HashMap::new();
        for rep in self.replace[c].get(f).into_iter().flat_map(|m| m.values()) {
            if let Replacement::Sequence(seq) = rep {
                for i in seq {
                    out.insert(&*i.name, i);
                }
            }
        }
        out
    }
}

/// Per core and function, the names this pass could create that a user
/// already took (instructions, sets, locations): created names must be free
/// (9104). Only candidate names are kept, so the scan allocates little.
pub type UserNames = Vec<HashMap<Arc<str>, HashSet<Arc<str>>>>;

/// Every name lowering may create in a group's function, whatever the plan,
/// each given to `emit`.
fn candidates(orig: &[Module], g: &Group<'_>, emit: &mut dyn FnMut(std::fmt::Arguments<'_>)) {
    let n = g.n();
    let x = &g.name;
    for s in [
        "before",
        "after",
        "mid",
        "send",
        "rs_init",
        "rs",
        "ag",
        "fence",
        "stage",
        "stage_dram",
    ] {
        emit(format_args!("{x}_{s}"));
    }
    for t in 0..n {
        emit(format_args!("{x}_rs_{t}"));
        emit(format_args!("{x}_ag_{t}"));
        emit(format_args!("{x}_stage_remote_{t}"));
        emit(format_args!("{x}_stage_dram_remote_{t}"));
    }
    for (c, site) in g.sites.iter().enumerate() {
        let Some(f) = orig[c].function(&g.function) else {
            continue;
        };
        let Some(set) = site.inst.outs.first().and_then(|a| operand(f, a)) else {
            continue;
        };
        for t in 0..n {
            emit(format_args!("{}_remote_{t}", set.name));
            for l in &set.locations {
                emit(format_args!("{}_remote_{t}", l.name));
            }
        }
    }
}

/// The candidate names of one function's groups: a filter made without
/// keeping them (first byte and length, then a 64-bit hash of the whole
/// name), and the names themselves, made only when a user name passes both
/// (rarely: most kernels take none). The hash stage matters because the
/// candidates share their collective's prefix, so many user names of the
/// same shape pass the first test.
struct Candidates<'g, 'm> {
    groups: Vec<&'g Group<'m>>,
    filter: NameFilter,
    hasher: hashbrown::DefaultHashBuilder,
    hashes: HashSet<u64>,
    names: Option<HashSet<String>>,
}

impl<'g, 'm> Candidates<'g, 'm> {
    fn new(orig: &[Module], groups: Vec<&'g Group<'m>>) -> Self {
        let mut filter = NameFilter::default();
        let hasher = hashbrown::DefaultHashBuilder::default();
        let mut hashes = HashSet::new();
        let mut buf = String::new();
        for g in &groups {
            candidates(orig, g, &mut |args| {
                buf.clear();
                let _ = std::fmt::Write::write_fmt(&mut buf, args);
                filter.add(&buf);
                hashes.insert(hasher.hash_one(buf.as_str()));
            });
        }
        Candidates {
            groups,
            filter,
            hasher,
            hashes,
            names: None,
        }
    }

    /// False only when `name` is not a candidate.
    fn may_hold(&self, name: &str) -> bool {
        self.filter.may_hold(name) && self.hashes.contains(&self.hasher.hash_one(name))
    }

    fn names(&mut self, orig: &[Module]) -> &HashSet<String> {
        self.names.get_or_insert_with(|| {
            let mut set = HashSet::new();
            for g in &self.groups {
                candidates(orig, g, &mut |args| {
                    set.insert(args.to_string());
                });
            }
            set
        })
    }
}

pub fn user_names_of(orig: &[Module], groups: &[Group<'_>]) -> UserNames {
    let mut by_fn: HashMap<Arc<str>, Vec<&Group<'_>>> = HashMap::new();
    for g in groups {
        by_fn.entry(g.function.clone()).or_default().push(g);
    }
    let mut cand: Vec<(Arc<str>, Candidates<'_, '_>)> = by_fn
        .into_iter()
        .map(|(f, gs)| (f, Candidates::new(orig, gs)))
        .collect();
    orig.iter()
        .map(|m| {
            let mut out: HashMap<Arc<str>, HashSet<Arc<str>>> = HashMap::new();
            for (fname, cands) in &mut cand {
                let Some(f) = m.function(fname) else { continue };
                let mut hits: Vec<&Arc<str>> = Vec::new();
                let filter = &*cands;
                f.walk(&mut |i| {
                    if filter.may_hold(&i.name) {
                        hits.push(&i.name);
                    }
                });
                let set_names = f.allocations.iter().map(|s| &s.name);
                let loc_names = f.allocations.iter().flat_map(|s| &s.locations).map(|l| &l.name);
                hits.extend(set_names.chain(loc_names).filter(|n| filter.may_hold(n)));
                let mut taken: HashSet<Arc<str>> = HashSet::new();
                if !hits.is_empty() {
                    let names = cands.names(orig);
                    taken.extend(hits.into_iter().filter(|n| names.contains(&***n)).cloned());
                }
                out.insert(fname.clone(), taken);
            }
            out
        })
        .collect()
}

/// Lower every group following `plans`, without touching `orig` (new
/// expressions go into `ctxs`, the cores' contexts).
pub fn plan(
    orig: &[Module],
    ctxs: &mut [Context],
    users: &UserNames,
    groups: &[Group<'_>],
    facts: &[Facts],
    plans: &[Plan],
) -> Result<Lowering> {
    let n = orig.len();
    let mut low = Lowering {
        replace: Vec::with_capacity(n),
        redirect: Vec::with_capacity(n),
        new_sets: Vec::with_capacity(n),
        created: vec![vec![Vec::new(); n]; groups.len()],
    };
    let mut proxies: Vec<ProxySpec> = Vec::new();
    let mut stages: Vec<(usize, MemoryLocationSet)> = Vec::new();
    for c in 0..n {
        let mut per_fn: HashMap<Arc<str>, HashMap<Arc<str>, Replacement>> = HashMap::new();
        let mut redirect: HashMap<Arc<str>, HashMap<Arc<str>, Arc<str>>> = HashMap::new();
        // Created names go in as they are made (two groups may not create one name).
        let mut made: HashMap<Arc<str>, HashSet<Arc<str>>> = HashMap::new();
        for (gi, g) in groups.iter().enumerate() {
            let f = orig[c].function(&g.function).expect("checked by the verifier");
            let (rep, names, px) = build_one(orig, gi, g, &facts[gi], plans[gi], c, ctxs)?;
            let taken_here = made.entry(g.function.clone()).or_default();
            check_names(g, c, f, &rep, &users[c][&g.function], taken_here)?;
            if let Replacement::Sequence(seq) = &rep {
                if !seq.iter().any(|i| i.name == g.name) {
                    let after = Arc::from(format!("{}_after", g.name));
                    redirect
                        .entry(g.function.clone())
                        .or_default()
                        .insert(g.name.clone(), after);
                }
            }
            if plans[gi] == Plan::Staged && c == 0 {
                let names = Names { x: g.name.clone() };
                stages.push((gi, stage_set(&names, &facts[gi].dtype, facts[gi].count)));
            }
            if plans[gi] == Plan::Gather && c == 0 {
                let names = Names { x: g.name.clone() };
                let size = facts[gi].groups.first().map_or(n, Vec::len);
                stages.push((gi, gather_set(&names, &facts[gi].dtype, facts[gi].count, size)));
            }
            per_fn
                .entry(g.function.clone())
                .or_default()
                .insert(g.name.clone(), rep);
            low.created[gi][c] = names;
            for p in px {
                let same_fn = |q: &ProxySpec| groups[q.group].function == g.function;
                if !proxies.iter().any(|q| q.name == p.name && same_fn(q)) {
                    proxies.push(p);
                }
            }
        }
        low.replace.push(per_fn);
        low.redirect.push(redirect);
    }
    for (c, u) in users.iter().enumerate() {
        low.new_sets.push(new_sets(orig, c, u, groups, &stages, &proxies)?);
    }
    Ok(low)
}

/// Put a checked lowering into the modules.
pub fn commit(low: Lowering, cores: &mut [Module]) {
    let parts = low.replace.into_iter().zip(low.redirect).zip(low.new_sets);
    for (m, ((mut replace, redirect), mut sets)) in cores.iter_mut().zip(parts) {
        for f in &mut m.functions {
            if let Some(new) = sets.remove(&f.name) {
                f.allocations.extend(new);
            }
            let mut seqs = replace.remove(&f.name).unwrap_or_default();
            let from = redirect.get(&f.name);
            if !seqs.is_empty() || from.is_some() {
                rewrite(&mut f.basic_blocks, &mut seqs, &Redirect::new(from));
            }
        }
    }
}

/// Created instruction and stage names must be free on this core.
fn check_names(
    g: &Group<'_>,
    c: usize,
    f: &Function,
    rep: &Replacement,
    users: &HashSet<Arc<str>>,
    made: &mut HashSet<Arc<str>>,
) -> Result<()> {
    match rep {
        Replacement::Fence(fence) => {
            if users.contains(&fence.name) && !already_fenced(&f.basic_blocks, &g.name, &fence.name) {
                return Err(taken(g, c, &fence.name, "instruction"));
            }
        }
        Replacement::Sequence(seq) => {
            for i in seq.iter().filter(|i| i.name != g.name) {
                if users.contains(&i.name) || !made.insert(i.name.clone()) {
                    return Err(taken(g, c, &i.name, "instruction"));
                }
            }
        }
    }
    Ok(())
}

/// The stage sets and proxies of core `c`, per function: the same list on
/// every core, in the order lowering first needed them. An existing set named
/// like a proxy is reused when it is that proxy; any other clash is 9104.
fn new_sets(
    orig: &[Module],
    c: usize,
    users: &HashMap<Arc<str>, HashSet<Arc<str>>>,
    groups: &[Group<'_>],
    stages: &[(usize, MemoryLocationSet)],
    proxies: &[ProxySpec],
) -> Result<HashMap<Arc<str>, Vec<MemoryLocationSet>>> {
    let mut out: HashMap<Arc<str>, Vec<MemoryLocationSet>> = HashMap::new();
    for fo in &orig[c].functions {
        let Some(users) = users.get(&fo.name) else { continue };
        let mut add = Vec::new();
        for (gi, st) in stages.iter().filter(|(gi, _)| groups[*gi].function == fo.name) {
            for name in std::iter::once(&st.name).chain(st.locations.iter().map(|l| &l.name)) {
                if users.contains(name) {
                    return Err(taken(&groups[*gi], c, name, "stage"));
                }
            }
            add.push(st.clone());
        }
        for p in proxies.iter().filter(|p| groups[p.group].function == fo.name) {
            let proxy = proxy_set(&p.target, p.core);
            match fo.memory_location_set(&p.name) {
                Some(existing) if is_same_proxy(existing, &proxy) => continue,
                Some(_) => return Err(taken(&groups[p.group], c, &p.name, "proxy set")),
                None => {}
            }
            for l in &proxy.locations {
                if users.contains(&l.name) && l.name != proxy.name {
                    return Err(taken(&groups[p.group], c, &l.name, "proxy location"));
                }
            }
            add.push(proxy);
        }
        if !add.is_empty() {
            out.insert(fo.name.clone(), add);
        }
    }
    Ok(out)
}

fn is_same_proxy(existing: &MemoryLocationSet, want: &MemoryLocationSet) -> bool {
    existing.locations.len() == want.locations.len()
        && existing
            .locations
            .iter()
            .zip(&want.locations)
            .all(|(a, b)| a.name == b.name && a.remote_local_target == b.remote_local_target)
}
