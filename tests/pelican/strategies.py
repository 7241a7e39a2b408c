"""Hypothesis strategies for pelican trees (see reference.py)."""

from __future__ import annotations

from hypothesis import strategies as st
from reference import AXES, SHARD_UB, Tree, axis_values

leaves = st.one_of(
    st.sampled_from([("iv", n) for n in AXES]),
    st.just(("shard",)),
    st.sampled_from([("rt", "r0"), ("rt", "r1")]),
)
index_leaves = st.one_of(st.sampled_from([("iv", n) for n in AXES]), st.just(("shard",)))
coeffs = st.integers(-5, 5)
consts = st.integers(-20, 20)
denoms = st.integers(1, 7)


def aff(leaf: st.SearchStrategy[Tree] = leaves) -> st.SearchStrategy[Tree]:
    return st.builds(
        lambda terms, c: ("aff", tuple(terms), c),
        st.lists(st.tuples(leaf, coeffs), max_size=4),
        consts,
    )


def trees(leaf: st.SearchStrategy[Tree] = leaves) -> st.SearchStrategy[Tree]:
    def extend(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
        return st.one_of(
            st.builds(lambda cs: ("sum", tuple(cs)), st.lists(children, min_size=1, max_size=3)),
            st.builds(lambda c, k: ("mult", c, k), children, coeffs),
            st.builds(
                lambda op, c, d: (op, c, d),
                st.sampled_from(["fdiv", "mod", "ccdiv", "ccmod"]),
                children,
                denoms,
            ),
        )

    return st.recursive(aff(leaf), extend, max_leaves=8)


@st.composite
def envs(draw: st.DrawFn) -> dict[str, int]:
    env: dict[str, int] = {}
    for name in AXES:
        if draw(st.booleans()) or draw(st.booleans()):
            env[name] = draw(st.sampled_from(axis_values(name)))
    if draw(st.integers(0, 3)) > 0:
        env["shard"] = draw(st.integers(0, SHARD_UB - 1))
    return env
