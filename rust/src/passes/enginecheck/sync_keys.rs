//! The one accessor of the keys enginecheck reads that the BIR model keeps
//! verbatim (contract §1.7: "kept and round-tripped as they are"): an
//! instruction's `sync_info`, `queue`, `dma_blocks`, `sema_group` and branch
//! targets, a location's `dims`, and the module's `queues` (DMA queues whose
//! blocks hold `DMABlock`s and their `DMADescriptor*` descriptors).
//!
//! Everything else in the pass reads these through the typed values below,
//! so when the model grows typed fields for them only this file changes.
//! A malformed value is a `BirJsonError` at its JSON path (contract §3.10);
//! the paths are built only on the error path.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::bir::argument::{Ap, PhysicalAp};
use crate::bir::instruction::Instruction;
use crate::bir::memory::MemoryLocation;
use crate::bir::module::Module;
use crate::bir::Extra;
use crate::error::{Error, Result};

/// One `on_wait` entry: wait until semaphore `id` counts at least `wait_value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    pub from: Arc<str>,
    pub id: i64,
    pub wait_value: i64,
}

/// One `on_update` entry: add `value` to semaphore `id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Update {
    pub id: i64,
    pub value: i64,
}

/// `sync_info: {on_wait: [...], on_update: [...]}` (both lists optional).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncInfo {
    pub waits: Vec<Wait>,
    pub updates: Vec<Update>,
}

impl SyncInfo {
    pub fn is_empty(&self) -> bool {
        self.waits.is_empty() && self.updates.is_empty()
    }
}

fn key<'a>(extra: &'a Extra, k: &str) -> Option<&'a Value> {
    extra.as_ref().and_then(|m| m.get(k))
}

fn int(v: &Value, what: &str, path: &dyn Fn() -> String) -> Result<i64> {
    v.as_i64()
        .ok_or_else(|| Error::bir(format!("{what} must be an integer, got {v}"), path()))
}

fn array<'a>(v: &'a Value, what: &str, path: &dyn Fn() -> String) -> Result<&'a Vec<Value>> {
    v.as_array()
        .ok_or_else(|| Error::bir(format!("{what} must be an array, got {v}"), path()))
}

fn object<'a>(v: &'a Value, what: &str, path: &dyn Fn() -> String) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::bir(format!("{what} must be an object, got {v}"), path()))
}

fn field<'a>(o: &'a Map<String, Value>, k: &str, what: &str, path: &dyn Fn() -> String) -> Result<&'a Value> {
    o.get(k)
        .ok_or_else(|| Error::bir(format!("{what} is missing required key \"{k}\""), path()))
}

/// Read a `sync_info` value (an instruction's, or a DMABlock's); `path` is
/// the path of the `sync_info` key itself.
pub fn parse_sync_info(v: &Value, path: &dyn Fn() -> String) -> Result<SyncInfo> {
    if v.is_null() {
        return Ok(SyncInfo::default());
    }
    let o = object(v, "sync_info", path)?;
    let mut out = SyncInfo::default();
    if let Some(w) = o.get("on_wait").filter(|w| !w.is_null()) {
        let p = || format!("{}.on_wait", path());
        for (i, e) in array(w, "sync_info.on_wait", &p)?.iter().enumerate() {
            let p = || format!("{}.on_wait[{i}]", path());
            let e = object(e, "an on_wait entry", &p)?;
            let at = |k: &'static str| move || format!("{}.on_wait[{i}].{k}", path());
            let from = field(e, "from", "an on_wait entry", &p)?;
            let from = from.as_str().ok_or_else(|| {
                Error::bir(
                    format!("on_wait.from must be an instruction name, got {from}"),
                    at("from")(),
                )
            })?;
            let id = semaphore_id(field(e, "id", "an on_wait entry", &p)?, &at("id"))?;
            let wait_value = int(
                field(e, "wait_value", "an on_wait entry", &p)?,
                "on_wait.wait_value",
                &at("wait_value"),
            )?;
            out.waits.push(Wait {
                from: Arc::from(from),
                id,
                wait_value,
            });
        }
    }
    if let Some(u) = o.get("on_update").filter(|u| !u.is_null()) {
        let p = || format!("{}.on_update", path());
        for (i, e) in array(u, "sync_info.on_update", &p)?.iter().enumerate() {
            let p = || format!("{}.on_update[{i}]", path());
            let e = object(e, "an on_update entry", &p)?;
            let at = |k: &'static str| move || format!("{}.on_update[{i}].{k}", path());
            let id = semaphore_id(field(e, "id", "an on_update entry", &p)?, &at("id"))?;
            let value = int(
                field(e, "update_value", "an on_update entry", &p)?,
                "on_update.update_value",
                &at("update_value"),
            )?;
            out.updates.push(Update { id, value });
        }
    }
    Ok(out)
}

/// A semaphore id: a non-negative integer.
fn semaphore_id(v: &Value, path: &dyn Fn() -> String) -> Result<i64> {
    match v.as_i64() {
        Some(id) if id >= 0 => Ok(id),
        _ => Err(Error::bir(
            format!("a semaphore id must be a non-negative integer, got {v}"),
            path(),
        )),
    }
}

/// The instruction's `sync_info` (empty when absent).
pub fn sync_info(inst: &Instruction, path: &dyn Fn() -> String) -> Result<SyncInfo> {
    match key(&inst.extra, "sync_info") {
        None => Ok(SyncInfo::default()),
        Some(v) => parse_sync_info(v, &|| format!("{}.sync_info", path())),
    }
}

/// A queue name: a DMA's `queue` key. Absent: None. A number is read as its
/// decimal text (some writers number queues).
pub fn queue(inst: &Instruction, path: &dyn Fn() -> String) -> Result<Option<Arc<str>>> {
    match key(&inst.extra, "queue") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(Arc::from(s.as_str()))),
        Some(Value::Number(n)) if n.is_i64() => Ok(Some(Arc::from(n.to_string()))),
        Some(v) => Err(Error::bir(
            format!("queue must be a queue name, got {v}"),
            format!("{}.queue", path()),
        )),
    }
}

/// A `DMATrigger`'s `dma_blocks`: the names of the DMABlocks it starts
/// (KLR's first schema wrote one name; that reads as a list of one).
pub fn dma_blocks(inst: &Instruction, path: &dyn Fn() -> String) -> Result<Vec<Arc<str>>> {
    let p = || format!("{}.dma_blocks", path());
    match key(&inst.extra, "dma_blocks") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![Arc::from(s.as_str())]),
        Some(v) => array(v, "dma_blocks", &p)?
            .iter()
            .enumerate()
            .map(|(i, b)| {
                b.as_str().map(Arc::from).ok_or_else(|| {
                    Error::bir(
                        format!("dma_blocks entries must be DMABlock names, got {b}"),
                        format!("{}[{i}]", p()),
                    )
                })
            })
            .collect(),
    }
}

/// A `GroupResetSemaphores`'s `sema_group`: None when it has none (the
/// counts after it are then unknown, contract §3.10).
pub fn sema_group(inst: &Instruction, path: &dyn Fn() -> String) -> Result<Option<Vec<i64>>> {
    let p = || format!("{}.sema_group", path());
    match key(&inst.extra, "sema_group") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let ids = array(v, "sema_group", &p)?;
            let mut out = Vec::with_capacity(ids.len());
            for (i, id) in ids.iter().enumerate() {
                out.push(semaphore_id(id, &|| format!("{}[{i}]", p()))?);
            }
            Ok(Some(out))
        }
    }
}

/// The block names a branch may jump to: `CompareAndBranch`'s `on_true` and
/// `on_false`, `UnconditionalBranch`'s `target` (absent or not a string:
/// none; a branch is never an error here).
pub fn branch_targets(inst: &Instruction) -> Vec<&str> {
    ["on_true", "on_false", "target"]
        .iter()
        .filter_map(|k| key(&inst.extra, k).and_then(Value::as_str))
        .collect()
}

/// Whether an instruction carries nested instructions lncsplit does not
/// read (a `DynamicForLoop` or `DoWhile` body kept as an unknown `blocks`).
pub fn has_unread_body(inst: &Instruction) -> bool {
    key(&inst.extra, "blocks").and_then(Value::as_array).is_some_and(|bs| {
        bs.iter().any(|b| {
            b.get("instructions")
                .and_then(Value::as_array)
                .is_some_and(|i| !i.is_empty())
        })
    })
}

/// Keys of `sync_info` that name another core's semaphores or notify another
/// core (cross-core order enginecheck does not model, contract §3.10).
pub fn remote_sync(inst: &Instruction) -> Option<&'static str> {
    for k in ["remote_semaphores", "remote_notification", "remote_notifications"] {
        if key(&inst.extra, k).is_some_and(|v| !v.is_null() && v != &Value::Array(Vec::new())) {
            return Some(k);
        }
    }
    let si = key(&inst.extra, "sync_info")?;
    ["remote_semaphores", "on_remote_update", "on_remote_wait"]
        .into_iter()
        .find(|k| {
            si.get(k)
                .is_some_and(|v| !v.is_null() && v != &Value::Array(Vec::new()))
        })
}

/// A location's `dims` (contract §1.7), when it has a well-formed one.
pub fn dims(loc: &MemoryLocation) -> Option<Vec<i64>> {
    let v = key(&loc.extra, "dims")?.as_array()?;
    v.iter().map(Value::as_i64).collect()
}

// ----------------------------------------------------------------- queues

/// One `DMADescriptor*` of a DMABlock: it reads `ins` and writes `outs`.
#[derive(Debug)]
pub struct Descriptor {
    pub name: Arc<str>,
    pub ins: Vec<DescArg>,
    pub outs: Vec<DescArg>,
}

/// A descriptor argument.
#[derive(Debug)]
pub enum DescArg {
    Physical(PhysicalAp),
    /// An address in a register (`register_ap`): its whole location, undecided
    /// on chip (contract §3.10).
    Register {
        memsetref: Option<Arc<str>>,
        memref: Option<Arc<str>>,
    },
    /// A `symbolic_ap` in a queue: its expressions are not read there.
    Symbolic {
        memsetref: Option<Arc<str>>,
    },
}

/// One DMABlock of the module's `queues`.
#[derive(Debug)]
pub struct DmaBlock {
    pub name: Arc<str>,
    /// The `queues` entry holding it: its completions keep issue order there.
    pub queue: Arc<str>,
    pub sync: SyncInfo,
    pub descriptors: Vec<Descriptor>,
    /// `$.queues[q].blocks[b].instructions[i]`.
    pub path: String,
}

/// Every DMABlock of the module's `queues` (`[{name, blocks: [{name?,
/// instructions: [DMABlock …]}]}]`), in order. Entries that are not
/// DMABlocks are skipped; a repeated DMABlock name denotes its first one.
pub fn dma_queues(m: &Module) -> Result<Vec<DmaBlock>> {
    let Some(qs) = key(&m.extra, "queues") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    if qs.is_null() {
        return Ok(out);
    }
    for (qi, q) in array(qs, "queues", &|| "$.queues".to_string())?.iter().enumerate() {
        let qp = || format!("$.queues[{qi}]");
        let q = object(q, "a queue", &qp)?;
        let qname = match q.get("name") {
            Some(Value::String(s)) => Arc::from(s.as_str()),
            Some(v) => {
                return Err(Error::bir(
                    format!("a queue's name must be a string, got {v}"),
                    format!("{}.name", qp()),
                ))
            }
            None => Arc::from(format!("queue{qi}")),
        };
        let Some(blocks) = q.get("blocks").filter(|b| !b.is_null()) else {
            continue;
        };
        for (bi, b) in array(blocks, "a queue's blocks", &|| format!("{}.blocks", qp()))?
            .iter()
            .enumerate()
        {
            let bp = || format!("{}.blocks[{bi}]", qp());
            let b = object(b, "a queue block", &bp)?;
            let Some(insts) = b.get("instructions").filter(|i| !i.is_null()) else {
                continue;
            };
            for (ii, inst) in array(insts, "a block's instructions", &|| format!("{}.instructions", bp()))?
                .iter()
                .enumerate()
            {
                let ip = format!("{}.instructions[{ii}]", bp());
                if let Some(block) = dma_block(inst, &qname, ip)? {
                    out.push(block);
                }
            }
        }
    }
    Ok(out)
}

fn dma_block(v: &Value, queue: &Arc<str>, path: String) -> Result<Option<DmaBlock>> {
    let p = || path.clone();
    let o = object(v, "a queue instruction", &p)?;
    if o.get("opcode").and_then(Value::as_str) != Some("DMABlock") {
        return Ok(None);
    }
    let name = field(o, "name", "a DMABlock", &p)?;
    let name = name.as_str().ok_or_else(|| {
        Error::bir(
            format!("a DMABlock's name must be a string, got {name}"),
            format!("{path}.name"),
        )
    })?;
    let sync = match o.get("sync_info") {
        Some(s) => parse_sync_info(s, &|| format!("{path}.sync_info"))?,
        None => SyncInfo::default(),
    };
    let mut descriptors = Vec::new();
    if let Some(sub) = o.get("blocks").filter(|b| !b.is_null()) {
        for (si, s) in array(sub, "a DMABlock's blocks", &|| format!("{path}.blocks"))?
            .iter()
            .enumerate()
        {
            let sp = || format!("{path}.blocks[{si}]");
            let s = object(s, "a DMABlock block", &sp)?;
            let Some(ds) = s.get("instructions").filter(|d| !d.is_null()) else {
                continue;
            };
            for (di, d) in array(ds, "a block's instructions", &|| format!("{}.instructions", sp()))?
                .iter()
                .enumerate()
            {
                let dp = format!("{}.instructions[{di}]", sp());
                descriptors.push(descriptor(d, dp)?);
            }
        }
    }
    Ok(Some(DmaBlock {
        name: Arc::from(name),
        queue: queue.clone(),
        sync,
        descriptors,
        path,
    }))
}

fn descriptor(v: &Value, path: String) -> Result<Descriptor> {
    let p = || path.clone();
    let o = object(v, "a DMA descriptor", &p)?;
    let name = match o.get("name") {
        Some(Value::String(s)) => Arc::from(s.as_str()),
        _ => Arc::from("descriptor"),
    };
    let list = |k: &str| -> Result<Vec<DescArg>> {
        let Some(args) = o.get(k).filter(|a| !a.is_null()) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (i, a) in array(args, k, &|| format!("{path}.{k}"))?.iter().enumerate() {
            if let Some(arg) = desc_arg(a, &|| format!("{path}.{k}[{i}]"))? {
                out.push(arg);
            }
        }
        Ok(out)
    };
    Ok(Descriptor {
        name,
        ins: list("ins")?,
        outs: list("outs")?,
    })
}

fn opt_str(o: &Map<String, Value>, k: &str, path: &dyn Fn() -> String) -> Result<Option<Arc<str>>> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(Arc::from(s.as_str()))),
        Some(v) => Err(Error::bir(
            format!("{k} must be a string, got {v}"),
            format!("{}.{k}", path()),
        )),
    }
}

/// One descriptor argument; None for arguments without memory (immediates).
fn desc_arg(v: &Value, path: &dyn Fn() -> String) -> Result<Option<DescArg>> {
    let o = object(v, "an argument", path)?;
    let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
    match kind {
        "physical_ap" => {
            let ap = parse_ap(field(o, "ap", "a physical_ap", path)?, &|| format!("{}.ap", path()))?;
            let offset = match o.get("offset") {
                None | Some(Value::Null) => None,
                Some(x) => Some(int(x, "offset", &|| format!("{}.offset", path()))?),
            };
            Ok(Some(DescArg::Physical(PhysicalAp {
                ap,
                offset,
                dtype: opt_str(o, "dtype", path)?,
                memref: opt_str(o, "memref", path)?,
                memsetref: opt_str(o, "memsetref", path)?,
                extra: None,
            })))
        }
        "register_ap" => Ok(Some(DescArg::Register {
            memsetref: opt_str(o, "memsetref", path)?,
            memref: opt_str(o, "memref", path)?,
        })),
        "symbolic_ap" | "symbolic_pwap" => Ok(Some(DescArg::Symbolic {
            memsetref: opt_str(o, "memsetref", path)?,
        })),
        _ => Ok(None),
    }
}

fn parse_ap(v: &Value, path: &dyn Fn() -> String) -> Result<Ap> {
    let dims = array(v, "ap", path)?;
    let mut ap = Ap::new();
    for (i, d) in dims.iter().enumerate() {
        let p = || format!("{}[{i}]", path());
        match d.as_array().map(Vec::as_slice) {
            Some([s, n]) => ap.push([int(s, "an ap step", &p)?, int(n, "an ap count", &p)?]),
            _ => return Err(Error::bir(format!("an ap entry must be [step, num], got {d}"), p())),
        }
    }
    Ok(ap)
}

/// Does the module use semaphores at all (an instruction, or a DMABlock,
/// with a non-empty `on_wait` or `on_update`)? Without them every
/// instruction completes before the next starts (contract §3.10).
pub fn value_has_sync(v: &Value) -> bool {
    let non_empty = |k: &str| v.get(k).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    non_empty("on_wait") || non_empty("on_update")
}

/// [`value_has_sync`] of an instruction's `sync_info`.
pub fn inst_has_sync(inst: &Instruction) -> bool {
    key(&inst.extra, "sync_info").is_some_and(value_has_sync)
}
