"""Translation validation of lower_local_collectives (contract §3.6, §3.8):
the simulator gives the same Output sets for a collective's reference
semantics (the symbolic module) and for its lowering (split → lower →
extend), with no dynamic race, for every lowered kind, both SendRecv paths,
AllReduce's ops, in-place buffers, loops and N = 2, 4, 8.
"""

from __future__ import annotations

from typing import Any

import lncsplit
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lnc_builders import Json, aff, const, inst, load, loop, module, sap, shard
from lncsplit import sim
from tail_kernels import collective

ROWS, COLS, DT = 16, 16, "uint32"


def tensor(name: str, rows: int, mtype: str, kind: str = "Internal") -> Json:
    loc: Json = {"name": f"{name}_loc", "type": mtype}
    if mtype != "DRAM":
        loc["base"] = 0
    return {
        "name": name,
        "kind": kind,
        "dtype": DT,
        "tensor_shape": [rows, COLS],
        "locations": [loc],
    }


def full(s: str, p0: Any = None) -> Json:
    return sap(s, [[COLS, ROWS], [1, COLS]], [p0 or const(0), const(0)], DT)


def kernel(
    kind: str, n: int, mtype: str, op: str = "add", in_place: bool = False, looped: bool = False
) -> lncsplit.Module:
    """x (Input) → a on each core; the collective a → b; b → y (Output)."""
    mine = aff([(shard(n), ROWS)], 0)
    out = "a" if in_place else "b"
    load_ = inst("load", "DMACopy", ins=[full("x", mine)], outs=[full("a")])
    store = inst("store", "DMACopy", ins=[full(out)], outs=[full("y", mine)])
    if looped:
        # Two halves of the rows, one per iteration.
        half = ROWS // 2
        ivx = {
            "kind": "AffExprKind",
            "terms": [{"idx": {"kind": "AffIVKind", "axis": "i"}, "coeff": half}],
            "c": 0,
        }
        ap = [[COLS, half], [1, COLS]]
        body = [
            collective(
                "x_cc",
                kind,
                n,
                sap("a", ap, [ivx, const(0)], DT),
                sap(out, ap, [ivx, const(0)], DT),
                op,
            )
        ]
        cc = loop("l", "i", 2, body)
    else:
        cc = collective("x_cc", kind, n, full("a"), full(out), op)
    sets = [
        tensor("x", ROWS * n, "DRAM", "Input"),
        tensor("a", ROWS, mtype),
        tensor("b", ROWS, mtype),
        tensor("y", ROWS * n, "DRAM", "Output"),
    ]
    return load(module([load_, cc, store], sets))


def lowered(m: lncsplit.Module, n: int, **opts: Any) -> list[lncsplit.Module]:
    cores = lncsplit.split([m.clone()], n)
    cores = lncsplit.lower_local_collectives(cores, lncsplit.PassOptions(lnc_size=n, **opts))
    return lncsplit.extend_shared_lifetimes(cores)


def assert_same_meaning(m: lncsplit.Module, cores: list[lncsplit.Module]) -> None:
    e = sim.equivalent(m, cores)
    assert e, str(e)
    assert not e.b.races, e.b.races[0]


def opcodes(cores: list[lncsplit.Module]) -> set[str]:
    return {i.opcode for c in cores for i in c.function("main").instructions()}


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("mtype", ["DRAM", "SB"])
@pytest.mark.parametrize("kind", ["SendRecv", "SendRecvCCE", "AllReduce"])
def test_the_lowering_means_the_collective(kind: str, mtype: str, n: int) -> None:
    m = kernel(kind, n, mtype)
    cores = lowered(m, n)
    assert "CollectiveCompute" not in opcodes(cores)
    assert_same_meaning(m, cores)


def test_send_recv_through_gpsimd_sb2sb_and_through_a_stage_mean_the_same() -> None:
    m = kernel("SendRecv", 2, "SB")
    sb2sb = lowered(m, 2)
    staged = lowered(m, 2, sendrecv_to_gpsimd_max_bpp=16)
    assert "GPSIMDSB2SB" in opcodes(sb2sb) and "GPSIMDSB2SB" not in opcodes(staged)
    assert_same_meaning(m, sb2sb)
    assert_same_meaning(m, staged)


@pytest.mark.parametrize("op", ["add", "max", "min"])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_reduce_means_its_op(op: str, n: int) -> None:
    m = kernel("AllReduce", n, "DRAM", op)
    assert_same_meaning(m, lowered(m, n))


@pytest.mark.parametrize("mtype", ["DRAM", "SB"])
@pytest.mark.parametrize("kind", ["SendRecv", "AllReduce"])
def test_in_place_collectives_mean_the_same(kind: str, mtype: str) -> None:
    m = kernel(kind, 4 if kind == "AllReduce" else 2, mtype, in_place=True)
    n = 4 if kind == "AllReduce" else 2
    assert_same_meaning(m, lowered(m, n))


@pytest.mark.parametrize("kind", ["SendRecv", "SendRecvCCE", "AllReduce"])
def test_collectives_in_loops_mean_the_same(kind: str) -> None:
    m = kernel(kind, 2, "DRAM", looped=True)
    assert_same_meaning(m, lowered(m, 2))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["SendRecv", "SendRecvCCE", "AllReduce"]),
    n=st.sampled_from([2, 4, 8]),
    mtype=st.sampled_from(["DRAM", "SB"]),
    op=st.sampled_from(["add", "max", "min"]),
    in_place=st.booleans(),
    looped=st.booleans(),
    bpp=st.sampled_from([0, 1024]),
)
def test_every_lowering_means_its_collective(
    kind: str, n: int, mtype: str, op: str, in_place: bool, looped: bool, bpp: int
) -> None:
    m = kernel(kind, n, mtype, op, in_place, looped)
    assert_same_meaning(m, lowered(m, n, sendrecv_to_gpsimd_max_bpp=bpp))


def test_the_oracle_tells_a_lowering_without_its_middle_barrier_apart() -> None:
    import json

    m = kernel("AllReduce", 2, "DRAM")
    broken = []
    for c in lowered(m, 2):
        d = json.loads(c.to_json())
        block = d["functions"][0]["basic_blocks"][0]
        block["instructions"] = [i for i in block["instructions"] if i["name"] != "x_cc_ag"]
        broken.append(lncsplit.Module.from_json(json.dumps(d)))
    e = sim.equivalent(m, broken)
    assert not e
    assert e.b.races
