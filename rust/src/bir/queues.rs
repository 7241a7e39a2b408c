//! The module's DMA queues (contract §1.7): queues whose blocks hold
//! `DMABlock` instructions and their `DMADescriptor*` descriptors, started
//! by `DMATrigger {dma_blocks}`. The shape real dumps have
//! (notes/compiler-bir.md §1, §3.4, §5):
//!
//! ```text
//! queues: [{name, blocks: [{name, instructions: [DMABlock, …]}]}]
//! DMABlock: {name, opcode: "DMABlock", engine, dma_trigger, sync_info,
//!            blocks: [{name, instructions: [DMADescriptorCopy, …]}]}
//! ```
//!
//! Descriptors are instructions (`ins`/`outs` like any other); they are read
//! with the loader's own instruction reader ([`detached_instructions`]).
//!
//! Today the loader keeps `queues` as an unknown module key (in
//! `Module.extra`, round-tripped verbatim). **This file is the one accessor
//! everything reads the queues through** ([`raw`]), so typing `queues` in the
//! loader (the compiler-spelling work) changes this file only.

use std::sync::Arc;

use serde_json::Value;

use super::instruction::Instruction;
use super::load::detached_instructions;
use super::module::Module;
use crate::error::{Error, Result};
use crate::key;
use crate::pelican::Context;

/// One `DMABlock`: its queue and its descriptors in queue order.
#[derive(Clone, Debug)]
pub struct DmaBlock {
    pub name: Arc<str>,
    pub queue: Arc<str>,
    /// Every `blocks[].instructions[]` of the DMABlock, in order.
    pub descriptors: Vec<Instruction>,
    /// Where it is in the module (`$.queues[0].blocks[0].instructions[1]`).
    pub path: String,
}

/// A module's DMA queues, read.
#[derive(Clone, Debug, Default)]
pub struct Queues {
    pub blocks: Vec<DmaBlock>,
    /// The context the descriptors' expressions are interned in (their own:
    /// descriptors are read apart from the module's functions).
    pub ctx: Context,
}

/// The module's `queues` as written, if it has them.
fn raw(m: &Module) -> Option<&Value> {
    m.extra.as_ref()?.get(key!(queues queues))
}

/// True when the module has `queues`.
pub fn has_queues(m: &Module) -> bool {
    raw(m).is_some()
}

fn bad(path: &str, what: &str) -> Error {
    Error::bir(
        format!("{what} (contract §1.7: queues: [{{name, blocks: [{{name, instructions: [DMABlock]}}]}}])"),
        path,
    )
}

/// `v[key]` as an array (absent: empty), or the error at `path.key`.
fn list<'v>(v: &'v Value, key: &str, path: &str) -> Result<&'v [Value]> {
    match v.get(key) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(bad(&format!("{path}.{key}"), &format!("`{key}` is not an array"))),
    }
}

fn name_of(v: &Value, path: &str) -> Result<Arc<str>> {
    match v.get(key!(queues name)) {
        Some(Value::String(s)) => Ok(Arc::from(s.as_str())),
        Some(_) => Err(bad(&format!("{path}.name"), "`name` is not a string")),
        None => Err(bad(path, "missing required key \"name\"")),
    }
}

impl Queues {
    /// The module's queues, read (None: it has none). A malformed entry is a
    /// `BirJsonError` at its path.
    pub fn of(m: &Module) -> Result<Option<Queues>> {
        let Some(v) = raw(m) else {
            return Ok(None);
        };
        let Value::Array(queues) = v else {
            return Err(bad("$.queues", "`queues` is not an array"));
        };
        let mut out = Queues::default();
        // every descriptor of every block, flat, with its path
        let mut descriptors: Vec<Value> = Vec::new();
        let mut paths: Vec<String> = Vec::new();
        // where each block's descriptors start in `descriptors`
        let mut starts: Vec<usize> = Vec::new();
        for (qi, q) in queues.iter().enumerate() {
            let qp = format!("$.queues[{qi}]");
            let queue = name_of(q, &qp)?;
            for (bi, b) in list(q, key!(queues blocks), &qp)?.iter().enumerate() {
                let bp = format!("{qp}.blocks[{bi}]");
                for (ii, blk) in list(b, key!(queues instructions), &bp)?.iter().enumerate() {
                    let ip = format!("{bp}.instructions[{ii}]");
                    if blk.get("opcode").and_then(Value::as_str) != Some("DMABlock") {
                        return Err(bad(&ip, "a queue block holds DMABlock instructions"));
                    }
                    starts.push(descriptors.len());
                    for (di, d) in list(blk, key!(queues blocks), &ip)?.iter().enumerate() {
                        let dp = format!("{ip}.blocks[{di}]");
                        for (k, x) in list(d, key!(queues instructions), &dp)?.iter().enumerate() {
                            descriptors.push(x.clone());
                            paths.push(format!("{dp}.instructions[{k}]"));
                        }
                    }
                    out.blocks.push(DmaBlock {
                        name: name_of(blk, &ip)?,
                        queue: queue.clone(),
                        descriptors: Vec::new(),
                        path: ip,
                    });
                }
            }
        }
        let text = Value::Array(descriptors).to_string();
        let (mut read, ctx) = detached_instructions(&text).map_err(|e| match e {
            // the reader's path is into the flat list: the descriptor's own path instead
            Error::BirJson { message, path } => {
                let (k, rest) = split_index(&path);
                let at = paths.get(k).map_or("$.queues", String::as_str);
                Error::bir(message, format!("{at}{rest}"))
            }
            other => other,
        })?;
        for (k, b) in out.blocks.iter_mut().enumerate().rev() {
            b.descriptors = read.split_off(starts[k]);
        }
        out.ctx = ctx;
        Ok(Some(out))
    }

    /// The DMABlock `name` on `queue` (on any queue when None): the first in
    /// queue order.
    pub fn block(&self, queue: Option<&str>, name: &str) -> Option<&DmaBlock> {
        self.blocks
            .iter()
            .find(|b| &*b.name == name && queue.is_none_or(|q| *b.queue == *q))
    }
}

/// A path's first index and the rest (`$[3].ins[0]` → (3, `.ins[0]`)).
fn split_index(path: &str) -> (usize, &str) {
    let Some(p) = path.strip_prefix("$[") else {
        return (usize::MAX, "");
    };
    match p.split_once(']') {
        Some((k, rest)) => (k.parse().unwrap_or(usize::MAX), rest),
        None => (usize::MAX, ""),
    }
}

/// What a `DMATrigger` starts: its `queue` (None when absent) and the names
/// of its `dma_blocks` (absent: none), or why they cannot be read.
pub fn trigger_blocks(inst: &Instruction) -> std::result::Result<(Option<&str>, Vec<&str>), String> {
    let extra = inst.extra.as_deref();
    let queue = match extra.and_then(|x| x.get(key!(inst queue))) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(v) => return Err(format!("queue {v} is not a queue name")),
    };
    let names = match extra.and_then(|x| x.get(key!(queues dma_blocks))) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| format!("dma_blocks holds {v}, not a DMABlock name"))
            })
            .collect::<std::result::Result<_, _>>()?,
        // KLR's early schema had one name
        Some(Value::String(s)) => vec![s.as_str()],
        Some(v) => return Err(format!("dma_blocks {v} is not a list of DMABlock names")),
    };
    Ok((queue, names))
}
