//! The one accessor of the keys enginecheck reads that the BIR model keeps
//! verbatim (contract §1.7: "kept and round-tripped as they are"): an
//! instruction's `sync_info`, `queue`, `dma_blocks`, `sema_group` and branch
//! targets; and enginecheck's view of the module's `queues` (DMA queues
//! whose blocks hold `DMABlock`s and their `DMADescriptor*` descriptors),
//! built on the model's reader of them (`bir::queues`). A location's `dims`
//! is a typed field of the model (`MemoryLocation::dims_geometry`).
//!
//! Everything else in the pass reads these through the typed values below,
//! so when the model grows typed fields for them only this file changes.
//! A malformed value is a `BirJsonError` at its JSON path (contract §3.10);
//! the paths are built only on the error path.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::bir::argument::{Argument, PhysicalAp};
use crate::bir::instruction::Instruction;
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

/// Every DMABlock of the module's `queues`, in order, from the model's one
/// reader of them ([`crate::bir::queues::Queues`]; malformed queues are a
/// `BirJsonError` at their path there), with each block's `sync_info` read
/// (at its path) and its descriptors' arguments sorted by what enginecheck
/// makes of them. A repeated DMABlock name denotes its first one.
pub fn dma_queues(m: &Module) -> Result<Vec<DmaBlock>> {
    dma_queues_of(&crate::bir::queues::Queues::of(m)?)
}

/// [`dma_queues`] of queues already read.
pub fn dma_queues_of(queues: &crate::bir::queues::Queues) -> Result<Vec<DmaBlock>> {
    let mut out = Vec::with_capacity(queues.blocks().len());
    for b in queues.blocks() {
        let sync = match &b.sync_info {
            Some(v) => parse_sync_info(v, &|| format!("{}.sync_info", b.path))?,
            None => SyncInfo::default(),
        };
        let args = |list: &[Argument]| list.iter().filter_map(desc_arg).collect::<Vec<_>>();
        let descriptors = b
            .descriptors
            .iter()
            .map(|d| Descriptor {
                name: if d.name.is_empty() {
                    Arc::from("descriptor")
                } else {
                    d.name.clone()
                },
                ins: args(&d.ins),
                outs: args(&d.outs),
            })
            .collect();
        out.push(DmaBlock {
            name: b.name.clone(),
            queue: b.queue.clone(),
            sync,
            descriptors,
            path: b.path.clone(),
        });
    }
    Ok(out)
}

/// One descriptor argument; None for arguments without memory (immediates).
fn desc_arg(a: &Argument) -> Option<DescArg> {
    let text = |fields: &Map<String, Value>, k: &str| fields.get(k).and_then(Value::as_str).map(Arc::from);
    match a {
        Argument::Physical(p) => Some(DescArg::Physical(p.clone())),
        Argument::Other { kind, fields } => match &**kind {
            "register_ap" => Some(DescArg::Register {
                memsetref: text(fields, "memsetref"),
                memref: text(fields, "memref"),
            }),
            "symbolic_ap" | "symbolic_pwap" => Some(DescArg::Symbolic {
                memsetref: text(fields, "memsetref"),
            }),
            _ => None,
        },
        _ => None,
    }
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
