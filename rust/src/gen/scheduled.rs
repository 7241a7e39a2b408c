//! `lncsplit gen --scheduled`: one-core modules as a scheduler would emit
//! them (contract §3.10) — placed memory, engines, DMA queues and `sync_info`
//! semaphores — for enginecheck's tests and benchmark. Seeded like the rest
//! of the generator (ChaCha8): the same options give the same module.
//!
//! What a module holds (function `main`, core 0):
//! - DRAM inputs, outputs and scratch tensors at distinct addresses of one
//!   arena; SB tiles allocated from 256-byte column slots (a whole tile: 128
//!   partitions; a half tile: 64 partitions at base 0 or 64), PSUM tiles from
//!   the 8 banks' 256-byte slots. A tile is one location set; when it dies
//!   its slot is reused by a new location — *allocator reuse*, which only a
//!   wait makes safe.
//! - Instructions on every engine: SP `DMACopy` loads and stores on queue
//!   `qSPDynamicHW`, Pool `DMATrigger`s starting a DMABlock (two
//!   descriptors, one per half of the partitions) of queue `qPoolDynamic`
//!   in the module's `queues`, Activation `DMACopy` spills and reloads on
//!   `qActDynamic`, PE `Matmult`s into PSUM, Activation `Activation`s out of
//!   PSUM, DVE `TensorTensor`s, Pool `Memset`s.
//! - Semaphores as a scheduler assigns them: one per stream (3 qSPDynamicHW,
//!   4 qPoolDynamic, 5 PE, 6 Activation, 7 DVE, 8 Pool, 9 qActDynamic),
//!   `+16` per DMA (at its completion), `+1` per compute instruction; every
//!   access waits for the last writer (and, when it writes, the readers since)
//!   of every byte it touches — unless program order on one engine already
//!   orders them — each wait naming the instruction whose update reaches its
//!   value. Blocks end with a Pool `EventSemaphore` waiting for every stream,
//!   an `AllEngineBarrier` and a `GroupResetSemaphores` of some streams (the
//!   others keep counting). Some blocks branch back to themselves
//!   (`CompareAndBranch`): loop bodies, checked once.
//!
//! **Guarantee.** Without `racy`, enginecheck finds nothing: no race, every
//! wait `ok`. With `racy` each wait is dropped with probability 1/4 (the
//! counts stay as they are): the races are the pairs those waits ordered.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use crate::bir::argument::{Ap, Argument, PhysicalAp};
use crate::bir::instruction::{Block, Instruction, OpFields};
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};
use crate::bir::module::{Function, Module};
use crate::bir::opcode::Opcode;
use crate::bir::{Arch, Extra};
use crate::error::{Error, Result};
use crate::pelican::Context;

use super::GenOptions;

const COLS: i64 = 64;
const SLOT_BYTES: i64 = COLS * 4;
const SB_SLOTS: usize = 48;
const PSUM_BANKS: usize = 8;
const PSUM_SLOTS: usize = 8;
const DRAM_IN: usize = 4;
const DRAM_OUT: usize = 2;
const DRAM_SCRATCH: usize = 4;
const TENSOR_BYTES: i64 = 128 * SLOT_BYTES;

/// A semaphore stream: its id, its count since its last reset, and who
/// brought it there.
#[derive(Clone)]
struct StreamState {
    id: i64,
    count: i64,
    step: i64,
    last: Option<Arc<str>>,
}

/// Streams, by index.
const SP_Q: usize = 0;
const POOL_Q: usize = 1;
const PE: usize = 2;
const ACT: usize = 3;
const DVE: usize = 4;
const POOL: usize = 5;
const ACT_Q: usize = 6;

/// One access that ordering must respect: which stream's count reached what
/// (and by which instruction), and whether it is compute on an engine.
#[derive(Clone)]
struct Mark {
    stream: usize,
    count: i64,
    from: Arc<str>,
    /// The engine of a compute access (program order orders it before every
    /// later instruction of that engine); None for a DMA.
    compute_on: Option<&'static str>,
}

/// The history of one resource (an SB slot half, a PSUM slot, a DRAM tensor).
#[derive(Clone, Default)]
struct History {
    writer: Option<Mark>,
    readers: Vec<Mark>,
}

#[derive(Clone)]
struct Tile {
    set: Arc<str>,
    loc: Arc<str>,
    /// Resources it covers.
    res: Vec<usize>,
    parts: i64,
    /// SB: (slot, base); PSUM: (bank, slot).
    place: (usize, i64),
    uses: u32,
}

struct Sched {
    rng: ChaCha8Rng,
    /// Draws only which waits `racy` drops: a racy module is the same module
    /// with waits missing.
    drop_rng: ChaCha8Rng,
    racy: bool,
    /// The next block is a loop body (so this block's reset is complete).
    next_loops: bool,
    streams: Vec<StreamState>,
    hist: Vec<History>,
    allocations: Vec<MemoryLocationSet>,
    sb_free: Vec<[bool; 2]>,
    psum_free: Vec<bool>,
    sb_live: Vec<Tile>,
    psum_live: Vec<Tile>,
    scratch_live: Vec<bool>,
    tiles: usize,
    names: usize,
    insts: Vec<Instruction>,
    blocks: Vec<Block>,
    queue_blocks: Vec<Value>,
}

fn phys(loc: &str, set: &str, offset: i64, parts: i64) -> Argument {
    let mut ap = Ap::new();
    ap.push([COLS, parts]);
    ap.push([1, COLS]);
    Argument::Physical(PhysicalAp {
        ap,
        offset: Some(offset),
        dtype: Some(Arc::from("float32")),
        memref: Some(Arc::from(loc)),
        memsetref: Some(Arc::from(set)),
        extra: None,
    })
}

fn arg_json(loc: &str, set: &str, offset: i64, parts: i64) -> Value {
    json!({"kind": "physical_ap", "ap": [[COLS, parts], [1, COLS]], "offset": offset,
           "dtype": "float32", "memref": loc, "memsetref": set})
}

fn ext(m: Map<String, Value>) -> Extra {
    if m.is_empty() {
        None
    } else {
        Some(Arc::new(m))
    }
}

/// Resource indices: SB slot halves first, then PSUM slots, then DRAM tensors.
fn sb_res(slot: usize, half: usize) -> usize {
    slot * 2 + half
}
fn psum_res(bank: usize, slot: usize) -> usize {
    SB_SLOTS * 2 + bank * PSUM_SLOTS + slot
}
fn dram_res(k: usize) -> usize {
    SB_SLOTS * 2 + PSUM_BANKS * PSUM_SLOTS + k
}

/// The DRAM tensors: inputs, outputs, scratch (in that order).
fn dram_name(k: usize) -> String {
    if k < DRAM_IN {
        format!("in{k}")
    } else if k < DRAM_IN + DRAM_OUT {
        format!("out{}", k - DRAM_IN)
    } else {
        format!("scratch{}", k - DRAM_IN - DRAM_OUT)
    }
}

/// What an instruction is, for its ordering.
#[derive(Clone, Copy)]
enum Unit {
    /// Compute on an engine: its stream and engine name.
    Compute(usize, &'static str),
    /// A DMA issued by an engine onto a queue's stream.
    Dma { queue: usize, engine: &'static str },
}

impl Sched {
    fn new(seed: u64, racy: bool) -> Sched {
        let ids = [3, 4, 5, 6, 7, 8, 9];
        let steps = [16, 16, 1, 1, 1, 1, 16];
        let mut s = Sched {
            rng: ChaCha8Rng::seed_from_u64(seed),
            drop_rng: ChaCha8Rng::seed_from_u64(seed ^ 0xD0_D0),
            racy,
            next_loops: false,
            streams: ids
                .iter()
                .zip(steps)
                .map(|(&id, step)| StreamState {
                    id,
                    count: 0,
                    step,
                    last: None,
                })
                .collect(),
            hist: vec![History::default(); dram_res(DRAM_IN + DRAM_OUT + DRAM_SCRATCH)],
            allocations: Vec::new(),
            sb_free: vec![[true; 2]; SB_SLOTS],
            psum_free: vec![true; PSUM_BANKS * PSUM_SLOTS],
            sb_live: Vec::new(),
            psum_live: Vec::new(),
            scratch_live: vec![false; DRAM_SCRATCH],
            tiles: 0,
            names: 0,
            insts: Vec::new(),
            blocks: Vec::new(),
            queue_blocks: Vec::new(),
        };
        for k in 0..DRAM_IN + DRAM_OUT + DRAM_SCRATCH {
            let kind = if k < DRAM_IN {
                "Input"
            } else if k < DRAM_IN + DRAM_OUT {
                "Output"
            } else {
                "Internal"
            };
            s.set(&dram_name(k), kind, "DRAM", k as i64 * TENSOR_BYTES, 0, 0, 128);
        }
        s
    }

    #[allow(clippy::too_many_arguments)]
    fn set(&mut self, name: &str, kind: &str, ty: &str, addr: i64, base: i64, bank: i64, parts: i64) {
        let mut loc = MemoryLocation::unplaced(Arc::from(name), Arc::from(ty));
        loc.addr = Some(addr);
        loc.base = Some(base);
        if ty == "PSUM" {
            loc.bank = Some(bank);
        }
        self.allocations.push(MemoryLocationSet {
            name: Arc::from(format!("{name}_set")),
            kind: Some(Arc::from(kind)),
            dtype: Arc::from("float32"),
            tensor_shape: vec![parts, COLS],
            partition_dim: None,
            addr_space: None,
            locations: vec![loc],
            extra: None,
        });
    }

    fn name(&mut self, what: &str) -> Arc<str> {
        self.names += 1;
        Arc::from(format!("{what}_{}", self.names))
    }

    /// A new SB tile in a free slot (half or whole), killing old tiles when full.
    fn sb_tile(&mut self) -> Tile {
        let half = self.rng.random_bool(0.3);
        loop {
            let cands: Vec<(usize, usize)> = (0..SB_SLOTS)
                .flat_map(|s| (0..2).map(move |h| (s, h)))
                .filter(|&(s, h)| {
                    if half {
                        self.sb_free[s][h]
                    } else {
                        h == 0 && self.sb_free[s][0] && self.sb_free[s][1]
                    }
                })
                .collect();
            if cands.is_empty() {
                let victim = self.rng.random_range(0..self.sb_live.len().max(1));
                if victim < self.sb_live.len() {
                    self.kill_sb(victim);
                }
                continue;
            }
            let (slot, h) = cands[self.rng.random_range(0..cands.len())];
            let (parts, base) = if half { (64, h as i64 * 64) } else { (128, 0) };
            let res = if half {
                vec![sb_res(slot, h)]
            } else {
                vec![sb_res(slot, 0), sb_res(slot, 1)]
            };
            if half {
                self.sb_free[slot][h] = false;
            } else {
                self.sb_free[slot] = [false, false];
            }
            self.tiles += 1;
            let loc: Arc<str> = Arc::from(format!("t{}", self.tiles));
            self.set(&loc, "Internal", "SB", slot as i64 * SLOT_BYTES, base, 0, parts);
            return Tile {
                set: Arc::from(format!("{loc}_set")),
                loc,
                res,
                parts,
                place: (slot, base),
                uses: 0,
            };
        }
    }

    fn kill_sb(&mut self, i: usize) {
        let t = self.sb_live.swap_remove(i);
        let (slot, base) = t.place;
        if t.parts == 128 {
            self.sb_free[slot] = [true, true];
        } else {
            self.sb_free[slot][(base / 64) as usize] = true;
        }
    }

    fn psum_tile(&mut self) -> Tile {
        loop {
            let cands: Vec<usize> = (0..PSUM_BANKS * PSUM_SLOTS).filter(|&i| self.psum_free[i]).collect();
            if cands.is_empty() {
                let victim = self.rng.random_range(0..self.psum_live.len().max(1));
                if victim < self.psum_live.len() {
                    let t = self.psum_live.swap_remove(victim);
                    self.psum_free[t.place.0 * PSUM_SLOTS + t.place.1 as usize] = true;
                }
                continue;
            }
            let i = cands[self.rng.random_range(0..cands.len())];
            self.psum_free[i] = false;
            let (bank, slot) = (i / PSUM_SLOTS, i % PSUM_SLOTS);
            self.tiles += 1;
            let loc: Arc<str> = Arc::from(format!("p{}", self.tiles));
            self.set(&loc, "Internal", "PSUM", slot as i64 * SLOT_BYTES, 0, bank as i64, 128);
            return Tile {
                set: Arc::from(format!("{loc}_set")),
                loc,
                res: vec![psum_res(bank, slot)],
                parts: 128,
                place: (bank, slot as i64),
                uses: 0,
            };
        }
    }

    /// The waits an instruction of `unit` needs for reading `reads` and
    /// writing `writes` (resources), one per stream (its largest count).
    fn waits_for(&mut self, unit: Unit, reads: &[usize], writes: &[usize]) -> Vec<(Arc<str>, i64, i64)> {
        let engine = match unit {
            Unit::Compute(_, e) | Unit::Dma { engine: e, .. } => e,
        };
        let mut need: Vec<Option<(i64, Arc<str>)>> = vec![None; self.streams.len()];
        let add = |m: &Mark, need: &mut Vec<Option<(i64, Arc<str>)>>| {
            if m.compute_on == Some(engine) {
                return; // program order on one engine
            }
            if need[m.stream].as_ref().is_none_or(|(c, _)| *c < m.count) {
                need[m.stream] = Some((m.count, m.from.clone()));
            }
        };
        for &r in reads {
            if let Some(w) = &self.hist[r].writer {
                add(w, &mut need);
            }
        }
        for &r in writes {
            if let Some(w) = &self.hist[r].writer {
                add(w, &mut need);
            }
            for m in &self.hist[r].readers {
                add(m, &mut need);
            }
        }
        let mut out = Vec::new();
        for (s, n) in need.into_iter().enumerate() {
            if let Some((count, from)) = n {
                if self.dropped() {
                    continue;
                }
                out.push((from, self.streams[s].id, count));
            }
        }
        out
    }

    /// Whether `racy` drops the next wait.
    fn dropped(&mut self) -> bool {
        self.racy && self.drop_rng.random_bool(0.25)
    }

    /// Count the instruction's update on its stream and record its accesses.
    fn account(&mut self, unit: Unit, name: &Arc<str>, reads: &[usize], writes: &[usize]) -> (i64, i64) {
        let (stream, compute_on) = match unit {
            Unit::Compute(s, e) => (s, Some(e)),
            Unit::Dma { queue, .. } => (queue, None),
        };
        let st = &mut self.streams[stream];
        st.count += st.step;
        st.last = Some(name.clone());
        let mark = Mark {
            stream,
            count: st.count,
            from: name.clone(),
            compute_on,
        };
        let id = st.id;
        let step = st.step;
        for &r in reads {
            self.hist[r].readers.push(mark.clone());
        }
        for &r in writes {
            self.hist[r] = History {
                writer: Some(mark.clone()),
                readers: Vec::new(),
            };
        }
        (id, step)
    }

    fn sync_info(waits: &[(Arc<str>, i64, i64)], update: Option<(i64, i64)>) -> Value {
        let mut o = Map::new();
        if !waits.is_empty() {
            o.insert(
                "on_wait".into(),
                Value::Array(
                    waits
                        .iter()
                        .map(|(f, id, v)| json!({"from": &**f, "id": id, "wait_value": v}))
                        .collect(),
                ),
            );
        }
        if let Some((id, v)) = update {
            o.insert("on_update".into(), json!([{"id": id, "update_value": v}]));
        }
        Value::Object(o)
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        name: Arc<str>,
        opcode: &str,
        engine: &str,
        ins: Vec<Argument>,
        outs: Vec<Argument>,
        mut extra: Map<String, Value>,
        sync: Value,
    ) {
        if sync.as_object().is_some_and(|o| !o.is_empty()) {
            extra.insert("sync_info".into(), sync);
        }
        let opcode = Opcode::from_name(opcode).unwrap_or(Opcode(12));
        let op = if opcode == Opcode::DMA_COPY {
            OpFields::DmaCopy { mode: None }
        } else {
            OpFields::None
        };
        let mut i = Instruction::bare(name, opcode, op);
        i.engine = Some(Arc::from(engine));
        i.ins = ins;
        i.outs = outs;
        i.extra = ext(extra);
        self.insts.push(i);
    }

    /// One instruction drawn from what is live.
    fn step(&mut self) {
        let r = self.rng.random_range(0..100);
        match r {
            0..=17 => self.load(),
            18..=27 => self.trigger(),
            28..=47 if !self.sb_live.is_empty() => self.matmul(),
            48..=61 if !self.psum_live.is_empty() => self.activation(),
            62..=79 if !self.sb_live.is_empty() => self.dve(),
            80..=87 if !self.sb_live.is_empty() => self.store(),
            88..=93 => self.memset(),
            94..=99 if !self.sb_live.is_empty() => self.spill_or_reload(),
            _ => self.load(),
        }
    }

    fn pick_sb(&mut self) -> usize {
        let i = self.rng.random_range(0..self.sb_live.len());
        self.sb_live[i].uses += 1;
        i
    }

    fn retire_used(&mut self) {
        // A tile read often enough dies (its slot becomes free for reuse).
        let mut i = 0;
        while i < self.sb_live.len() {
            if self.sb_live[i].uses >= 3 && self.rng.random_bool(0.5) {
                self.kill_sb(i);
            } else {
                i += 1;
            }
        }
    }

    fn load(&mut self) {
        let src = self.rng.random_range(0..DRAM_IN);
        let t = self.sb_tile();
        let unit = Unit::Dma {
            queue: SP_Q,
            engine: "SP",
        };
        let (reads, writes) = (vec![dram_res(src)], t.res.clone());
        let waits = self.waits_for(unit, &reads, &writes);
        let name = self.name("load");
        let upd = self.account(unit, &name, &reads, &writes);
        let din = dram_name(src);
        let offset = if t.parts == 64 { t.place.1 * COLS } else { 0 };
        let mut x = Map::new();
        x.insert("queue".into(), json!("qSPDynamicHW"));
        self.emit(
            name,
            "DMACopy",
            "SP",
            vec![phys(&din, &format!("{din}_set"), offset, t.parts)],
            vec![phys(&t.loc, &t.set, 0, t.parts)],
            x,
            Self::sync_info(&waits, Some(upd)),
        );
        self.sb_live.push(t);
    }

    fn trigger(&mut self) {
        let src = self.rng.random_range(0..DRAM_IN);
        let t = self.sb_tile();
        let unit = Unit::Dma {
            queue: POOL_Q,
            engine: "Pool",
        };
        let (reads, writes) = (vec![dram_res(src)], t.res.clone());
        let waits = self.waits_for(unit, &reads, &writes);
        let name = self.name("gather");
        let block: Arc<str> = Arc::from(format!("{name}_block"));
        let upd = self.account(unit, &block, &reads, &writes);
        let din = dram_name(src);
        let half = t.parts / 2;
        let desc: Vec<Value> = (0..2)
            .map(|k| {
                json!({"name": format!("{block}-desc{k}"), "opcode": "DMADescriptorCopy", "engine": "DMA",
                       "ins": [arg_json(&din, &format!("{din}_set"), k * half * COLS, half)],
                       "outs": [arg_json(&t.loc, &t.set, k * half * COLS, half)]})
            })
            .collect();
        self.queue_blocks.push(json!({
            "name": &*block, "opcode": "DMABlock", "engine": "DMA", "dma_trigger": &*name,
            "sync_info": {"on_update": [{"id": upd.0, "update_value": upd.1}]},
            "ins": [], "outs": [],
            "blocks": [{"name": format!("{block}_Block0"), "instructions": desc}],
        }));
        let mut x = Map::new();
        x.insert("queue".into(), json!("qPoolDynamic"));
        x.insert("dma_blocks".into(), json!([&*block]));
        self.emit(
            name,
            "DMATrigger",
            "Pool",
            vec![],
            vec![],
            x,
            Self::sync_info(&waits, None),
        );
        self.sb_live.push(t);
    }

    fn matmul(&mut self) {
        let a = self.pick_sb();
        let b = self.pick_sb();
        let (ta, tb) = (self.sb_live[a].clone(), self.sb_live[b].clone());
        let p = self.psum_tile();
        let unit = Unit::Compute(PE, "PE");
        let reads: Vec<usize> = ta.res.iter().chain(&tb.res).copied().collect();
        let waits = self.waits_for(unit, &reads, &p.res);
        let name = self.name("mm");
        let upd = self.account(unit, &name, &reads, &p.res);
        self.emit(
            name,
            "Matmult",
            "PE",
            vec![phys(&ta.loc, &ta.set, 0, ta.parts), phys(&tb.loc, &tb.set, 0, tb.parts)],
            vec![phys(&p.loc, &p.set, 0, 128)],
            Map::new(),
            Self::sync_info(&waits, Some(upd)),
        );
        self.psum_live.push(p);
        self.retire_used();
    }

    fn activation(&mut self) {
        let i = self.rng.random_range(0..self.psum_live.len());
        let p = self.psum_live.swap_remove(i);
        self.psum_free[p.place.0 * PSUM_SLOTS + p.place.1 as usize] = true;
        let t = self.sb_tile();
        let unit = Unit::Compute(ACT, "Activation");
        let waits = self.waits_for(unit, &p.res, &t.res);
        let name = self.name("act");
        let upd = self.account(unit, &name, &p.res, &t.res);
        let mut x = Map::new();
        x.insert("func".into(), json!("Exp"));
        self.emit(
            name,
            "Activation",
            "Activation",
            vec![phys(&p.loc, &p.set, 0, t.parts)],
            vec![phys(&t.loc, &t.set, 0, t.parts)],
            x,
            Self::sync_info(&waits, Some(upd)),
        );
        self.sb_live.push(t);
    }

    fn dve(&mut self) {
        let a = self.pick_sb();
        let b = self.pick_sb();
        let (ta, tb) = (self.sb_live[a].clone(), self.sb_live[b].clone());
        let t = self.sb_tile();
        let parts = ta.parts.min(tb.parts).min(t.parts);
        let unit = Unit::Compute(DVE, "DVE");
        let reads: Vec<usize> = ta.res.iter().chain(&tb.res).copied().collect();
        let waits = self.waits_for(unit, &reads, &t.res);
        let name = self.name("tt");
        let upd = self.account(unit, &name, &reads, &t.res);
        let mut x = Map::new();
        x.insert("op".into(), json!("add"));
        self.emit(
            name,
            "TensorTensor",
            "DVE",
            vec![phys(&ta.loc, &ta.set, 0, parts), phys(&tb.loc, &tb.set, 0, parts)],
            vec![phys(&t.loc, &t.set, 0, t.parts)],
            x,
            Self::sync_info(&waits, Some(upd)),
        );
        self.sb_live.push(t);
        self.retire_used();
    }

    fn store(&mut self) {
        let a = self.pick_sb();
        let ta = self.sb_live[a].clone();
        let dst = DRAM_IN + self.rng.random_range(0..DRAM_OUT);
        let unit = Unit::Dma {
            queue: SP_Q,
            engine: "SP",
        };
        let (reads, writes) = (ta.res.clone(), vec![dram_res(dst)]);
        let waits = self.waits_for(unit, &reads, &writes);
        let name = self.name("store");
        let upd = self.account(unit, &name, &reads, &writes);
        let dout = dram_name(dst);
        let mut x = Map::new();
        x.insert("queue".into(), json!("qSPDynamicHW"));
        self.emit(
            name,
            "DMACopy",
            "SP",
            vec![phys(&ta.loc, &ta.set, 0, ta.parts)],
            vec![phys(&dout, &format!("{dout}_set"), 0, ta.parts)],
            x,
            Self::sync_info(&waits, Some(upd)),
        );
        self.retire_used();
    }

    fn memset(&mut self) {
        let t = self.sb_tile();
        let unit = Unit::Compute(POOL, "Pool");
        let waits = self.waits_for(unit, &[], &t.res);
        let name = self.name("memset");
        let upd = self.account(unit, &name, &[], &t.res);
        self.emit(
            name,
            "Memset",
            "Pool",
            vec![],
            vec![phys(&t.loc, &t.set, 0, t.parts)],
            Map::new(),
            Self::sync_info(&waits, Some(upd)),
        );
        self.sb_live.push(t);
    }

    /// Activation-issued DMAs through DRAM scratch: a spill, or a reload of one.
    fn spill_or_reload(&mut self) {
        let k = self.rng.random_range(0..DRAM_SCRATCH);
        let res = dram_res(DRAM_IN + DRAM_OUT + k);
        let scratch = dram_name(DRAM_IN + DRAM_OUT + k);
        let unit = Unit::Dma {
            queue: ACT_Q,
            engine: "Activation",
        };
        let mut x = Map::new();
        x.insert("queue".into(), json!("qActDynamic"));
        if self.scratch_live[k] && self.rng.random_bool(0.5) {
            let t = self.sb_tile();
            let waits = self.waits_for(unit, &[res], &t.res);
            let name = self.name("reload");
            let upd = self.account(unit, &name, &[res], &t.res);
            self.emit(
                name,
                "DMACopy",
                "Activation",
                vec![phys(&scratch, &format!("{scratch}_set"), 0, t.parts)],
                vec![phys(&t.loc, &t.set, 0, t.parts)],
                x,
                Self::sync_info(&waits, Some(upd)),
            );
            self.sb_live.push(t);
        } else {
            let a = self.pick_sb();
            let ta = self.sb_live[a].clone();
            let waits = self.waits_for(unit, &ta.res, &[res]);
            let name = self.name("spill");
            let upd = self.account(unit, &name, &ta.res, &[res]);
            self.emit(
                name,
                "DMACopy",
                "Activation",
                vec![phys(&ta.loc, &ta.set, 0, ta.parts)],
                vec![phys(&scratch, &format!("{scratch}_set"), 0, ta.parts)],
                x,
                Self::sync_info(&waits, Some(upd)),
            );
            self.scratch_live[k] = ta.parts == 128;
        }
    }

    /// End the block: wait for every stream, an ALL barrier, a reset of some
    /// streams; maybe branch back to the block's start (a loop body).
    fn end_block(&mut self, k: usize, last: bool) {
        let all: Vec<(Arc<str>, i64, i64)> = self
            .streams
            .iter()
            .filter(|s| s.count > 0)
            .filter_map(|s| s.last.clone().map(|l| (l, s.id, s.count)))
            .collect();
        let mut waits = Vec::new();
        for w in all {
            if !self.dropped() {
                waits.push(w);
            }
        }
        let wname = self.name(&format!("b{k}-end-cb-wait"));
        self.emit(
            wname,
            "EventSemaphore",
            "Pool",
            vec![],
            vec![],
            Map::new(),
            Self::sync_info(&waits, None),
        );
        let bname = self.name(&format!("b{k}-barrier"));
        self.emit(bname, "AllEngineBarrier", "ALL", vec![], vec![], Map::new(), json!({}));
        // Everything before is complete and ordered before what follows.
        self.hist.iter_mut().for_each(|h| *h = History::default());
        let looping = self.next_loops;
        self.next_loops = !last && self.rng.random_bool(0.1);
        let mut group = Vec::new();
        let reset_all = looping || self.next_loops;
        for s in &mut self.streams {
            // A loop body starts and ends with every stream reset, so each
            // iteration counts the same.
            if reset_all || self.rng.random_bool(0.7) {
                group.push(s.id);
                s.count = 0;
                s.last = None;
            }
        }
        let rname = self.name(&format!("b{k}-sema-reset"));
        let mut x = Map::new();
        x.insert("sema_group".into(), json!(group));
        self.emit(rname, "GroupResetSemaphores", "ALL", vec![], vec![], x, json!({}));
        let block_name = format!("b{k}");
        if looping {
            for e in ["PE", "Activation", "DVE", "Pool", "SP"] {
                let n = self.name(&format!("b{k}-CompBr-{e}"));
                let mut x = Map::new();
                x.insert("comp_op".into(), json!("IS_LTIMM"));
                x.insert("on_true".into(), json!(block_name));
                x.insert("on_false".into(), json!(format!("b{}", k + 1)));
                self.emit(n, "CompareAndBranch", e, vec![], vec![], x, json!({}));
            }
        }
        let insts = std::mem::take(&mut self.insts);
        self.blocks.push(Block {
            name: Arc::from(block_name),
            instructions: insts,
            extra: None,
        });
    }
}

/// Generate one scheduled module.
pub fn generate(opts: &GenOptions) -> Result<Module> {
    let arch = match &opts.arch {
        Some(a) => Arch::from_name(a).ok_or_else(|| Error::bir(format!("Unknown architecture \"{a}\""), "$.arch"))?,
        None => Arch::Gen3,
    };
    let seed = opts.seed ^ (opts.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5C4E_D01E;
    let mut s = Sched::new(seed, opts.racy);
    let mut k = 0usize;
    let mut emitted = 0usize;
    let total = opts.instructions.max(1);
    while emitted < total {
        let size = s.rng.random_range(24..96usize).min(total - emitted);
        let body = size.saturating_sub(3).max(1);
        for _ in 0..body {
            s.step();
        }
        let last = emitted + size >= total;
        s.end_block(k, last);
        emitted += s.blocks.last().map_or(0, |b| b.instructions.len());
        k += 1;
    }
    let mut attributes = Map::new();
    attributes.insert("neuron_core_id".into(), Value::from(0));
    attributes.insert("previous_pass".into(), Value::from("lower_sync"));
    let queues = json!([
        {"name": "qSPDynamicHW", "blocks": []},
        {"name": "qPoolDynamic", "blocks": [{"name": "qPoolDynamic_Block0", "instructions": s.queue_blocks}]},
        {"name": "qActDynamic", "blocks": []},
    ]);
    let mut mx = Map::new();
    mx.insert("queues".into(), queues);
    Ok(Module {
        version: 2,
        name: format!("sched{}_{}", opts.seed, opts.index),
        arch,
        arch_given: true,
        artifact_path: None,
        attributes: Some(attributes),
        functions: vec![Function {
            name: Arc::from("main"),
            shard_ids: Vec::new(),
            registers: None,
            allocations: s.allocations,
            basic_blocks: s.blocks,
            extra: None,
        }],
        extra: ext(mx),
        ctx: Context::new(),
        spelling: crate::bir::schema::Spelling::Lncsplit,
        implied_core: None,
    })
}
