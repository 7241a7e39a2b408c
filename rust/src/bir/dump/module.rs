//! The writer's module, function and block shapes (and a big function's
//! blocks written in parallel runs).

use super::memory::set;
use super::out::Out;
use super::{extras, ints, io, Run, Writer, BYTES_PER_INSTRUCTION};
use crate::bir::instruction::{Block, Instruction};
use crate::bir::module::{Function, Module};
use crate::bir::schema::{key, Spelling};
use crate::error::Result;

impl<'c> Writer<'c> {
    pub(super) fn module(&mut self, o: &mut Out, m: &'c Module) -> Result<()> {
        o.raw(concat!("{\"", key!(module version), "\":").as_bytes());
        o.uint(self.version as u64);
        // The compiler's dumps carry no name: an empty one is left out.
        if self.spelling == Spelling::Lncsplit || !m.name.is_empty() {
            o.raw(concat!(",\"", key!(module name), "\":").as_bytes());
            o.str(&m.name);
        }
        o.raw(concat!(",\"", key!(module arch), "\":").as_bytes());
        o.name(m.arch.name());
        if let Some(p) = &m.artifact_path {
            o.raw(concat!(",\"", key!(module artifact_path), "\":").as_bytes());
            o.str(p);
        }
        if let Some(a) = &m.attributes {
            o.raw(concat!(",\"", key!(module attributes), "\":").as_bytes());
            o.value_map(a);
        }
        o.raw(concat!(",\"", key!(module functions), "\":[").as_bytes());
        // The entry function (`main`) first, then the others in order.
        for (i, f) in m.entry_first().enumerate() {
            if i > 0 {
                o.byte(b',');
            }
            self.function(o, &m.functions[f])?;
        }
        o.byte(b']');
        extras(o, &m.extra);
        o.byte(b'}');
        Ok(())
    }

    pub(super) fn function(&mut self, o: &mut Out, f: &'c Function) -> Result<()> {
        o.raw(concat!("{\"", key!(function name), "\":").as_bytes());
        o.str(&f.name);
        if !f.shard_ids.is_empty() {
            o.raw(concat!(",\"", key!(function shard_ids), "\":").as_bytes());
            ints(o, &f.shard_ids);
        }
        if let Some(r) = &f.registers {
            o.raw(concat!(",\"", key!(function registers), "\":[").as_bytes());
            for (i, x) in r.iter().enumerate() {
                if i > 0 {
                    o.byte(b',');
                }
                o.str(x);
            }
            o.byte(b']');
        }
        o.raw(concat!(",\"", key!(function allocations), "\":[").as_bytes());
        for (i, s) in f.allocations.iter().enumerate() {
            if i > 0 {
                o.byte(b',');
            }
            set(o, s, self.spelling);
        }
        o.raw(match self.spelling {
            Spelling::Lncsplit => concat!("],\"", key!(function basic_blocks), "\":[").as_bytes(),
            Spelling::Compiler => concat!("],\"", key!(compiler function basic_blocks), "\":[").as_bytes(),
        });
        self.position = 0;
        let count: usize = f.basic_blocks.iter().map(|b| b.instructions.len()).sum();
        if count >= self.par_block.max(2) {
            self.blocks_parallel(o, &f.basic_blocks)?;
        } else {
            for (i, b) in f.basic_blocks.iter().enumerate() {
                if i > 0 {
                    o.byte(b',');
                }
                self.block(o, b)?;
            }
        }
        o.byte(b']');
        extras(o, &f.extra);
        o.byte(b'}');
        Ok(())
    }

    pub(super) fn block(&mut self, o: &mut Out, b: &'c Block) -> Result<()> {
        Self::block_open(o, b);
        self.instructions(o, &b.instructions)?;
        Self::block_close(o, b);
        Ok(())
    }

    pub(super) fn block_open(o: &mut Out, b: &Block) {
        o.raw(concat!("{\"", key!(block name), "\":").as_bytes());
        o.str(&b.name);
        o.raw(concat!(",\"", key!(block instructions), "\":[").as_bytes());
    }

    pub(super) fn block_close(o: &mut Out, b: &Block) {
        o.byte(b']');
        extras(o, &b.extra);
        o.byte(b'}');
    }

    pub(super) fn instructions(&mut self, o: &mut Out, insts: &'c [Instruction]) -> Result<()> {
        for (i, inst) in insts.iter().enumerate() {
            if i > 0 {
                o.byte(b',');
            }
            self.instruction(o, inst)?;
            o.boundary().map_err(io)?;
        }
        Ok(())
    }

    /// A function's blocks written on rayon's pool: their instructions cut
    /// into runs of about the same length across block boundaries (a module
    /// of many mid-sized blocks is as parallel as one of a single big
    /// block), each run written by its own writer (its own expression cache)
    /// into its own buffer, the buffers kept in order. Same bytes as
    /// [`Writer::block`] on each block in turn.
    pub(super) fn blocks_parallel(&mut self, o: &mut Out, blocks: &'c [Block]) -> Result<()> {
        use rayon::prelude::*;
        let total: usize = blocks.iter().map(|b| b.instructions.len()).sum();
        // A few runs per thread, so a thread slowed by the machine's other
        // work does not hold up the rest.
        let run = total
            .div_ceil(rayon::current_num_threads().max(1) * 4)
            .max(self.par_block / 16);
        let runs = Run::cut(blocks, run);
        let (ctx, version, spelling) = (self.exprs.ctx(), self.version, self.spelling);
        // Each run's first depth-first position (only the compiler's
        // spelling reads positions: a Loop named after its own is written
        // without a name).
        let starts: Vec<usize> = if spelling == Spelling::Compiler {
            let mut at = self.position;
            runs.iter()
                .map(|r| {
                    let start = at;
                    for i in &blocks[r.block].instructions[r.start..r.end] {
                        i.walk(&mut |_| at += 1);
                    }
                    start
                })
                .collect()
        } else {
            vec![0; runs.len()]
        };
        // Each run's buffer is sized for its top-level instructions only, so
        // a run holding Loops outgrows it and seals more chunks; they are
        // kept as they are (no join: a join copied the run into fresh pages,
        // 10 % of a 50 MB `to_bytes` in `perf`).
        let parts: Vec<Vec<Vec<u8>>> = runs
            .par_iter()
            .zip(starts.par_iter())
            .map(|(r, &start)| {
                let b = &blocks[r.block];
                let insts = &b.instructions[r.start..r.end];
                let mut part = Out::memory(insts.len().saturating_mul(BYTES_PER_INSTRUCTION) + 256);
                let mut w = Writer::new(ctx, version, spelling);
                w.position = start;
                if r.start == 0 {
                    if r.block > 0 {
                        part.byte(b',');
                    }
                    Self::block_open(&mut part, b);
                } else {
                    part.byte(b',');
                }
                w.instructions(&mut part, insts)?;
                if r.end == b.instructions.len() {
                    Self::block_close(&mut part, b);
                }
                Ok(part.into_chunks())
            })
            .collect::<Result<_>>()?;
        o.splice(parts.into_iter().flatten().collect()).map_err(io)
    }
}
