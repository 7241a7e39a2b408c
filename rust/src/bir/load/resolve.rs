//! Pass 2, per function: every `memsetref`, `memref` and dependency names
//! something in the function; instruction names are unique. The path of an
//! error is built while it unwinds, relative to the function (the loader
//! adds the rest).

use hashbrown::HashSet;
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
    sets: HashSet<&'a str>,
    locs: HashSet<&'a str>,
    insts: HashSet<&'a str>,
}

impl<'a> Names<'a> {
    /// The function's sets and locations; no instruction yet.
    fn of(f: &'a Function) -> Names<'a> {
        Names {
            func: &f.name,
            sets: f.allocations.iter().map(|s| &*s.name).collect(),
            locs: f
                .allocations
                .iter()
                .flat_map(|s| s.locations.iter())
                .map(|l| &*l.name)
                .collect(),
            insts: HashSet::with_capacity(f.instruction_count()),
        }
    }
}

pub(super) fn resolve_names(f: &Function) -> Result<()> {
    let mut names = Names::of(f);
    let r = (|| -> R {
        for (bi, b) in f.basic_blocks.iter().enumerate() {
            collect_names(b, &mut names).map_err(|e| e.at(Seg::Index(bi)).at(Seg::Key("basic_blocks")))?;
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
/// the instructions are checked on every core.
pub(super) fn names_resolve(f: &Function) -> bool {
    let mut names = Names::of(f);
    if f.basic_blocks.iter().any(|b| collect_names(b, &mut names).is_err()) {
        return false;
    }
    let names = &names;
    f.basic_blocks
        .par_iter()
        .all(|b| b.instructions.par_iter().all(|i| check_instruction(i, names).is_ok()))
}

fn collect_names<'a>(b: &'a Block, names: &mut Names<'a>) -> R {
    for (ii, inst) in b.instructions.iter().enumerate() {
        let r = (|| -> R {
            if !names.insts.insert(&inst.name) {
                let msg = format!(
                    "instruction name \"{}\" is used twice in function \"{}\"",
                    inst.name, names.func
                );
                return Err(Fail::new(msg, &[Seg::Key("name")]));
            }
            for (bi, nb) in inst.nested_blocks().iter().enumerate() {
                collect_names(nb, names).map_err(|e| e.at(Seg::Index(bi)).at(Seg::Key("blocks")))?;
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
        if !names.insts.contains(&*d.name) {
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
