"""The second exact backend (z3, test-only) agrees with isl on every query of the test
corpus (contract §3.11): the same emptiness, least s2 and lexmin witness."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import kernels
import lncsplit
import pytest
from agreement import delete_barrier
from lncsplit import _core
from lncsplit.passes.racecheck_symbolic import racecheck_symbolic
from lncsplit.passes.racecheck_symbolic.isl_backend import IslBackend
from lncsplit.passes.racecheck_symbolic.query import Query, isl_text

z3_backend = pytest.importorskip(
    "lncsplit.passes.racecheck_symbolic.z3_backend", reason="z3-solver is a test extra"
)


def hand_built() -> Iterator[lncsplit.Module]:
    yield kernels.overlap_from_three()
    yield kernels.late_cores()
    yield kernels.pairs_of_cores(disjoint=False)
    yield kernels.pairs_of_cores(disjoint=True)
    yield kernels.halves()
    yield kernels.barrier_of_two()
    yield kernels.barrier_in_loop(rotate=False)
    yield kernels.barrier_in_loop(rotate=True)


def corpus() -> Iterator[lncsplit.Module]:
    yield from hand_built()
    for lnc in (2, 3, 4):
        yield _core.generate_module(1, 300, lnc, racy=True)
        cut = delete_barrier(_core.generate_module(100 + lnc, 400, lnc), random.Random(lnc))
        if cut is not None:
            yield cut


def test_z3_agrees_with_isl_on_every_query_of_the_corpus() -> None:
    isl, z3 = IslBackend(), z3_backend.Z3Backend()
    n = 0
    for m in corpus():
        plan = json.loads(_core.racecheck_symbolic_plan(m, [(2, 8)]))
        for qd in plan["queries"]:
            q = Query.from_json(qd["query"])
            empty = isl.is_empty(q)
            assert z3.is_empty(q) == empty, isl_text(q)
            if not empty:
                s2 = isl.least_s2(q)
                assert z3.least_s2(q) == s2, isl_text(q)
                assert z3.lexmin(q, 7) == isl.lexmin(q, 7), isl_text(q)
            n += 1
    assert n > 20


def test_the_z3_backend_gives_the_same_report() -> None:
    # The queries of the whole corpus are compared above; the report is built from them
    # the same way whatever the backend, so the hand-built kernels suffice here.
    for m in hand_built():
        a = racecheck_symbolic(m, range(2, 9), replay=False).to_dict()
        b = racecheck_symbolic(m, range(2, 9), backend="z3", replay=False).to_dict()
        for d in (a, b):
            d.pop("stats")
            for p in d["proved"]:
                p.pop("detail")
        assert a == b
