"""Race-checker benchmarks (issue 11), side by side with the split in one process.

Figures (each a :class:`benchutil.Figure`):

- ``racecheck_vs_split``: lnc_barriercheck (exact) of the 200k-instruction
  generated module split into 2, ÷ the split itself; target ≤ 1.0 (the check
  costs no more than the split it checks).
- ``racecheck_interval_vs_split``: the same with ``mode="interval"``
  (informational).
- ``racecheck_exponent_size``: log-log slope of the racecheck time against
  instructions over 25k…200k; target ≈ 1 (≤ 1.15).

Run as a script: ``python benches/bench_racecheck_ratios.py [--quick]``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)

import lncsplit  # noqa: E402
from benchutil import Figure, exponent_figure, interleaved, print_figures  # noqa: E402
from lncsplit import _core  # noqa: E402


def _module(instructions: int, lnc: int = 2, seed: int = 7) -> lncsplit.Module:
    return _core.generate_module(seed, instructions, lnc)


def _split(base: lncsplit.Module) -> Callable[[], Callable[[], object]]:
    def make() -> Callable[[], object]:
        m = base.clone()
        return lambda: lncsplit.split([m], 2)

    return make


def _check(cores: list[lncsplit.Module], mode: str) -> Callable[[], Callable[[], object]]:
    return lambda: lambda: lncsplit.racecheck(cores, mode)  # type: ignore[arg-type]


def ratio_figures(instructions: int = 200_000, rounds: int = 5) -> list[Figure]:
    base = _module(instructions)
    cores = lncsplit.split([base.clone()], 2)
    assert lncsplit.racecheck(cores).ok, "generated modules are race-free"
    split_t, exact_t, interval_t = interleaved(
        [_split(base), _check(cores, "exact"), _check(cores, "interval")], rounds
    )
    what = f"split of the {instructions}-instruction module into 2 ({split_t * 1e3:.1f} ms)"
    return [
        Figure(
            "racecheck_vs_split",
            exact_t / split_t,
            1.0,
            "lower",
            "x",
            f"{what}; racecheck {exact_t * 1e3:.1f} ms",
        ),
        Figure(
            "racecheck_interval_vs_split",
            interval_t / split_t,
            0.0,
            "higher",
            "x",
            f"informational: interval mode {interval_t * 1e3:.1f} ms vs the {what}",
        ),
    ]


def scaling_figures(top: int = 200_000, rounds: int = 5) -> list[Figure]:
    sizes = [top // 8, top // 4, top // 2, top]
    # Every size in every round (interleaved), so machine noise hits all alike.
    core_sets = [lncsplit.split([_module(s)], 2) for s in sizes]
    times = interleaved([_check(cores, "exact") for cores in core_sets], rounds)
    return [
        exponent_figure("racecheck_exponent_size", "racecheck time vs instructions", sizes, times)
    ]


def figures(quick: bool = False) -> list[Figure]:
    if quick:
        return ratio_figures(40_000, rounds=3) + scaling_figures(40_000, rounds=2)
    return ratio_figures() + scaling_figures()


if __name__ == "__main__":
    t0 = time.perf_counter()
    print_figures(figures(quick="--quick" in sys.argv))
    print(f"({time.perf_counter() - t0:.0f} s)")
