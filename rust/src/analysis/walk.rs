//! The dynamic order of instruction instances in one function (contract §3.6,
//! "Order between cores"): blocks in order, `Loop` bodies unrolled over their
//! IVs. An instance exists iff its own mask and every enclosing Loop's mask are
//! not 0; a mask that stays undecided (runtime values) is reported as such, so
//! the race checker can count it as may-fire for accesses but not for barriers,
//! and the simulator can refuse it.

use hashbrown::HashMap;

use crate::bir::instruction::{Block, Instruction, OpFields};
use crate::bir::module::Function;
use crate::error::{Error, Result};
use crate::pelican::{eval_mask, AffinePredicate, AxisId, Bindings, Context, ExprId, Node};

/// Whether an existing instance's mask is known true or only may-fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    True,
    Undecided,
}

/// One instance of an instruction, as the walk reaches it.
pub struct Instance<'a, 'm> {
    pub inst: &'m Instruction,
    /// Depth-first (pre-order) index of the instruction in its function, Loops counted.
    pub pos: u32,
    /// Index of the top-level block the instance is in.
    pub block: u32,
    /// Position, in that block, of its top-level ancestor (itself when not in a Loop).
    pub top: u32,
    pub mask: Mask,
    /// Shard and enclosing loop IVs bound (by the IV's expression id).
    pub bindings: &'a Bindings,
}

/// The most instruction instances (loop iterations included) one function may
/// have before a walk over it gives up (contract §3.6, §3.10: 9306 in the race
/// checkers; the simulator and lower_local_collectives use the same bound).
pub const MAX_INSTANCES: u64 = 100_000_000;

/// The most instances (iterations included) a walk visits, and the error it
/// raises past that: the caller's code (9306 in the race checker).
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    pub max: u64,
    pub code: u32,
    pub location: &'static str,
}

/// Walk `function` in execution order with the shard bound to `shard` (None:
/// left symbolic), calling `visit` on every existing instance of every
/// instruction (Loops themselves included, before their iterations).
pub fn walk_function<'m>(
    ctx: &Context,
    function: &'m Function,
    shard: Option<i64>,
    limit: Limit,
    visit: &mut dyn FnMut(&Instance<'_, 'm>) -> Result<()>,
) -> Result<()> {
    walk_function_pruned(ctx, function, shard, limit, &|_, _| None, visit)
}

/// A subtree [`walk_function_pruned`] does not enter: it counts `instances`
/// against the limit instead — the caller's upper bound, e.g.
/// [`static_instances`], `exact` when no mask can lower it (no predicates in
/// the subtree).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skip {
    pub instances: u64,
    pub exact: bool,
}

/// What [`walk_function_pruned`] asks of each instruction (by depth-first
/// position) before it visits it: `Some` skips the instruction and its
/// subtree (no mask evaluated, nothing visited); `None` walks it as usual.
pub type Prune<'p> = &'p dyn Fn(&Instruction, u32) -> Option<Skip>;

/// [`walk_function`] that skips the subtrees `prune` names (by instruction and
/// depth-first position), so a caller interested in a few instructions pays
/// for those only. A skipped subtree whose bound would pass the limit is
/// walked after all (or, when its count is exact, raises the limit error at
/// once), so the limit error stays exact.
pub fn walk_function_pruned<'m>(
    ctx: &Context,
    function: &'m Function,
    shard: Option<i64>,
    limit: Limit,
    prune: Prune<'_>,
    visit: &mut dyn FnMut(&Instance<'_, 'm>) -> Result<()>,
) -> Result<()> {
    let mut w = Walker {
        ctx,
        limit,
        prune,
        function: &function.name,
        count: 0,
        bindings: Bindings {
            shard,
            ..Default::default()
        },
        ivs: HashMap::new(),
    };
    let mut pos = 0u32;
    for (b, block) in function.basic_blocks.iter().enumerate() {
        for (t, inst) in block.instructions.iter().enumerate() {
            let at = Place {
                pos,
                block: b as u32,
                top: t as u32,
                undecided: false,
            };
            w.instruction(inst, at, visit)?;
            pos += subtree_size(inst);
        }
    }
    Ok(())
}

/// The most instances a walk can count for `inst`'s subtree (masks ignored):
/// 1 for an instruction, `1 + trip·(1 + Σ children)` for a Loop (its
/// iterations count too). Saturates at `u64::MAX`.
pub fn static_instances(ctx: &Context, inst: &Instruction) -> u64 {
    let OpFields::Loop { axis, blocks, .. } = &inst.op else {
        return 1;
    };
    let a = ctx.axis(*axis);
    let trip = if a.step > 0 && a.ub > a.lo {
        ((a.ub as i128 - a.lo as i128 + a.step as i128 - 1) / a.step as i128).min(u64::MAX as i128) as u64
    } else {
        0
    };
    let body = (blocks.iter().flat_map(|b| b.instructions.iter()))
        .fold(1u64, |acc, i| acc.saturating_add(static_instances(ctx, i)));
    trip.saturating_mul(body).saturating_add(1)
}

/// The pruning table of a walk that needs only some instructions: for each
/// instruction of `function` by depth-first position, `None` when it or an
/// instruction in its subtree is `needed` (the walk enters it), else the
/// [`Skip`] that counts its subtree. `needed` sees every instruction once, in
/// depth-first order.
pub fn prune_table<'m>(
    ctx: &Context,
    function: &'m Function,
    needed: &mut dyn FnMut(&'m Instruction) -> bool,
) -> Vec<Option<Skip>> {
    // Sized once: a table grown by doubling leaves its outgrown copies with
    // the allocator for its purge delay (the race check's peak memory).
    let mut table = Vec::with_capacity(function.instruction_count());
    for b in &function.basic_blocks {
        for i in &b.instructions {
            prune_subtree(ctx, i, needed, &mut table);
        }
    }
    table
}

/// Returns (whether the subtree is needed, whether it has predicates).
fn prune_subtree<'m>(
    ctx: &Context,
    inst: &'m Instruction,
    needed: &mut dyn FnMut(&'m Instruction) -> bool,
    table: &mut Vec<Option<Skip>>,
) -> (bool, bool) {
    let pos = table.len();
    table.push(None);
    let mut need = needed(inst);
    let mut predicated = !inst.predicates.is_empty();
    for b in inst.nested_blocks() {
        for child in &b.instructions {
            let (n, p) = prune_subtree(ctx, child, needed, table);
            need |= n;
            predicated |= p;
        }
    }
    if !need {
        table[pos] = Some(Skip {
            instances: static_instances(ctx, inst),
            exact: !predicated,
        });
    }
    (need, predicated)
}

/// Number of instructions in `inst`'s subtree (itself and nested bodies).
pub fn subtree_size(inst: &Instruction) -> u32 {
    1 + inst
        .nested_blocks()
        .iter()
        .flat_map(|b| b.instructions.iter())
        .map(subtree_size)
        .sum::<u32>()
}

#[derive(Clone, Copy)]
struct Place {
    pos: u32,
    block: u32,
    top: u32,
    /// Some enclosing Loop's mask is undecided.
    undecided: bool,
}

struct Walker<'c> {
    ctx: &'c Context,
    limit: Limit,
    prune: Prune<'c>,
    function: &'c str,
    count: u64,
    bindings: Bindings,
    /// The AffineIV node of each axis (None when no expression uses it).
    ivs: HashMap<AxisId, Option<ExprId>>,
}

impl Walker<'_> {
    fn tick(&mut self) -> Result<()> {
        self.count = self.count.saturating_add(1);
        if self.count > self.limit.max {
            return Err(Error::neuron_at(
                self.limit.code,
                format!("more than {} instruction instances in one function", self.limit.max),
                self.limit.location,
                format!("function {}", self.function),
            ));
        }
        Ok(())
    }

    fn mask(&self, preds: &[AffinePredicate]) -> Result<Option<Mask>> {
        if eval_mask(self.ctx, preds, &self.bindings)? == 0 {
            return Ok(None);
        }
        let mut m = Mask::True;
        for p in preds {
            if p.eval(self.ctx, &self.bindings)?.is_none() {
                m = Mask::Undecided;
            }
        }
        Ok(Some(m))
    }

    fn instruction<'m>(
        &mut self,
        inst: &'m Instruction,
        at: Place,
        visit: &mut dyn FnMut(&Instance<'_, 'm>) -> Result<()>,
    ) -> Result<()> {
        if let Some(skip) = (self.prune)(inst, at.pos) {
            let count = self.count.saturating_add(skip.instances);
            if count <= self.limit.max {
                self.count = count;
                return Ok(());
            }
            if skip.exact {
                self.count = self.limit.max;
                return self.tick();
            }
        }
        self.tick()?;
        let Some(mask) = self.mask(&inst.predicates)? else {
            return Ok(());
        };
        let mask = if at.undecided { Mask::Undecided } else { mask };
        visit(&Instance {
            inst,
            pos: at.pos,
            block: at.block,
            top: at.top,
            mask,
            bindings: &self.bindings,
        })?;
        if let OpFields::Loop { axis, blocks, .. } = &inst.op {
            let inner = Place {
                undecided: mask == Mask::Undecided,
                ..at
            };
            self.iterate(*axis, blocks, inner, visit)?;
        }
        Ok(())
    }

    fn iterate<'m>(
        &mut self,
        axis: AxisId,
        blocks: &'m [Block],
        at: Place,
        visit: &mut dyn FnMut(&Instance<'_, 'm>) -> Result<()>,
    ) -> Result<()> {
        let a = self.ctx.axis(axis).clone();
        let iv = *self
            .ivs
            .entry(axis)
            .or_insert_with(|| self.ctx.lookup(&Node::AffineIV { axis }));
        let saved = iv.and_then(|id| self.bindings.by_id.get(&id).copied());
        let mut v = a.lo;
        while a.step > 0 && v < a.ub {
            self.tick()?;
            if let Some(id) = iv {
                self.bindings.by_id.insert(id, v);
            }
            self.body(blocks, at, visit)?;
            v = match v.checked_add(a.step) {
                Some(n) => n,
                None => break,
            };
        }
        if let Some(id) = iv {
            match saved {
                Some(s) => self.bindings.by_id.insert(id, s),
                None => self.bindings.by_id.remove(&id),
            };
        }
        Ok(())
    }

    fn body<'m>(
        &mut self,
        blocks: &'m [Block],
        at: Place,
        visit: &mut dyn FnMut(&Instance<'_, 'm>) -> Result<()>,
    ) -> Result<()> {
        let mut pos = at.pos + 1;
        for block in blocks {
            for inst in &block.instructions {
                self.instruction(inst, Place { pos, ..at }, visit)?;
                pos += subtree_size(inst);
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------ step form

/// The same walk as [`walk_function`], one instance at a time: the simulator
/// steps several cores' walks in lockstep (each core runs to its next sync
/// point, then the others), which a callback walk cannot do. A cursor is
/// `Clone`: saving one and walking again repeats the same instances.
///
/// It visits exactly what `walk_function` visits, in the same order, with the
/// same positions, masks, bindings and instance limit (a test checks this on
/// generated modules).
#[derive(Clone)]
pub struct WalkCursor<'m> {
    function: &'m Function,
    limit: Limit,
    count: u64,
    bindings: Bindings,
    ivs: HashMap<AxisId, Option<ExprId>>,
    frames: Vec<Frame<'m>>,
}

/// One level of the walk: the top-level blocks, or one Loop's body.
#[derive(Clone)]
struct Frame<'m> {
    blocks: &'m [Block],
    block: usize,
    idx: usize,
    /// Position of the next instruction of this level.
    pos: u32,
    /// Top-level block and position of this level's instructions (inherited
    /// from the enclosing Loop inside a body).
    at: Place,
    looping: Option<LoopState>,
}

/// The iteration state of a Loop frame.
#[derive(Clone)]
struct LoopState {
    iv: Option<ExprId>,
    /// The IV's binding before the Loop (restored when it ends).
    saved: Option<i64>,
    /// The next IV value; None once the loop is done.
    next: Option<i64>,
    ub: i64,
    step: i64,
    /// Position of the body's first instruction.
    body_pos: u32,
}

impl<'m> WalkCursor<'m> {
    /// A cursor at the start of `function` with the shard bound to `shard`.
    pub fn new(function: &'m Function, shard: Option<i64>, limit: Limit) -> Self {
        WalkCursor {
            function,
            limit,
            count: 0,
            bindings: Bindings {
                shard,
                ..Default::default()
            },
            ivs: HashMap::new(),
            frames: vec![Frame {
                blocks: &function.basic_blocks,
                block: 0,
                idx: 0,
                pos: 0,
                at: Place {
                    pos: 0,
                    block: 0,
                    top: 0,
                    undecided: false,
                },
                looping: None,
            }],
        }
    }

    pub fn function(&self) -> &'m Function {
        self.function
    }

    /// Instances (and loop iterations) counted so far, as the limit counts them.
    pub fn count(&self) -> u64 {
        self.count
    }

    fn tick(&mut self) -> Result<()> {
        self.count += 1;
        if self.count > self.limit.max {
            return Err(Error::neuron_at(
                self.limit.code,
                format!("more than {} instruction instances in one function", self.limit.max),
                self.limit.location,
                format!("function {}", self.function.name),
            ));
        }
        Ok(())
    }

    /// The next existing instance in execution order, or None at the end.
    pub fn next_instance(&mut self, ctx: &Context) -> Result<Option<Instance<'_, 'm>>> {
        loop {
            let depth = self.frames.len();
            let Some(frame) = self.frames.last_mut() else {
                return Ok(None);
            };
            let Some(inst) = next_in_frame(frame, depth == 1) else {
                self.end_of_body()?;
                continue;
            };
            let at = frame.at;
            let here = Place { pos: frame.pos, ..at };
            frame.pos += subtree_size(inst);
            frame.idx += 1;
            self.tick()?;
            let Some(mask) = mask_of(ctx, &inst.predicates, &self.bindings)? else {
                continue;
            };
            let mask = if at.undecided { Mask::Undecided } else { mask };
            if let OpFields::Loop { axis, blocks, .. } = &inst.op {
                self.enter_loop(ctx, *axis, blocks, here, mask == Mask::Undecided);
            }
            return Ok(Some(Instance {
                inst,
                pos: here.pos,
                block: here.block,
                top: here.top,
                mask,
                bindings: &self.bindings,
            }));
        }
    }

    fn enter_loop(&mut self, ctx: &Context, axis: AxisId, blocks: &'m [Block], at: Place, undecided: bool) {
        let a = ctx.axis(axis).clone();
        let iv = *self
            .ivs
            .entry(axis)
            .or_insert_with(|| ctx.lookup(&Node::AffineIV { axis }));
        let saved = iv.and_then(|id| self.bindings.by_id.get(&id).copied());
        self.frames.push(Frame {
            blocks,
            // Exhausted: the first call starts the first iteration.
            block: blocks.len(),
            idx: 0,
            pos: at.pos + 1,
            at: Place { undecided, ..at },
            looping: Some(LoopState {
                iv,
                saved,
                next: Some(a.lo),
                ub: a.ub,
                step: a.step,
                body_pos: at.pos + 1,
            }),
        });
    }

    /// The innermost frame has no instruction left: start the Loop's next
    /// iteration, or leave the Loop (restoring its IV), or end the walk.
    fn end_of_body(&mut self) -> Result<()> {
        let Some(frame) = self.frames.last_mut() else {
            return Ok(());
        };
        let Some(lp) = frame.looping.as_mut() else {
            self.frames.pop();
            return Ok(());
        };
        match lp.next {
            Some(v) if lp.step > 0 && v < lp.ub => {
                lp.next = v.checked_add(lp.step);
                let (iv, body_pos) = (lp.iv, lp.body_pos);
                frame.block = 0;
                frame.idx = 0;
                frame.pos = body_pos;
                if let Some(id) = iv {
                    self.bindings.by_id.insert(id, v);
                }
                self.tick()
            }
            _ => {
                let (iv, saved) = (lp.iv, lp.saved);
                self.frames.pop();
                if let Some(id) = iv {
                    match saved {
                        Some(s) => self.bindings.by_id.insert(id, s),
                        None => self.bindings.by_id.remove(&id),
                    };
                }
                Ok(())
            }
        }
    }
}

/// The next instruction of a frame (moving across its blocks); at top level
/// the frame's place follows the block and position.
fn next_in_frame<'m>(frame: &mut Frame<'m>, top_level: bool) -> Option<&'m Instruction> {
    loop {
        let block = frame.blocks.get(frame.block)?;
        if let Some(inst) = block.instructions.get(frame.idx) {
            if top_level {
                frame.at.block = frame.block as u32;
                frame.at.top = frame.idx as u32;
            }
            return Some(inst);
        }
        frame.block += 1;
        frame.idx = 0;
    }
}

/// The mask of an instance: None when it is 0 (the instance does not exist).
fn mask_of(ctx: &Context, preds: &[AffinePredicate], bindings: &Bindings) -> Result<Option<Mask>> {
    if eval_mask(ctx, preds, bindings)? == 0 {
        return Ok(None);
    }
    let mut m = Mask::True;
    for p in preds {
        if p.eval(ctx, bindings)?.is_none() {
            m = Mask::Undecided;
        }
    }
    Ok(Some(m))
}
