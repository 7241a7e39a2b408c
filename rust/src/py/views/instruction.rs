//! `InstructionView` and `ArgumentView`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::{argument_memref, resolve_inst, BlockView, ModuleRef};
use crate::bir::dump::{argument_to_value, instruction_to_value};
use crate::bir::{Argument, Instruction, Module, OpFields};
use crate::pelican::ExprId;
use crate::py::convert::json_to_py;

/// Which argument list of an instruction an [`ArgumentView`] indexes.
#[derive(Clone, Copy)]
enum ArgList {
    Ins,
    Outs,
    IndirectionIns,
}

impl ArgList {
    fn of(self, i: &Instruction) -> &[Argument] {
        match self {
            ArgList::Ins => &i.ins,
            ArgList::Outs => &i.outs,
            ArgList::IndirectionIns => i.indirection_ins.as_deref().unwrap_or(&[]),
        }
    }
}

/// Read-only view of one instruction.
#[pyclass(name = "InstructionView", module = "lncsplit", frozen)]
pub struct InstructionView {
    m: ModuleRef,
    f: usize,
    path: Vec<(u32, u32)>,
}

impl InstructionView {
    pub(crate) fn new(m: ModuleRef, f: usize, path: Vec<(u32, u32)>) -> Self {
        InstructionView { m, f, path }
    }

    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&Module, &Instruction) -> PyResult<T>) -> PyResult<T> {
        let m = self.m.get(py)?;
        let i = resolve_inst(m.module(), self.f, &self.path)?;
        f(m.module(), i)
    }

    fn args(&self, py: Python<'_>, list: ArgList) -> PyResult<Vec<ArgumentView>> {
        let n = self.with(py, |_, i| Ok(list.of(i).len()))?;
        Ok((0..n)
            .map(|a| ArgumentView {
                m: self.m.child(py),
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
        self.with(py, |_, i| Ok(i.name.to_string()))
    }

    /// InstructionType name.
    #[getter]
    fn opcode(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.with(py, |_, i| Ok(i.opcode.name()))
    }

    /// InstructionType ordinal (neuronx-facts §3.5).
    #[getter]
    fn opcode_code(&self, py: Python<'_>) -> PyResult<u8> {
        self.with(py, |_, i| Ok(i.opcode.0))
    }

    /// The engine (`Unassigned` when the file gives none).
    #[getter]
    fn engine(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, i| Ok(i.engine.as_deref().unwrap_or("Unassigned").to_string()))
    }

    #[getter]
    fn ins(&self, py: Python<'_>) -> PyResult<Vec<ArgumentView>> {
        self.args(py, ArgList::Ins)
    }

    #[getter]
    fn outs(&self, py: Python<'_>) -> PyResult<Vec<ArgumentView>> {
        self.args(py, ArgList::Outs)
    }

    #[getter]
    fn indirection_ins(&self, py: Python<'_>) -> PyResult<Vec<ArgumentView>> {
        self.args(py, ArgList::IndirectionIns)
    }

    /// The affine predicates, as `lncsplit.pelican.Predicate`s over the
    /// module's expressions (`.expr`, `.ge`, `.eval(bindings)`).
    #[getter]
    fn predicates<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let preds: Vec<(ExprId, bool)> =
            self.with(py, |_, i| Ok(i.predicates.iter().map(|p| (p.expr, p.ge)).collect()))?;
        let l = PyList::empty(py);
        for (e, ge) in preds {
            l.append(self.m.predicate(py, e, ge)?)?;
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
        self.with(py, |m, i| Ok(crate::pelican::eval_mask(&m.ctx, &i.predicates, &b)?))
    }

    /// `[(name, kind or None), …]`.
    #[getter]
    fn dependencies<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        self.with(py, |_, i| {
            i.dependencies
                .iter()
                .flatten()
                .map(|d| {
                    let k = match &d.kind {
                        Some(k) => json_to_py(py, k)?,
                        None => py.None().into_bound(py),
                    };
                    Ok((d.name.to_string(), k))
                })
                .collect()
        })
    }

    /// A Loop's body blocks (empty for other opcodes).
    #[getter]
    fn blocks(&self, py: Python<'_>) -> PyResult<Vec<BlockView>> {
        let n = self.with(py, |_, i| Ok(i.nested_blocks().len()))?;
        Ok((0..n)
            .map(|b| BlockView::new(self.m.child(py), self.f, self.path.clone(), b as u32))
            .collect())
    }

    /// A Loop's axis `{"name", "lo", "ub", "step"}`, else None.
    #[getter]
    fn axis<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.with(py, |m, i| {
            let OpFields::Loop { axis, .. } = &i.op else {
                return Ok(None);
            };
            let a = m.ctx.axis(*axis);
            let d = PyDict::new(py);
            d.set_item("name", &*a.name)?;
            d.set_item("lo", a.lo)?;
            d.set_item("ub", a.ub)?;
            d.set_item("step", a.step)?;
            Ok(Some(d))
        })
    }

    /// The op-specific keys as JSON (a Loop's `axis`, CoreBarrier `id`/
    /// `cores`/`runtime_semaphore`, CollectiveCompute `cc_channel`/ranks/
    /// `queue`, Matmult `replication_*`, DMACopy `mode`) and every key
    /// lncsplit does not model, in file order. A Loop's body is `.blocks`.
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // The instruction's own JSON minus the common keys: one writer
        // (bir::dump) decides how op-specific fields look.
        self.with(py, |m, i| {
            let mut v = instruction_to_value(&m.ctx, i, 2)?;
            if let Some(o) = v.as_object_mut() {
                o.retain(|k, _| !COMMON_KEYS.contains(&k.as_str()));
            }
            json_to_py(py, &v)
        })
    }

    /// The instruction's JSON (what `to_json` writes for it), as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, |m, i| json_to_py(py, &instruction_to_value(&m.ctx, i, 2)?))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |_, i| {
            Ok(format!("<lncsplit.InstructionView {:?} {}>", &*i.name, i.opcode.name()))
        })
    }
}

/// Read-only view of one instruction argument.
#[pyclass(name = "ArgumentView", module = "lncsplit", frozen)]
pub struct ArgumentView {
    m: ModuleRef,
    f: usize,
    path: Vec<(u32, u32)>,
    list: ArgList,
    a: usize,
}

impl ArgumentView {
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&Module, &Argument) -> PyResult<T>) -> PyResult<T> {
        let m = self.m.get(py)?;
        let i = resolve_inst(m.module(), self.f, &self.path)?;
        let a = self.list.of(i).get(self.a).ok_or_else(super::stale)?;
        f(m.module(), a)
    }

    /// The argument's expression ids, read out so Python objects can be made
    /// without holding the module borrowed.
    fn expr_ids(
        &self,
        py: Python<'_>,
        pick: impl FnOnce(&crate::bir::SymbolicAp) -> Vec<ExprId>,
    ) -> PyResult<Vec<ExprId>> {
        self.with(py, |_, a| match a {
            Argument::Symbolic(s) => Ok(pick(s)),
            _ => Ok(Vec::new()),
        })
    }
}

fn other_field<'py>(py: Python<'py>, a: &Argument, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    match a {
        Argument::Other { fields, .. } => fields.get(key).map(|v| json_to_py(py, v)).transpose(),
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
        self.with(py, |_, a| Ok(argument_memref(a).map(str::to_string)))
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
        let ids = self.expr_ids(py, |s| s.addrs.to_vec())?;
        let l = PyList::empty(py);
        for e in ids {
            l.append(self.m.expr(py, e)?)?;
        }
        Ok(l)
    }

    #[getter]
    fn tile_addrs<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ids = self.expr_ids(py, |s| s.tile_addrs.into_iter().collect())?;
        ids.first().map(|&e| self.m.expr(py, e)).transpose()
    }

    #[getter]
    fn block_addrs<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ids = self.expr_ids(py, |s| s.block_addrs.into_iter().collect())?;
        ids.first().map(|&e| self.m.expr(py, e)).transpose()
    }

    /// `imm_value` value (None otherwise).
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with(py, |_, a| match a {
            Argument::Imm { value, .. } => Ok(Some(json_to_py(py, value)?)),
            _ => other_field(py, a, "value"),
        })
    }

    /// The argument's JSON, as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, |m, a| json_to_py(py, &argument_to_value(&m.ctx, a, 2)?))
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
