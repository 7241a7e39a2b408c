"""The report of :func:`lncsplit.racecheck_symbolic` (contract §3.11).

Sets of N are kept as sorted intervals ``(lo, hi)`` (``hi`` None: unbounded, only with
``lnc="all"``) and written as the contract writes them: a race's ``n`` is ``"all"``
when it races at every N asked, else the list of its N — with ``lnc="all"`` an
unbounded tail is written as a last string item ``"K-"`` (every N ≥ K). ``invalid``
maps each invalid N to its first cause; an unbounded tail is one key ``"K-"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lncsplit.passes._keyed import Keyed

Intervals = list[tuple[int, int | None]]
NSpec = list[Any] | str


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """The intersection of two interval lists."""
    out: Intervals = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo = max(lo1, lo2)
            his = [h for h in (hi1, hi2) if h is not None]
            hi = min(his) if his else None
            if hi is None or lo <= hi:
                out.append((lo, hi))
    return union(out)


def union(a: Intervals) -> Intervals:
    """Sorted, merged intervals."""
    out: Intervals = []
    for lo, hi in sorted(a, key=lambda p: p[0]):
        if out:
            plo, phi = out[-1]
            if phi is None:
                continue
            if lo <= phi + 1:
                out[-1] = (plo, None if hi is None else max(phi, hi))
                continue
        out.append((lo, hi))
    return out


def least(a: Intervals) -> int | None:
    return a[0][0] if a else None


def contains(a: Intervals, n: int) -> bool:
    return any(lo <= n and (hi is None or n <= hi) for lo, hi in a)


def values(a: Intervals) -> list[Any]:
    """Every N, with an unbounded tail as ``"K-"``."""
    out: list[Any] = []
    for lo, hi in a:
        if hi is None:
            out.append(f"{lo}-")
        else:
            out.extend(range(lo, hi + 1))
    return out


def describe(a: Intervals) -> str:
    """``2-5, 7, 9-`` (``none`` when empty)."""
    if not a:
        return "none"
    return ", ".join(
        f"{lo}-" if hi is None else (str(lo) if lo == hi else f"{lo}-{hi}") for lo, hi in a
    )


def nspec(racing: Intervals, asked: Intervals) -> NSpec:
    """A race's ``n``: ``"all"`` when it races at every N asked, else its N."""
    return "all" if racing == asked else values(racing)


@dataclass(frozen=True)
class SymbolicSide(Keyed):
    """One side of a symbolic race: the instruction, its depth-first position in the
    symbolic module, and the loop iteration of the witness (``{axis: value}``)."""

    instruction: str
    position: int
    iterations: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "instruction": self.instruction,
            "position": self.position,
            "iterations": dict(self.iterations),
        }


@dataclass(frozen=True)
class SymbolicWitness(Keyed):
    """The least witness: at N, cores s1 < s2 race at (partition, byte) — §3.6's
    witness of ``racecheck(split([with_shard_bound(m, N)], N))`` for those cores."""

    N: int
    s1: int
    s2: int
    partition: int
    byte: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "N": self.N,
            "s1": self.s1,
            "s2": self.s2,
            "partition": self.partition,
            "byte": self.byte,
        }


@dataclass(frozen=True)
class SymbolicRace(Keyed):
    """A pair of instructions that races for the N in ``n``; ``a`` runs on s1 < s2."""

    function: str
    a: SymbolicSide
    b: SymbolicSide
    location: dict[str, Any]
    """``{"core", "name"}``: the physical location at the witness."""
    kind: str
    witness: SymbolicWitness
    n: NSpec
    racing: Intervals = field(repr=False, compare=False, default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "location": dict(self.location),
            "kind": self.kind,
            "witness": self.witness.to_dict(),
            "n": self.n,
        }

    def races_at(self, n: int) -> bool:
        """Does the pair race at N = n?"""
        return contains(self.racing, n)

    def __str__(self) -> str:
        w = self.witness

        def it(s: SymbolicSide) -> str:
            return "".join(f" {k}={v}" for k, v in s.iterations.items())

        return (
            f"{self.kind} race in {self.function}: {self.a.instruction}{it(self.a)} (core s1) and "
            f"{self.b.instruction}{it(self.b)} (core s2) both touch {self.location['name']} for "
            f"N in {describe(self.racing)}; least witness N={w.N}, s1={w.s1}, s2={w.s2}, "
            f"partition {w.partition}, byte {w.byte}"
        )


@dataclass
class SymbolicRaceReport:
    """What :func:`lncsplit.racecheck_symbolic` found for the N of ``lnc``.

    ``.ok`` ⇔ no race, nothing unknown and no invalid N. ``str()`` starts with
    ``race-free for N in …``, ``races for N in …`` or ``not proved``: never
    "race-free" while anything is unknown.
    """

    lnc: Any
    """``[lo, hi]`` (a range, inclusive), a list, or ``"all"``."""
    asked: Intervals
    valid: Intervals
    races: list[SymbolicRace]
    unknown: list[dict[str, Any]]
    invalid: dict[int | str, dict[str, Any]]
    stats: dict[str, Any]
    _proved: tuple[Any, list[dict[str, Any]]] = field(repr=False)
    """The lemmas' proofs (kept in Rust until asked for: a list per candidate
    pair, whose JSON costs more than the sweep) and the solver's."""

    @cached_property
    def proved(self) -> list[dict[str, Any]]:
        """Per pair of accesses that could conflict, why it cannot:
        ``{"a", "b", "location", "reason", "detail"}`` (informational)."""
        lemmas, solver = self._proved
        listed: list[dict[str, Any]] = (
            lemmas if isinstance(lemmas, list) else json.loads(lemmas.dumps())
        )
        return listed + solver

    @property
    def ok(self) -> bool:
        return not self.races and not self.unknown and not self.invalid

    def racing_ns(self) -> Intervals:
        """Every N at which some pair races."""
        return union([p for r in self.races for p in r.racing])

    def races_at(self, n: int) -> list[SymbolicRace]:
        """The races at N = n."""
        return [r for r in self.races if r.races_at(n)]

    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "lnc", "races", "proved", "unknown", "invalid"}`` (contract §3.11),
        and ``stats``."""
        return {
            "ok": self.ok,
            "lnc": self.lnc,
            "races": [r.to_dict() for r in self.races],
            "proved": self.proved,
            "unknown": self.unknown,
            "invalid": {str(k): v for k, v in self.invalid.items()},
            "stats": self.stats,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def invalid_ns(self) -> Intervals:
        """Every invalid N, as intervals."""
        out: Intervals = []
        for k in self.invalid:
            out.append((int(k[:-1]), None) if isinstance(k, str) else (k, k))
        return union(out)

    def _invalid_line(self) -> str:
        if not self.invalid:
            return ""
        codes = sorted({v["code"] for v in self.invalid.values()})
        return (
            f"; invalid for N in {describe(self.invalid_ns())} (codes {', '.join(map(str, codes))})"
        )

    def __str__(self) -> str:
        if self.unknown:
            lines = [f"not proved: {len(self.unknown)} pair(s) undecided{self._invalid_line()}"]
            lines += [f"  unknown: {u['why']}" for u in self.unknown[:20]]
            lines += [f"  {r}" for r in self.races]
            return "\n".join(lines)
        if self.races:
            lines = [
                f"races for N in {describe(self.racing_ns())}: {len(self.races)} pair(s)"
                f"{self._invalid_line()}"
            ]
            lines += [f"  {r}" for r in self.races]
            return "\n".join(lines)
        s = self.stats
        return (
            f"race-free for N in {describe(self.valid)}{self._invalid_line()} "
            f"({s.get('candidates', 0)} pair(s) checked: {s.get('lemmas', 0)} by lemmas, "
            f"{s.get('queries', 0)} by the solver)"
        )
