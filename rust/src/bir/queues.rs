//! The module's DMA queues (contract §1.7), as scheduled compiler dumps
//! carry them: `queues: [{name, blocks: [{name, instructions: [DMABlock…]}]}]`,
//! each `DMABlock` holding `blocks` of `DMADescriptor*` instructions whose
//! `ins`/`outs` are the transfer, started by a `DMATrigger {dma_blocks}` in a
//! function.
//!
//! `queues` stays an unknown key of the module (kept and written back as it
//! was read, in either spelling); this is the typed view of it that the
//! analyses read: [`Queues::of`]. §3.6 and §3.8 give a `DMATrigger` the
//! accesses of its blocks' descriptors (each reads its `ins`, writes its
//! `outs`, in queue order). A `physical_ap` descriptor argument is typed as
//! the loader types one; any other argument naming memory is kept as
//! [`Argument::Other`] (covering its whole location: a descriptor's
//! expressions are not interned in the module's arena). Malformed queues are
//! a `BirJsonError` at their path, raised when something reads them.
//!
//! Other readers use the same view: the intra-core engine check (§3.10:
//! [`Queues::of`], [`Queues::block`], [`trigger_blocks`]) and the simulator,
//! which runs each descriptor as an instruction of its opcode
//! ([`Descriptor::instruction`], its other keys such as `accumulate` in
//! [`Descriptor::extra`]) on the block the trigger's `queue` holds
//! ([`Queues::block_on`], [`trigger_queue`]). **This file is the one reader
//! of `queues`.**

use std::sync::Arc;

use hashbrown::HashMap;
use serde_json::{Map, Value};

use super::argument::{Ap, Argument, PhysicalAp};
use super::instruction::{Instruction, OpFields};
use super::module::Module;
use super::opcode::Opcode;
use super::schema::key;
use super::Extra;
use crate::error::{Error, Result};

/// `DMATrigger` (67 in InstructionType).
pub const DMA_TRIGGER: &str = "DMATrigger";

/// One `DMADescriptor*` of a DMA block.
#[derive(Clone, Debug)]
pub struct Descriptor {
    pub name: Arc<str>,
    pub opcode: Arc<str>,
    pub ins: Vec<Argument>,
    pub outs: Vec<Argument>,
    /// Its other keys as written (`accumulate`, `engine`, …).
    pub extra: Extra,
}

impl Descriptor {
    /// The descriptor as an instruction of its opcode (its `ins`, `outs` and
    /// other keys; no predicates or dependencies), for readers that take
    /// instructions (the simulator). None when `opcode` is no InstructionType.
    pub fn instruction(&self) -> Option<Instruction> {
        let opcode = Opcode::from_name(&self.opcode)?;
        Some(Instruction {
            ins: self.ins.clone(),
            outs: self.outs.clone(),
            extra: self.extra.clone(),
            ..Instruction::bare(self.name.clone(), opcode, OpFields::None)
        })
    }
}

/// One `DMABlock` of a queue.
#[derive(Clone, Debug)]
pub struct DmaBlock {
    pub name: Arc<str>,
    /// The queue holding it.
    pub queue: Arc<str>,
    /// Its JSON path (`$.queues[q].blocks[b].instructions[i]`).
    pub path: String,
    /// Its `sync_info`, as written (§3.10 reads it).
    pub sync_info: Option<Value>,
    /// Its descriptors, in order.
    pub descriptors: Vec<Descriptor>,
}

/// The typed view of a module's `queues`: every DMA block by name (the
/// first of a repeated name).
#[derive(Clone, Debug, Default)]
pub struct Queues {
    blocks: Vec<DmaBlock>,
    by_name: HashMap<Arc<str>, usize>,
}

impl Queues {
    /// The module's `queues` read (an empty view without the key).
    pub fn of(m: &Module) -> Result<Queues> {
        match m.extra.as_ref().and_then(|x| x.get(key!(module queues))) {
            None => Ok(Queues::default()),
            Some(v) => Queues::read(v),
        }
    }

    /// The module's `queues` read, None when it has no such key (a
    /// `DMATrigger` then has no descriptors to look up; with the key, a
    /// trigger naming a block no queue holds is an error).
    pub fn of_module(m: &Module) -> Result<Option<Queues>> {
        match m.extra.as_ref().and_then(|x| x.get(key!(module queues))) {
            None => Ok(None),
            Some(v) => Queues::read(v).map(Some),
        }
    }

    /// A `queues` value read.
    pub fn read(v: &Value) -> Result<Queues> {
        let mut q = Queues::default();
        let root = || format!("$.{}", key!(module queues));
        for (qi, queue) in array(v, &root)?.iter().enumerate() {
            let at = || format!("{}[{qi}]", root());
            let qname: Arc<str> = Arc::from(string(field(queue, key!(queues name), &at)?, &|| {
                format!("{}.name", at())
            })?);
            let Some(blocks) = object(queue, &at)?.get(key!(queues blocks)) else {
                continue;
            };
            for (bi, block) in array(blocks, &|| format!("{}.blocks", at()))?.iter().enumerate() {
                let bat = || format!("{}.blocks[{bi}]", at());
                let Some(insts) = object(block, &bat)?.get(key!(queues instructions)) else {
                    continue;
                };
                for (ii, inst) in array(insts, &|| format!("{}.instructions", bat()))?.iter().enumerate() {
                    let iat = || format!("{}.instructions[{ii}]", bat());
                    let b = dma_block(inst, &qname, &iat)?;
                    q.by_name.entry(b.name.clone()).or_insert(q.blocks.len());
                    q.blocks.push(b);
                }
            }
        }
        Ok(q)
    }

    /// The DMA block named `name`.
    pub fn block(&self, name: &str) -> Option<&DmaBlock> {
        self.by_name.get(name).map(|&i| &self.blocks[i])
    }

    /// The DMA block named `name` on `queue`: the first of that name on it,
    /// or, when `queue` is None (a trigger naming no queue), the first of
    /// that name in queue order.
    pub fn block_on(&self, queue: Option<&str>, name: &str) -> Option<&DmaBlock> {
        match queue {
            None => self.block(name),
            Some(q) => self.blocks.iter().find(|b| &*b.name == name && &*b.queue == q),
        }
    }

    /// Every DMA block, in queue order.
    pub fn blocks(&self) -> &[DmaBlock] {
        &self.blocks
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// Whether `i` is a `DMATrigger`.
pub fn is_trigger(i: &Instruction) -> bool {
    i.opcode == Opcode(67)
}

/// The DMA block names a `DMATrigger` starts: its `dma_blocks` (a list of
/// names; KLR's first schema wrote one name as a string). None for any
/// other instruction.
pub fn trigger_blocks(i: &Instruction) -> Result<Option<Vec<Arc<str>>>> {
    if !is_trigger(i) {
        return Ok(None);
    }
    let bad = |v: &Value| {
        Error::bir(
            format!(
                "DMATrigger {}: \"{}\" must be a list of DMA block names, got {v}",
                i.name,
                key!(inst dma_blocks)
            ),
            format!("instruction {}", i.name),
        )
    };
    match i.extra.as_ref().and_then(|x| x.get(key!(inst dma_blocks))) {
        None | Some(Value::Null) => Ok(Some(Vec::new())),
        Some(Value::String(s)) => Ok(Some(vec![Arc::from(s.as_str())])),
        Some(v @ Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map(Arc::from).ok_or_else(|| bad(v)))
            .collect::<Result<_>>()
            .map(Some),
        Some(v) => Err(bad(v)),
    }
}

/// The queue a `DMATrigger` names (`queue`; None when absent).
pub fn trigger_queue(i: &Instruction) -> Result<Option<&str>> {
    match i.extra.as_ref().and_then(|x| x.get(key!(inst queue))) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(v) => Err(Error::bir(
            format!(
                "DMATrigger {}: \"{}\" must be a queue name, got {v}",
                i.name,
                key!(inst queue)
            ),
            format!("instruction {}", i.name),
        )),
    }
}

/// A JSON path, made only when an error needs it (the queues of a 200k
/// instruction dump were read in ~0.5 s, most of it formatting paths).
type At<'a> = &'a dyn Fn() -> String;

fn dma_block(v: &Value, queue: &Arc<str>, at: At<'_>) -> Result<DmaBlock> {
    let o = object(v, at)?;
    let name = Arc::from(string(field(v, key!(queues name), at)?, &|| format!("{}.name", at()))?);
    let mut descriptors = Vec::new();
    if let Some(blocks) = o.get(key!(queues blocks)) {
        for (bi, b) in array(blocks, &|| format!("{}.blocks", at()))?.iter().enumerate() {
            let bat = || format!("{}.blocks[{bi}]", at());
            let Some(insts) = object(b, &bat)?.get(key!(queues instructions)) else {
                continue;
            };
            for (di, d) in array(insts, &|| format!("{}.instructions", bat()))?.iter().enumerate() {
                descriptors.push(descriptor(d, &|| format!("{}.instructions[{di}]", bat()))?);
            }
        }
    }
    Ok(DmaBlock {
        name,
        queue: queue.clone(),
        path: at(),
        sync_info: o.get(key!(queues sync_info)).cloned(),
        descriptors,
    })
}

fn descriptor(v: &Value, at: At<'_>) -> Result<Descriptor> {
    let o = object(v, at)?;
    let name = o.get(key!(inst name)).and_then(Value::as_str).unwrap_or("");
    let opcode = o
        .get(key!(inst opcode))
        .and_then(Value::as_str)
        .unwrap_or("DMADescriptor");
    let args = |k: &str| -> Result<Vec<Argument>> {
        match o.get(k) {
            None => Ok(Vec::new()),
            Some(a) => array(a, &|| format!("{}.{k}", at()))?
                .iter()
                .enumerate()
                .map(|(n, x)| argument(x, &|| format!("{}.{k}[{n}]", at())))
                .collect(),
        }
    };
    let own = [key!(inst name), key!(inst opcode), key!(inst ins), key!(inst outs)];
    let rest: Map<String, Value> = o
        .iter()
        .filter(|(k, _)| !own.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Descriptor {
        name: Arc::from(name),
        opcode: Arc::from(opcode),
        ins: args(key!(inst ins))?,
        outs: args(key!(inst outs))?,
        extra: (!rest.is_empty()).then(|| Arc::new(rest)),
    })
}

/// A descriptor argument: a `physical_ap` typed; any other kind kept whole.
fn argument(v: &Value, at: At<'_>) -> Result<Argument> {
    let o = object(v, at)?;
    let kind = string(field(v, key!(arg kind), at)?, &|| {
        format!("{}.{}", at(), key!(arg kind))
    })?;
    if kind != key!(arg_kind physical_ap) {
        return Ok(Argument::Other {
            kind: Arc::from(kind),
            fields: Arc::new(o.clone()),
        });
    }
    let mut ap = Ap::new();
    for (d, pair) in array(field(v, key!(arg ap), at)?, &|| format!("{}.ap", at()))?
        .iter()
        .enumerate()
    {
        let p = pair.as_array().and_then(|p| match p[..] {
            [ref s, ref n] => Some([s.as_i64()?, n.as_i64()?]),
            _ => None,
        });
        ap.push(p.ok_or_else(|| {
            Error::bir(
                format!("an ap dim must be [step, num], got {pair}"),
                format!("{}.ap[{d}]", at()),
            )
        })?);
    }
    let text = |k: &str| -> Result<Option<Arc<str>>> {
        match o.get(k) {
            None => Ok(None),
            Some(x) => string(x, &|| format!("{}.{k}", at())).map(|s| Some(Arc::from(s))),
        }
    };
    let offset = match o.get(key!(arg offset)) {
        None => None,
        Some(x) => Some(x.as_i64().ok_or_else(|| {
            Error::bir(
                format!("\"offset\" must be a 64-bit integer, got {x}"),
                format!("{}.offset", at()),
            )
        })?),
    };
    let known = [
        key!(arg kind),
        key!(arg ap),
        key!(arg offset),
        key!(arg dtype),
        key!(arg memref),
        key!(arg memsetref),
    ];
    let rest: Map<String, Value> = o
        .iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Argument::Physical(PhysicalAp {
        ap,
        offset,
        dtype: text(key!(arg dtype))?,
        memref: text(key!(arg memref))?,
        memsetref: text(key!(arg memsetref))?,
        extra: (!rest.is_empty()).then(|| Arc::new(rest)),
    }))
}

fn object<'v>(v: &'v Value, at: At<'_>) -> Result<&'v Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::bir(format!("expected an object, got {}", short(v)), at()))
}

fn array<'v>(v: &'v Value, at: At<'_>) -> Result<&'v [Value]> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| Error::bir(format!("expected an array, got {}", short(v)), at()))
}

fn field<'v>(v: &'v Value, k: &str, at: At<'_>) -> Result<&'v Value> {
    object(v, at)?
        .get(k)
        .ok_or_else(|| Error::bir(format!("missing required key \"{k}\""), at()))
}

fn string<'v>(v: &'v Value, at: At<'_>) -> Result<&'v str> {
    v.as_str()
        .ok_or_else(|| Error::bir(format!("expected a string, got {}", short(v)), at()))
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!("{}…", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bir::module_from_value;

    #[test]
    fn a_trigger_names_its_blocks_and_their_descriptors_are_typed() {
        let m = module_from_value(crate::bir::spelling_tests::scheduled_example()).expect("loads");
        let q = Queues::of(&m).expect("queues read");
        let b = q.block("load_w_block").expect("the block");
        assert_eq!(&*b.queue, "qPoolDynamic");
        assert_eq!(b.descriptors.len(), 2);
        let Argument::Physical(p) = &b.descriptors[1].ins[0] else {
            panic!("a physical_ap")
        };
        assert_eq!((p.offset, p.memref.as_deref()), (Some(4096), Some("w0")));
        let f = m.entry_function().expect("entry");
        let trigger = f.basic_blocks[0]
            .instructions
            .iter()
            .find(|i| is_trigger(i))
            .expect("a trigger");
        assert_eq!(
            trigger_blocks(trigger).expect("names"),
            Some(vec![Arc::from("load_w_block")])
        );
    }

    #[test]
    fn malformed_queues_are_an_error_at_their_path() {
        let e = Queues::read(
            &serde_json::json!([{"name": "q", "blocks": [{"instructions": [{"name": "b",
            "blocks": [{"instructions": [{"ins": [{"kind": "physical_ap", "ap": [[1]]}]}]}]}]}]}]),
        )
        .expect_err("malformed");
        match e {
            Error::BirJson { path, .. } => {
                assert_eq!(
                    path,
                    "$.queues[0].blocks[0].instructions[0].blocks[0].instructions[0].ins[0].ap[0]"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
