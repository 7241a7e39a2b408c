//! lnc_verifier (orders 4 and 14): is a symbolic module legally splittable
//! into `lnc_size` replicas, and are the N split modules SPMD-identical?
//! Conditions, codes and lines as in neuronx-facts §4 (contract §3.3).
//!
//! Every failure is a `NeuronAssertion` whose message is the compiler's
//! condition text and whose location is `lnc_verifier.cpp:<line>`; the detail
//! names the module, core and object involved.

use hashbrown::HashSet;
use rayon::prelude::*;

use crate::analysis::cores as core_set;
use crate::bir::{Function, Instruction, Module, Opcode};
use crate::error::{Error, Result};
use crate::passes::birverifier::shard_ub_mismatch;
use crate::pelican::{eval_mask, Bindings};

fn fail(code: u32, line: u32, cond: &str, detail: String) -> Error {
    Error::neuron_at(code, cond, format!("lnc_verifier.cpp:{line}"), detail)
}

/// inputModulesHaveSymbolicShardIds: one module without a core id.
pub fn is_symbolic_input(mods: &[&Module]) -> bool {
    mods.len() == 1 && mods[0].neuron_core_id().is_none()
}

/// lncsplit's codes for what the compiler never sees (contract §3.3: 9000 up).
/// `lnc_size` must be at least 1.
pub const BAD_LNC: u32 = 9000;

fn check_lnc(lnc: usize) -> Result<()> {
    if lnc == 0 {
        return Err(Error::neuron_at(
            BAD_LNC,
            "lnc_size >= 1",
            "lnc_verifier.cpp",
            "lnc_size must be at least 1",
        ));
    }
    Ok(())
}

/// LncVerifier::run: no-op when lnc == 1; the symbolic checker on one
/// symbolic module, the concretized checker otherwise.
pub fn verify(mods: &[&Module], lnc: usize) -> Result<()> {
    check_lnc(lnc)?;
    if lnc == 1 {
        return Ok(());
    }
    if is_symbolic_input(mods) {
        verify_symbolic(mods[0], lnc)
    } else {
        verify_concretized(mods, lnc)
    }
}

fn instructions_of(f: &Function) -> Vec<&Instruction> {
    let mut v = Vec::new();
    f.walk(&mut |i| v.push(i));
    v
}

/// Number of cores on which `inst` fires (Σ over cores of evalMask).
fn active_cores(m: &Module, inst: &Instruction, lnc: usize) -> Result<Vec<u8>> {
    (0..lnc as i64)
        .map(|c| eval_mask(&m.ctx, &inst.predicates, &Bindings::shard(c)))
        .collect()
}

/// The symbolic checker: shard-id sets (1200), CoreBarriers active on zero or
/// all cores (1201), equal GPSIMDSB2SB counts per core (1202).
pub fn verify_symbolic(m: &Module, lnc: usize) -> Result<()> {
    check_lnc(lnc)?;
    if lnc == 1 {
        return Ok(());
    }
    for f in &m.functions {
        match f.shard_ids.len() {
            0 => continue,
            // A function whose ShardId says `ub` cannot be split into
            // lnc ≠ ub cores. The compiler never meets one (it makes the
            // symbol with ub = N); this is the birverifier's 9011, run here too.
            1 if f.shard_ids[0] != lnc as i64 => return Err(shard_ub_mismatch(m, f, f.shard_ids[0], lnc)),
            1 => {}
            n => {
                return Err(fail(
                    1200,
                    195,
                    "func0.getShardIds().size() == 1",
                    format!(
                        "module {}: function {} has {n} shard ids {:?}",
                        m.name, f.name, f.shard_ids
                    ),
                ))
            }
        }
        let mut sb2sb = vec![0usize; lnc];
        for inst in instructions_of(f) {
            if inst.opcode == Opcode::CORE_BARRIER {
                let active: usize = active_cores(m, inst, lnc)?.iter().map(|&x| x as usize).sum();
                if active != 0 && active != lnc {
                    return Err(fail(
                        1201,
                        208,
                        "active_barriers == 0 || active_barriers == Options.vnc_nc_count",
                        format!(
                            "module {}: CoreBarrier {} in function {} is active on {active} of {lnc} cores",
                            m.name, inst.name, f.name
                        ),
                    ));
                }
            } else if inst.opcode == Opcode::GPSIMD_SB2SB {
                for (c, on) in active_cores(m, inst, lnc)?.into_iter().enumerate() {
                    sb2sb[c] += on as usize;
                }
            }
        }
        if let Some(c) = (1..lnc).find(|&c| sb2sb[c] != sb2sb[0]) {
            return Err(fail(
                1202,
                222,
                "expected_numsb2sb == sb2sbCounts[lncId]",
                format!(
                    "module {}: function {} has {} GPSIMDSB2SB on core 0 but {} on core {c}",
                    m.name, f.name, sb2sb[0], sb2sb[c]
                ),
            ));
        }
    }
    Ok(())
}

/// The concretized checker over N split modules (core 0 is the reference);
/// a longer list is checked N modules at a time (`[module][core]` order).
pub fn verify_concretized(mods: &[&Module], lnc: usize) -> Result<()> {
    check_lnc(lnc)?;
    if lnc == 1 {
        return Ok(());
    }
    if mods.is_empty() || mods.len() % lnc != 0 {
        return Err(Error::neuron_at(
            9020,
            "modules.size() % lnc_size == 0",
            "lnc_verifier.cpp",
            format!("{} modules cannot be {lnc}-core split outputs", mods.len()),
        ));
    }
    for group in mods.chunks(lnc) {
        verify_group(group)?;
    }
    Ok(())
}

/// What the checks count in a core, in one walk (a core is read once, not
/// once per check): its barriers in the order the module is written (`main`
/// first, contract §3.6: the i-th is the same barrier on every core) and its
/// GPSIMDSB2SB instructions.
struct Counts<'a> {
    barriers: Vec<&'a Instruction>,
    sb2sb: usize,
}

fn counts(m: &Module) -> Counts<'_> {
    let mut c = Counts {
        barriers: Vec::new(),
        sb2sb: 0,
    };
    for i in crate::passes::core_barriers::written_order(&m.functions) {
        m.functions[i].walk(&mut |inst| {
            if inst.opcode == Opcode::CORE_BARRIER {
                c.barriers.push(inst);
            }
            c.sb2sb += (inst.opcode == Opcode::GPSIMD_SB2SB) as usize;
        });
    }
    c
}

/// Top-level instructions (Loop bodies not counted) from which the cores are
/// counted in parallel.
const PAR_COUNT: usize = 32_768;

fn top_level_instructions(mods: &[&Module]) -> usize {
    (mods.iter().flat_map(|m| &m.functions))
        .flat_map(|f| &f.basic_blocks)
        .map(|b| b.instructions.len())
        .sum()
}

/// Addresses of the shared (post-DRAM-alloc) tensors of a module.
fn shared_addresses(m: &Module) -> HashSet<i64> {
    m.functions
        .iter()
        .flat_map(|f| f.allocations.iter())
        .flat_map(|s| s.locations.iter())
        .filter(|l| l.is_shared_post_dram_alloc == Some(true))
        .filter_map(|l| l.addr)
        .collect()
}

fn verify_group(mods: &[&Module]) -> Result<()> {
    let m0 = mods[0];
    for (nc, m) in mods.iter().enumerate() {
        if m.neuron_core_id().is_none() {
            return Err(fail(
                1203,
                50,
                "modules[ncId]->getNeuronCoreId().has_value()",
                format!("module {} (core {nc}) has no neuron_core_id", m.name),
            ));
        }
        for f in &m.functions {
            if !f.shard_ids.is_empty() {
                return Err(fail(
                    1199,
                    52,
                    "function.getShardIds().empty()",
                    format!(
                        "module {} (core {nc}): function {} still has shard ids {:?}",
                        m.name, f.name, f.shard_ids
                    ),
                ));
            }
        }
    }
    verify_core_set(mods)?;
    // One walk per core: on rayon's pool only when the cores are big enough to
    // repay the hand-off (a corpus thread checking 1 MB modules would wait on
    // the pool's wake-up longer than the walk takes).
    let counts: Vec<Counts<'_>> = if top_level_instructions(mods) >= PAR_COUNT {
        mods.par_iter().map(|m| counts(m)).collect()
    } else {
        mods.iter().map(|m| counts(m)).collect()
    };
    let (cb0, sb0) = (&counts[0].barriers, counts[0].sb2sb);
    let index: Vec<LocIndex<'_>> = mods.iter().map(|m| location_index(m)).collect();
    let shared0 = shared_addresses(m0);
    for (nc, m) in mods.iter().enumerate().skip(1) {
        if m0.functions.len() != m.functions.len() {
            return Err(fail(
                1193,
                64,
                "modules[0]->size() == modules[ncId]->size()",
                format!(
                    "core 0 has {} functions, core {nc} has {}",
                    m0.functions.len(),
                    m.functions.len()
                ),
            ));
        }
        for f0 in &m0.functions {
            let Some(f) = m.function(&f0.name) else {
                return Err(fail(
                    1191,
                    80,
                    "func != nullptr",
                    format!("function {} of core 0 is missing on core {nc} ({})", f0.name, m.name),
                ));
            };
            if f.basic_blocks.len() != f0.basic_blocks.len() {
                return Err(fail(
                    1192,
                    81,
                    "func->size() == func0.size()",
                    format!(
                        "function {}: core 0 has {} blocks, core {nc} has {}",
                        f0.name,
                        f0.basic_blocks.len(),
                        f.basic_blocks.len()
                    ),
                ));
            }
            for (bi, (b0, b)) in f0.basic_blocks.iter().zip(&f.basic_blocks).enumerate() {
                if b0.name != b.name {
                    return Err(fail(
                        1194,
                        85,
                        "all_blocks[0][blockIdx]->getName() == bb.getName()",
                        format!(
                            "function {} block {bi}: core 0 has {}, core {nc} has {}",
                            f0.name, b0.name, b.name
                        ),
                    ));
                }
            }
        }
        let cb = &counts[nc].barriers;
        if cb.len() != cb0.len() {
            return Err(fail(
                1187,
                108,
                "expectedCBs == coreBarriers[ncId].size()",
                format!("core 0 has {} CoreBarriers, core {nc} has {}", cb0.len(), cb.len()),
            ));
        }
        let sb = counts[nc].sb2sb;
        if sb != sb0 {
            return Err(fail(
                1198,
                116,
                "expectedSB2SBs == actualSB2SBs",
                format!("core 0 has {sb0} GPSIMDSB2SB, core {nc} has {sb}"),
            ));
        }
        verify_remote_targets(mods, nc, &index)?;
    }
    for (nc, c) in counts.iter().enumerate() {
        for (index, (b, b0)) in c.barriers.iter().zip(cb0).enumerate() {
            let id = match &b.op {
                crate::bir::OpFields::CoreBarrier { id, .. } => *id,
                _ => None,
            };
            if id != Some(index as i64) {
                return Err(fail(
                    1188,
                    157,
                    "index == coreBarriers[ncId][index]->getId()",
                    format!("core {nc}: CoreBarrier {} at index {index} has id {id:?}", b.name),
                ));
            }
            if b.name != b0.name {
                return Err(fail(
                    1189,
                    164,
                    "expectedName == coreBarriers[ncId][index]->getName()",
                    format!("core {nc}: CoreBarrier {index} is {}, core 0 has {}", b.name, b0.name),
                ));
            }
        }
    }
    for (nc, m) in mods.iter().enumerate().skip(1) {
        let shared = shared_addresses(m);
        if let Some(a) = shared0.iter().find(|a| !shared.contains(*a)) {
            return Err(fail(
                1196,
                181,
                "sharedTensors[ncId].count(address) > 0",
                format!(
                    "shared tensor address {a:#x} of core 0 is not shared on core {nc} ({})",
                    m.name
                ),
            ));
        }
    }
    Ok(())
}

/// Address of every memory location, by (function, location name), per core:
/// built once per group so remote-target lookups are O(1).
type LocIndex<'a> = hashbrown::HashMap<(&'a str, &'a str), Option<i64>>;

fn location_index(m: &Module) -> LocIndex<'_> {
    let mut idx = LocIndex::new();
    for f in &m.functions {
        for s in &f.allocations {
            for l in &s.locations {
                idx.entry((&*f.name, &*l.name)).or_insert(l.addr);
            }
        }
    }
    idx
}

/// 1197 / 1195: every shared DRAM location of a core > 0 points at its
/// remote local target, which exists and has the same address.
fn verify_remote_targets(mods: &[&Module], nc: usize, index: &[LocIndex<'_>]) -> Result<()> {
    let m = mods[nc];
    for f in &m.functions {
        for s in &f.allocations {
            for l in &s.locations {
                if l.is_shared_post_dram_alloc != Some(true) || !l.memory().is_dram() {
                    continue;
                }
                let Some(t) = &l.remote_local_target else {
                    return Err(fail(
                        1197,
                        133,
                        "memLoc.getRemoteLocalTarget().has_value()",
                        format!(
                            "core {nc}: shared DRAM location {} of function {} has no remote_local_target",
                            l.name, f.name
                        ),
                    ));
                };
                let target = usize::try_from(t.core)
                    .ok()
                    .and_then(|c| index.get(c))
                    .and_then(|ix| ix.get(&(&*f.name, &*t.name)));
                match target {
                    Some(addr) if *addr == l.addr => {}
                    _ => {
                        return Err(fail(
                            1195,
                            142,
                            "targetMemLoc && targetMemLoc->getAddress() == memLoc.getAddress()",
                            format!(
                                "core {nc}: location {} targets {} on core {} (address {:?} vs {:?})",
                                l.name,
                                t.name,
                                t.core,
                                l.addr,
                                target.copied().flatten()
                            ),
                        ))
                    }
                }
            }
        }
    }
    Ok(())
}

/// 9006: the N modules of one split are cores 0…N−1 of one kernel, in order
/// (the checks of `analysis::cores`, with the verifier's condition as
/// message). Cores of two kernels are said to be that, before their
/// CoreBarrier counts are compared (1187 would name a symptom).
pub fn verify_core_set(mods: &[&Module]) -> Result<()> {
    let at = "lnc_verifier.cpp";
    core_set::check_core_order(mods, "modules[ncId]->getNeuronCoreId() == ncId", at)?;
    core_set::check_one_kernel(mods, core_set::CORES_MESSAGE, at)
}
