//! Bindings for inspecting a split (`lncsplit.explain`, `lncsplit.diff`, the
//! HTML report): the pelican display form of an expression and the loop axes
//! it still depends on. Thin: the walks live in `crate::pelican`.

use pyo3::prelude::*;

use super::pelican::Expr;

/// The pelican display form of `expr` (what `repr(expr)` shows after the
/// kind), cut at about `budget` characters.
#[pyfunction]
#[pyo3(signature = (expr, budget = 200))]
pub(crate) fn expr_str(py: Python<'_>, expr: &Bound<'_, Expr>, budget: usize) -> PyResult<String> {
    let e = expr.get();
    e.owner.with_ctx(py, |c| c.display(e.id, budget))
}

/// `(axes, runtime, shard)`: the names of the loop axes `expr` depends on
/// (first-seen order), whether it reads a runtime value, and whether a
/// ShardId is still in it.
#[pyfunction]
pub(crate) fn expr_free_vars(py: Python<'_>, expr: &Bound<'_, Expr>) -> PyResult<(Vec<String>, bool, bool)> {
    let e = expr.get();
    e.owner.with_ctx(py, |c| {
        let fv = c.free_vars(e.id);
        let axes = fv.axes.iter().map(|a| c.axis(*a).name.to_string()).collect();
        (axes, fv.runtime, fv.shard)
    })
}
