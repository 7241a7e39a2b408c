"""expand_replication, contract §3.2."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import pytest
from lnc_builders import aff, const, inst, load, module, names, on_core, sap, shard, tensor
from lncsplit import NeuronAssertion


def matmult(
    name: str, memset: str = "x", r: int = 2, rows: int = 32, shift: int = 32
) -> dict[str, Any]:
    return inst(
        name,
        "Matmult",
        ins=[sap(memset, [[4, rows], [1, 4]], [const(0), const(0)])],
        replication_resolution=r,
        replication_num_rows=rows,
        replication_shift_amnt=shift,
    )


def writer(name: str = "w", preds: list[Any] | None = None) -> dict[str, Any]:
    return inst(
        name,
        "DMACopy",
        outs=[sap("x", [[4, 32], [1, 4]], [aff([(shard(), 0)], 0), const(0)])],
        predicates=preds or [],
    )


def replicated(**kw: Any) -> lncsplit.Module:
    return load(module([writer(**kw), matmult("mm")], [tensor("x", [32, 4])]))


def doc(m: lncsplit.Module) -> dict[str, Any]:
    return json.loads(m.to_json())  # type: ignore[no-any-return]


def test_ifmap_set_grows_by_the_replication_factor() -> None:
    m = replicated()
    lncsplit.expand_replication(m)
    assert m.function("main").memory_location_set("x").tensor_shape == [64, 4]


def test_matmult_access_pattern_spans_all_replicas() -> None:
    m = replicated()
    lncsplit.expand_replication(m)
    mm = next(i for i in m.function("main").instructions() if i.name == "mm")
    assert mm.ins[0].ap[0] == [4, 64]


def test_one_replicate_copy_is_inserted_after_each_writer() -> None:
    m = replicated(preds=[on_core(0)])
    lncsplit.expand_replication(m)
    assert names(m) == ["w", "w_replicate", "mm"]
    copy = doc(m)["functions"][0]["basic_blocks"][0]["instructions"][1]
    assert copy["opcode"] == "DMACopy"
    assert copy["mode"] == "Replicate"
    assert copy["ins"][0]["addrs"][0] == const(0)
    assert copy["outs"][0]["addrs"][0] == const(32)
    assert copy["outs"][0]["ap"][0] == [4, 32]
    assert copy["predicates"] == [on_core(0)]


def test_conflicting_replication_params_are_an_error() -> None:
    m = load(module([matmult("a", r=2), matmult("b", r=4, rows=32)], [tensor("x", [32, 4])]))
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.expand_replication(m)
    assert e.value.code == 9001


def test_growth_past_the_partition_count_is_an_error() -> None:
    m = load(module([matmult("a", r=4, rows=64, shift=64)], [tensor("x", [64, 4])]))
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.expand_replication(m)
    assert e.value.code == 9002


def test_extent_other_than_rows_is_an_error() -> None:
    m = load(module([matmult("a", r=2, rows=16, shift=16)], [tensor("x", [32, 4])]))
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.expand_replication(m)
    assert e.value.code == 9002


def test_module_without_replication_is_byte_identical() -> None:
    m = load(module([writer(), inst("n")], [tensor("x", [32, 4])]))
    before = m.to_bytes()
    lncsplit.expand_replication(m)
    assert m.to_bytes() == before


def test_main_is_visited_first() -> None:
    d = module([matmult("m_main", r=2)], [tensor("x", [32, 4])])
    other = {
        "name": "aux",
        "allocations": [tensor("x", [32, 4])],
        "basic_blocks": [{"name": "b", "instructions": [matmult("m_aux", r=2)]}],
    }
    d["functions"].insert(0, other)
    m = load(d)
    lncsplit.expand_replication(m)
    assert m.function("aux").memory_location_set("x").tensor_shape == [64, 4]
    assert m.function("main").memory_location_set("x").tensor_shape == [64, 4]


def test_expand_then_split_gives_spmd_identical_cores() -> None:
    m = replicated(preds=[on_core(0)])
    lncsplit.expand_replication(m)
    cores = lncsplit.split([m], 2)
    lncsplit.verify_concretized(cores, 2)
    shapes = [c.function("main").memory_location_set("x").tensor_shape for c in cores]
    assert shapes == [[64, 4], [64, 4]]


def test_split_then_expand_per_core_diverges() -> None:
    cores = lncsplit.split([replicated(preds=[on_core(0)])], 2)
    for c in cores:
        lncsplit.expand_replication(c)
    # core 0 still has the writer and gets a replicated copy; core 1 does not:
    # the per-core programs are no longer SPMD-identical.
    assert names(cores[0]) != names(cores[1])
    assert "w_replicate" in names(cores[0]) and "w_replicate" not in names(cores[1])


# ------------------------------------------------------------------ which copies (contract §3.2)


def pap(offset: int, ap: list[list[int]]) -> dict[str, Any]:
    return {
        "kind": "physical_ap",
        "ap": ap,
        "offset": offset,
        "dtype": "float32",
        "memref": "x_loc",
        "memsetref": "x",
    }


def expanded(out: dict[str, Any], r: int = 2, shift: int = 32) -> list[dict[str, Any]]:
    """Expand a module whose writer `w` writes `out` into x [32, 4] (F = 4
    float32 elements per partition); the instructions after expansion."""
    w = inst("w", "DMACopy", outs=[out])
    m = load(module([w, matmult("mm", r=r, shift=shift)], [tensor("x", [32, 4])]))
    lncsplit.expand_replication(m)
    return doc(m)["functions"][0]["basic_blocks"][0]["instructions"]  # type: ignore[no-any-return]


def test_physical_writer_copy_goes_to_replicas_1_and_up() -> None:
    # One copy: offset shifted by shift·F = 32·4 elements (offsets are
    # elements since 2026-12-02; bytes would be 32·4·4).
    w, copy, _mm = expanded(pap(0, [[4, 32], [1, 4]]))
    assert copy["name"] == "w_replicate" and copy["mode"] == "Replicate"
    assert copy["ins"][0] == w["outs"][0]
    assert copy["outs"][0]["offset"] == 32 * 4
    assert copy["outs"][0]["ap"] == [[4, 32], [1, 4]]


def test_writer_of_some_rows_gets_one_copy_per_replica() -> None:
    # The writer covers partitions 0…15 of 32: a single Replicate copy of its
    # AP would not fill the replicas, so each replica r gets its own copy.
    half = sap("x", [[4, 16], [1, 4]], [const(0), const(0)])
    w, c1, c2, _mm = expanded(half, r=3)
    assert [c1["name"], c2["name"]] == ["w_replicate_1", "w_replicate_2"]
    for r, c in ((1, c1), (2, c2)):
        assert c["ins"][0] == w["outs"][0]
        assert c["outs"][0]["addrs"][0] == const(32 * r)
        assert c["outs"][0]["ap"] == [[4, 16], [1, 4]]


def test_shard_dependent_writer_gets_one_copy_per_replica() -> None:
    # Each core writes its own half (partition 16·shard): shifted per replica.
    per_core = sap("x", [[4, 16], [1, 4]], [aff([(shard(), 16)], 0), const(0)])
    _w, c1, _mm = expanded(per_core)
    assert c1["name"] == "w_replicate_1"
    assert c1["outs"][0]["addrs"][0] == aff([(shard(), 16)], 32)


def test_shift_other_than_rows_gives_one_copy_per_replica() -> None:
    full = sap("x", [[4, 32], [1, 4]], [const(0), const(0)])
    _w, c1, _mm = expanded(full, shift=16)
    assert c1["name"] == "w_replicate_1"
    assert c1["outs"][0]["addrs"][0] == const(16)
    assert c1["outs"][0]["ap"][0] == [4, 32]


def test_physical_writer_of_some_rows_shifts_its_offset_per_replica() -> None:
    start = 16 * 4  # partition 16, in elements
    _w, c1, c2, _mm = expanded(pap(start, [[4, 16], [1, 4]]), r=3)
    assert [c1["outs"][0]["offset"], c2["outs"][0]["offset"]] == [start + 128, start + 256]


def test_a_physical_writer_starting_past_partition_0_is_not_spanning_all_rows() -> None:
    # offset 2·F elements starts at partition 2: the "spans all rows" test is
    # offset < F in elements (read as bytes, 8 < F·4 would have said yes).
    out = pap(8, [[4, 30], [1, 4]])
    _w, *copies, _mm = expanded(out, r=2)
    assert [c["name"] for c in copies] == ["w_replicate_1"]
    assert copies[0]["outs"][0]["offset"] == 8 + 32 * 4


def test_writer_through_an_unmodelled_argument_kind_is_refused() -> None:
    reg = {"kind": "register_ap", "ap": [[4, 32], [1, 4]], "dtype": "float32", "memsetref": "x"}
    m = load(module([inst("w", "DMACopy", outs=[reg]), matmult("mm")], [tensor("x", [32, 4])]))
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.expand_replication(m)
    assert e.value.code == 9004 and "register_ap" in str(e.value)
