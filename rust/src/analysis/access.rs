//! The accesses of one instruction instance (contract §3.6): for every memory
//! argument, its role and, per location of its set, its footprint.
//!
//! An `outs` argument writes (an accumulate when the instruction carries
//! `accumulate`: an atomic read-modify-write); `ins` and `indirection_ins`
//! read. `symbolic_ap` and `physical_ap` have exact footprints; a
//! `register_ap` (its address lives in a register) and an address that stays
//! undecided with every IV bound cover their whole location.
//!
//! A `DMATrigger` accesses what the descriptors of its `dma_blocks` access
//! (contract §3.6 via §3.8): each `DMADescriptor*` of each block, in queue
//! order, reads its `ins` and writes its `outs` (`bir/queues.rs`), when the
//! index was built with the module's queues ([`FunctionIndex::with_queues`]).

use hashbrown::HashMap;

use super::footprint::{FootprintError, Layout, Progression};
use super::location::locations_of;
use crate::bir::argument::Argument;
use crate::bir::dtype::dtype_size;
use crate::bir::instruction::Instruction;
use crate::bir::memory::{memory_of, Memory, MemoryLocation, MemoryLocationSet};
use crate::bir::module::Function;
use crate::bir::queues::{is_trigger, trigger_blocks, Queues};
use crate::error::{Error, Result};
use crate::pelican::{Bindings, Context};
use std::sync::Arc;

/// What an access does to its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Read,
    Write,
    /// `accumulate: add|max|min`: two accumulates with the same op commute.
    Accumulate(AccOp),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccOp {
    Add,
    Max,
    Min,
}

impl AccOp {
    /// The reduction ops of the one op vocabulary (contract §3.8: the
    /// compiler's names and NKI's aliases).
    pub fn parse(s: &str) -> Option<AccOp> {
        Some(match s {
            "add" => AccOp::Add,
            "max" | "maximum" => AccOp::Max,
            "min" | "minimum" => AccOp::Min,
            _ => return None,
        })
    }
}

/// The instruction's `accumulate` op (contract §1.4), if it has one.
pub fn accumulate_op(inst: &Instruction) -> Result<Option<AccOp>> {
    let Some(v) = inst.extra.as_ref().and_then(|x| x.get("accumulate")) else {
        return Ok(None);
    };
    v.as_str().and_then(AccOp::parse).map(Some).ok_or_else(|| {
        Error::neuron_at(
            9302,
            format!("accumulate must be \"add\", \"max\" or \"min\", got {v}"),
            "lncsplit/footprint",
            format!("instruction {}", inst.name),
        )
    })
}

/// Which argument list an argument is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArgList {
    Ins,
    Outs,
    IndirectionIns,
}

impl ArgList {
    pub fn key(self) -> &'static str {
        match self {
            ArgList::Ins => "ins",
            ArgList::Outs => "outs",
            ArgList::IndirectionIns => "indirection_ins",
        }
    }
}

/// One location of one set, with its geometry on the accessing core.
#[derive(Clone, Debug)]
pub struct LocEntry<'m> {
    pub name: &'m str,
    pub mem_type: &'m str,
    pub loc: Option<&'m MemoryLocation>,
    /// The location's geometry ([`Layout::of_location`]: its `dims` when it
    /// has them, else its set's): what a `physical_ap`, a whole-location
    /// access and every (partition, byte) of the location use.
    pub layout: std::result::Result<Layout, FootprintError>,
    /// The set's tensor geometry ([`Layout::of`]): what a `symbolic_ap`'s
    /// `addrs` and strides address (the same as `layout` unless the file's
    /// `dims` disagree with the set's shape).
    pub tensor: std::result::Result<Layout, FootprintError>,
    /// `RNGSTATE` / `REG` (contract §1.7): no footprint reaches it.
    pub unmodelled: bool,
}

/// A set of the function and its locations.
#[derive(Clone, Debug)]
pub struct SetEntry<'m> {
    pub set: &'m MemoryLocationSet,
    pub locations: Vec<LocEntry<'m>>,
}

/// One access of an instance to one location.
#[derive(Clone, Debug)]
pub struct Access<'i> {
    pub list: ArgList,
    pub index: usize,
    pub role: Role,
    pub set: &'i SetEntry<'i>,
    /// Index into `set.locations`.
    pub location: usize,
    /// Flat element indices in AP order; None covers the whole location
    /// (a register address, or runtime values in the address).
    pub points: Option<Progression>,
}

impl Access<'_> {
    pub fn loc(&self) -> &LocEntry<'_> {
        &self.set.locations[self.location]
    }
}

/// How an argument addresses memory.
enum Shape<'a> {
    Symbolic(&'a crate::bir::argument::SymbolicAp),
    Physical(&'a crate::bir::argument::PhysicalAp),
    Whole,
}

/// The sets of one function by name, with their layouts computed once.
pub struct FunctionIndex<'m> {
    pub function: &'m Function,
    sets: HashMap<&'m str, SetEntry<'m>>,
    /// The module's DMA queues (a `DMATrigger`'s descriptors), if read.
    queues: Option<Arc<Queues>>,
}

impl<'m> FunctionIndex<'m> {
    pub fn new(function: &'m Function) -> Self {
        let mut sets = HashMap::with_capacity(function.allocations.len());
        for set in &function.allocations {
            let locations = locations_of(set)
                .into_iter()
                .map(|(name, mem_type, loc)| LocEntry {
                    name,
                    mem_type,
                    loc,
                    layout: Layout::of_location(set, loc, mem_type),
                    tensor: Layout::of(set, mem_type),
                    unmodelled: memory_of(mem_type) == Memory::Unmodelled,
                })
                .collect();
            sets.entry(&*set.name).or_insert(SetEntry { set, locations });
        }
        FunctionIndex {
            function,
            sets,
            queues: None,
        }
    }

    /// [`FunctionIndex::new`], a `DMATrigger` accessing its descriptors'
    /// arguments (`queues`: the module's, [`Queues::of`]).
    pub fn with_queues(function: &'m Function, queues: Option<Arc<Queues>>) -> Self {
        let mut ix = FunctionIndex::new(function);
        ix.queues = queues;
        ix
    }

    /// Whether `inst` has accesses beyond its own arguments (a `DMATrigger`
    /// whose blocks the index knows): fast paths that read only `ins`/`outs`
    /// must not take it.
    pub fn has_descriptor_accesses(&self, inst: &Instruction) -> bool {
        self.queues.is_some() && is_trigger(inst)
    }

    pub fn set(&self, name: &str) -> Option<&SetEntry<'m>> {
        self.sets.get(name)
    }

    /// The set holding the location named `name` (a `physical_ap` with only a `memref`).
    pub(crate) fn set_of_location(&self, name: &str) -> Option<&SetEntry<'m>> {
        self.sets.values().find(|s| s.locations.iter().any(|l| l.name == name))
    }

    /// Append the accesses of `inst` under `bindings` to `out`. `code` is the
    /// caller's error code for an invalid footprint (9302 in the race checker,
    /// 9401 in the simulator).
    pub fn accesses<'i>(
        &'i self,
        ctx: &Context,
        inst: &Instruction,
        bindings: &Bindings,
        code: u32,
        out: &mut Vec<Access<'i>>,
    ) -> Result<()> {
        self.accesses_where(ctx, inst, bindings, code, &|_, _, _| true, out)
    }

    /// [`FunctionIndex::accesses`] of the arguments `keep(list, index, set)`
    /// selects only (the others' footprints are not computed): a caller that
    /// needs a few arguments of an instance pays for those.
    pub fn accesses_where<'i>(
        &'i self,
        ctx: &Context,
        inst: &Instruction,
        bindings: &Bindings,
        code: u32,
        keep: &dyn Fn(ArgList, usize, &SetEntry<'m>) -> bool,
        out: &mut Vec<Access<'i>>,
    ) -> Result<()> {
        let acc = accumulate_op(inst)?;
        let lists: [(ArgList, &[Argument]); 3] = [
            (ArgList::Ins, &inst.ins),
            (ArgList::Outs, &inst.outs),
            (ArgList::IndirectionIns, inst.indirection_ins.as_deref().unwrap_or(&[])),
        ];
        for (list, args) in lists {
            let role = match (list, acc) {
                (ArgList::Outs, Some(op)) => Role::Accumulate(op),
                (ArgList::Outs, None) => Role::Write,
                _ => Role::Read,
            };
            for (index, arg) in args.iter().enumerate() {
                self.argument_accesses(ctx, inst, bindings, code, keep, (list, index, role), arg, out)?;
            }
        }
        if let (Some(q), true) = (&self.queues, is_trigger(inst)) {
            self.descriptor_accesses(ctx, inst, bindings, code, keep, q, out)?;
        }
        Ok(())
    }

    /// The accesses of a `DMATrigger`'s descriptors: their `ins` read and
    /// their `outs` written, numbered on after the trigger's own arguments.
    #[allow(clippy::too_many_arguments)]
    fn descriptor_accesses<'i>(
        &'i self,
        ctx: &Context,
        inst: &Instruction,
        bindings: &Bindings,
        code: u32,
        keep: &dyn Fn(ArgList, usize, &SetEntry<'m>) -> bool,
        queues: &Queues,
        out: &mut Vec<Access<'i>>,
    ) -> Result<()> {
        let names = trigger_blocks(inst)?.unwrap_or_default();
        let (mut ins, mut outs) = (inst.ins.len(), inst.outs.len());
        for name in names {
            let block = queues.block(&name).ok_or_else(|| {
                Error::neuron_at(
                    code,
                    format!("DMATrigger {} starts DMA block {name}, which no queue holds", inst.name),
                    "lncsplit/footprint",
                    format!("instruction {}, dma_blocks {name}", inst.name),
                )
            })?;
            for d in &block.descriptors {
                for arg in &d.ins {
                    let r = (ArgList::Ins, ins, Role::Read);
                    self.argument_accesses(ctx, inst, bindings, code, keep, r, arg, out)?;
                    ins += 1;
                }
                for arg in &d.outs {
                    let w = (ArgList::Outs, outs, Role::Write);
                    self.argument_accesses(ctx, inst, bindings, code, keep, w, arg, out)?;
                    outs += 1;
                }
            }
        }
        Ok(())
    }

    /// The accesses of one argument (`at`: its list, index and role).
    #[allow(clippy::too_many_arguments)]
    fn argument_accesses<'i>(
        &'i self,
        ctx: &Context,
        inst: &Instruction,
        bindings: &Bindings,
        code: u32,
        keep: &dyn Fn(ArgList, usize, &SetEntry<'m>) -> bool,
        at: (ArgList, usize, Role),
        arg: &Argument,
        out: &mut Vec<Access<'i>>,
    ) -> Result<()> {
        let (list, index, role) = at;
        let Some((entry, shape)) = self.addressed(arg) else {
            return Ok(());
        };
        let entry = entry.ok_or_else(|| unknown_set(code, inst, list, index, arg))?;
        if !keep(list, index, entry) {
            return Ok(());
        }
        for (location, loc) in entry.locations.iter().enumerate() {
            if loc.unmodelled {
                continue;
            }
            let ferr = |e: FootprintError| footprint_error(code, inst, list, index, &entry.set.name, &e);
            let geometry = if matches!(shape, Shape::Symbolic(_)) {
                &loc.tensor
            } else {
                &loc.layout
            };
            let layout = geometry.as_ref().map_err(|e| ferr(e.clone()))?;
            let points = points(ctx, &shape, layout, entry.set, bindings)?.map_err(ferr)?;
            out.push(Access {
                list,
                index,
                role,
                set: entry,
                location,
                points,
            });
        }
        Ok(())
    }

    /// The set an argument accesses (None inside when its name resolves to
    /// nothing) and how it addresses it; None for arguments without memory.
    #[allow(clippy::type_complexity)]
    fn addressed<'a>(&self, arg: &'a Argument) -> Option<(Option<&SetEntry<'m>>, Shape<'a>)> {
        let by_name = |n: &str| self.set(n);
        match arg {
            Argument::Symbolic(s) => Some((by_name(s.memsetref.as_deref()?), Shape::Symbolic(s))),
            Argument::Physical(p) => {
                let entry = match (&p.memsetref, &p.memref) {
                    (Some(s), _) => by_name(s),
                    (None, Some(l)) => self.set_of_location(l),
                    (None, None) => return None,
                };
                Some((entry, Shape::Physical(p)))
            }
            // A register address, or a descriptor's symbolic one (its
            // expressions are not in the module's arena): the whole location.
            Argument::Other { kind, .. } if matches!(&**kind, "register_ap" | "symbolic_ap" | "symbolic_pwap") => {
                let entry = match (arg.memsetref(), other_memref(arg)) {
                    (Some(s), _) => by_name(s),
                    (None, Some(l)) => self.set_of_location(l),
                    (None, None) => return None,
                };
                Some((entry, Shape::Whole))
            }
            _ => None,
        }
    }
}

/// A kept argument's `memref` (a register address names its location).
fn other_memref(arg: &Argument) -> Option<&str> {
    match arg {
        Argument::Other { fields, .. } => fields.get("memref").and_then(serde_json::Value::as_str),
        _ => None,
    }
}

/// The points of one argument on one location: `Ok(Ok(None))` when the
/// address stays undecided (the whole location).
fn points(
    ctx: &Context,
    shape: &Shape<'_>,
    layout: &Layout,
    set: &MemoryLocationSet,
    bindings: &Bindings,
) -> Result<std::result::Result<Option<Progression>, FootprintError>> {
    Ok(match shape {
        Shape::Whole => Ok(None),
        Shape::Physical(p) => element_size(p.dtype.as_deref(), set).and_then(|es| layout.physical(p, es).map(Some)),
        Shape::Symbolic(s) => {
            let mut vals: smallvec::SmallVec<[i64; 4]> = smallvec::SmallVec::with_capacity(s.addrs.len());
            for &a in &s.addrs {
                let v = match ctx.as_constant(a) {
                    Some(c) => Some(c),
                    None => ctx.eval(a, bindings)?,
                };
                match v {
                    Some(v) => vals.push(v),
                    None => return Ok(Ok(None)),
                }
            }
            element_size(s.dtype.as_deref(), set).and_then(|es| layout.symbolic(&s.ap, &vals, es).map(Some))
        }
    })
}

/// The error for an argument whose set (or location) is not in its function.
pub(crate) fn unknown_set(code: u32, inst: &Instruction, list: ArgList, index: usize, arg: &Argument) -> Error {
    let name = match arg {
        Argument::Physical(p) => p.memsetref.as_deref().or(p.memref.as_deref()),
        _ => arg.memsetref(),
    }
    .unwrap_or("?");
    Error::neuron_at(
        code,
        format!(
            "{}[{index}] of {} names {name}, which is not in its function",
            list.key(),
            inst.name
        ),
        "lncsplit/footprint",
        format!("instruction {}, argument {}[{index}]", inst.name, list.key()),
    )
}

/// The error for an access whose footprint is invalid, naming instruction,
/// argument and set.
pub fn footprint_error(
    code: u32,
    inst: &Instruction,
    list: ArgList,
    index: usize,
    set: &str,
    e: &FootprintError,
) -> Error {
    Error::neuron_at(
        code,
        format!(
            "footprint of {}[{index}] of {} leaves set {set}: {}",
            list.key(),
            inst.name,
            e.describe()
        ),
        "lncsplit/footprint",
        format!("instruction {}, argument {}[{index}], set {set}", inst.name, list.key()),
    )
}

/// Element size of an argument: its own dtype, else its set's.
pub fn element_size(arg_dtype: Option<&str>, set: &MemoryLocationSet) -> std::result::Result<i64, FootprintError> {
    let d = arg_dtype.unwrap_or(&set.dtype);
    dtype_size(d).ok_or_else(|| FootprintError::UnknownDtype(d.to_string()))
}
