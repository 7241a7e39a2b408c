"""Linker benchmark (issue 12), side by side with the structural clone in one process.

Figure (a :class:`benchutil.Figure`):

- ``link_unlink_vs_clone``: ``link`` + ``unlink`` of the 200k-instruction
  module split into 2 cores, ÷ (2 × structural clone of that module); target
  ≤ 2 (each of link and unlink copies every core once, so both together cost
  about two clones of the module per core). Wall time, best of the rounds,
  interleaved (the convention of every figure).
- ``link_unlink_vs_clone_cpu`` (informational): the same ratio of process CPU
  time (all threads, user + system), summed over the rounds — steadier than
  wall time on a loaded machine, where the best round of a short call (the
  clone) is luckier than that of a long one.

The module is generated for 2 cores (``lncsplit gen --lnc 2``): ``link`` refuses
cores whose barriers synchronize a core that was not given.

Run as a script: ``python benches/bench_link_ratios.py [--quick]``.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)

import lncsplit  # noqa: E402
from benchutil import Figure, interleaved, print_figures  # noqa: E402
from lncsplit import _core  # noqa: E402


def cpu_times(makers: list[Callable[[], Callable[[], object]]], rounds: int) -> list[float]:
    """Process CPU seconds of each contender, summed over interleaved rounds."""
    total = [0.0] * len(makers)
    for _ in range(max(1, rounds)):
        for i, make in enumerate(makers):
            fn = make()
            gc.collect()
            t0 = time.process_time()
            fn()
            total[i] += time.process_time() - t0
    return total


def link_figures(instructions: int = 200_000, rounds: int = 7) -> list[Figure]:
    base = _core.generate_module(7, instructions, 2)
    cores = lncsplit.split([base.clone()], 2)
    linked = lncsplit.link(cores)
    makers: list[Callable[[], Callable[[], object]]] = [
        lambda: base.clone,
        lambda: lambda: lncsplit.link(cores),
        lambda: lambda: lncsplit.unlink(linked),
    ]
    clone_t, link_t, unlink_t = interleaved(makers, rounds)
    clone_c, link_c, unlink_c = cpu_times(makers, rounds)
    kept = sum(c.instruction_count() for c in cores)
    return [
        Figure(
            "link_unlink_vs_clone",
            (link_t + unlink_t) / (2 * clone_t),
            2.0,
            "lower",
            "x",
            f"2 x structural clone ({clone_t * 1e3:.1f} ms) of {instructions} instructions; "
            f"link {link_t * 1e3:.1f} ms + unlink {unlink_t * 1e3:.1f} ms of 2 cores ({kept} instructions)",
        ),
        Figure(
            "link_unlink_vs_clone_cpu",
            (link_c + unlink_c) / (2 * clone_c),
            0.0,
            "higher",
            "x",
            "informational: the same ratio in process CPU time over the rounds "
            f"(clone {clone_c / rounds * 1e3:.1f} ms, link {link_c / rounds * 1e3:.1f} ms, "
            f"unlink {unlink_c / rounds * 1e3:.1f} ms per round)",
        ),
    ]


def figures(quick: bool = False) -> list[Figure]:
    return link_figures(40_000, rounds=3) if quick else link_figures()


if __name__ == "__main__":
    t0 = time.perf_counter()
    print_figures(figures(quick="--quick" in sys.argv))
    print(f"({time.perf_counter() - t0:.0f} s)")
