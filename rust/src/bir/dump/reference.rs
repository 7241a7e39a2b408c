//! The previous writer (serde `Serialize` adaptors), kept for tests only: the
//! typed writer must give exactly its bytes.
#![allow(dead_code)]
//!
//! [`Module`] → BIR-JSON, streamed through serde (no intermediate DOM).
//!
//! Key order is fixed: the modelled keys in schema order, then every unknown
//! key in the order it was read. `main` is written first among functions.
//! The same module always gives the same bytes. Expressions are written as
//! trees in wire v2 (or v1 on request).

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::bir::argument::Argument;
use crate::bir::instruction::{Block, Dependency, Instruction, IntOrExpr, OpFields};
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};
use crate::bir::module::{Function, Module};
use crate::bir::Extra;
use crate::error::{Error, Result};
use crate::pelican::{AffinePredicate, Context, ExprId, Wire};

/// Serialize a module to JSON bytes in wire `version` (1 or 2).
pub fn dump_module(m: &Module, version: u32) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(1 << 16);
    write_module(m, version, &mut out)?;
    Ok(out)
}

/// Serialize a module into any writer.
pub fn write_module<W: std::io::Write>(m: &Module, version: u32, w: W) -> Result<()> {
    if version != 1 && version != 2 {
        return Err(Error::pelican(
            "Check the version - should be 1 (old) or 2 (new)",
            "QuasiAffineExpr.cpp",
        ));
    }
    serde_json::to_writer(w, &ModuleSer { m, version }).map_err(|e| {
        if e.is_io() {
            return Error::from(std::io::Error::from(e));
        }
        let msg = e.to_string();
        Error::pelican(msg, "QuasiAffineExpr.cpp")
    })
}

fn ser_err(e: serde_json::Error) -> Error {
    Error::pelican(e.to_string(), "QuasiAffineExpr.cpp")
}

/// One instruction as JSON (the bytes `dump_module` writes for it).
pub fn instruction_to_value(ctx: &Context, i: &Instruction, version: u32) -> Result<serde_json::Value> {
    serde_json::to_value(InstSer {
        i,
        cx: Cx { ctx, version },
    })
    .map_err(ser_err)
}

/// One argument as JSON.
pub fn argument_to_value(ctx: &Context, a: &Argument, version: u32) -> Result<serde_json::Value> {
    serde_json::to_value(ArgSer {
        a,
        cx: Cx { ctx, version },
    })
    .map_err(ser_err)
}

/// One block as JSON.
pub fn block_to_value(ctx: &Context, b: &Block, version: u32) -> Result<serde_json::Value> {
    serde_json::to_value(BlockSer {
        b,
        cx: Cx { ctx, version },
    })
    .map_err(ser_err)
}

struct ModuleSer<'a> {
    m: &'a Module,
    version: u32,
}

#[derive(Clone, Copy)]
struct Cx<'a> {
    ctx: &'a Context,
    version: u32,
}

impl Cx<'_> {
    fn expr(&self, id: ExprId) -> Wire<'_> {
        Wire {
            ctx: self.ctx,
            id,
            version: self.version,
        }
    }
}

fn extras<M: SerializeMap>(m: &mut M, extra: &Extra) -> std::result::Result<(), M::Error> {
    if let Some(e) = extra {
        for (k, v) in e.iter() {
            m.serialize_entry(k, v)?;
        }
    }
    Ok(())
}

/// Serialize a slice with a per-element adaptor.
struct SeqOf<'a, T, F: Fn(&'a T) -> R, R: Serialize> {
    items: &'a [T],
    f: F,
}

impl<'a, T, F: Fn(&'a T) -> R, R: Serialize> Serialize for SeqOf<'a, T, F, R> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.items.len()))?;
        for it in self.items {
            seq.serialize_element(&(self.f)(it))?;
        }
        seq.end()
    }
}

fn seq<'a, T, F: Fn(&'a T) -> R, R: Serialize>(items: &'a [T], f: F) -> SeqOf<'a, T, F, R> {
    SeqOf { items, f }
}

impl Serialize for ModuleSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let m = self.m;
        let cx = Cx {
            ctx: &m.ctx,
            version: self.version,
        };
        let mut o = s.serialize_map(None)?;
        o.serialize_entry("version", &self.version)?;
        o.serialize_entry("name", &m.name)?;
        o.serialize_entry("arch", m.arch.name())?;
        if let Some(p) = &m.artifact_path {
            o.serialize_entry("artifact_path", p)?;
        }
        if let Some(a) = &m.attributes {
            o.serialize_entry("attributes", a)?;
        }
        // `main` first, then the others in order.
        let order: Vec<&Function> = m
            .functions
            .iter()
            .filter(|f| &*f.name == "main")
            .chain(m.functions.iter().filter(|f| &*f.name != "main"))
            .collect();
        o.serialize_entry("functions", &seq(&order, |f| FunctionSer { f, cx }))?;
        extras(&mut o, &m.extra)?;
        o.end()
    }
}

struct FunctionSer<'a> {
    f: &'a Function,
    cx: Cx<'a>,
}

impl Serialize for FunctionSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let f = self.f;
        let mut o = s.serialize_map(None)?;
        o.serialize_entry("name", &*f.name)?;
        if !f.shard_ids.is_empty() {
            o.serialize_entry("shard_ids", &f.shard_ids)?;
        }
        if let Some(r) = &f.registers {
            o.serialize_entry("registers", &seq(r, |x| &**x))?;
        }
        o.serialize_entry("allocations", &seq(&f.allocations, |s| SetSer { s }))?;
        o.serialize_entry("basic_blocks", &seq(&f.basic_blocks, |b| BlockSer { b, cx: self.cx }))?;
        extras(&mut o, &f.extra)?;
        o.end()
    }
}

struct SetSer<'a> {
    s: &'a MemoryLocationSet,
}

impl Serialize for SetSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let m = self.s;
        let mut o = s.serialize_map(None)?;
        o.serialize_entry("name", &*m.name)?;
        if let Some(k) = &m.kind {
            o.serialize_entry("kind", &**k)?;
        }
        o.serialize_entry("dtype", &*m.dtype)?;
        o.serialize_entry("tensor_shape", &m.tensor_shape)?;
        if let Some(p) = m.partition_dim {
            o.serialize_entry("partition_dim", &p)?;
        }
        if let Some(a) = &m.addr_space {
            o.serialize_entry("addr_space", &**a)?;
        }
        o.serialize_entry("locations", &seq(&m.locations, |l| LocSer { l }))?;
        extras(&mut o, &m.extra)?;
        o.end()
    }
}

struct LocSer<'a> {
    l: &'a MemoryLocation,
}

impl Serialize for LocSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let l = self.l;
        let mut o = s.serialize_map(None)?;
        o.serialize_entry("name", &*l.name)?;
        o.serialize_entry("type", &*l.mem_type)?;
        if let Some(v) = l.addr {
            o.serialize_entry("addr", &v)?;
        }
        if let Some(v) = l.bank {
            o.serialize_entry("bank", &v)?;
        }
        if let Some(v) = l.base {
            o.serialize_entry("base", &v)?;
        }
        if let Some(v) = l.allocated {
            o.serialize_entry("allocated", &v)?;
        }
        if let Some(v) = l.is_shared_post_dram_alloc {
            o.serialize_entry("is_shared_post_dram_alloc", &v)?;
        }
        if let Some(v) = l.written_by_another_core {
            o.serialize_entry("written_by_another_core", &v)?;
        }
        if let Some(t) = &l.remote_local_target {
            o.serialize_entry(
                "remote_local_target",
                &serde_json::json!({"name": &*t.name, "core": t.core}),
            )?;
        }
        extras(&mut o, &l.extra)?;
        o.end()
    }
}

struct BlockSer<'a> {
    b: &'a Block,
    cx: Cx<'a>,
}

impl Serialize for BlockSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut o = s.serialize_map(None)?;
        o.serialize_entry("name", &*self.b.name)?;
        o.serialize_entry(
            "instructions",
            &seq(&self.b.instructions, |i| InstSer { i, cx: self.cx }),
        )?;
        extras(&mut o, &self.b.extra)?;
        o.end()
    }
}

struct InstSer<'a> {
    i: &'a Instruction,
    cx: Cx<'a>,
}

struct IntOrExprSer<'a> {
    v: &'a IntOrExpr,
    cx: Cx<'a>,
}

impl Serialize for IntOrExprSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.v {
            IntOrExpr::Int(i) => s.serialize_i64(*i),
            IntOrExpr::Expr(e) => self.cx.expr(*e).serialize(s),
        }
    }
}

struct PredSer<'a> {
    p: &'a AffinePredicate,
    cx: Cx<'a>,
}

impl Serialize for PredSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut o = s.serialize_map(Some(2))?;
        o.serialize_entry("expr", &self.cx.expr(self.p.expr))?;
        o.serialize_entry("ge", &self.p.ge)?;
        o.end()
    }
}

struct DepSer<'a> {
    d: &'a Dependency,
}

impl Serialize for DepSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.d.bare {
            return s.serialize_str(&self.d.name);
        }
        let n = if self.d.kind.is_some() { 2 } else { 1 };
        let mut q = s.serialize_seq(Some(n))?;
        q.serialize_element(&*self.d.name)?;
        if let Some(k) = &self.d.kind {
            q.serialize_element(&**k)?;
        }
        q.end()
    }
}

impl Serialize for InstSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let (i, cx) = (self.i, self.cx);
        let mut o = s.serialize_map(None)?;
        o.serialize_entry("name", &*i.name)?;
        o.serialize_entry("opcode", i.opcode.name())?;
        if let Some(e) = &i.engine {
            o.serialize_entry("engine", &**e)?;
        }
        match &i.op {
            OpFields::None => {}
            OpFields::Loop {
                axis,
                axis_extra,
                blocks,
            } => {
                let a = cx.ctx.axis(*axis);
                let mut ax = serde_json::Map::new();
                ax.insert("name".into(), (*a.name).into());
                ax.insert("lo".into(), a.lo.into());
                ax.insert("ub".into(), a.ub.into());
                ax.insert("step".into(), a.step.into());
                if let Some(e) = axis_extra {
                    for (k, v) in e.iter() {
                        ax.insert(k.clone(), v.clone());
                    }
                }
                o.serialize_entry("axis", &ax)?;
                o.serialize_entry("blocks", &seq(blocks, |b| BlockSer { b, cx }))?;
            }
            OpFields::CoreBarrier {
                id,
                cores,
                runtime_semaphore,
                local_id,
            } => {
                if let Some(v) = id {
                    o.serialize_entry("id", v)?;
                }
                if let Some(v) = cores {
                    o.serialize_entry("cores", v)?;
                }
                if let Some(v) = runtime_semaphore {
                    o.serialize_entry("runtime_semaphore", v)?;
                }
                if let Some(v) = local_id {
                    o.serialize_entry("local_id", &**v)?;
                }
            }
            OpFields::CollectiveCompute {
                cc_channel,
                recv_from_rank,
                send_to_rank,
                queue,
            } => {
                if let Some(v) = cc_channel {
                    o.serialize_entry("cc_channel", v)?;
                }
                for (k, v) in [
                    ("recv_from_rank", recv_from_rank),
                    ("send_to_rank", send_to_rank),
                    ("queue", queue),
                ] {
                    if let Some(v) = v {
                        o.serialize_entry(k, &IntOrExprSer { v, cx })?;
                    }
                }
            }
            OpFields::Matmult {
                replication_resolution,
                replication_shift_amnt,
                replication_num_rows,
            } => {
                for (k, v) in [
                    ("replication_resolution", replication_resolution),
                    ("replication_shift_amnt", replication_shift_amnt),
                    ("replication_num_rows", replication_num_rows),
                ] {
                    if let Some(v) = v {
                        o.serialize_entry(k, &IntOrExprSer { v, cx })?;
                    }
                }
            }
            OpFields::DmaCopy { mode } => {
                if let Some(m) = mode {
                    o.serialize_entry("mode", &**m)?;
                }
            }
            OpFields::Call { callee, core } => {
                if let Some(c) = callee {
                    o.serialize_entry("callee", &**c)?;
                }
                if let Some(c) = core {
                    o.serialize_entry("core", c)?;
                }
            }
        }
        o.serialize_entry("ins", &seq(&i.ins, |a| ArgSer { a, cx }))?;
        o.serialize_entry("outs", &seq(&i.outs, |a| ArgSer { a, cx }))?;
        if let Some(ind) = &i.indirection_ins {
            o.serialize_entry("indirection_ins", &seq(ind, |a| ArgSer { a, cx }))?;
        }
        if !i.predicates.is_empty() {
            o.serialize_entry("predicates", &seq(&i.predicates, |p| PredSer { p, cx }))?;
        }
        if let Some(d) = &i.dependencies {
            o.serialize_entry("dependencies", &seq(d, |d| DepSer { d }))?;
        }
        extras(&mut o, &i.extra)?;
        o.end()
    }
}

struct ArgSer<'a> {
    a: &'a Argument,
    cx: Cx<'a>,
}

impl Serialize for ArgSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let cx = self.cx;
        match self.a {
            Argument::Symbolic(a) => {
                let mut o = s.serialize_map(None)?;
                o.serialize_entry("kind", self.a.kind_name())?;
                o.serialize_entry("ap", &a.ap)?;
                if let Some(d) = &a.dtype {
                    o.serialize_entry("dtype", &**d)?;
                }
                if let Some(m) = &a.memsetref {
                    o.serialize_entry("memsetref", &**m)?;
                }
                o.serialize_entry("addrs", &seq(&a.addrs, |e| cx.expr(*e)))?;
                if let Some(e) = a.tile_addrs {
                    o.serialize_entry("tile_addrs", &cx.expr(e))?;
                }
                if let Some(e) = a.block_addrs {
                    o.serialize_entry("block_addrs", &cx.expr(e))?;
                }
                if let Some(v) = &a.access_shape {
                    o.serialize_entry("access_shape", &**v)?;
                }
                extras(&mut o, &a.extra)?;
                o.end()
            }
            Argument::Physical(a) => {
                let mut o = s.serialize_map(None)?;
                o.serialize_entry("kind", "physical_ap")?;
                o.serialize_entry("ap", &a.ap)?;
                if let Some(v) = a.offset {
                    o.serialize_entry("offset", &v)?;
                }
                if let Some(d) = &a.dtype {
                    o.serialize_entry("dtype", &**d)?;
                }
                if let Some(m) = &a.memref {
                    o.serialize_entry("memref", &**m)?;
                }
                if let Some(m) = &a.memsetref {
                    o.serialize_entry("memsetref", &**m)?;
                }
                extras(&mut o, &a.extra)?;
                o.end()
            }
            Argument::Imm { dtype, value, extra } => {
                let mut o = s.serialize_map(None)?;
                o.serialize_entry("kind", "imm_value")?;
                if let Some(d) = dtype {
                    o.serialize_entry("dtype", &**d)?;
                }
                o.serialize_entry("value", value)?;
                extras(&mut o, extra)?;
                o.end()
            }
            Argument::Other { fields, .. } => fields.serialize(s),
        }
    }
}
