//! bir_linker (contract §3.7, neuronx-facts §6.5): the N verified core
//! modules of one kernel become one linked module `<base>/sgLnk`, and
//! `unlink` gives the cores back byte for byte.
//!
//! A linked module is laid out as follows.
//! - `main` (written first): one block `dispatch` holding, per core c, a
//!   `Call` `call_def_<c>_instance_0` (`callee` `nc<cc>.main`, `core` c). Its
//!   allocations are the shared sets: a shared set `s` of function `f` becomes
//!   one set `<f>.<s>` (copied from the first core that has it).
//! - Then every core's functions, core by core, each renamed `nc<cc>.<f>` and
//!   otherwise copied verbatim; a shared set carries `alias_of: "<f>.<s>"`. A
//!   core's `main` starts with `SwitchQueueInstance` `I-SQI-<c>` and ends with
//!   `CoreBarrier` `cb_return` (all cores) and `Return` `return_nc<cc>`.
//! - renumberCoreBarriers: every CoreBarrier gets its id from one running
//!   counter in function order; its per-core id is kept as `local_id`
//!   (`cb_return` has none: it is the linker's own).
//! - Attribute `lnc` = N, no `neuron_core_id`; the module key `cores` holds
//!   each core's module-level fields (name, version, arch when given,
//!   artifact_path, attributes, unknown keys).
//!
//! Expressions: see `ids` — each core keeps its own id range in the linked
//! arena, which is what makes `unlink` exact.
//!
//! One file past 800 lines: `link` and `unlink` are one layout read in both
//! directions (their checks mirror each other); the id arithmetic is `ids.rs`.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};
use rayon::prelude::*;
use serde_json::{json, Map, Value};

use crate::analysis::cores as core_set;
use crate::bir::{Arch, Block, Function, Instruction, MemoryLocationSet, Module, OpFields, Opcode, NEURON_CORE_ID};
use crate::error::{Error, Result};
use crate::passes::core_barriers::for_each_core_barrier_in_blocks_mut;
use crate::passes::lnc_verifier;

mod ids;

use ids::{
    append_context, append_map, copy_block, copy_instructions, extract_context, marked_context, Barriers, IdMap,
};

/// `cores[i]` must carry `neuron_core_id` i (contract §3.6, passes that take `cores`).
pub const BAD_CORES: u32 = core_set::BAD_CORE_SET;
const CORES_MESSAGE: &str = "cores[i] carries neuron_core_id i";
/// `unlink` (or `tensor_map`) of a module `link` did not make.
pub const NOT_LINKED: u32 = 9501;
/// A name or key `link` inserts is already taken in the cores.
pub const NAME_COLLISION: u32 = 9502;

const LOCATION: &str = "bir_linker.cpp";
/// The linker's completion barrier at the end of every core's `main`.
pub const CB_RETURN: &str = "cb_return";
/// The block of the linked `main`.
pub const DISPATCH: &str = "dispatch";
/// The set key naming the linked `main`'s set a core's shared set stands for.
pub const ALIAS_OF: &str = "alias_of";
pub use crate::bir::module::{is_linked, CORES_KEY, LNC_ATTR};

fn bad_cores(detail: String) -> Error {
    core_set::bad_core_set(CORES_MESSAGE, LOCATION, detail)
}

fn collision(detail: String) -> Error {
    Error::neuron_at(
        NAME_COLLISION,
        "names inserted by link are free in the cores",
        LOCATION,
        detail,
    )
}

fn not_linked(m: &Module, why: String) -> Error {
    Error::neuron_at(
        NOT_LINKED,
        "unlink takes a module made by link",
        LOCATION,
        format!("module {}: {why}", m.name),
    )
}

// ------------------------------------------------------------------ names

// `core_tag` and `kernel_base` are the core-set rule's (`analysis/cores.rs`).
pub use crate::analysis::cores::{core_tag, kernel_base};

fn sqi_name(c: usize) -> String {
    format!("I-SQI-{c}")
}

fn return_name(c: usize) -> String {
    format!("return_{}", core_tag(c))
}

fn call_name(c: usize) -> String {
    format!("call_def_{c}_instance_0")
}

/// The linked module's name: `<base>/sgLnk` with core 0's base.
pub fn linked_name(core0: &str) -> String {
    format!("{}/sgLnk", kernel_base(core0, 0))
}

// ------------------------------------------------------------ the core set

/// Passes that take `cores` take the N core modules of one kernel in core
/// order: `cores[i]` carries `neuron_core_id` i (N == 1: absent or 0), and
/// all have the same kernel name once their own `nc<cc>` is taken out.
/// Anything else is 9006, naming the cores.
pub fn check_cores(cores: &[&Module]) -> Result<()> {
    core_set::check_core_order(cores, CORES_MESSAGE, LOCATION)?;
    core_set::check_one_kernel(cores, CORES_MESSAGE, LOCATION)
}

// ------------------------------------------------------------------- link

/// A set two cores can both touch (contract §3.6): `Shared` address space
/// or a location placed as shared.
pub fn is_shared_set(s: &MemoryLocationSet) -> bool {
    s.is_shared() || s.locations.iter().any(|l| l.is_shared_post_dram_alloc == Some(true))
}

fn alias_name(f: &str, s: &str) -> String {
    format!("{f}.{s}")
}

/// One pass over a core: refuse names and keys `link` would insert (9502)
/// and barriers over a core that was not given (9006); count its
/// CoreBarriers (for the global numbering).
fn scan_core(c: usize, n: usize, m: &Module) -> Result<usize> {
    // The entry function: `main`, else the first (contract §1.7).
    let Some(entry) = m.entry_index() else {
        return Err(collision(format!(
            "core {c} ({}) has no function (no entry function main, nor a first one)",
            m.name
        )));
    };
    let main = &m.functions[entry];
    if main.basic_blocks.is_empty() {
        return Err(collision(format!(
            "core {c} ({}): its entry function {} has no basic block to hold the instructions link inserts",
            m.name, main.name
        )));
    }
    crate::bir::names::refuse_repeated_names(m, "link")?;
    let inserted = [sqi_name(c), CB_RETURN.to_string(), return_name(c)];
    let mut problem: Option<Error> = None;
    let mut barriers = 0;
    for (fi, f) in m.functions.iter().enumerate() {
        let is_main = fi == entry;
        f.walk(&mut |i| {
            if problem.is_some() {
                return;
            }
            if is_main && inserted.iter().any(|x| **x == *i.name) {
                problem = Some(collision(format!(
                    "core {c} ({}): its entry function {} already has an instruction named {}, a name link inserts",
                    m.name, f.name, i.name
                )));
            }
            if let OpFields::CoreBarrier { local_id, cores, .. } = &i.op {
                barriers += 1;
                if local_id.is_some() {
                    problem = Some(collision(format!(
                        "core {c} ({}): CoreBarrier {} of function {} already carries local_id, a key link writes",
                        m.name, i.name, f.name
                    )));
                } else if let Some(k) = cores.iter().flatten().find(|&&k| k < 0 || k >= n as i64) {
                    problem = Some(bad_cores(format!(
                        "core {c} ({}): CoreBarrier {} of function {} synchronizes core {k}, but {n} cores were given (a core is missing)",
                        m.name, i.name, f.name
                    )));
                }
            }
        });
        if let Some(s) = f.allocations.iter().find(|s| has_alias(s)) {
            problem.get_or_insert_with(|| {
                collision(format!(
                    "core {c} ({}): set {} of function {} already carries alias_of, a key link writes",
                    m.name, s.name, f.name
                ))
            });
        }
    }
    match problem {
        Some(e) => Err(e),
        None => Ok(barriers),
    }
}

fn has_alias(s: &MemoryLocationSet) -> bool {
    s.extra.as_ref().is_some_and(|e| e.contains_key(ALIAS_OF))
}

/// The unified shared sets of `main`, in order of first appearance (core,
/// function, set), each copied from the first core that has it.
fn shared_sets(cores: &[&Module]) -> Result<Vec<MemoryLocationSet>> {
    let mut owner: HashMap<String, (&str, &str)> = HashMap::new();
    let mut out = Vec::new();
    for m in cores {
        for f in &m.functions {
            for s in f.allocations.iter().filter(|s| is_shared_set(s)) {
                let name = alias_name(&f.name, &s.name);
                match owner.get(&name) {
                    None => {
                        owner.insert(name.clone(), (&*f.name, &*s.name));
                        let mut set = s.clone();
                        set.name = Arc::from(name);
                        out.push(set);
                    }
                    Some(&(of, os)) if (of, os) != (&*f.name, &*s.name) => {
                        return Err(collision(format!(
                            "shared set {} of function {} and set {os} of function {of} would both be {name} in main",
                            s.name, f.name
                        )));
                    }
                    Some(_) => {}
                }
            }
        }
    }
    Ok(out)
}

/// The linked module's `main`: the shared sets and the dispatch block (a
/// call of each core's entry function, `entry`).
fn dispatch_main(n: usize, entry: &str, shared: Vec<MemoryLocationSet>) -> Function {
    let calls = (0..n)
        .map(|c| {
            let op = OpFields::Call {
                callee: Some(Arc::from(format!("{}.{entry}", core_tag(c)))),
                core: Some(c as i64),
            };
            Instruction::bare(call_name(c), Opcode::CALL, op)
        })
        .collect();
    Function {
        name: Arc::from("main"),
        shard_ids: Vec::new(),
        registers: None,
        allocations: shared,
        basic_blocks: vec![Block {
            name: Arc::from(DISPATCH),
            instructions: calls,
            extra: None,
        }],
        extra: None,
    }
}

/// renumberCoreBarriers over blocks: the next global id to each barrier, its
/// own id kept as `local_id`.
fn renumber_barriers(blocks: &mut [Block], next: &mut i64) {
    for_each_core_barrier_in_blocks_mut(blocks, &mut |i| {
        if let OpFields::CoreBarrier { id, local_id, .. } = &mut i.op {
            *local_id = id.take().map(Box::new);
            *id = Some(*next);
            *next += 1;
        }
    });
}

fn with_alias(s: &MemoryLocationSet, f: &str) -> MemoryLocationSet {
    let mut s = s.clone();
    if is_shared_set(&s) {
        let mut extra = s.extra.as_deref().cloned().unwrap_or_default();
        extra.insert(ALIAS_OF.into(), Value::from(alias_name(f, &s.name)));
        s.extra = Some(Arc::new(extra));
    }
    s
}

/// Core `c`'s functions as they appear in the linked module; its barriers
/// are numbered from `first_barrier`.
fn link_core(c: usize, n: usize, m: &Module, map: &IdMap, first_barrier: i64) -> Vec<Function> {
    let mut next = first_barrier;
    let mut out = Vec::with_capacity(m.functions.len());
    let entry = m.entry_index();
    for (fi, f) in m.functions.iter().enumerate() {
        let is_main = Some(fi) == entry;
        let last = f.basic_blocks.len().saturating_sub(1);
        let mut blocks: Vec<Block> = f
            .basic_blocks
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let before = match is_main && k == 0 {
                    true => vec![Instruction::bare(
                        sqi_name(c),
                        Opcode::SWITCH_QUEUE_INSTANCE,
                        OpFields::None,
                    )],
                    false => Vec::new(),
                };
                let after = match is_main && k == last {
                    true => completion(c, n),
                    false => Vec::new(),
                };
                Block {
                    name: b.name.clone(),
                    instructions: copy_instructions(before, &b.instructions, after, map, Barriers::Keep),
                    extra: b.extra.clone(),
                }
            })
            .collect();
        // `cb_return` has no id yet, so it gets the next global id and no local_id.
        renumber_barriers(&mut blocks, &mut next);
        out.push(Function {
            name: Arc::from(format!("{}.{}", core_tag(c), f.name)),
            shard_ids: f.shard_ids.clone(),
            registers: f.registers.clone(),
            allocations: f.allocations.iter().map(|s| with_alias(s, &f.name)).collect(),
            basic_blocks: blocks,
            extra: f.extra.clone(),
        });
    }
    out
}

/// The end of a core's `main`: `cb_return` over all cores, then `return_nc<cc>`.
fn completion(c: usize, n: usize) -> Vec<Instruction> {
    let cb = OpFields::CoreBarrier {
        id: None,
        cores: Some((0..n as i64).collect()),
        runtime_semaphore: None,
        local_id: None,
    };
    vec![
        Instruction::bare(CB_RETURN, Opcode::CORE_BARRIER, cb),
        Instruction::bare(return_name(c), Opcode::RETURN, OpFields::None),
    ]
}

/// A core's module-level fields, as kept under the linked module's `cores`.
fn core_entry(m: &Module) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), Value::from(m.name.clone()));
    o.insert("version".into(), Value::from(m.version));
    if m.arch_given {
        o.insert("arch".into(), Value::from(m.arch.name()));
    }
    if let Some(p) = &m.artifact_path {
        o.insert("artifact_path".into(), Value::from(p.clone()));
    }
    if let Some(a) = &m.attributes {
        o.insert("attributes".into(), Value::Object(a.clone()));
    }
    for (k, v) in m.extra.iter().flat_map(|e| e.iter()) {
        o.insert(k.clone(), v.clone());
    }
    Value::Object(o)
}

/// The linked module's arena: every core's appended whole, in core order
/// (never shared across cores, see `ids`), into one arena sized once. Each
/// core's range is marked, so `unlink` of this module in memory copies it
/// back without a walk to find it.
fn merge_contexts(cores: &[&Module], nodes: usize) -> Result<crate::pelican::Context> {
    let mut ctx = crate::pelican::Context::with_capacity(nodes);
    for m in cores {
        let segment = append_context(&mut ctx, &m.ctx)?;
        ctx.mark_appended(segment);
    }
    Ok(ctx)
}

/// `bir_linker`: link the N core modules of one kernel (in core order) into
/// one module. The cores are not modified. Refused: a core set that is not
/// one kernel's cores in core order (9006), names or keys `link` inserts
/// already taken (9502), cores failing the concretized verifier (its error).
pub fn link(cores: &[&Module]) -> Result<Module> {
    check_cores(cores)?;
    let n = cores.len();
    let counts: Vec<usize> = cores
        .par_iter()
        .enumerate()
        .map(|(c, m)| scan_core(c, n, m))
        .collect::<Result<_>>()?;
    let entry = cores[0].entry_function().map_or("main", |f| &*f.name);
    if let Some((c, m)) = cores
        .iter()
        .enumerate()
        .find(|(_, m)| m.entry_function().map(|f| &*f.name) != Some(entry))
    {
        return Err(collision(format!(
            "core {c} ({}): its entry function {} is not core 0's, {entry}",
            m.name,
            m.entry_function().map_or("(none)", |f| &*f.name)
        )));
    }
    let shared = shared_sets(cores)?;
    // Where each core's ids and barriers start, known before anything is copied.
    let (mut nodes, mut axes, mut barrier) = (0usize, 0usize, 0i64);
    let mut starts = Vec::with_capacity(n);
    for (m, count) in cores.iter().zip(&counts) {
        starts.push((append_map(nodes, axes), barrier));
        nodes += m.ctx.len();
        axes += m.ctx.axes().len();
        barrier += *count as i64 + 1;
    }
    if u32::try_from(nodes).is_err() {
        return Err(Error::pelican("too many expression nodes in one context", "lncsplit"));
    }
    // The verifier reads the cores while they are copied; its verdict decides.
    let (verdict, (ctx, per_core)) = rayon::join(
        || lnc_verifier::verify_concretized(cores, n),
        || {
            rayon::join(
                || merge_contexts(cores, nodes),
                || {
                    cores
                        .par_iter()
                        .zip(starts.par_iter())
                        .enumerate()
                        .map(|(c, (m, (map, first)))| link_core(c, n, m, map, *first))
                        .collect::<Vec<_>>()
                },
            )
        },
    );
    verdict?;
    let mut functions = vec![dispatch_main(n, entry, shared)];
    functions.extend(per_core.into_iter().flatten());
    let c0 = cores[0];
    let mut attributes = c0.attributes.clone().unwrap_or_default();
    attributes.shift_remove(NEURON_CORE_ID);
    attributes.insert(LNC_ATTR.into(), Value::from(n as u64));
    let mut extra = Map::new();
    extra.insert(
        CORES_KEY.into(),
        Value::Array(cores.iter().map(|m| core_entry(m)).collect()),
    );
    Ok(Module {
        version: 2,
        name: linked_name(&c0.name),
        arch: c0.arch,
        arch_given: c0.arch_given,
        artifact_path: None,
        attributes: Some(attributes),
        functions,
        extra: Some(Arc::new(extra)),
        ctx: ctx?,
        spelling: c0.spelling,
        implied_core: None,
    })
}

// ------------------------------------------------------- reading a linked module

/// A core's module-level fields read back from `cores`.
struct CoreFields {
    name: String,
    version: u32,
    arch: Option<Arch>,
    artifact_path: Option<String>,
    attributes: Option<Map<String, Value>>,
    extra: Map<String, Value>,
}

fn core_fields(m: &Module, c: usize, v: &Value) -> Result<CoreFields> {
    let bad = |what: &str| not_linked(m, format!("cores[{c}]: {what}"));
    let Value::Object(o) = v else {
        return Err(bad("not an object"));
    };
    let mut f = CoreFields {
        name: String::new(),
        version: 2,
        arch: None,
        artifact_path: None,
        attributes: None,
        extra: Map::new(),
    };
    let mut named = false;
    for (k, v) in o {
        match (k.as_str(), v) {
            ("name", Value::String(s)) => {
                f.name = s.clone();
                named = true;
            }
            ("version", v) if v.as_u64() == Some(1) || v.as_u64() == Some(2) => {
                f.version = v.as_u64().unwrap_or(2) as u32
            }
            ("arch", Value::String(s)) if Arch::from_name(s).is_some() => f.arch = Arch::from_name(s),
            ("artifact_path", Value::String(s)) => f.artifact_path = Some(s.clone()),
            ("attributes", Value::Object(a)) => f.attributes = Some(a.clone()),
            ("name" | "version" | "arch" | "artifact_path" | "attributes", _) => {
                return Err(bad(&format!("bad value for {k}")));
            }
            _ => {
                f.extra.insert(k.clone(), v.clone());
            }
        }
    }
    if !named {
        return Err(bad("no name"));
    }
    Ok(f)
}

/// The parts of a linked module `unlink` and `tensor_map` read.
struct Layout<'a> {
    cores: Vec<CoreFields>,
    /// Per core: (index in `functions`, the function's name in the core).
    functions: Vec<Vec<(usize, &'a str)>>,
    /// Names of the linked `main`'s sets (what `alias_of` may name).
    shared: HashSet<&'a str>,
    /// The cores' entry function (what dispatch calls).
    entry: &'a str,
}

/// `nc<cc>.<f>` → (c, f), with `nc<cc>` exactly as `link` writes it.
fn split_core_name(name: &str) -> Option<(usize, &str)> {
    let (tag, rest) = name.split_once('.')?;
    let digits = tag.strip_prefix("nc")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let c: usize = digits.parse().ok()?;
    (core_tag(c) == tag).then_some((c, rest))
}

fn lnc_of(m: &Module) -> Result<usize> {
    if m.neuron_core_id().is_some() {
        return Err(not_linked(
            m,
            "it carries neuron_core_id (a core module, not a linked one)".into(),
        ));
    }
    m.attributes
        .as_ref()
        .and_then(|a| a.get(LNC_ATTR))
        .and_then(Value::as_u64)
        .filter(|&n| n >= 1)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| not_linked(m, "no attribute lnc".into()))
}

/// The dispatch block of the linked `main`, and the cores' entry function
/// name its calls name (the same for every core: `nc<cc>.<entry>`).
fn check_dispatch<'m>(m: &Module, main: &'m Function, n: usize) -> Result<&'m str> {
    let [b] = &main.basic_blocks[..] else {
        return Err(not_linked(m, "main does not have exactly one block (dispatch)".into()));
    };
    if &*b.name != DISPATCH || b.instructions.len() != n {
        return Err(not_linked(m, format!("main's block is not {DISPATCH} with {n} calls")));
    }
    let entry = match b.instructions.first().map(|i| &i.op) {
        Some(OpFields::Call { callee: Some(c), .. }) => split_core_name(c).map_or("main", |(_, f)| f),
        _ => "main",
    };
    for (c, i) in b.instructions.iter().enumerate() {
        let want = format!("{}.{entry}", core_tag(c));
        let ok = match &i.op {
            OpFields::Call { callee, core } => {
                *i.name == *call_name(c) && callee.as_deref() == Some(want.as_str()) && *core == Some(c as i64)
            }
            _ => false,
        };
        if !ok {
            return Err(not_linked(
                m,
                format!("dispatch instruction {c} is not the Call {} of {want}", call_name(c)),
            ));
        }
    }
    Ok(entry)
}

/// The instructions `link` put into a core's `main` are where it put them.
fn check_core_main(m: &Module, f: &Function, c: usize) -> Result<()> {
    let first = f.basic_blocks.first().and_then(|b| b.instructions.first());
    let last = f.basic_blocks.last().map(|b| &b.instructions[..]).unwrap_or(&[]);
    let single = f.basic_blocks.len() == 1;
    let ok_first = first.is_some_and(|i| i.opcode == Opcode::SWITCH_QUEUE_INSTANCE && *i.name == *sqi_name(c));
    let ok_last = match last {
        [.., cb, ret] => {
            cb.opcode == Opcode::CORE_BARRIER
                && &*cb.name == CB_RETURN
                && ret.opcode == Opcode::RETURN
                && *ret.name == *return_name(c)
        }
        _ => false,
    };
    if !ok_first || !ok_last || (single && last.len() < 3) {
        return Err(not_linked(
            m,
            format!(
                "function {} does not start with {} and end with {CB_RETURN}, {}",
                f.name,
                sqi_name(c),
                return_name(c)
            ),
        ));
    }
    Ok(())
}

fn layout(m: &Module) -> Result<Layout<'_>> {
    let n = lnc_of(m)?;
    let entries = m
        .extra
        .as_ref()
        .and_then(|e| e.get(CORES_KEY))
        .and_then(Value::as_array)
        .filter(|a| a.len() == n)
        .ok_or_else(|| not_linked(m, format!("no key cores with {n} entries")))?;
    let cores = entries
        .iter()
        .enumerate()
        .map(|(c, v)| core_fields(m, c, v))
        .collect::<Result<Vec<_>>>()?;
    let mut mains = m.functions.iter().filter(|f| &*f.name == "main");
    let (Some(main), None) = (mains.next(), mains.next()) else {
        return Err(not_linked(m, "no single function main".into()));
    };
    let entry = check_dispatch(m, main, n)?;
    let mut functions: Vec<Vec<(usize, &str)>> = vec![Vec::new(); n];
    let mut prev = 0;
    for (i, f) in m.functions.iter().enumerate().filter(|(_, f)| &*f.name != "main") {
        match split_core_name(&f.name) {
            Some((c, name)) if c < n && c >= prev => {
                prev = c;
                functions[c].push((i, name));
            }
            _ => {
                return Err(not_linked(
                    m,
                    format!("function {} is not nc<cc>.<f> of a core, in core order", f.name),
                ))
            }
        }
    }
    for (c, fns) in functions.iter().enumerate() {
        let Some(&(i, _)) = fns.iter().find(|(_, name)| *name == entry) else {
            return Err(not_linked(m, format!("no function {}.{entry}", core_tag(c))));
        };
        check_core_main(m, &m.functions[i], c)?;
    }
    let shared = main.allocations.iter().map(|s| &*s.name).collect();
    Ok(Layout {
        cores,
        functions,
        shared,
        entry,
    })
}

// ----------------------------------------------------------------- unlink

/// A core set as it was before `link`: `alias_of` removed.
fn without_alias(m: &Module, f: &Function, s: &MemoryLocationSet, shared: &HashSet<&str>) -> Result<MemoryLocationSet> {
    let Some(extra) = s.extra.as_ref().filter(|e| e.contains_key(ALIAS_OF)) else {
        return Ok(s.clone());
    };
    match extra.get(ALIAS_OF).and_then(Value::as_str) {
        Some(a) if shared.contains(a) => {}
        _ => {
            return Err(not_linked(
                m,
                format!("alias_of of set {} in {} names no set of main", s.name, f.name),
            ))
        }
    }
    let mut rest = (**extra).clone();
    rest.shift_remove(ALIAS_OF);
    let mut s = s.clone();
    s.extra = (!rest.is_empty()).then(|| Arc::new(rest));
    Ok(s)
}

/// A core's `main` without what `link` inserted (checked by `layout`); every
/// CoreBarrier takes back its per-core id as it is copied.
fn core_main_blocks(f: &Function, map: &IdMap) -> Vec<Block> {
    let last = f.basic_blocks.len().saturating_sub(1);
    f.basic_blocks
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let len = b.instructions.len();
            let lo = usize::from(k == 0).min(len);
            let hi = if k == last { len.saturating_sub(2) } else { len }.max(lo);
            Block {
                name: b.name.clone(),
                instructions: copy_instructions(
                    Vec::new(),
                    &b.instructions[lo..hi],
                    Vec::new(),
                    map,
                    Barriers::Restore,
                ),
                extra: b.extra.clone(),
            }
        })
        .collect()
}

fn unlink_function(m: &Module, lay: &Layout<'_>, f: &Function, name: &str, map: &IdMap) -> Result<Function> {
    let shared = &lay.shared;
    let blocks = if name == lay.entry {
        core_main_blocks(f, map)
    } else {
        f.basic_blocks
            .iter()
            .map(|b| copy_block(b, map, Barriers::Restore))
            .collect()
    };
    Ok(Function {
        name: Arc::from(name),
        shard_ids: f.shard_ids.clone(),
        registers: f.registers.clone(),
        allocations: f
            .allocations
            .iter()
            .map(|s| without_alias(m, f, s, shared))
            .collect::<Result<_>>()?,
        basic_blocks: blocks,
        extra: f.extra.clone(),
    })
}

fn unlink_core(m: &Module, lay: &Layout<'_>, c: usize) -> Result<Module> {
    let fns: Vec<&Function> = lay.functions[c].iter().map(|&(i, _)| &m.functions[i]).collect();
    let functions_through = |map: &IdMap| -> Result<Vec<Function>> {
        fns.iter()
            .zip(&lay.functions[c])
            .map(|(f, (_, name))| unlink_function(m, lay, f, name, map))
            .collect()
    };
    // The range `link` marked for the core (a module it made in memory),
    // kept only if the core's instructions stay inside it.
    let mut copied = None;
    if let Some((ctx, map)) = marked_context(&m.ctx, c, lay.cores.len()) {
        let functions = functions_through(&map)?;
        if !map.missed() {
            copied = Some((ctx, functions));
        }
    }
    let (ctx, functions) = match copied {
        Some(done) => done,
        None => {
            // A core's own id range is about its share of the arena; a larger
            // slice would drag other cores' nodes along, so the reached nodes
            // are copied.
            let budget = 2 * m.ctx.len() / lay.cores.len().max(1) + 4096;
            let (ctx, map) = extract_context(&m.ctx, &fns, budget)?;
            (ctx, functions_through(&map)?)
        }
    };
    let cf = &lay.cores[c];
    Ok(Module {
        version: cf.version,
        name: cf.name.clone(),
        arch: cf.arch.unwrap_or(Arch::Gen3),
        arch_given: cf.arch.is_some(),
        artifact_path: cf.artifact_path.clone(),
        attributes: cf.attributes.clone(),
        functions,
        extra: (!cf.extra.is_empty()).then(|| Arc::new(cf.extra.clone())),
        ctx,
        spelling: m.spelling,
        // A core read from a dump root carries no `neuron_core_id`: its
        // place in the linked module says which core it is (in memory only).
        // Not with N == 1: link takes a lone core with the attribute absent
        // as it is (§3.7), and an absent id there is a symbolic module
        // (the simulator binds its ShardId), not core 0.
        implied_core: (lay.cores.len() > 1).then_some(c as i64),
    })
}

/// The exact inverse of [`link`]: the N core modules back, in core order.
/// A module `link` did not make is refused (9501).
pub fn unlink(m: &Module) -> Result<Vec<Module>> {
    let lay = layout(m)?;
    (0..lay.cores.len())
        .into_par_iter()
        .map(|c| unlink_core(m, &lay, c))
        .collect()
}

// ------------------------------------------------------------- tensor map

fn tensor_location(c: usize, l: Option<&crate::bir::MemoryLocation>) -> Value {
    json!({
        "core": c,
        "location": l.map(|l| &*l.name),
        "addr": l.and_then(|l| l.addr),
    })
}

/// The compiler's tensor-map.json of a linked module: every Input and Output
/// set, keyed `<f>.<s>`, with its kind, dtype, shape and, per core, each
/// location and its address (`null` when unplaced; a set without locations
/// gives one entry with `location: null`).
pub fn tensor_map(m: &Module) -> Result<Value> {
    let lay = layout(m)?;
    let mut out = Map::new();
    for (c, fns) in lay.functions.iter().enumerate() {
        for &(i, fname) in fns {
            for s in &m.functions[i].allocations {
                let kind = s.kind.as_deref().unwrap_or("");
                if !s.is_input() && !s.is_output() {
                    continue;
                }
                let entry = out.entry(alias_name(fname, &s.name)).or_insert_with(
                    || json!({"kind": kind, "dtype": &*s.dtype, "shape": &s.tensor_shape, "cores": []}),
                );
                if let Some(list) = entry.get_mut("cores").and_then(Value::as_array_mut) {
                    if s.locations.is_empty() {
                        list.push(tensor_location(c, None));
                    }
                    list.extend(s.locations.iter().map(|l| tensor_location(c, Some(l))));
                }
            }
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests;
