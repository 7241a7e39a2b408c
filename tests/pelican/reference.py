"""A small pure-Python reference for pelican expressions.

Trees are tuples:

- ``("iv", name)``, ``("shard",)``, ``("rt", reg)``, ``("rank", it, ch)`` — leaves
- ``("aff", ((leaf, coeff), ...), c)`` — c + Σ coeff·leaf
- ``("sum", (child, ...))``, ``("mult", child, k)``
- ``("fdiv" | "mod" | "ccdiv" | "ccmod", child, denom)``

``evaluate`` returns an int or None (undecided); ``build`` makes the same
expression in a :class:`lncsplit.pelican.Context`; ``canonical`` is the
structural identity the interner must implement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from lncsplit import pelican

Tree = tuple[Any, ...]
AXES: dict[str, tuple[int, int, int]] = {"i": (0, 8, 1), "j": (2, 14, 3), "k": (-4, 4, 2)}
SHARD_UB = 4


def axis_values(name: str) -> list[int]:
    lo, ub, step = AXES[name]
    return list(range(lo, ub, step))


def evaluate(t: Tree, env: Mapping[str, int]) -> int | None:  # noqa: C901, PLR0912
    """Reference semantics (contract §2.3): runtime values undecided, unbound
    index undecided, Euclidean modulo, floor division."""
    op = t[0]
    if op == "iv":
        if t[1] not in env:
            return None
        v = env[t[1]]
        if v not in axis_values(t[1]):
            raise ValueError(f"binding {v} for axis {t[1]} out of range")
        return v
    if op == "shard":
        if "shard" not in env:
            return None
        v = env["shard"]
        if not 0 <= v < SHARD_UB:
            raise ValueError("shard out of range")
        return v
    if op in ("rt", "rank"):
        return None
    if op == "aff":
        # canonical form: a leaf's coefficients merge; zero terms do not exist
        merged: Counter[Tree] = Counter()
        for leaf, k in t[1]:
            merged[leaf] += k
        vals = [(evaluate(leaf, env), k) for leaf, k in merged.items() if k != 0]
        if any(v is None for v, _ in vals):
            return None
        return t[2] + sum(k * v for v, k in vals if v is not None)
    if op == "sum":
        vs = [evaluate(c, env) for c in t[1]]
        if any(v is None for v in vs):
            return None
        return sum(v for v in vs if v is not None)
    v = evaluate(t[1], env)
    if v is None:
        return None
    if op == "mult":
        return int(v * t[2])
    if op in ("fdiv", "ccdiv"):
        return v // t[2]  # Python floors toward −∞
    if op in ("mod", "ccmod"):
        return v % t[2]  # Python's % is Euclidean for a positive divisor
    raise AssertionError(op)


def build(ctx: pelican.Context, t: Tree, leaves: dict[Tree, pelican.Expr]) -> pelican.Expr:  # noqa: C901, PLR0912
    op = t[0]
    if op in ("iv", "shard", "rt", "rank"):
        if t not in leaves:
            if op == "iv":
                lo, ub, step = AXES[t[1]]
                leaves[t] = ctx.affine_iv(t[1], lo, ub, step)
            elif op == "shard":
                leaves[t] = ctx.shard_id(SHARD_UB)
            elif op == "rt":
                leaves[t] = ctx.int_runtime_value(t[1])
            else:
                leaves[t] = ctx.cc_get_rank(t[1], t[2])
        return leaves[t]
    if op == "aff":
        return ctx.aff_expr([(build(ctx, leaf, leaves), k) for leaf, k in t[1]], t[2])
    if op == "sum":
        return ctx.sum([build(ctx, c, leaves) for c in t[1]])
    child = build(ctx, t[1], leaves)
    if op == "mult":
        return ctx.mult(child, t[2])
    if op == "fdiv":
        return ctx.floordiv(child, t[2])
    if op == "mod":
        return ctx.modulo(child, t[2])
    if op == "ccdiv":
        return ctx.ccdiv(child, t[2])
    if op == "ccmod":
        return ctx.ccmod(child, t[2])
    raise AssertionError(op)


def canonical(t: Tree) -> Any:
    """Structural identity after canonicalization: AffExpr terms merged by
    leaf with zero coefficients dropped, term order irrelevant for AffExpr and
    Sum; nothing else rewritten."""
    op = t[0]
    if op == "aff":
        acc: Counter[Tree] = Counter()
        for leaf, k in t[1]:
            acc[leaf] += k
        return ("aff", frozenset((leaf, k) for leaf, k in acc.items() if k != 0), t[2])
    if op == "sum":
        return ("sum", frozenset(Counter(canonical(c) for c in t[1]).items()))
    if op in ("mult", "fdiv", "mod", "ccdiv", "ccmod"):
        return (op, canonical(t[1]), t[2])
    return t


def writable(t: Tree) -> bool:
    """Whether the v2 wire can carry the tree (CCMod has no wire form)."""
    if t[0] == "ccmod":
        return False
    if t[0] == "aff":
        return True
    if t[0] == "sum":
        return all(writable(c) for c in t[1])
    if t[0] in ("mult", "fdiv", "mod", "ccdiv"):
        return writable(t[1])
    return True
