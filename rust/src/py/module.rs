//! `lncsplit.Module` and its read-only views (contract §4).
//!
//! A view holds a strong reference to its module plus an index path and
//! borrows the module on every access, so iterating a module never converts
//! it to Python dicts. A view whose path no longer resolves (the module was
//! changed underneath it) raises `IndexError`. Expression-valued attributes
//! are returned as their v2 JSON (a dict) for now.

use std::path::PathBuf;

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde_json::Value;

use super::errors::IntoPy;
use crate::bir::dump::{argument_to_value, instruction_to_value};
use crate::bir::{
    Argument, Block, Function, GenOptions, Instruction, MemoryLocation, MemoryLocationSet, Module, OpFields,
    RemoteLocalTarget,
};
use crate::pelican::ExprId;

/// The extension allocates and frees millions of small objects per module
/// (load, clone, drop); mimalloc is several times faster at that than glibc
/// malloc. Only the Python extension uses it (`cargo test` keeps the system
/// allocator).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

impl Default for Module {
    /// A cheap empty module (for `std::mem::take`).
    fn default() -> Self {
        Module {
            version: 2,
            name: String::new(),
            arch: crate::bir::Arch::Gen3,
            arch_given: false,
            artifact_path: None,
            attributes: None,
            functions: Vec::new(),
            extra: None,
            ctx: crate::pelican::Context::new(),
        }
    }
}

// ------------------------------------------------------------------ helpers

/// serde_json value → Python object (dict, list, str, int, float, bool, None).
pub(crate) fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(value_to_py(py, x)?)?;
            }
            l.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, value_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// An `Expr` of the module's own arena (bound to the module object).
fn expr_obj<'py>(py: Python<'py>, owner: &Py<PyBirModule>, id: ExprId) -> PyResult<Bound<'py, PyAny>> {
    let e = super::pelican::new_expr(py, super::pelican::Owner::Module(owner.clone_ref(py)), id);
    Ok(Bound::new(py, e)?.into_any())
}

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

fn arg_list(i: &Instruction, list: u8) -> &[Argument] {
    match list {
        0 => &i.ins,
        1 => &i.outs,
        _ => i.indirection_ins.as_deref().unwrap_or(&[]),
    }
}

fn inst_views(
    py: Python<'_>,
    m: &Py<PyBirModule>,
    f: usize,
    prefix: &[(u32, u32)],
    b: u32,
    block: &Block,
) -> Vec<InstructionView> {
    (0..block.instructions.len())
        .map(|i| {
            let mut path = prefix.to_vec();
            path.push((b, i as u32));
            InstructionView {
                m: m.clone_ref(py),
                f,
                path,
            }
        })
        .collect()
}

fn walk_views(
    py: Python<'_>,
    m: &Py<PyBirModule>,
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
                out.push(InstructionView {
                    m: m.clone_ref(py),
                    f,
                    path: prefix.clone(),
                });
            }
            walk_views(py, m, f, prefix, inst.nested_blocks(), keep, out);
            prefix.pop();
        }
    }
}

// ------------------------------------------------------------------- Module

/// A BIR module (contract §1, §4).
#[pyclass(name = "Module", module = "lncsplit")]
pub struct PyBirModule {
    pub(crate) inner: Module,
}

impl PyBirModule {
    pub(crate) fn new(inner: Module) -> Self {
        PyBirModule { inner }
    }
}

/// Borrow `str` or `bytes` input as bytes without copying.
fn with_input_bytes<T>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> T) -> PyResult<T> {
    if let Ok(s) = data.cast::<PyString>() {
        return Ok(f(s.to_str()?.as_bytes()));
    }
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    Err(PyTypeError::new_err(format!(
        "Module.from_json expects str or bytes, got {}",
        data.get_type().name()?
    )))
}

#[pymethods]
impl PyBirModule {
    /// Parse BIR-JSON text (`str` or `bytes`); the GIL is released while parsing.
    #[staticmethod]
    fn from_json(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let r = with_input_bytes(data, |b| py.detach(|| crate::bir::load_module(b)))?;
        Ok(PyBirModule::new(r.py(py)?))
    }

    /// The module as BIR-JSON text (wire `version` 2, or 1 on request).
    #[pyo3(signature = (version = 2))]
    fn to_json<'py>(&self, py: Python<'py>, version: u32) -> PyResult<Bound<'py, PyString>> {
        let m = &self.inner;
        let bytes = py.detach(|| crate::bir::dump_module(m, version)).py(py)?;
        let s = std::str::from_utf8(&bytes).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyString::new(py, s))
    }

    /// The module as BIR-JSON bytes.
    #[pyo3(signature = (version = 2))]
    fn to_bytes<'py>(&self, py: Python<'py>, version: u32) -> PyResult<Bound<'py, PyBytes>> {
        let m = &self.inner;
        let bytes = py.detach(|| crate::bir::dump_module(m, version)).py(py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A deep copy: `"structural"` (fast Rust clone) or `"json"` (the
    /// compiler's save → load round trip). Both are observably identical.
    #[pyo3(signature = (method = "structural"))]
    fn clone(&self, py: Python<'_>, method: &str) -> PyResult<Self> {
        let m = &self.inner;
        let inner = match method {
            "structural" => py.detach(|| m.structural_clone()),
            "json" => py.detach(|| m.json_clone()).py(py)?,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown clone method {other:?}: expected \"structural\" or \"json\""
                )))
            }
        };
        Ok(PyBirModule::new(inner))
    }

    fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
        self.clone(py, "structural")
    }

    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.clone(py, "structural")
    }

    /// Pickle as BIR-JSON bytes.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let ctor = py.get_type::<PyBirModule>().getattr("from_json")?;
        let bytes = slf.borrow().to_bytes(py, 2)?;
        Ok((ctor, (bytes,)))
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    #[setter]
    fn set_name(&mut self, name: String) {
        self.inner.name = name;
    }

    /// The concrete core id (attribute `neuron_core_id`), None while symbolic.
    #[getter]
    fn neuron_core_id(&self) -> Option<i64> {
        self.inner.neuron_core_id()
    }

    /// The wire version the module was read with (writers always emit 2).
    #[getter]
    fn version(&self) -> u32 {
        self.inner.version
    }

    /// Canonical arch name (`inferentia`, `sunda`, `gen3`, `core_v4`).
    #[getter]
    fn arch(&self) -> &'static str {
        self.inner.arch.name()
    }

    #[getter]
    fn artifact_path(&self) -> Option<&str> {
        self.inner.artifact_path.as_deref()
    }

    /// A copy of the module attributes.
    #[getter]
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.attributes {
            Some(a) => value_to_py(py, &Value::Object(a.clone())),
            None => Ok(PyDict::new(py).into_any()),
        }
    }

    /// Views of the functions, in module order.
    #[getter]
    fn functions(slf: &Bound<'_, Self>) -> Vec<FunctionView> {
        let n = slf.borrow().inner.functions.len();
        (0..n)
            .map(|f| FunctionView {
                m: slf.clone().unbind(),
                f,
            })
            .collect()
    }

    /// The function named `name`, or None.
    fn function(slf: &Bound<'_, Self>, name: &str) -> Option<FunctionView> {
        let f = slf.borrow().inner.functions.iter().position(|f| &*f.name == name)?;
        Some(FunctionView {
            m: slf.clone().unbind(),
            f,
        })
    }

    /// Number of instructions, loop bodies included.
    fn instruction_count(&self) -> usize {
        self.inner.instruction_count()
    }

    fn __repr__(&self) -> String {
        let core = match self.inner.neuron_core_id() {
            Some(c) => format!(" neuron_core_id={c}"),
            None => String::new(),
        };
        format!(
            "<lncsplit.Module {:?} arch={}{} functions={} instructions={}>",
            self.inner.name,
            self.inner.arch.name(),
            core,
            self.inner.functions.len(),
            self.inner.instruction_count()
        )
    }
}

// --------------------------------------------------------------- Function

/// One distinct memory access of [`FunctionView::accesses`]:
/// `(opcode, side, memsetref, memref, instruction names)`.
type AccessGroup = (&'static str, &'static str, Option<String>, Option<String>, Vec<String>);

/// The accesses of the instructions of `codes` in `fun`, grouped by
/// (opcode, side, memsetref, memref), in first-seen order.
fn group_accesses(fun: &Function, codes: &[crate::bir::Opcode]) -> Vec<AccessGroup> {
    type Key<'a> = (&'static str, &'static str, Option<&'a str>, Option<&'a str>);
    let mut groups: Vec<(Key<'_>, Vec<&str>)> = Vec::new();
    let mut index: hashbrown::HashMap<Key<'_>, usize> = hashbrown::HashMap::new();
    fun.walk(&mut |i| {
        if !codes.contains(&i.opcode) {
            return;
        }
        for (side, args) in [("in", &i.ins), ("out", &i.outs)] {
            for a in args {
                let memref = match a {
                    Argument::Physical(p) => p.memref.as_deref(),
                    Argument::Other { fields, .. } => fields.get("memref").and_then(|v| v.as_str()),
                    _ => None,
                };
                let key: Key<'_> = (i.opcode.name(), side, a.memsetref(), memref);
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

/// Read-only view of one function.
#[pyclass(name = "FunctionView", module = "lncsplit", frozen)]
pub struct FunctionView {
    m: Py<PyBirModule>,
    f: usize,
}

#[pymethods]
impl FunctionView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        Ok(func(&self.m.borrow(py).inner, self.f)?.name.to_string())
    }

    /// The `ub` of each ShardId symbol of the function (sorted).
    #[getter]
    fn shard_ids(&self, py: Python<'_>) -> PyResult<Vec<i64>> {
        Ok(func(&self.m.borrow(py).inner, self.f)?.shard_ids.clone())
    }

    #[getter]
    fn registers(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let m = self.m.borrow(py);
        Ok(func(&m.inner, self.f)?
            .registers
            .iter()
            .flatten()
            .map(|r| r.to_string())
            .collect())
    }

    #[getter]
    fn blocks(&self, py: Python<'_>) -> PyResult<Vec<BlockView>> {
        let m = self.m.borrow(py);
        let n = func(&m.inner, self.f)?.basic_blocks.len();
        Ok((0..n)
            .map(|b| BlockView {
                m: self.m.clone_ref(py),
                f: self.f,
                parent: Vec::new(),
                b: b as u32,
            })
            .collect())
    }

    /// The memory location sets of the function.
    #[getter]
    fn allocations(&self, py: Python<'_>) -> PyResult<Vec<MemoryLocationSetView>> {
        let m = self.m.borrow(py);
        let n = func(&m.inner, self.f)?.allocations.len();
        Ok((0..n)
            .map(|s| MemoryLocationSetView {
                m: self.m.clone_ref(py),
                f: self.f,
                s,
            })
            .collect())
    }

    /// Every instruction, depth first (a Loop, then its body); with
    /// `opcodes`, only the instructions of those opcodes (the filter runs in
    /// Rust, so a check that needs a few opcodes does not pay for every view).
    #[pyo3(signature = (opcodes = None))]
    fn instructions(&self, py: Python<'_>, opcodes: Option<Vec<String>>) -> PyResult<Vec<InstructionView>> {
        let m = self.m.borrow(py);
        let fun = func(&m.inner, self.f)?;
        let mut out = Vec::new();
        match opcodes {
            None => {
                out.reserve(fun.instruction_count());
                walk_views(
                    py,
                    &self.m,
                    self.f,
                    &mut Vec::new(),
                    &fun.basic_blocks,
                    &|_| true,
                    &mut out,
                );
            }
            Some(names) => {
                let codes: Vec<crate::bir::Opcode> = names
                    .iter()
                    .map(|n| {
                        crate::bir::Opcode::from_name(n)
                            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("Unknown opcode {n:?}")))
                    })
                    .collect::<PyResult<_>>()?;
                let keep = |i: &Instruction| codes.contains(&i.opcode);
                walk_views(py, &self.m, self.f, &mut Vec::new(), &fun.basic_blocks, &keep, &mut out);
            }
        }
        Ok(out)
    }

    fn instruction_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(func(&self.m.borrow(py).inner, self.f)?.instruction_count())
    }

    /// The memory touched by the instructions of `opcodes`, grouped: one
    /// tuple `(opcode, side, memsetref, memref, instructions)` per distinct
    /// access (side `"in"` or `"out"`), with the names of the instructions
    /// making it, in first-seen order. One call and a few dozen tuples instead
    /// of a view per argument: the memory checks run per distinct access.
    fn accesses(&self, py: Python<'_>, opcodes: Vec<String>) -> PyResult<Vec<AccessGroup>> {
        let codes: Vec<crate::bir::Opcode> = opcodes
            .iter()
            .map(|n| {
                crate::bir::Opcode::from_name(n)
                    .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("Unknown opcode {n:?}")))
            })
            .collect::<PyResult<_>>()?;
        let m = self.m.borrow(py);
        let fun = func(&m.inner, self.f)?;
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
        let codes: Vec<crate::bir::Opcode> = opcodes
            .iter()
            .map(|n| {
                crate::bir::Opcode::from_name(n)
                    .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("Unknown opcode {n:?}")))
            })
            .collect::<PyResult<_>>()?;
        let m = self.m.borrow(py);
        let fun = func(&m.inner, self.f)?;
        let ctx = &m.inner.ctx;
        let moved = py
            .detach(|| crate::tail::moved::bytes_per_partition_moved(ctx, fun, &codes))
            .py(py)?;
        Ok(moved
            .into_iter()
            .map(|x| {
                let side = if x.list == crate::tail::ArgList::Outs {
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
        let m = self.m.borrow(py);
        let fun = func(&m.inner, self.f)?;
        for (si, s) in fun.allocations.iter().enumerate() {
            if let Some(li) = s.locations.iter().position(|l| &*l.name == name) {
                return Ok(Some(MemoryLocationView {
                    m: self.m.clone_ref(py),
                    f: self.f,
                    s: si,
                    l: li,
                }));
            }
        }
        Ok(None)
    }

    /// The memory location set named `name`, or None.
    fn memory_location_set(&self, py: Python<'_>, name: &str) -> PyResult<Option<MemoryLocationSetView>> {
        let m = self.m.borrow(py);
        let fun = func(&m.inner, self.f)?;
        Ok(fun
            .allocations
            .iter()
            .position(|s| &*s.name == name)
            .map(|s| MemoryLocationSetView {
                m: self.m.clone_ref(py),
                f: self.f,
                s,
            }))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let m = self.m.borrow(py);
        let fun = func(&m.inner, self.f)?;
        Ok(format!(
            "<lncsplit.FunctionView {:?} blocks={}>",
            &*fun.name,
            fun.basic_blocks.len()
        ))
    }
}

// ------------------------------------------------------------------ Block

/// Read-only view of a basic block (or a Loop body block).
#[pyclass(name = "BlockView", module = "lncsplit", frozen)]
pub struct BlockView {
    m: Py<PyBirModule>,
    f: usize,
    /// Path of the enclosing Loop (empty for a function's basic block).
    parent: Vec<(u32, u32)>,
    b: u32,
}

#[pymethods]
impl BlockView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        let m = self.m.borrow(py);
        Ok(resolve_block(&m.inner, self.f, &self.parent, self.b)?.name.to_string())
    }

    /// The block's own instructions (a Loop's body is reached via `.blocks`).
    #[getter]
    fn instructions(&self, py: Python<'_>) -> PyResult<Vec<InstructionView>> {
        let m = self.m.borrow(py);
        let b = resolve_block(&m.inner, self.f, &self.parent, self.b)?;
        Ok(inst_views(py, &self.m, self.f, &self.parent, self.b, b))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let m = self.m.borrow(py);
        let b = resolve_block(&m.inner, self.f, &self.parent, self.b)?;
        Ok(format!(
            "<lncsplit.BlockView {:?} instructions={}>",
            &*b.name,
            b.instructions.len()
        ))
    }
}

// ------------------------------------------------------------ Instruction

/// Read-only view of one instruction.
#[pyclass(name = "InstructionView", module = "lncsplit", frozen)]
pub struct InstructionView {
    m: Py<PyBirModule>,
    f: usize,
    path: Vec<(u32, u32)>,
}

impl InstructionView {
    fn args(&self, py: Python<'_>, list: u8) -> PyResult<Vec<ArgumentView>> {
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        let n = arg_list(i, list).len();
        Ok((0..n)
            .map(|a| ArgumentView {
                m: self.m.clone_ref(py),
                f: self.f,
                path: self.path.clone(),
                list,
                a,
            })
            .collect())
    }
}

/// Keys of an instruction's JSON that are not op-specific.
const COMMON_KEYS: [&str; 9] = [
    "name",
    "opcode",
    "engine",
    "ins",
    "outs",
    "indirection_ins",
    "predicates",
    "dependencies",
    "blocks",
];

#[pymethods]
impl InstructionView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        let m = self.m.borrow(py);
        Ok(resolve_inst(&m.inner, self.f, &self.path)?.name.to_string())
    }

    /// InstructionType name.
    #[getter]
    fn opcode(&self, py: Python<'_>) -> PyResult<&'static str> {
        let m = self.m.borrow(py);
        Ok(resolve_inst(&m.inner, self.f, &self.path)?.opcode.name())
    }

    /// InstructionType ordinal (neuronx-facts §3.5).
    #[getter]
    fn opcode_code(&self, py: Python<'_>) -> PyResult<u8> {
        let m = self.m.borrow(py);
        Ok(resolve_inst(&m.inner, self.f, &self.path)?.opcode.0)
    }

    /// The engine (`Unassigned` when the file gives none).
    #[getter]
    fn engine(&self, py: Python<'_>) -> PyResult<String> {
        let m = self.m.borrow(py);
        Ok(resolve_inst(&m.inner, self.f, &self.path)?
            .engine
            .as_deref()
            .unwrap_or("Unassigned")
            .to_string())
    }

    #[getter]
    fn ins(&self, py: Python<'_>) -> PyResult<Vec<ArgumentView>> {
        self.args(py, 0)
    }

    #[getter]
    fn outs(&self, py: Python<'_>) -> PyResult<Vec<ArgumentView>> {
        self.args(py, 1)
    }

    #[getter]
    fn indirection_ins(&self, py: Python<'_>) -> PyResult<Vec<ArgumentView>> {
        self.args(py, 2)
    }

    /// The affine predicates, as `lncsplit.pelican.Predicate`s over the
    /// module's expressions (`.expr`, `.ge`, `.eval(bindings)`).
    #[getter]
    fn predicates<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let preds: Vec<(ExprId, bool)> = {
            let m = self.m.borrow(py);
            let i = resolve_inst(&m.inner, self.f, &self.path)?;
            i.predicates.iter().map(|p| (p.expr, p.ge)).collect()
        };
        let l = PyList::empty(py);
        for (e, ge) in preds {
            let owner = super::pelican::Owner::Module(self.m.clone_ref(py));
            l.append(Bound::new(py, super::pelican::new_predicate(py, owner, e, ge)?)?)?;
        }
        Ok(l)
    }

    /// `evalMask` under `bindings` (axis names, `"shard"`): 0 iff some
    /// predicate is false; undecided counts as may-fire.
    #[pyo3(signature = (bindings = None))]
    fn eval_mask(&self, py: Python<'_>, bindings: Option<&Bound<'_, PyAny>>) -> PyResult<u8> {
        let mut b = crate::pelican::Bindings::default();
        if let Some(d) = bindings {
            for (k, v) in d.cast::<PyDict>()?.iter() {
                let v: i64 = v.extract()?;
                let k: String = k.extract()?;
                if k == "shard" {
                    b.shard = Some(v);
                } else {
                    b.by_name.insert(k, v);
                }
            }
        }
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        crate::pelican::eval_mask(&m.inner.ctx, &i.predicates, &b).py(py)
    }

    /// `[(name, kind or None), …]`.
    #[getter]
    fn dependencies<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        i.dependencies
            .iter()
            .flatten()
            .map(|d| {
                let k = match &d.kind {
                    Some(k) => value_to_py(py, k)?,
                    None => py.None().into_bound(py),
                };
                Ok((d.name.to_string(), k))
            })
            .collect()
    }

    /// A Loop's body blocks (empty for other opcodes).
    #[getter]
    fn blocks(&self, py: Python<'_>) -> PyResult<Vec<BlockView>> {
        let m = self.m.borrow(py);
        let n = resolve_inst(&m.inner, self.f, &self.path)?.nested_blocks().len();
        Ok((0..n)
            .map(|b| BlockView {
                m: self.m.clone_ref(py),
                f: self.f,
                parent: self.path.clone(),
                b: b as u32,
            })
            .collect())
    }

    /// A Loop's axis `{"name", "lo", "ub", "step"}`, else None.
    #[getter]
    fn axis<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        let OpFields::Loop { axis, .. } = &i.op else {
            return Ok(None);
        };
        let a = m.inner.ctx.axis(*axis);
        let d = PyDict::new(py);
        d.set_item("name", &*a.name)?;
        d.set_item("lo", a.lo)?;
        d.set_item("ub", a.ub)?;
        d.set_item("step", a.step)?;
        Ok(Some(d))
    }

    /// The op-specific keys as JSON (a Loop's `axis`, CoreBarrier `id`/
    /// `cores`/`runtime_semaphore`, CollectiveCompute `cc_channel`/ranks/
    /// `queue`, Matmult `replication_*`, DMACopy `mode`) and every key
    /// lncsplit does not model, in file order. A Loop's body is `.blocks`.
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // The instruction's own JSON minus the common keys: one writer
        // (bir::dump) decides how op-specific fields look.
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        let mut v = instruction_to_value(&m.inner.ctx, i, 2).py(py)?;
        if let Some(o) = v.as_object_mut() {
            o.retain(|k, _| !COMMON_KEYS.contains(&k.as_str()));
        }
        value_to_py(py, &v)
    }

    /// The instruction's JSON (what `to_json` writes for it), as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        let v = instruction_to_value(&m.inner.ctx, i, 2).py(py)?;
        value_to_py(py, &v)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        Ok(format!("<lncsplit.InstructionView {:?} {}>", &*i.name, i.opcode.name()))
    }
}

// --------------------------------------------------------------- Argument

/// Read-only view of one instruction argument.
#[pyclass(name = "ArgumentView", module = "lncsplit", frozen)]
pub struct ArgumentView {
    m: Py<PyBirModule>,
    f: usize,
    path: Vec<(u32, u32)>,
    /// 0 ins, 1 outs, 2 indirection_ins.
    list: u8,
    a: usize,
}

impl ArgumentView {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&Module, &Argument) -> PyResult<T>) -> PyResult<T> {
        let m = self.m.borrow(py);
        let i = resolve_inst(&m.inner, self.f, &self.path)?;
        let a = arg_list(i, self.list).get(self.a).ok_or_else(stale)?;
        f(&m.inner, a)
    }
}

fn other_field<'py>(py: Python<'py>, a: &Argument, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    match a {
        Argument::Other { fields, .. } => fields.get(key).map(|v| value_to_py(py, v)).transpose(),
        _ => Ok(None),
    }
}

#[pymethods]
impl ArgumentView {
    /// The wire kind (`symbolic_ap`, `physical_ap`, `imm_value`, …).
    #[getter]
    fn kind(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, a| Ok(a.kind_name().to_string()))
    }

    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |_, a| Ok(a.dtype().map(str::to_string)))
    }

    #[getter]
    fn memsetref(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |_, a| Ok(a.memsetref().map(str::to_string)))
    }

    /// `physical_ap` location name (None otherwise).
    #[getter]
    fn memref(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |_, a| {
            Ok(match a {
                Argument::Physical(p) => p.memref.as_deref().map(str::to_string),
                Argument::Other { fields, .. } => fields.get("memref").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
        })
    }

    /// `[[step, num], …]`, partition dim first (None for immediates).
    #[getter]
    fn ap<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with(py, |_, a| match a.ap() {
            Some(ap) => Ok(Some(PyList::new(py, ap.iter().map(|p| p.to_vec()))?.into_any())),
            None => other_field(py, a, "ap"),
        })
    }

    #[getter]
    fn offset<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with(py, |_, a| match a {
            Argument::Physical(p) => Ok(p.offset.map(|o| o.into_pyobject(py)).transpose()?.map(|o| o.into_any())),
            _ => other_field(py, a, "offset"),
        })
    }

    /// `symbolic_ap` start-index expressions, one per ap dim, as
    /// `lncsplit.pelican.Expr`s of the module (`.eval`, `.to_json()`, …).
    #[getter]
    fn addrs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ids = self.with(py, |_, a| match a {
            Argument::Symbolic(s) => Ok(s.addrs.to_vec()),
            _ => Ok(Vec::new()),
        })?;
        let l = PyList::empty(py);
        for e in ids {
            l.append(expr_obj(py, &self.m, e)?)?;
        }
        Ok(l)
    }

    #[getter]
    fn tile_addrs<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let id = self.with(py, |_, a| match a {
            Argument::Symbolic(s) => Ok(s.tile_addrs),
            _ => Ok(None),
        })?;
        id.map(|e| expr_obj(py, &self.m, e)).transpose()
    }

    #[getter]
    fn block_addrs<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let id = self.with(py, |_, a| match a {
            Argument::Symbolic(s) => Ok(s.block_addrs),
            _ => Ok(None),
        })?;
        id.map(|e| expr_obj(py, &self.m, e)).transpose()
    }

    /// `imm_value` value (None otherwise).
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with(py, |_, a| match a {
            Argument::Imm { value, .. } => Ok(Some(value_to_py(py, value)?)),
            _ => other_field(py, a, "value"),
        })
    }

    /// The argument's JSON, as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, |m, a| {
            let v = argument_to_value(&m.ctx, a, 2).py(py)?;
            value_to_py(py, &v)
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, a| {
            Ok(format!(
                "<lncsplit.ArgumentView {} {:?}>",
                a.kind_name(),
                a.memsetref().unwrap_or("")
            ))
        })
    }
}

// ----------------------------------------------------------------- Memory

/// Read-only view of a memory location set (a logical tensor).
#[pyclass(name = "MemoryLocationSetView", module = "lncsplit", frozen)]
pub struct MemoryLocationSetView {
    m: Py<PyBirModule>,
    f: usize,
    s: usize,
}

impl MemoryLocationSetView {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&MemoryLocationSet) -> T) -> PyResult<T> {
        let m = self.m.borrow(py);
        let s = func(&m.inner, self.f)?.allocations.get(self.s).ok_or_else(stale)?;
        Ok(f(s))
    }
}

#[pymethods]
impl MemoryLocationSetView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.name.to_string())
    }

    /// TensorKind name (None when the file gives none).
    #[getter]
    fn kind(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.with(py, |s| s.kind.as_deref().map(str::to_string))
    }

    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.dtype.to_string())
    }

    #[getter]
    fn tensor_shape(&self, py: Python<'_>) -> PyResult<Vec<i64>> {
        self.with(py, |s| s.tensor_shape.clone())
    }

    /// Partition dim (default 0).
    #[getter]
    fn partition_dim(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |s| s.partition_dim())
    }

    /// `Local` (default), `Shared` or `Debug`.
    #[getter]
    fn addr_space(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| s.addr_space.as_deref().unwrap_or("Local").to_string())
    }

    /// `tensor_shape[partition_dim]`.
    #[getter]
    fn partitions(&self, py: Python<'_>) -> PyResult<i64> {
        self.with(py, |s| s.partitions())
    }

    /// dtype size × product of the other dims.
    #[getter]
    fn bytes_per_partition(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |s| s.bytes_per_partition())
    }

    #[getter]
    fn locations(&self, py: Python<'_>) -> PyResult<Vec<MemoryLocationView>> {
        let n = self.with(py, |s| s.locations.len())?;
        Ok((0..n)
            .map(|l| MemoryLocationView {
                m: self.m.clone_ref(py),
                f: self.f,
                s: self.s,
                l,
            })
            .collect())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s| {
            format!("<lncsplit.MemoryLocationSetView {:?} {:?}>", &*s.name, s.tensor_shape)
        })
    }
}

/// View of a memory location; the placement fields are settable (the memory
/// model passes write them).
#[pyclass(name = "MemoryLocationView", module = "lncsplit", frozen)]
pub struct MemoryLocationView {
    m: Py<PyBirModule>,
    f: usize,
    s: usize,
    l: usize,
}

impl MemoryLocationView {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&MemoryLocationSet, &MemoryLocation) -> T) -> PyResult<T> {
        let m = self.m.borrow(py);
        let s = func(&m.inner, self.f)?.allocations.get(self.s).ok_or_else(stale)?;
        let l = s.locations.get(self.l).ok_or_else(stale)?;
        Ok(f(s, l))
    }

    fn with_mut<T>(&self, py: Python<'_>, f: impl FnOnce(&mut MemoryLocation) -> T) -> PyResult<T> {
        let mut m = self.m.borrow_mut(py);
        let l = m
            .inner
            .functions
            .get_mut(self.f)
            .and_then(|f| f.allocations.get_mut(self.s))
            .and_then(|s| s.locations.get_mut(self.l))
            .ok_or_else(stale)?;
        Ok(f(l))
    }
}

#[pymethods]
impl MemoryLocationView {
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, l| l.name.to_string())
    }

    /// `DRAM`, `SB` or `PSUM`.
    #[getter(r#type)]
    fn mem_type(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, l| l.mem_type.to_string())
    }

    /// Name of the memory location set this location belongs to.
    #[getter]
    fn set_name(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |s, _| s.name.to_string())
    }

    #[getter]
    fn addr(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |_, l| l.addr)
    }

    #[setter]
    fn set_addr(&self, py: Python<'_>, v: Option<i64>) -> PyResult<()> {
        self.with_mut(py, |l| l.addr = v)
    }

    #[getter]
    fn bank(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |_, l| l.bank)
    }

    #[setter]
    fn set_bank(&self, py: Python<'_>, v: Option<i64>) -> PyResult<()> {
        self.with_mut(py, |l| l.bank = v)
    }

    #[getter]
    fn base(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.with(py, |_, l| l.base)
    }

    #[setter]
    fn set_base(&self, py: Python<'_>, v: Option<i64>) -> PyResult<()> {
        self.with_mut(py, |l| l.base = v)
    }

    #[getter]
    fn allocated(&self, py: Python<'_>) -> PyResult<Option<bool>> {
        self.with(py, |_, l| l.allocated)
    }

    #[setter]
    fn set_allocated(&self, py: Python<'_>, v: Option<bool>) -> PyResult<()> {
        self.with_mut(py, |l| l.allocated = v)
    }

    #[getter]
    fn is_shared_post_dram_alloc(&self, py: Python<'_>) -> PyResult<Option<bool>> {
        self.with(py, |_, l| l.is_shared_post_dram_alloc)
    }

    #[setter]
    fn set_is_shared_post_dram_alloc(&self, py: Python<'_>, v: Option<bool>) -> PyResult<()> {
        self.with_mut(py, |l| l.is_shared_post_dram_alloc = v)
    }

    #[getter]
    fn written_by_another_core(&self, py: Python<'_>) -> PyResult<Option<bool>> {
        self.with(py, |_, l| l.written_by_another_core)
    }

    /// `{"name": str, "core": int}` or None.
    #[getter]
    fn remote_local_target<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let t = self.with(py, |_, l| l.remote_local_target.clone())?;
        t.map(|t| {
            let d = PyDict::new(py);
            d.set_item("name", &*t.name)?;
            d.set_item("core", t.core)?;
            Ok(d)
        })
        .transpose()
    }

    #[setter]
    fn set_remote_local_target(&self, py: Python<'_>, v: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let t = match v {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => {
                let d = v.cast::<PyDict>().map_err(|_| {
                    PyTypeError::new_err("remote_local_target must be {\"name\": str, \"core\": int} or None")
                })?;
                let name: String = match d.get_item("name")? {
                    Some(n) => n.extract()?,
                    None => return Err(PyValueError::new_err("remote_local_target is missing \"name\"")),
                };
                let core: i64 = match d.get_item("core")? {
                    Some(c) => c.extract()?,
                    None => return Err(PyValueError::new_err("remote_local_target is missing \"core\"")),
                };
                if core < 0 {
                    return Err(PyValueError::new_err(format!(
                        "remote_local_target core {core} must be ≥ 0"
                    )));
                }
                Some(RemoteLocalTarget {
                    name: name.into(),
                    core,
                })
            }
        };
        self.with_mut(py, |l| l.remote_local_target = t)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, l| {
            format!("<lncsplit.MemoryLocationView {:?} {}>", &*l.name, l.mem_type)
        })
    }
}

// ---------------------------------------------------------------- functions

/// Read a module file (the GIL is released while reading and parsing).
#[pyfunction]
fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyBirModule> {
    let m = py.detach(|| crate::bir::read_module(&path)).py(py)?;
    Ok(PyBirModule::new(m))
}

/// Write a module file atomically (temporary file + fsync + rename).
#[pyfunction]
#[pyo3(signature = (module, path, version = 2))]
fn dump(py: Python<'_>, module: PyRef<'_, PyBirModule>, path: PathBuf, version: u32) -> PyResult<()> {
    let m = &module.inner;
    py.detach(|| crate::bir::write_module_atomic(m, &path, version)).py(py)
}

/// A seeded synthetic symbolic module (`lncsplit gen`).
#[pyfunction]
#[pyo3(signature = (seed, instructions, lnc = 2, arch = None, index = 0, racy = false))]
fn generate_module(
    py: Python<'_>,
    seed: u64,
    instructions: usize,
    lnc: i64,
    arch: Option<String>,
    index: usize,
    racy: bool,
) -> PyResult<PyBirModule> {
    let opts = GenOptions {
        seed,
        instructions,
        lnc,
        arch,
        index,
        racy,
    };
    let m = py.detach(|| crate::bir::generate_module(&opts)).py(py)?;
    Ok(PyBirModule::new(m))
}

/// Write a synthetic corpus `dir/gen_0000.json …`; returns the paths.
#[pyfunction]
#[pyo3(signature = (dir, modules, instructions, lnc = 2, seed = 0, racy = false))]
fn generate_corpus(
    py: Python<'_>,
    dir: PathBuf,
    modules: usize,
    instructions: usize,
    lnc: i64,
    seed: u64,
    racy: bool,
) -> PyResult<Vec<PathBuf>> {
    let opts = GenOptions {
        seed,
        instructions,
        lnc,
        racy,
        ..Default::default()
    };
    py.detach(|| crate::bir::generate_corpus_with(&dir, modules, &opts))
        .py(py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBirModule>()?;
    m.add_class::<FunctionView>()?;
    m.add_class::<BlockView>()?;
    m.add_class::<InstructionView>()?;
    m.add_class::<ArgumentView>()?;
    m.add_class::<MemoryLocationSetView>()?;
    m.add_class::<MemoryLocationView>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(dump, m)?)?;
    m.add_function(wrap_pyfunction!(generate_module, m)?)?;
    m.add_function(wrap_pyfunction!(generate_corpus, m)?)?;
    Ok(())
}
