//! Cores in lockstep (contract §3.8). Each function runs from fresh memory,
//! in module order. Its cores run interval by interval: each core runs to its
//! k-th executed `CoreBarrier` or `CollectiveCompute` (whatever its `cores`
//! list) — the cores must reach the same sync point (9402) — then the
//! collective, if it is one, runs over all cores.
//!
//! Every interval runs in both core orders. With several cores an interval is
//! first compiled on every core (an op's footprint does not depend on memory),
//! then checked: when no byte one core writes is read or written by another
//! ([`conflict`]), both orders provably end the same and the interval runs
//! once, forward, without logging. Otherwise the forward run (0…N−1) logs the
//! bytes it overwrites, its final bytes are saved, the interval is undone and
//! replayed from its compiled ops in the reverse order (N−1…0), the two final
//! states are compared on every byte written, and the forward state is
//! restored. A byte that ends different is a dynamic race: the cores' order
//! decided it.

use std::collections::BTreeMap;
use std::sync::Arc;

use hashbrown::HashMap;

use super::accumulate::Pending;
use super::collective::{self, Part};
use super::conflict;
use super::exec::{cannot_run, execute, CoreView, Env, Op, Scratch, LOCATION};
use super::memory::{for_each_run, Journal, LocId, Memory, Span, StoreLog, NO_WRITER};
use super::trigger;
use super::{DynRace, Plan, SimInput, SimOutput, SimResult, Writer};
use crate::analysis::access::FunctionIndex;
use crate::analysis::location::{locations_of, Cores};
use crate::analysis::walk::{Limit, Mask, WalkCursor};
use crate::bir::instruction::Instruction;
use crate::bir::module::{Function, Module};
use crate::bir::opcode::Opcode;
use crate::bir::queues::Queues;
use crate::error::{Error, Result};

use crate::analysis::walk::MAX_INSTANCES;
/// Most bytes of simulated memory for one function (all cores).
const MAX_MEMORY: u64 = 4 << 30;

/// Where a core stopped: a sync point, or the end of the function.
struct SyncAt<'m> {
    inst: &'m Instruction,
    /// A collective's part, compiled when the core reached it.
    part: Option<Part>,
}

pub struct Engine<'m> {
    plan: &'m Plan<'m>,
    mem: Memory,
    /// Per core, the function's instructions in depth-first order: writer
    /// id `1 + offset[c] + pos` is core c's instruction at `pos`.
    order: Vec<Vec<&'m Instruction>>,
    offset: Vec<u64>,
    /// Function-local writer id → index in `result.writers` plus one.
    global: HashMap<u32, u32>,
    /// What the core-order check and the replay reuse between intervals.
    conflicts: conflict::Scratch,
    journal: Journal,
    reverse: Journal,
    fwd_final: Vec<u8>,
    result: SimResult,
    scratch: Scratch,
    /// Each core's module's DMA queues, read once per module.
    queues: Vec<Option<Arc<Queues>>>,
}

impl<'m> Engine<'m> {
    pub fn new(plan: &'m Plan<'m>) -> Self {
        Engine {
            plan,
            mem: Memory::default(),
            order: Vec::new(),
            offset: Vec::new(),
            global: HashMap::new(),
            conflicts: conflict::Scratch::default(),
            journal: Journal::default(),
            reverse: Journal::default(),
            fwd_final: Vec::new(),
            result: SimResult {
                lnc: plan.lnc,
                symbolic: plan.symbolic,
                ..Default::default()
            },
            scratch: Scratch::default(),
            queues: Vec::new(),
        }
    }

    pub fn run<B: AsRef<[u8]>>(mut self, inputs: &[SimInput<B>]) -> Result<SimResult> {
        check_inputs(self.plan, inputs)?;
        self.queues = read_queues(&self.plan.programs)?;
        let first = self.plan.programs[0];
        for f in &first.functions {
            self.function(&f.name, inputs)?;
        }
        Ok(self.result)
    }

    /// The writer id of core `core`'s instruction at `pos` (0 past u32).
    fn writer_id(&self, core: usize, pos: u32) -> u32 {
        u32::try_from(1 + self.offset[core] + u64::from(pos)).unwrap_or(NO_WRITER)
    }

    /// The instruction a function-local writer id names.
    fn writer(&self, id: u32) -> Option<Writer> {
        let mut k = u64::from(id).checked_sub(1)?;
        for (core, insts) in self.order.iter().enumerate() {
            if let Some(i) = insts.get(k as usize) {
                return Some(Writer {
                    core,
                    instruction: i.name.clone(),
                });
            }
            k -= insts.len() as u64;
        }
        None
    }

    /// Function-local writer ids as indices into `result.writers` plus one
    /// (in place; runs of one writer are looked up once).
    fn global_writers(&mut self, mut ids: Vec<u32>) -> Vec<u32> {
        let mut last = (NO_WRITER, NO_WRITER);
        for id in ids.iter_mut() {
            if *id != last.0 {
                last = (*id, self.global_writer(*id));
            }
            *id = last.1;
        }
        ids
    }

    /// A function-local writer id as an index into `result.writers` plus one.
    fn global_writer(&mut self, id: u32) -> u32 {
        if id == NO_WRITER {
            return NO_WRITER;
        }
        if let Some(&g) = self.global.get(&id) {
            return g;
        }
        let Some(w) = self.writer(id) else {
            return NO_WRITER;
        };
        self.result.writers.push(w);
        let g = self.result.writers.len() as u32;
        self.global.insert(id, g);
        g
    }

    fn number_instructions(&mut self, functions: &[&'m Function]) {
        self.order.clear();
        self.offset.clear();
        self.global.clear();
        let mut total = 0u64;
        for f in functions {
            let mut v = Vec::new();
            f.walk(&mut |i| v.push(i));
            self.offset.push(total);
            total += v.len() as u64;
            self.order.push(v);
        }
    }

    /// Run function `name` on every core from fresh memory.
    fn function<B: AsRef<[u8]>>(&mut self, name: &str, inputs: &[SimInput<B>]) -> Result<()> {
        let n = self.plan.lnc;
        let functions = self.functions_named(name)?;
        self.number_instructions(&functions);
        self.mem.clear();
        let plan: &'m Plan<'m> = self.plan;
        let cores = Cores {
            modules: &plan.programs,
        };
        let mut views = Vec::with_capacity(n);
        for (c, f) in functions.iter().enumerate() {
            views.push(self.allocate(cores, c, f)?);
        }
        self.fill_inputs(&views, name, inputs)?;
        self.fill_consts(&views)?;
        self.track_outputs(&views);
        let limit = Limit {
            max: MAX_INSTANCES,
            code: 9401,
            location: LOCATION,
        };
        let mut cursors: Vec<WalkCursor<'m>> = (0..n)
            .map(|c| WalkCursor::new(functions[c], self.shard(c), limit))
            .collect();
        let mut ops: Vec<Vec<Op>> = (0..n).map(|_| Vec::new()).collect();
        let mut k = 0usize;
        loop {
            ops.iter_mut().for_each(Vec::clear);
            let mut syncs = Vec::with_capacity(n);
            for c in 0..n {
                syncs.push(self.run_to_sync(cores, &mut views[c], &mut cursors[c], &mut ops[c])?);
            }
            let sync_name = agree(name, k, &syncs)?;
            if n > 1 {
                self.run_interval(&ops, name, k, sync_name.clone());
            }
            let Some(first) = syncs.first().and_then(|s| s.as_ref()) else {
                break;
            };
            if first.part.is_some() {
                let inst = first.inst;
                let parts: Vec<Part> = syncs.into_iter().filter_map(|s| s.and_then(|s| s.part)).collect();
                let cc = collective::assemble(parts, |why| cannot_run(0, name, inst, why))?;
                let mut log = StoreLog {
                    journal: None,
                    writer: NO_WRITER,
                    track: true,
                };
                collective::execute(&cc, &mut self.mem, &mut log);
            }
            k += 1;
        }
        self.mem.settle_all();
        self.note_opaque(&mut views);
        self.collect_outputs(&views);
        Ok(())
    }

    /// The instructions the cores ran as opaque, once per name.
    fn note_opaque(&mut self, views: &mut [CoreView<'m>]) {
        let mut seen: hashbrown::HashSet<Arc<str>> = self
            .result
            .opaque
            .iter()
            .filter(|o| views.first().is_some_and(|v| o.function == v.index.function.name))
            .map(|o| o.instruction.clone())
            .collect();
        for v in views.iter_mut() {
            let mut list = std::mem::take(&mut v.opaque);
            list.sort_by_key(|x| x.0);
            list.dedup_by_key(|x| x.0);
            for (pos, why) in list {
                let Some(inst) = self.order[v.core].get(pos as usize) else {
                    continue;
                };
                if seen.insert(inst.name.clone()) {
                    self.result.opaque.push(super::OpaqueInst {
                        core: v.core,
                        function: v.index.function.name.clone(),
                        instruction: inst.name.clone(),
                        opcode: Arc::from(inst.opcode.name()),
                        why,
                    });
                }
            }
        }
    }

    fn shard(&self, c: usize) -> Option<i64> {
        self.plan.symbolic.then_some(c as i64)
    }

    fn functions_named(&self, name: &str) -> Result<Vec<&'m Function>> {
        let mut out = Vec::with_capacity(self.plan.lnc);
        for (c, m) in self.plan.programs.iter().enumerate() {
            let m: &'m Module = m;
            let f = m.function(name).ok_or_else(|| {
                Error::neuron_at(
                    9402,
                    format!("core {c} has no function {name}, which core 0 runs"),
                    LOCATION,
                    format!("core {c}, module {}", m.name),
                )
            })?;
            out.push(f);
        }
        Ok(out)
    }

    /// Allocate core `c`'s locations of `f` (shared ones are core 0's,
    /// proxies their target's) and map its sets onto them.
    fn allocate(&mut self, cores: Cores<'m>, c: usize, f: &'m Function) -> Result<CoreView<'m>> {
        let mut locs = HashMap::new();
        let mut total: u64 = self.mem.bufs.iter().map(|b| b.bytes.len() as u64).sum();
        for set in &f.allocations {
            for (li, (_, _, loc)) in locations_of(set).into_iter().enumerate() {
                let r = cores.resolve(c, f, set, loc, false)?;
                let Ok(layout) = r.layout() else {
                    continue; // an unknown dtype: any access to it fails with its footprint error
                };
                let len = layout.elements().checked_mul(layout.esize).unwrap_or(i64::MAX);
                if self.mem.get(&r.phys).is_none() {
                    total = total.saturating_add(len.max(0) as u64);
                    if total > MAX_MEMORY {
                        return Err(Error::neuron_at(
                            9401,
                            format!(
                                "the simulated memory of function {} exceeds {} bytes",
                                f.name, MAX_MEMORY
                            ),
                            LOCATION,
                            format!("core {c}, set {}", set.name),
                        ));
                    }
                }
                let id = self
                    .mem
                    .allocate(r.phys, layout.partition_bytes(), layout.esize, len.max(0) as usize);
                locs.insert((set as *const _ as usize, li), id);
            }
        }
        Ok(CoreView {
            core: c,
            ctx: &self.plan.programs[c].ctx,
            index: FunctionIndex::new(f),
            locs,
            prefixes: vec![None; self.order[c].len()],
            shard: self.shard(c),
            opaque: Vec::new(),
            queues: self.queues[c].clone(),
        })
    }

    fn own_locations(&self, view: &CoreView<'m>, set: &str) -> Vec<LocId> {
        let Some(entry) = view.index.set(set) else {
            return Vec::new();
        };
        let key = entry.set as *const _ as usize;
        (0..entry.locations.len())
            .filter_map(|li| view.locs.get(&(key, li)).copied())
            .filter(|&id| self.mem.bufs[id as usize].phys.core as usize == view.core)
            .collect()
    }

    fn fill_inputs<B: AsRef<[u8]>>(
        &mut self,
        views: &[CoreView<'m>],
        function: &str,
        inputs: &[SimInput<B>],
    ) -> Result<()> {
        for input in inputs.iter().filter(|i| i.function == function) {
            let Some(view) = views.get(input.core) else {
                continue;
            };
            let bytes = input.bytes.as_ref();
            for id in self.own_locations(view, &input.set) {
                let buf = &mut self.mem.bufs[id as usize].bytes;
                if buf.len() != bytes.len() {
                    return Err(wrong_input(
                        input,
                        format!("{} bytes for a {}-byte location", bytes.len(), buf.len()),
                    ));
                }
                buf.copy_from_slice(bytes);
            }
        }
        Ok(())
    }

    /// Const sets with `values`, filled like an Input (contract §3.8).
    fn fill_consts(&mut self, views: &[CoreView<'m>]) -> Result<()> {
        for view in views {
            let f = view.index.function;
            for set in &f.allocations {
                let Some(bytes) = super::consts::const_bytes(&f.name, set)? else {
                    continue;
                };
                for id in self.own_locations(view, &set.name) {
                    let buf = &mut self.mem.bufs[id as usize].bytes;
                    if buf.len() == bytes.len() {
                        buf.copy_from_slice(&bytes);
                    }
                }
            }
        }
        Ok(())
    }

    fn output_sets<'v>(view: &'v CoreView<'m>) -> impl Iterator<Item = &'m crate::bir::MemoryLocationSet> + 'v {
        view.index.function.allocations.iter().filter(|s| s.is_output())
    }

    fn output_location(&self, view: &CoreView<'m>, set: &crate::bir::MemoryLocationSet) -> Option<LocId> {
        view.locs.get(&(set as *const _ as usize, 0)).copied()
    }

    fn track_outputs(&mut self, views: &[CoreView<'m>]) {
        for v in views {
            for s in Self::output_sets(v) {
                if let Some(id) = self.output_location(v, s) {
                    self.mem.track_writers(id);
                }
            }
        }
    }

    /// The final bytes and writers of every Output set. The memory is done
    /// with: a location's buffers are moved out at its last reader, cloned
    /// before (a shared Output location is every core's).
    fn collect_outputs(&mut self, views: &[CoreView<'m>]) {
        let mut readers: HashMap<LocId, usize> = HashMap::new();
        for v in views {
            for s in Self::output_sets(v) {
                if let Some(id) = self.output_location(v, s) {
                    *readers.entry(id).or_default() += 1;
                }
            }
        }
        for v in views {
            for s in Self::output_sets(v) {
                let Some(id) = self.output_location(v, s) else {
                    continue;
                };
                let last = readers.get_mut(&id).is_some_and(|r| {
                    *r -= 1;
                    *r == 0
                });
                let esize = crate::bir::dtype::dtype_size(&s.dtype).unwrap_or(1).max(1);
                let buf = &mut self.mem.bufs[id as usize];
                let (bytes, local) = if last {
                    (std::mem::take(&mut buf.bytes), buf.writers.take().unwrap_or_default())
                } else {
                    (buf.bytes.clone(), buf.writers.clone().unwrap_or_default())
                };
                let local = per_element(local, buf.esize, esize, bytes.len());
                let writers = self.global_writers(local);
                self.result.outputs.push(SimOutput {
                    core: v.core,
                    function: v.index.function.name.clone(),
                    set: s.name.clone(),
                    esize,
                    bytes,
                    writers,
                });
            }
        }
    }

    /// Run core `view.core` to its next sync point (None: the function ended).
    /// One core executes each op as it is compiled (there is no other order);
    /// with several, the ops that write something are kept in `ops` for
    /// [`Self::run_interval`].
    fn run_to_sync(
        &mut self,
        cores: Cores<'m>,
        view: &mut CoreView<'m>,
        cursor: &mut WalkCursor<'m>,
        ops: &mut Vec<Op>,
    ) -> Result<Option<SyncAt<'m>>> {
        let n = self.plan.lnc;
        let fname = view.index.function.name.clone();
        while let Some(inst) = cursor.next_instance(view.ctx)? {
            let i = inst.inst;
            if i.opcode == Opcode::LOOP {
                continue;
            }
            if inst.mask == Mask::Undecided {
                return Err(cannot_run(
                    view.core,
                    &fname,
                    i,
                    "its mask is undecided (runtime values)",
                ));
            }
            self.result.steps += 1;
            let writer = self.writer_id(view.core, inst.pos);
            let env = Env {
                cores,
                mem: &self.mem,
                lnc: n,
            };
            if i.opcode == Opcode::CORE_BARRIER {
                return Ok(Some(SyncAt { inst: i, part: None }));
            }
            if i.opcode == Opcode::COLLECTIVE_COMPUTE {
                let part = collective::compile_part(view, &env, i, inst.bindings, writer)?;
                return Ok(Some(SyncAt {
                    inst: i,
                    part: Some(part),
                }));
            }
            if i.opcode.name() == "DMATrigger" {
                for op in trigger::compile(view, &env, i, inst.bindings, writer)? {
                    self.issue(op, ops);
                }
                continue;
            }
            let op = view.compile(&env, i, inst.pos, inst.bindings, writer)?;
            self.issue(op, ops);
        }
        Ok(None)
    }

    /// Run a compiled op now (one core: there is no other order), or keep it
    /// for [`Self::run_interval`] when it writes something.
    fn issue(&mut self, op: Op, ops: &mut Vec<Op>) {
        self.result.elements += op.elements();
        if self.plan.lnc == 1 {
            let mut log = StoreLog {
                journal: None,
                writer: op.writer,
                track: true,
            };
            execute(&op, &mut self.mem, &mut log, &mut self.scratch);
        } else if op.writes_anything() {
            ops.push(op);
        }
    }

    /// Run one interval's ops forward (core 0 first); when the core order can
    /// matter, also in the reverse order, reporting the bytes that differ.
    fn run_interval(&mut self, ops: &[Vec<Op>], function: &str, k: usize, sync: Option<Arc<str>>) {
        let replay = conflict::cores_conflict(&mut self.conflicts, ops, self.mem.bufs.len());
        let start = if replay {
            self.mem.pending_snapshot()
        } else {
            Vec::new()
        };
        let mut journal = std::mem::take(&mut self.journal);
        journal.clear();
        for op in ops.iter().flatten() {
            let mut log = StoreLog {
                journal: replay.then_some(&mut journal),
                writer: op.writer,
                track: true,
            };
            execute(op, &mut self.mem, &mut log, &mut self.scratch);
        }
        if replay {
            self.compare_orders(ops, &journal, &start, function, k, sync);
        }
        self.journal = journal;
    }

    /// Replay the interval in the reverse core order and report the bytes
    /// that end different; leave the forward state in memory.
    fn compare_orders(
        &mut self,
        ops: &[Vec<Op>],
        fwd: &Journal,
        start: &[(LocId, Pending)],
        function: &str,
        k: usize,
        sync: Option<Arc<str>>,
    ) {
        let mut fwd_final = std::mem::take(&mut self.fwd_final);
        fwd_final.clear();
        for e in &fwd.entries {
            self.mem.gather(&e.span, &mut fwd_final);
        }
        let fwd_pending = self.mem.pending_snapshot();
        self.mem.undo(fwd);
        self.mem.pending_restore(start);
        let mut rev = std::mem::take(&mut self.reverse);
        rev.clear();
        for core_ops in ops.iter().rev() {
            for op in core_ops {
                let mut log = StoreLog {
                    journal: Some(&mut rev),
                    writer: op.writer,
                    track: false,
                };
                execute(op, &mut self.mem, &mut log, &mut self.scratch);
            }
        }
        let mut diffs = self.differences(fwd, &fwd_final);
        pending_differences(&fwd_pending, &self.mem.pending_snapshot(), &mut diffs);
        self.mem.undo(&rev);
        self.mem.pending_restore(&fwd_pending);
        let mut quiet = StoreLog {
            journal: None,
            writer: NO_WRITER,
            track: false,
        };
        for e in &fwd.entries {
            let len = e.span.byte_len();
            self.mem.store(&e.span, &fwd_final[e.at..e.at + len], None, &mut quiet);
        }
        for (loc, (least, count)) in diffs {
            let buf = &self.mem.bufs[loc as usize];
            let pb = buf.partition_bytes.max(1);
            self.result.races.push(DynRace {
                function: Arc::from(function),
                interval: k,
                sync: sync.clone(),
                location: buf.phys.clone(),
                partition: least / pb,
                byte: least % pb,
                bytes: count,
                forward: self.last_writer(fwd, loc, least),
                reverse: self.last_writer(&rev, loc, least),
            });
        }
        self.fwd_final = fwd_final;
        self.reverse = rev;
    }

    /// Per location: the least differing byte offset and how many differ.
    fn differences(&self, fwd: &Journal, fwd_final: &[u8]) -> BTreeMap<LocId, (i64, u64)> {
        let mut per_loc: BTreeMap<LocId, std::collections::BTreeSet<i64>> = BTreeMap::new();
        let mut cur = Vec::new();
        for e in &fwd.entries {
            cur.clear();
            self.mem.gather(&e.span, &mut cur);
            let want = &fwd_final[e.at..e.at + cur.len()];
            if cur == want {
                continue;
            }
            let es = e.span.esize as usize;
            let mut k = 0usize;
            for_each_run(&e.span.points, |x, n| {
                for j in 0..n * es {
                    if cur[k + j] != want[k + j] {
                        per_loc.entry(e.span.loc).or_default().insert(x * es as i64 + j as i64);
                    }
                }
                k += n * es;
            });
        }
        per_loc
            .into_iter()
            .filter_map(|(loc, s)| Some((loc, (*s.first()?, s.len() as u64))))
            .collect()
    }

    fn last_writer(&self, j: &Journal, loc: LocId, byte: i64) -> Option<Writer> {
        let e = j
            .entries
            .iter()
            .rev()
            .find(|e| e.span.loc == loc && covers(&e.span, byte))?;
        self.writer(e.writer)
    }
}

/// Elements whose pending sums end different in the two orders (a plain
/// access of one between accumulates in one order only), added to `diffs`.
fn pending_differences(fwd: &[(LocId, Pending)], rev: &[(LocId, Pending)], diffs: &mut BTreeMap<LocId, (i64, u64)>) {
    fn find(s: &[(LocId, Pending)], l: LocId) -> Option<&Pending> {
        s.iter().find(|x| x.0 == l).map(|x| &x.1)
    }
    let mut locs: Vec<LocId> = fwd.iter().chain(rev).map(|x| x.0).collect();
    locs.sort_unstable();
    locs.dedup();
    let empty = Pending::new();
    for l in locs {
        let (a, b) = (find(fwd, l).unwrap_or(&empty), find(rev, l).unwrap_or(&empty));
        let mut keys: Vec<u64> = a.keys().chain(b.keys()).copied().collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys.into_iter().filter(|key| a.get(key) != b.get(key)) {
            let e = diffs.entry(l).or_insert((key as i64, 0));
            e.0 = e.0.min(key as i64);
            e.1 += 1;
        }
    }
}

/// Writer ids tracked per `tracked`-byte element, as one per `esize`-byte
/// element of the set read (the writer of its first byte).
fn per_element(ids: Vec<u32>, tracked: i64, esize: i64, bytes: usize) -> Vec<u32> {
    if tracked == esize || ids.is_empty() {
        return ids;
    }
    let (t, e) = (tracked.max(1) as usize, esize.max(1) as usize);
    (0..bytes / e)
        .map(|k| ids.get(k * e / t).copied().unwrap_or(NO_WRITER))
        .collect()
}

fn covers(span: &Span, byte: i64) -> bool {
    let e = byte.div_euclid(span.esize.max(1));
    let mut hit = false;
    for_each_run(&span.points, |x, n| hit |= x <= e && e < x + n as i64);
    hit
}

/// The cores' k-th stops must be the same sync point (9402); its name.
fn agree(function: &str, k: usize, syncs: &[Option<SyncAt<'_>>]) -> Result<Option<Arc<str>>> {
    let key = |s: &Option<SyncAt<'_>>| s.as_ref().map(|s| (s.inst.opcode, s.inst.name.clone()));
    let first = key(&syncs[0]);
    for (c, s) in syncs.iter().enumerate().skip(1) {
        let here = key(s);
        if here != first {
            let show = |x: &Option<(Opcode, Arc<str>)>| match x {
                Some((op, name)) => format!("{name} ({})", op.name()),
                None => "the end of the function".to_string(),
            };
            return Err(Error::neuron_at(
                9402,
                format!(
                    "cores reach different sync points: after {k} sync points core 0 reaches {}, core {c} reaches {}",
                    show(&first),
                    show(&here)
                ),
                LOCATION,
                format!("function {function}, sync point {k}"),
            ));
        }
    }
    Ok(first.map(|f| f.1))
}

/// Every core's module's DMA queues, each module read once (a symbolic run
/// is one module on every core).
fn read_queues(programs: &[&Module]) -> Result<Vec<Option<Arc<Queues>>>> {
    let mut read: Vec<(*const Module, Option<Arc<Queues>>)> = Vec::new();
    let mut out = Vec::with_capacity(programs.len());
    for &m in programs {
        let key = m as *const Module;
        if let Some((_, q)) = read.iter().find(|(k, _)| *k == key) {
            out.push(q.clone());
            continue;
        }
        let q = Queues::of_module(m)?.map(Arc::new);
        read.push((key, q.clone()));
        out.push(q);
    }
    Ok(out)
}

fn wrong_input<B>(input: &SimInput<B>, why: String) -> Error {
    Error::neuron_at(
        9403,
        format!("input for set {} of function {}: {why}", input.set, input.function),
        LOCATION,
        format!("core {}, function {}, set {}", input.core, input.function, input.set),
    )
}

/// 9403: every input names an Input set of its core's function.
fn check_inputs<B>(plan: &Plan<'_>, inputs: &[SimInput<B>]) -> Result<()> {
    for i in inputs {
        let Some(m) = plan.programs.get(i.core) else {
            return Err(wrong_input(
                i,
                format!("core {} is not one of the {} cores", i.core, plan.lnc),
            ));
        };
        let set = m.function(&i.function).and_then(|f| f.memory_location_set(&i.set));
        match set {
            None => return Err(wrong_input(i, "no such set".into())),
            Some(s) if !s.is_input() => {
                return Err(wrong_input(
                    i,
                    format!("it is an {} set, not Input", s.kind.as_deref().unwrap_or("unkinded")),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}
