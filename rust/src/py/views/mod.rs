//! The read-only views of a module (contract §4): `FunctionView`,
//! `BlockView`, `InstructionView`, `ArgumentView`, `MemoryLocationSetView`,
//! `MemoryLocationView`.
//!
//! A view holds a strong reference to its module, an index path and the
//! module's generation when the view was made ([`ModuleRef`]). It borrows
//! the module on every access, so iterating a module never converts it to
//! Python dicts. After a structural mutation of the module (a pass, `release`)
//! every older view raises `IndexError` rather than read whatever now sits at
//! its index; so does a view whose path no longer resolves.

mod function;
mod instruction;
mod memory;

pub(crate) use function::{BlockView, FunctionView};
pub(crate) use instruction::{ArgumentView, InstructionView};
pub(crate) use memory::{MemoryLocationSetView, MemoryLocationView};

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;

use super::module::PyBirModule;
use crate::bir::{Block, Function, Instruction, Module};
use crate::pelican::ExprId;

/// A view's handle on its module: the module object and the generation the
/// view was made at.
pub(crate) struct ModuleRef {
    m: Py<PyBirModule>,
    generation: u64,
}

impl ModuleRef {
    fn new(m: &Bound<'_, PyBirModule>) -> Self {
        ModuleRef {
            m: m.clone().unbind(),
            generation: m.borrow().generation(),
        }
    }

    /// The same module at the same generation, for a view made from this one.
    fn child(&self, py: Python<'_>) -> Self {
        ModuleRef {
            m: self.m.clone_ref(py),
            generation: self.generation,
        }
    }

    /// Borrow the module, checking it has not changed since the view was made.
    fn get<'py>(&self, py: Python<'py>) -> PyResult<PyRef<'py, PyBirModule>> {
        let m = self.m.bind(py).try_borrow()?;
        if m.generation() != self.generation {
            return Err(stale());
        }
        Ok(m)
    }

    /// Borrow the module mutably for a write in place (it moves nothing, so
    /// the generation stays), checking it has not changed since.
    fn get_mut<'py>(&self, py: Python<'py>) -> PyResult<PyRefMut<'py, PyBirModule>> {
        let m = self.m.bind(py).try_borrow_mut()?;
        if m.generation() != self.generation {
            return Err(stale());
        }
        Ok(m)
    }

    /// An `Expr` of the module's own arena (bound to the module object).
    fn expr<'py>(&self, py: Python<'py>, id: ExprId) -> PyResult<Bound<'py, PyAny>> {
        let owner = super::pelican::Owner::Module(self.m.clone_ref(py));
        Ok(Bound::new(py, super::pelican::new_expr(py, owner, id))?.into_any())
    }

    /// A `Predicate` over an expression of the module's own arena.
    fn predicate<'py>(&self, py: Python<'py>, id: ExprId, ge: bool) -> PyResult<Bound<'py, PyAny>> {
        let owner = super::pelican::Owner::Module(self.m.clone_ref(py));
        Ok(Bound::new(py, super::pelican::new_predicate(py, owner, id, ge)?)?.into_any())
    }
}

#[cold]
fn stale() -> PyErr {
    PyIndexError::new_err("stale view: the module changed since this view was made")
}

fn func(m: &Module, f: usize) -> PyResult<&Function> {
    m.functions.get(f).ok_or_else(stale)
}

/// Step from a function down an instruction path: (basic block, instruction)
/// then (loop body block, instruction) per nesting level.
fn resolve_inst<'a>(m: &'a Module, f: usize, path: &[(u32, u32)]) -> PyResult<&'a Instruction> {
    let fun = func(m, f)?;
    let mut blocks: &[Block] = &fun.basic_blocks;
    let mut cur: Option<&Instruction> = None;
    for &(b, i) in path {
        let inst = blocks
            .get(b as usize)
            .and_then(|b| b.instructions.get(i as usize))
            .ok_or_else(stale)?;
        blocks = inst.nested_blocks();
        cur = Some(inst);
    }
    cur.ok_or_else(stale)
}

fn resolve_block<'a>(m: &'a Module, f: usize, parent: &[(u32, u32)], b: u32) -> PyResult<&'a Block> {
    let blocks: &[Block] = if parent.is_empty() {
        &func(m, f)?.basic_blocks
    } else {
        resolve_inst(m, f, parent)?.nested_blocks()
    };
    blocks.get(b as usize).ok_or_else(stale)
}

/// Names of opcodes → opcodes (`ValueError` naming an unknown one).
fn parse_opcodes(names: &[String]) -> PyResult<Vec<crate::bir::Opcode>> {
    names
        .iter()
        .map(|n| {
            crate::bir::Opcode::from_name(n)
                .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("Unknown opcode {n:?}")))
        })
        .collect()
}

/// The location name of a `physical_ap` (or of an argument kind lncsplit
/// does not model that has a `memref` key).
fn argument_memref(a: &crate::bir::Argument) -> Option<&str> {
    match a {
        crate::bir::Argument::Physical(p) => p.memref.as_deref(),
        crate::bir::Argument::Other { fields, .. } => fields.get("memref").and_then(|v| v.as_str()),
        _ => None,
    }
}
