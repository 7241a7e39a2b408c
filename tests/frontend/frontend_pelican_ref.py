"""A tiny reference evaluator of the pelican v2 wire (contract §2), for tests only."""

from __future__ import annotations

from typing import Any

WRITTEN_TAGS = {
    "CCGetRankKind",
    "IndirectArgId",
    "AffIVKind",
    "IntRuntimeValueKind",
    "ShardIDKind",
    "AffExprKind",
    "SumKind",
    "MultKind",
    "FloorDivKind",
    "ModuloKind",
    "CCDivKind",
}
LEAF_TAGS = {"AffIVKind", "IntRuntimeValueKind", "ShardIDKind"}


def check_wire(e: dict[str, Any]) -> None:
    """Assert ``e`` is well-formed v2 wire (tags, AffExpr leaf terms, SumKind counts)."""
    k = e["kind"]
    assert k in WRITTEN_TAGS, k
    if k == "AffExprKind":
        assert isinstance(e["c"], int)
        for t in e["terms"]:
            assert t["idx"]["kind"] in LEAF_TAGS, t
            assert isinstance(t["coeff"], int)
            check_wire(t["idx"])
    elif k == "SumKind":
        assert e["n_terms"] == len(e["terms"])
        for t in e["terms"]:
            check_wire(t)
    elif k == "MultKind":
        check_wire(e["var"])
    elif k in ("FloorDivKind", "ModuloKind", "CCDivKind"):
        assert e["denom"] > 0
        check_wire(e["numer"])


def shard_ubs(e: dict[str, Any]) -> set[int]:
    """The ``ub`` of every ShardIDKind in ``e``."""
    k = e["kind"]
    if k == "ShardIDKind":
        return {e["ub"]}
    out: set[int] = set()
    if k == "AffExprKind":
        for t in e["terms"]:
            out |= shard_ubs(t["idx"])
    elif k == "SumKind":
        for t in e["terms"]:
            out |= shard_ubs(t)
    elif k == "MultKind":
        out |= shard_ubs(e["var"])
    elif k in ("FloorDivKind", "ModuloKind", "CCDivKind"):
        out |= shard_ubs(e["numer"])
    return out


def evaluate(e: dict[str, Any], shard: int | None) -> int:
    """Value of ``e`` with every ShardId bound to ``shard``."""
    k = e["kind"]
    if k == "ShardIDKind":
        assert shard is not None and 0 <= shard < e["ub"]
        return shard
    if k == "AffExprKind":
        return int(e["c"]) + sum(t["coeff"] * evaluate(t["idx"], shard) for t in e["terms"])
    if k == "SumKind":
        return sum(evaluate(t, shard) for t in e["terms"])
    if k == "MultKind":
        return evaluate(e["var"], shard) * int(e["scale"])
    if k in ("FloorDivKind", "CCDivKind"):
        return evaluate(e["numer"], shard) // int(e["denom"])
    if k == "ModuloKind":
        return evaluate(e["numer"], shard) % int(e["denom"])
    raise AssertionError(f"cannot evaluate {k}")


def predicate_holds(p: dict[str, Any], shard: int) -> bool:
    """An affine predicate under the binding (``ge`` defaults to true)."""
    v = evaluate(p["expr"], shard)
    return v >= 0 if p.get("ge", True) else v == 0
