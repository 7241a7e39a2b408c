"""Per-core integers as pelican expressions of the shard (contract §3.9: shard expressions).

A value that differs from core to core (a tile offset, a dynamic-slice start, a collective's
peer) is known here as a table ``values[c]`` for c in 0…N−1. :func:`table_expression` writes it
as one expression of ``ShardId(ub = N)``: the digit-linear form of §3.5 when it fits (every iota
sharding's offsets do), otherwise the step sum

    f(s) = f(0) + Σ_{c=1}^{N−1} (f(c) − f(c−1)) · ⌊(s + N − c) / N⌋

— ``⌊(s + N − c)/N⌋`` is 1 exactly when s ≥ c (0 ≤ s < N), so the sum telescopes to f(s) for
every core, for any table. One instruction then serves every core, and the split binds the
shard and folds the expression to the core's number.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..lowering import offset_expression
from .builder import JsonDict, const_expr

__all__ = ["member_predicates", "shard_affine", "table_expression"]


def _shard(n: int) -> JsonDict:
    return {"kind": "ShardIDKind", "ub": n}


def shard_affine(n: int, coeff: int, c: int) -> JsonDict:
    """``coeff·shard + c``."""
    terms = [{"idx": _shard(n), "coeff": int(coeff)}] if coeff else []
    return {"kind": "AffExprKind", "terms": terms, "c": int(c)}


def table_expression(values: Sequence[int]) -> JsonDict:
    """An expression of the shard (``ub = len(values)``) equal to ``values[c]`` on core c."""
    vals = [int(v) for v in values]
    n = len(vals)
    if n == 1 or all(v == vals[0] for v in vals):
        return const_expr(vals[0])
    fit = offset_expression(vals)
    if fit is not None:
        return fit
    parts: list[JsonDict] = []
    for c in range(1, n):
        delta = vals[c] - vals[c - 1]
        if delta == 0:
            continue
        step: JsonDict = {"kind": "FloorDivKind", "numer": shard_affine(n, 1, n - c), "denom": n}
        if delta != 1:
            step = {"kind": "MultKind", "var": step, "scale": delta}
        parts.append(step)
    if vals[0] != 0:
        parts.append(const_expr(vals[0]))
    if len(parts) == 1:
        return parts[0]
    return {"kind": "SumKind", "n_terms": len(parts), "terms": parts}


def member_predicates(members: Sequence[int], n: int) -> list[JsonDict]:
    """Predicates true exactly on the cores in ``members`` ([] when every core is one)."""
    mem = sorted(set(members))
    if mem == list(range(n)):
        return []
    if len(mem) == 1:
        return [{"expr": shard_affine(n, 1, -mem[0]), "ge": False}]
    lo, hi = mem[0], mem[-1]
    if mem == list(range(lo, hi + 1)):
        preds: list[JsonDict] = []
        if lo > 0:
            preds.append({"expr": shard_affine(n, 1, -lo), "ge": True})
        if hi < n - 1:
            preds.append({"expr": shard_affine(n, -1, hi), "ge": True})
        return preds
    outside = [0 if c in mem else 1 for c in range(n)]
    return [{"expr": table_expression(outside), "ge": False}]
