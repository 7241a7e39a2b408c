"""bir_linker invariants on generated modules (contract §3.7), with hypothesis:
the exact round trip, the layout, barrier numbering and alias sets."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import _core

seeds = st.integers(min_value=0, max_value=2**32 - 1)
lncs = st.sampled_from([1, 2, 4, 8])
sizes = st.integers(min_value=5, max_value=400)
fast = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def split_cores(seed: int, n: int, lnc: int) -> list[lncsplit.Module]:
    m = _core.generate_module(seed, n, lnc)
    lncsplit.expand_replication(m)
    return lncsplit.split([m], lnc)


def pipeline_cores(seed: int, n: int, lnc: int) -> list[lncsplit.Module]:
    """Cores after the whole pipeline: shared DRAM placed and synced."""
    return lncsplit.run_pipeline(
        [_core.generate_module(seed, n, lnc)], lncsplit.PassOptions(lnc_size=lnc)
    )


def doc(m: lncsplit.Module) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(m.to_bytes())
    return result


def walk(instructions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Instructions in the order the verifier reads them (Loop bodies inline)."""
    out = []
    for i in instructions:
        out.append(i)
        for b in i.get("blocks", []):
            out.extend(walk(b["instructions"]))
    return out


def barriers(d: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f["name"], i)
        for f in d["functions"]
        for b in f["basic_blocks"]
        for i in walk(b["instructions"])
        if i["opcode"] == "CoreBarrier"
    ]


@fast
@given(seeds, sizes, lncs)
def test_unlink_of_link_gives_the_split_cores_bytes_back(seed: int, n: int, lnc: int) -> None:
    cores = split_cores(seed, n, lnc)
    back = lncsplit.unlink(lncsplit.link(cores))
    assert [c.to_bytes() for c in back] == [c.to_bytes() for c in cores]


@fast
@given(seeds, sizes, lncs)
def test_unlink_of_link_gives_the_pipeline_cores_bytes_back(seed: int, n: int, lnc: int) -> None:
    cores = pipeline_cores(seed, n, lnc)
    back = lncsplit.unlink(lncsplit.link(cores))
    assert [c.to_bytes() for c in back] == [c.to_bytes() for c in cores]


@fast
@given(seeds, sizes, lncs)
def test_the_round_trip_survives_writing_the_linked_module(seed: int, n: int, lnc: int) -> None:
    cores = pipeline_cores(seed, n, lnc)
    text = lncsplit.link(cores).to_bytes()
    reread = lncsplit.Module.from_json(text)
    assert reread.to_bytes() == text
    assert [c.to_bytes() for c in lncsplit.unlink(reread)] == [c.to_bytes() for c in cores]


@fast
@given(seeds, sizes, lncs)
def test_dispatch_calls_every_core_main_in_core_order(seed: int, n: int, lnc: int) -> None:
    d = doc(lncsplit.link(split_cores(seed, n, lnc)))
    main = d["functions"][0]
    assert main["name"] == "main"
    assert [b["name"] for b in main["basic_blocks"]] == ["dispatch"]
    calls = main["basic_blocks"][0]["instructions"]
    assert [(i["name"], i["opcode"], i["callee"], i["core"]) for i in calls] == [
        (f"call_def_{c}_instance_0", "Call", f"nc{c:02d}.main", c) for c in range(lnc)
    ]
    tags = [f["name"].split(".", 1)[0] for f in d["functions"][1:]]
    assert tags == sorted(tags)
    assert d["attributes"]["lnc"] == lnc
    assert "neuron_core_id" not in d["attributes"]


@fast
@given(seeds, sizes, lncs)
def test_every_core_main_is_framed_by_the_linker(seed: int, n: int, lnc: int) -> None:
    d = doc(lncsplit.link(split_cores(seed, n, lnc)))
    fns = {f["name"]: f for f in d["functions"]}
    for c in range(lnc):
        blocks = fns[f"nc{c:02d}.main"]["basic_blocks"]
        first = blocks[0]["instructions"][0]
        assert (first["name"], first["opcode"]) == (f"I-SQI-{c}", "SwitchQueueInstance")
        cb, ret = blocks[-1]["instructions"][-2:]
        assert (cb["name"], cb["opcode"], cb["cores"]) == (
            "cb_return",
            "CoreBarrier",
            list(range(lnc)),
        )
        assert "local_id" not in cb
        assert (ret["name"], ret["opcode"]) == (f"return_nc{c:02d}", "Return")


@fast
@given(seeds, sizes, lncs)
def test_barrier_ids_are_dense_and_global_with_local_ids_kept(seed: int, n: int, lnc: int) -> None:
    cores = split_cores(seed, n, lnc)
    linked = barriers(doc(lncsplit.link(cores)))
    assert [b["id"] for _, b in linked] == list(range(len(linked)))
    for c, core in enumerate(cores):
        own = [b.get("id") for _, b in barriers(doc(core))]
        kept = [
            b.get("local_id")
            for f, b in linked
            if f.startswith(f"nc{c:02d}.") and b["name"] != "cb_return"
        ]
        assert kept == own
    lncsplit.verify_bir(lncsplit.link(cores))


@fast
@given(seeds, sizes, st.sampled_from([2, 4]))
def test_shared_sets_are_one_set_in_main_named_by_alias_of(seed: int, n: int, lnc: int) -> None:
    cores = pipeline_cores(seed, n, lnc)
    d = doc(lncsplit.link(cores))
    main_sets = {s["name"]: s for s in d["functions"][0]["allocations"]}
    expected = {
        f"{f.name}.{s.name}"
        for core in cores
        for f in core.functions
        for s in f.allocations
        if s.addr_space == "Shared" or any(loc.is_shared_post_dram_alloc for loc in s.locations)
    }
    assert set(main_sets) == expected
    for f in d["functions"][1:]:
        fname = f["name"].split(".", 1)[1]
        for s in f["allocations"]:
            if "alias_of" in s:
                assert s["alias_of"] == f"{fname}.{s['name']}"
                assert s["alias_of"] in main_sets
            else:
                assert f"{fname}.{s['name']}" not in main_sets or s.get("addr_space") != "Shared"


@fast
@given(seeds, sizes, st.sampled_from([1, 2, 4]))
def test_tensor_map_gives_every_core_location_of_inputs_and_outputs(
    seed: int, n: int, lnc: int
) -> None:
    cores = pipeline_cores(seed, n, lnc)
    tm = lncsplit.tensor_map(lncsplit.link(cores))
    want: dict[str, list[dict[str, Any]]] = {}
    for c, core in enumerate(cores):
        for f in core.functions:
            for s in f.allocations:
                if s.kind in ("Input", "Output"):
                    want.setdefault(f"{f.name}.{s.name}", []).extend(
                        {"core": c, "location": loc.name, "addr": loc.addr} for loc in s.locations
                    )
    assert {k: v["cores"] for k, v in tm.items()} == want
    assert all(v["kind"] in ("Input", "Output") for v in tm.values())
