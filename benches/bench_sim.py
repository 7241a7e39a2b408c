"""Simulator benchmark (issue 13): BirSim on the 200k-instruction module split into 2.

Figures (each a :class:`benchutil.Figure`):

- ``sim_instructions_per_s``: instruction instances simulated per second over
  both cores (``SimResult.steps`` ÷ the run's wall time) on ``lncsplit gen``'s
  200k-instruction module (seed 7, lnc 2) with **small APs** — the issue's
  premise ("APs in the generator are small"): ``ap_partitions=SMALL_AP[...]``,
  ``ap_columns=...`` (``lncsplit gen --ap-partitions/--ap-columns``); target ≥ 200 000.
- ``sim_vs_split``: simulating the 2 cores ÷ splitting the module (informational).
- ``sim_elements_per_s``: element accesses per second (``SimResult.elements``)
  of that run (informational: the simulator's work per second).
- ``sim_default_ap_instructions_per_s`` and ``sim_default_ap_elements_per_s``
  (informational): the same measures on a smaller generated module with the
  generator's default AP size (every partition × columns/(2·lnc): ~70 000
  element accesses per instance), so nobody reads the first figure as the
  speed on big tiles. Time there goes to moving and hashing bytes.

Run as a script: ``python benches/bench_sim.py [--quick]``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)

import lncsplit  # noqa: E402
from benchutil import Figure, best_of, print_figures  # noqa: E402
from lncsplit import _core, sim  # noqa: E402

TARGET_INSTRUCTIONS_PER_S = 200_000.0
SEED = 7
#: The small-AP premise: 8 partitions × 16 elements per access pattern.
SMALL_AP = {"ap_partitions": 8, "ap_columns": 16}
#: The default-AP module (informational) is this many instructions.
DEFAULT_AP_INSTRUCTIONS = 100


def _module(instructions: int, caps: dict[str, int]) -> lncsplit.Module:
    m = _core.generate_module(SEED, instructions, 2, **caps)  # type: ignore[arg-type]
    lncsplit.expand_replication(m)
    return m


def _splitter(base: lncsplit.Module) -> Callable[[], object]:
    """Clone outside the timed region; time only the split."""
    c = base.clone()
    return lambda: lncsplit.split([c], 2)


def _simulate(cores: list[lncsplit.Module], rounds: int) -> tuple[float, sim.SimResult]:
    """Best wall time of ``rounds`` runs, and the last result."""
    best = float("inf")
    r: sim.SimResult | None = None
    for _ in range(max(1, rounds)):
        t = time.perf_counter()
        r = sim.run(cores)
        best = min(best, time.perf_counter() - t)
    assert r is not None
    return best, r


def _what(m: lncsplit.Module, caps: dict[str, int]) -> str:
    size = ", ".join(f"{k}={v}" for k, v in caps.items()) or "default AP size"
    return f"lncsplit gen module ({m.instruction_count()} instructions, seed {SEED}, {size})"


def _small_ap_figures(quick: bool) -> list[Figure]:
    instructions = 50_000 if quick else 200_000
    base = _module(instructions, SMALL_AP)
    cores = lncsplit.split([base.clone()], 2)
    rounds = 1 if quick else 2
    split_s = best_of(lambda: _splitter(base), rounds)
    best, r = _simulate(cores, rounds)
    what = _what(base, SMALL_AP)
    return [
        Figure(
            "sim_instructions_per_s",
            r.steps / best,
            TARGET_INSTRUCTIONS_PER_S,
            "higher",
            "instr/s",
            f"{r.steps} instances over 2 cores in {best * 1e3:.0f} ms; {what}",
        ),
        Figure(
            "sim_vs_split",
            best / split_s,
            0.0,
            "higher",
            "x",
            f"informational: split into 2 takes {split_s * 1e3:.0f} ms on the same module",
        ),
        Figure(
            "sim_elements_per_s",
            r.elements / best,
            0.0,
            "higher",
            "elem/s",
            f"informational: {r.elements} element accesses "
            f"({r.elements / max(1, r.steps):.0f} per instance); {what}",
        ),
    ]


def _default_ap_figures() -> list[Figure]:
    base = _module(DEFAULT_AP_INSTRUCTIONS, {})
    cores = lncsplit.split([base.clone()], 2)
    best, r = _simulate(cores, 1)
    what = _what(base, {})
    per = r.elements / max(1, r.steps)
    return [
        Figure(
            "sim_default_ap_instructions_per_s",
            r.steps / best,
            0.0,
            "higher",
            "instr/s",
            f"informational: {r.steps} instances in {best * 1e3:.0f} ms, "
            f"{per:.0f} element accesses each; {what}",
        ),
        Figure(
            "sim_default_ap_elements_per_s",
            r.elements / best,
            0.0,
            "higher",
            "elem/s",
            f"informational: {r.elements} element accesses; {what}",
        ),
    ]


def figures(quick: bool) -> list[Figure]:
    import bench_sim_numeric  # the numeric figures (issue 34)

    return _small_ap_figures(quick) + _default_ap_figures() + bench_sim_numeric.figures(quick)


if __name__ == "__main__":
    print_figures(figures("--quick" in sys.argv))
