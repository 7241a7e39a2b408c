//! The writer's module, function and block shapes (and a big function's
//! blocks written in parallel runs).

use super::memory::set;
use super::out::Out;
use super::{extras, ints, io, Run, Writer, BYTES_PER_INSTRUCTION};
use crate::bir::instruction::{Block, Instruction};
use crate::bir::module::{Function, Module};
use crate::bir::schema::key;
use crate::error::Result;

impl<'c> Writer<'c> {
    pub(super) fn module(&mut self, o: &mut Out, m: &'c Module) -> Result<()> {
        o.raw(concat!("{\"", key!(module version), "\":").as_bytes());
        o.uint(self.version as u64);
        o.raw(concat!(",\"", key!(module name), "\":").as_bytes());
        o.str(&m.name);
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
        // `main` first, then the others in order.
        let main = m.functions.iter().filter(|f| &*f.name == "main");
        let rest = m.functions.iter().filter(|f| &*f.name != "main");
        for (i, f) in main.chain(rest).enumerate() {
            if i > 0 {
                o.byte(b',');
            }
            self.function(o, f)?;
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
            set(o, s);
        }
        o.raw(concat!("],\"", key!(function basic_blocks), "\":[").as_bytes());
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
        let (ctx, version) = (self.exprs.ctx(), self.version);
        // Each run's buffer is sized for its top-level instructions only, so
        // a run holding Loops outgrows it and seals more chunks; they are
        // kept as they are (no join: a join copied the run into fresh pages,
        // 10 % of a 50 MB `to_bytes` in `perf`).
        let parts: Vec<Vec<Vec<u8>>> = runs
            .par_iter()
            .map(|r| {
                let b = &blocks[r.block];
                let insts = &b.instructions[r.start..r.end];
                let mut part = Out::memory(insts.len().saturating_mul(BYTES_PER_INSTRUCTION) + 256);
                let mut w = Writer::new(ctx, version);
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
