"""Hand-built symbolic modules whose race answer depends on N (contract §3.11)."""

from __future__ import annotations

from typing import Any

import lncsplit
from lnc_builders import aff, const, inst, iv, loop, module, sap, shard, tensor

Json = dict[str, Any]

COLS = 128


def shared(name: str = "sh", cols: int = COLS) -> Json:
    return tensor(name, [1, cols], "DRAM", addr_space="Shared")


def private() -> Json:
    return tensor("src", [1, COLS], "DRAM")


def cols(set_: str, start: Json, n: int, total: int = COLS) -> Json:
    """``n`` columns of the one-partition set from column ``start``."""
    return sap(set_, [[total, 1], [1, n]], [const(0), start])


def write(name: str, start: Json, n: int, total: int = COLS, **kw: Any) -> Json:
    return inst(
        name, "DMACopy", ins=[cols("src", const(0), n)], outs=[cols("sh", start, n, total)], **kw
    )


def read(name: str, start: Json, n: int, **kw: Any) -> Json:
    return inst(name, "DMACopy", ins=[cols("sh", start, n)], outs=[cols("src", const(0), n)], **kw)


def barrier(name: str, k: int, cores: list[int] | None = None) -> Json:
    d = inst(name, "CoreBarrier", id=k, runtime_semaphore=0)
    d["cores"] = cores if cores is not None else []
    return d


def floordiv(e: Json, d: int) -> Json:
    return {"kind": "FloorDivKind", "numer": e, "denom": d}


def modulo(e: Json, d: int) -> Json:
    return {"kind": "ModuloKind", "numer": e, "denom": d}


def mult(e: Json, k: int) -> Json:
    return {"kind": "MultKind", "var": e, "scale": k}


def pred(e: Json, ge: bool = True) -> Json:
    return {"expr": e, "ge": ge}


def s(k: int = 1, c: int = 0) -> Json:
    """``k·shard + c``."""
    return aff([(shard(), k)], c)


def build(instructions: list[Json], cols: int = COLS) -> lncsplit.Module:
    """A module of ``instructions`` over the shared set ``sh`` (``cols`` columns) and the
    private ``src``."""
    import json

    return lncsplit.Module.from_json(
        json.dumps(module(instructions, [shared(cols=cols), private()]))
    )


def overlap_from_three() -> lncsplit.Module:
    """Core s writes columns ``64·(s mod 2) …+64``: cores 0 and 2 collide, so the
    copies race only once there is a core 2 (N ≥ 3)."""
    return build([write("w", mult(modulo(s(), 2), 64), 64)])


def late_cores() -> lncsplit.Module:
    """``late`` runs on cores ≥ 2 only (predicate ``shard − 2 ≥ 0``) and writes what
    ``early`` (core 0) reads: they race for N ≥ 3, two copies of ``late`` for N ≥ 4."""
    return build(
        [
            read("early", const(0), 16, predicates=[pred(s(1, 0), ge=False)]),
            write("late", const(0), 16, predicates=[pred(s(1, -2))]),
        ]
    )


def pairs_of_cores(disjoint: bool) -> lncsplit.Module:
    """Core s writes 32 columns from ``(s div 2)·64``: cores 2k and 2k+1 collide at every
    N, unless each adds ``32·(s mod 2)`` (``disjoint``), a proof through quotients. The
    set has 256 columns: every N ≤ 8 is valid, cores ≥ 8 leave it (9302)."""
    start = mult(floordiv(s(), 2), 64)
    if disjoint:
        start = {"kind": "SumKind", "n_terms": 2, "terms": [start, mult(modulo(s(), 2), 32)]}
    return build([write("w", start, 32, total=256)], cols=256)


def same_columns() -> lncsplit.Module:
    """Every core writes columns 0…15: a race at every N."""
    return build([write("w", const(0), 16)])


def barrier_of_two() -> lncsplit.Module:
    """Core 0 writes, a barrier over cores [0, 1] only, every core reads: ordered at
    N = 2, a race between core 0 and core 2 from N = 3."""
    return build(
        [
            write("w0", const(0), 16, predicates=[pred(s(1, 0), ge=False)]),
            barrier("cb", 0, [0, 1]),
            read("r", const(0), 16),
        ]
    )


def barrier_in_loop(rotate: bool) -> lncsplit.Module:
    """A loop of (core 0 writes, barrier, every core reads): the read of iteration i and
    the write of iteration i + 1 are in one epoch — a race unless the loop rotates
    between two slots (``rotate``)."""
    start = mult(modulo(aff([(iv("i"), 1)]), 2), 16) if rotate else const(0)
    body = [
        write("w", start, 16, predicates=[pred(s(1, 0), ge=False)]),
        barrier("cb", 0),
        read("r", start, 16),
    ]
    return build([loop("l", "i", 4, body)])


def register_address() -> lncsplit.Module:
    """Every core writes where register r0 says: the symbolic checker cannot know."""
    import json

    reg = {"kind": "IntRuntimeValueKind", "regref": "r0"}
    d = module([write("w", aff([(reg, 1)]), 16)], [shared(), private()])
    d["functions"][0]["registers"] = ["r0"]
    return lncsplit.Module.from_json(json.dumps(d))


def halves() -> lncsplit.Module:
    """Core s writes 16 columns from ``(s mod 2)·64 + (s div 2)·16`` of 256: even cores
    fill the first half, odd cores the second, apart while ``s div 2 < 4`` — for N ≤ 8
    (no lemma sees it: a solver proof); at N = 9 core 8 comes back onto core 1's
    columns 64…79 (a race, least witness cores 1 and 8, byte 256)."""
    start = {
        "kind": "SumKind",
        "n_terms": 2,
        "terms": [mult(modulo(s(), 2), 64), mult(floordiv(s(), 2), 16)],
    }
    return build([write("w", start, 16, total=256)], cols=256)
