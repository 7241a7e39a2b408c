//! Python bindings of the pelican expression core (`lncsplit.pelican`).
//!
//! Thin by design: every algorithm lives in `crate::pelican`; this file only
//! converts arguments, checks that expressions are not mixed across contexts,
//! and maps errors. Batch calls release the GIL (`py.detach`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};
use serde_json::Value;

use super::convert::{json_to_py, py_to_json};
use crate::error::Error;
use crate::pelican as pel;
use crate::pelican::{AffinePredicate, Bindings, CmpOp, ExprId, ExprKind};

/// Deepest JSON a Python object may have when given to `from_json` (an
/// expression of `MAX_DEPTH` levels is at most two JSON levels per level).
const MAX_JSON_DEPTH: u32 = 2 * pel::MAX_DEPTH + 16;

#[cold]
fn pelican_err(msg: impl Into<String>) -> PyErr {
    Error::pelican(msg, "lncsplit/pelican").into()
}

// ------------------------------------------------------------------ Owner

/// Who owns the arena an [`Expr`] points into: a stand-alone `Context`, or
/// a module (its views hand out expressions of the module's own arena).
pub(crate) enum Owner {
    Ctx(Py<Context>),
    /// An expression of a module's own arena (module views hand these out).
    Module(Py<crate::py::module::PyBirModule>),
}

impl Owner {
    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Owner {
        match self {
            Owner::Ctx(c) => Owner::Ctx(c.clone_ref(py)),
            Owner::Module(m) => Owner::Module(m.clone_ref(py)),
        }
    }

    /// Identity of the owning Python object (context identity).
    pub(crate) fn key(&self) -> usize {
        match self {
            Owner::Ctx(c) => c.as_ptr() as usize,
            Owner::Module(m) => m.as_ptr() as usize,
        }
    }

    pub(crate) fn same(&self, other: &Owner) -> bool {
        self.key() == other.key()
    }

    /// The Python object `Expr.context` returns.
    pub(crate) fn context_object(&self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Owner::Ctx(c) => c.clone_ref(py).into_any(),
            Owner::Module(m) => m.clone_ref(py).into_any(),
        }
    }

    pub(crate) fn with_ctx<R>(&self, py: Python<'_>, f: impl FnOnce(&pel::Context) -> R) -> PyResult<R> {
        match self {
            Owner::Ctx(c) => {
                let guard = c.try_borrow(py)?;
                Ok(f(&guard.inner))
            }
            Owner::Module(m) => {
                let guard = m.try_borrow(py)?;
                Ok(f(&guard.module().ctx))
            }
        }
    }

    pub(crate) fn with_ctx_mut<R>(&self, py: Python<'_>, f: impl FnOnce(&mut pel::Context) -> R) -> PyResult<R> {
        match self {
            Owner::Ctx(c) => {
                let mut guard = c.try_borrow_mut(py)?;
                Ok(f(&mut guard.inner))
            }
            Owner::Module(m) => {
                // Interning appends nodes: every existing id keeps its
                // meaning, so the module's views stay valid.
                let mut guard = m.try_borrow_mut(py)?;
                Ok(f(&mut guard.module_mut_in_place().ctx))
            }
        }
    }

    /// [`Owner::with_ctx`] for a call on expressions up to id `max_id`. The
    /// arena only grows, except that `lncsplit.release` empties a module's:
    /// an expression of a released module raises `IndexError` instead of
    /// reading past the end.
    pub(crate) fn with_expr<R>(
        &self,
        py: Python<'_>,
        max_id: ExprId,
        f: impl FnOnce(&pel::Context) -> R,
    ) -> PyResult<R> {
        self.with_ctx(py, |c| c.contains(max_id).then(|| f(c)))?
            .ok_or_else(released)
    }

    /// [`Owner::with_ctx_mut`] with the check of [`Owner::with_expr`].
    pub(crate) fn with_expr_mut<R>(
        &self,
        py: Python<'_>,
        max_id: ExprId,
        f: impl FnOnce(&mut pel::Context) -> R,
    ) -> PyResult<R> {
        self.with_ctx_mut(py, |c| c.contains(max_id).then(|| f(c)))?
            .ok_or_else(released)
    }

    /// The id of `e` after checking it lives in this owner's context.
    fn id_of(&self, e: &Expr) -> PyResult<ExprId> {
        if self.same(&e.owner) {
            Ok(e.id)
        } else {
            Err(pelican_err("expressions from different contexts cannot be mixed"))
        }
    }
}

pub(crate) fn new_expr(_py: Python<'_>, owner: Owner, id: ExprId) -> Expr {
    Expr { owner, id }
}

// ---------------------------------------------------------------- helpers

fn slice<'a, T: numpy::Element + Copy>(a: &'a PyReadonlyArray1<'_, T>) -> Cow<'a, [T]> {
    match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(a.as_array().iter().copied().collect()),
    }
}

#[cold]
fn released() -> PyErr {
    pyo3::exceptions::PyIndexError::new_err("stale expression: its module was released")
}

#[cold]
fn wire_err(msg: impl Into<String>, path: &str) -> PyErr {
    Error::wire(msg, path).into()
}

/// Python bindings dict → core [`Bindings`]: str keys are axis names (the key
/// `"shard"` binds every ShardId), `Expr` keys bind that index leaf.
fn to_bindings(py: Python<'_>, owner: &Owner, bindings: Option<&Bound<'_, PyAny>>) -> PyResult<Bindings> {
    let mut b = Bindings::default();
    let Some(obj) = bindings else { return Ok(b) };
    if obj.is_none() {
        return Ok(b);
    }
    let d = match obj.cast::<PyDict>() {
        Ok(d) => d.clone(),
        Err(_) => py
            .get_type::<PyDict>()
            .call1((obj,))
            .and_then(|d| Ok(d.cast_into::<PyDict>()?))
            .map_err(|_| PyTypeError::new_err("bindings must be a mapping of str or Expr to int"))?,
    };
    for (k, v) in d.iter() {
        let v: i64 = v.extract()?;
        if let Ok(s) = k.cast::<PyString>() {
            let s = s.to_cow()?;
            if s == "shard" {
                b.shard = Some(v);
            } else {
                b.by_name.insert(s.into_owned(), v);
            }
        } else if let Ok(e) = k.cast::<Expr>() {
            let id = owner.id_of(e.get())?;
            b.by_id.insert(id, v);
        } else {
            return Err(PyTypeError::new_err(format!(
                "binding key {k} must be an axis name (str), \"shard\" or an Expr"
            )));
        }
    }
    Ok(b)
}

// ---------------------------------------------------------------- Context

/// A pelican context: the arena and interner expressions live in.
#[pyclass(subclass, module = "lncsplit._core", name = "Context")]
pub struct Context {
    pub(crate) inner: pel::Context,
}

impl Context {
    fn owner(slf: &Bound<'_, Self>) -> Owner {
        Owner::Ctx(slf.clone().unbind())
    }

    fn id(slf: &Bound<'_, Self>, e: &Bound<'_, Expr>) -> PyResult<ExprId> {
        Self::owner(slf).id_of(e.get())
    }

    fn build(slf: &Bound<'_, Self>, f: impl FnOnce(&mut pel::Context) -> crate::Result<ExprId>) -> PyResult<Expr> {
        let py = slf.py();
        let id = f(&mut slf.try_borrow_mut()?.inner)?;
        Ok(new_expr(py, Self::owner(slf), id))
    }
}

#[pymethods]
impl Context {
    #[new]
    fn new() -> Self {
        Context {
            inner: pel::Context::new(),
        }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("Context({} nodes, {} axes)", self.inner.len(), self.inner.axes().len())
    }

    /// The expression with id `id`.
    fn expr(slf: &Bound<'_, Self>, id: i64) -> PyResult<Expr> {
        let ok = u32::try_from(id)
            .ok()
            .map(ExprId)
            .filter(|&i| slf.borrow().inner.contains(i));
        match ok {
            Some(i) => Ok(new_expr(slf.py(), Self::owner(slf), i)),
            None => Err(pelican_err(format!("unknown expression id {id}"))),
        }
    }

    #[pyo3(signature = (obj, version = 2, axes = None))]
    fn _from_json(
        slf: &Bound<'_, Self>,
        obj: &Bound<'_, PyAny>,
        version: u32,
        axes: Option<HashMap<String, (i64, i64, i64)>>,
    ) -> PyResult<Expr> {
        let value = if let Ok(s) = obj.cast::<PyString>() {
            serde_json::from_str::<Value>(&s.to_cow()?).map_err(|e| wire_err(format!("invalid JSON: {e}"), ""))?
        } else if let Ok(b) = obj.cast::<PyBytes>() {
            serde_json::from_slice::<Value>(b.as_bytes()).map_err(|e| wire_err(format!("invalid JSON: {e}"), ""))?
        } else if let Ok(b) = obj.cast::<PyByteArray>() {
            serde_json::from_slice::<Value>(&b.to_vec()).map_err(|e| wire_err(format!("invalid JSON: {e}"), ""))?
        } else {
            py_to_json(obj, MAX_JSON_DEPTH)?
        };
        let mut table: Vec<(String, i64, i64, i64)> = axes
            .unwrap_or_default()
            .into_iter()
            .map(|(k, (lo, ub, st))| (k, lo, ub, st))
            .collect();
        table.sort();
        Self::build(slf, |c| {
            for (name, lo, ub, step) in &table {
                c.free_axis(name, *lo, *ub, *step)?;
            }
            c.from_json(&value, version, &mut pel::ContextScope { axes: &table })
        })
    }

    fn shard_id(slf: &Bound<'_, Self>, ub: i64) -> PyResult<Expr> {
        Self::build(slf, |c| c.shard_id(ub))
    }

    /// A new loop axis and its AffineIV (every call is a distinct axis).
    fn affine_iv(slf: &Bound<'_, Self>, name: &str, lo: i64, ub: i64, step: i64) -> PyResult<Expr> {
        Self::build(slf, |c| {
            let a = c.add_axis(name, lo, ub, step)?;
            c.affine_iv(a)
        })
    }

    fn int_runtime_value(slf: &Bound<'_, Self>, regref: &str) -> PyResult<Expr> {
        Self::build(slf, |c| c.int_runtime_value(regref))
    }

    fn cc_get_rank(slf: &Bound<'_, Self>, iteration_id: i64, channel_id: i64) -> PyResult<Expr> {
        Self::build(slf, |c| c.cc_get_rank(iteration_id, channel_id))
    }

    fn indirect_arg(slf: &Bound<'_, Self>, arg_id: i64) -> PyResult<Expr> {
        Self::build(slf, |c| c.indirect_arg(arg_id))
    }

    #[pyo3(signature = (lo, ub, step, offset = 0))]
    fn symbolic_idx(slf: &Bound<'_, Self>, lo: i64, ub: i64, step: i64, offset: i64) -> PyResult<Expr> {
        Self::build(slf, |c| c.symbolic_idx(lo, ub, step, offset))
    }

    #[pyo3(signature = (lo, ub, step, stride, inner = None))]
    fn ap_index(
        slf: &Bound<'_, Self>,
        lo: i64,
        ub: i64,
        step: i64,
        stride: i64,
        inner: Option<Bound<'_, Expr>>,
    ) -> PyResult<Expr> {
        let inner = inner.map(|e| Self::id(slf, &e)).transpose()?;
        Self::build(slf, |c| c.ap_index(lo, ub, step, stride, inner))
    }

    #[pyo3(signature = (child, tile_size, is_partition = false, tile_pos_flags = 0))]
    fn tiled_ap_index(
        slf: &Bound<'_, Self>,
        child: Bound<'_, Expr>,
        tile_size: i64,
        is_partition: bool,
        tile_pos_flags: i64,
    ) -> PyResult<Expr> {
        let child = Self::id(slf, &child)?;
        Self::build(slf, |c| {
            c.tiled_ap_index(child, tile_pos_flags, tile_size, is_partition)
        })
    }

    #[pyo3(signature = (terms, c = 0))]
    fn aff_expr(slf: &Bound<'_, Self>, terms: Vec<(Bound<'_, Expr>, i64)>, c: i64) -> PyResult<Expr> {
        let terms = terms
            .iter()
            .map(|(e, k)| Ok((Self::id(slf, e)?, *k)))
            .collect::<PyResult<Vec<_>>>()?;
        Self::build(slf, |ctx| ctx.aff_expr(&terms, c))
    }

    fn constant(slf: &Bound<'_, Self>, c: i64) -> PyResult<Expr> {
        Self::build(slf, |ctx| ctx.aff_expr(&[], c))
    }

    fn sum(slf: &Bound<'_, Self>, terms: Vec<Bound<'_, Expr>>) -> PyResult<Expr> {
        let terms = terms.iter().map(|e| Self::id(slf, e)).collect::<PyResult<Vec<_>>>()?;
        Self::build(slf, |c| c.sum(&terms))
    }

    fn mult(slf: &Bound<'_, Self>, var: Bound<'_, Expr>, scale: i64) -> PyResult<Expr> {
        let var = Self::id(slf, &var)?;
        Self::build(slf, |c| c.mult(var, scale))
    }

    fn floordiv(slf: &Bound<'_, Self>, numer: Bound<'_, Expr>, denom: i64) -> PyResult<Expr> {
        let numer = Self::id(slf, &numer)?;
        Self::build(slf, |c| c.floor_div(numer, denom))
    }

    fn modulo(slf: &Bound<'_, Self>, numer: Bound<'_, Expr>, denom: i64) -> PyResult<Expr> {
        let numer = Self::id(slf, &numer)?;
        Self::build(slf, |c| c.modulo(numer, denom))
    }

    #[pyo3(signature = (numer, denom, replica_groups_id = 0))]
    fn ccdiv(slf: &Bound<'_, Self>, numer: Bound<'_, Expr>, denom: i64, replica_groups_id: u64) -> PyResult<Expr> {
        let numer = Self::id(slf, &numer)?;
        Self::build(slf, |c| c.cc_div(numer, denom, replica_groups_id))
    }

    #[pyo3(signature = (numer, denom, replica_groups_id = 0))]
    fn ccmod(slf: &Bound<'_, Self>, numer: Bound<'_, Expr>, denom: i64, replica_groups_id: u64) -> PyResult<Expr> {
        let numer = Self::id(slf, &numer)?;
        Self::build(slf, |c| c.cc_mod(numer, denom, replica_groups_id))
    }

    /// ICmp (kind 20); `op` is one of eq, ne, slt, sle, sgt, sge.
    fn icmp(slf: &Bound<'_, Self>, op: &str, lhs: Bound<'_, Expr>, rhs: Bound<'_, Expr>) -> PyResult<Expr> {
        let Some(op) = CmpOp::from_name(op) else {
            return Err(pelican_err(format!(
                "unknown comparison {op:?}: expected eq, ne, slt, sle, sgt or sge"
            )));
        };
        let (l, r) = (Self::id(slf, &lhs)?, Self::id(slf, &rhs)?);
        Self::build(slf, |c| c.icmp(op, l, r))
    }

    fn opaque_fn(slf: &Bound<'_, Self>, name: &str, args: Vec<Bound<'_, Expr>>) -> PyResult<Expr> {
        let args = args.iter().map(|e| Self::id(slf, e)).collect::<PyResult<Vec<_>>>()?;
        Self::build(slf, |c| c.opaque_fn(name, &args))
    }

    /// Intern many nodes at once (row encoding in `lncsplit.pelican` docs);
    /// returns one id per row (argument rows: 0xFFFFFFFF). GIL released.
    fn intern_batch<'py>(
        slf: &Bound<'py, Self>,
        ops: PyReadonlyArray1<'py, u8>,
        a: PyReadonlyArray1<'py, i64>,
        b: PyReadonlyArray1<'py, i64>,
        c: PyReadonlyArray1<'py, i64>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let py = slf.py();
        let (ops, a, b, c) = (slice(&ops), slice(&a), slice(&b), slice(&c));
        let mut guard = slf.try_borrow_mut()?;
        let inner = &mut guard.inner;
        let ids = py.detach(|| inner.intern_batch(&ops, &a, &b, &c))?;
        Ok(PyArray1::from_vec(py, ids))
    }
}

// ------------------------------------------------------------------- Expr

/// One interned expression: a context and a node id.
#[pyclass(frozen, module = "lncsplit._core", name = "Expr")]
pub struct Expr {
    pub(crate) owner: Owner,
    pub(crate) id: ExprId,
}

impl Expr {
    fn sibling(&self, py: Python<'_>, id: ExprId) -> Expr {
        new_expr(py, self.owner.clone_ref(py), id)
    }

    fn kind_enum(&self, py: Python<'_>) -> PyResult<ExprKind> {
        self.owner.with_expr(py, self.id, |c| c.kind(self.id))
    }
}

#[pymethods]
impl Expr {
    #[getter]
    fn id(&self) -> u32 {
        self.id.0
    }

    #[getter]
    fn kind(&self, py: Python<'_>) -> PyResult<u8> {
        Ok(self.kind_enum(py)? as u8)
    }

    #[getter]
    fn kind_name(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(self.kind_enum(py)?.name())
    }

    #[getter]
    fn context(&self, py: Python<'_>) -> Py<PyAny> {
        self.owner.context_object(py)
    }

    #[getter]
    fn children(&self, py: Python<'_>) -> PyResult<Vec<Expr>> {
        let ids = self.owner.with_expr(py, self.id, |c| c.node(self.id).children())?;
        Ok(ids.into_iter().map(|i| self.sibling(py, i)).collect())
    }

    #[getter]
    fn has_shard(&self, py: Python<'_>) -> PyResult<bool> {
        self.owner.with_expr(py, self.id, |c| c.has_shard(self.id))
    }

    #[getter]
    fn has_runtime(&self, py: Python<'_>) -> PyResult<bool> {
        self.owner.with_expr(py, self.id, |c| c.has_runtime(self.id))
    }

    #[getter]
    fn is_index(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.kind_enum(py)?.is_index_leaf())
    }

    #[getter]
    fn trip_count(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.owner.with_expr(py, self.id, |c| c.trip_count(self.id))
    }

    #[getter]
    fn infimum(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.owner.with_expr(py, self.id, |c| c.infimum(self.id))
    }

    #[getter]
    fn supremum(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        self.owner.with_expr(py, self.id, |c| c.supremum(self.id))
    }

    #[pyo3(signature = (version = 2))]
    fn to_json(&self, py: Python<'_>, version: u32) -> PyResult<Py<PyAny>> {
        let v = self.owner.with_expr(py, self.id, |c| c.to_json(self.id, version))??;
        Ok(json_to_py(py, &v)?.unbind())
    }

    #[pyo3(signature = (bindings = None))]
    fn eval(&self, py: Python<'_>, bindings: Option<&Bound<'_, PyAny>>) -> PyResult<Option<i64>> {
        let b = to_bindings(py, &self.owner, bindings)?;
        Ok(self
            .owner
            .with_expr(py, self.id, |c| c.check_bindings(&b).and_then(|_| c.eval(self.id, &b)))??)
    }

    fn update_shard_id(&self, py: Python<'_>, core: i64) -> PyResult<Expr> {
        let id = self
            .owner
            .with_expr_mut(py, self.id, |c| c.update_shard_id(self.id, core))??;
        Ok(self.sibling(py, id))
    }

    fn is_legal_delinearized_address(
        &self,
        py: Python<'_>,
        axis: i64,
        is_partition_dim: bool,
        require_pred: bool,
    ) -> PyResult<bool> {
        Ok(self.owner.with_expr(py, self.id, |c| {
            c.is_legal_delinearized_address(self.id, axis, is_partition_dim, require_pred)
        })??)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<Expr>() {
            Ok(o) => {
                let o = o.get();
                o.id == self.id && o.owner.same(&self.owner)
            }
            Err(_) => false,
        }
    }

    fn __hash__(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.owner.key(), self.id).hash(&mut h);
        h.finish()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.owner.with_expr(py, self.id, |c| {
            let k = c.kind(self.id);
            format!("Expr(#{} {}: {})", self.id, k.name(), c.display(self.id, 200))
        })
    }
}

// -------------------------------------------------------------- Predicate

/// An affine predicate: `expr >= 0` (`ge=True`) or `expr == 0`.
#[pyclass(frozen, module = "lncsplit._core", name = "Predicate")]
pub struct Predicate {
    expr: Py<Expr>,
    ge: bool,
}

/// A predicate over an expression of `owner` (module views use this).
pub(crate) fn new_predicate(py: Python<'_>, owner: Owner, id: ExprId, ge: bool) -> PyResult<Predicate> {
    Ok(Predicate {
        expr: Py::new(py, new_expr(py, owner, id))?,
        ge,
    })
}

#[pymethods]
impl Predicate {
    #[new]
    #[pyo3(signature = (expr, ge = true))]
    fn new(expr: Bound<'_, Expr>, ge: bool) -> Self {
        Predicate {
            expr: expr.unbind(),
            ge,
        }
    }

    #[getter]
    fn expr(&self, py: Python<'_>) -> Py<Expr> {
        self.expr.clone_ref(py)
    }

    #[getter]
    fn ge(&self) -> bool {
        self.ge
    }

    #[pyo3(signature = (bindings = None))]
    fn eval(&self, py: Python<'_>, bindings: Option<&Bound<'_, PyAny>>) -> PyResult<Option<bool>> {
        let e = self.expr.get();
        let b = to_bindings(py, &e.owner, bindings)?;
        let p = AffinePredicate {
            expr: e.id,
            ge: self.ge,
        };
        Ok(e.owner
            .with_expr(py, e.id, |c| c.check_bindings(&b).and_then(|_| p.eval(c, &b)))??)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<Predicate>() {
            Ok(o) => {
                let o = o.get();
                o.ge == self.ge && o.expr.get().__eq__(self.expr.bind(other.py()).as_any())
            }
            Err(_) => false,
        }
    }

    fn __hash__(&self) -> u64 {
        self.expr.get().__hash__() ^ (self.ge as u64)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let e = self.expr.get();
        let text = e.owner.with_expr(py, e.id, |c| c.display(e.id, 200))?;
        Ok(format!("Predicate({text} {} 0)", if self.ge { ">=" } else { "==" }))
    }
}

/// The shared owner of a predicate list (None when empty), checking that no
/// two predicates come from different contexts.
fn predicate_owner(py: Python<'_>, preds: &[Bound<'_, Predicate>]) -> PyResult<Option<(Owner, Vec<AffinePredicate>)>> {
    let Some(first) = preds.first() else {
        return Ok(None);
    };
    let owner = first.get().expr.get().owner.clone_ref(py);
    let mut out = Vec::with_capacity(preds.len());
    for p in preds {
        let p = p.get();
        let e = p.expr.get();
        out.push(AffinePredicate {
            expr: owner.id_of(e)?,
            ge: p.ge,
        });
    }
    Ok(Some((owner, out)))
}

/// The largest expression id of a predicate list (they share one owner).
fn max_expr(preds: &[AffinePredicate]) -> ExprId {
    preds.iter().map(|p| p.expr).max().unwrap_or(ExprId(0))
}

/// Conjunction of the predicates under `bindings`: 0 iff one is false.
#[pyfunction]
#[pyo3(signature = (predicates, bindings = None))]
pub(crate) fn eval_mask(
    py: Python<'_>,
    predicates: Vec<Bound<'_, Predicate>>,
    bindings: Option<&Bound<'_, PyAny>>,
) -> PyResult<u8> {
    let Some((owner, preds)) = predicate_owner(py, &predicates)? else {
        return Ok(1);
    };
    let b = to_bindings(py, &owner, bindings)?;
    Ok(owner.with_expr(py, max_expr(&preds), |c| {
        c.check_bindings(&b).and_then(|_| pel::eval_mask(c, &preds, &b))
    })??)
}

/// `eval_mask` with the shard bound to each core id in turn. GIL released.
#[pyfunction]
#[pyo3(signature = (predicates, core_ids, bindings = None))]
pub(crate) fn eval_mask_batch<'py>(
    py: Python<'py>,
    predicates: Vec<Bound<'py, Predicate>>,
    core_ids: PyReadonlyArray1<'py, i64>,
    bindings: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let cores = slice(&core_ids);
    let Some((owner, preds)) = predicate_owner(py, &predicates)? else {
        return Ok(PyArray1::from_vec(py, vec![1u8; cores.len()]));
    };
    let b = to_bindings(py, &owner, bindings)?;
    let masks = owner.with_expr(py, max_expr(&preds), |c| {
        c.check_bindings(&b)?;
        py.detach(|| pel::eval_mask_batch(c, &preds, &b, &cores))
    })??;
    Ok(PyArray1::from_vec(py, masks))
}
