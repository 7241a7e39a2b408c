//! `lncsplit gen`: a seeded generator of realistic symbolic modules
//! (contract §1, §5). The same seed and options give the same module, and so
//! the same bytes, on every machine (ChaCha8 + `rand`'s portable integer
//! sampling; no hash-map iteration anywhere).
//!
//! What a generated module contains (all in function `main`, plus sometimes a
//! small second function `aux`):
//! - SB, PSUM and DRAM memory location sets, including shared DRAM sets
//!   (`addr_space: "Shared"`, left unplaced: the pipeline's shared-DRAM pass
//!   places them once on core 0 and sets `is_shared_post_dram_alloc`) and
//!   replicated ifmap sets read by Matmults with `replication_resolution` R > 1
//!   (rows·R ≤ 128, one writer per set before its readers);
//! - compute and DMA instructions whose `symbolic_ap` arguments address memory
//!   quasi-affinely in the ShardId (`ub` = lnc) and the enclosing loop IVs;
//! - shard-predicated instructions (true on some cores only);
//! - `Loop` regions with nested blocks (up to three deep) using `AffIVKind`;
//! - CoreBarriers (no predicates: active on all cores; dense ids 0, 1, …);
//! - GPSIMDSB2SB ops every core executes equally (only when lnc == 2);
//! - CollectiveCompute ops of every kind the LNC tail lowers, in turn:
//!   `SendRecv`, `SendRecvCCE`, `AllReduce`, `ReduceScatter`, `AllGather`,
//!   `Permute`;
//! - `[name, "Flow"]` dependencies on earlier instructions.
//!
//! **Guarantees** (contract §3.6, §3.8), so that every generated module passes
//! the whole pipeline — lnc_barriercheck included — and can be simulated:
//! - *Shared data is written first.* Each function starts with one
//!   unpredicated `shared_init_<k>` DMA per shared set, in which core c writes
//!   its own slice (columns `c·S … (c+1)·S`, S = columns / lnc) from a private
//!   input: the first access to every shared location is a write, on every core,
//!   at the same position.
//! - *Cross-core accesses are ordered by barriers.* Between two CoreBarriers
//!   (an *epoch*) each shared set is in one mode, drawn at every barrier: *own*
//!   (a core reads and writes only its own slice) or *read* (every core reads,
//!   from its neighbour's slice `((c+1) mod lnc)·S`; nobody writes). Loop bodies
//!   hold no barrier, so a whole loop lives in one epoch. Two cores thus touch a
//!   common byte of a shared set only in different epochs. A GPSIMDSB2SB core c
//!   reads slice c of its own `sb_peer` and writes slice c of its partner's, which
//!   the partner never reads: disjoint too. Collectives use their own buffers
//!   (`cc_in`, `cc_out`, and `cc_sb_in`/`cc_sb_out` when lnc == 2), which no
//!   other instruction touches; their lowering brackets itself with barriers.
//! - *Simulable.* Copies (`DMACopy`, `TensorCopy`, GPSIMDSB2SB) have equal
//!   counts and element sizes on both sides; every DRAM set, and every SB set a
//!   DMA pairs with one, is bfloat16. Collectives: `replica_groups` `[[0…N−1]]`,
//!   `recv_from_rank` = (c+1) mod N and `send_to_rank` = (c−1) mod N (so
//!   recv_from(send_to(c)) = c, and send_to(c) = 1 − c when N == 2), counts that
//!   fit the kind (equal for SendRecv, SendRecvCCE, Permute and AllReduce;
//!   |out| = N·|in| for AllGather; |in| = N·|out| for ReduceScatter), an
//!   AllReduce over a dim whose extent is ≥ 4 and divisible by N (the AP's and
//!   the set's), and — lnc == 2 — a SendRecv between SB sets moving ≤ 1024 bytes
//!   per partition (the GPSIMDSB2SB path; other N: DRAM).
//! - *Generic on request.* [`GenOptions::lnc_generic`] (`gen --lnc-generic
//!   NMAX`) makes a module valid for every N ≤ NMAX at once (contract §3.11):
//!   sets sized for NMAX cores, CoreBarriers over every core (`cores: []`), no
//!   GPSIMDSB2SB and no collective (each fixes N).
//! - *Racy on request.* [`GenOptions::racy`] plants known races: unpredicated
//!   `racy_<n>` DMAs writing the same, shard-independent columns of a shared
//!   set on every core (one right after the shared writers, more at random).
//!   With lnc ≥ 2 each is a write-write race of its own core copies (and with
//!   whatever else touches those bytes in its epoch); every race of a racy
//!   module involves a `racy_` instruction.
//!
//! The module is built directly in the typed model (no JSON parse), so it
//! scales to millions of instructions; `lncsplit gen` writes each module
//! straight to a file with the streaming writer. One file: the generator is one
//! seeded stream of decisions, and splitting it would scatter the invariants
//! above across files.

mod numeric;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use crate::bir::argument::{Argument, SymbolicAp};
use crate::bir::instruction::{Block, Dependency, Instruction, IntOrExpr, OpFields};
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};
use crate::bir::module::{Function, Module};
use crate::bir::opcode::Opcode;
use crate::bir::{Arch, Extra};
use crate::error::{Error, Result};
use crate::pelican::{AffinePredicate, AxisId, Context, ExprId};

pub mod scheduled;

/// Generator options. `instructions` counts every instruction, Loop
/// instructions and loop bodies included.
#[derive(Clone, Debug)]
pub struct GenOptions {
    pub seed: u64,
    pub instructions: usize,
    pub lnc: i64,
    /// Arch name; None picks one from the seed (gen3 mostly).
    pub arch: Option<String>,
    /// Module index inside a corpus (part of the name).
    pub index: usize,
    /// Plant known races (`racy_<n>` instructions) for tests of the checker.
    pub racy: bool,
    /// The size of access patterns: at most this many partitions (rows) per
    /// AP. None: the default sizes (every partition of the set; DRAM: the
    /// core's rows). See [`ApSize`].
    pub ap_partitions: Option<i64>,
    /// At most this many elements per partition (columns) per AP. None: the
    /// default (columns / (2·lnc)).
    pub ap_columns: Option<i64>,
    /// `--numeric`: a module whose compute computes values ([`numeric`]);
    /// `instructions` caps its random computing instructions.
    pub numeric: bool,
    /// `gen --lnc-generic NMAX` (contract §3.11): a module for every N ≤
    /// `lnc` at once. Its sets are sized for `lnc` cores (so every N ≤ `lnc`
    /// keeps every footprint inside its location), its CoreBarriers order
    /// every core (`cores: []`), and it has no instruction that fixes N — no
    /// GPSIMDSB2SB (N == 2 only) and no collective (their ranks and replica
    /// groups name `lnc` cores).
    pub lnc_generic: bool,
    /// A one-core scheduled module instead ([`scheduled`]: engines, DMA
    /// queues, `sync_info` semaphores; `racy` then drops waits).
    pub scheduled: bool,
}

/// The AP size caps of [`GenOptions`] (contract §3.8: "APs in the generator
/// are small" is the premise of the simulator's speed figure). A cap shrinks
/// every compute, DMA, Memset, Matmult, GPSIMDSB2SB and racy access from the
/// start of its window, both sides of a copy alike, so every guarantee holds
/// (equal copy counts, windows inside each core's slice). Collectives keep
/// counts that fit their kind: their per-core unit of columns is
/// `min(default, max(4, ap_columns / lnc))` (SendRecv on SB: twice that), so
/// an AllReduce's dim stays ≥ 4 and divisible by N. Two kinds of
/// instruction keep their full size, being one per set per function: the
/// `shared_init_<k>` writers (a core's whole slice) and the `ifmap_load_<k>`
/// replicated-set writers; a replicated Matmult's read keeps its rows (the
/// replication's rows), only its columns are capped. The caps draw no random numbers: a module with
/// caps has the same instructions, names and addresses' shapes as without.
#[derive(Clone, Copy, Debug, Default)]
struct ApSize {
    partitions: Option<i64>,
    columns: Option<i64>,
}

impl ApSize {
    fn rows(&self, n: i64) -> i64 {
        self.partitions.map_or(n, |p| n.min(p))
    }

    fn cols(&self, n: i64) -> i64 {
        self.columns.map_or(n, |c| n.min(c))
    }
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            seed: 0,
            instructions: 1000,
            lnc: 2,
            arch: None,
            index: 0,
            racy: false,
            ap_partitions: None,
            numeric: false,
            ap_columns: None,
            lnc_generic: false,
            scheduled: false,
        }
    }
}

/// The collective kinds the LNC tail lowers (contract §3.6), emitted in turn.
const CC_KINDS: [&str; 6] = [
    "SendRecv",
    "SendRecvCCE",
    "AllReduce",
    "ReduceScatter",
    "AllGather",
    "Permute",
];

/// What cores may do to a shared set in the current epoch (between barriers).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SharedMode {
    /// Each core reads and writes its own slice only.
    Own,
    /// Every core reads (its neighbour's slice); nobody writes.
    Read,
}

/// Which columns of a set an access may use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Window {
    /// The core's own window (`shard · extent/lnc` onwards).
    Own,
    /// The next core's window (`((shard + 1) mod lnc) · extent/lnc` onwards).
    Neighbour,
    /// Columns from 0, the same on every core (a planted race).
    Fixed,
}

#[derive(Clone)]
struct SetInfo {
    name: Arc<str>,
    dtype: Arc<str>,
    /// [partitions, free] (DRAM: [rows, cols]).
    shape: [i64; 2],
    mem: Mem,
    /// For replicated ifmap sets: (R, shift, rows).
    repl: Option<(i64, i64, i64)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mem {
    Sb,
    Psum,
    Dram,
    SharedDram,
}

struct Gen {
    rng: ChaCha8Rng,
    ctx: Context,
    lnc: i64,
    shard: ExprId,
    zero: ExprId,
    sb: Vec<SetInfo>,
    psum: Vec<SetInfo>,
    dram: Vec<SetInfo>,
    shared: Vec<SetInfo>,
    /// The mode of each shared set in the current epoch.
    shared_mode: Vec<SharedMode>,
    repl: Vec<SetInfo>,
    /// Collective buffers: `[cc_in, cc_out]` (DRAM) and, with lnc == 2, the SB
    /// pair of SendRecv.
    cc_dram: Vec<SetInfo>,
    cc_sb: Vec<SetInfo>,
    cc_counter: usize,
    racy: bool,
    /// [`GenOptions::lnc_generic`].
    generic: bool,
    /// Small SB set for GPSIMDSB2SB (≤ 1024 bytes per partition).
    sb2sb: Option<SetInfo>,
    /// Names of every instruction emitted so far in the current function.
    names: Vec<Arc<str>>,
    counter: usize,
    barrier_id: i64,
    ap: ApSize,
    /// PSUM partitions of the target arch (64 on inferentia, 128 elsewhere).
    psum_partitions: i64,
    axis_counter: usize,
    /// Enclosing loop axes (innermost last) while generating a body.
    axes: Vec<(AxisId, ExprId, i64)>,
    // Interned strings shared by every instruction (cheap clones).
    s: Strings,
}

struct Strings {
    flow: Arc<Value>,
    origin: Value,
    engines: Vec<Arc<str>>,
    bf16: Arc<str>,
    f32: Arc<str>,
}

const ENGINES: [&str; 6] = ["Pool", "Activation", "PE", "DMA", "DVE", "SP"];

fn ext(m: Map<String, Value>) -> Extra {
    if m.is_empty() {
        None
    } else {
        Some(Arc::new(m))
    }
}

impl Gen {
    fn new(seed: u64, lnc: i64) -> Result<Gen> {
        let mut ctx = Context::with_capacity(1024);
        let shard = ctx.shard_id(lnc)?;
        let zero = ctx.constant(0);
        Ok(Gen {
            rng: ChaCha8Rng::seed_from_u64(seed),
            ctx,
            lnc,
            shard,
            zero,
            sb: Vec::new(),
            psum: Vec::new(),
            dram: Vec::new(),
            shared: Vec::new(),
            shared_mode: Vec::new(),
            repl: Vec::new(),
            cc_dram: Vec::new(),
            cc_sb: Vec::new(),
            cc_counter: 0,
            racy: false,
            generic: false,
            sb2sb: None,
            names: Vec::new(),
            counter: 0,
            barrier_id: 0,
            ap: ApSize::default(),
            psum_partitions: 128,
            axis_counter: 0,
            axes: Vec::new(),
            s: Strings {
                flow: Arc::new(Value::from("Flow")),
                origin: Value::from("Penguin"),
                engines: ENGINES.iter().map(|e| Arc::from(*e)).collect(),
                bf16: Arc::from("bfloat16"),
                f32: Arc::from("float32"),
            },
        })
    }

    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.rng.random_range(0..v.len())]
    }

    // ------------------------------------------------------------- memory

    fn allocations(&mut self, prefix: &str) -> Vec<MemoryLocationSet> {
        let mut sets = Vec::new();
        let lnc = self.lnc;
        // SB: 8–12 sets of [128, F] bfloat16/float32, ≤ 4 KiB per partition each.
        let n_sb = self.rng.random_range(8..=12);
        let mut sb_addr = 0i64;
        for k in 0..n_sb {
            // sb_t0 is bfloat16: a DMA always finds an SB partner of the DRAM dtype.
            let f32 = k > 0 && self.rng.random_bool(0.3);
            let free = *self.pick(&[256i64, 512, 1024]) * lnc.max(1);
            let free = free.min(if f32 { 1024 } else { 2048 });
            let dtype = if f32 { self.s.f32.clone() } else { self.s.bf16.clone() };
            let info = SetInfo {
                name: format!("{prefix}sb_t{k}").into(),
                dtype,
                shape: [128, free],
                mem: Mem::Sb,
                repl: None,
            };
            let bytes = free * if f32 { 4 } else { 2 };
            sets.push(self.set(&info, "Internal", sb_addr, None));
            sb_addr += bytes;
            self.sb.push(info);
        }
        // A small set for GPSIMDSB2SB: [128, 256] bfloat16 = 512 B per partition.
        if lnc == 2 && !self.generic {
            let info = SetInfo {
                name: format!("{prefix}sb_peer").into(),
                dtype: self.s.bf16.clone(),
                shape: [128, 256],
                mem: Mem::Sb,
                repl: None,
            };
            sets.push(self.set(&info, "Internal", sb_addr, None));
            sb_addr += 512;
            self.sb2sb = Some(info);
        }
        // Replicated ifmap sets: rows·R ≤ 128.
        let n_repl = self.rng.random_range(1..=2);
        for k in 0..n_repl {
            let r = *self.pick(&[2i64, 4]);
            let rows = *self.pick(&[16i64, 32]).min(&(128 / r));
            let info = SetInfo {
                name: format!("{prefix}ifmap_r{k}").into(),
                dtype: self.s.bf16.clone(),
                shape: [rows, 512],
                mem: Mem::Sb,
                repl: Some((r, rows, rows)),
            };
            sets.push(self.set(&info, "Internal", sb_addr, None));
            sb_addr += 1024;
            self.repl.push(info);
        }
        // PSUM: 2–4 sets of [partitions, 512] float32 = one 2 KiB bank each.
        let n_psum = self.rng.random_range(2..=4);
        for k in 0..n_psum {
            let info = SetInfo {
                name: format!("{prefix}ps_t{k}").into(),
                dtype: self.s.f32.clone(),
                shape: [self.psum_partitions, 512],
                mem: Mem::Psum,
                repl: None,
            };
            sets.push(self.set(&info, "Internal", 0, Some(k)));
            self.psum.push(info);
        }
        // DRAM: inputs, outputs, internal scratch; [rows·lnc, cols].
        let mut dram_addr = 0i64;
        for (k, kind) in ["Input", "Input", "Output", "Internal", "Internal"].iter().enumerate() {
            let cols = *self.pick(&[1024i64, 2048, 4096]);
            let info = SetInfo {
                name: format!("{prefix}dram_{}{k}", kind.to_ascii_lowercase()).into(),
                dtype: self.s.bf16.clone(),
                shape: [128 * lnc, cols],
                mem: Mem::Dram,
                repl: None,
            };
            sets.push(self.set(&info, kind, dram_addr, None));
            dram_addr += 128 * lnc * cols * 2;
            self.dram.push(info);
        }
        // Shared DRAM: visible to every core, placed once; bfloat16 like every
        // DRAM set, so copies pair equal element sizes.
        for k in 0..self.rng.random_range(1..=2) {
            let info = SetInfo {
                name: format!("{prefix}shared_t{k}").into(),
                dtype: self.s.bf16.clone(),
                shape: [128, 1024],
                mem: Mem::SharedDram,
                repl: None,
            };
            sets.push(self.set(&info, "Internal", dram_addr, None));
            dram_addr += 128 * 1024 * 2;
            self.shared.push(info);
            self.shared_mode.push(SharedMode::Own);
        }
        // Collective buffers, touched by collectives only: 256·lnc columns, so an
        // AllGather's N·|in| and an AllReduce's dim divisible by N both fit.
        for (k, kind) in [(0, "Input"), (1, "Output")] {
            let info = SetInfo {
                name: format!("{prefix}cc_{}", ["in", "out"][k]).into(),
                dtype: self.s.bf16.clone(),
                shape: [128, 256 * lnc.max(1)],
                mem: Mem::Dram,
                repl: None,
            };
            sets.push(self.set(&info, kind, dram_addr, None));
            dram_addr += 128 * 256 * lnc.max(1) * 2;
            self.cc_dram.push(info);
        }
        // SendRecv's SB pair at lnc 2 (the GPSIMDSB2SB path): 1 KiB per partition.
        if lnc == 2 && !self.generic {
            for k in ["in", "out"] {
                let info = SetInfo {
                    name: format!("{prefix}cc_sb_{k}").into(),
                    dtype: self.s.bf16.clone(),
                    shape: [128, 512],
                    mem: Mem::Sb,
                    repl: None,
                };
                sets.push(self.set(&info, "Internal", sb_addr, None));
                sb_addr += 1024;
                self.cc_sb.push(info);
            }
        }
        sets
    }

    fn set(&mut self, info: &SetInfo, kind: &str, addr: i64, bank: Option<i64>) -> MemoryLocationSet {
        let (ty, addr_space) = match info.mem {
            Mem::Sb => ("SB", None),
            Mem::Psum => ("PSUM", None),
            Mem::Dram => ("DRAM", None),
            Mem::SharedDram => ("DRAM", Some(Arc::from("Shared"))),
        };
        let shared = info.mem == Mem::SharedDram;
        let mut lx = Map::new();
        if self.rng.random_bool(0.5) {
            lx.insert("tensor_id".into(), Value::from(self.rng.random_range(0..10_000)));
        }
        let loc = MemoryLocation {
            name: format!("{}_loc", info.name).into(),
            mem_type: Arc::from(ty),
            // Shared DRAM is placed after the split (pipeline order 82), not here.
            addr: if shared { None } else { Some(addr) },
            bank,
            base: if matches!(info.mem, Mem::Sb | Mem::Psum) {
                Some(0)
            } else {
                None
            },
            allocated: if shared { None } else { Some(true) },
            is_shared_post_dram_alloc: None,
            written_by_another_core: None,
            remote_local_target: None,
            dims: None,
            extra: ext(lx),
        };
        let mut sx = Map::new();
        sx.insert("tensor_class".into(), Value::from("Tensor"));
        MemoryLocationSet {
            name: info.name.clone(),
            kind: Some(Arc::from(kind)),
            dtype: info.dtype.clone(),
            tensor_shape: info.shape.to_vec(),
            partition_dim: Some(0),
            addr_space,
            locations: vec![loc],
            extra: ext(sx),
        }
    }

    // -------------------------------------------------------- expressions

    fn aff(&mut self, terms: &[(ExprId, i64)], c: i64) -> ExprId {
        // Generated terms are always index leaves with small coefficients.
        self.ctx.aff_expr(terms, c).unwrap_or(self.zero)
    }

    /// The free-dim start address of an access of `num` columns of a set of
    /// `extent` columns: quasi-affine in the shard and the innermost IV, inside
    /// the window `extent/lnc` columns wide that `window` names.
    fn free_addr(&mut self, extent: i64, num: i64, window: Window) -> ExprId {
        let lnc = self.lnc.max(1);
        let per_core = (extent / lnc).max(1);
        let iv_term = self
            .axes
            .last()
            .map(|&(_, iv, trip)| (iv, ((per_core - num) / trip.max(1)).max(0)));
        match window {
            Window::Fixed => return self.zero,
            Window::Neighbour => {
                let next = self.aff(&[(self.shard, 1)], 1);
                let core = self.ctx.modulo(next, lnc).unwrap_or(self.zero);
                let start = self.ctx.mult(core, per_core).unwrap_or(self.zero);
                return match iv_term {
                    Some((iv, step)) if step > 0 => {
                        let t = self.aff(&[(iv, step)], 0);
                        self.ctx.sum(&[start, t]).unwrap_or(start)
                    }
                    _ => start,
                };
            }
            Window::Own => {}
        }
        let mut terms = vec![(self.shard, per_core.min(extent - num).max(0))];
        if let Some(t) = iv_term {
            terms.push(t);
        }
        let base = self.aff(&terms, 0);
        match self.rng.random_range(0..10) {
            0 if extent > num => {
                // (shard·k + c) mod extent: wraps, still in range.
                let c = self.rng.random_range(0..4);
                let t = self.aff(&[(self.shard, per_core)], c);
                self.ctx.modulo(t, (extent - num).max(1)).unwrap_or(base)
            }
            1 => {
                // floor((shard·2k) / 2)
                let t = self.aff(&[(self.shard, 2 * per_core)], 0);
                self.ctx.floor_div(t, 2).unwrap_or(base)
            }
            _ => base,
        }
    }

    /// The default number of columns an access of `set` takes.
    fn default_num(&self, set: &SetInfo) -> i64 {
        (set.shape[1] / (2 * self.lnc.max(1))).max(1)
    }

    /// Columns of a copy between two sets: what both windows hold.
    fn copy_num(&self, a: &SetInfo, b: &SetInfo) -> i64 {
        self.default_num(a).min(self.default_num(b))
    }

    /// A symbolic access pattern over `set` (partition dim first), in its own window.
    fn sym_ap(&mut self, set: &SetInfo, out: bool) -> Argument {
        let num = self.default_num(set);
        self.sym_ap_n(set, num, out, Window::Own)
    }

    /// A symbolic access pattern of 128 partitions (private DRAM: the core's
    /// rows) × `num` columns of `set`, in `window`.
    fn sym_ap_n(&mut self, set: &SetInfo, num: i64, out: bool, window: Window) -> Argument {
        let parts = set.shape[0];
        let free = set.shape[1];
        let p_addr = if set.mem == Mem::Dram {
            // DRAM rows: a per-core window (partition-dim AffExpr has c == 0).
            self.aff(&[(self.shard, parts / self.lnc.max(1))], 0)
        } else {
            self.zero
        };
        let p_num = if set.mem == Mem::Dram {
            (parts / self.lnc.max(1)).max(1)
        } else {
            parts
        };
        let (p_num, num) = (self.ap.rows(p_num), self.ap.cols(num));
        let f_addr = self.free_addr(free, num, window);
        let mut x = Map::new();
        if out && self.rng.random_bool(0.05) {
            x.insert("tensor_indirect_arg_id".into(), Value::from(-1));
        }
        Argument::Symbolic(SymbolicAp {
            pwap: false,
            ap: smallvec::smallvec![[free, p_num], [1, num]],
            dtype: Some(set.dtype.clone()),
            memsetref: Some(set.name.clone()),
            addrs: smallvec::smallvec![p_addr, f_addr],
            tile_addrs: None,
            block_addrs: None,
            access_shape: if self.rng.random_bool(0.3) {
                Some(std::sync::Arc::new(json!([p_num, num])))
            } else {
                None
            },
            extra: ext(x),
        })
    }

    /// An access of `rows` partitions from `p_addr` × `num` columns from
    /// column 0 of `set` (the same on every core but for `p_addr`).
    fn plain_ap(&self, set: &SetInfo, p_addr: ExprId, rows: i64, num: i64) -> Argument {
        Argument::Symbolic(SymbolicAp {
            pwap: false,
            ap: smallvec::smallvec![[set.shape[1], rows], [1, num]],
            dtype: Some(set.dtype.clone()),
            memsetref: Some(set.name.clone()),
            addrs: smallvec::smallvec![p_addr, self.zero],
            tile_addrs: None,
            block_addrs: None,
            access_shape: None,
            extra: None,
        })
    }

    // ------------------------------------------------------- instructions

    fn name(&mut self, prefix: &str) -> Arc<str> {
        self.counter += 1;
        format!("{prefix}_{}", self.counter).into()
    }

    /// Record a finished instruction so later ones may depend on it.
    fn done(&mut self, i: Instruction) -> Instruction {
        self.names.push(i.name.clone());
        i
    }

    fn deps(&mut self) -> Option<Vec<Dependency>> {
        let n = self.names.len();
        if n == 0 || self.rng.random_bool(0.4) {
            return None;
        }
        let k = self.rng.random_range(1..=2.min(n));
        let mut out = Vec::with_capacity(k);
        for _ in 0..k {
            // Mostly recent instructions, sometimes far back.
            let back = if self.rng.random_bool(0.8) {
                self.rng.random_range(1..=8.min(n))
            } else {
                self.rng.random_range(1..=n)
            };
            let name = self.names[n - back].clone();
            if out.iter().any(|d: &Dependency| d.name == name) {
                continue;
            }
            out.push(Dependency {
                name,
                kind: Some(self.s.flow.clone()),
                bare: false,
            });
        }
        Some(out)
    }

    /// Shard predicates: true on some cores only (lnc > 1), sometimes also on
    /// a loop IV (undecided at split time).
    fn predicates(&mut self) -> Vec<AffinePredicate> {
        let mut p = Vec::new();
        if self.lnc > 1 && self.rng.random_bool(0.25) {
            let k = self.rng.random_range(0..self.lnc);
            let (expr, ge) = match self.rng.random_range(0..3) {
                // shard == k
                0 => (self.aff(&[(self.shard, 1)], -k), false),
                // shard ≥ max(k, 1)
                1 => (self.aff(&[(self.shard, 1)], -k.max(1)), true),
                // shard ≤ k
                _ => (self.aff(&[(self.shard, -1)], k.min(self.lnc - 2)), true),
            };
            p.push(AffinePredicate { expr, ge });
        }
        if let Some(&(_, iv, trip)) = self.axes.last() {
            if trip > 1 && self.rng.random_bool(0.15) {
                let e = self.aff(&[(iv, 1)], -1);
                p.push(AffinePredicate { expr: e, ge: true });
            }
        }
        p
    }

    fn engine(&mut self, e: usize) -> Option<Arc<str>> {
        Some(self.s.engines[e].clone())
    }

    fn base(&mut self, prefix: &str, opcode: Opcode, engine: usize) -> Instruction {
        let name = self.name(prefix);
        let dependencies = self.deps();
        let mut x = Map::new();
        if self.rng.random_bool(0.3) {
            x.insert("origin".into(), self.s.origin.clone());
        }
        Instruction {
            name,
            opcode,
            engine: self.engine(engine),
            ins: Vec::new(),
            outs: Vec::new(),
            indirection_ins: None,
            predicates: Vec::new(),
            dependencies,
            op: OpFields::None,
            extra: ext(x),
        }
    }

    fn compute(&mut self) -> Instruction {
        let (prefix, op, eng) = *self.pick(&[
            ("tt", 31u8, 4usize),
            ("act", 4, 1),
            ("act", 4, 1),
            ("tcopy", 23, 0),
            ("ts", 28, 4),
            ("tred", 27, 4),
        ]);
        let mut i = self.base(prefix, Opcode(op), eng);
        let a = self.pick_sb();
        if op == 23 {
            // TensorCopy: a copy of equal counts and element sizes.
            let c = self.pick_sb_of(&a.dtype);
            let num = self.copy_num(&a, &c);
            i.ins.push(self.sym_ap_n(&a, num, false, Window::Own));
            i.outs.push(self.sym_ap_n(&c, num, true, Window::Own));
            i.predicates = self.predicates();
            return self.done(i);
        }
        let b = self.pick_sb();
        let c = self.pick_sb();
        i.ins.push(self.sym_ap(&a, false));
        if op == 31 {
            i.ins.push(self.sym_ap(&b, false));
        }
        if op == 28 {
            i.ins.push(Argument::Imm {
                dtype: Some(self.s.f32.clone()),
                value: Value::from(1.5),
                extra: None,
            });
        }
        i.outs.push(self.sym_ap(&c, true));
        i.predicates = self.predicates();
        self.done(i)
    }

    /// Small ops: a Memset (one output) or a semaphore/no-op (no arguments).
    fn small(&mut self) -> Instruction {
        if self.rng.random_bool(0.5) {
            let mut i = self.base("memset", Opcode(10), 0);
            let c = self.pick_sb();
            i.ins.push(Argument::Imm {
                dtype: Some(c.dtype.clone()),
                value: Value::from(0),
                extra: None,
            });
            i.outs.push(self.sym_ap(&c, true));
            i.predicates = self.predicates();
            self.done(i)
        } else {
            let (prefix, op) = *self.pick(&[("sem", 13u8), ("nop", 12)]);
            let mut i = self.base(prefix, Opcode(op), 5);
            if op == 13 {
                let mut x = (*i.extra.take().unwrap_or_default()).clone();
                x.insert("semaphore".into(), Value::from(self.rng.random_range(0..32)));
                x.insert("wait_value".into(), Value::from(self.rng.random_range(0..4)));
                i.extra = ext(x);
            }
            self.done(i)
        }
    }

    fn pick_sb(&mut self) -> SetInfo {
        let k = self.rng.random_range(0..self.sb.len());
        self.sb[k].clone()
    }

    /// An SB set of `dtype` (sb_t0 is bfloat16, so there is always one).
    fn pick_sb_of(&mut self, dtype: &str) -> SetInfo {
        let n = self.sb.iter().filter(|s| &*s.dtype == dtype).count();
        if n == 0 {
            return self.pick_sb();
        }
        let k = self.rng.random_range(0..n);
        self.sb
            .iter()
            .filter(|s| &*s.dtype == dtype)
            .nth(k)
            .cloned()
            .unwrap_or_else(|| self.sb[0].clone())
    }

    /// A DRAM set, and the epoch's mode when it is a shared one.
    fn pick_dram(&mut self) -> (SetInfo, Option<SharedMode>) {
        if !self.shared.is_empty() && self.rng.random_bool(0.2) {
            let k = self.rng.random_range(0..self.shared.len());
            return (self.shared[k].clone(), Some(self.shared_mode[k]));
        }
        let k = self.rng.random_range(0..self.dram.len());
        (self.dram[k].clone(), None)
    }

    /// A DMA between DRAM and SB. On a shared set it follows the epoch's mode:
    /// own slice (either direction) or, in a read epoch, a read of the
    /// neighbour's slice.
    fn dma(&mut self) -> Instruction {
        let mut i = self.base("dma", Opcode::DMA_COPY, 3);
        let (d, mode) = self.pick_dram();
        let s = self.pick_sb_of(&d.dtype);
        let num = self.copy_num(&d, &s);
        let read_epoch = mode == Some(SharedMode::Read);
        let window = if read_epoch { Window::Neighbour } else { Window::Own };
        if read_epoch || self.rng.random_bool(0.5) {
            i.ins.push(self.sym_ap_n(&d, num, false, window));
            i.outs.push(self.sym_ap_n(&s, num, true, Window::Own));
        } else {
            i.ins.push(self.sym_ap_n(&s, num, false, Window::Own));
            i.outs.push(self.sym_ap_n(&d, num, true, window));
        }
        let mode = if self.rng.random_bool(0.1) {
            Some(Arc::from("Transpose"))
        } else {
            None
        };
        i.op = OpFields::DmaCopy { mode };
        i.predicates = self.predicates();
        self.done(i)
    }

    /// The first writer of a shared set: core c writes its own slice (columns
    /// `c·S … (c+1)·S`) from its rows of the first DRAM input.
    fn shared_init(&mut self, set: &SetInfo) -> Instruction {
        let mut i = self.base("shared_init", Opcode::DMA_COPY, 3);
        let src = self.dram[0].clone();
        let lnc = self.lnc.max(1);
        let slice = (set.shape[1] / lnc).max(1);
        let rows = self.aff(&[(self.shard, src.shape[0] / lnc)], 0);
        i.ins.push(self.plain_ap(&src, rows, 128, slice));
        let mut out = self.plain_ap(set, self.zero, set.shape[0], slice);
        if let Argument::Symbolic(a) = &mut out {
            a.addrs[1] = self.aff(&[(self.shard, slice)], 0);
        }
        i.outs.push(out);
        i.op = OpFields::DmaCopy { mode: None };
        self.done(i)
    }

    /// A planted race: every core writes the same columns of a shared set.
    fn racy(&mut self) -> Instruction {
        let mut i = self.base("racy", Opcode::DMA_COPY, 3);
        let d = self.shared[self.rng.random_range(0..self.shared.len())].clone();
        let s = self.pick_sb_of(&d.dtype);
        let num = self.copy_num(&d, &s);
        i.ins.push(self.sym_ap_n(&s, num, false, Window::Own));
        i.outs.push(self.sym_ap_n(&d, num, true, Window::Fixed));
        i.op = OpFields::DmaCopy { mode: None };
        self.done(i)
    }

    fn matmult(&mut self, repl: Option<SetInfo>) -> Instruction {
        let mut i = self.base("mm", Opcode::MATMULT, 2);
        let ps = {
            let k = self.rng.random_range(0..self.psum.len());
            self.psum[k].clone()
        };
        let (rr, rs, rn) = match &repl {
            Some(set) => {
                let (r, shift, rows) = set.repl.unwrap_or((1, 0, 0));
                let num = self.ap.cols(set.shape[1] / 2);
                i.ins.push(Argument::Symbolic(SymbolicAp {
                    pwap: false,
                    ap: smallvec::smallvec![[set.shape[1], rows], [1, num]],
                    dtype: Some(set.dtype.clone()),
                    memsetref: Some(set.name.clone()),
                    addrs: smallvec::smallvec![self.zero, self.zero],
                    tile_addrs: None,
                    block_addrs: None,
                    access_shape: None,
                    extra: None,
                }));
                (
                    Some(IntOrExpr::Int(r)),
                    Some(IntOrExpr::Int(shift)),
                    Some(IntOrExpr::Int(rows)),
                )
            }
            None => {
                let a = self.pick_sb();
                let mut arg = self.sym_ap(&a, false);
                if let Argument::Symbolic(s) = &mut arg {
                    s.addrs[0] = self.zero; // Matmult inputs start at SB partition 0
                }
                i.ins.push(arg);
                (None, None, None)
            }
        };
        let w = self.pick_sb();
        let mut warg = self.sym_ap(&w, false);
        if let Argument::Symbolic(s) = &mut warg {
            s.addrs[0] = self.zero;
        }
        i.ins.push(warg);
        i.outs.push(self.sym_ap(&ps, true));
        i.op = OpFields::Matmult {
            replication_resolution: rr,
            replication_shift_amnt: rs,
            replication_num_rows: rn,
        };
        let mut x = (*i.extra.take().unwrap_or_default()).clone();
        x.insert("accumulation_flag".into(), Value::from(self.rng.random_range(0..4)));
        x.insert("is_transpose".into(), Value::from(false));
        x.insert("perf_mode".into(), Value::from("None"));
        i.extra = ext(x);
        if repl.is_none() {
            i.predicates = self.predicates();
        }
        self.done(i)
    }

    fn core_barrier(&mut self) -> Instruction {
        let mut i = self.base("cb", Opcode::CORE_BARRIER, 5);
        let id = self.barrier_id;
        self.barrier_id += 1;
        i.op = OpFields::CoreBarrier {
            id: Some(id),
            // A generic module's barriers order every core, whatever N is.
            cores: Some(if self.generic {
                Vec::new()
            } else {
                (0..self.lnc).collect()
            }),
            runtime_semaphore: Some(self.rng.random_range(0..16)),
            local_id: None,
        };
        // A new epoch: each shared set is owned per core or read by all.
        for k in 0..self.shared_mode.len() {
            self.shared_mode[k] = if self.rng.random_bool(0.5) {
                SharedMode::Own
            } else {
                SharedMode::Read
            };
        }
        self.done(i)
    }

    fn sb2sb(&mut self) -> Instruction {
        let mut i = self.base("sb2sb", Opcode::GPSIMD_SB2SB, 0);
        if let Some(set) = self.sb2sb.clone() {
            i.ins.push(self.sym_ap(&set, false));
            i.outs.push(self.sym_ap(&set, true));
        }
        self.done(i)
    }

    /// A collective of the next kind in [`CC_KINDS`], on its own buffers,
    /// with counts that fit its kind and ranks recv_from(send_to(c)) = c.
    fn collective(&mut self) -> Instruction {
        let mut i = self.base("cc", Opcode::COLLECTIVE_COMPUTE, 0);
        let lnc = self.lnc.max(1);
        let kind = CC_KINDS[self.cc_counter % CC_KINDS.len()];
        self.cc_counter += 1;
        let m = *self.pick(&[1i64, 2, 4]);
        // The per-core unit of columns (ApSize: small APs keep counts that fit).
        let u = match self.ap.columns {
            Some(c) => (32 * m).min((c / lnc).max(4)),
            None => 32 * m,
        };
        let (n_in, n_out) = match kind {
            "SendRecv" if !self.cc_sb.is_empty() => (2 * u, 2 * u),
            "AllReduce" => (u * lnc, u * lnc),
            "AllGather" => (u, u * lnc),
            "ReduceScatter" => (u * lnc, u),
            _ => (u, u),
        };
        let rows = self.ap.rows(128);
        let bufs = if kind == "SendRecv" && !self.cc_sb.is_empty() {
            self.cc_sb.clone()
        } else {
            self.cc_dram.clone()
        };
        i.ins.push(self.plain_ap(&bufs[0], self.zero, rows, n_in));
        i.outs.push(self.plain_ap(&bufs[1], self.zero, rows, n_out));
        // recv = (shard + 1) mod lnc, send = (shard + lnc - 1) mod lnc.
        let up = self.aff(&[(self.shard, 1)], 1);
        let down = self.aff(&[(self.shard, 1)], lnc - 1);
        let recv = self.ctx.modulo(up, lnc).unwrap_or(self.zero);
        let send = self.ctx.modulo(down, lnc).unwrap_or(self.zero);
        let op = *self.pick(&["add", "add", "max", "min"]);
        let group: Vec<i64> = (0..lnc).collect();
        i.op = OpFields::CollectiveCompute {
            cc_channel: Some(Box::new(json!({"kind": kind, "replica_groups": [group], "op": op}))),
            recv_from_rank: Some(IntOrExpr::Expr(recv)),
            send_to_rank: Some(IntOrExpr::Expr(send)),
            queue: Some(IntOrExpr::Int(self.rng.random_range(0..4))),
        };
        self.done(i)
    }

    /// The one writer of a replicated ifmap set (DMA from the core's rows of
    /// the first DRAM input, equal counts).
    fn repl_writer(&mut self, set: &SetInfo) -> Instruction {
        let mut i = self.base("ifmap_load", Opcode::DMA_COPY, 3);
        let d = self.dram[0].clone();
        let rows = set.repl.map(|r| r.2).unwrap_or(set.shape[0]);
        let p_addr = self.aff(&[(self.shard, d.shape[0] / self.lnc.max(1))], 0);
        i.ins.push(self.plain_ap(&d, p_addr, rows, set.shape[1]));
        i.outs.push(self.plain_ap(set, self.zero, rows, set.shape[1]));
        i.op = OpFields::DmaCopy { mode: None };
        self.done(i)
    }

    /// One Loop region of about `budget` instructions (≥ 2), nesting up to
    /// `depth` more levels.
    fn loop_region(&mut self, budget: usize, depth: usize) -> Instruction {
        let mut i = self.base("loop", Opcode::LOOP, 0);
        i.engine = None;
        self.axis_counter += 1;
        let trip = *self.pick(&[2i64, 4, 8, 16]);
        let axis_name = format!("i{}", self.axis_counter);
        let axis = self.ctx.add_axis(&axis_name, 0, trip, 1).unwrap_or(AxisId(0));
        let iv = self.ctx.affine_iv(axis).unwrap_or(self.zero);
        self.axes.push((axis, iv, trip));
        let mut left = budget.saturating_sub(1).max(1);
        let n_blocks = if left > 6 && self.rng.random_bool(0.3) { 2 } else { 1 };
        let mut blocks = Vec::with_capacity(n_blocks);
        for b in 0..n_blocks {
            let share = if b + 1 == n_blocks { left } else { left / 2 };
            left -= share;
            let mut insts = Vec::with_capacity(share);
            let mut k = share;
            while k > 0 {
                if depth > 0 && k >= 4 && self.rng.random_bool(0.15) {
                    let sub = self.rng.random_range(2..=k.min(12));
                    let inner = self.loop_region(sub, depth - 1);
                    let mut n = 0;
                    inner.walk(&mut |_| n += 1);
                    k = k.saturating_sub(n);
                    insts.push(inner);
                } else {
                    insts.push(self.body_op());
                    k -= 1;
                }
            }
            blocks.push(Block {
                name: format!("{}_body{b}", i.name).into(),
                instructions: insts,
                extra: None,
            });
        }
        self.axes.pop();
        i.op = OpFields::Loop {
            axis,
            axis_extra: None,
            blocks,
        };
        if self.rng.random_bool(0.1) {
            i.predicates = self.predicates();
        }
        self.done(i)
    }

    /// An instruction inside a loop body.
    fn body_op(&mut self) -> Instruction {
        match self.rng.random_range(0..10) {
            0..=3 => self.compute(),
            4..=5 => self.small(),
            6..=7 => self.dma(),
            _ => self.matmult(None),
        }
    }

    /// Top-level stream for one function: emits until `budget` instructions.
    fn function(&mut self, name: &str, prefix: &str, budget: usize, rich: bool) -> Function {
        self.names.clear();
        let allocations = self.allocations(prefix);
        let mut insts: Vec<Instruction> = Vec::with_capacity(budget.min(1 << 20));
        let mut count = 0usize;
        // Shared data is written first: one writer per shared set, at the very
        // start (unpredicated, so at the same position on every core).
        for set in self.shared.clone() {
            if count < budget {
                insts.push(self.shared_init(&set));
                count += 1;
            }
        }
        // Writers of the replicated ifmap sets come next.
        if rich {
            for set in self.repl.clone() {
                if count < budget {
                    insts.push(self.repl_writer(&set));
                    count += 1;
                }
            }
        }
        if self.racy && !self.shared.is_empty() && count < budget {
            insts.push(self.racy());
            count += 1;
        }
        while count < budget {
            let left = budget - count;
            let roll = self.rng.random_range(0..100);
            let inst = match roll {
                0..=24 => self.compute(),
                25..=41 => self.small(),
                42..=59 => self.dma(),
                60..=67 => self.matmult(None),
                68..=71 if rich && !self.repl.is_empty() => {
                    let set = self.repl[self.rng.random_range(0..self.repl.len())].clone();
                    self.matmult(Some(set))
                }
                72..=74 => self.core_barrier(),
                75..=77 if self.lnc == 2 && !self.generic => self.sb2sb(),
                78..=80 if !self.generic => self.collective(),
                81..=91 if left >= 3 => {
                    let sub = self.rng.random_range(2..=left.min(24));
                    self.loop_region(sub, 2)
                }
                92..=93 if self.racy && !self.shared.is_empty() => self.racy(),
                _ => self.compute(),
            };
            let mut n = 0;
            inst.walk(&mut |_| n += 1);
            count += n;
            insts.push(inst);
        }
        // Split the top-level stream into a few basic blocks.
        let n_blocks = if insts.len() > 64 {
            1 + self.rng.random_range(0..4)
        } else {
            1
        };
        let per = insts.len().div_ceil(n_blocks).max(1);
        let mut blocks = Vec::with_capacity(n_blocks);
        let mut it = insts.into_iter().peekable();
        let mut b = 0;
        while it.peek().is_some() || b == 0 {
            let chunk: Vec<Instruction> = it.by_ref().take(per).collect();
            blocks.push(Block {
                name: format!("{prefix}bb{b}").into(),
                instructions: chunk,
                extra: None,
            });
            b += 1;
        }
        // Every function reads the ShardId (ub = lnc), or lists it.
        let shard_ids = vec![self.lnc];
        let mut fx = Map::new();
        fx.insert("is_entry".into(), Value::from(name == "main"));
        Function {
            name: Arc::from(name),
            shard_ids,
            registers: if rich {
                Some(vec![Arc::from("r0"), Arc::from("r1")])
            } else {
                None
            },
            allocations,
            basic_blocks: blocks,
            extra: ext(fx),
        }
    }

    fn reset_function_state(&mut self) {
        self.sb.clear();
        self.psum.clear();
        self.dram.clear();
        self.shared.clear();
        self.shared_mode.clear();
        self.repl.clear();
        self.cc_dram.clear();
        self.cc_sb.clear();
        self.sb2sb = None;
        // Barrier ids keep counting across functions: renumberCoreBarriers uses
        // one running counter per module, which the concretized verifier checks.
    }
}

/// Generate one module.
pub fn generate_module(opts: &GenOptions) -> Result<Module> {
    if opts.scheduled {
        return scheduled::generate(opts);
    }
    if opts.lnc < 1 {
        return Err(Error::bir(format!("lnc must be ≥ 1, got {}", opts.lnc), "$"));
    }
    if opts.numeric {
        return numeric::generate(opts);
    }
    for (name, cap) in [("ap_partitions", opts.ap_partitions), ("ap_columns", opts.ap_columns)] {
        if let Some(c) = cap.filter(|&c| c < 1) {
            return Err(Error::bir(format!("{name} must be ≥ 1, got {c}"), "$"));
        }
    }
    let mut g = Gen::new(
        opts.seed ^ (opts.index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        opts.lnc,
    )?;
    let arch = match &opts.arch {
        Some(a) => Arch::from_name(a).ok_or_else(|| Error::bir(format!("Unknown architecture \"{a}\""), "$.arch"))?,
        None => *g.pick(&[Arch::Gen3, Arch::Gen3, Arch::Gen3, Arch::CoreV4]),
    };
    if arch == Arch::Inferentia {
        g.psum_partitions = 64;
    }
    g.racy = opts.racy;
    g.generic = opts.lnc_generic;
    g.ap = ApSize {
        partitions: opts.ap_partitions,
        columns: opts.ap_columns,
    };
    let second = opts.instructions >= 50 && g.rng.random_bool(0.3);
    let aux_budget = if second {
        (opts.instructions / 50).clamp(1, 200)
    } else {
        0
    };
    let main_budget = opts.instructions - aux_budget;
    let mut functions = vec![g.function("main", "", main_budget, true)];
    if second {
        g.reset_function_state();
        functions.push(g.function("aux", "aux_", aux_budget, false));
    }
    let mut attributes = Map::new();
    attributes.insert("previous_pass".into(), Value::from("lower_to_symbolic"));
    attributes.insert("pass_sequence_number".into(), Value::from(3));
    let mut mx = Map::new();
    mx.insert("revision".into(), Value::from(0));
    let artifact_path = if g.rng.random_bool(0.5) {
        Some(format!("out/gen{}_{}", opts.seed, opts.index))
    } else {
        None
    };
    let ctx = std::mem::take(&mut g.ctx);
    Ok(Module {
        version: 2,
        name: format!("gen{}_{}_nc_symbolic", opts.seed, opts.index),
        arch,
        arch_given: true,
        artifact_path,
        attributes: Some(attributes),
        functions,
        extra: ext(mx),
        ctx,
        spelling: crate::bir::schema::Spelling::Lncsplit,
        implied_core: None,
    })
}

/// The options of module `k` of a corpus generated with `opts` (`lncsplit gen`
/// writes module k to `DIR/gen_<kkkk>.json` through the one write policy,
/// `python/lncsplit/_atomic.py`).
pub fn corpus_module_options(opts: &GenOptions, k: usize) -> GenOptions {
    GenOptions {
        index: k,
        ..opts.clone()
    }
}
