"""Simulator benchmark (issue 13): BirSim on the 200k-instruction module split into 2.

Figures (each a :class:`benchutil.Figure`):

- ``sim_instructions_per_s``: instruction instances simulated per second over
  both cores (``SimResult.steps`` ÷ the run's wall time); target ≥ 200 000.
- ``sim_vs_split``: simulating the 2 cores ÷ splitting the module (informational).

The module is ``lncsplit gen``'s 200k-instruction module (seed 7, lnc 2) once
the generator makes simulable modules (copies of equal counts, collectives
that fit); until then the figures are measured on the simulable builder module
of ``tests/sim/sim_modules.py`` with as many instructions, and the detail says so.

Run as a script: ``python benches/bench_sim.py [--quick]``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
sys.path.insert(0, os.path.join(os.path.dirname(_here), "tests", "sim"))

import lncsplit  # noqa: E402
from benchutil import Figure, best_of, print_figures  # noqa: E402
from lncsplit import _core, sim  # noqa: E402

TARGET_INSTRUCTIONS_PER_S = 200_000.0


def _generated(instructions: int) -> tuple[lncsplit.Module, str]:
    m = _core.generate_module(7, instructions, 2)
    lncsplit.expand_replication(m)
    return m, f"lncsplit gen module ({m.instruction_count()} instructions, seed 7)"


def _built(instructions: int) -> lncsplit.Module:
    from sim_modules import build

    # About 2.2 instructions per builder op.
    m = build(7, 2, ops=max(1, instructions * 10 // 22))
    lncsplit.expand_replication(m)
    return m


def _module(instructions: int) -> tuple[lncsplit.Module, list[lncsplit.Module], str]:
    m, what = _generated(instructions)
    cores = lncsplit.split([m.clone()], 2)
    try:
        sim.run(cores)  # a warm-up, and a 9401 when the module is not simulable
        return m, cores, what
    except lncsplit.NeuronAssertion as e:
        if e.code != 9401:
            raise
        b = _built(instructions)
        why = f"the generator's module is not simulable yet ({e.message[:80]})"
        return (
            b,
            lncsplit.split([b.clone()], 2),
            f"tests/sim builder module ({b.instruction_count()} instructions); {why}",
        )


def _splitter(base: lncsplit.Module) -> Callable[[], object]:
    """Clone outside the timed region; time only the split."""
    c = base.clone()
    return lambda: lncsplit.split([c], 2)


def figures(quick: bool) -> list[Figure]:
    instructions = 50_000 if quick else 200_000
    base, cores, what = _module(instructions)
    rounds = 2 if quick else 3
    split_s = best_of(lambda: _splitter(base), rounds)
    best = float("inf")
    steps = 0
    for _ in range(rounds):
        t = time.perf_counter()
        r = sim.run(cores)
        best = min(best, time.perf_counter() - t)
        steps = r.steps
    return [
        Figure(
            "sim_instructions_per_s",
            steps / best,
            TARGET_INSTRUCTIONS_PER_S,
            "higher",
            "instr/s",
            f"{steps} instances over 2 cores in {best * 1e3:.0f} ms; {what}",
        ),
        Figure(
            "sim_vs_split",
            best / split_s,
            0.0,
            "higher",
            "x",
            f"informational: split into 2 takes {split_s * 1e3:.0f} ms on the same module",
        ),
    ]


if __name__ == "__main__":
    print_figures(figures("--quick" in sys.argv))
