"""Hypothesis properties of lncsplit.pelican against the pure-Python reference."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit.errors import PelicanAssertion
from lncsplit.pelican import Context, Expr, Predicate, eval_mask, eval_mask_batch
from reference import SHARD_UB, Tree, build, canonical, evaluate, writable
from strategies import envs, index_leaves, trees

settings.load_profile("ci")


def fresh() -> tuple[Context, dict[Tree, Expr]]:
    return Context(), {}


@given(trees(), envs())
def test_eval_agrees_with_reference(t: Tree, env: dict[str, int]) -> None:
    ctx, leaves = fresh()
    assert build(ctx, t, leaves).eval(env) == evaluate(t, env)


@given(trees(), envs())
def test_eval_by_expr_key_agrees_with_eval_by_name(t: Tree, env: dict[str, int]) -> None:
    ctx, leaves = fresh()
    e = build(ctx, t, leaves)
    by_expr: dict[str | Expr, int] = {}
    for leaf, x in leaves.items():
        key = "shard" if leaf[0] == "shard" else leaf[1] if leaf[0] == "iv" else None
        if key is not None and key in env:
            by_expr[x] = env[key]
    assert e.eval(by_expr) == e.eval(env)


@given(trees(), envs(), st.integers(0, SHARD_UB - 1))
def test_update_shard_id_agrees_with_eval(t: Tree, env: dict[str, int], core: int) -> None:
    ctx, leaves = fresh()
    e = build(ctx, t, leaves)
    bound = e.update_shard_id(core)
    assert not bound.has_shard
    assert bound.eval({**env, "shard": core}) == e.eval({**env, "shard": core})
    env.pop("shard", None)
    assert bound.eval(env) == evaluate(t, {**env, "shard": core})


@given(trees())
def test_v2_round_trip_gives_same_id(t: Tree) -> None:
    ctx, leaves = fresh()
    e = build(ctx, t, leaves)
    if not writable(t):
        with pytest.raises(PelicanAssertion):
            e.to_json()
        return
    n = len(ctx)
    assert ctx.from_json(e.to_json()).id == e.id
    assert len(ctx) == n


def shuffled(t: Tree, rnd: random.Random) -> Tree:
    """The same expression with AffExpr terms and Sum operands permuted."""
    if t[0] == "aff":
        terms = list(t[1])
        rnd.shuffle(terms)
        return ("aff", tuple(terms), t[2])
    if t[0] == "sum":
        cs = [shuffled(c, rnd) for c in t[1]]
        rnd.shuffle(cs)
        return ("sum", tuple(cs))
    if t[0] in ("mult", "fdiv", "mod", "ccdiv", "ccmod"):
        return (t[0], shuffled(t[1], rnd), t[2])
    return t


@given(trees(), trees(), st.randoms(use_true_random=False), st.booleans())
def test_interning_structural_equality_iff_same_id(
    t1: Tree, t2: Tree, rnd: random.Random, permute: bool
) -> None:
    if permute:
        t2 = shuffled(t1, rnd)
    ctx, leaves = fresh()
    e1, e2 = build(ctx, t1, leaves), build(ctx, t2, leaves)
    assert (e1.id == e2.id) == (canonical(t1) == canonical(t2))
    assert (e1 == e2) == (canonical(t1) == canonical(t2))


@given(
    st.lists(
        st.tuples(
            st.builds(
                lambda terms, c: ("aff", tuple(terms), c),
                st.lists(st.tuples(index_leaves, st.integers(-3, 3)), max_size=3),
                st.integers(-6, 6),
            ),
            st.booleans(),
        ),
        max_size=4,
    ),
    st.lists(st.integers(0, SHARD_UB - 1), max_size=40),
    envs(),
)
def test_eval_mask_batch_agrees_with_eval_mask(
    preds: list[tuple[Tree, bool]], cores: list[int], env: dict[str, Any]
) -> None:
    ctx, leaves = fresh()
    ps = [Predicate(build(ctx, t, leaves), ge) for t, ge in preds]
    env.pop("shard", None)
    out = eval_mask_batch(ps, np.array(cores, dtype=np.int64), env)
    assert out.tolist() == [eval_mask(ps, {**env, "shard": c}) for c in cores]
    # reference: 0 iff some predicate is decided false
    for c, m in zip(cores, out.tolist(), strict=True):
        vals = [evaluate(t, {**env, "shard": c}) for t, _ in preds]
        false = any(
            v is not None and not (v >= 0 if ge else v == 0)
            for v, (_, ge) in zip(vals, preds, strict=True)
        )
        assert m == (0 if false else 1)
