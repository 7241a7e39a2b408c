"""One proof for every N: race freedom on the symbolic module, before the split
(contract §3.11).

:func:`racecheck_symbolic` answers, for every N of ``lnc`` at once, what
``racecheck(split([with_shard_bound(module, N)], N))`` answers: the races, or that N is
*invalid* (that split or racecheck raises). The Rust sweep
(``rust/src/passes/racecheck_symbolic/``) reads the ShardId as two symbolic cores
s1 < s2, decides the invalid N, clears the pairs of accesses its lemmas can, and leaves
one integer-set query per remaining pair; isl decides those (:mod:`.isl_backend`).
Every witness is replayed with the concrete checker at its N before it is reported; a
witness that does not replay is reported as unknown, never as a race.
docs/passes.md ("racecheck_symbolic") gives the method, a worked proof and a worked
witness.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Iterable
from typing import Any

from lncsplit import _core
from lncsplit._core import Module
from lncsplit.passes.racecheck_symbolic.query import Answer, Backend, Query, isl_text, solve
from lncsplit.passes.racecheck_symbolic.report import (
    Intervals,
    SymbolicRace,
    SymbolicRaceReport,
    SymbolicSide,
    SymbolicWitness,
    contains,
    intersect,
    least,
    nspec,
    union,
    values,
)

LncSpec = range | Iterable[int] | str | int


def _parse_lnc(lnc: LncSpec) -> tuple[Intervals, Any]:
    """The N asked as intervals, and as the report writes them."""
    if isinstance(lnc, str):
        if lnc != "all":
            raise ValueError(f"lnc must be a range, a list of N or 'all', got {lnc!r}")
        return [(2, None)], "all"
    if isinstance(lnc, bool):
        raise TypeError(f"lnc must be a range, a list of N or 'all', got {lnc!r}")
    if isinstance(lnc, int):
        lnc = [lnc]
    if isinstance(lnc, range) and lnc.step == 1:
        _check_ns(lnc, lnc.start if len(lnc) else None)
        return [(lnc.start, lnc.stop - 1)], [lnc.start, lnc.stop - 1]
    try:
        ns = sorted({operator.index(n) for n in lnc})
    except TypeError as e:
        raise TypeError(f"lnc must be a range, a list of N or 'all', got {lnc!r}") from e
    _check_ns(lnc, ns[0] if ns else None)
    return union([(n, n) for n in ns]), ns


def _check_ns(lnc: object, least: int | None) -> None:
    """``lnc`` holds some N, every one at least 2."""
    if least is None:
        raise ValueError(f"lnc must hold at least one N, got {lnc!r}")
    if least < 2:
        raise ValueError(f"every N of lnc must be at least 2, got {lnc!r}")


def with_shard_bound(module: Module, n: int) -> Module:
    """A copy of ``module`` with every ShardId's ``ub`` set to ``n`` — in modelled and
    carried fields alike — and every function's shard-id set ``[n]``: the module
    ``racecheck_symbolic`` answers for at N = n (contract §3.11, §4)."""
    if not isinstance(module, Module):
        raise TypeError(f"module must be a Module, got {type(module).__name__}")
    if isinstance(n, bool):
        raise TypeError(f"N must be an integer, got {n!r}")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"N must be at least 1, got {n}")
    return _core.with_shard_bound(module, n)


def _backend(name: str) -> Backend:
    if name == "isl":
        from lncsplit.passes.racecheck_symbolic.isl_backend import IslBackend

        return IslBackend()
    if name == "z3":
        from lncsplit.passes.racecheck_symbolic.z3_backend import Z3Backend

        return Z3Backend()
    raise ValueError(f"backend must be 'isl' or 'z3', got {name!r}")


def _racing(valid: Intervals, s2_min: int, partner: bool) -> Intervals:
    """The N at which a pair whose least racing s2 is ``s2_min`` races."""
    r = intersect(valid, [(max(2, s2_min + 1), None)])
    return intersect(r, [(2, 2)]) if partner else r


def _side(d: dict[str, Any], point: tuple[int, ...] | None, dims: tuple[str, ...]) -> SymbolicSide:
    its: dict[str, int] = {}
    if point is not None:
        prefix = "a_t" if d is not None and d.get("_side") == "a" else "b_t"
        for k, loop in enumerate(d["loops"]):
            name = f"{prefix}{k}"
            if name in dims:
                its[loop["axis"]] = loop["lo"] + loop["step"] * point[dims.index(name)]
    return SymbolicSide(d["instruction"], d["position"], its)


def _owner(q: dict[str, Any], s1: int, s2: int) -> int:
    o = q["owner"]
    if "core" in o:
        return int(o["core"])
    if "side" in o:
        return s1 if o["side"] == "a" else s2
    return 1 - s1


class _Found:
    """The best witness of one race (function, a, b, location) over its access pairs."""

    def __init__(self) -> None:
        self.racing: Intervals = []
        self.best: tuple[Any, ...] | None = None
        self.race: SymbolicRace | None = None


def _collect(
    plan: dict[str, Any], backend: Backend, valid: Intervals
) -> tuple[dict[tuple[str, str, str, str], _Found], list[dict[str, Any]], dict[str, Any]]:
    """Solve every query: the races found (by key), the pairs proved empty, timings."""
    found: dict[tuple[str, str, str, str], _Found] = {}
    proved: list[dict[str, Any]] = []
    seconds = 0.0
    for qd in plan["queries"]:
        q = Query.from_json(qd["query"])
        partner = bool(qd["partner"])

        def bound_for(s2: int, partner: bool = partner) -> int | None:
            n = least(_racing(valid, s2, partner))
            return None if n is None else n - 1

        t0 = time.perf_counter()
        ans: Answer = solve(backend, q, bound_for)
        seconds += time.perf_counter() - t0
        a, b = dict(qd["a"], _side="a"), dict(qd["b"], _side="b")
        if ans.empty or ans.point is None:
            detail = isl_text(q)
            if not ans.empty:
                detail = f"races only at invalid N: {detail}"
            proved.append(
                {
                    "a": qd["a"],
                    "b": qd["b"],
                    "location": qd["location"],
                    "reason": "empty-set",
                    "detail": detail,
                }
            )
            continue
        assert ans.s2_min is not None
        s1, s2, x = ans.point[0], ans.point[1], ans.point[2]
        n = (bound_for(ans.s2_min) or 0) + 1
        pb = max(1, int(qd["owner_pb"]))
        key = (qd["function"], a["instruction"], b["instruction"], qd["location"])
        f = found.setdefault(key, _Found())
        f.racing = union(f.racing + _racing(valid, ans.s2_min, partner))
        rank = (n, s1, s2, x, 0 if qd["kind"] == "write-write" else 1)
        if f.best is None or rank < f.best:
            f.best = rank
            f.race = SymbolicRace(
                function=qd["function"],
                a=_side(a, ans.point, q.dims),
                b=_side(b, ans.point, q.dims),
                location={"core": _owner(qd, s1, s2), "name": qd["location"]},
                kind=qd["kind"],
                witness=SymbolicWitness(n, s1, s2, x // pb, x % pb),
                n=[],
            )
    return found, proved, {"solver_seconds": seconds}


def _replay(
    module: Module, races: list[SymbolicRace]
) -> tuple[list[SymbolicRace], list[dict[str, Any]]]:
    """Keep the races whose witness the concrete checker reproduces at its N."""
    from lncsplit.passes import split
    from lncsplit.passes.racecheck import racecheck

    kept: list[SymbolicRace] = []
    unknown: list[dict[str, Any]] = []
    by_n: dict[int, list[SymbolicRace]] = {}
    for r in races:
        by_n.setdefault(r.witness.N, []).append(r)
    for n, rs in sorted(by_n.items()):
        try:
            cores = split([with_shard_bound(module, n)], n)
            concrete = racecheck(cores)
        except Exception as e:  # noqa: BLE001 — any failure means the witness is not confirmed
            for r in rs:
                unknown.append(_unreplayed(r, f"the concrete checker raised at N={n}: {e}"))
            continue
        index = {
            (c.a.core, c.b.core, c.a.function, c.a.instruction, c.b.instruction, c.location.name): c
            for c in concrete.races
        }
        for r in rs:
            w = r.witness
            c = index.get(
                (w.s1, w.s2, r.function, r.a.instruction, r.b.instruction, r.location["name"])
            )
            if c is None:
                unknown.append(_unreplayed(r, f"the concrete checker finds no such race at N={n}"))
            elif (c.witness.partition, c.witness.byte, c.kind) != (w.partition, w.byte, r.kind):
                unknown.append(
                    _unreplayed(
                        r,
                        f"the concrete witness at N={n} is partition {c.witness.partition}, byte "
                        f"{c.witness.byte} ({c.kind})",
                    )
                )
            else:
                kept.append(r)
    return kept, unknown


def _unreplayed(r: SymbolicRace, why: str) -> dict[str, Any]:
    return {
        "a": r.a.to_dict(),
        "b": r.b.to_dict(),
        "location": r.location["name"],
        "why": f"witness N={r.witness.N}, s1={r.witness.s1}, s2={r.witness.s2} did not replay: {why}",
    }


def _invalid(plan: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {}
    for item in plan["invalid"]:
        cause = {"code": item["code"], "message": item["message"]}
        for v in values([(lo, hi) for lo, hi in item["n"]]):
            out[v] = cause
    return out


def racecheck_symbolic(
    module: Module,
    lnc: LncSpec = range(2, 65),
    *,
    backend: str = "isl",
    replay: bool = True,
) -> SymbolicRaceReport:
    """Decide race freedom of the symbolic ``module`` for every N of ``lnc`` at once.

    ``lnc``: a ``range``, a list of N, one N, or ``"all"`` (every N ≥ 2). The answer for
    each N is ``racecheck(split([with_shard_bound(module, N)], N))``'s: ``.races`` (each
    with its least witness and the N it races at), ``.invalid`` (the N where that split
    or racecheck raises, with the first cause), ``.unknown`` (what is not decided) and
    ``.proved`` (why each other pair cannot race). A module with ``neuron_core_id`` is
    ``NeuronAssertion`` 9005. ``backend="z3"`` (test-only, needs ``z3-solver``) asks z3
    instead of isl; ``replay=False`` skips the concrete replay of witnesses (tests
    comparing the backends).
    """
    if not isinstance(module, Module):
        raise TypeError(f"module must be a Module, got {type(module).__name__}")
    asked, spec = _parse_lnc(lnc)
    t0 = time.perf_counter()
    text, proved = _core.racecheck_symbolic_sweep(module, asked)
    plan = json.loads(text)
    sweep = time.perf_counter() - t0
    valid: Intervals = [(lo, hi) for lo, hi in plan["valid"]]
    found, empty, timing = _collect(plan, _backend(backend), valid)
    races: list[SymbolicRace] = []
    for f in found.values():
        assert f.race is not None
        r = f.race
        races.append(
            SymbolicRace(
                r.function,
                r.a,
                r.b,
                r.location,
                r.kind,
                r.witness,
                nspec(f.racing, asked),
                f.racing,
            )
        )
    unknown = list(plan["unknown"])
    if replay and races:
        races, bad = _replay(module, races)
        unknown += bad
    races.sort(key=lambda r: (r.function, r.a.position, r.b.position, r.location["name"]))
    stats = dict(plan["stats"])
    stats.update(timing)
    stats["sweep_seconds"] = sweep
    stats["backend"] = backend
    stats["empty_sets"] = len(empty)
    return SymbolicRaceReport(
        lnc=spec,
        asked=asked,
        valid=valid,
        races=races,
        unknown=unknown,
        invalid=_invalid(plan),
        stats=stats,
        _proved=(proved, empty),
    )


__all__ = [
    "SymbolicRace",
    "SymbolicRaceReport",
    "SymbolicSide",
    "SymbolicWitness",
    "contains",
    "racecheck_symbolic",
    "with_shard_bound",
]
