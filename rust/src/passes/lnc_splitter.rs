//! lnc_splitter (pipeline order 8): clone → concretize → prune (seed 000 §1–6,
//! contract §3.1).
//!
//! `LncSplitter::run(vector<Module>)` turns M symbolic modules into M·N
//! per-core modules in `[module][core]` order: cores 0…N−2 get clones, the
//! original is concretized in place as core N−1. Concretizing a core stamps
//! `neuron_core_id`, renames `nc_symbolic` → `ncNN`, binds every ShardId to the
//! core, deletes the instructions whose mask is false there, and clears every
//! function's shard-id set. Cores are concretized in parallel (rayon) when
//! asked; each core works on its own module and expression arena, so the
//! output is identical whatever the thread count.

use hashbrown::{HashMap, HashSet};
use rayon::prelude::*;
use std::sync::Arc;

use crate::bir::carried::shards::{module_has_carried_shard, CarriedBinder};
use crate::bir::{Argument, Block, Function, Instruction, IntOrExpr, Module, OpFields};
use crate::error::{Error, Result};
use crate::pelican::{eval_mask, AffinePredicate, Bindings, Context, ExprId, Node};
use smallvec::SmallVec;

/// How the per-core copies are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CloneMode {
    /// A structural Rust clone (default): vectors copied, immutable parts shared.
    #[default]
    Structural,
    /// The compiler's `saveJson → loadJson` round trip (fidelity mode).
    Json,
}

#[derive(Clone, Copy, Debug)]
pub struct SplitOptions {
    pub lnc: usize,
    pub clone: CloneMode,
    /// Concretize cores on the rayon pool (output is identical either way).
    pub parallel: bool,
}

impl SplitOptions {
    pub fn new(lnc: usize) -> Self {
        SplitOptions {
            lnc,
            clone: CloneMode::Structural,
            parallel: true,
        }
    }
}

/// `LncSplitter::run(bir::Module&)`: the single-module overload is an abort
/// shim — the splitter only runs on the module list.
pub fn run_single_module() -> Error {
    Error::neuron_at(
        738,
        "false",
        "lnc_splitter.cpp:162",
        "lnc_splitter must run on the module list, not on a single module",
    )
}

/// cloneModule: a fresh module structurally equal to `src`.
pub fn clone_module(src: &Module, mode: CloneMode) -> Result<Module> {
    match mode {
        CloneMode::Structural => Ok(src.structural_clone()),
        CloneMode::Json => src.json_clone(),
    }
}

/// Every ShardId bound in the module must admit core ids 0…lnc−1; checked
/// before anything is mutated so a bad module fails cleanly.
fn check_shard_bounds(m: &Module, lnc: usize) -> Result<()> {
    for id in (0..m.ctx.len() as u32).map(ExprId) {
        if let Node::ShardId { ub } = m.ctx.node(id) {
            if (*ub as i128) < lnc as i128 {
                return Err(Error::pelican(
                    format!(
                        "module {} has a ShardId with ub {ub}, which cannot be bound to cores 0..{}",
                        m.name,
                        lnc - 1
                    ),
                    "lnc_splitter.cpp",
                ));
            }
        }
    }
    Ok(())
}

/// Split one symbolic module into `lnc` cores: returns the clones for cores
/// 0…N−2; `orig` is concretized in place as core N−1. With N == 1 nothing
/// happens (the fast path: no core id, name unchanged).
pub fn split_module(orig: &mut Module, opts: &SplitOptions) -> Result<Vec<Module>> {
    let n = opts.lnc;
    if n == 0 {
        return Err(Error::neuron_at(
            9000,
            "lnc_size >= 1",
            "lnc_splitter.cpp",
            "lnc_size must be at least 1",
        ));
    }
    if n == 1 {
        return Ok(Vec::new());
    }
    // The cores are told apart by name (explain, diff, the tail): one name
    // for two instructions is refused (9010, contract §1.7).
    crate::bir::names::refuse_repeated_names(orig, "split")?;
    check_shard_bounds(orig, n)?;
    // One walk over the carried values instead of one per core: a module
    // whose carried values hold no ShardId has nothing for the binder to do.
    let carried = module_has_carried_shard(orig);
    // All clones are taken before the original is mutated, so every core
    // starts from the same state. With the structural clone, cloning and
    // concretizing are fused per instruction (one pass over memory instead of
    // two, and pruned instructions are never copied). ShardIds in carried
    // fields are bound on the way; core 0's clone also tries the original's
    // core N−1 on them, so a field that cannot be bound is refused (9007)
    // before the original is touched.
    let last = (n - 1) as i64;
    let orig_ro: &Module = orig;
    let make = |c: usize| -> Result<Module> {
        let probe = (c == 0).then_some(last);
        match opts.clone {
            CloneMode::Structural => clone_concretized_probing(orig_ro, c as i64, probe, carried),
            CloneMode::Json => {
                let mut m = clone_module(orig_ro, CloneMode::Json)?;
                concretize_probing(&mut m, c as i64, probe, carried)?;
                Ok(m)
            }
        }
    };
    let clones: Vec<Module> = if opts.parallel {
        (0..n - 1).into_par_iter().map(make).collect::<Result<_>>()?
    } else {
        (0..n - 1).map(make).collect::<Result<_>>()?
    };
    concretize_probing(orig, last, None, carried)?;
    Ok(clones)
}

/// `LncSplitter::run(vector<Module>)`: M modules → M·N, module m core c at
/// index c + m·N.
pub fn split(mods: Vec<Module>, opts: &SplitOptions) -> Result<Vec<Module>> {
    if opts.lnc == 1 {
        return Ok(mods);
    }
    let mut out = Vec::with_capacity(mods.len() * opts.lnc);
    for mut m in mods {
        let clones = split_module(&mut m, opts)?;
        out.extend(clones);
        out.push(m);
    }
    Ok(out)
}

/// The per-core output directory: `<artifact_path>/nc<cc>`.
pub fn core_artifact_path(base: &str, core: i64) -> String {
    format!("{}/nc{core:02}", base.trim_end_matches('/'))
}

/// Steps (4a) and (4b) of concretizeModule: stamp the core id, rename
/// `nc_symbolic` → `ncNN`, point the artifact path at the core's directory.
fn stamp_core(m: &mut Module, core: i64) {
    m.set_neuron_core_id(core);
    if m.name.contains("nc_symbolic") {
        m.name = m.name.replace("nc_symbolic", &format!("nc{core:02}"));
    }
    if let Some(p) = &m.artifact_path {
        m.artifact_path = Some(core_artifact_path(p, core));
    }
}

/// cloneModule followed by concretizeModule, fused: every instruction is
/// cloned and bound while it is hot in cache, and an instruction pruned on
/// this core is never kept. The result is identical to
/// `concretize_module(&mut src.clone(), core)`.
pub fn clone_concretized(src: &Module, core: i64) -> Result<Module> {
    clone_concretized_probing(src, core, None, true)
}

/// `carried`: whether the module's carried values may hold a ShardId (when
/// not, the binder is skipped).
fn clone_concretized_probing(src: &Module, core: i64, probe: Option<i64>, carried: bool) -> Result<Module> {
    let mut ctx = src.ctx.clone();
    let binder = carried.then(|| CarriedBinder::new(core, probe));
    let mut cz = Concretizer::new(&mut ctx, core, binder);
    let mut functions = Vec::with_capacity(src.functions.len());
    for f in &src.functions {
        cz.deleted.clear();
        let mut blocks = Vec::with_capacity(f.basic_blocks.len());
        for b in &f.basic_blocks {
            let instructions = cz.cloned_instructions(&b.instructions)?;
            let mut block = Block {
                name: b.name.clone(),
                instructions,
                extra: b.extra.clone(),
            };
            if let Some(c) = &mut cz.carried {
                c.block(&mut block)?;
            }
            blocks.push(block);
        }
        if !cz.deleted.is_empty() {
            drop_dangling_dependencies(&mut blocks, &cz.deleted);
        }
        functions.push(Function {
            name: f.name.clone(),
            shard_ids: Vec::new(),
            registers: f.registers.clone(),
            allocations: f.allocations.clone(),
            basic_blocks: blocks,
            extra: f.extra.clone(),
        });
    }
    let carried = cz.carried;
    let mut m = Module {
        version: src.version,
        name: src.name.clone(),
        arch: src.arch,
        arch_given: src.arch_given,
        artifact_path: src.artifact_path.clone(),
        attributes: src.attributes.clone(),
        functions,
        extra: src.extra.clone(),
        ctx,
        spelling: src.spelling,
        implied_core: src.implied_core,
    };
    stamp_core(&mut m, core);
    if let Some(mut c) = carried {
        c.module_level(&mut m)?;
    }
    Ok(m)
}

/// concretizeModule: specialize a module to `core`, in the seed's order;
/// ShardIds in carried-through fields are bound too.
pub fn concretize_module(m: &mut Module, core: i64) -> Result<()> {
    concretize_probing(m, core, None, true)
}

fn concretize_probing(m: &mut Module, core: i64, probe: Option<i64>, carried: bool) -> Result<()> {
    // (4a) stamp the core id; (4b) per-core rename and artifact path.
    stamp_core(m, core);
    // (4c) walk, concretize, prune; then clear the shard-id sets.
    let binder = carried.then(|| CarriedBinder::new(core, probe));
    let mut cz = Concretizer::new(&mut m.ctx, core, binder);
    for f in &mut m.functions {
        cz.deleted.clear();
        for b in &mut f.basic_blocks {
            cz.block(b)?;
        }
        if !cz.deleted.is_empty() {
            drop_dangling_dependencies(&mut f.basic_blocks, &cz.deleted);
        }
        f.shard_ids.clear();
    }
    match cz.carried {
        Some(mut c) => c.module_level(m),
        None => Ok(()),
    }
}

/// One core's concretize walk: its expression arena, the memo of bound
/// expressions, the names deleted in the current function, and the binder of
/// carried-through fields (none when the module's carried values hold no
/// ShardId).
struct Concretizer<'a> {
    ctx: &'a mut Context,
    core: i64,
    memo: HashMap<ExprId, ExprId>,
    /// The memo again, by id, for the ids the arena had when the walk began
    /// (the ids the instructions hold): a bound id is looked up by index,
    /// not hashed (`NONE` = not bound yet).
    bound: Vec<u32>,
    deleted: HashSet<Arc<str>>,
    carried: Option<CarriedBinder>,
    /// The shard bound to this core, made once for the walk (not per
    /// instruction: two empty hash maps each time).
    bindings: Bindings,
}

/// Not bound yet, in [`Concretizer::bound`].
const NONE: u32 = u32::MAX;

impl<'a> Concretizer<'a> {
    fn new(ctx: &'a mut Context, core: i64, carried: Option<CarriedBinder>) -> Self {
        let bound = vec![NONE; ctx.len()];
        Concretizer {
            ctx,
            core,
            memo: HashMap::new(),
            bound,
            deleted: HashSet::new(),
            carried,
            bindings: Bindings::shard(core),
        }
    }

    /// The fused clone's walk over one source block: an instruction this
    /// core deletes is decided on the source and never cloned (a tenth of a
    /// split's instructions, each a clone and a drop for nothing); the others
    /// are cloned and concretized one at a time, while hot in cache.
    fn cloned_instructions(&mut self, src: &[Instruction]) -> Result<Vec<Instruction>> {
        let mut kept = Vec::with_capacity(src.len());
        for s in src {
            if self.deleted_before_clone(s)? {
                self.deleted.insert(s.name.clone());
                continue;
            }
            let mut inst = s.clone();
            if self.instruction(&mut inst)? {
                self.deleted.insert(inst.name.clone());
            } else {
                kept.push(inst);
            }
        }
        Ok(kept)
    }

    /// Whether [`Self::instruction`] would delete a clone of `s`, found on
    /// `s` itself. Only for an instruction with predicates, outside a loop
    /// and when no carried value needs binding; it binds what `instruction`
    /// binds, in the same order (so the arena grows exactly as it would, and
    /// the same binding error comes first), on copies of the ids. When it
    /// answers "kept", the clone's own walk finds every id bound already.
    fn deleted_before_clone(&mut self, s: &Instruction) -> Result<bool> {
        if s.predicates.is_empty() || self.carried.is_some() || matches!(s.op, OpFields::Loop { .. }) {
            return Ok(false);
        }
        let mut fields = s.op.expr_fields();
        for f in &mut fields {
            self.bind_field(f)?;
        }
        for a in s.arguments() {
            if let Argument::Symbolic(ap) = a {
                for mut e in ap.addrs.iter().copied().chain(ap.tile_addrs).chain(ap.block_addrs) {
                    self.bind(&mut e)?;
                }
            }
        }
        // Bound copies of the predicates (few: on the stack), every one bound
        // before any is evaluated, as `instruction` does.
        let mut preds: SmallVec<[AffinePredicate; 4]> = SmallVec::from_slice(&s.predicates);
        for p in &mut preds {
            self.bind(&mut p.expr)?;
        }
        Ok(eval_mask(self.ctx, &preds, &self.bindings)? == 0)
    }

    /// Walk a block in place: returns how many instructions were deleted from it.
    /// The kept instructions stay where they are (only those after a deleted
    /// one move down), so a block that loses nothing is not rebuilt.
    fn block(&mut self, b: &mut Block) -> Result<usize> {
        if let Some(c) = &mut self.carried {
            c.block(b)?;
        }
        let before = b.instructions.len();
        let mut failed = None;
        b.instructions.retain_mut(|inst| {
            if failed.is_some() {
                return true;
            }
            match self.instruction(inst) {
                Ok(true) => {
                    self.deleted.insert(inst.name.clone());
                    false
                }
                Ok(false) => true,
                Err(e) => {
                    failed = Some(e);
                    true
                }
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(before - b.instructions.len()),
        }
    }

    fn bind(&mut self, e: &mut ExprId) -> Result<()> {
        let slot = self.bound.get(e.index()).copied();
        if let Some(b) = slot.filter(|&b| b != NONE) {
            *e = ExprId(b);
            return Ok(());
        }
        let b = self.ctx.update_shard_id_memo(*e, self.core, &mut self.memo)?;
        if slot.is_some() {
            self.bound[e.index()] = b.0;
        }
        *e = b;
        Ok(())
    }

    fn bind_field(&mut self, f: &mut Option<IntOrExpr>) -> Result<()> {
        if let Some(IntOrExpr::Expr(e)) = f {
            self.bind(e)?;
        }
        Ok(())
    }

    /// concretizeInstruction: bind the shard everywhere in the instruction and
    /// return whether it is to be DELETED on this core (`evalMask() ^ 1`).
    fn instruction(&mut self, inst: &mut Instruction) -> Result<bool> {
        // Carried fields first, pruned or not: every instruction of core 0's
        // clone is checked against the original's core this way.
        if let Some(c) = &mut self.carried {
            c.instruction(inst)?;
        }
        self.op_fields(&mut inst.op)?;
        for arg in inst.arguments_mut() {
            self.argument(arg)?;
        }
        for p in &mut inst.predicates {
            self.bind(&mut p.expr)?;
        }
        // IT105: a region is deleted iff it has children and every child was
        // deleted (the AND-fold of the children's keep bits).
        if let OpFields::Loop { blocks, .. } = &mut inst.op {
            let mut children = 0usize;
            let mut removed = 0usize;
            for b in blocks.iter_mut() {
                children += b.instructions.len();
                removed += self.block(b)?;
            }
            drop_true_predicates(self.ctx, inst, &self.bindings)?;
            return Ok(children > 0 && removed == children);
        }
        let delete = eval_mask(self.ctx, &inst.predicates, &self.bindings)? == 0;
        if !delete {
            drop_true_predicates(self.ctx, inst, &self.bindings)?;
        }
        Ok(delete)
    }

    /// IT48: a collective carries shard-dependent geometry on the op itself,
    /// bound before the generic argument walk.
    fn op_fields(&mut self, op: &mut OpFields) -> Result<()> {
        match op {
            OpFields::CollectiveCompute {
                recv_from_rank,
                send_to_rank,
                queue,
                ..
            } => {
                self.bind_field(recv_from_rank)?;
                self.bind_field(send_to_rank)?;
                self.bind_field(queue)?;
            }
            OpFields::Matmult {
                replication_resolution,
                replication_shift_amnt,
                replication_num_rows,
            } => {
                self.bind_field(replication_resolution)?;
                self.bind_field(replication_shift_amnt)?;
                self.bind_field(replication_num_rows)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// concretizeArgument: a symbolic access pattern binds the shard in its
    /// per-dim `addrs`, `tile_addrs` and `block_addrs`.
    fn argument(&mut self, arg: &mut Argument) -> Result<()> {
        if let Argument::Symbolic(ap) = arg {
            for e in &mut ap.addrs {
                self.bind(e)?;
            }
            if let Some(e) = &mut ap.tile_addrs {
                self.bind(e)?;
            }
            if let Some(e) = &mut ap.block_addrs {
                self.bind(e)?;
            }
        }
        Ok(())
    }
}

/// On a kept instruction, predicates that became constant-true are dropped;
/// undecided ones stay.
fn drop_true_predicates(ctx: &Context, inst: &mut Instruction, b: &Bindings) -> Result<()> {
    if inst.predicates.is_empty() {
        return Ok(());
    }
    // Every verdict first (an evaluation error leaves the predicates as
    // they were), then the true ones dropped; on the stack for the usual few.
    let mut verdicts: SmallVec<[bool; 8]> = SmallVec::with_capacity(inst.predicates.len());
    for p in &inst.predicates {
        verdicts.push(p.eval(ctx, b)? == Some(true));
    }
    if !verdicts.contains(&true) {
        return Ok(());
    }
    let mut v = verdicts.iter();
    inst.predicates.retain(|_| !*v.next().unwrap_or(&false));
    Ok(())
}

/// removeInstruction also removes its edges: a dependency on an instruction
/// pruned from this core is dropped.
fn drop_dangling_dependencies(blocks: &mut [Block], deleted: &HashSet<Arc<str>>) {
    for b in blocks {
        for inst in &mut b.instructions {
            if let Some(deps) = &mut inst.dependencies {
                deps.retain(|d| !deleted.contains(&d.name));
            }
            if let OpFields::Loop { blocks, .. } = &mut inst.op {
                drop_dangling_dependencies(blocks, deleted);
            }
        }
    }
}
