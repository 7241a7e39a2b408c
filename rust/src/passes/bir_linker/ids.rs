//! Moving one core's instructions into another expression context and back.
//!
//! Expression ids are positions in a module's arena, and the written order of
//! AffExpr and Sum terms follows them. The linker therefore never unifies
//! nodes of different cores: `link` appends each core's arena whole (its ids
//! shifted by an offset), and `unlink` copies the nodes a core reaches in
//! ascending order. Both maps are monotone, so every core's expressions are
//! written with their terms in the same order before and after.

use std::sync::atomic::{AtomicBool, Ordering};

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::bir::{Argument, Block, Function, Instruction, IntOrExpr, OpFields, Opcode};
use crate::error::Result;
use crate::pelican::{Appended, AxisId, Context, ExprId, Node, RegId};

/// Blocks with at least this many instructions are copied on rayon's pool
/// (as the structural clone does).
const PAR_BLOCK: usize = 4096;

/// Marks an id a table or window does not map (a table maps every id the
/// core reaches; a window's misses are recorded, see [`IdMap::missed`]).
const UNMAPPED: u32 = u32::MAX;

/// One id space mapped into another: up by an offset (link), down by a
/// shift (unlink of a slice), down by a shift with a bound check (unlink of
/// a range `link` marked, trusted only if every id falls inside), or a table
/// indexed by the old id.
#[derive(Clone, Debug)]
pub(super) enum Ids {
    Offset(u32),
    Shift(u32),
    Window { lo: u32, len: u32 },
    Table(Vec<u32>),
}

impl Ids {
    #[inline]
    fn get(&self, id: u32) -> u32 {
        match self {
            Ids::Offset(o) => id.wrapping_add(*o),
            Ids::Shift(s) => id.wrapping_sub(*s),
            Ids::Window { lo, len } => match id.wrapping_sub(*lo) {
                x if x < *len => x,
                _ => UNMAPPED,
            },
            Ids::Table(t) => t.get(id as usize).copied().unwrap_or(UNMAPPED),
        }
    }

    fn is_identity(&self) -> bool {
        matches!(self, Ids::Offset(0) | Ids::Shift(0))
    }
}

/// Where a core's expression and loop-axis ids land in the target context.
#[derive(Debug)]
pub(super) struct IdMap {
    exprs: Ids,
    axes: Ids,
    /// Set when a window met an id outside it (the copy is then discarded).
    missed: AtomicBool,
}

impl IdMap {
    fn new(exprs: Ids, axes: Ids) -> IdMap {
        IdMap {
            exprs,
            axes,
            missed: AtomicBool::new(false),
        }
    }

    pub(super) fn offset(exprs: u32, axes: u32) -> IdMap {
        IdMap::new(Ids::Offset(exprs), Ids::Offset(axes))
    }

    pub(super) fn is_identity(&self) -> bool {
        self.exprs.is_identity() && self.axes.is_identity()
    }

    /// Did a copy through this map meet an id its window does not hold?
    pub(super) fn missed(&self) -> bool {
        self.missed.load(Ordering::Relaxed)
    }

    #[inline]
    fn checked(&self, id: u32, ids: &Ids) -> u32 {
        let x = ids.get(id);
        if x == UNMAPPED && matches!(ids, Ids::Window { .. }) {
            self.missed.store(true, Ordering::Relaxed);
        }
        x
    }

    #[inline]
    fn expr(&self, e: ExprId) -> ExprId {
        ExprId(self.checked(e.0, &self.exprs))
    }

    #[inline]
    fn axis(&self, a: AxisId) -> AxisId {
        AxisId(self.checked(a.0, &self.axes))
    }
}

// ------------------------------------------------------- ids of an instruction

/// An id held by an instruction (its own fields, not its nested blocks).
#[derive(Clone, Copy)]
enum Held {
    Expr(ExprId),
    Axis(AxisId),
}

/// Every expression and axis id the instruction's own fields hold. Must
/// visit exactly the fields [`copy_instruction`] rewrites
/// (`Argument::remap_exprs`, the predicates, `OpFields::remap_exprs`, a
/// Loop's axis).
fn held_ids(i: &Instruction, f: &mut impl FnMut(Held)) {
    for a in i.arguments() {
        if let Argument::Symbolic(s) = a {
            for &e in s.addrs.iter().chain(&s.tile_addrs).chain(&s.block_addrs) {
                f(Held::Expr(e));
            }
        }
    }
    for p in &i.predicates {
        f(Held::Expr(p.expr));
    }
    for x in i.op.expr_fields().into_iter().flatten() {
        if let IntOrExpr::Expr(e) = x {
            f(Held::Expr(e));
        }
    }
    if let OpFields::Loop { axis, .. } = &i.op {
        f(Held::Axis(*axis));
    }
}

/// How a copy changes an instruction besides moving its ids.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Barriers {
    /// CoreBarriers copied as they are.
    Keep,
    /// Every CoreBarrier takes back its per-core id (`local_id`, unlink).
    Restore,
}

/// Arguments cloned straight into the new vector (as `Vec::clone` does, no
/// move of each argument), then their expression ids rewritten in place
/// while still in cache.
fn copy_arguments(args: &[Argument], m: &IdMap) -> Vec<Argument> {
    let mut out = args.to_vec();
    for a in &mut out {
        a.remap_exprs(&|e| m.expr(e));
    }
    out
}

/// The op fields copied: ids rewritten when `remap`, a CoreBarrier's id
/// restored, a Loop's body copied the same way (not cloned, then walked).
fn copy_op(i: &Instruction, m: &IdMap, remap: bool, barriers: Barriers) -> OpFields {
    match &i.op {
        OpFields::Loop {
            axis,
            axis_extra,
            blocks,
        } => OpFields::Loop {
            axis: if remap { m.axis(*axis) } else { *axis },
            axis_extra: axis_extra.clone(),
            blocks: blocks
                .iter()
                .map(|b| Block {
                    name: b.name.clone(),
                    instructions: b
                        .instructions
                        .iter()
                        .map(|j| copy_instruction(j, m, barriers))
                        .collect(),
                    extra: b.extra.clone(),
                })
                .collect(),
        },
        op => {
            let mut op = op.clone();
            match &mut op {
                OpFields::CoreBarrier { id, local_id, .. }
                    if barriers == Barriers::Restore && i.opcode == Opcode::CORE_BARRIER =>
                {
                    *id = local_id.take().map(|b| *b)
                }
                op if remap => op.remap_exprs(&|e| m.expr(e)),
                _ => {}
            }
            op
        }
    }
}

/// Copy one instruction into the target context: cloned field by field
/// with its ids rewritten (and its barrier id restored) in the same pass,
/// nested blocks included — a plain clone when nothing changes.
pub(super) fn copy_instruction(i: &Instruction, m: &IdMap, barriers: Barriers) -> Instruction {
    let remap = !m.is_identity();
    let touched = matches!(i.op, OpFields::Loop { .. } | OpFields::CoreBarrier { .. });
    if !remap && (barriers == Barriers::Keep || !touched) {
        return i.clone();
    }
    let args = |v: &Vec<Argument>| if remap { copy_arguments(v, m) } else { v.clone() };
    let mut predicates = i.predicates.clone();
    if remap {
        for p in &mut predicates {
            p.expr = m.expr(p.expr);
        }
    }
    Instruction {
        name: i.name.clone(),
        opcode: i.opcode,
        engine: i.engine.clone(),
        ins: args(&i.ins),
        outs: args(&i.outs),
        indirection_ins: i.indirection_ins.as_ref().map(args),
        predicates,
        dependencies: i.dependencies.clone(),
        op: copy_op(i, m, remap, barriers),
        extra: i.extra.clone(),
    }
}

/// Copy `src` (a slice of a block's instructions) between `before` and
/// `after`, in parallel when it is large.
pub(super) fn copy_instructions(
    before: Vec<Instruction>,
    src: &[Instruction],
    after: Vec<Instruction>,
    m: &IdMap,
    barriers: Barriers,
) -> Vec<Instruction> {
    let mut out = before;
    out.reserve_exact(src.len() + after.len());
    if src.len() >= PAR_BLOCK {
        out.par_extend(src.par_iter().map(|i| copy_instruction(i, m, barriers)));
    } else {
        out.extend(src.iter().map(|i| copy_instruction(i, m, barriers)));
    }
    out.extend(after);
    out
}

/// A block copied whole into the target context.
pub(super) fn copy_block(b: &Block, m: &IdMap, barriers: Barriers) -> Block {
    Block {
        name: b.name.clone(),
        instructions: copy_instructions(Vec::new(), &b.instructions, Vec::new(), m, barriers),
        extra: b.extra.clone(),
    }
}

// ------------------------------------------------------------------ nodes

/// The map `append_context` will produce for a context appended to `dst`
/// when `dst` holds `nodes` nodes and `axes` axes (known before the copy, so
/// instructions can be copied while the arena is being built).
pub(super) fn append_map(nodes: usize, axes: usize) -> IdMap {
    IdMap::offset(nodes as u32, axes as u32)
}

/// Append all of `src` (nodes, axes, registers by name) to `dst`, never
/// sharing a node with what `dst` already holds: `src`'s ids shift by
/// `dst.len()`, its axes by the number of `dst`'s axes. One transfer
/// (`Context::extend_mapped`): no node is interned or re-digested. Returns
/// where `src` landed.
pub(super) fn append_context(dst: &mut Context, src: &Context) -> Result<Appended> {
    let (eoff, aoff) = (dst.len() as u32, dst.axes().len() as u32);
    for a in src.axes() {
        dst.add_axis(&a.name, a.lo, a.ub, a.step)?;
    }
    let regs: Vec<RegId> = (0..src.register_count() as u32)
        .map(RegId)
        .map(|r| dst.intern_name(src.register_name(r)))
        .collect();
    let unmoved = eoff == 0 && aoff == 0 && regs.iter().enumerate().all(|(i, r)| r.index() == i);
    if unmoved {
        // Into an empty arena (core 0): every id stays, nodes are cloned.
        dst.extend_mapped(src, 0..src.len() as u32, true, Node::clone)?;
    } else {
        dst.extend_mapped(src, 0..src.len() as u32, true, |node| {
            node.map_ids(
                |c| ExprId(c.0 + eoff),
                |a| AxisId(a.0 + aoff),
                |r| regs.get(r.index()).copied().unwrap_or(r),
            )
        })?;
    }
    Ok(Appended {
        lo: eoff,
        hi: dst.len() as u32,
        alo: aoff,
        ahi: dst.axes().len() as u32,
    })
}

/// The range `link` marked for core `c` of `n` in a linked module's arena,
/// copied whole, with a map that records any id outside it
/// ([`IdMap::missed`]: then the copy made through it is not the core's).
/// None when the arena has no such marks (e.g. a linked module read from
/// JSON) or the range cannot be copied one to one.
pub(super) fn marked_context(src: &Context, c: usize, n: usize) -> Option<(Context, IdMap)> {
    let segments = src.appended();
    let s = segments.get(c).filter(|_| segments.len() == n)?;
    let r = Slice {
        lo: s.lo,
        hi: s.hi,
        alo: s.alo,
        ahi: s.ahi,
    };
    copy_slice(src, r, true).ok().flatten()
}

/// The nodes and axes the functions reach, each list ascending.
fn reached(src: &Context, fns: &[&Function]) -> (Vec<ExprId>, Vec<AxisId>) {
    let mut nodes = vec![false; src.len()];
    let mut axes = vec![false; src.axes().len()];
    let mut stack: Vec<ExprId> = Vec::new();
    for f in fns {
        f.walk(&mut |i| {
            held_ids(i, &mut |h| match h {
                Held::Axis(a) => {
                    if let Some(x) = axes.get_mut(a.index()) {
                        *x = true;
                    }
                }
                Held::Expr(e) => stack.push(e),
            });
            while let Some(e) = stack.pop() {
                // An id outside the arena cannot come from a loaded module;
                // it is skipped rather than trusted.
                match nodes.get_mut(e.index()) {
                    Some(seen) if !*seen => *seen = true,
                    _ => continue,
                }
                let node = src.node(e);
                if let Node::AffineIV { axis } = node {
                    if let Some(x) = axes.get_mut(axis.index()) {
                        *x = true;
                    }
                }
                node.for_each_child(|c| stack.push(c));
            }
        });
    }
    let ids = |v: Vec<bool>| -> Vec<u32> { (0..v.len() as u32).filter(|&i| v[i as usize]).collect() };
    let (nodes, axes) = (ids(nodes), ids(axes));
    (
        nodes.into_iter().map(ExprId).collect(),
        axes.into_iter().map(AxisId).collect(),
    )
}

/// A fresh context holding what `fns` reach in `src`, and the map from
/// `src`'s ids into it. Relative order is kept either way (so is the written
/// order of terms). When the smallest self-contained id range holding what
/// the instructions reach is at most `budget` nodes (a module `link` made in
/// memory: each core's own range), that range is copied and ids shift by an
/// offset — for core 0 not at all, so its instructions are copied without a
/// rewrite; otherwise exactly the reached nodes are copied in ascending
/// order through a table.
pub(super) fn extract_context(src: &Context, fns: &[&Function], budget: usize) -> Result<(Context, IdMap)> {
    if let Some(r) = slice_of(src, fns).filter(|r| (r.hi - r.lo) as usize <= budget) {
        if let Some(out) = copy_slice(src, r, false)? {
            return Ok(out);
        }
    }
    let (nodes, axes) = reached(src, fns);
    copy_reached(src, &nodes, &axes)
}

/// Node range `[lo, hi)` and axis range `[alo, ahi)` of a slice.
#[derive(Clone, Copy)]
struct Slice {
    lo: u32,
    hi: u32,
    alo: u32,
    ahi: u32,
}

/// Smallest and one-past-largest of some ids (`(MAX, 0)` when none).
#[derive(Clone, Copy)]
struct Span(u32, u32);

impl Span {
    const EMPTY: Span = Span(u32::MAX, 0);

    fn add(&mut self, id: u32) {
        self.0 = self.0.min(id);
        self.1 = self.1.max(id.saturating_add(1));
    }
}

/// The smallest self-contained id range holding everything the functions
/// reach: from the ids the instructions hold, extended downwards until every
/// node in it has its children inside it (children precede parents, so one
/// descending pass does it and takes in every descendant), with the axis
/// range the Loops and the range's AffineIVs span. None when an id lies
/// outside the arena.
fn slice_of(src: &Context, fns: &[&Function]) -> Option<Slice> {
    let (mut nodes, mut axes) = (Span::EMPTY, Span::EMPTY);
    for f in fns {
        f.walk(&mut |i| {
            held_ids(i, &mut |h| match h {
                Held::Expr(e) => nodes.add(e.0),
                Held::Axis(a) => axes.add(a.0),
            })
        });
    }
    if nodes.0 > nodes.1 {
        nodes = Span(0, 0);
    }
    if nodes.1 as usize > src.len() {
        return None;
    }
    let mut id = nodes.1;
    while id > nodes.0 {
        id -= 1;
        let node = src.node(ExprId(id));
        node.for_each_child(|c| nodes.0 = nodes.0.min(c.0));
        if let Node::AffineIV { axis } = node {
            axes.add(axis.0);
        }
    }
    if axes.0 > axes.1 {
        axes = Span(0, 0);
    }
    if axes.1 as usize > src.axes().len() {
        return None;
    }
    // A range starting near 0 is taken from 0: then ids need no shift at all.
    let near = |s: Span| s.0 as usize <= 64 + (s.1 - s.0) as usize / 16;
    if near(nodes) && near(axes) {
        (nodes.0, axes.0) = (0, 0);
    }
    Some(Slice {
        lo: nodes.0,
        hi: nodes.1,
        alo: axes.0,
        ahi: axes.1,
    })
}

/// Copy a self-contained slice one to one (None if the copy would merge two
/// nodes, which only a context that breaks hash-consing could cause), in one
/// transfer (`Context::extend_mapped`). With `window` the map checks that
/// every id it rewrites lies in the slice.
fn copy_slice(src: &Context, r: Slice, window: bool) -> Result<Option<(Context, IdMap)>> {
    let mut ctx = Context::with_capacity((r.hi - r.lo) as usize);
    for a in r.alo..r.ahi {
        let ax = src.axis(AxisId(a));
        ctx.add_axis(&ax.name, ax.lo, ax.ub, ax.step)?;
    }
    // Registers in order of first use, as interning the nodes one by one would.
    let mut regs: HashMap<RegId, RegId> = HashMap::new();
    for id in r.lo..r.hi {
        if let Node::IntRuntimeValue { reg } | Node::OpaqueFn { name: reg, .. } = src.node(ExprId(id)) {
            if !regs.contains_key(reg) {
                regs.insert(*reg, ctx.intern_name(src.register_name(*reg)));
            }
        }
    }
    let one_to_one = ctx.extend_mapped(src, r.lo..r.hi, false, |node| {
        node.map_ids(
            |c| ExprId(c.0.wrapping_sub(r.lo)),
            |a| AxisId(a.0.wrapping_sub(r.alo)),
            |g| regs.get(&g).copied().unwrap_or(g),
        )
    })?;
    if !one_to_one {
        return Ok(None);
    }
    let map = match window {
        true => IdMap::new(
            Ids::Window {
                lo: r.lo,
                len: r.hi - r.lo,
            },
            Ids::Window {
                lo: r.alo,
                len: r.ahi - r.alo,
            },
        ),
        false => IdMap::new(Ids::Shift(r.lo), Ids::Shift(r.alo)),
    };
    Ok(Some((ctx, map)))
}

/// Copy exactly the reached nodes, ascending, through a table.
fn copy_reached(src: &Context, nodes: &[ExprId], axes: &[AxisId]) -> Result<(Context, IdMap)> {
    let mut ctx = Context::with_capacity(nodes.len());
    let mut axis_map = vec![UNMAPPED; src.axes().len()];
    for &a in axes {
        let ax = src.axis(a);
        axis_map[a.index()] = ctx.add_axis(&ax.name, ax.lo, ax.ub, ax.step)?.0;
    }
    let mut regs: HashMap<RegId, RegId> = HashMap::new();
    let mut expr_map = vec![UNMAPPED; src.len()];
    for &id in nodes {
        let node = src.node(id);
        if let Node::IntRuntimeValue { reg } | Node::OpaqueFn { name: reg, .. } = node {
            if !regs.contains_key(reg) {
                regs.insert(*reg, ctx.intern_name(src.register_name(*reg)));
            }
        }
        let mapped = node.map_ids(
            |c| ExprId(expr_map[c.index()]),
            |a| AxisId(axis_map[a.index()]),
            |r| regs.get(&r).copied().unwrap_or(r),
        );
        expr_map[id.index()] = ctx.insert_canonical(mapped, true)?.0;
    }
    Ok((ctx, IdMap::new(Ids::Table(expr_map), Ids::Table(axis_map))))
}
