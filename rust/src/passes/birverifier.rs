//! birverifier (orders 3 and 13): the structural checks a user needs before
//! and after a split. The compiler's per-op verifier is not published; these
//! checks use lncsplit's own codes (9010+), documented in docs/passes.md.

use std::cell::OnceCell;
use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

use crate::bir::{Block, Function, Module, OpFields};
use crate::error::{Error, Result};

pub const DUPLICATE_INSTRUCTION: u32 = 9010;
pub const SHARD_UB_MISMATCH: u32 = 9011;
pub const BAD_LOOP_BOUNDS: u32 = 9012;
pub const DANGLING_NAME: u32 = 9013;

fn fail(code: u32, cond: &str, detail: String) -> Error {
    Error::neuron_at(code, cond, "birverifier.cpp", detail)
}

/// Run every structural check on one module. `lnc` is the PassOptions
/// lnc_size: on a symbolic module every ShardId bound must equal it.
pub fn verify_module(m: &Module, lnc: usize) -> Result<()> {
    for f in &m.functions {
        if !function_is_clean(m, f) {
            verify_function(m, f)?;
        }
    }
    verify_shard_ubs(m, lnc)
}

/// 9011: on a symbolic module with lnc_size > 1, every ShardId ub == lnc_size.
pub fn verify_shard_ubs(m: &Module, lnc: usize) -> Result<()> {
    if lnc <= 1 || m.neuron_core_id().is_some() {
        return Ok(());
    }
    for f in &m.functions {
        if let Some(&ub) = f.shard_ids.iter().find(|&&ub| ub != lnc as i64) {
            return Err(shard_ub_mismatch(m, f, ub, lnc));
        }
    }
    Ok(())
}

/// The 9011 error: function `f` of `m` has a ShardId bound `ub` ≠ `lnc`.
pub fn shard_ub_mismatch(m: &Module, f: &Function, ub: i64, lnc: usize) -> Error {
    fail(
        SHARD_UB_MISMATCH,
        "ShardId ub == lnc_size",
        format!(
            "module {}: function {} has a ShardId with ub {ub} but lnc_size is {lnc}",
            m.name, f.name
        ),
    )
}

/// The names of a function's sets or locations, for "does this name
/// resolve": by address first (the loader shares one string between a set's
/// name and the arguments that name it, and a clone keeps sharing it), by
/// content when that misses.
struct Resolver<'f> {
    /// Address → length of every name.
    addrs: HashMap<usize, usize>,
    all: Vec<&'f str>,
    /// The names by content, built on the first miss by address.
    names: OnceCell<HashSet<&'f str>>,
}

impl<'f> Resolver<'f> {
    fn new(names: impl Iterator<Item = &'f Arc<str>>) -> Self {
        let mut addrs = HashMap::new();
        let mut all = Vec::new();
        for n in names {
            addrs.insert(n.as_ptr() as usize, n.len());
            all.push(&**n);
        }
        Resolver {
            addrs,
            all,
            names: OnceCell::new(),
        }
    }

    fn resolves(&self, name: &str) -> bool {
        self.addrs.get(&(name.as_ptr() as usize)) == Some(&name.len())
            || self
                .names
                .get_or_init(|| self.all.iter().copied().collect())
                .contains(name)
    }
}

/// One pass over the function that answers whether [`verify_function`]
/// finds nothing, for much less than it (one walk instead of two, set and
/// location names resolved by address): when this says clean, the function
/// is; when not, `verify_function` runs and reports the first error in its
/// own order.
fn function_is_clean(m: &Module, f: &Function) -> bool {
    let sets = Resolver::new(f.allocations.iter().map(|s| &s.name));
    let locs = Resolver::new(f.allocations.iter().flat_map(|s| &s.locations).map(|l| &l.name));
    let mut seen: HashSet<&str> = HashSet::with_capacity(f.basic_blocks.iter().map(|b| b.instructions.len()).sum());
    let mut deps: Vec<&str> = Vec::new();
    let mut clean = true;
    f.walk(&mut |i| {
        clean &= seen.insert(&i.name);
        for a in i.arguments() {
            clean &= a.memsetref().is_none_or(|s| sets.resolves(s));
            if let crate::bir::Argument::Physical(p) = a {
                clean &= p.memref.as_deref().is_none_or(|r| locs.resolves(r));
            }
        }
        deps.extend(i.dependencies.iter().flatten().map(|d| &*d.name));
        if let OpFields::Loop { axis, .. } = &i.op {
            let a = m.ctx.axis(*axis);
            clean &= a.step > 0 && a.ub >= a.lo;
        }
    });
    clean && deps.iter().all(|d| seen.contains(d))
}

fn verify_function(m: &Module, f: &Function) -> Result<()> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut dup = None;
    f.walk(&mut |i| {
        if !seen.insert(&i.name) && dup.is_none() {
            dup = Some(i.name.clone());
        }
    });
    if let Some(name) = dup {
        return Err(fail(
            DUPLICATE_INSTRUCTION,
            "instruction names are unique in a function",
            format!(
                "module {}: function {} has two instructions named {name}",
                m.name, f.name
            ),
        ));
    }
    let sets: HashSet<&str> = f.allocations.iter().map(|s| &*s.name).collect();
    let locs: HashSet<&str> = f
        .allocations
        .iter()
        .flat_map(|s| &s.locations)
        .map(|l| &*l.name)
        .collect();
    for b in &f.basic_blocks {
        verify_block(m, f, b, &seen, &sets, &locs)?;
    }
    Ok(())
}

fn verify_block(
    m: &Module,
    f: &Function,
    b: &Block,
    insts: &HashSet<&str>,
    sets: &HashSet<&str>,
    locs: &HashSet<&str>,
) -> Result<()> {
    for i in &b.instructions {
        for a in i.arguments() {
            if let Some(s) = a.memsetref() {
                if !sets.contains(s) {
                    return Err(fail(
                        DANGLING_NAME,
                        "memsetref resolves",
                        format!(
                            "instruction {} of function {}: memsetref {s} names no memory location set",
                            i.name, f.name
                        ),
                    ));
                }
            }
            if let crate::bir::Argument::Physical(p) = a {
                if let Some(r) = &p.memref {
                    if !locs.contains(&**r) {
                        return Err(fail(
                            DANGLING_NAME,
                            "memref resolves",
                            format!(
                                "instruction {} of function {}: memref {r} names no memory location",
                                i.name, f.name
                            ),
                        ));
                    }
                }
            }
        }
        for d in i.dependencies.iter().flatten() {
            if !insts.contains(&*d.name) {
                return Err(fail(
                    DANGLING_NAME,
                    "dependency resolves",
                    format!(
                        "instruction {} of function {}: dependency {} names no instruction",
                        i.name, f.name, d.name
                    ),
                ));
            }
        }
        if let OpFields::Loop { axis, blocks, .. } = &i.op {
            let a = m.ctx.axis(*axis);
            if a.step <= 0 || a.ub < a.lo {
                return Err(fail(
                    BAD_LOOP_BOUNDS,
                    "loop step > 0 && lo <= ub",
                    format!(
                        "loop {} of function {}: axis {} lo {} ub {} step {}",
                        i.name, f.name, a.name, a.lo, a.ub, a.step
                    ),
                ));
            }
            for nb in blocks {
                verify_block(m, f, nb, insts, sets, locs)?;
            }
        }
    }
    Ok(())
}

/// True when any expression anywhere in the module still contains a
/// ShardId — modelled fields, and carried-through ones as written (used by
/// tests).
pub fn has_shard_anywhere(m: &Module) -> bool {
    has_modelled_shard(m)
        || crate::bir::dump_module(m, 2).map_or(true, |b| b.windows(SHARD_TAG.len()).any(|w| w == SHARD_TAG))
}

/// How a ShardId starts on the wire (a string value holding this text would
/// have its quotes escaped, so it cannot match).
const SHARD_TAG: &[u8] = br#""kind":"ShardIDKind""#;

fn has_modelled_shard(m: &Module) -> bool {
    let mut found = false;
    for f in &m.functions {
        f.walk(&mut |i| {
            for a in i.arguments() {
                if let crate::bir::Argument::Symbolic(s) = a {
                    found |= s
                        .addrs
                        .iter()
                        .chain(s.tile_addrs.iter())
                        .chain(s.block_addrs.iter())
                        .any(|&e| m.ctx.has_shard(e));
                }
            }
            found |= i.predicates.iter().any(|p| m.ctx.has_shard(p.expr));
            if let OpFields::CollectiveCompute {
                recv_from_rank,
                send_to_rank,
                queue,
                ..
            } = &i.op
            {
                for x in [recv_from_rank, send_to_rank, queue].into_iter().flatten() {
                    if let crate::bir::IntOrExpr::Expr(e) = x {
                        found |= m.ctx.has_shard(*e);
                    }
                }
            }
        });
    }
    found
}
