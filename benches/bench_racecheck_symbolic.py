"""racecheck_symbolic benchmarks (issue 38), measured in one process.

Figures (each a :class:`benchutil.Figure`):

- ``racecheck_symbolic_all_n_vs_racecheck``: ``racecheck_symbolic(m, range(2, 65))`` on
  the 200k-instruction ``gen --lnc-generic 64`` module ÷ one concrete ``racecheck`` of
  its split at N = 2; target ≤ 3.0 (every N for the price of three checks of one).
- ``racecheck_symbolic_lemma_share``: the share of the module's candidate pairs the Rust
  lemmas clear (%); target ≥ 95.
- ``racecheck_symbolic_solver_queries``: the number of pairs left to the solver on that
  module (informational).
- ``racecheck_symbolic_z3_vs_isl``: the time z3 takes for the solver queries of two racy
  generated modules ÷ isl's (informational; the faster one is the default backend).

Run as a script: ``python benches/bench_racecheck_symbolic.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.insert(0, os.path.join(_here, "..", "tests", "racecheck_symbolic"))

import lncsplit  # noqa: E402
from benchutil import Figure, interleaved, print_figures  # noqa: E402
from lncsplit import _core  # noqa: E402
from lncsplit.passes.racecheck_symbolic import racecheck_symbolic, with_shard_bound  # noqa: E402


def all_n_figures(instructions: int = 200_000, rounds: int = 3) -> list[Figure]:
    m = _core.generate_module(0, instructions, 64, lnc_generic=True)
    cores = lncsplit.split([with_shard_bound(m, 2)], 2)
    assert lncsplit.racecheck(cores).ok, "generic modules are race-free"
    last: list[object] = []

    def symbolic() -> Callable[[], object]:
        return lambda: last.append(racecheck_symbolic(m, range(2, 65)))

    def concrete() -> Callable[[], object]:
        return lambda: lncsplit.racecheck(cores)

    sym_t, conc_t = interleaved([symbolic, concrete], rounds)
    rep = last[-1]
    stats = rep.stats  # type: ignore[attr-defined]
    assert rep.ok, str(rep)  # type: ignore[attr-defined]
    cand = max(1, int(stats["candidates"]))
    share = 100.0 * int(stats["lemmas"]) / cand
    what = f"the {instructions}-instruction --lnc-generic 64 module"
    return [
        Figure(
            "racecheck_symbolic_all_n_vs_racecheck",
            sym_t / conc_t,
            3.0,
            "lower",
            "x",
            f"N = 2…64 on {what} ({sym_t * 1e3:.0f} ms) ÷ racecheck at N = 2 ({conc_t * 1e3:.0f} ms)",
        ),
        Figure(
            "racecheck_symbolic_lemma_share",
            share,
            95.0,
            "higher",
            "%",
            f"{stats['lemmas']} of {stats['candidates']} candidate pairs cleared by the Rust lemmas "
            f"({json.dumps(stats['by_reason'], sort_keys=True)})",
        ),
        Figure(
            "racecheck_symbolic_solver_queries",
            float(stats["queries"]),
            0.0,
            "higher",
            "queries",
            f"informational: pairs left to isl on {what}",
        ),
    ]


def solver_figures(modules: int = 6) -> list[Figure]:
    from agreement import delete_barrier
    from lncsplit.passes.racecheck_symbolic.isl_backend import IslBackend
    from lncsplit.passes.racecheck_symbolic.query import Query

    try:
        from lncsplit.passes.racecheck_symbolic.z3_backend import Z3Backend
    except ImportError:
        return []
    queries: list[Query] = []
    rng = random.Random(0)
    for k in range(modules):
        lnc = (4, 8)[k % 2]
        m = delete_barrier(_core.generate_module(100 + k, 2000, lnc, racy=k % 3 == 0), rng)
        assert m is not None
        plan = json.loads(_core.racecheck_symbolic_plan(m, [(2, lnc)]))
        queries += [Query.from_json(q["query"]) for q in plan["queries"]]

    def run(backend: object) -> float:
        t0 = time.perf_counter()
        for q in queries:
            if not backend.is_empty(q):  # type: ignore[attr-defined]
                s2 = backend.least_s2(q)  # type: ignore[attr-defined]
                backend.lexmin(q, max(s2, 7))  # type: ignore[attr-defined]
        return time.perf_counter() - t0

    isl_t = min(run(IslBackend()) for _ in range(2))
    z3_t = min(run(Z3Backend()) for _ in range(2))
    return [
        Figure(
            "racecheck_symbolic_z3_vs_isl",
            z3_t / isl_t,
            0.0,
            "higher",
            "x",
            f"informational: {len(queries)} queries of {modules} racy generated modules, "
            f"z3 {z3_t * 1e3:.0f} ms vs isl {isl_t * 1e3:.0f} ms (isl is the default)",
        )
    ]


def figures(quick: bool = False) -> list[Figure]:
    # Two racy modules in both modes: with six, z3 ran for more than 10 minutes on one of the
    # later modules' queries (2026-12-03), and the figure is informational.
    if quick:
        return all_n_figures(40_000, rounds=2) + solver_figures(2)
    return all_n_figures() + solver_figures(2)


if __name__ == "__main__":
    t0 = time.perf_counter()
    print_figures(figures(quick="--quick" in sys.argv))
    print(f"({time.perf_counter() - t0:.0f} s)")
