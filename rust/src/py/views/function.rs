//! `FunctionView` and `BlockView`.

use pyo3::prelude::*;

use super::{
    argument_memref, func, parse_opcodes, resolve_block, InstructionView, MemoryLocationSetView, MemoryLocationView,
    ModuleRef,
};
use crate::bir::{Block, Function, Instruction, Opcode};
use crate::py::module::PyBirModule;

/// One distinct memory access of [`FunctionView::accesses`]:
/// `(opcode, side, memsetref, memref, instruction names)`.
type AccessGroup = (&'static str, &'static str, Option<String>, Option<String>, Vec<String>);

/// The accesses of the instructions of `codes` in `fun`, grouped by
/// (opcode, side, memsetref, memref), in first-seen order.
fn group_accesses(fun: &Function, codes: &[Opcode]) -> Vec<AccessGroup> {
    type Key<'a> = (&'static str, &'static str, Option<&'a str>, Option<&'a str>);
    let mut groups: Vec<(Key<'_>, Vec<&str>)> = Vec::new();
    let mut index: hashbrown::HashMap<Key<'_>, usize> = hashbrown::HashMap::new();
    fun.walk(&mut |i| {
        if !codes.contains(&i.opcode) {
            return;
        }
        for (side, args) in [("in", &i.ins), ("out", &i.outs)] {
            for a in args {
                let key: Key<'_> = (i.opcode.name(), side, a.memsetref(), argument_memref(a));
                let g = *index.entry(key).or_insert_with(|| {
                    groups.push((key, Vec::new()));
                    groups.len() - 1
                });
                let names = &mut groups[g].1;
                if names.last() != Some(&&*i.name) {
                    names.push(&i.name);
                }
            }
        }
    });
    groups
        .into_iter()
        .map(|((op, side, set, loc), names)| {
            (
                op,
                side,
                set.map(str::to_string),
                loc.map(str::to_string),
                names.into_iter().map(str::to_string).collect(),
            )
        })
        .collect()
}

/// Views of the instructions of `blocks` that `keep` accepts, depth first
/// (a Loop before its body); `prefix` is the path of the enclosing Loop.
fn walk_views(
    py: Python<'_>,
    m: &ModuleRef,
    f: usize,
    prefix: &mut Vec<(u32, u32)>,
    blocks: &[Block],
    keep: &dyn Fn(&Instruction) -> bool,
    out: &mut Vec<InstructionView>,
) {
    for (bi, b) in blocks.iter().enumerate() {
        for (ii, inst) in b.instructions.iter().enumerate() {
            prefix.push((bi as u32, ii as u32));
            if keep(inst) {
                out.push(InstructionView::new(m.child(py), f, prefix.clone()));
            }
            walk_views(py, m, f, prefix, inst.nested_blocks(), keep, out);
            prefix.pop();
        }
    }
}

/// Read-only view of one function.
#[pyclass(name = "FunctionView", module = "lncsplit", frozen)]
pub struct FunctionView {
    m: ModuleRef,
    f: usize,
}

impl FunctionView {
    pub(crate) fn new(m: &Bound<'_, PyBirModule>, f: usize) -> Self {
        FunctionView {
            m: ModuleRef::new(m),
            f,
        }
    }

    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&Function) -> T) -> PyResult<T> {
        let m = self.m.get(py)?;
        Ok(f(func(m.module(), self.f)?))
    }
}

#[pymethods]
impl FunctionView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |fun| fun.name.to_string())
    }

    /// The `ub` of each ShardId symbol of the function (sorted).
    #[getter]
    fn shard_ids(&self, py: Python<'_>) -> PyResult<Vec<i64>> {
        self.with(py, |fun| fun.shard_ids.clone())
    }

    #[getter]
    fn registers(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with(py, |fun| {
            fun.registers.iter().flatten().map(|r| r.to_string()).collect()
        })
    }

    #[getter]
    fn blocks(&self, py: Python<'_>) -> PyResult<Vec<BlockView>> {
        let n = self.with(py, |fun| fun.basic_blocks.len())?;
        Ok((0..n)
            .map(|b| BlockView {
                m: self.m.child(py),
                f: self.f,
                parent: Vec::new(),
                b: b as u32,
            })
            .collect())
    }

    /// The memory location sets of the function.
    #[getter]
    fn allocations(&self, py: Python<'_>) -> PyResult<Vec<MemoryLocationSetView>> {
        let n = self.with(py, |fun| fun.allocations.len())?;
        Ok((0..n)
            .map(|s| MemoryLocationSetView::new(self.m.child(py), self.f, s))
            .collect())
    }

    /// Every instruction, depth first (a Loop, then its body); with
    /// `opcodes`, only the instructions of those opcodes (the filter runs in
    /// Rust, so a check that needs a few opcodes does not pay for every view).
    #[pyo3(signature = (opcodes = None))]
    fn instructions(&self, py: Python<'_>, opcodes: Option<Vec<String>>) -> PyResult<Vec<InstructionView>> {
        let codes = opcodes.as_deref().map(parse_opcodes).transpose()?;
        let m = self.m.get(py)?;
        let fun = func(m.module(), self.f)?;
        let mut out = Vec::new();
        let keep = |i: &Instruction| codes.as_ref().is_none_or(|c| c.contains(&i.opcode));
        if codes.is_none() {
            out.reserve(fun.instruction_count());
        }
        walk_views(py, &self.m, self.f, &mut Vec::new(), &fun.basic_blocks, &keep, &mut out);
        Ok(out)
    }

    fn instruction_count(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, Function::instruction_count)
    }

    /// The memory touched by the instructions of `opcodes`, grouped: one
    /// tuple `(opcode, side, memsetref, memref, instructions)` per distinct
    /// access (side `"in"` or `"out"`), with the names of the instructions
    /// making it, in first-seen order. One call and a few dozen tuples instead
    /// of a view per argument: the memory checks run per distinct access.
    fn accesses(&self, py: Python<'_>, opcodes: Vec<String>) -> PyResult<Vec<AccessGroup>> {
        let codes = parse_opcodes(&opcodes)?;
        let m = self.m.get(py)?;
        let fun = func(m.module(), self.f)?;
        // The walk runs without the GIL (corpus threads overlap it); only the
        // few grouped tuples are built with it.
        Ok(py.detach(|| group_accesses(fun, &codes)))
    }

    /// Bytes per partition moved (contract §3.4): for each `ins[0]` and
    /// `outs[0]` of the instructions of `opcodes`, the most footprint bytes in
    /// one partition over every instance, as `(instruction, side, set,
    /// bytes)` with side `"in"` or `"out"`, in first-seen order.
    fn moved_bytes_per_partition(
        &self,
        py: Python<'_>,
        opcodes: Vec<String>,
    ) -> PyResult<Vec<(String, &'static str, String, i64)>> {
        let codes = parse_opcodes(&opcodes)?;
        let m = self.m.get(py)?;
        let module = m.module();
        let fun = func(module, self.f)?;
        let moved = py.detach(|| crate::analysis::moved::bytes_per_partition_moved(&module.ctx, fun, &codes))?;
        Ok(moved
            .into_iter()
            .map(|x| {
                let side = if x.list == crate::analysis::ArgList::Outs {
                    "out"
                } else {
                    "in"
                };
                (x.instruction.to_string(), side, x.set.to_string(), x.bytes)
            })
            .collect())
    }

    /// The memory location named `name`, or None.
    fn memory_location(&self, py: Python<'_>, name: &str) -> PyResult<Option<MemoryLocationView>> {
        let found = self.with(py, |fun| {
            fun.allocations.iter().enumerate().find_map(|(si, s)| {
                let li = s.locations.iter().position(|l| &*l.name == name)?;
                Some((si, li))
            })
        })?;
        Ok(found.map(|(s, l)| MemoryLocationView::new(self.m.child(py), self.f, s, l)))
    }

    /// The memory location set named `name`, or None.
    fn memory_location_set(&self, py: Python<'_>, name: &str) -> PyResult<Option<MemoryLocationSetView>> {
        let found = self.with(py, |fun| fun.allocations.iter().position(|s| &*s.name == name))?;
        Ok(found.map(|s| MemoryLocationSetView::new(self.m.child(py), self.f, s)))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |fun| {
            format!(
                "<lncsplit.FunctionView {:?} blocks={}>",
                &*fun.name,
                fun.basic_blocks.len()
            )
        })
    }
}

/// Read-only view of a basic block (or a Loop body block).
#[pyclass(name = "BlockView", module = "lncsplit", frozen)]
pub struct BlockView {
    m: ModuleRef,
    f: usize,
    /// Path of the enclosing Loop (empty for a function's basic block).
    parent: Vec<(u32, u32)>,
    b: u32,
}

impl BlockView {
    pub(crate) fn new(m: ModuleRef, f: usize, parent: Vec<(u32, u32)>, b: u32) -> Self {
        BlockView { m, f, parent, b }
    }

    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&Block) -> T) -> PyResult<T> {
        let m = self.m.get(py)?;
        Ok(f(resolve_block(m.module(), self.f, &self.parent, self.b)?))
    }
}

#[pymethods]
impl BlockView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |b| b.name.to_string())
    }

    /// The block's own instructions (a Loop's body is reached via `.blocks`).
    #[getter]
    fn instructions(&self, py: Python<'_>) -> PyResult<Vec<InstructionView>> {
        let n = self.with(py, |b| b.instructions.len())?;
        Ok((0..n)
            .map(|i| {
                let mut path = self.parent.clone();
                path.push((self.b, i as u32));
                InstructionView::new(self.m.child(py), self.f, path)
            })
            .collect())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |b| {
            format!(
                "<lncsplit.BlockView {:?} instructions={}>",
                &*b.name,
                b.instructions.len()
            )
        })
    }
}
