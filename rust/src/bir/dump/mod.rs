//! [`Module`] → BIR-JSON: a typed writer straight into one byte buffer.
//!
//! Key order is fixed: the modelled keys in schema order, then every unknown
//! key in the order it was read. `main` is written first among functions.
//! The same module always gives the same bytes (compact JSON, serde_json's
//! number and string formatting). Expressions are written as v2 trees from
//! the arena with a per-node byte cache (`expr.rs`), or in v1 on request.
//!
//! Writing is infallible except for an expression with no wire form
//! (`Unsupported expression kind`), a v1 request for a non-v1 expression and
//! I/O errors of a streaming sink.
//!
//! Files by shape, as `load/` is: `module.rs` (module, function, block),
//! `memory.rs`, `instruction.rs`, `argument.rs`; `expr.rs` (expressions),
//! `kept.rs` (shared strings and values), `out.rs` (the byte sink).

mod argument;
mod expr;
mod instruction;
mod kept;
mod memory;
mod module;
mod out;
#[cfg(test)]
mod reference;

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;

use self::expr::ExprWriter;
use self::kept::Kept;
use self::out::Out;
use super::argument::{Ap, Argument};
use super::instruction::{Block, Instruction};
use super::module::Module;
use super::schema::Spelling;
use super::Extra;
use crate::error::{Error, Result};
use crate::pelican::{Context, ExprId, Wire};

/// Bytes of JSON per instruction to expect when sizing the output buffer
/// (generated modules write about 640).
pub(super) const BYTES_PER_INSTRUCTION: usize = 700;

/// How a module is written: the wire version of its expressions (1 or 2)
/// and its key names (contract §1.7; None: the spelling it was read in).
/// A plain `u32` is a version in the module's own spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Form {
    pub version: u32,
    pub spelling: Option<Spelling>,
}

impl Form {
    pub fn new(version: u32, spelling: Option<Spelling>) -> Form {
        Form { version, spelling }
    }
}

impl From<u32> for Form {
    fn from(version: u32) -> Form {
        Form {
            version,
            spelling: None,
        }
    }
}

/// **The writer's one front door**: every entry writes through it. The
/// version is checked, and carried expressions are put in that version
/// (`carried::for_version`: a copy only for version 1), so a file holds one
/// encoding whichever way it is written (contract §1.1, §2.1); the spelling
/// is the one asked for, else the module's, and lncsplit's spelling of a
/// module that repeats an instruction name is refused (9010: its names are
/// unique, §1.7).
fn front(m: &Module, form: Form) -> Result<(Cow<'_, Module>, Spelling)> {
    check_version(form.version)?;
    let spelling = form.spelling.unwrap_or(m.spelling);
    if spelling == Spelling::Lncsplit {
        crate::bir::names::refuse_repeated_names(m, "lncsplit's spelling")?;
    }
    Ok((crate::bir::carried::for_version(m, form.version)?, spelling))
}

fn check_version(version: u32) -> Result<()> {
    if version != 1 && version != 2 {
        return Err(Error::pelican(
            "Check the version - should be 1 (old) or 2 (new)",
            "QuasiAffineExpr.cpp",
        ));
    }
    Ok(())
}

/// Functions with at least this many instructions in their blocks are
/// written in parallel runs by [`dump_module_parallel`].
const PAR_BLOCK: usize = 16384;

/// Serialize a module to JSON bytes in wire `version` (1 or 2; or a
/// [`Form`] naming the spelling too).
pub fn dump_module(m: &Module, form: impl Into<Form>) -> Result<Vec<u8>> {
    dump(m, form.into(), usize::MAX)
}

/// [`dump_module`] with large functions written on rayon's pool (runs of
/// instructions across their blocks, each with its own expression cache,
/// kept in order): the same bytes. For one big module written from Python; a corpus run keeps
/// one file per core and uses [`dump_module`].
pub fn dump_module_parallel(m: &Module, form: impl Into<Form>) -> Result<Vec<u8>> {
    dump(m, form.into(), PAR_BLOCK)
}

/// [`dump_module_parallel`] as the chunks it was written in: their
/// concatenation is the module's JSON. The parallel parts are not copied
/// together, so a caller that copies the bytes anyway (into a Python `str`
/// or `bytes`) copies them once.
pub fn dump_module_chunks(m: &Module, form: impl Into<Form>) -> Result<Chunks> {
    dump_module_chunks_in(m, form, Vec::new())
}

/// [`dump_module_chunks`] starting in `buf` (its capacity reused, see
/// [`Out::memory_in`]): the same bytes.
pub fn dump_module_chunks_in(m: &Module, form: impl Into<Form>, buf: Vec<u8>) -> Result<Chunks> {
    Ok(Chunks(dump_out_in(m, form.into(), PAR_BLOCK, buf)?.into_chunks()))
}

/// Every module's JSON ([`dump_module_chunks`]), the modules written on
/// rayon's pool when `parallel` (the N cores of one split): the same bytes
/// as writing them one after the other.
pub fn dump_modules_chunks(ms: &[&Module], form: impl Into<Form>, parallel: bool) -> Result<Vec<Chunks>> {
    dump_modules_chunks_in(ms, form, parallel, Vec::new())
}

/// [`dump_modules_chunks`] with module `i` started in `bufs[i]` (modules
/// past the end of `bufs` in new buffers): the same bytes.
pub fn dump_modules_chunks_in(
    ms: &[&Module],
    form: impl Into<Form>,
    parallel: bool,
    mut bufs: Vec<Vec<u8>>,
) -> Result<Vec<Chunks>> {
    use rayon::prelude::*;
    let version = form.into();
    bufs.resize_with(ms.len(), Vec::new);
    let work: Vec<(&Module, Vec<u8>)> = ms.iter().copied().zip(bufs).collect();
    if parallel {
        work.into_par_iter()
            .map(|(m, b)| dump_module_chunks_in(m, version, b))
            .collect()
    } else {
        work.into_iter()
            .map(|(m, b)| dump_module_chunks_in(m, version, b))
            .collect()
    }
}

/// A module's JSON in pieces, in order (see [`dump_module_chunks`]).
pub struct Chunks(pub Vec<Vec<u8>>);

impl Chunks {
    /// Total bytes.
    pub fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pair every chunk with its place in `dst` (exactly [`Chunks::len`]
    /// bytes), in pieces of at most `max` bytes: copies that threads can
    /// share.
    pub fn pieces<'a, 'd>(&'a self, dst: &'d mut [u8], max: usize) -> Vec<(&'a [u8], &'d mut [u8])> {
        let mut out = Vec::with_capacity(self.0.len());
        let mut rest = dst;
        for c in &self.0 {
            for src in c.chunks(max.max(1)) {
                let (head, tail) = std::mem::take(&mut rest).split_at_mut(src.len());
                out.push((src, head));
                rest = tail;
            }
        }
        out
    }

    /// Copy every chunk into `dst` (exactly [`Chunks::len`] bytes), pieces in
    /// parallel.
    pub fn copy_into(&self, dst: &mut [u8]) {
        use rayon::prelude::*;
        self.pieces(dst, 8 << 20)
            .into_par_iter()
            .for_each(|(src, d)| d.copy_from_slice(src));
    }

    /// [`Chunks::copy_into`], telling whether every byte is ASCII: each
    /// piece is checked 64 KiB at a time right after its copy, while it is
    /// still in cache (one pass over the bytes where a separate check then
    /// the copy made two).
    pub fn copy_into_ascii(&self, dst: &mut [u8]) -> bool {
        use rayon::prelude::*;
        const STEP: usize = 64 << 10;
        self.pieces(dst, 8 << 20)
            .into_par_iter()
            .map(|(src, d)| {
                let mut ascii = true;
                for (s, d) in src.chunks(STEP).zip(d.chunks_mut(STEP)) {
                    d.copy_from_slice(s);
                    ascii &= s.is_ascii();
                }
                ascii
            })
            .reduce(|| true, |a, b| a && b)
    }

    /// The bytes as one buffer, copied together on rayon's pool.
    pub fn concat_parallel(self) -> Vec<u8> {
        if self.0.len() <= 1 {
            return self.concat();
        }
        let mut out = vec![0u8; self.len()];
        self.copy_into(&mut out);
        out
    }

    /// The bytes as one buffer.
    pub fn concat(self) -> Vec<u8> {
        match <[Vec<u8>; 1]>::try_from(self.0) {
            Ok([one]) => one,
            Err(many) => many.concat(),
        }
    }
}

/// Functions of at least `par_block` instructions are written in parallel.
fn dump(m: &Module, form: impl Into<Form>, par_block: usize) -> Result<Vec<u8>> {
    Ok(dump_out(m, form, par_block)?.into_bytes())
}

fn dump_out(m: &Module, form: impl Into<Form>, par_block: usize) -> Result<Out<'static>> {
    dump_out_in(m, form.into(), par_block, Vec::new())
}

fn dump_out_in(m: &Module, form: Form, par_block: usize, buf: Vec<u8>) -> Result<Out<'static>> {
    let (m, spelling) = front(m, form)?;
    let m = &*m;
    let cap = m.instruction_count().saturating_mul(BYTES_PER_INSTRUCTION) + 4096;
    let mut o = Out::memory_in(buf, cap);
    let mut w = Writer::new(&m.ctx, form.version, spelling);
    w.par_block = par_block;
    w.module(&mut o, m)?;
    Ok(o)
}

/// Serialize a module into any writer (streamed in chunks of about 1 MB).
pub fn write_module<W: Write>(m: &Module, form: impl Into<Form>, mut w: W) -> Result<()> {
    let form = form.into();
    let (m, spelling) = front(m, form)?;
    let m = &*m;
    let mut o = Out::streaming(&mut w);
    Writer::new(&m.ctx, form.version, spelling).module(&mut o, m)?;
    o.flush().map_err(io)
}

/// Stream a module into the new file `tmp` (created exclusively, written in
/// ~1 MB chunks, fsynced when `fsync`), naming `target` in errors — `tmp`'s
/// directory when that is what is missing. The one write policy is the
/// caller's (`python/lncsplit/_atomic.py`: it picks the temporary name,
/// renames it into place and removes it on any failure); this is only its
/// streaming half, so a huge module is never materialized whole.
pub fn write_module_file(m: &Module, form: impl Into<Form>, tmp: &Path, target: &Path, fsync: bool) -> Result<()> {
    let form = form.into();
    let (m, spelling) = front(m, form)?;
    let m = &*m;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(|e| {
            let dir = tmp
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            Error::io(if dir.is_dir() { target } else { dir }, e)
        })?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, &file);
    let mut o = Out::streaming(&mut w);
    Writer::new(&m.ctx, form.version, spelling).module(&mut o, m)?;
    o.flush().map_err(|e| Error::io(target, e))?;
    w.flush().map_err(|e| Error::io(target, e))?;
    drop(w);
    if fsync {
        file.sync_all().map_err(|e| Error::io(target, e))?;
    }
    Ok(())
}

pub(super) fn io(e: std::io::Error) -> Error {
    Error::from(e)
}

/// Write one piece of a module with a fresh writer and parse it back.
fn to_value<'c>(
    ctx: &'c Context,
    version: u32,
    f: impl FnOnce(&mut Writer<'c>, &mut Out) -> Result<()>,
) -> Result<serde_json::Value> {
    check_version(version)?;
    let mut o = Out::memory(256);
    // Pieces (the views' JSON) are in lncsplit's spelling.
    f(&mut Writer::new(ctx, version, Spelling::Lncsplit), &mut o)?;
    serde_json::from_slice(&o.into_bytes()).map_err(|e| Error::pelican(e.to_string(), "QuasiAffineExpr.cpp"))
}

/// One instruction as JSON (the bytes `dump_module` writes for it).
pub fn instruction_to_value(ctx: &Context, i: &Instruction, version: u32) -> Result<serde_json::Value> {
    let i = crate::bir::carried::instruction_for_version(i, version)?;
    to_value(ctx, version, |w, o| w.instruction(o, &i))
}

/// One argument as JSON.
pub fn argument_to_value(ctx: &Context, a: &Argument, version: u32) -> Result<serde_json::Value> {
    let a = crate::bir::carried::argument_for_version(a, version)?;
    to_value(ctx, version, |w, o| w.argument(o, &a))
}

/// One block as JSON.
pub fn block_to_value(ctx: &Context, b: &Block, version: u32) -> Result<serde_json::Value> {
    let b = crate::bir::carried::block_for_version(b, version)?;
    to_value(ctx, version, |w, o| w.block(o, &b))
}

pub(super) fn extras(o: &mut Out, extra: &Extra) {
    if let Some(e) = extra {
        for (k, v) in e.iter() {
            o.key(k);
            o.value(v);
        }
    }
}

pub(super) fn ints(o: &mut Out, xs: &[i64]) {
    o.byte(b'[');
    for (i, x) in xs.iter().enumerate() {
        if i > 0 {
            o.byte(b',');
        }
        o.int(*x);
    }
    o.byte(b']');
}

pub(super) fn ap(o: &mut Out, ap: &Ap) {
    o.byte(b'[');
    for (i, [s, n]) in ap.iter().enumerate() {
        if i > 0 {
            o.byte(b',');
        }
        o.byte(b'[');
        o.int(*s);
        o.byte(b',');
        o.int(*n);
        o.byte(b']');
    }
    o.byte(b']');
}

/// `"key":value` for an optional field, in its place.
macro_rules! opt {
    ($o:expr, ($obj:ident $field:ident), $v:expr, $w:ident) => {
        if let Some(v) = $v {
            $o.raw(concat!(",\"", key!($obj $field), "\":").as_bytes());
            $o.$w(v);
        }
    };
}

/// `"key":string` for an optional shared string ([`Kept::str`]), in its place.
macro_rules! opt_shared {
    ($o:expr, $kept:expr, ($obj:ident $field:ident), $v:expr) => {
        if let Some(v) = $v {
            $o.raw(concat!(",\"", key!($obj $field), "\":").as_bytes());
            $kept.str($o, v);
        }
    };
}
use {opt, opt_shared};

/// Instructions `start..end` of block `block`: one piece of the parallel
/// writer.
pub(super) struct Run {
    block: usize,
    start: usize,
    end: usize,
}

impl Run {
    /// Every block cut into runs of at most `len` instructions, in order; an
    /// empty block is one empty run (its braces are still written).
    pub(super) fn cut(blocks: &[Block], len: usize) -> Vec<Run> {
        let mut out = Vec::new();
        for (block, b) in blocks.iter().enumerate() {
            let n = b.instructions.len();
            let mut start = 0;
            loop {
                let end = n.min(start + len.max(1));
                out.push(Run { block, start, end });
                if end == n {
                    break;
                }
                start = end;
            }
        }
        out
    }
}

/// Writes one module (its context's expressions share one byte cache, its
/// shared JSON values another).
pub(super) struct Writer<'c> {
    exprs: ExprWriter<'c>,
    kept: Kept,
    version: u32,
    spelling: Spelling,
    /// The depth-first position of the next instruction in its function
    /// (the compiler's spelling leaves out a Loop name `loop@<position>`).
    position: usize,
    /// A function with this many instructions in its blocks (not counting
    /// those inside loops) has them written in parallel runs.
    par_block: usize,
}

impl<'c> Writer<'c> {
    fn new(ctx: &'c Context, version: u32, spelling: Spelling) -> Self {
        Writer {
            exprs: ExprWriter::new(ctx),
            kept: Kept::default(),
            version,
            spelling,
            position: 0,
            par_block: usize::MAX,
        }
    }

    pub(super) fn expr(&mut self, o: &mut Out, id: ExprId) -> Result<()> {
        if self.version == 2 {
            return self.exprs.write(o, id);
        }
        // v1 is rare (on request only): the serde adaptor writes it.
        let w = Wire {
            ctx: self.exprs.ctx(),
            id,
            version: 1,
        };
        serde_json::to_writer(&mut o.buf, &w).map_err(|e| Error::pelican(e.to_string(), "QuasiAffineExpr.cpp"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::load_module;
    use crate::gen::{generate_module, GenOptions};

    /// The typed writer gives exactly the bytes of the serde reference writer.
    #[test]
    fn typed_writer_matches_the_serde_writer() {
        for seed in 0..12u64 {
            let o = GenOptions {
                seed,
                instructions: 300 + 50 * seed as usize,
                lnc: [1, 2, 4][seed as usize % 3],
                ..GenOptions::default()
            };
            let m = generate_module(&o).unwrap();
            let typed = dump_module(&m, 2).unwrap();
            assert_eq!(typed, reference::dump_module(&m, 2).unwrap(), "seed {seed}");
            let back = load_module(&typed).unwrap();
            assert_eq!(
                dump_module(&back, 2).unwrap(),
                reference::dump_module(&back, 2).unwrap()
            );
            let mut streamed = Vec::new();
            write_module(&m, 2, &mut streamed).unwrap();
            assert_eq!(streamed, typed);
            assert_eq!(dump(&m, 2, 64).unwrap(), typed);
        }
    }

    /// Runs cut across blocks (empty blocks, runs of one instruction, a run
    /// ending on a block's last instruction) join into the sequential bytes,
    /// in memory and through a sink.
    #[test]
    fn parallel_runs_across_blocks_give_the_sequential_bytes() {
        let o = GenOptions {
            seed: 5,
            instructions: 900,
            lnc: 2,
            ..GenOptions::default()
        };
        let mut m = generate_module(&o).unwrap();
        let f = &mut m.functions[0];
        let mut first = f.basic_blocks[0].clone();
        let tail = first.instructions.split_off(first.instructions.len() / 3);
        let mut second = first.clone();
        second.name = "second".into();
        second.instructions = tail;
        let mut empty = first.clone();
        empty.name = "empty".into();
        empty.instructions.clear();
        f.basic_blocks = vec![empty.clone(), first, empty.clone(), second, empty];
        let seq = dump_module(&m, 2).unwrap();
        assert_eq!(seq, reference::dump_module(&m, 2).unwrap());
        for par_block in [2, 16, 64, 1000] {
            assert_eq!(dump(&m, 2, par_block).unwrap(), seq, "par_block {par_block}");
            let chunks = dump_out(&m, 2, par_block).unwrap().into_chunks();
            assert_eq!(Chunks(chunks).concat_parallel(), seq, "par_block {par_block}");
        }
        let runs = Run::cut(&m.functions[0].basic_blocks, 7);
        assert_eq!(
            runs.iter().filter(|r| r.start == r.end).count(),
            3,
            "one run per empty block"
        );
    }

    /// A buffer sized far too small is sealed into chunks at instruction
    /// boundaries instead of growing: same bytes, several chunks.
    #[test]
    fn a_short_size_estimate_seals_chunks_with_the_same_bytes() {
        let o = GenOptions {
            seed: 9,
            instructions: 400,
            lnc: 2,
            ..GenOptions::default()
        };
        let m = generate_module(&o).unwrap();
        let seq = dump_module(&m, 2).unwrap();
        let mut out = Out::memory(16);
        Writer::new(&m.ctx, 2, Spelling::Lncsplit).module(&mut out, &m).unwrap();
        let chunks = out.into_chunks();
        assert!(chunks.len() > 1, "the 16-byte estimate was sealed");
        assert_eq!(Chunks(chunks).concat(), seq);
    }

    #[test]
    fn typed_writer_matches_the_serde_writer_on_escapes_floats_and_v1() {
        let text = r#"{"version":1,"name":"q\"\u0001é\\","arch":"trn2","attributes":{"x":1.5e300,"y":[-0.0,1e-7]},
          "functions":[{"name":"main","registers":["r\n"],"allocations":[{"name":"t","dtype":"float32","tensor_shape":[2,2],
          "locations":[{"name":"l","type":"SB","remote_local_target":{"name":"l","core":1},"z":null}]}],
          "basic_blocks":[{"name":"b","instructions":[{"name":"L","opcode":"Loop","axis":{"name":"i","ub":4,"u":"\t"},
          "blocks":[{"name":"bb","instructions":[{"name":"a","opcode":"DMACopy","mode":"Copy","ins":[
          {"kind":"symbolic_ap","ap":[[1,2]],"memsetref":"t","addrs":[{"terms":[{"AxisLabel":"i","coef":3}],"c":1,"op":"Mod","op_param":2}]},
          {"kind":"imm_value","value":2.25},{"kind":"register_ap","r":[1]}],"dependencies":["L",["L","Flow"],["L"]]},
          {"name":"cb","opcode":"CoreBarrier","id":1,"cores":[0,1],"runtime_semaphore":2,"local_id":0},
          {"name":"call","opcode":"Call","callee":"main","core":1}]}]}]}]}]}"#;
        let m = load_module(text.as_bytes()).unwrap();
        for v in [1, 2] {
            assert_eq!(
                dump_module(&m, v).unwrap(),
                reference::dump_module(&m, v).unwrap(),
                "v{v}"
            );
        }
    }

    /// The one-pass copy gives the bytes of `copy_into` and the answer of a
    /// separate ASCII check, wherever the one non-ASCII byte is (first or
    /// last byte, either side of a 64 KiB step, a later chunk, none).
    #[test]
    fn copy_into_ascii_copies_and_checks_in_one_pass() {
        let sizes = [0usize, 1, 70_000, (64 << 10) + 1, 3, 200_000];
        let base: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| (0..n).map(|i| b'a' + ((i + k) % 26) as u8).collect())
            .collect();
        let total: usize = sizes.iter().sum();
        let mut spots = vec![None, Some(0), Some(total - 1), Some(1 + (64 << 10)), Some(1 + 70_000)];
        spots.push(Some(total - 100_000));
        for spot in spots {
            let mut chunks = base.clone();
            if let Some(mut at) = spot {
                for c in chunks.iter_mut() {
                    if at < c.len() {
                        c[at] = 0xc3;
                        break;
                    }
                    at -= c.len();
                }
            }
            let chunks = Chunks(chunks);
            let mut one = vec![0u8; total];
            let ascii = chunks.copy_into_ascii(&mut one);
            let mut two = vec![0u8; total];
            chunks.copy_into(&mut two);
            assert_eq!(one, two, "spot {spot:?}");
            assert_eq!(ascii, chunks.0.iter().all(|c| c.is_ascii()), "spot {spot:?}");
            assert_eq!(ascii, spot.is_none(), "spot {spot:?}");
        }
    }
}
