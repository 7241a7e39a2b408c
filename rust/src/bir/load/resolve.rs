//! Pass 2, per function: every `memsetref`, `memref` and dependency names
//! something in the function; instruction names are unique (in lncsplit's
//! spelling: the compiler's may repeat a name, contract §1.7, and a
//! dependency then names its first instance). The path of an error is
//! built while it unwinds, relative to the function (the loader adds the
//! rest).

use std::hash::BuildHasher;

use hashbrown::hash_table::Entry;
use hashbrown::{HashSet, HashTable};
use rayon::prelude::*;

use super::{render, Seg};
use crate::bir::argument::{Argument, PhysicalAp};
use crate::bir::instruction::{Block, Instruction};
use crate::bir::module::Function;
use crate::error::{Error, Result};

/// A failure and its path segments, innermost first.
struct Fail {
    message: String,
    unwind: Vec<Seg>,
}

impl Fail {
    #[cold]
    fn new(message: String, segs: &[Seg]) -> Fail {
        Fail {
            message,
            unwind: segs.iter().rev().cloned().collect(),
        }
    }

    #[cold]
    fn at(mut self, seg: Seg) -> Fail {
        self.unwind.push(seg);
        self
    }
}

type R = std::result::Result<(), Fail>;

/// Names the instructions of `f` may refer to.
struct Names<'a> {
    func: &'a str,
    /// Names must be unique (lncsplit's spelling).
    unique: bool,
    sets: HashSet<&'a str>,
    locs: HashSet<&'a str>,
    insts: InstNames<'a>,
}

/// The hash of an instruction name (fixed: the parallel loader computes it
/// on the chunks' cores, see [`name_hashes`]).
pub(super) fn name_hash(name: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x6e61_6d65).hash_one(name)
}

/// The instruction names of a function, by [`name_hash`].
struct InstNames<'a>(HashTable<&'a str>);

impl<'a> InstNames<'a> {
    /// Add a name whose hash is `hash`; false if it is there already.
    fn insert(&mut self, hash: u64, name: &'a str) -> bool {
        match self.0.entry(hash, |n| *n == name, |n| name_hash(n)) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(name);
                true
            }
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.0.find(name_hash(name), |n| *n == name).is_some()
    }
}

/// The [`name_hash`] of every instruction name of `insts`, nested blocks
/// included, in the order pass 2 collects them.
pub(super) fn name_hashes(insts: &[Instruction], out: &mut Vec<u64>) {
    for i in insts {
        out.push(name_hash(&i.name));
        for b in i.nested_blocks() {
            name_hashes(&b.instructions, out);
        }
    }
}

impl<'a> Names<'a> {
    /// The function's sets and locations; no instruction yet.
    fn of(f: &'a Function, unique: bool) -> Names<'a> {
        Names {
            func: &f.name,
            unique,
            sets: f.allocations.iter().map(|s| &*s.name).collect(),
            locs: f
                .allocations
                .iter()
                .flat_map(|s| s.locations.iter())
                .map(|l| &*l.name)
                .collect(),
            insts: InstNames(HashTable::with_capacity(f.instruction_count())),
        }
    }
}

/// Pass 2 of `f`; `unique`: instruction names must not repeat.
pub(super) fn resolve_names(f: &Function, unique: bool) -> Result<()> {
    let mut names = Names::of(f, unique);
    let r = (|| -> R {
        for (bi, b) in f.basic_blocks.iter().enumerate() {
            collect_names(b, &mut names, &mut |n| name_hash(n))
                .map_err(|e| e.at(Seg::Index(bi)).at(Seg::Key("basic_blocks")))?;
        }
        for (bi, b) in f.basic_blocks.iter().enumerate() {
            check_block(b, &names).map_err(|e| e.at(Seg::Index(bi)).at(Seg::Key("basic_blocks")))?;
        }
        Ok(())
    })();
    r.map_err(|e| {
        let path = render(e.unwind.iter().rev());
        // `render` starts at `$`; the loader prefixes the function's path.
        Error::bir(e.message, &path[1..])
    })
}

/// Pass 2 for the parallel loader, which only needs to know whether it
/// passes (on a failure the serial loader reads the text again and reports
/// the error): the names are collected in order (the uniqueness check), then
/// the instructions are checked on every core. `hashed`: the
/// [`name_hashes`] of the blocks whose chunks computed them, by the address
/// of the blocks' instructions.
pub(super) fn names_resolve(f: &Function, hashed: &[(usize, Vec<u64>)], unique: bool) -> bool {
    let mut names = Names::of(f, unique);
    for b in &f.basic_blocks {
        let at = b.instructions.as_ptr().addr();
        let ok = match hashed.iter().find(|h| h.0 == at) {
            Some((_, hashes)) => {
                let mut it = hashes.iter().copied();
                // Every hash used, none left over: the traversal orders agree.
                let mut short = false;
                let r = collect_names(b, &mut names, &mut |_| {
                    it.next().unwrap_or_else(|| {
                        short = true;
                        0
                    })
                });
                r.is_ok() && !short && it.next().is_none()
            }
            None => collect_names(b, &mut names, &mut |n| name_hash(n)).is_ok(),
        };
        if !ok {
            return false;
        }
    }
    let names = &names;
    f.basic_blocks
        .par_iter()
        .all(|b| b.instructions.par_iter().all(|i| check_instruction(i, names).is_ok()))
}

/// Add the block's instruction names (nested blocks included, in order);
/// `hash` gives each name's [`name_hash`].
fn collect_names<'a>(b: &'a Block, names: &mut Names<'a>, hash: &mut dyn FnMut(&str) -> u64) -> R {
    for (ii, inst) in b.instructions.iter().enumerate() {
        let r = (|| -> R {
            if !names.insts.insert(hash(&inst.name), &inst.name) && names.unique {
                let msg = format!(
                    "instruction name \"{}\" is used twice in function \"{}\"",
                    inst.name, names.func
                );
                return Err(Fail::new(msg, &[Seg::Key("name")]));
            }
            for (bi, nb) in inst.nested_blocks().iter().enumerate() {
                collect_names(nb, names, &mut *hash).map_err(|e| e.at(Seg::Index(bi)).at(Seg::Key("blocks")))?;
            }
            Ok(())
        })();
        r.map_err(|e| e.at(Seg::Index(ii)).at(Seg::Key("instructions")))?;
    }
    Ok(())
}

fn check_block(b: &Block, names: &Names<'_>) -> R {
    for (ii, inst) in b.instructions.iter().enumerate() {
        check_instruction(inst, names).map_err(|e| e.at(Seg::Index(ii)).at(Seg::Key("instructions")))?;
    }
    Ok(())
}

fn check_arguments(key: &'static str, args: &[Argument], names: &Names<'_>) -> R {
    for (ai, a) in args.iter().enumerate() {
        if let Some(set) = a.memsetref() {
            if !names.sets.contains(set) {
                let msg = format!(
                    "memsetref \"{set}\" names no memory location set of function \"{}\"",
                    names.func
                );
                return Err(Fail::new(msg, &[Seg::Key(key), Seg::Index(ai), Seg::Key("memsetref")]));
            }
        }
        if let Argument::Physical(PhysicalAp { memref: Some(m), .. }) = a {
            if !names.locs.contains(&**m) {
                let msg = format!("memref \"{m}\" names no memory location of function \"{}\"", names.func);
                return Err(Fail::new(msg, &[Seg::Key(key), Seg::Index(ai), Seg::Key("memref")]));
            }
        }
    }
    Ok(())
}

fn check_instruction(inst: &Instruction, names: &Names<'_>) -> R {
    check_arguments("ins", &inst.ins, names)?;
    check_arguments("outs", &inst.outs, names)?;
    check_arguments("indirection_ins", inst.indirection_ins.as_deref().unwrap_or(&[]), names)?;
    for (di, d) in inst.dependencies.iter().flatten().enumerate() {
        if !names.insts.contains(&d.name) {
            let msg = format!(
                "dependency \"{}\" names no instruction of function \"{}\"",
                d.name, names.func
            );
            return Err(Fail::new(msg, &[Seg::Key("dependencies"), Seg::Index(di)]));
        }
    }
    for (bi, nb) in inst.nested_blocks().iter().enumerate() {
        check_block(nb, names).map_err(|e| e.at(Seg::Index(bi)).at(Seg::Key("blocks")))?;
    }
    Ok(())
}
