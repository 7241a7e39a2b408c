//! extend_shared_lifetimes (order 81, contract §3.6; neuronx-facts §6.3):
//! bracket the lifetime of every shared location with core barriers on
//! every core, so no core starts using it before every core reaches its
//! first writing block, and none moves on before every core is done with it.
//!
//! Per function, for every shared location (its set in `Shared` address
//! space or the location flagged `is_shared_post_dram_alloc`; Input and
//! Const sets exempt; proxies made by lowering are never shared), all
//! cores' accesses are ordered by (top-level block, position in it; a Loop
//! counts at its own position; at a tie a read first). A location whose
//! first access is a read is live into the entry block: 9202. The k-th
//! touched location (core 0's allocation order) gets `cb_sg<sg>_start_<k>` as
//! the first instruction of the earliest block that writes it on any core and
//! `cb_sg<sg>_end_<k>` as the last of the latest block that touches it on any
//! core, on every core. Then core barriers are renumbered.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

use crate::analysis::cores::check_cores;
use crate::analysis::location::{is_shared, locations_of};
use crate::bir::{Argument, Block, Function, Instruction, MemoryLocationSet, Module, Opcode};
use crate::error::{Error, Result};
use crate::passes::core_barriers::{all_cores_op, renumber_core_barriers, written_order};

const LOCATION: &str = "lncsplit/extend_shared_lifetimes";

fn fail(code: u32, message: &str, detail: String) -> Error {
    Error::neuron_at(code, message, LOCATION, detail)
}

/// One bracketed location, for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extended {
    pub function: String,
    pub k: usize,
    pub location: String,
    pub start_block: String,
    pub end_block: String,
}

/// One access of an instruction (or of a Loop's body, at the Loop's place).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    block: usize,
    top: usize,
    /// 0 for a read, 1 for a write: at a tie a read counts first.
    write: u8,
}

/// Where a location's accesses start and end, and its first access.
#[derive(Clone, Debug)]
struct Span {
    first: Place,
    first_core: usize,
    first_inst: Arc<str>,
    start: Option<usize>,
    end: usize,
}

/// SPMD identity: the same functions by name and the same block names in
/// order on every core (9201).
fn check_spmd(cores: &[Module]) -> Result<()> {
    let bad = |detail: String| fail(9201, "cores are SPMD-identical: same functions and blocks", detail);
    fn names(m: &Module) -> Vec<&str> {
        let mut v: Vec<&str> = m.functions.iter().map(|f| &*f.name).collect();
        v.sort_unstable();
        v
    }
    let n0 = names(&cores[0]);
    for (c, m) in cores.iter().enumerate().skip(1) {
        if names(m) != n0 {
            return Err(bad(format!("core 0 has functions {n0:?}, core {c} has {:?}", names(m))));
        }
        for f0 in &cores[0].functions {
            let f = m.function(&f0.name).expect("same function names");
            let b0: Vec<&str> = f0.basic_blocks.iter().map(|b| &*b.name).collect();
            let b: Vec<&str> = f.basic_blocks.iter().map(|b| &*b.name).collect();
            if b0 != b {
                return Err(bad(format!(
                    "function {}: core 0 has blocks {b0:?}, core {c} has {b:?}",
                    f0.name
                )));
            }
        }
    }
    Ok(())
}

fn exempt(set: &MemoryLocationSet) -> bool {
    set.is_input() || set.kind.as_deref() == Some("Const")
}

/// The shared, non-exempt locations of core 0's function in allocation order.
fn candidates(f: &Function) -> Vec<Arc<str>> {
    let mut out = Vec::new();
    for s in f.allocations.iter().filter(|s| !exempt(s)) {
        for (name, _, loc) in locations_of(s) {
            if is_shared(s, loc) {
                out.push(Arc::from(name));
            }
        }
    }
    out
}

/// For one core's function: the core-0 names of the shared, non-exempt
/// locations each set holds (sets with none are absent), and each
/// location's set (a `physical_ap` may name only its location).
struct SharedIndex<'f> {
    /// Set name → index in `keys`, the first set of a name winning.
    by_set: HashMap<&'f str, usize>,
    keys: Vec<Vec<&'f str>>,
    by_loc: HashMap<&'f str, &'f str>,
    /// The answer for each set-name string met, by address and length: the
    /// loader shares one string among the arguments that name a set, so
    /// every argument after the first is answered without reading its name
    /// (the scan's hot path, docs/performance.md).
    seen: HashMap<(usize, usize), Option<usize>>,
}

impl<'f> SharedIndex<'f> {
    fn new(f: &'f Function) -> Self {
        let mut by_set = HashMap::new();
        let mut keys = Vec::new();
        let mut by_loc = HashMap::new();
        for set in &f.allocations {
            let k = shared_keys(set);
            if !k.is_empty() && !by_set.contains_key(&*set.name) {
                by_set.insert(&*set.name, keys.len());
                keys.push(k);
            }
            for l in &set.locations {
                by_loc.entry(&*l.name).or_insert(&*set.name);
            }
        }
        SharedIndex {
            by_set,
            keys,
            by_loc,
            seen: HashMap::new(),
        }
    }

    /// The shared locations an argument touches (every location of its set,
    /// as the race checker reads arguments, contract §3.6), as an index in
    /// `keys`.
    fn keys(&mut self, arg: &Argument) -> Option<usize> {
        let set = match arg {
            Argument::Symbolic(s) => s.memsetref.as_deref()?,
            Argument::Physical(p) => match (&p.memsetref, &p.memref) {
                (Some(s), _) => &**s,
                (None, Some(l)) => *self.by_loc.get(&**l)?,
                (None, None) => return None,
            },
            Argument::Other { kind, .. } if &**kind == "register_ap" => arg.memsetref()?,
            _ => return None,
        };
        let by_set = &self.by_set;
        *(self.seen)
            .entry((set.as_ptr() as usize, set.len()))
            .or_insert_with(|| by_set.get(set).copied())
    }
}

/// Core 0's name of each shared location a set holds (a core's location
/// is core 0's location of that name, or the one its placed target names).
fn shared_keys(set: &MemoryLocationSet) -> Vec<&str> {
    if exempt(set) {
        return Vec::new();
    }
    locations_of(set)
        .into_iter()
        .filter(|(_, _, loc)| is_shared(set, *loc))
        .map(|(name, _, loc)| {
            loc.and_then(|l| l.remote_local_target.as_ref())
                .filter(|r| r.core == 0)
                .map_or(name, |r| &*r.name)
        })
        .collect()
}

fn record(spans: &mut HashMap<Arc<str>, Span>, key: &str, place: Place, core: usize, inst: &Instruction) {
    let Some(s) = spans.get_mut(key) else { return };
    if (place, core) < (s.first, s.first_core) {
        s.first = place;
        s.first_core = core;
        s.first_inst = inst.name.clone();
    }
    if place.write == 1 {
        s.start = Some(s.start.map_or(place.block, |b| b.min(place.block)));
    }
    s.end = s.end.max(place.block);
}

fn scan_core(f: &Function, core: usize, spans: &mut HashMap<Arc<str>, Span>, touched: &mut HashSet<Arc<str>>) {
    let mut index = SharedIndex::new(f);
    if index.keys.is_empty() {
        return;
    }
    for (b, block) in f.basic_blocks.iter().enumerate() {
        for (t, top) in block.instructions.iter().enumerate() {
            top.walk(&mut |inst| {
                let lists: [(&[Argument], u8); 3] = [
                    (&inst.ins, 0),
                    (inst.indirection_ins.as_deref().unwrap_or(&[]), 0),
                    (&inst.outs, 1),
                ];
                for (args, write) in lists {
                    for arg in args {
                        let Some(k) = index.keys(arg) else { continue };
                        for &key in &index.keys[k] {
                            if spans.contains_key(key) {
                                if !touched.contains(key) {
                                    touched.insert(Arc::from(key));
                                }
                                record(
                                    spans,
                                    key,
                                    Place {
                                        block: b,
                                        top: t,
                                        write,
                                    },
                                    core,
                                    inst,
                                );
                            }
                        }
                    }
                }
            });
        }
    }
}

fn barrier(name: String, n: usize) -> Instruction {
    Instruction::bare(name, Opcode::CORE_BARRIER, all_cores_op(n))
}

/// The brackets of one function: (k, location, start block, end block).
/// One bracket: (k, location, start block, end block).
type Bracket = (usize, Arc<str>, usize, usize);

fn brackets(cores: &[Module], fname: &str) -> Result<Vec<Bracket>> {
    let f0 = cores[0].function(fname).expect("SPMD-checked");
    let order = candidates(f0);
    let far = Place {
        block: usize::MAX,
        top: usize::MAX,
        write: 1,
    };
    let mut spans: HashMap<Arc<str>, Span> = order
        .iter()
        .map(|k| {
            let s = Span {
                first: far,
                first_core: usize::MAX,
                first_inst: Arc::from(""),
                start: None,
                end: 0,
            };
            (k.clone(), s)
        })
        .collect();
    let mut touched = HashSet::new();
    for (c, m) in cores.iter().enumerate() {
        let f = m.function(fname).expect("SPMD-checked");
        scan_core(f, c, &mut spans, &mut touched);
    }
    let mut out = Vec::new();
    for name in order.iter().filter(|n| touched.contains(*n)) {
        let s = &spans[name];
        let start = match (s.first.write, s.start) {
            (1, Some(start)) => start,
            _ => {
                return Err(fail(
                    9202,
                    "no shared location is live into the entry block",
                    format!(
                        "function {fname}: shared location {name} is first read by {} on core {} (block {}) before any core writes it",
                        s.first_inst, s.first_core, s.first.block
                    ),
                ))
            }
        };
        out.push((out.len(), name.clone(), start, s.end));
    }
    Ok(out)
}

/// Whether `name` is already a barrier at the place it would go: among the
/// leading (start) or trailing (end) barriers of the block.
fn in_place(block: &Block, name: &str, at_start: bool) -> bool {
    let insts = &block.instructions;
    let run: Box<dyn Iterator<Item = &Instruction>> = if at_start {
        Box::new(insts.iter().take_while(|i| i.opcode == Opcode::CORE_BARRIER))
    } else {
        Box::new(insts.iter().rev().take_while(|i| i.opcode == Opcode::CORE_BARRIER))
    };
    run.into_iter().any(|i| &*i.name == name)
}

/// Barriers to put at the front and at the back of each block of one
/// core's function. A name already in place is kept (running the pass twice
/// changes nothing); one taken elsewhere is 9203.
type Inserts = (Vec<Vec<Instruction>>, Vec<Vec<Instruction>>);

fn prepare(f: &Function, core: usize, sg: u64, n: usize, list: &[Bracket]) -> Result<Inserts> {
    let mut fronts: Vec<Vec<Instruction>> = vec![Vec::new(); f.basic_blocks.len()];
    let mut backs: Vec<Vec<Instruction>> = vec![Vec::new(); f.basic_blocks.len()];
    if list.is_empty() {
        return Ok((fronts, backs));
    }
    // Every name made here starts `cb_sg<sg>_`: only those can clash, so the
    // walk keeps (and hashes) just them.
    let prefix = format!("cb_sg{sg}_");
    let mut names: HashSet<&str> = HashSet::new();
    f.walk(&mut |i| {
        if i.name.starts_with(&prefix) {
            names.insert(&i.name);
        }
    });
    for &(k, _, start, end) in list {
        for (name, block, at_start) in [
            (format!("cb_sg{sg}_start_{k}"), start, true),
            (format!("cb_sg{sg}_end_{k}"), end, false),
        ] {
            if names.contains(name.as_str()) {
                if in_place(&f.basic_blocks[block], &name, at_start) {
                    continue;
                }
                return Err(fail(
                    9203,
                    "the barriers extend_shared_lifetimes inserts have free names",
                    format!(
                        "function {} on core {core}: instruction {name} already exists elsewhere",
                        f.name
                    ),
                ));
            }
            let dst = if at_start {
                &mut fronts[block]
            } else {
                &mut backs[block]
            };
            dst.push(barrier(name, n));
        }
    }
    Ok((fronts, backs))
}

fn insert(f: &mut Function, (fronts, backs): Inserts) {
    for ((b, front), back) in f.basic_blocks.iter_mut().zip(fronts).zip(backs) {
        if !front.is_empty() {
            b.instructions.splice(0..0, front);
        }
        b.instructions.extend(back);
    }
}

/// The module attribute `subgraph_id` (contract §1.1, default 0) that names the
/// barriers `cb_sg<sg>_…`: an integer ≥ 0. Anything else is refused rather than
/// read as 0, so two subgraphs never get the same barrier names by accident.
fn subgraph_id(m: &Module) -> Result<u64> {
    match m.attributes.as_ref().and_then(|a| a.get("subgraph_id")) {
        None => Ok(0),
        Some(v) => v.as_u64().ok_or_else(|| {
            Error::bir(
                format!(
                    "module {}: attribute subgraph_id must be an integer >= 0, got {v}",
                    m.name
                ),
                "$.attributes.subgraph_id",
            )
        }),
    }
}

/// Bracket every shared location's lifetime on the kernel's N core modules,
/// in place. Skipped when N == 1. Returns what was bracketed.
pub fn extend_shared_lifetimes(cores: &mut [Module]) -> Result<Vec<Extended>> {
    let refs: Vec<&Module> = cores.iter().collect();
    check_cores(&refs, "extend_shared_lifetimes")?;
    let n = cores.len();
    if n == 1 {
        return Ok(Vec::new());
    }
    for m in cores.iter() {
        crate::bir::names::refuse_repeated_names(m, "extend_shared_lifetimes")?;
    }
    check_spmd(cores)?;
    let sg = subgraph_id(&cores[0])?;
    let fnames: Vec<Arc<str>> = written_order(&cores[0].functions)
        .into_iter()
        .map(|i| cores[0].functions[i].name.clone())
        .collect();
    let mut plan = Vec::new();
    for fname in &fnames {
        plan.push(brackets(cores, fname)?);
    }
    let mut inserts: Vec<Vec<Inserts>> = Vec::with_capacity(n);
    for (c, m) in cores.iter().enumerate() {
        let per_fn = fnames.iter().zip(&plan);
        let v = per_fn.map(|(fname, list)| prepare(m.function(fname).expect("SPMD-checked"), c, sg, n, list));
        inserts.push(v.collect::<Result<_>>()?);
    }
    for (m, per_fn) in cores.iter_mut().zip(inserts) {
        for (fname, ins) in fnames.iter().zip(per_fn) {
            let f = m.functions.iter_mut().find(|f| f.name == *fname).expect("SPMD-checked");
            insert(f, ins);
        }
    }
    for m in cores.iter_mut() {
        renumber_core_barriers(m);
    }
    let f0 = |name: &str| cores[0].function(name).expect("SPMD-checked");
    let mut out = Vec::new();
    for (fname, list) in fnames.iter().zip(&plan) {
        let blocks = &f0(fname).basic_blocks;
        for (k, loc, start, end) in list {
            out.push(Extended {
                function: fname.to_string(),
                k: *k,
                location: loc.to_string(),
                start_block: blocks[*start].name.to_string(),
                end_block: blocks[*end].name.to_string(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
