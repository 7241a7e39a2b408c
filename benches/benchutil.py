"""Shared helpers for the ratio benchmarks: timing side by side, figures, printing."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass


@dataclass
class Figure:
    """One performance figure of the report (issue 8's JSON shape)."""

    name: str
    value: float
    target: float
    better: str  # "higher" | "lower"
    unit: str
    peer: str

    @property
    def ok(self) -> bool:
        # A fitted exponent "≈ 1" is read with a 15% tolerance.
        slack = 1.15 if self.unit == "exponent" and self.target == 1.0 else 1.0
        if self.better == "higher":
            return self.value >= self.target
        return self.value <= self.target * slack

    def line(self) -> str:
        """The issue-8 line form ``name: <ratio>x (target <target>x)`` (the ``x``
        suffix is kept for every figure; the unit is in the table and the JSON)."""
        return f"{self.name}: {self.value:.3g}x (target {self.target:g}x)"

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("name")
        return d


def _time_once(make: Callable[[], Callable[[], object]]) -> float:
    fn = make()  # setup outside the timed region
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def best_of(make: Callable[[], Callable[[], object]], rounds: int) -> float:
    """Minimum wall time over ``rounds`` runs; ``make`` builds a fresh callable each run."""
    return min(_time_once(make) for _ in range(max(1, rounds)))


def interleaved(makers: Sequence[Callable[[], Callable[[], object]]], rounds: int) -> list[float]:
    """Time several contenders round-robin (A B C A B C …) and keep each one's best,
    so machine noise hits all of them alike."""
    best = [float("inf")] * len(makers)
    for _ in range(max(1, rounds)):
        for i, make in enumerate(makers):
            best[i] = min(best[i], _time_once(make))
    return best


def print_figures(figs: Sequence[Figure]) -> None:
    """One table, then one ``name: <ratio>x (target <target>x)`` line per figure."""
    width = max((len(f.name) for f in figs), default=10)
    print(f"{'figure':<{width}}  {'value':>9}  {'target':>8}  {'unit':<9}  {'status':<12}  peer")
    for f in figs:
        op = ">=" if f.better == "higher" else "<="
        status = "ok" if f.ok else "below target"
        print(
            f"{f.name:<{width}}  {f.value:>9.3g}  {op + format(f.target, 'g'):>8}  {f.unit:<9}  {status:<12}  {f.peer}"
        )
    print()
    for f in figs:
        print(f.line())


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of log(ys) against log(xs) (the scaling exponent)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    den = sum((a - mx) ** 2 for a in lx)
    return num / den


def exponent_figure(name: str, what: str, xs: Sequence[int], times: Sequence[float]) -> Figure:
    """A scaling figure: the exponent of ``times`` against ``xs`` (target ≈ 1, lower is
    better), its peer text ``log-log slope of <what> x:ms, …``."""
    points = ", ".join(f"{x}:{t * 1e3:.0f}ms" for x, t in zip(xs, times, strict=True))
    return Figure(
        name,
        slope([float(x) for x in xs], times),
        1.0,
        "lower",
        "exponent",
        f"log-log slope of {what} {points}",
    )
