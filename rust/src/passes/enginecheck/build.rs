//! From one function to its happens-before graph and its accesses
//! (contract §3.10): a pre-pass reads every instruction's carried keys (so a
//! malformed one is an error at its JSON path before anything runs) and plans
//! its footprints; the walk (static Loops unrolled, as §3.6) then turns each
//! instance into its nodes — an engine instruction one chain node, an `ALL`
//! instruction one node on every chain, an `Unassigned` one a free node, a
//! DMA an issue node and a completion node, each DMABlock a trigger starts
//! its own completion (and a start node when the block waits) — and records
//! its semaphore events and its physical accesses.

use std::sync::Arc;

use hashbrown::HashMap;

use super::graph::{Graph, MAX_ENGINES};
use super::physical::{self, Foot, Mem, Places};
use super::semaphores::{ResetEv, Semaphores, Stream, UpdateEv, WaitEv};
use super::sync_keys::{self, DescArg, DmaBlock, SyncInfo};
use super::WHERE;
use crate::analysis::access::{accumulate_op, footprint_error, unknown_set, ArgList, Role};
use crate::analysis::footprint::FootprintError;
use crate::analysis::walk::{walk_function, Instance, Limit, MAX_INSTANCES};
use crate::bir::argument::Argument;
use crate::bir::instruction::{Block, Instruction};
use crate::bir::module::{Function, Module};
use crate::bir::opcode::Opcode;
use crate::error::{Error, Result};
use crate::pelican::Context;

pub const GROUP_RESET: Opcode = Opcode(14);
pub const DMA_TRIGGER: Opcode = Opcode(67);
pub const COMPARE_AND_BRANCH: Opcode = Opcode(78);
pub const UNCONDITIONAL_BRANCH: Opcode = Opcode(79);
pub const DYNAMIC_FOR_LOOP: Opcode = Opcode(106);
pub const DO_WHILE: Opcode = Opcode(108);

/// Where an access or a wait comes from: an instruction position, and the
/// DMABlock when it is one a trigger started.
#[derive(Clone, Debug)]
pub struct Site {
    pub position: u32,
    pub instruction: Arc<str>,
    pub engine: Arc<str>,
    pub queue: Option<Arc<str>>,
    pub dma_block: Option<Arc<str>>,
    /// Top-level block of the instruction.
    pub block: u32,
    /// Compute on a named engine (not a DMA, not ALL, not Unassigned): such
    /// instructions are in program order with each other in every iteration.
    pub engine_compute: bool,
}

/// One access instance: its footprint, its start and end nodes, the
/// transfer it belongs to (accesses of one transfer never race), its site,
/// its role, and the instance order of its instruction.
#[derive(Clone, Copy, Debug)]
pub struct Acc {
    pub foot: u32,
    pub start: u32,
    pub end: u32,
    pub transfer: u32,
    pub site: u32,
    pub role: Role,
    pub seq: u32,
}

/// Why a footprint is uncertain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uncertain {
    Register,
    Runtime,
    Unmodelled,
    Symbolic,
}

impl Uncertain {
    pub fn describe(self) -> &'static str {
        match self {
            Uncertain::Register => "its address is in a register (register_ap)",
            Uncertain::Runtime => "its address depends on run-time values",
            Uncertain::Unmodelled => "it touches a RNGSTATE/REG location, which has no footprint model",
            Uncertain::Symbolic => "a descriptor's symbolic_ap in the module's queues is not read",
        }
    }
}

/// What a node stands for (explanations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRole {
    /// An instruction executing (or a DMA being issued) on its engine.
    Issue,
    /// A DMA's (or DMABlock's) transfer completing.
    Completion,
    /// A DMABlock starting once its waits are satisfied.
    BlockStart,
    /// A trigger's transfers all complete.
    End,
}

/// A raw undecided finding: reason, site.
#[derive(Clone, Debug)]
pub struct RawUndecided {
    pub reason: String,
    pub site: u32,
}

/// What engine class an instruction is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    All,
    Engine(u16),
    Unassigned,
    Skip,
}

/// The carried keys and plan of one instruction (by depth-first position).
struct Pos<'m> {
    inst: &'m Instruction,
    engine: Arc<str>,
    class: Class,
    sync: SyncInfo,
    queue: Option<Arc<str>>,
    blocks: Vec<u32>,
    group: Option<Vec<i64>>,
    site: u32,
    /// Footprints that do not depend on the instance: (list, index, role, foot).
    fixed: Vec<(Role, u32)>,
    /// Symbolic arguments whose addresses depend on IVs.
    symbolic: Vec<(ArgList, usize, Role)>,
}

/// Everything the walk of one function produced.
pub struct Built<'m> {
    pub function: &'m Function,
    pub graph: Graph,
    pub accs: Vec<Acc>,
    pub feet: Vec<Foot>,
    pub why: Vec<Option<Uncertain>>,
    pub sites: Vec<Site>,
    pub sems: Semaphores,
    pub undecided: Vec<RawUndecided>,
    pub places: Places<'m>,
    /// Names `from` may give: the function's instructions and every DMABlock.
    pub names: hashbrown::HashSet<Arc<str>>,
    /// Back-edge regions `[first, last]` of top-level blocks.
    pub regions: Vec<(u32, u32)>,
    /// Per instance of each CoreBarrier (walk order): its node, and whether
    /// its mask is true (a barrier whose mask is undecided does not count in
    /// the cross-core check, contract §3.6).
    pub barriers: Vec<(u32, bool)>,
    /// Per position: (start, end) node of each of its instances, in walk order
    /// (for the cross-core check).
    pub instances: Vec<Vec<(u32, u32)>>,
    /// DMABlock start nodes that wait, with their trigger's issue node.
    pub block_starts: Vec<(u32, u32)>,
    /// Per node: its site and what it stands for.
    pub node_info: Vec<(u32, NodeRole)>,
    pub sync: bool,
}

fn engine_name(inst: &Instruction) -> &str {
    inst.engine.as_deref().unwrap_or("Unassigned")
}

/// JSON path of an instruction from its block path.
fn path_of(f: usize, trail: &[(usize, usize)]) -> String {
    let mut s = format!("$.functions[{f}]");
    for (d, &(b, i)) in trail.iter().enumerate() {
        let blocks = if d == 0 {
            crate::key!(function basic_blocks)
        } else {
            crate::key!(inst blocks)
        };
        s.push_str(&format!(".{blocks}[{b}].instructions[{i}]"));
    }
    s
}

/// One instruction in depth-first order: itself, its path's trail (block and
/// instruction index per level), its top-level block.
/// (A trail is inline up to four levels: one allocation per instruction was
/// a measurable share of the check on 200k instructions.)
type Flat<'m> = (&'m Instruction, Trail, u32);

type Trail = smallvec::SmallVec<[(usize, usize); 4]>;

/// The function's instructions in depth-first order, with their paths' trails.
fn depth_first<'m>(blocks: &'m [Block], trail: &mut Trail, out: &mut Vec<Flat<'m>>, top: Option<u32>) {
    for (b, block) in blocks.iter().enumerate() {
        for (i, inst) in block.instructions.iter().enumerate() {
            trail.push((b, i));
            let top_block = top.unwrap_or(b as u32);
            out.push((inst, trail.clone(), top_block));
            depth_first(inst.nested_blocks(), trail, out, Some(top_block));
            trail.pop();
        }
    }
}

/// Does the module use semaphores anywhere (contract §3.10)?
pub fn module_has_sync(m: &Module, blocks: &[DmaBlock]) -> bool {
    let mut any = blocks.iter().any(|b| !b.sync.is_empty());
    for f in &m.functions {
        f.walk(&mut |i| any |= sync_keys::inst_has_sync(i));
    }
    any
}

struct Builder<'a, 'm> {
    ctx: &'a Context,
    places: &'a Places<'m>,
    feet: Vec<Foot>,
    why: Vec<Option<Uncertain>>,
    /// Memoized whole-location footprints (by location).
    whole: HashMap<u32, Option<u32>>,
}

impl<'a, 'm> Builder<'a, 'm> {
    fn push_foot(&mut self, f: Option<Foot>, why: Option<Uncertain>) -> Option<u32> {
        let f = f?;
        let id = self.feet.len() as u32;
        self.feet.push(f);
        self.why.push(why);
        Some(id)
    }

    fn whole_foot(&mut self, l: u32, why: Uncertain) -> std::result::Result<Option<u32>, FootprintError> {
        if let Some(&id) = self.whole.get(&l) {
            return Ok(id);
        }
        let f = physical::whole(self.places, l)?;
        let certain = f.as_ref().is_some_and(|f| f.exact.is_some());
        let id = self.push_foot(f, (!certain).then_some(why));
        self.whole.insert(l, id);
        Ok(id)
    }

    /// The locations a physical or register argument names: its `memref`,
    /// else every location of its set.
    fn named_locations(&self, memsetref: Option<&str>, memref: Option<&str>) -> Option<Vec<u32>> {
        if let Some(r) = memref {
            let l = self.places.location(r)?;
            if let Some(s) = memsetref {
                if &*self.places.locs[l as usize].set.name != s {
                    // A memref outside its set: the set's location of that name, if any.
                    let locs = self.places.set_locations(s)?;
                    return locs
                        .iter()
                        .copied()
                        .find(|&x| self.places.locs[x as usize].name == r)
                        .map(|x| vec![x]);
                }
            }
            return Some(vec![l]);
        }
        self.places.set_locations(memsetref?).map(<[u32]>::to_vec)
    }

    /// Plan one argument: fixed footprints now, or the symbolic ones per
    /// instance. Returns false for a symbolic argument left to the instance.
    fn plan_arg(
        &mut self,
        inst: &Instruction,
        list: ArgList,
        index: usize,
        arg: &Argument,
        role: Role,
        fixed: &mut Vec<(Role, u32)>,
    ) -> Result<bool> {
        let err = |set: &str, e: FootprintError| footprint_error(9302, inst, list, index, set, &e);
        match arg {
            Argument::Physical(p) => {
                if p.memref.is_none() && p.memsetref.is_none() {
                    return Ok(true);
                }
                let locs = self
                    .named_locations(p.memsetref.as_deref(), p.memref.as_deref())
                    .ok_or_else(|| unknown_set(9302, inst, list, index, arg))?;
                for l in locs {
                    let set = self.places.locs[l as usize].set.name.clone();
                    let f = physical::physical_ap(self.places, l, p).map_err(|e| err(&set, e))?;
                    let why = (self.places.locs[l as usize].mem == Mem::Unmodelled).then_some(Uncertain::Unmodelled);
                    if let Some(id) = self.push_foot(f, why) {
                        fixed.push((role, id));
                    }
                }
                Ok(true)
            }
            Argument::Other { kind, fields } if &**kind == "register_ap" => {
                let memref = fields.get("memref").and_then(|v| v.as_str());
                let locs = self
                    .named_locations(arg.memsetref(), memref)
                    .ok_or_else(|| unknown_set(9302, inst, list, index, arg))?;
                for l in locs {
                    let set = self.places.locs[l as usize].set.name.clone();
                    let why = if self.places.locs[l as usize].mem == Mem::Unmodelled {
                        Uncertain::Unmodelled
                    } else {
                        Uncertain::Register
                    };
                    if let Some(id) = self.whole_foot(l, why).map_err(|e| err(&set, e))? {
                        fixed.push((role, id));
                    }
                }
                Ok(true)
            }
            Argument::Symbolic(s) => {
                let Some(set) = s.memsetref.as_deref() else {
                    return Ok(true);
                };
                if self.places.set_locations(set).is_none() {
                    return Err(unknown_set(9302, inst, list, index, arg));
                }
                if s.addrs.iter().all(|&a| self.ctx.as_constant(a).is_some()) {
                    let vals: Vec<i64> = s.addrs.iter().map(|&a| self.ctx.as_constant(a).unwrap_or(0)).collect();
                    self.symbolic_feet(inst, list, index, s, Some(&vals), role, fixed)?;
                    return Ok(true);
                }
                Ok(false)
            }
            _ => Ok(true),
        }
    }

    /// The footprints of a symbolic argument at address values `vals`
    /// (None: undecided — the whole of each location).
    #[allow(clippy::too_many_arguments)]
    fn symbolic_feet(
        &mut self,
        inst: &Instruction,
        list: ArgList,
        index: usize,
        s: &crate::bir::argument::SymbolicAp,
        vals: Option<&[i64]>,
        role: Role,
        out: &mut Vec<(Role, u32)>,
    ) -> Result<()> {
        let set = s.memsetref.as_deref().unwrap_or("");
        let locs = self.places.set_locations(set).map(<[u32]>::to_vec).unwrap_or_default();
        let err = |e: FootprintError| footprint_error(9302, inst, list, index, set, &e);
        for l in locs {
            let li = &self.places.locs[l as usize];
            if li.mem == Mem::Unmodelled {
                if let Some(id) = self.whole_foot(l, Uncertain::Unmodelled).map_err(err)? {
                    out.push((role, id));
                }
                continue;
            }
            let Some(vals) = vals else {
                if let Some(id) = self.whole_foot(l, Uncertain::Runtime).map_err(err)? {
                    out.push((role, id));
                }
                continue;
            };
            let layout = li.set_layout.clone().map_err(err)?;
            let es = crate::analysis::access::element_size(s.dtype.as_deref(), li.set).map_err(err)?;
            let points = layout.symbolic(&s.ap, vals, es).map_err(err)?;
            let f = physical::footprint(self.places, l, &layout, &points).map_err(err)?;
            if let Some(id) = self.push_foot(f, None) {
                out.push((role, id));
            }
        }
        Ok(())
    }

    /// Plan a DMABlock's descriptors (in the trigger's function).
    fn plan_block(&mut self, trigger: &Instruction, b: &DmaBlock) -> Result<Vec<(Role, u32)>> {
        let mut out = Vec::new();
        for d in &b.descriptors {
            for (list, args, role) in [
                (ArgList::Ins, &d.ins, Role::Read),
                (ArgList::Outs, &d.outs, Role::Write),
            ] {
                for (index, a) in args.iter().enumerate() {
                    let (memsetref, memref) = match a {
                        DescArg::Physical(p) => (p.memsetref.as_deref(), p.memref.as_deref()),
                        DescArg::Register { memsetref, memref } => (memsetref.as_deref(), memref.as_deref()),
                        DescArg::Symbolic { memsetref } => (memsetref.as_deref(), None),
                    };
                    let named = memref.or(memsetref).unwrap_or("?");
                    let path = || {
                        format!(
                            "{}.blocks[…].instructions[…] ({}).{}[{index}]",
                            b.path,
                            d.name,
                            list.key()
                        )
                    };
                    let locs = self.named_locations(memsetref, memref).ok_or_else(|| {
                        Error::neuron_at(
                            9302,
                            format!(
                                "{}[{index}] of descriptor {} of DMABlock {} names {named}, which is not in the function of its trigger {}",
                                list.key(),
                                d.name,
                                b.name,
                                trigger.name
                            ),
                            WHERE,
                            path(),
                        )
                    })?;
                    for l in locs {
                        let set = self.places.locs[l as usize].set.name.clone();
                        let ferr = |e: FootprintError| {
                            Error::neuron_at(
                                9302,
                                format!(
                                    "footprint of {}[{index}] of descriptor {} of DMABlock {} leaves set {set}: {}",
                                    list.key(),
                                    d.name,
                                    b.name,
                                    e.describe()
                                ),
                                WHERE,
                                path(),
                            )
                        };
                        let id = match a {
                            DescArg::Physical(p) => {
                                let f = physical::physical_ap(self.places, l, p).map_err(ferr)?;
                                let why = (self.places.locs[l as usize].mem == Mem::Unmodelled)
                                    .then_some(Uncertain::Unmodelled);
                                self.push_foot(f, why)
                            }
                            DescArg::Register { .. } => self.whole_foot(l, Uncertain::Register).map_err(ferr)?,
                            DescArg::Symbolic { .. } => self.whole_foot(l, Uncertain::Symbolic).map_err(ferr)?,
                        };
                        if let Some(id) = id {
                            out.push((role, id));
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Build the graph and accesses of function `fidx` of `m`. `sync`: the
/// module uses semaphores (else every instruction completes before the next).
pub fn build<'m>(m: &'m Module, fidx: usize, queues: &'m [DmaBlock], sync: bool) -> Result<Built<'m>> {
    let f = &m.functions[fidx];
    let places = Places::new(f);
    let mut flat = Vec::new();
    depth_first(&f.basic_blocks, &mut Trail::new(), &mut flat, None);
    let block_index: HashMap<&str, u32> = queues
        .iter()
        .enumerate()
        .rev()
        .map(|(i, b)| (&*b.name, i as u32))
        .collect();
    let mut names: hashbrown::HashSet<Arc<str>> = queues.iter().map(|b| b.name.clone()).collect();
    // Engines, in order of first appearance.
    let mut engines: Vec<&str> = Vec::new();
    let mut engine_ids: HashMap<&str, u16> = HashMap::new();
    // One shared name per engine (sites and semaphore streams clone it).
    let mut engine_arcs: HashMap<&str, Arc<str>> = HashMap::new();
    let mut sites: Vec<Site> = Vec::new();
    let mut pos_info: Vec<Pos<'_>> = Vec::with_capacity(flat.len());
    let mut builder = Builder {
        ctx: &m.ctx,
        places: &places,
        feet: Vec::new(),
        why: Vec::new(),
        whole: HashMap::new(),
    };
    let mut undecided: Vec<RawUndecided> = Vec::new();
    let mut regions: Vec<(u32, u32)> = Vec::new();
    let block_of_name: HashMap<&str, u32> = f
        .basic_blocks
        .iter()
        .enumerate()
        .rev()
        .map(|(i, b)| (&*b.name, i as u32))
        .collect();
    for (position, (inst, trail, top)) in flat.iter().enumerate() {
        let path = || path_of(fidx, trail);
        names.insert(inst.name.clone());
        let sync_info = sync_keys::sync_info(inst, &path)?;
        let class = match engine_name(inst) {
            _ if inst.opcode == Opcode::LOOP => Class::Skip,
            "ALL" => Class::All,
            "Unassigned" => Class::Unassigned,
            e => {
                let next = engines.len() as u16;
                let id = *engine_ids.entry(e).or_insert_with(|| {
                    engines.push(e);
                    next
                });
                Class::Engine(id)
            }
        };
        let is_dma = inst.opcode == Opcode::DMA_COPY || inst.opcode == DMA_TRIGGER;
        let queue = if is_dma { sync_keys::queue(inst, &path)? } else { None };
        let mut blocks = Vec::new();
        if inst.opcode == DMA_TRIGGER {
            for (i, b) in sync_keys::dma_blocks(inst, &path)?.iter().enumerate() {
                let idx = *block_index.get(&**b).ok_or_else(|| {
                    Error::bir(
                        format!(
                            "DMATrigger {} names DMABlock {b}, which no queue of the module holds",
                            inst.name
                        ),
                        format!("{}.dma_blocks[{i}]", path()),
                    )
                })?;
                blocks.push(idx);
            }
        }
        let group = if inst.opcode == GROUP_RESET {
            sync_keys::sema_group(inst, &path)?
        } else {
            None
        };
        let site = sites.len() as u32;
        let engine = engine_arcs
            .entry(engine_name(inst))
            .or_insert_with(|| Arc::from(engine_name(inst)))
            .clone();
        sites.push(Site {
            position: position as u32,
            instruction: inst.name.clone(),
            engine: engine.clone(),
            queue: queue.clone(),
            dma_block: None,
            block: *top,
            engine_compute: matches!(class, Class::Engine(_)) && !is_dma,
        });
        // Back-edges: a branch to its own or an earlier top-level block.
        if trail.len() == 1 && (inst.opcode == COMPARE_AND_BRANCH || inst.opcode == UNCONDITIONAL_BRANCH) {
            for t in sync_keys::branch_targets(inst) {
                if let Some(&tb) = block_of_name.get(t) {
                    if tb <= *top {
                        regions.push((tb, *top));
                    }
                }
            }
        }
        if inst.opcode == DYNAMIC_FOR_LOOP || inst.opcode == DO_WHILE {
            regions.push((*top, *top));
            if sync && sync_keys::has_unread_body(inst) {
                undecided.push(RawUndecided {
                    reason: format!(
                        "the body of {} {} is carried as unknown keys: lncsplit does not read its instructions, so their accesses are not checked",
                        inst.opcode.name(),
                        inst.name
                    ),
                    site,
                });
            }
        }
        // Footprints that do not depend on the instance.
        let mut fixed = Vec::new();
        let mut symbolic = Vec::new();
        let acc = accumulate_op(inst)?;
        let lists: [(ArgList, &[Argument]); 3] = [
            (ArgList::Ins, &inst.ins),
            (ArgList::Outs, &inst.outs),
            (ArgList::IndirectionIns, inst.indirection_ins.as_deref().unwrap_or(&[])),
        ];
        for (list, args) in lists {
            let role = match (list, acc) {
                (ArgList::Outs, Some(op)) => Role::Accumulate(op),
                (ArgList::Outs, None) => Role::Write,
                _ => Role::Read,
            };
            for (index, arg) in args.iter().enumerate() {
                if !builder.plan_arg(inst, list, index, arg, role, &mut fixed)? {
                    symbolic.push((list, index, role));
                }
            }
        }
        pos_info.push(Pos {
            inst,
            engine,
            class,
            sync: sync_info,
            queue,
            blocks,
            group,
            site,
            fixed,
            symbolic,
        });
    }
    if engines.len() > MAX_ENGINES {
        return Err(Error::neuron_at(
            9306,
            format!(
                "{} engines in function {}: enginecheck orders at most {MAX_ENGINES} (a resource limit)",
                engines.len(),
                f.name
            ),
            WHERE,
            format!("function {}", f.name),
        ));
    }
    // DMABlock plans, per block a trigger names (first trigger's function).
    let mut block_plans: HashMap<u32, Vec<(Role, u32)>> = HashMap::new();
    let mut block_sites: HashMap<(u32, u32), u32> = HashMap::new();
    for p in &pos_info {
        for &b in &p.blocks {
            if let hashbrown::hash_map::Entry::Vacant(v) = block_plans.entry(b) {
                v.insert(builder.plan_block(p.inst, &queues[b as usize])?);
            }
            block_sites.entry((p.site, b)).or_insert_with(|| {
                let mut s = sites[p.site as usize].clone();
                s.dma_block = Some(queues[b as usize].name.clone());
                s.queue = Some(queues[b as usize].queue.clone());
                s.engine_compute = false;
                sites.push(s);
                sites.len() as u32 - 1
            });
        }
    }
    let mut w = Walk {
        graph: Graph::new(engines.len().max(1)),
        chain_last: vec![u32::MAX; engines.len().max(1)],
        last_all: u32::MAX,
        pending_unassigned: Vec::new(),
        queue_last: HashMap::new(),
        sems: Semaphores::default(),
        accs: Vec::new(),
        seq: 0,
        barriers: Vec::new(),
        instances: vec![Vec::new(); pos_info.len()],
        undecided_masks: Vec::new(),
        block_starts: Vec::new(),
        info: Vec::new(),
        scratch: Vec::new(),
        sync,
    };
    let limit = Limit {
        max: MAX_INSTANCES,
        code: 9306,
        location: WHERE,
    };
    walk_function(&m.ctx, f, None, limit, &mut |at: &Instance<'_, 'm>| {
        w.instance(&mut builder, &pos_info, &block_plans, &block_sites, queues, at)
    })?;
    for s in w.undecided_masks.drain(..) {
        undecided.push(RawUndecided {
            reason: format!(
                "{} updates a semaphore under a mask lncsplit cannot decide: the count after it is unknown",
                sites[s as usize].instruction
            ),
            site: s,
        });
    }
    let Builder { feet, why, .. } = builder;
    Ok(Built {
        function: f,
        graph: w.graph,
        accs: w.accs,
        feet,
        why,
        sites,
        sems: w.sems,
        undecided,
        places,
        names,
        regions,
        barriers: w.barriers,
        instances: w.instances,
        block_starts: w.block_starts,
        node_info: w.info,
        sync,
    })
}

struct Walk {
    graph: Graph,
    chain_last: Vec<u32>,
    last_all: u32,
    pending_unassigned: Vec<u32>,
    queue_last: HashMap<Stream, u32>,
    sems: Semaphores,
    accs: Vec<Acc>,
    seq: u64,
    barriers: Vec<(u32, bool)>,
    instances: Vec<Vec<(u32, u32)>>,
    undecided_masks: Vec<u32>,
    block_starts: Vec<(u32, u32)>,
    info: Vec<(u32, NodeRole)>,
    scratch: Vec<(Role, u32)>,
    sync: bool,
}

impl Walk {
    fn note(&mut self, n: u32, site: u32, role: NodeRole) {
        if self.info.len() <= n as usize {
            self.info.resize(n as usize + 1, (site, role));
        }
        if self.info[n as usize].1 != NodeRole::Issue || role == NodeRole::Issue {
            self.info[n as usize] = (site, role);
        }
    }

    /// The node an instruction of `class` starts at, after `extra` preds.
    fn issue(&mut self, class: Class) -> u32 {
        if !self.sync {
            // Without semaphores everything is one sequence.
            let n = self.graph.chain_node(0, &[self.chain_last[0]]);
            self.chain_last[0] = n;
            return n;
        }
        match class {
            Class::All => {
                let mut preds = self.chain_last.clone();
                preds.append(&mut self.pending_unassigned);
                if self.last_all != u32::MAX {
                    preds.push(self.last_all);
                }
                preds.sort_unstable();
                preds.dedup();
                let n = self.graph.all_node(&preds);
                self.chain_last.iter_mut().for_each(|x| *x = n);
                self.last_all = n;
                n
            }
            Class::Engine(k) => {
                let n = self.graph.chain_node(k as usize, &[self.chain_last[k as usize]]);
                self.chain_last[k as usize] = n;
                n
            }
            Class::Unassigned | Class::Skip => {
                let n = self.graph.free_node(&[self.last_all]);
                self.pending_unassigned.push(n);
                n
            }
        }
    }

    /// A DMA completion on `queue` after `start`.
    fn complete(&mut self, start: u32, queue: Stream) -> u32 {
        if !self.sync {
            return start;
        }
        let prev = self.queue_last.get(&queue).copied().unwrap_or(u32::MAX);
        let c = self.graph.free_node(&[start, prev]);
        self.queue_last.insert(queue, c);
        c
    }

    fn waits(&mut self, sync: &SyncInfo, waiter: u32, seq: u64, site: u32) {
        for w in &sync.waits {
            self.sems.waits.push(WaitEv {
                waiter,
                seq,
                from: w.from.clone(),
                id: w.id,
                wait_value: w.wait_value,
                site,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn updates(
        &mut self,
        sync: &SyncInfo,
        node: u32,
        stream: &Stream,
        seq: u64,
        name: &Arc<str>,
        site: u32,
        undecided_mask: bool,
    ) {
        if undecided_mask && !sync.updates.is_empty() {
            self.undecided_masks.push(site);
        }
        for u in &sync.updates {
            self.sems.updates.push(UpdateEv {
                id: u.id,
                value: u.value,
                node,
                stream: stream.clone(),
                seq,
                name: name.clone(),
                site,
                count: 0,
            });
        }
    }

    fn accesses(&mut self, feet: &[(Role, u32)], start: u32, end: u32, transfer: u32, site: u32, seq: u32) {
        for &(role, foot) in feet {
            self.accs.push(Acc {
                foot,
                start,
                end,
                transfer,
                site,
                role,
                seq,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn instance(
        &mut self,
        b: &mut Builder<'_, '_>,
        pos_info: &[Pos<'_>],
        block_plans: &HashMap<u32, Vec<(Role, u32)>>,
        block_sites: &HashMap<(u32, u32), u32>,
        queues: &[DmaBlock],
        at: &Instance<'_, '_>,
    ) -> Result<()> {
        let p = &pos_info[at.pos as usize];
        if p.class == Class::Skip {
            return Ok(());
        }
        let inst = p.inst;
        let seq = self.seq;
        self.seq += 1;
        let (wseq, rseq, useq) = (seq * 4, seq * 4 + 1, seq * 4 + 2);
        let undecided_mask = at.mask == crate::analysis::walk::Mask::Undecided;
        // This instance's footprints: the fixed ones and the symbolic ones now.
        self.scratch.clear();
        self.scratch.extend_from_slice(&p.fixed);
        for &(list, index, role) in &p.symbolic {
            let arg = match list {
                ArgList::Ins => &inst.ins[index],
                ArgList::Outs => &inst.outs[index],
                ArgList::IndirectionIns => &inst.indirection_ins.as_deref().unwrap_or(&[])[index],
            };
            let Argument::Symbolic(s) = arg else { continue };
            let mut vals: smallvec::SmallVec<[i64; 4]> = smallvec::SmallVec::new();
            let mut decided = true;
            for &a in &s.addrs {
                match b.ctx.eval(a, at.bindings)? {
                    Some(v) => vals.push(v),
                    None => {
                        decided = false;
                        break;
                    }
                }
            }
            let mut out = Vec::new();
            b.symbolic_feet(inst, list, index, s, decided.then_some(&vals[..]), role, &mut out)?;
            self.scratch.extend(out);
        }
        let feet = std::mem::take(&mut self.scratch);
        let engine_stream = || Stream::Engine(p.engine.clone());
        let start = self.issue(p.class);
        self.note(start, p.site, NodeRole::Issue);
        self.waits(&p.sync, start, wseq, p.site);
        if inst.opcode == GROUP_RESET {
            self.sems.resets.push(ResetEv {
                seq: rseq,
                group: p.group.clone(),
                site: p.site,
            });
        }
        if inst.opcode == Opcode::CORE_BARRIER {
            self.barriers
                .push((start, at.mask == crate::analysis::walk::Mask::True));
        }
        let own_queue = || match &p.queue {
            Some(q) => Stream::Queue(q.clone()),
            None => Stream::OwnQueue(at.pos),
        };
        let seq32 = seq.min(u32::MAX as u64) as u32;
        let end = if inst.opcode == Opcode::DMA_COPY {
            let c = self.complete(start, own_queue());
            self.note(c, p.site, NodeRole::Completion);
            self.updates(&p.sync, c, &own_queue(), useq, &inst.name, p.site, undecided_mask);
            self.accesses(&feet, start, c, c, p.site, seq32);
            c
        } else if inst.opcode == DMA_TRIGGER {
            let mut completions = Vec::with_capacity(p.blocks.len());
            for &bi in &p.blocks {
                let blk = &queues[bi as usize];
                let site = block_sites[&(p.site, bi)];
                let s = if self.sync && !blk.sync.waits.is_empty() {
                    let s = self.graph.free_node(&[start]);
                    self.block_starts.push((s, start));
                    self.note(s, site, NodeRole::BlockStart);
                    self.waits(&blk.sync, s, wseq, site);
                    s
                } else {
                    start
                };
                let c = self.complete(s, Stream::Queue(blk.queue.clone()));
                self.note(c, site, NodeRole::Completion);
                self.updates(
                    &blk.sync,
                    c,
                    &Stream::Queue(blk.queue.clone()),
                    useq,
                    &blk.name,
                    site,
                    undecided_mask,
                );
                self.accesses(&block_plans[&bi], s, c, c, site, seq32);
                completions.push(c);
            }
            let needs_end = !p.sync.updates.is_empty() || !feet.is_empty();
            let end = if self.sync && needs_end && !completions.is_empty() {
                completions.push(start);
                self.graph.free_node(&completions)
            } else if self.sync && needs_end {
                self.complete(start, own_queue())
            } else {
                start
            };
            self.note(end, p.site, NodeRole::End);
            self.updates(&p.sync, end, &own_queue(), useq, &inst.name, p.site, undecided_mask);
            self.accesses(&feet, start, end, end, p.site, seq32);
            end
        } else {
            let stream = match p.class {
                Class::Unassigned => Stream::Alone(start),
                _ => engine_stream(),
            };
            self.updates(&p.sync, start, &stream, useq, &inst.name, p.site, undecided_mask);
            self.accesses(&feet, start, start, start, p.site, seq32);
            start
        };
        self.instances[at.pos as usize].push((start, end));
        self.scratch = feet;
        Ok(())
    }
}
