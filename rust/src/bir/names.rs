//! Instruction names and positions (contract §1.7): lncsplit's spelling
//! keeps names unique in a function; the compiler's may repeat one (real
//! dumps name the same loop-control instruction in every loop body). A
//! repeated name denotes its first instance in depth-first order; every
//! instruction also has its depth-first *position* in its function (a Loop
//! before its body), which reports give beside the name.
//!
//! The passes that rewrite or merge cores by name (`split`, `run_pipeline`,
//! lower_local_collectives, extend_shared_lifetimes, `link`) refuse a
//! function with a repeated name: [`refuse_repeated_names`], 9010.

use std::sync::Arc;

use hashbrown::HashMap;

use super::module::{Function, Module};
use super::schema::Spelling;
use crate::error::{Error, Result};

/// The code of a repeated instruction name (birverifier's
/// "instruction names are unique in a function").
pub const REPEATED_NAME: u32 = 9010;

/// The first name of `f` that repeats (depth first) and the positions of
/// its first two instances.
pub fn first_repeat(f: &Function) -> Option<(Arc<str>, usize, usize)> {
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(f.instruction_count());
    let mut pos = 0usize;
    let mut found = None;
    f.walk(&mut |i| {
        if found.is_none() {
            if let Some(&first) = seen.get(&*i.name) {
                found = Some((i.name.clone(), first, pos));
            } else {
                seen.insert(&i.name, pos);
            }
        }
        pos += 1;
    });
    found
}

/// The 9010 error: `name` is used at positions `a` and `b` of function `f`.
pub fn repeated_name_error(m: &Module, f: &Function, name: &str, a: usize, b: usize, what: &str) -> Error {
    Error::neuron_at(
        REPEATED_NAME,
        "instruction names are unique in a function",
        "birverifier.cpp",
        format!(
            "module {:?}: function {}: instruction name {name} is repeated (positions {a} and {b}, depth first); \
             {what} needs unique names (the compiler's spelling may repeat them, contract §1.7)",
            m.name, f.name
        ),
    )
}

/// Refuse a module with a repeated instruction name in a function (9010,
/// naming it and both positions). Only a module read in the compiler's
/// spelling can have one (lncsplit's loader refuses them, and its passes
/// keep names unique), so a module in lncsplit's spelling costs nothing.
pub fn refuse_repeated_names(m: &Module, what: &str) -> Result<()> {
    if m.spelling != Spelling::Compiler {
        return Ok(());
    }
    for f in &m.functions {
        if let Some((name, a, b)) = first_repeat(f) {
            return Err(repeated_name_error(m, f, &name, a, b, what));
        }
    }
    Ok(())
}

/// The depth-first position of the first instruction named `name` in `f`.
pub fn position_of(f: &Function, name: &str) -> Option<usize> {
    let mut pos = 0usize;
    let mut found = None;
    f.walk(&mut |i| {
        if found.is_none() && &*i.name == name {
            found = Some(pos);
        }
        pos += 1;
    });
    found
}
