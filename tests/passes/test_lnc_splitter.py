"""lnc_splitter, contract §3.1 — one test per promised behaviour."""

from __future__ import annotations

import json
import os

import lncsplit
import pytest
from lnc_builders import (
    aff,
    const,
    from_core,
    inst,
    iv,
    load,
    loop,
    module,
    names,
    on_core,
    sap,
    shard,
    tensor,
)
from lncsplit import NeuronAssertion


def two_core_module(name: str = "k_nc_symbolic") -> lncsplit.Module:
    return load(
        module(
            [
                inst("all"),
                inst("only0", predicates=[on_core(0)]),
                inst("only1", predicates=[on_core(1)], dependencies=[["only0", "Flow"]]),
                inst(
                    "w",
                    "DMACopy",
                    outs=[sap("t", [[4, 32], [1, 4]], [aff([(shard(), 32)]), const(0)])],
                ),
            ],
            [tensor("t", [64, 4])],
            name=name,
        )
    )


def test_lnc_1_passes_modules_through_untouched() -> None:
    m = two_core_module()
    before = m.to_json()
    out = lncsplit.split([m], 1)
    assert len(out) == 1 and out[0] is m
    assert m.neuron_core_id is None
    assert m.name == "k_nc_symbolic"
    assert m.to_json() == before


def test_split_orders_output_module_major_core_minor() -> None:
    a, b = two_core_module("a_nc_symbolic"), two_core_module("b_nc_symbolic")
    out = lncsplit.split([a, b], 2)
    assert [m.name for m in out] == ["a_nc00", "a_nc01", "b_nc00", "b_nc01"]
    assert [m.neuron_core_id for m in out] == [0, 1, 0, 1]


def test_last_core_is_the_original_module_object() -> None:
    m = two_core_module()
    out = lncsplit.split([m], 4 // 2)
    assert out[1] is m
    assert out[0] is not m


def test_split_on_a_single_module_raises_738() -> None:
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.split(two_core_module(), 2)  # type: ignore[arg-type]
    assert e.value.code == 738
    assert e.value.message == "false"
    assert e.value.location == "lnc_splitter.cpp:162"


def test_concretize_renames_nc_symbolic_to_two_digit_core() -> None:
    out = lncsplit.split([two_core_module("x_nc_symbolic_y")], 2)
    assert [m.name for m in out] == ["x_nc00_y", "x_nc01_y"]


def test_every_nc_symbolic_in_the_name_becomes_the_core() -> None:
    # A decision (docs/passes.md, lnc_splitter): no symbolic marker is left in a core's name.
    out = lncsplit.split([two_core_module("a_nc_symbolic/b_nc_symbolic")], 2)
    assert [m.name for m in out] == ["a_nc00/b_nc00", "a_nc01/b_nc01"]


def test_name_without_nc_symbolic_is_unchanged() -> None:
    out = lncsplit.split([two_core_module("plain")], 2)
    assert [m.name for m in out] == ["plain", "plain"]
    assert [m.neuron_core_id for m in out] == [0, 1]


def test_artifact_path_becomes_per_core_directory_under_the_root(tmp_path: object) -> None:
    d = module([inst("a")], artifact_path="/abs/k")
    out = lncsplit.split([load(d)], 2, create_artifact_dirs=True, artifact_root=str(tmp_path))
    assert [m.artifact_path for m in out] == ["/abs/k/nc00", "/abs/k/nc01"]
    assert all(os.path.isdir(os.path.join(str(tmp_path), "abs", "k", f"nc0{c}")) for c in (0, 1))


def test_artifact_path_that_is_a_file_raises_1649(tmp_path: object) -> None:
    base = os.path.join(str(tmp_path), "base")
    os.makedirs(base)
    open(os.path.join(base, "nc00"), "w").close()
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.split(
            [load(module([inst("a")], artifact_path="base"))],
            2,
            create_artifact_dirs=True,
            artifact_root=str(tmp_path),
        )
    assert e.value.code == 1649


def test_instruction_is_pruned_iff_its_mask_is_false_on_the_core() -> None:
    c0, c1 = lncsplit.split([two_core_module()], 2)
    assert names(c0) == ["all", "only0", "w"]
    assert names(c1) == ["all", "only1", "w"]


def test_dependencies_on_pruned_instructions_are_dropped() -> None:
    _, c1 = lncsplit.split([two_core_module()], 2)
    assert "only0" not in c1.to_json()


def test_shard_is_bound_in_symbolic_ap_addrs() -> None:
    c0, c1 = lncsplit.split([two_core_module()], 2)
    for core, m in enumerate((c0, c1)):
        w = next(i for i in m.function("main").instructions() if i.name == "w")
        addr = json.loads(m.to_json())["functions"][0]["basic_blocks"][0]["instructions"][-1][
            "outs"
        ][0]["addrs"][0]
        assert addr == const(32 * core)
        assert w.outs[0].memsetref == "t"


def test_no_shard_id_remains_and_shard_sets_are_cleared() -> None:
    for m in lncsplit.split([two_core_module()], 2):
        assert not lncsplit._core.has_shard_ids(m)
        assert m.function("main").shard_ids == []
        assert "ShardIDKind" not in m.to_json()


def test_constant_true_predicates_are_dropped_and_undecided_ones_stay() -> None:
    body = [
        inst("in_loop", predicates=[from_core(0), {"expr": aff([(iv("i"), 1)], -1), "ge": True}])
    ]
    c0, _ = lncsplit.split([load(module([loop("l", "i", 4, body)]))], 2)
    d = json.loads(c0.to_json())
    child = d["functions"][0]["basic_blocks"][0]["instructions"][0]["blocks"][0]["instructions"][0]
    assert child["predicates"] == [{"expr": aff([(iv("i"), 1)], -1), "ge": True}]


def test_loop_is_deleted_iff_all_its_children_are_deleted() -> None:
    d = module(
        [
            loop(
                "l_both",
                "i",
                4,
                [inst("b0", predicates=[on_core(0)]), inst("b1", predicates=[on_core(1)])],
            ),
            loop("l_only0", "j", 4, [inst("c0", predicates=[on_core(0)])]),
            loop("l_empty", "k", 4, []),
        ]
    )
    c0, c1 = lncsplit.split([load(d)], 2)
    assert names(c0) == ["l_both", "b0", "l_only0", "c0", "l_empty"]
    assert names(c1) == ["l_both", "b1", "l_empty"]


def test_collective_compute_binds_its_own_rank_fields() -> None:
    cc = inst(
        "cc",
        "CollectiveCompute",
        cc_channel={"kind": "SendRecv", "replica_groups": [[0, 1]], "op": "add"},
        recv_from_rank=aff([(shard(), -1)], 1),
        send_to_rank=aff([(shard(), -1)], 1),
        queue=3,
    )
    out = lncsplit.split([load(module([cc]))], 2)
    for core, m in enumerate(out):
        got = json.loads(m.to_json())["functions"][0]["basic_blocks"][0]["instructions"][0]
        assert got["recv_from_rank"] == const(1 - core)
        assert got["send_to_rank"] == const(1 - core)
        assert got["queue"] == 3


def test_shard_ub_smaller_than_lnc_is_an_error() -> None:
    m = load(module([inst("a", predicates=[on_core(0, ub=2)])]))
    with pytest.raises(lncsplit.LncsplitError):
        lncsplit.split([m], 4)


def test_json_clone_mode_gives_the_same_bytes_as_structural_clone() -> None:
    a = lncsplit.split([two_core_module()], 2, clone="json")
    b = lncsplit.split([two_core_module()], 2, clone="structural")
    assert [m.to_bytes() for m in a] == [m.to_bytes() for m in b]


def test_parallel_and_sequential_cores_give_the_same_bytes() -> None:
    a = lncsplit.split([two_core_module()], 2, parallel=True)
    b = lncsplit.split([two_core_module()], 2, parallel=False)
    assert [m.to_bytes() for m in a] == [m.to_bytes() for m in b]


def test_clone_is_observably_identical_to_a_json_round_trip() -> None:
    m = two_core_module()
    assert m.clone().to_bytes() == lncsplit.Module.from_json(m.to_bytes()).to_bytes()


def test_verify_bir_serdes_accepts_a_loaded_module() -> None:
    lncsplit.verify_bir_serdes(two_core_module())


def test_split_output_passes_the_concretized_verifier() -> None:
    lncsplit.verify_concretized(lncsplit.split([two_core_module()], 2), 2)


# ------------------------------------------------------------------ ShardIds in carried-through fields


def carried_module(**extra: object) -> lncsplit.Module:
    """ShardIds in fields lncsplit carries without modelling (neuronx-facts
    §1.12: instruction `order`, `unroll_dependencies`, register_ap offsets)."""
    reg = {
        "kind": "register_ap",
        "ap": [[4, 32], [1, 4]],
        "dtype": "float32",
        "memsetref": "t",
        "reg_ap_offset": aff([(shard(), 4)], 0),
    }
    unroll = [{"expr": aff([(shard(), 1), (iv("i"), 1)], 0), "ge": True}]
    body = [inst("in_loop", unroll_dependencies=unroll)]
    insts = [
        inst("a", order=aff([(shard(), 10)], 1), **extra),
        inst("r", "DMACopy", ins=[reg]),
        inst("v1", offset_v1={"terms": [{"AxisLabel": shard(), "coef": 3}], "c": 0}),
        loop("l", "i", 4, body),
    ]
    return load(module(insts, [tensor("t", [32, 4])]))


def test_shard_ids_in_carried_fields_are_bound() -> None:
    for core, m in enumerate(lncsplit.split([carried_module()], 2)):
        text = m.to_json()
        assert "ShardIDKind" not in text
        assert not lncsplit._core.has_shard_ids(m)
        a, r, v1, lp = json.loads(text)["functions"][0]["basic_blocks"][0]["instructions"]
        assert a["order"] == const(10 * core + 1)
        assert r["ins"][0]["reg_ap_offset"] == const(4 * core)
        assert v1["offset_v1"] == {"terms": [], "c": 3 * core}
        inner = lp["blocks"][0]["instructions"][0]
        assert inner["unroll_dependencies"] == [{"expr": aff([(iv("i"), 1)], core), "ge": True}]


def test_carried_bindings_are_the_same_in_every_clone_mode() -> None:
    a = lncsplit.split([carried_module()], 2, clone="json")
    b = lncsplit.split([carried_module()], 2, clone="structural", parallel=False)
    assert [m.to_bytes() for m in a] == [m.to_bytes() for m in b]


def test_unbindable_shard_in_a_carried_field_is_refused_before_any_change() -> None:
    bad = {"kind": "SumKind", "n_terms": 3, "terms": [shard()]}
    m = carried_module(odd=bad)
    before = m.to_bytes()
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.split([m], 2)
    assert e.value.code == 9007
    assert 'instruction "a" key "odd"' in str(e.value)
    assert m.to_bytes() == before
