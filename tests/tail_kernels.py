"""Kernels and checks for the LNC tail tests (contract §3.6).

``collective_kernel`` builds a symbolic module with one ``CollectiveCompute``;
``bracketed`` is an exact structural check of the barriers lowering inserts:
every lowered collective's instructions sit, on every core, between its
``<x>_before`` and ``<x>_after`` all-core barriers with nothing else between
them (so every access of another instruction on another core is on the far
side of one of them), and barrier ids are dense in program order.
"""

from __future__ import annotations

from typing import Any

import lncsplit
from lnc_builders import Json, aff, const, inst, load, loop, module, sap, shard

CC_KINDS = [
    "SendRecv",
    "SendRecvCCE",
    "AllReduce",
    "ReduceScatter",
    "AllGather",
    "AllToAll",
    "AllToAllV",
    "Permute",
    "PermuteReduce",
    "PermuteImplicit",
    "PermuteReduceImplicit",
]
LOWERED = {"SendRecv", "SendRecvCCE", "AllReduce"}


def tensor(name: str, shape: list[int], mtype: str = "DRAM", **kw: Any) -> Json:
    loc: Json = {"name": f"{name}_loc", "type": mtype, "addr": 0}
    if mtype != "DRAM":
        loc["base"] = 0
    d: Json = {
        "name": name,
        "kind": "Internal",
        "dtype": "float32",
        "tensor_shape": shape,
        "locations": [loc],
    }
    d.update(kw)
    return d


def ring(n: int, step: int = 1) -> Json:
    """``(shard + step) mod n``."""
    return {"kind": "ModuloKind", "numer": aff([(shard(n), 1)], step), "denom": n}


def collective(
    name: str,
    kind: str,
    n: int,
    ins: Json,
    outs: Json,
    op: str = "add",
    send: Json | None = None,
    recv: Json | None = None,
) -> Json:
    return inst(
        name,
        "CollectiveCompute",
        engine="Pool",
        ins=[ins],
        outs=[outs],
        cc_channel={"kind": kind, "replica_groups": [list(range(n))], "op": op},
        send_to_rank=send if send is not None else ring(n, 1),
        recv_from_rank=recv if recv is not None else ring(n, n - 1),
    )


def collective_kernel(
    kind: str, n: int, mtype: str = "DRAM", rows: int = 128, in_place: bool = False
) -> lncsplit.Module:
    """One collective over ``[128, 64]`` float32 sets ``a`` → ``b``: each core
    moves ``rows / n`` rows of its own (all rows for AllReduce), a producer
    writes ``a`` first and a consumer reads ``b`` after."""
    per = rows if kind == "AllReduce" else max(rows // n, 1)
    base = const(0) if kind == "AllReduce" else aff([(shard(n), per)], 0)
    ap = [[64, per], [1, 64]]
    out = "a" if in_place else "b"
    body = [
        inst("produce", "Memset", outs=[sap("a", ap, [base, const(0)])]),
        collective("x", kind, n, sap("a", ap, [base, const(0)]), sap(out, ap, [base, const(0)])),
        inst("consume", "Activation", ins=[sap(out, ap, [base, const(0)])]),
    ]
    sets = [tensor("a", [128, 64], mtype), tensor("b", [128, 64], mtype)]
    return load(module(body, sets))


def looped_kernel(n: int) -> lncsplit.Module:
    """A SendRecv inside a loop, its addresses moving with the loop IV."""
    ivx: Json = {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "AffIVKind", "axis": "i"}, "coeff": 16}],
        "c": 0,
    }
    ap = [[64, 16], [1, 64]]
    body = [
        collective("x", "SendRecv", n, sap("a", ap, [ivx, const(0)]), sap("b", ap, [ivx, const(0)]))
    ]
    sets = [tensor("a", [128, 64]), tensor("b", [128, 64])]
    return load(module([loop("l", "i", 4, body)], sets))


def split(m: lncsplit.Module, n: int) -> list[lncsplit.Module]:
    return lncsplit.split([m], n)


def top_level(m: lncsplit.Module) -> list[list[Any]]:
    """Every instruction list (blocks and loop bodies) of every function."""
    out: list[list[Any]] = []

    def visit(blocks: list[Any]) -> None:
        for b in blocks:
            out.append(b.instructions)
            for i in b.instructions:
                visit(i.blocks)

    for f in m.functions:
        visit(f.blocks)
    return out


def bracketed(cores: list[lncsplit.Module], lowered: list[str]) -> None:
    """Assert the structural race-freedom argument of every lowering."""
    n = len(cores)
    for c, m in enumerate(cores):
        ids = [
            i.fields["id"]
            for f in m.functions
            for i in f.instructions()
            if i.opcode == "CoreBarrier"
        ]
        assert ids == list(range(len(ids))), f"core {c}: barrier ids {ids}"
        for x in lowered:
            found = False
            for insts in top_level(m):
                names = [i.name for i in insts]
                if f"{x}_before" not in names:
                    continue
                found = True
                lo, hi = names.index(f"{x}_before"), names.index(f"{x}_after")
                assert lo < hi
                for i in insts[lo : hi + 1]:
                    assert i.name == x or i.name.startswith(f"{x}_"), f"{i.name} inside {x}"
                    if i.opcode == "CoreBarrier":
                        assert i.fields["cores"] == list(range(n))
                    assert i.opcode != "CollectiveCompute"
            assert found, f"core {c}: {x} is not bracketed"
