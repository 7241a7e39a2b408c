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
from collections.abc import Callable, Mapping
from typing import Any

from lncsplit import pelican

Tree = tuple[Any, ...]
AXES: dict[str, tuple[int, int, int]] = {"i": (0, 8, 1), "j": (2, 14, 3), "k": (-4, 4, 2)}
SHARD_UB = 4


def axis_values(name: str) -> list[int]:
    lo, ub, step = AXES[name]
    return list(range(lo, ub, step))


def _evaluate_leaf(t: Tree, env: Mapping[str, int]) -> int | None:
    op = t[0]
    if op in ("rt", "rank"):
        return None
    key = t[1] if op == "iv" else "shard"
    if key not in env:
        return None
    v = env[key]
    if op == "iv" and v not in axis_values(key):
        raise ValueError(f"binding {v} for axis {key} out of range")
    if op == "shard" and not 0 <= v < SHARD_UB:
        raise ValueError("shard out of range")
    return v


def _evaluate_aff(t: Tree, env: Mapping[str, int]) -> int | None:
    # canonical form: a leaf's coefficients merge; zero terms do not exist
    merged: Counter[Tree] = Counter()
    for leaf, k in t[1]:
        merged[leaf] += k
    vals = [(evaluate(leaf, env), k) for leaf, k in merged.items() if k != 0]
    if any(v is None for v, _ in vals):
        return None
    return int(t[2]) + sum(k * v for v, k in vals if v is not None)


def _evaluate_sum(t: Tree, env: Mapping[str, int]) -> int | None:
    vs = [evaluate(c, env) for c in t[1]]
    if any(v is None for v in vs):
        return None
    return sum(v for v in vs if v is not None)


#: The one-child nodes: value of the child, the node's constant → value.
_UNARY: dict[str, Callable[[int, int], int]] = {
    "mult": lambda v, k: int(v * k),
    "fdiv": lambda v, k: v // k,  # Python floors toward −∞
    "ccdiv": lambda v, k: v // k,
    "mod": lambda v, k: v % k,  # Python's % is Euclidean for a positive divisor
    "ccmod": lambda v, k: v % k,
}


def evaluate(t: Tree, env: Mapping[str, int]) -> int | None:
    """Reference semantics (contract §2.3): runtime values undecided, unbound
    index undecided, Euclidean modulo, floor division."""
    op = t[0]
    if op in LEAVES:
        return _evaluate_leaf(t, env)
    if op == "aff":
        return _evaluate_aff(t, env)
    if op == "sum":
        return _evaluate_sum(t, env)
    if op not in _UNARY:
        raise AssertionError(op)
    v = evaluate(t[1], env)
    return None if v is None else _UNARY[op](v, t[2])


LEAVES = ("iv", "shard", "rt", "rank")


def _build_leaf(ctx: pelican.Context, t: Tree) -> pelican.Expr:
    op = t[0]
    if op == "iv":
        lo, ub, step = AXES[t[1]]
        return ctx.affine_iv(t[1], lo, ub, step)
    if op == "shard":
        return ctx.shard_id(SHARD_UB)
    if op == "rt":
        return ctx.int_runtime_value(t[1])
    return ctx.cc_get_rank(t[1], t[2])


#: The one-child nodes: the factory of each.
_UNARY_BUILD: dict[str, Callable[[pelican.Context, pelican.Expr, int], pelican.Expr]] = {
    "mult": lambda c, e, k: c.mult(e, k),
    "fdiv": lambda c, e, k: c.floordiv(e, k),
    "mod": lambda c, e, k: c.modulo(e, k),
    "ccdiv": lambda c, e, k: c.ccdiv(e, k),
    "ccmod": lambda c, e, k: c.ccmod(e, k),
}


def build(ctx: pelican.Context, t: Tree, leaves: dict[Tree, pelican.Expr]) -> pelican.Expr:
    op = t[0]
    if op in LEAVES:
        if t not in leaves:
            leaves[t] = _build_leaf(ctx, t)
        return leaves[t]
    if op == "aff":
        return ctx.aff_expr([(build(ctx, leaf, leaves), k) for leaf, k in t[1]], t[2])
    if op == "sum":
        return ctx.sum([build(ctx, c, leaves) for c in t[1]])
    if op not in _UNARY_BUILD:
        raise AssertionError(op)
    return _UNARY_BUILD[op](ctx, build(ctx, t[1], leaves), t[2])


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
