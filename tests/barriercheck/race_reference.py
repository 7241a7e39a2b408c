"""A brute-force reference of lnc_barriercheck (contract §3.6), for small modules.

Written from the contract alone, on the modules' JSON: every instance is walked
(loops unrolled, masks evaluated through :mod:`lncsplit.pelican`), every
footprint is an explicit set of flat bytes, and every pair of instances on two
cores is compared. Slow on purpose; the property tests compare the Rust
checker with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import lncsplit
from lncsplit.pelican import Context

SIZES = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4}
SIZES |= {"bfloat16": 2, "float16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1}

Json = dict[str, Any]
Axes = dict[str, tuple[int, int, int]]


@dataclass(frozen=True)
class RefRace:
    a: tuple[int, str, int]  # (core, instruction, position)
    b: tuple[int, str, int]
    location: tuple[int, str]
    witness: tuple[int, int]
    kind: str
    band: tuple[int, int | None]


def _layout(s: Json) -> tuple[int, int, int, list[int]]:
    """(partitions, free elements, element size, S′ strides in ap order)."""
    shape = list(s["tensor_shape"])
    pd = s.get("partition_dim", 0)
    others = [d for i, d in enumerate(shape) if i != pd]
    free = math.prod(others)
    strides = [free]
    for k in range(len(others)):
        strides.append(math.prod(others[k + 1 :]))
    return shape[pd], free, SIZES[s["dtype"]], strides


class _Eval:
    def __init__(self) -> None:
        self.cache: dict[tuple[str, str], Any] = {}

    def __call__(self, expr: Json, axes: Axes, values: dict[str, int]) -> int | None:
        key = (json.dumps(expr, sort_keys=True), json.dumps(sorted(axes.items())))
        e = self.cache.get(key)
        if e is None:
            e = Context.from_json(expr, axes=axes)
            self.cache[key] = e
        return e.eval(values)  # type: ignore[no-any-return]


class Access:
    """One access instance: core, position, instruction, physical location
    (owner core, name), role (``read``, ``write``, ``acc:<op>``) and the
    ordinals of the counted barriers before it. Its bytes are computed on
    first use (most accesses are private and never compared)."""

    def __init__(
        self,
        core: int,
        pos: int,
        name: str,
        phys: tuple[int, str],
        role: str,
        barriers: tuple[int, ...],
        src: tuple[Json, Json, Axes, dict[str, int], _Eval],
    ) -> None:
        self.core, self.pos, self.name, self.phys = core, pos, name, phys
        self.role, self.barriers, self._src = role, barriers, src
        self._elems: frozenset[int] | None = None
        self._box: tuple[int, int, int, int] | None = None

    @property
    def esize(self) -> int:
        return _layout(self._src[1])[2]

    @property
    def elems(self) -> frozenset[int]:
        """The flat element indices it touches (bytes ``e·esize … +esize``)."""
        if self._elems is None:
            arg, s, axes, values, ev = self._src
            self._elems = _elems(_points(arg, s, ev, axes, values), s)
        return self._elems

    @property
    def box(self) -> tuple[int, int, int, int]:
        """(least, greatest partition, least, greatest element within a partition):
        a quick filter before the exact intersection."""
        if self._box is None:
            free = max(1, _layout(self._src[1])[1])
            rows = [e // free for e in self.elems] or [0]
            cols = [e % free for e in self.elems] or [0]
            self._box = (min(rows), max(rows), min(cols), max(cols))
        return self._box

    def least_common_byte(self, other: Access) -> int | None:
        (p0, p1, c0, c1), (q0, q1, d0, d1) = self.box, other.box
        if self.esize == other.esize and (p1 < q0 or q1 < p0 or c1 < d0 or d1 < c0):
            return None
        if self.esize == other.esize:
            common = self.elems & other.elems
            return min(common) * self.esize if common else None
        mine = {e * self.esize + k for e in self.elems for k in range(self.esize)}
        theirs = {e * other.esize + k for e in other.elems for k in range(other.esize)}
        both = mine & theirs
        return min(both) if both else None


def _points(arg: Json, s: Json, ev: _Eval, axes: Axes, values: dict[str, int]) -> list[int] | None:
    parts, free, es, strides = _layout(s)
    ap = arg["ap"]
    if arg["kind"] == "physical_ap":
        base = arg.get("offset", 0)  # in elements (contract §3.6, since 2026-12-02)
    else:
        addrs = [ev(a, axes, values) for a in arg["addrs"]]
        if any(a is None for a in addrs):
            return None
        vals = [int(a) for a in addrs if a is not None]
        if len(ap) == len(strides):
            base = sum(a * st for a, st in zip(vals, strides, strict=True))
        else:
            base = vals[0] * free + sum(vals[1:])
    pts = [base]
    for step, num in ap:
        pts = [p + step * i for p in pts for i in range(num)]
    return pts


def _elems(pts: list[int] | None, s: Json) -> frozenset[int]:
    parts, free, _, _ = _layout(s)
    if pts is None:
        return frozenset(range(parts * free))
    return frozenset(pts)


def _locations(s: Json) -> list[Json]:
    return s.get("locations") or [{"name": s["name"], "type": "DRAM"}]


def _resolve(core: int, s: Json, loc: Json, partner: bool) -> tuple[int, str]:
    rlt = loc.get("remote_local_target")
    if partner:
        return ((core + 1) & 1, loc["name"])
    if s.get("addr_space") == "Shared" or loc.get("is_shared_post_dram_alloc"):
        if rlt is not None and rlt["core"] == 0:
            return (0, rlt["name"])
        return (0, loc["name"])
    if rlt is not None:
        return (rlt["core"], rlt["name"])
    return (core, loc["name"])


def _instances(
    blocks: list[Json], ev: _Eval, axes: Axes, values: dict[str, int], pos: list[int]
) -> Iterator[tuple[Json, int, bool, Axes, dict[str, int]]]:
    """(instruction, position, mask decided, axes, IV values) in execution order."""
    for b in blocks:
        for inst in b["instructions"]:
            yield from _instance(inst, ev, axes, values, pos)


def _subtree(inst: Json) -> int:
    return 1 + sum(_subtree(i) for b in inst.get("blocks", []) for i in b["instructions"])


def _instance(
    inst: Json,
    ev: _Eval,
    axes: Axes,
    values: dict[str, int],
    pos: list[int],
    undecided: bool = False,
) -> Iterator[tuple[Json, int, bool, Axes, dict[str, int]]]:
    here = pos[0]
    mask = [ev(p["expr"], axes, values) for p in inst.get("predicates", [])]  # value of each expr
    holds = []
    for p, v in zip(inst.get("predicates", []), mask, strict=True):
        holds.append(None if v is None else (v >= 0 if p.get("ge", True) else v == 0))
    if any(h is False for h in holds):
        pos[0] += _subtree(inst)
        return
    decided = not undecided and all(h is not None for h in holds)
    yield inst, here, decided, axes, values
    pos[0] += 1
    if inst["opcode"] != "Loop":
        return
    ax = inst["axis"]
    inner = dict(axes)
    inner[ax["name"]] = (ax["lo"], ax["ub"], ax["step"])
    start = pos[0]
    v = ax["lo"]
    while v < ax["ub"]:
        pos[0] = start
        body = {**values, ax["name"]: v}
        for b in inst["blocks"]:
            for i in b["instructions"]:
                yield from _instance(i, ev, inner, body, pos, not decided)
        v += ax["step"]
    pos[0] = start + _subtree(inst) - 1


def accesses(
    cores: Sequence[lncsplit.Module], function: str
) -> list[tuple[list[Access], list[int]]]:
    """Per core: every access instance (to any location, resolved to its physical
    owner) and the ordinals of the counted barrier instances, in execution order."""
    docs = [json.loads(m.to_json()) for m in cores]
    ev = _Eval()
    out: list[tuple[list[Access], list[int]]] = []
    for c, d in enumerate(docs):
        f = next(f for f in d["functions"] if f["name"] == function)
        sets = {s["name"]: s for s in f["allocations"]}
        acc: list[Access] = []
        barriers: list[int] = []
        ordinal = _barrier_ordinals(f)
        for inst, pos, decided, axes, values in _instances(f["basic_blocks"], ev, {}, {}, [0]):
            if inst["opcode"] == "CoreBarrier":
                if decided:
                    barriers.append(ordinal[pos])
                continue
            op = inst.get("accumulate")
            for key in ("ins", "outs", "indirection_ins"):
                for k, arg in enumerate(inst.get(key, [])):
                    if arg.get("kind") not in ("symbolic_ap", "physical_ap"):
                        continue
                    s = sets[arg["memsetref"]]
                    role = "read" if key != "outs" else (f"acc:{op}" if op else "write")
                    partner = inst["opcode"] == "GPSIMDSB2SB" and key == "outs" and k == 0
                    for loc in _locations(s):
                        phys = _resolve(c, s, loc, partner)
                        src = (arg, s, axes, dict(values), ev)
                        acc.append(Access(c, pos, inst["name"], phys, role, tuple(barriers), src))
        out.append((acc, barriers))
    return out


def partition_bytes(cores: Sequence[lncsplit.Module], function: str) -> dict[tuple[int, str], int]:
    """Bytes per partition of every (core, location) of ``function``."""
    out: dict[tuple[int, str], int] = {}
    for c, m in enumerate(cores):
        f = next(f for f in json.loads(m.to_json())["functions"] if f["name"] == function)
        for s in f["allocations"]:
            _, free, es, _ = _layout(s)
            for loc in _locations(s):
                out[(c, loc["name"])] = free * es
    return out


def _barrier_ordinals(f: Json) -> dict[int, int]:
    ords: dict[int, int] = {}
    pos = 0

    def walk(blocks: list[Json]) -> None:
        nonlocal pos
        for b in blocks:
            for i in b["instructions"]:
                if i["opcode"] == "CoreBarrier":
                    ords[pos] = len(ords)
                pos += 1
                walk(i.get("blocks", []))

    walk(f["basic_blocks"])
    return ords


def _barrier_cores(core0: lncsplit.Module, function: str, n: int) -> list[set[int]]:
    f = next(f for f in json.loads(core0.to_json())["functions"] if f["name"] == function)
    out: list[set[int]] = []

    def walk(blocks: list[Json]) -> None:
        for b in blocks:
            for i in b["instructions"]:
                if i["opcode"] == "CoreBarrier":
                    out.append(set(i.get("cores") or range(n)))
                walk(i.get("blocks", []))

    walk(f["basic_blocks"])
    return out


def _kind(x: str, y: str) -> str | None:
    if x == "read" and y == "read":
        return None
    if x.startswith("acc:") and x == y:
        return None
    return "read-write" if "read" in (x, y) else "write-write"


Best = dict[tuple[Any, ...], tuple[int, int, int, str]]


def _pair(
    a: int, b: int, xs: list[Access], ys: list[Access], bc: list[set[int]], best: Best
) -> None:
    """Every racing instance pair of cores a and b into ``best`` (least witness per key)."""

    def epoch(bars: Sequence[int]) -> int:
        return sum(1 for k in bars if a in bc[k] and b in bc[k])

    on_b: dict[tuple[int, str], list[Access]] = {}
    for y in ys:
        on_b.setdefault(y.phys, []).append(y)
    for x in xs:
        for y in on_b.get(x.phys, []):
            kind = _kind(x.role, y.role)
            ex = epoch(x.barriers)
            if kind is None or ex != epoch(y.barriers):
                continue
            point = x.least_common_byte(y)
            if point is None:
                continue
            key = (a, x.pos, x.name, b, y.pos, y.name, x.phys)
            cand = (point, 0 if kind == "write-write" else 1, ex, kind)
            if key not in best or cand < best[key]:
                best[key] = cand


def races(cores: Sequence[lncsplit.Module], function: str = "main") -> set[RefRace]:
    """Every race of the cores in ``function``: each instruction pair and
    location once, with its least witness (ties: write-write, then the earlier
    epoch) and the band of the instance pair giving it."""
    n = len(cores)
    per_core = accesses(cores, function)
    bc = _barrier_cores(cores[0], function, n)
    pb = partition_bytes(cores, function)
    best: Best = {}
    totals: dict[tuple[int, int], int] = {}
    for a in range(n):
        for b in range(a + 1, n):
            totals[(a, b)] = sum(1 for k in per_core[a][1] if a in bc[k] and b in bc[k])
            _pair(a, b, per_core[a][0], per_core[b][0], bc, best)
    out: set[RefRace] = set()
    for (a, xp, xn, b, yp, yn, phys), (point, _, ep, kind) in best.items():
        size = pb[phys]
        hi = ep if ep < totals[(a, b)] else None
        witness = (point // size, point % size)
        out.add(RefRace((a, xn, xp), (b, yn, yp), phys, witness, kind, (ep - 1, hi)))
    return out
