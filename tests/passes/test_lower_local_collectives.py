"""lower_local_collectives (order 80, contract §3.6) through the public API.

The Rust tests (``rust/src/passes/lower_local_collectives/tests.rs``) check
every lowering against an exact race check and a data-movement simulator;
these check what a Python user sees: in-place mutation, the sequences, the
proxies, the option, the log line and every error code.
"""

from __future__ import annotations

import logging

import lncsplit
import pytest
from lnc_builders import aff, const, inst, load, module, sap, shard
from tail_kernels import (
    CC_KINDS,
    LOWERED,
    bracketed,
    collective,
    collective_kernel,
    looped_kernel,
    split,
    tensor,
)


def kinds(m: lncsplit.Module) -> list[tuple[str, str]]:
    return [(i.name, i.opcode) for i in m.function("main").instructions()]


def lower(cores: list[lncsplit.Module], **opts: int) -> list[lncsplit.Module]:
    options = lncsplit.PassOptions(lnc_size=len(cores), **opts)  # type: ignore[arg-type]
    return lncsplit.lower_local_collectives(cores, options)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("kind", CC_KINDS)
def test_every_kind_lowers_and_passes_the_concretized_verifier(kind: str, n: int) -> None:
    cores = split(collective_kernel(kind, n), n)
    out = lower(cores)
    lncsplit.verify_concretized(out, n)
    if kind in LOWERED:
        assert all(op != "CollectiveCompute" for m in out for _, op in kinds(m))
        bracketed(out, ["x"])
    else:
        for m in out:
            names = [name for name, _ in kinds(m)]
            assert names == ["produce", "x_fence", "x", "consume"]


@pytest.mark.parametrize("kind", CC_KINDS)
def test_one_core_is_left_untouched(kind: str) -> None:
    m = collective_kernel(kind, 2)
    before = m.to_bytes()
    assert lncsplit.lower_local_collectives([m]) == [m]
    assert m.to_bytes() == before


def test_the_cores_are_lowered_in_place_and_returned() -> None:
    cores = split(collective_kernel("AllReduce", 2), 2)
    ids = [id(m) for m in cores]
    out = lncsplit.lower_local_collectives(cores)
    assert [id(m) for m in out] == ids
    assert "x_rs_init" in [name for name, _ in kinds(cores[0])]


def test_send_recv_between_two_cores_sb_is_one_gpsimd_sb2sb_of_the_same_name() -> None:
    out = lower(split(collective_kernel("SendRecv", 2, "SB"), 2))
    for m in out:
        assert kinds(m)[1:4] == [
            ("x_before", "CoreBarrier"),
            ("x", "GPSIMDSB2SB"),
            ("x_after", "CoreBarrier"),
        ]
    assert out[1].function("main").memory_location("b_loc").written_by_another_core


def test_the_bpp_option_sends_larger_moves_through_a_dram_stage() -> None:
    assert lncsplit.PassOptions().sendrecv_to_gpsimd_max_bpp == 1024
    out = lower(split(collective_kernel("SendRecv", 2, "SB"), 2), sendrecv_to_gpsimd_max_bpp=128)
    names = [name for name, _ in kinds(out[0])]
    assert names[1:6] == ["x_before", "x_send", "x_mid", "x", "x_after"]
    assert out[0].function("main").memory_location_set("x_stage") is not None
    with pytest.raises(ValueError, match="sendrecv_to_gpsimd_max_bpp"):
        lncsplit.PassOptions(sendrecv_to_gpsimd_max_bpp=-1)


def test_an_in_place_send_recv_is_staged_because_sb2sb_would_race() -> None:
    out = lower(split(collective_kernel("SendRecv", 2, "SB", in_place=True), 2))
    assert all(op != "GPSIMDSB2SB" for _, op in kinds(out[0]))
    bracketed(out, ["x"])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_a_dma_writes_the_receiver_through_proxies_the_same_on_every_core(n: int) -> None:
    out = lower(split(collective_kernel("SendRecvCCE", n), n))
    for c, m in enumerate(out):
        f = m.function("main")
        proxies = sorted(s.name for s in f.allocations if "_remote_" in s.name)
        assert proxies == sorted(f"b_remote_{t}" for t in range(n))
        t = (c + 1) % n
        rlt = f.memory_location(f"b_loc_remote_{t}").remote_local_target
        assert rlt == {"name": "b_loc", "core": t}
        assert f.memory_location("b_loc").written_by_another_core
        x = next(i for i in f.instructions() if i.name == "x")
        assert (x.opcode, x.outs[0].memsetref) == ("DMACopy", f"b_remote_{t}")


@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_reduce_is_reduce_scatter_barrier_all_gather(n: int) -> None:
    out = lower(split(collective_kernel("AllReduce", n), n))
    for c, m in enumerate(out):
        others = [p for p in range(n) if p != c]
        want = ["x_before", "x_rs_init", "x_rs"]
        want += [f"x_rs_{p}" for p in others] + ["x_ag"] + [f"x_ag_{p}" for p in others]
        want += ["x_after"]
        assert [name for name, _ in kinds(m)][1:-1] == want
        f = m.function("main")
        rs = next(i for i in f.instructions() if i.name == f"x_rs_{others[0]}")
        assert rs.fields.get("accumulate") == "add"
        # The consumer's dependency on the collective follows its completion.
    bracketed(out, ["x"])


def test_all_reduce_into_sb_is_staged_through_dram() -> None:
    out = lower(split(collective_kernel("AllReduce", 2, "SB"), 2))
    names = [name for name, _ in kinds(out[0])]
    assert names[-4:-1] == ["x_mid", "x", "x_after"]
    bracketed(out, ["x"])


def test_a_collective_in_a_loop_is_bracketed_in_its_body() -> None:
    out = lower(split(looped_kernel(2), 2))
    lncsplit.verify_concretized(out, 2)
    bracketed(out, ["x"])


def test_a_dependency_on_a_lowered_collective_follows_its_after_barrier() -> None:
    m = collective_kernel("AllReduce", 2)
    import json

    d = json.loads(m.to_json())
    d["functions"][0]["basic_blocks"][0]["instructions"][2]["dependencies"] = [["x", "Flow"]]
    out = lower(split(lncsplit.Module.from_json(json.dumps(d)), 2))
    consume = next(i for i in out[0].function("main").instructions() if i.name == "consume")
    assert consume.dependencies == [("x_after", "Flow")]
    lncsplit.verify_bir(out[0], 2)


def test_the_renumbering_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="lncsplit.tail"):
        lower(split(collective_kernel("AllReduce", 2), 2))
    messages = [r.getMessage() for r in caplog.records]
    assert "Renumbering core barriers." in messages
    assert any(msg.startswith("Lowered AllReduce x of function main") for msg in messages)


def test_options_for_another_lnc_are_refused() -> None:
    cores = split(collective_kernel("AllReduce", 2), 2)
    with pytest.raises(ValueError, match="lnc_size"):
        lncsplit.lower_local_collectives(cores, lncsplit.PassOptions(lnc_size=4))


# ------------------------------------------------------------------- errors


def bad_kernel(code: int) -> lncsplit.Module:
    ap = [[64, 64], [1, 64]]
    ins, outs = sap("a", ap, [const(0), const(0)]), sap("b", ap, [const(0), const(0)])
    sets = [tensor("a", [128, 64]), tensor("b", [128, 64])]
    body: list[dict[str, object]]
    if code == 9101:
        x = collective("x", "SendRecv", 2, ins, outs)
        x["predicates"] = [{"expr": aff([(shard(2), 1)], 0), "ge": False}]
        body = [x]
    elif code == 9102:  # counts no lowering fits (a missing scatter dim is gather-and-reduce)
        sets = [tensor("a", [128, 2]), tensor("b", [128, 4])]
        ins = sap("a", [[2, 128], [1, 2]], [const(0), const(0)])
        outs = sap("b", [[4, 128], [1, 4]], [const(0), const(0)])
        body = [collective("x", "AllReduce", 2, ins, outs)]
    elif code == 9103:
        body = [collective("x", "Permute", 2, ins, outs, send=const(0), recv=const(0))]
    elif code == 9104:
        body = [inst("x_before"), collective("x", "SendRecv", 2, ins, outs)]
    else:
        body = [collective("x", "AllReduce", 2, ins, outs, op="mul")]
    return load(module(body, sets))


@pytest.mark.parametrize("code", [9101, 9102, 9103, 9104, 9105])
def test_each_refusal_has_its_code_and_leaves_the_cores_unchanged(code: int) -> None:
    cores = split(bad_kernel(code), 2)
    before = [m.to_bytes() for m in cores]
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.lower_local_collectives(cores)
    assert e.value.code == code
    assert e.value.location == "lncsplit/lower_local_collectives"
    assert [m.to_bytes() for m in cores] == before


def test_cores_out_of_order_or_given_twice_are_9006() -> None:
    cores = split(collective_kernel("AllReduce", 2), 2)
    for bad in ([cores[1], cores[0]], [cores[0], cores[0]]):
        with pytest.raises(lncsplit.NeuronAssertion) as e:
            lncsplit.lower_local_collectives(bad)
        assert e.value.code == 9006
    assert cores[0].neuron_core_id == 0 and cores[1].neuron_core_id == 1
