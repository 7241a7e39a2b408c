"""Builders of small BIR-JSON modules for the pass tests (contract §1)."""

from __future__ import annotations

import json
from typing import Any

import lncsplit

Json = dict[str, Any]


def shard(ub: int = 2) -> Json:
    return {"kind": "ShardIDKind", "ub": ub}


def aff(terms: list[tuple[Json, int]], c: int = 0) -> Json:
    return {"kind": "AffExprKind", "terms": [{"idx": i, "coeff": k} for i, k in terms], "c": c}


def const(c: int) -> Json:
    return aff([], c)


def iv(axis: str) -> Json:
    return {"kind": "AffIVKind", "axis": axis}


def on_core(core: int, ub: int = 2) -> Json:
    """Predicate: shard == core."""
    return {"expr": aff([(shard(ub), 1)], -core), "ge": False}


def from_core(core: int, ub: int = 2) -> Json:
    """Predicate: shard >= core."""
    return {"expr": aff([(shard(ub), 1)], -core), "ge": True}


def sap(memset: str, ap: list[list[int]], addrs: list[Json], dtype: str = "float32") -> Json:
    return {"kind": "symbolic_ap", "ap": ap, "dtype": dtype, "memsetref": memset, "addrs": addrs}


def inst(name: str, opcode: str = "NoOp", **kw: Any) -> Json:
    d: Json = {"name": name, "opcode": opcode, "ins": [], "outs": []}
    d.update(kw)
    return d


def loop(
    name: str, axis: str, ub: int, body: list[Json], lo: int = 0, step: int = 1, **kw: Any
) -> Json:
    return inst(
        name,
        "Loop",
        axis={"name": axis, "lo": lo, "ub": ub, "step": step},
        blocks=[{"name": f"{name}_body", "instructions": body}],
        **kw,
    )


def tensor(
    name: str, shape: list[int], mtype: str = "SB", dtype: str = "float32", **kw: Any
) -> Json:
    d: Json = {
        "name": name,
        "kind": "Internal",
        "dtype": dtype,
        "tensor_shape": shape,
        "locations": [{"name": f"{name}_loc", "type": mtype}],
    }
    d.update(kw)
    return d


def module(
    instructions: list[Json],
    allocations: list[Json] | None = None,
    name: str = "k_nc_symbolic",
    blocks: list[Json] | None = None,
    **kw: Any,
) -> Json:
    fn: Json = {
        "name": "main",
        "allocations": allocations or [],
        "basic_blocks": blocks or [{"name": "bb0", "instructions": instructions}],
    }
    d: Json = {"version": 2, "name": name, "arch": "gen3", "functions": [fn]}
    d.update(kw)
    return d


def load(d: Json) -> lncsplit.Module:
    return lncsplit.Module.from_json(json.dumps(d))


def names(m: lncsplit.Module, function: str = "main") -> list[str]:
    return [i.name for i in m.function(function).instructions()]
