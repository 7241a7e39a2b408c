"""Load → write fidelity: unknown keys, determinism, v1 → v2, key order, clones."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import lncsplit
import pytest
from bir_testdata import SHARD2, aff, small_module_dict
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import Module
from lncsplit._core import generate_module


def _load(d: dict[str, Any]) -> Module:
    return Module.from_json(json.dumps(d))


def test_unknown_keys_preserved_on_every_object_type() -> None:
    d = small_module_dict()
    out = json.loads(_load(d).to_json())
    assert out["module_x"] == d["module_x"]
    f = out["functions"][0]
    assert "func_x" in f and f["func_x"] is None
    assert f["allocations"][0]["set_x"] == {"deep": [1, {"a": None}]}
    assert f["allocations"][0]["locations"][0]["loc_x"] == 1.5
    bb = f["basic_blocks"][0]
    assert bb["block_x"] == "kept"
    a = bb["instructions"][0]
    assert a["weird"] == {"k": 1}
    assert a["ins"][0]["phys_x"] == [1]
    assert a["outs"][0]["arg_x"] == {"k": "v"}
    loop = bb["instructions"][1]
    assert loop["axis"]["axis_x"] == 2
    b = loop["blocks"][0]["instructions"][0]
    assert b["ins"][0]["imm_x"] == 0
    assert b["ins"][1] == {"kind": "register_access", "regref": "r0", "other_x": True}
    assert bb["instructions"][4]["accumulation_flag"] == 1


def test_every_modelled_key_round_trips() -> None:
    d = small_module_dict()
    out = json.loads(_load(d).to_json())
    # The module written equals the input up to the documented normalizations:
    # arch canonical name, predicates always carry "ge", "ins"/"outs" always
    # written, the function's shard-id set written.
    d["arch"] = "gen3"
    pred = d["functions"][0]["basic_blocks"][0]["instructions"][1]["blocks"][0]["instructions"][0][
        "predicates"
    ][0]
    pred["ge"] = True
    d["functions"][0]["basic_blocks"][0]["instructions"][5]["predicates"][0]["ge"] = True
    d["functions"][0]["shard_ids"] = [2]
    loop = d["functions"][0]["basic_blocks"][0]["instructions"][1]
    loop["ins"], loop["outs"] = [], []
    assert out == d


def test_output_is_deterministic() -> None:
    text = json.dumps(small_module_dict())
    a = Module.from_json(text).to_json()
    b = Module.from_json(text).to_json()
    assert a == b
    assert Module.from_json(a).to_json() == a
    m = generate_module(3, 500, 2)
    assert m.to_json() == m.to_json() == Module.from_json(m.to_bytes()).to_json()


def test_key_order_in_the_input_does_not_matter() -> None:
    # nlohmann::json writes keys sorted; "opcode" then comes after "ins",
    # "version" after "functions", an argument's "kind" after "addrs".
    m = generate_module(5, 400, 2)
    d = json.loads(m.to_json())
    sorted_text = json.dumps(d, sort_keys=True)
    back = json.loads(Module.from_json(sorted_text).to_json())
    assert json.dumps(back, sort_keys=True) == sorted_text


def test_written_key_order_is_fixed() -> None:
    out = _load(small_module_dict()).to_json()
    assert out.startswith(
        '{"version":2,"name":"k_nc_symbolic","arch":"gen3","artifact_path":"out/k"'
    )
    d = json.loads(out)
    assert [f["name"] for f in d["functions"]] == ["main", "aux"]
    inst = d["functions"][0]["basic_blocks"][0]["instructions"][0]
    assert list(inst)[:3] == ["name", "opcode", "engine"]


def test_main_is_written_first() -> None:
    d = small_module_dict()
    d["functions"].reverse()
    out = json.loads(_load(d).to_json())
    assert [f["name"] for f in out["functions"]] == ["main", "aux"]


def test_v1_file_is_written_as_v2() -> None:
    v1_axis = {"terms": [{"AxisLabel": "i", "coef": 2}], "c": 1}
    v1_div = {"terms": [{"AxisLabel": "i", "coef": 3}], "c": 0, "op": "Div", "op_param": 2}
    v1_mod = {"terms": [{"AxisLabel": "i", "coef": 1}], "c": 5, "op": "Mod", "op_param": 4}
    doc = {
        "version": 1,
        "name": "old_nc_symbolic",
        "functions": [
            {
                "name": "main",
                "allocations": [
                    {"name": "t", "dtype": "float32", "tensor_shape": [128, 64], "locations": []}
                ],
                "basic_blocks": [
                    {
                        "name": "bb",
                        "instructions": [
                            {
                                "name": "l",
                                "opcode": "Loop",
                                "axis": {"name": "i", "lo": 0, "ub": 8, "step": 1},
                                "blocks": [
                                    {
                                        "name": "body",
                                        "instructions": [
                                            {
                                                "name": "x",
                                                "opcode": "TensorCopy",
                                                "ins": [],
                                                "outs": [
                                                    {
                                                        "kind": "symbolic_ap",
                                                        "ap": [[64, 128], [1, 8]],
                                                        "memsetref": "t",
                                                        "addrs": [{"terms": [], "c": 0}, v1_axis],
                                                        "tile_addrs": v1_div,
                                                        "block_addrs": v1_mod,
                                                    }
                                                ],
                                                "predicates": [{"expr": SHARD2, "ge": True}],
                                            }
                                        ],
                                    }
                                ],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    m = Module.from_json(json.dumps(doc))
    assert m.version == 1
    out = json.loads(m.to_json())
    assert out["version"] == 2
    arg = out["functions"][0]["basic_blocks"][0]["instructions"][0]["blocks"][0]["instructions"][0][
        "outs"
    ][0]
    iv = {"kind": "AffIVKind", "axis": "i"}
    assert arg["addrs"] == [aff([], 0), aff([(iv, 2)], 1)]
    assert arg["tile_addrs"] == {"kind": "FloorDivKind", "numer": aff([(iv, 3)], 0), "denom": 2}
    assert arg["block_addrs"] == {"kind": "ModuloKind", "numer": aff([(iv, 1)], 5), "denom": 4}
    assert out["functions"][0]["shard_ids"] == [2]
    # Written as v1 on request, it reads back to the same module.
    v1 = json.loads(m.to_json(version=1))
    assert v1["version"] == 1  # v1 expressions are only readable under version 1
    a1 = v1["functions"][0]["basic_blocks"][0]["instructions"][0]["blocks"][0]["instructions"][0][
        "outs"
    ][0]
    assert a1["addrs"][1] == v1_axis
    assert Module.from_json(json.dumps(v1)).to_json() == m.to_json()


# ------------------------------------------- one encoding per file (issue 15.12)

V2_TAGS = {"AffExprKind", "AffIVKind", "FloorDivKind", "ModuloKind", "SumKind", "CCDivKind"}


def _v1_objects(v: Any) -> int:
    """How many v1 expression objects (``terms`` of ``AxisLabel``) ``v`` holds."""
    if isinstance(v, dict):
        own = "AxisLabel" in json.dumps(v.get("terms", [])) and "c" in v
        return int(own) + sum(_v1_objects(x) for x in v.values())
    if isinstance(v, list):
        return sum(_v1_objects(x) for x in v)
    return 0


def _v2_objects(v: Any) -> int:
    if isinstance(v, dict):
        return int(v.get("kind") in V2_TAGS) + sum(_v2_objects(x) for x in v.values())
    if isinstance(v, list):
        return sum(_v2_objects(x) for x in v)
    return 0


def _carrying(version: int, order: list[Any], offset: Any) -> dict[str, Any]:
    """A module whose instruction carries expressions the model does not parse:
    ``order`` (an unknown key) and a ``register_ap``'s ``offset_expr``."""
    inst = {
        "name": "x",
        "opcode": "TensorCopy",
        "order": order,
        "ins": [{"kind": "register_ap", "regref": "r0", "memsetref": "t", "offset_expr": offset}],
        "outs": [],
    }
    alloc = {"name": "t", "dtype": "float32", "tensor_shape": [128, 64], "locations": []}
    fn = {
        "name": "main",
        "registers": ["r0"],
        "allocations": [alloc],
        "basic_blocks": [{"name": "bb", "instructions": [inst]}],
    }
    return {"version": version, "name": "old_nc_symbolic", "functions": [fn]}


def _inst(doc: dict[str, Any]) -> dict[str, Any]:
    inst: dict[str, Any] = doc["functions"][0]["basic_blocks"][0]["instructions"][0]
    return inst


def test_a_v1_modules_carried_expressions_are_written_in_v2() -> None:
    v1_order = [{"terms": [{"AxisLabel": "i", "coef": 2}], "c": 1}]
    v1_offset = {"terms": [{"AxisLabel": "j", "coef": 3}], "c": 0, "op": "Div", "op_param": 2}
    m = Module.from_json(json.dumps(_carrying(1, v1_order, v1_offset)))
    out = json.loads(m.to_json())
    assert out["version"] == 2 and _v1_objects(out) == 0
    i = {"kind": "AffIVKind", "axis": "i"}
    j = {"kind": "AffIVKind", "axis": "j"}
    assert _inst(out)["order"] == [aff([(i, 2)], 1)]
    offset = _inst(out)["ins"][0]["offset_expr"]
    assert offset == {"kind": "FloorDivKind", "numer": aff([(j, 3)], 0), "denom": 2}
    # Asked for version 1, the file holds v1 only: the carried fields as read.
    back = json.loads(m.to_json(version=1))
    assert back["version"] == 1 and _v2_objects(back) == 0
    assert _inst(back)["order"] == v1_order
    assert _inst(back)["ins"][0]["offset_expr"] == v1_offset


def test_version_1_refuses_a_carried_expression_v1_cannot_express() -> None:
    i = {"kind": "AffIVKind", "axis": "i"}
    total = {"kind": "SumKind", "n_terms": 2, "terms": [i, SHARD2]}
    m = Module.from_json(json.dumps(_carrying(2, [total], aff([(i, 1)], 0))))
    assert _v1_objects(json.loads(m.to_json())) == 0
    with pytest.raises(lncsplit.PelicanAssertion, match="V1 format.*order"):
        m.to_json(version=1)


def _clone_equal(m: Module) -> None:
    ref = m.to_bytes()
    s = m.clone()
    j = m.clone("json")
    assert s.to_bytes() == ref
    assert j.to_bytes() == ref
    assert repr(s) == repr(j) == repr(m)
    assert s.name == j.name and s.neuron_core_id == j.neuron_core_id and s.version == j.version
    assert s.instruction_count() == j.instruction_count() == m.instruction_count()
    # Clones are independent of their source.
    s.name = "changed"
    assert m.name != "changed"
    loc = s.functions[0].allocations[0].locations[0]
    loc.addr = 123456
    assert m.functions[0].allocations[0].locations[0].addr != 123456


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 600), lnc=st.sampled_from([1, 2, 4]))
def test_clone_is_observably_identical_to_json_round_trip(seed: int, n: int, lnc: int) -> None:
    _clone_equal(generate_module(seed, n, lnc))


def test_clone_of_hand_written_module_matches_json_round_trip() -> None:
    _clone_equal(_load(small_module_dict()))


def test_clone_rejects_unknown_method() -> None:
    import pytest

    with pytest.raises(ValueError, match="unknown clone method"):
        _load(small_module_dict()).clone("pickle")


def test_copy_deepcopy_and_pickle_give_equal_modules() -> None:
    m = _load(small_module_dict())
    for c in (copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert c.to_json() == m.to_json()


def test_from_json_accepts_str_bytes_and_bytes_like_buffers_only() -> None:
    import pytest

    text = json.dumps(small_module_dict())
    want = Module.from_json(text).to_bytes()
    assert Module.from_json(text.encode()).to_bytes() == want
    assert Module.from_json(bytearray(text.encode())).to_bytes() == want
    with pytest.raises(TypeError):
        Module.from_json([text])  # type: ignore[arg-type]


def test_module_properties() -> None:
    m = _load(small_module_dict())
    assert m.name == "k_nc_symbolic"
    assert m.neuron_core_id is None
    assert m.version == 2
    assert m.arch == "gen3"
    assert m.artifact_path == "out/k"
    attrs = m.attributes
    assert attrs == {"previous_pass": "x", "replica_groups": [[0, 1]]}
    attrs["previous_pass"] = "mutated"  # a copy
    assert m.attributes["previous_pass"] == "x"
    m.name = "k_nc00"
    assert json.loads(m.to_json())["name"] == "k_nc00"
    assert m.instruction_count() == 7
    assert "k_nc00" in repr(m) and "instructions=7" in repr(m)
    d = small_module_dict()
    d["attributes"]["neuron_core_id"] = 1
    assert _load(d).neuron_core_id == 1
    assert isinstance(lncsplit.Module, type)


# ------------------------------------------------- stable bytes (issue 15.2)

R0 = {"kind": "IntRuntimeValueKind", "regref": "r0"}
SHARD4 = {"kind": "ShardIDKind", "ub": 4}


def _pred_inst(name: str, expr: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "opcode": "NoOp", "predicates": [{"expr": expr, "ge": True}]}


def _interning_order_module() -> dict[str, Any]:
    """`aux` (read first, written second) interns the ShardId before `main`
    interns the register, so the ids of the two leaves swap on reload."""
    block = lambda *insts: [{"name": "bb", "instructions": list(insts)}]  # noqa: E731
    sb = {"name": "t", "dtype": "float32", "tensor_shape": [128, 4]}
    allocations = [{**sb, "locations": [{"name": "t_sb", "type": "SB", "addr": 0}]}]
    return {
        "version": 2,
        "name": "order_nc_symbolic",
        "functions": [
            {
                "name": "aux",
                "allocations": allocations,
                "basic_blocks": block(_pred_inst("a0", SHARD4)),
            },
            {
                "name": "main",
                "registers": ["r0"],
                "allocations": allocations,
                "basic_blocks": block(
                    _pred_inst("m0", R0),
                    _pred_inst("m1", aff([(R0, 1), (SHARD4, 2)], 1)),
                    _pred_inst("m2", {"kind": "SumKind", "n_terms": 2, "terms": [SHARD4, R0]}),
                ),
            },
        ],
    }


def test_terms_are_written_in_content_order_whatever_the_interning_order() -> None:
    m = _load(_interning_order_module())
    once = m.to_bytes()
    assert Module.from_json(once).to_bytes() == once
    main = json.loads(once)["functions"][0]
    aff_terms = main["basic_blocks"][0]["instructions"][1]["predicates"][0]["expr"]["terms"]
    sum_terms = main["basic_blocks"][0]["instructions"][2]["predicates"][0]["expr"]["terms"]
    # Index leaves by kind code (IntRuntimeValue 7 before ShardId 13).
    assert [t["idx"]["kind"] for t in aff_terms] == ["IntRuntimeValueKind", "ShardIDKind"]
    assert [t["kind"] for t in sum_terms] == ["IntRuntimeValueKind", "ShardIDKind"]


def test_verify_bir_serdes_accepts_a_module_whose_interning_order_changes_on_reload() -> None:
    lncsplit.verify_bir_serdes(_load(_interning_order_module()))


def test_both_clone_modes_give_identical_bytes_whatever_the_interning_order() -> None:
    _clone_equal(_load(_interning_order_module()))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 400), lnc=st.sampled_from([2, 4]))
def test_dump_is_a_fixed_point_after_one_load_and_split_clone_modes_agree(
    seed: int, n: int, lnc: int
) -> None:
    m = generate_module(seed, n, lnc)
    # Functions in reverse order: `main` is read last but written first, so
    # every node it shares with the others is interned in a different order.
    doc = json.loads(m.to_bytes())
    doc["functions"].reverse()
    once = Module.from_json(json.dumps(doc)).to_bytes()
    assert Module.from_json(once).to_bytes() == once
    # split concretizes its input in place (as the last core): split copies.
    structural = [c.to_bytes() for c in lncsplit.split([m.clone()], lnc, clone="structural")]
    via_json = [c.to_bytes() for c in lncsplit.split([m.clone()], lnc, clone="json")]
    assert structural == via_json
    for b in structural:
        assert Module.from_json(b).to_bytes() == b


# --------------------------------------------- numbers as written (issue 15.1)

NUMBERS = [
    "123456789012345678901234567890",
    "-98765432109876543210987654321",
    "18446744073709551616",
    "1.0",
    "-0.0",
    "1e5",
    "2.5E-7",
    "0.1000000000000000055511151231257827",
    "1.7976931348623157e309",
]


#: How they are written: every digit as read; only the exponent marker is
#: normalized to ``e`` with an explicit sign (serde_json's number text).
WRITTEN = [n.replace("E", "e").replace("e5", "e+5").replace("e309", "e+309") for n in NUMBERS]


def test_numbers_in_unknown_keys_are_written_exactly_as_read() -> None:
    d = small_module_dict()
    text = json.dumps(d)[:-1] + ', "nums": [' + ", ".join(NUMBERS) + "]}"
    out = Module.from_json(text).to_bytes()
    assert b'"nums":[' + ",".join(WRITTEN).encode() + b"]" in out
    assert Module.from_json(out).to_bytes() == out
    # ... on every object kind, and through a structural and a JSON clone.
    inst = d["functions"][0]["basic_blocks"][0]["instructions"][0]
    inst["big"] = "@@"
    text = json.dumps(d).replace('"@@"', NUMBERS[0])
    m = Module.from_json(text)
    for copy_ in (m, m.clone(), m.clone("json")):
        assert b'"big":' + NUMBERS[0].encode() in copy_.to_bytes()


def test_big_integers_reach_python_as_exact_ints() -> None:
    d = small_module_dict()
    d["functions"][0]["basic_blocks"][0]["instructions"][0]["big"] = "@@"
    m = Module.from_json(json.dumps(d).replace('"@@"', NUMBERS[0]))
    fields = m.functions[0].blocks[0].instructions[0].fields
    assert fields["big"] == int(NUMBERS[0])
    assert isinstance(fields["big"], int)
