//! The module and its functions.

use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::instruction::BlockK;
use super::memory::SetK;
use super::resolve::resolve_names;
use super::seed::{extra, keep, val, visit, DeResult, KeySeed, Kind, RawK, SeqK, StrK, StringK, ValueK, Visit, I64K};
use super::{compact, type_name, Locate, Seg, State};
use crate::bir::arch::Arch;
use crate::bir::instruction::{Block, OpFields};
use crate::bir::module::{Function, Module};
use crate::bir::schema::{key, Spelling};
use crate::error::Error;

pub(super) struct ModuleK;

impl Kind for ModuleK {
    type Out = Module;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Module, D::Error> {
        d.deserialize_map(visit::<ModuleK>(st))
    }
}

/// `"version"`: 1 or 2.
fn version<E: serde::de::Error>(st: &mut State, v: &Value) -> DeResult<u32, E> {
    match v.as_u64() {
        Some(1) => Ok(1),
        Some(2) => Ok(2),
        _ => Err(st.bir_at(
            key!(module version),
            "Check the version of bir json file - should be 1 (old) or 2 (new)",
        )),
    }
}

/// `"attributes"`: an object; `neuron_core_id`, when present, an integer.
fn attributes<E: serde::de::Error>(st: &mut State, v: Value) -> DeResult<Map<String, Value>, E> {
    match v {
        Value::Object(m) => {
            if let Some(core) = m.get("neuron_core_id") {
                if core.as_i64().is_none() {
                    st.unwind.push(Seg::Key("neuron_core_id"));
                    return Err(st.bir_at(
                        key!(module attributes),
                        format!("\"neuron_core_id\" must be an integer, got {}", compact(core)),
                    ));
                }
            }
            Ok(m)
        }
        other => Err(st.bir_at(
            key!(module attributes),
            format!("\"attributes\" must be an object, got {}", type_name(&other)),
        )),
    }
}

impl<'de> Visitor<'de> for Visit<'_, ModuleK> {
    type Value = Module;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a module object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Module, A::Error> {
        let st = self.0;
        st.enter()?;
        let (mut name, mut arch, mut arch_given, mut artifact_path, mut attrs) = (None, Arch::Gen3, false, None, None);
        let mut functions: Option<Vec<Function>> = None;
        let mut deferred_functions: Option<Box<RawValue>> = None;
        let mut version_seen = false;
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                key!(module version) => {
                    let v = val::<ValueK, _>(st, &mut map, key!(module version))?;
                    st.version = version(st, &v)?;
                    version_seen = true;
                }
                key!(module name) => name = Some(val::<StringK, _>(st, &mut map, key!(module name))?),
                key!(module arch) => {
                    let s = val::<StringK, _>(st, &mut map, key!(module arch))?;
                    arch = match Arch::from_name(&s) {
                        Some(a) => a,
                        None => return Err(st.bir_at(key!(module arch), format!("Unknown architecture \"{s}\""))),
                    };
                    arch_given = true;
                }
                key!(module artifact_path) => {
                    artifact_path = Some(val::<StringK, _>(st, &mut map, key!(module artifact_path))?)
                }
                key!(module attributes) => {
                    let v = val::<ValueK, _>(st, &mut map, key!(module attributes))?;
                    attrs = Some(attributes(st, v)?);
                }
                key!(module functions) if version_seen => {
                    functions = Some(val::<SeqK<FunctionK>, _>(st, &mut map, key!(module functions))?);
                }
                key!(module functions) => {
                    // Expressions depend on the version, which has not been read yet.
                    deferred_functions = Some(val::<RawK, _>(st, &mut map, key!(module functions))?);
                }
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        if let Some(raw) = deferred_functions {
            match st.reparse::<SeqK<FunctionK>, A::Error>(&raw) {
                Ok(f) => functions = Some(f),
                Err(e) => {
                    st.unwind.push(Seg::Key(key!(module functions)));
                    return Err(e);
                }
            }
        }
        let name = match name {
            Some(n) => n,
            // The compiler's dumps carry no module name (contract §1.7): it
            // reads as "" and is written back without it.
            None if st.spelling() == Spelling::Compiler => String::new(),
            None => return Err(st.bir("a module is missing required key \"name\"")),
        };
        let Some(functions) = functions else {
            return Err(st.bir("a module is missing required key \"functions\""));
        };
        st.leave();
        Ok(Module {
            version: st.version,
            name,
            arch,
            arch_given,
            artifact_path,
            attributes: attrs,
            functions,
            extra: extra(rest),
            ctx: std::mem::take(&mut st.ctx),
            spelling: st.spelling(),
            implied_core: None,
        })
    }
}

pub(super) struct FunctionK;

impl Kind for FunctionK {
    type Out = Function;
    fn de<'de, D: Deserializer<'de>>(st: &mut State, d: D) -> DeResult<Function, D::Error> {
        d.deserialize_map(visit::<FunctionK>(st))
    }
}

/// `"shard_ids"`: bounds > 0, added to the function's shard-id set.
fn shard_ids<E: serde::de::Error>(st: &mut State, ids: Vec<i64>) -> DeResult<(), E> {
    for (i, ub) in ids.into_iter().enumerate() {
        if ub <= 0 {
            st.unwind.push(Seg::Index(i));
            return Err(st.bir_at("shard_ids", format!("shard id bound {ub} must be > 0")));
        }
        if !st.shards.contains(&ub) {
            st.shards.push(ub);
        }
    }
    Ok(())
}

/// IntRuntimeValueKind registers read before `registers` resolve against it
/// at the end of the function. A missing one sends the loader back to find
/// its first use (the path of the error).
fn check_pending_registers<E: serde::de::Error>(st: &mut State) -> DeResult<(), E> {
    let regs: &[Arc<str>] = st.registers.as_deref().unwrap_or(&[]);
    let missing = st.pending_registers.iter().find(|r| !regs.contains(r)).cloned();
    if let Some(register) = missing {
        st.relocate = Some(Locate {
            function: st.function,
            register: register.clone(),
        });
        return Err(st.fail(Error::wire(
            format!("IntRuntimeValueKind regref \"{register}\" names no register of the function"),
            "",
        )));
    }
    Ok(())
}

impl<'de> Visitor<'de> for Visit<'_, FunctionK> {
    type Value = Function;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a function object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> DeResult<Function, A::Error> {
        let st = self.0;
        st.enter()?;
        st.axes.clear();
        st.shards.clear();
        st.registers = None;
        st.pending_registers.clear();
        st.exprs.clear();
        st.set_index = 0;
        st.lenient = None;
        let (mut name, mut allocations, mut blocks) = (None, Vec::new(), None);
        let mut rest = Map::new();
        while let Some(k) = map.next_key_seed(KeySeed)? {
            match k.as_str() {
                key!(function name) => name = Some(val::<StrK, _>(st, &mut map, key!(function name))?),
                key!(function registers) => {
                    st.registers = Some(val::<SeqK<StrK>, _>(st, &mut map, key!(function registers))?)
                }
                key!(function shard_ids) => {
                    let ids = val::<SeqK<I64K>, _>(st, &mut map, key!(function shard_ids))?;
                    shard_ids(st, ids)?;
                }
                key!(function allocations) => {
                    allocations = val::<SeqK<SetK>, _>(st, &mut map, key!(function allocations))?
                }
                key!(function basic_blocks) => {
                    st.spell_function(Spelling::Lncsplit, key!(function basic_blocks))?;
                    blocks = Some(val::<SeqK<BlockK>, _>(st, &mut map, key!(function basic_blocks))?)
                }
                key!(compiler function basic_blocks) => {
                    st.spell_function(Spelling::Compiler, key!(compiler function basic_blocks))?;
                    blocks = Some(val::<SeqK<BlockK>, _>(
                        st,
                        &mut map,
                        key!(compiler function basic_blocks),
                    )?)
                }
                _ => keep(st, &mut map, k, &mut rest)?,
            }
        }
        let Some(name) = name else {
            return Err(st.bir("a function is missing required key \"name\""));
        };
        // Until 2026-12-02 such a function read as empty: a compiler dump
        // split into empty cores and reported ok (contract §1.7).
        let Some(mut blocks) = blocks else {
            return Err(st.bir(format!(
                "function \"{name}\" has neither \"{}\" (lncsplit's spelling) nor \"{}\" (the compiler's): no blocks",
                key!(function basic_blocks),
                key!(compiler function basic_blocks)
            )));
        };
        st.check_lenient()?;
        let compiler = st.compiler();
        if compiler {
            name_anonymous_loops(&mut blocks);
        }
        check_pending_registers(st)?;
        let mut shard_ids = std::mem::take(&mut st.shards);
        shard_ids.sort_unstable();
        let f = Function {
            name,
            shard_ids,
            registers: st.registers.take(),
            allocations,
            basic_blocks: blocks,
            extra: extra(rest),
        };
        // The parallel loader resolves every function at once, after the read.
        if st.splices.is_none() {
            if let Err(e) = resolve_names(&f, !compiler) {
                return Err(st.fail(e));
            }
        }
        st.function += 1;
        st.leave();
        Ok(f)
    }
}

/// The compiler's Loops carry no `name` (KLR writes `opcode`, `LoopAxis`,
/// `blocks` only): one read without a name (`""`) is named
/// `loop@<position>`, its depth-first position in the function (contract
/// §1.7), once the whole function is read (the parallel loader's chunks do
/// not know their positions). The writer leaves such a name out again.
fn name_anonymous_loops(blocks: &mut [Block]) {
    fn visit(blocks: &mut [Block], pos: &mut usize) {
        for b in blocks {
            for i in &mut b.instructions {
                let here = *pos;
                *pos += 1;
                if let OpFields::Loop { blocks: body, .. } = &mut i.op {
                    if i.name.is_empty() {
                        i.name = crate::bir::instruction::anonymous_loop_name(here).into();
                    }
                    visit(body, pos);
                }
            }
        }
    }
    visit(blocks, &mut 0);
}
