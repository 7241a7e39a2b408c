//! Loading big instruction arrays on several cores.
//!
//! A module's time goes into its instructions, and real modules keep them in
//! a few huge `functions[*].basic_blocks[*].instructions` arrays. For a text
//! with such arrays:
//!
//! 1. `plan.rs` finds the byte range of every element of the big arrays (a
//!    structural scan; anything unusual gives no plan).
//! 2. The elements are read in chunks on rayon's pool, each chunk with the
//!    serial grammar ([`InstK`]) and a loader state of its own: its own
//!    expression context, caches and shared-string tables. A chunk starts
//!    where a top-level block's instruction would: no loop axis in scope,
//!    the function's `registers` treated as not yet read (every register
//!    name is noted and checked when the chunk is spliced).
//! 3. Meanwhile the calling thread reads the module from a *skeleton*: the
//!    text with each big array replaced by its number. Where the serial
//!    read would read the array, [`InstsK`] splices the chunks in instead,
//!    in order, each as soon as it is read (`handover.rs`): its context is
//!    absorbed into the module's ([`Context::absorb`], which gives the same
//!    nodes in the same order as a serial read), its shard-id and register
//!    notes replayed; then the chunks' instructions move into their place in
//!    the array, ids remapped (every chunk at once when the pool is free,
//!    i.e. for the last array).
//!
//! 4. Pass 2 (names, `resolve.rs`): the names are collected in order, then
//!    the instructions are checked on every core.
//!
//! **Any failure falls back to the serial loader**, which reads the whole
//! text again: errors (their messages, codes and JSON paths) come from the
//! serial loader only. The result is the serial result: the same
//! instructions, the same context nodes in the same order, so the same
//! `to_json()` bytes and equality.
//!
//! Files: `plan.rs` (the scan), `handover.rs` (jobs → reader, and the
//! [`Chunk`] they hand over), `splice.rs` (a chunk into the module).
//!
//! [`Context::absorb`]: crate::pelican::Context::absorb

mod handover;
mod plan;
mod splice;

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;
use serde::de::DeserializeSeed;

use self::handover::{Board, Chunk, ChunkGuard, PlanGuard};
use self::plan::{plan, Plan, Sink};
pub(super) use self::splice::Splices;
use super::instruction::InstK;
use super::json::Fast;
use super::resolve::{name_hashes, names_resolve};
use super::seed::{Kind, Seed};
use super::{module, State};
use crate::bir::module::Module;
use crate::bir::schema::Spelling;

/// Smallest instruction array read in parallel: below it the chunks'
/// fixed costs (a context each, expressions parsed once per chunk) are not
/// paid back.
pub const PAR_MIN_ELEMENTS: usize = 4096;

/// Which way a load went (for tests and benchmarks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadPath {
    /// No plan (small or unusual text, or one thread): the serial loader.
    Serial,
    /// The parallel loader.
    Parallel,
    /// A plan, but the parallel read failed: the serial loader read it.
    Fallback,
}

/// Elements per chunk: small enough to balance the cores, large enough
/// that a chunk's fixed costs (a context, its expressions parsed once per
/// chunk) stay small.
const CHUNK: usize = 1024;

/// Read `text` with its big arrays in parallel. Err says why not: no plan
/// (`Serial`) or the parallel read failed (`Fallback`).
///
/// The scan runs as a job on the pool and hands chunks to the pool as it
/// finds them (reading overlaps scanning; first found, first read). The
/// calling thread reads the skeleton meanwhile and absorbs each chunk as
/// soon as it is read. Called from a pool thread, which must not block on
/// jobs queued behind it, it reads the skeleton once every job is done.
pub(super) fn load(text: &str, min_elements: usize) -> Result<Module, LoadPath> {
    if rayon::current_num_threads() < 2 {
        return Err(LoadPath::Serial);
    }
    let board = Arc::new(Board::default());
    let in_pool = rayon::current_thread_index().is_some();
    let early = rayon::in_place_scope_fifo(|scope| {
        let b = &board;
        scope.spawn_fifo(move |scope| {
            let mut guard = PlanGuard { board: b, plan: None };
            let mut sink = Spawner {
                scope,
                text,
                version: 2,
                spelling: Spelling::Lncsplit,
                board: b,
            };
            guard.plan = plan(text.as_bytes(), min_elements, CHUNK.min(min_elements.max(1)), &mut sink);
        });
        (!in_pool).then(|| read(text, &board))
    });
    early.unwrap_or_else(|| read(text, &board))
}

/// Read the skeleton once the plan is known, splicing the chunks in.
fn read(text: &str, board: &Arc<Board>) -> Result<Module, LoadPath> {
    let r = match board.plan() {
        None => Err(LoadPath::Fallback),
        Some(None) => Err(LoadPath::Serial),
        Some(Some(plan)) => board
            .arrays(plan.arrays.len())
            .and_then(|arrays| {
                let splices = Splices {
                    board: board.clone(),
                    arrays,
                    next: 0,
                    hashed: Vec::new(),
                    spelling: plan.spelling,
                };
                read_skeleton(text, &plan, splices)
            })
            .ok_or(LoadPath::Fallback),
    };
    if r.is_err() {
        // The chunks still queued are of no use.
        board.cancel();
    }
    r
}

/// Starts a job per chunk the scan hands over; each job hands its chunk
/// (or its failure) to the board.
struct Spawner<'s, 'a> {
    scope: &'a rayon::ScopeFifo<'s>,
    text: &'s str,
    version: u32,
    spelling: Spelling,
    board: &'s Board,
}

impl Sink for Spawner<'_, '_> {
    fn version(&mut self, version: u32) {
        self.version = version;
    }

    fn spelling(&mut self, spelling: Spelling) {
        self.spelling = spelling;
    }

    fn chunk(&mut self, array: usize, elements: Vec<Range<usize>>) {
        let (text, version, spelling, board) = (self.text, self.version, self.spelling, self.board);
        let seq = board.register(array);
        self.scope.spawn_fifo(move |_| {
            let mut guard = ChunkGuard {
                board,
                seq,
                chunk: None,
            };
            if !board.cancelled() {
                // Each chunk shares its equal values in its own state's tables.
                guard.chunk = read_chunk(text, &elements, version, spelling);
            }
        });
    }
}

/// Read the skeleton, splicing the chunks in.
fn read_skeleton(text: &str, plan: &Plan, splices: Splices) -> Option<Module> {
    let skeleton = skeleton(text, plan);
    let mut st = State::new(None);
    st.splices = Some(Box::new(splices));
    st.fast = true;
    let mut de = Fast::new(&skeleton);
    let m = Seed::<module::ModuleK>::new(&mut st).deserialize(&mut de).ok()?;
    de.end().ok()?;
    let sp = st.splices.as_ref()?;
    let all_spliced = sp.next == sp.arrays.len();
    // Pass 2 (names), skipped while reading the skeleton: the functions at
    // once, with the names' hashes the chunks computed.
    let unique = m.spelling == crate::bir::schema::Spelling::Lncsplit;
    let resolved = m.functions.par_iter().all(|f| names_resolve(f, &sp.hashed, unique));
    (all_spliced && resolved).then_some(m)
}

/// Read some elements of a top-level block's `instructions`.
fn read_chunk(text: &str, elements: &[Range<usize>], version: u32, spelling: Spelling) -> Option<Chunk> {
    let mut st = State::new(None);
    st.version = version;
    // Known from the scan: the blocks key of the array's function.
    st.spelling = Some(spelling);
    st.fast = true;
    // Where the serial read is when it reads an element (module, functions,
    // function, basic_blocks, block, instructions).
    st.depth = 6;
    let mut insts = Vec::with_capacity(elements.len());
    for r in elements {
        let mut de = Fast::new(text.get(r.clone())?);
        insts.push(InstK::de(&mut st, &mut de).ok()?);
        de.end().ok()?;
    }
    let mut hashes = Vec::with_capacity(insts.len());
    name_hashes(&insts, &mut hashes);
    Some(Chunk {
        hashes,
        insts,
        ctx: std::mem::take(&mut st.ctx),
        shards: std::mem::take(&mut st.shards),
        registers: std::mem::take(&mut st.pending_registers),
    })
}

/// The text with each big array replaced by its number.
fn skeleton(text: &str, plan: &Plan) -> String {
    let cut: usize = plan.arrays.iter().map(|a| a.len()).sum();
    let mut s = String::with_capacity(text.len() - cut + 8 * plan.arrays.len());
    let mut at = 0;
    for (k, a) in plan.arrays.iter().enumerate() {
        s.push_str(&text[at..a.start]);
        s.push_str(&k.to_string());
        at = a.end;
    }
    s.push_str(&text[at..]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::dump::dump_module;
    use crate::bir::load::{load_module_str, load_module_traced, load_serial};
    use crate::gen::{generate_module, GenOptions};
    use crate::pelican::ExprId;

    fn generated(seed: u64, instructions: usize) -> String {
        let m = generate_module(&GenOptions {
            seed,
            instructions,
            lnc: 2,
            ..GenOptions::default()
        })
        .expect("generates");
        String::from_utf8(dump_module(&m, 2).expect("dumps")).expect("utf-8")
    }

    /// The same module: bytes written, and the context's nodes and axes in
    /// the same order.
    fn assert_same(a: &Module, b: &Module) {
        assert_eq!(dump_module(a, 2).expect("dumps"), dump_module(b, 2).expect("dumps"));
        assert_eq!(a.ctx.len(), b.ctx.len());
        for i in 0..a.ctx.len() as u32 {
            assert_eq!(a.ctx.node(ExprId(i)), b.ctx.node(ExprId(i)), "node {i}");
        }
        let axes = |m: &Module| -> Vec<(String, i64, i64, i64)> {
            m.ctx
                .axes()
                .iter()
                .map(|x| (x.name.to_string(), x.lo, x.ub, x.step))
                .collect()
        };
        assert_eq!(axes(a), axes(b));
    }

    #[test]
    fn parallel_load_equals_serial_load_on_generated_modules() {
        for seed in [1, 2, 3] {
            let text = generated(seed, 3000);
            let serial = load_module_str(&text).expect("loads");
            for min in [1, 64, 500] {
                let (par, path) = load_module_traced(&text, min);
                assert_eq!(path, LoadPath::Parallel, "seed {seed}, min {min}");
                assert_same(&serial, &par.expect("loads"));
            }
        }
    }

    #[test]
    fn a_load_on_a_pool_thread_reads_in_parallel_after_the_scan() {
        // A pool thread must not wait for jobs queued behind it: it reads
        // the skeleton once the scope's jobs are done.
        let text = generated(5, 3000);
        let serial = load_module_str(&text).expect("loads");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        let (par, path) = pool.install(|| load_module_traced(&text, 64));
        assert_eq!(path, LoadPath::Parallel);
        assert_same(&serial, &par.expect("loads"));
        // Both pool threads loading at once.
        let (a, b) = pool.install(|| rayon::join(|| load_module_traced(&text, 64), || load_module_traced(&text, 64)));
        for (m, path) in [a, b] {
            assert_eq!(path, LoadPath::Parallel);
            assert_same(&serial, &m.expect("loads"));
        }
    }

    /// `text` with its `n`-th `pat` replaced.
    fn nth_replaced(text: &str, pat: &str, to: &str, n: usize) -> String {
        let (at, _) = text.match_indices(pat).nth(n).expect("enough matches");
        format!("{}{to}{}", &text[..at], &text[at + pat.len()..])
    }

    fn error_of(r: crate::error::Result<Module>) -> String {
        format!("{:?}", r.expect_err("an error"))
    }

    #[test]
    fn an_error_inside_a_big_array_is_the_serial_error() {
        let text = generated(4, 2000);
        let serial_ok = load_module_str(&text).expect("loads");
        drop(serial_ok);
        // An unknown opcode in the middle of the biggest array, and a
        // dependency on an instruction that does not exist.
        // An instruction named like the first one of the first array (pass 2,
        // across chunks).
        let first = text.split("\"instructions\":[{\"name\":\"").nth(1).expect("an array");
        let first = &first[..first.find('"').expect("a name")];
        let cases = [
            nth_replaced(&text, "\"name\":\"", &format!("\"name\":\"{first}\",\"x\":\""), 1900),
            nth_replaced(&text, "\"opcode\":\"", "\"opcode\":\"Nope", 1500),
            nth_replaced(&text, "\"name\":\"", "\"name\":7,\"x\":\"", 1700),
            nth_replaced(&text, "\"dependencies\":[", "\"dependencies\":[\"nowhere\",", 900),
        ];
        for bad in cases {
            let serial = error_of(load_serial(&bad));
            let (par, path) = load_module_traced(&bad, 64);
            assert_eq!(error_of(par), serial);
            assert_eq!(path, LoadPath::Fallback);
        }
    }
}
