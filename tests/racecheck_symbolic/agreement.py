"""The reference of racecheck_symbolic (contract §3.11): for each N, the concrete
checker on the raw split of ``with_shard_bound(m, N)``, and the comparison of the two."""

from __future__ import annotations

import json
import random
from typing import Any

import lncsplit
from lncsplit.passes import split
from lncsplit.passes.racecheck import racecheck
from lncsplit.passes.racecheck_symbolic import SymbolicRaceReport, with_shard_bound

Key = tuple[str, str, str, str]


def concrete(m: lncsplit.Module, n: int) -> set[Key] | int:
    """The racing (function, a, b, location) set at N = n, or the error code there."""
    try:
        cores = split([with_shard_bound(m, n)], n)
        rep = racecheck(cores)
    except lncsplit.NeuronAssertion as e:
        return int(e.code)
    return {(r.a.function, r.a.instruction, r.b.instruction, r.location.name) for r in rep.races}


def symbolic_at(rep: SymbolicRaceReport, n: int) -> set[Key] | int:
    """The symbolic report's answer at N = n in the same form."""
    if n in rep.invalid:
        return int(rep.invalid[n]["code"])
    return {
        (r.function, r.a.instruction, r.b.instruction, r.location["name"]) for r in rep.races_at(n)
    }


def disagreements(m: lncsplit.Module, rep: SymbolicRaceReport, ns: range) -> list[str]:
    """Every N where the symbolic answer is not the concrete one (9306 not compared)."""
    out = []
    for n in ns:
        c = concrete(m, n)
        if c == 9306:
            continue
        s = symbolic_at(rep, n)
        if s != c:
            out.append(f"N={n}: concrete {c!r}, symbolic {s!r}")
    return out


def _barriers(blocks: list[Any], out: list[tuple[list[Any], dict[str, Any]]]) -> None:
    for b in blocks:
        for i in b["instructions"]:
            if i["opcode"] == "CoreBarrier":
                out.append((b["instructions"], i))
            if i["opcode"] == "Loop":
                _barriers(i["blocks"], out)


def _drop_deps(blocks: list[Any], name: str) -> None:
    for b in blocks:
        for i in b["instructions"]:
            if "dependencies" in i:
                i["dependencies"] = [
                    d for d in i["dependencies"] if (d[0] if isinstance(d, list) else d) != name
                ]
            if i["opcode"] == "Loop":
                _drop_deps(i["blocks"], name)


def delete_barrier(
    m: lncsplit.Module, rng: random.Random, renumber: bool = True
) -> lncsplit.Module | None:
    """``m`` with one CoreBarrier (drawn by ``rng``) deleted — and, with ``renumber``, the
    others' ids made dense again, as the concretized verifier wants (1188)."""
    d = json.loads(m.to_json())
    found: list[tuple[list[Any], dict[str, Any]]] = []
    for f in d["functions"]:
        _barriers(f["basic_blocks"], found)
    if not found:
        return None
    where, victim = found[rng.randrange(len(found))]
    where.remove(victim)
    for f in d["functions"]:
        _drop_deps(f["basic_blocks"], victim["name"])
    if renumber:
        rest: list[tuple[list[Any], dict[str, Any]]] = []
        for f in sorted(d["functions"], key=lambda f: f["name"] != "main"):
            _barriers(f["basic_blocks"], rest)
        for k, (_, b) in enumerate(rest):
            b["id"] = k
    return lncsplit.Module.from_json(json.dumps(d))
