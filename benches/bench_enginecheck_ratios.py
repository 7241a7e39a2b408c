"""Intra-core race-check benchmarks (issue 37, contract §3.10), side by side with
loading the module it checks, in one process.

Figures (each a :class:`benchutil.Figure`):

- ``enginecheck_vs_load``: ``lncsplit.enginecheck`` of a 200k-instruction
  ``gen --scheduled`` module ÷ ``Module.from_json`` of its bytes; target ≤ 1.0
  (checking a core costs no more than reading it).
- ``enginecheck_racy_vs_load``: the same on the ``--racy`` module
  (informational: races found and reported).
- ``enginecheck_exponent_size``: log-log slope of the check's time against
  instructions over 25k…200k; target ≤ 1.15.

Run as a script: ``python benches/bench_enginecheck_ratios.py [--quick]``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)

import lncsplit  # noqa: E402
from benchutil import Figure, interleaved, print_figures, slope  # noqa: E402
from lncsplit import _core  # noqa: E402


def _module(instructions: int, racy: bool = False, seed: int = 7) -> lncsplit.Module:
    return _core.generate_module(seed, instructions, racy=racy, scheduled=True)


def _load(data: bytes) -> Callable[[], Callable[[], object]]:
    return lambda: lambda: lncsplit.Module.from_json(data)


def _check(m: lncsplit.Module) -> Callable[[], Callable[[], object]]:
    return lambda: lambda: lncsplit.enginecheck(m)


def ratio_figures(instructions: int = 200_000, rounds: int = 5) -> list[Figure]:
    clean = _module(instructions)
    racy = _module(instructions, racy=True)
    report = lncsplit.enginecheck(clean)
    assert report.ok, "scheduled modules are race-free"
    n_races = len(lncsplit.enginecheck(racy).races)
    data = clean.to_json().encode()
    load_t, check_t, racy_t = interleaved([_load(data), _check(clean), _check(racy)], rounds)
    what = f"Module.from_json of the {instructions}-instruction scheduled module ({load_t * 1e3:.1f} ms, {len(data) >> 20} MiB)"
    return [
        Figure(
            "enginecheck_vs_load",
            check_t / load_t,
            1.0,
            "lower",
            "x",
            f"{what}; enginecheck {check_t * 1e3:.1f} ms",
        ),
        Figure(
            "enginecheck_racy_vs_load",
            racy_t / load_t,
            0.0,
            "higher",
            "x",
            f"informational: the --racy module ({n_races} races) {racy_t * 1e3:.1f} ms vs the {what}",
        ),
    ]


def scaling_figures(top: int = 200_000, rounds: int = 5) -> list[Figure]:
    sizes = [top // 8, top // 4, top // 2, top]
    # Every size in every round (interleaved), so machine noise hits all alike.
    mods = [_module(s) for s in sizes]
    times = interleaved([_check(m) for m in mods], rounds)
    points = ", ".join(f"{x}:{t * 1e3:.0f}ms" for x, t in zip(sizes, times, strict=True))
    return [
        Figure(
            "enginecheck_exponent_size",
            slope([float(x) for x in sizes], times),
            1.15,
            "lower",
            "exponent",
            f"log-log slope of enginecheck time vs instructions {points}",
        )
    ]


def figures(quick: bool = False) -> list[Figure]:
    if quick:
        return ratio_figures(40_000, rounds=3) + scaling_figures(40_000, rounds=2)
    return ratio_figures() + scaling_figures()


if __name__ == "__main__":
    t0 = time.perf_counter()
    print_figures(figures(quick="--quick" in sys.argv))
    print(f"({time.perf_counter() - t0:.0f} s)")
