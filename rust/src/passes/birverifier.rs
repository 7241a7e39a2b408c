//! birverifier (orders 3 and 13): the structural checks a user needs before
//! and after a split. The compiler's per-op verifier is not published; these
//! checks use lncsplit's own codes (9010+), documented in docs/passes.md.

use std::cell::OnceCell;
use std::sync::Arc;

use hashbrown::{HashMap, HashSet};

use crate::bir::{Block, Function, Module, OpFields};
use crate::error::{Error, Result};

pub const DUPLICATE_INSTRUCTION: u32 = crate::bir::names::REPEATED_NAME;
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
    // The compiler's spelling may repeat a name (contract §1.7: real dumps
    // name a loop-control instruction alike in every body); the passes that
    // need unique names refuse it themselves (9010).
    if m.spelling != crate::bir::Spelling::Compiler {
        if let Some((name, a, b)) = crate::bir::names::first_repeat(f) {
            return Err(crate::bir::names::repeated_name_error(m, f, &name, a, b, "birverifier"));
        }
    }
    let mut seen: HashSet<&str> = HashSet::new();
    f.walk(&mut |i| {
        seen.insert(&i.name);
    });
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
            for x in i.op.expr_fields().into_iter().flatten() {
                if let crate::bir::IntOrExpr::Expr(e) = x {
                    found |= m.ctx.has_shard(e);
                }
            }
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::bir::{module_from_value, Argument};

    /// xorshift64: the same kernels on every run.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn pick(r: &mut Rng, prefix: &str, pool: u64) -> String {
        format!("{prefix}{}", r.below(pool))
    }

    fn instruction(r: &mut Rng, k: usize, depth: usize) -> Value {
        let name = format!("i{k}");
        let arg = |r: &mut Rng| {
            if r.below(2) == 0 {
                json!({"kind": "symbolic_ap", "ap": [[1, 1]], "memsetref": pick(r, "s", 4), "addrs": [{"kind": "AffExprKind", "terms": [], "c": 0}]})
            } else {
                json!({"kind": "physical_ap", "ap": [[1, 1]], "offset": 0, "memref": pick(r, "l", 4), "dtype": "float32"})
            }
        };
        let mut v = json!({"name": name, "opcode": "DMACopy", "ins": [arg(r)], "outs": [arg(r)]});
        if k > 0 && r.below(2) == 0 {
            v["dependencies"] = json!([[pick(r, "i", k.min(40) as u64), "Flow"]]);
        }
        if depth < 2 && r.below(8) == 0 {
            let body: Vec<Value> = (0..3).map(|j| instruction(r, 1000 * (k + 1) + j, depth + 1)).collect();
            v = json!({"name": format!("i{k}"), "opcode": "Loop",
                       "axis": {"name": format!("a{k}"), "lo": 0, "ub": 4, "step": 1},
                       "blocks": [{"name": format!("body{k}"), "instructions": body}]});
        }
        v
    }

    fn kernel(seed: u64) -> Module {
        let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let sets: Vec<Value> = (0..4)
            .map(|s| {
                json!({"name": format!("s{s}"), "dtype": "float32", "tensor_shape": [1, 4],
                            "locations": [{"name": format!("l{s}"), "type": "DRAM", "addr": 0}]})
            })
            .collect();
        let insts: Vec<Value> = (0..40).map(|k| instruction(&mut r, k, 0)).collect();
        module_from_value(json!({"version": 2, "name": "k", "functions": [{"name": "main",
            "allocations": sets, "basic_blocks": [{"name": "entry", "instructions": insts}]}]}))
        .unwrap()
    }

    /// Rename the loader's shared names: with `unshare`, each to a string
    /// of its own (the address look-ups all miss and the content look-ups
    /// answer); one time in `1/miss`, to a name nothing has (the loader
    /// refuses those; a pass could make one).
    fn rename(m: &mut Module, r: &mut Rng, unshare: bool, miss: u64) {
        fn name(old: &str, r: &mut Rng, unshare: bool, miss: u64) -> Option<Arc<str>> {
            if r.below(miss) == 0 {
                Some(Arc::from(format!("{old}_missing")))
            } else if unshare {
                Some(Arc::from(old))
            } else {
                None
            }
        }
        fn walk(blocks: &mut [Block], r: &mut Rng, unshare: bool, miss: u64) {
            for b in blocks {
                for i in &mut b.instructions {
                    for a in i.arguments_mut() {
                        let slot = match a {
                            Argument::Symbolic(s) => &mut s.memsetref,
                            Argument::Physical(p) => &mut p.memref,
                            _ => continue,
                        };
                        if let Some(new) = slot.as_deref().and_then(|old| name(old, r, unshare, miss)) {
                            *slot = Some(new);
                        }
                    }
                    for d in i.dependencies.iter_mut().flatten() {
                        if let Some(new) = name(&d.name, r, false, miss) {
                            d.name = new;
                        }
                    }
                    if let OpFields::Loop { blocks, .. } = &mut i.op {
                        walk(blocks, r, unshare, miss);
                    }
                }
            }
        }
        for f in &mut m.functions {
            walk(&mut f.basic_blocks, r, unshare, miss);
        }
    }

    #[test]
    fn the_one_walk_clean_test_agrees_with_the_full_check_on_random_kernels() {
        let (mut clean, mut dirty) = (0, 0);
        for seed in 0..400 {
            let mut m = kernel(seed);
            let mut r = Rng(seed + 1);
            rename(&mut m, &mut r, seed % 3 == 0, 150);
            if seed % 7 == 0 {
                // The loader refuses a name used twice; a pass could make one.
                let insts = &mut m.functions[0].basic_blocks[0].instructions;
                insts[39].name = insts[(seed % 39) as usize].name.clone();
            }
            let f = &m.functions[0];
            let full = verify_function(&m, f);
            assert_eq!(function_is_clean(&m, f), full.is_ok(), "seed {seed}: {full:?}");
            // verify_module reports exactly the full check's first error.
            match (verify_module(&m, 1), full) {
                (Ok(()), Ok(())) => clean += 1,
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "seed {seed}");
                    dirty += 1;
                }
                (a, b) => panic!("seed {seed}: {a:?} vs {b:?}"),
            }
        }
        // Both outcomes are exercised.
        assert!(clean > 20 && dirty > 20, "{clean} clean, {dirty} dirty");
    }
}
