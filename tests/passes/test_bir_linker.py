"""bir_linker through the public API (contract §3.7, §4): link, unlink,
tensor_map, PassOptions(link=True), and every refusal."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import pytest
from lnc_builders import Json, const, inst, load, sap
from lncsplit import _core


def core(c: int, *, name: str = "k", with_extra: bool = False, lnc: int = 2) -> Json:
    """One concretized core with a shared set, an Input, an Output and a barrier."""
    shared: Json = {
        "name": "buf",
        "kind": "Internal",
        "dtype": "float32",
        "tensor_shape": [4, 4],
        "addr_space": "Shared",
        "locations": [{"name": "buf_dram", "type": "DRAM", "addr": 0}],
    }
    x: Json = {
        "name": "x",
        "kind": "Input",
        "dtype": "bfloat16",
        "tensor_shape": [128, 8],
        "locations": [{"name": "x_dram", "type": "DRAM", "addr": 4096 * (c + 1)}],
    }
    y: Json = {"name": "y", "kind": "Output", "dtype": "float32", "tensor_shape": [128, 8]}
    y["locations"] = [{"name": "y_dram", "type": "DRAM"}]
    load_x = inst("load", "DMACopy", ins=[sap("x", [[8, 128], [1, 8]], [const(0), const(c)])])
    cb = inst("cb0", "CoreBarrier", id=0, cores=list(range(lnc)))
    d: Json = {
        "version": 2,
        "name": f"{name}_nc{c:02d}",
        "arch": "gen3",
        "attributes": {"neuron_core_id": c},
        "functions": [
            {
                "name": "main",
                "allocations": [shared, x, y],
                "basic_blocks": [{"name": "bb0", "instructions": [load_x, cb]}],
            }
        ],
    }
    if with_extra:
        d["custom_top"] = {"core": c}
        fn = d["functions"][0]
        fn["custom_fn"] = [1]
        fn["allocations"][1]["custom_set"] = "s"
        fn["allocations"][1]["locations"][0]["custom_loc"] = 2
        fn["basic_blocks"][0]["custom_block"] = None
        fn["basic_blocks"][0]["instructions"][0]["custom_inst"] = {"a": 1}
        fn["basic_blocks"][0]["instructions"][0]["ins"][0]["custom_arg"] = 3.5
    return d


def cores(**kw: Any) -> list[lncsplit.Module]:
    lnc = kw.get("lnc", 2)
    return [load(core(c, **kw)) for c in range(lnc)]


def code_of(e: pytest.ExceptionInfo[lncsplit.NeuronAssertion]) -> int:
    return e.value.code


def test_link_names_the_module_base_slash_sglnk() -> None:
    assert lncsplit.link(cores()).name == "k/sgLnk"
    assert lncsplit.link(cores(name="net-fwd")).name == "net-fwd/sgLnk"


def test_unlink_of_link_is_byte_exact() -> None:
    cs = cores()
    assert [m.to_bytes() for m in lncsplit.unlink(lncsplit.link(cs))] == [m.to_bytes() for m in cs]


def test_unknown_keys_survive_link_and_unlink() -> None:
    cs = cores(with_extra=True)
    linked = lncsplit.link(cs)
    text = linked.to_json()
    for key in [
        "custom_fn",
        "custom_set",
        "custom_loc",
        "custom_block",
        "custom_inst",
        "custom_arg",
    ]:
        assert key in text
    assert json.loads(text)["cores"][1]["custom_top"] == {"core": 1}
    back = lncsplit.unlink(lncsplit.Module.from_json(text))
    assert [m.to_bytes() for m in back] == [m.to_bytes() for m in cs]


def test_cores_keep_their_module_fields_under_cores() -> None:
    d = json.loads(lncsplit.link(cores()).to_json())
    assert [e["name"] for e in d["cores"]] == ["k_nc00", "k_nc01"]
    assert [e["attributes"]["neuron_core_id"] for e in d["cores"]] == [0, 1]
    assert d["attributes"] == {"lnc": 2}


def test_link_does_not_modify_the_cores() -> None:
    cs = cores()
    before = [m.to_bytes() for m in cs]
    lncsplit.link(cs)
    assert [m.to_bytes() for m in cs] == before


def test_call_fields_are_visible_in_the_views() -> None:
    main = lncsplit.link(cores()).function("main")
    assert main is not None
    calls = main.instructions()
    assert [(i.opcode, i.fields["callee"], i.fields["core"]) for i in calls] == [
        ("Call", "nc00.main", 0),
        ("Call", "nc01.main", 1),
    ]


def test_linked_module_passes_birverifier() -> None:
    lncsplit.verify_bir(lncsplit.link(cores()))
    lncsplit.verify_bir_serdes(lncsplit.link(cores()))


def test_tensor_map_has_each_input_and_output_per_core() -> None:
    tm = lncsplit.tensor_map(lncsplit.link(cores()))
    assert tm == {
        "main.x": {
            "kind": "Input",
            "dtype": "bfloat16",
            "shape": [128, 8],
            "cores": [
                {"core": 0, "location": "x_dram", "addr": 4096},
                {"core": 1, "location": "x_dram", "addr": 8192},
            ],
        },
        "main.y": {
            "kind": "Output",
            "dtype": "float32",
            "shape": [128, 8],
            "cores": [
                {"core": 0, "location": "y_dram", "addr": None},
                {"core": 1, "location": "y_dram", "addr": None},
            ],
        },
    }


def test_pass_options_link_returns_one_linked_module_per_kernel() -> None:
    mods = [_core.generate_module(s, 200, 2) for s in (1, 2)]
    ref = lncsplit.run_pipeline([m.clone() for m in mods], lncsplit.PassOptions(lnc_size=2))
    linked = lncsplit.run_pipeline(mods, lncsplit.PassOptions(lnc_size=2, link=True))
    assert [m.name for m in linked] == ["gen1_0/sgLnk", "gen2_0/sgLnk"]
    assert [m.to_bytes() for m in linked] == [
        lncsplit.link(ref[i : i + 2]).to_bytes() for i in (0, 2)
    ]


def test_pass_options_link_with_lnc_1_links_the_untouched_module() -> None:
    (linked,) = lncsplit.run_pipeline(
        [_core.generate_module(3, 100, 1)], lncsplit.PassOptions(link=True)
    )
    main = linked.function("main")
    assert main is not None
    assert [i.name for i in main.instructions()] == ["call_def_0_instance_0"]


# ---------------------------------------------------------------- refusals


def test_cores_out_of_core_order_are_9006() -> None:
    a, b = cores()
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([b, a])
    assert code_of(e) == 9006
    assert "cores[0] (k_nc01)" in str(e.value)


def test_duplicate_and_missing_cores_are_9006_naming_them() -> None:
    a, _ = cores()
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([a, a])
    assert code_of(e) == 9006
    assert "core 0 is given 2 times" in str(e.value) and "core 1 is missing" in str(e.value)


def test_a_core_set_missing_its_last_core_is_9006() -> None:
    cs = cores(lnc=4)
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link(cs[:3])
    assert code_of(e) == 9006
    assert "synchronizes core 3" in str(e.value)


def test_cores_of_different_kernels_are_9006() -> None:
    a = load(core(0, name="one"))
    b = load(core(1, name="two"))
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([a, b])
    assert code_of(e) == 9006
    assert "one_nc00" in str(e.value) and "two_nc01" in str(e.value)


def test_a_single_core_must_be_core_0_or_symbolic() -> None:
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([cores()[1]])
    assert code_of(e) == 9006
    with pytest.raises(lncsplit.NeuronAssertion):
        lncsplit.link([])


def test_cores_failing_the_concretized_verifier_are_refused_with_its_error() -> None:
    d = core(1)
    d["functions"][0]["basic_blocks"][0]["instructions"][1]["id"] = 5
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([load(core(0)), load(d)])
    assert code_of(e) == 1188


@pytest.mark.parametrize("name", ["I-SQI-1", "cb_return", "return_nc01"])
def test_inserted_instruction_names_already_taken_are_9502(name: str) -> None:
    ds = [core(0), core(1)]
    for d in ds:
        d["functions"][0]["basic_blocks"][0]["instructions"][0]["name"] = name
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([load(d) for d in ds])
    assert code_of(e) == 9502
    assert name in str(e.value)


def test_keys_link_writes_already_present_are_9502() -> None:
    ds = [core(0), core(1)]
    for d in ds:
        d["functions"][0]["allocations"][0]["alias_of"] = "x"
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([load(d) for d in ds])
    assert code_of(e) == 9502 and "alias_of" in str(e.value)
    ds = [core(0), core(1)]
    for d in ds:
        d["functions"][0]["basic_blocks"][0]["instructions"][1]["local_id"] = 0
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([load(d) for d in ds])
    assert code_of(e) == 9502 and "local_id" in str(e.value)


def test_a_core_without_main_links_through_its_first_function() -> None:
    """Contract §1.7: the entry function is `main`, else the first function
    (the compiler's `sg0000`); dispatch calls it and unlink gives it back."""
    ds = [core(0), core(1)]
    for d in ds:
        d["functions"][0]["name"] = "sg0000"
    cs = [load(d) for d in ds]
    linked = lncsplit.link(cs)
    dispatch = json.loads(linked.to_json())["functions"][0]["basic_blocks"][0]["instructions"]
    assert [i["callee"] for i in dispatch] == ["nc00.sg0000", "nc01.sg0000"]
    back = lncsplit.unlink(linked)
    assert [json.loads(m.to_json())["functions"][0]["name"] for m in back] == ["sg0000", "sg0000"]
    assert [m.to_bytes() for m in back] == [m.to_bytes() for m in cs]


def test_cores_whose_entry_functions_differ_are_9502() -> None:
    ds = [core(0), core(1)]
    ds[1]["functions"][0]["name"] = "sg0000"
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.link([load(d) for d in ds])
    assert code_of(e) == 9502 and "entry function" in str(e.value)


def test_unlink_refuses_a_core_or_symbolic_module_with_9501() -> None:
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.unlink(cores()[0])
    assert code_of(e) == 9501
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.unlink(_core.generate_module(1, 50, 2))
    assert code_of(e) == 9501
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.tensor_map(cores()[0])
    assert code_of(e) == 9501


def tampered(change: Any) -> lncsplit.Module:
    d = json.loads(lncsplit.link(cores()).to_json())
    change(d)
    return lncsplit.Module.from_json(json.dumps(d))


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["functions"][0]["basic_blocks"][0]["instructions"].pop(),
        lambda d: d["functions"][1]["basic_blocks"][0]["instructions"].pop(0),
        lambda d: d["functions"][2]["basic_blocks"][0]["instructions"].pop(),
        lambda d: d["functions"][1].update(name="core0.main"),
        lambda d: d["cores"].pop(),
        lambda d: d["attributes"].pop("lnc"),
        lambda d: d["functions"][1]["allocations"][0].update(alias_of="main.nothing"),
    ],
    ids=["call", "sqi", "return", "name", "cores", "lnc", "alias"],
)
def test_unlink_refuses_a_tampered_linked_module_with_9501(change: Any) -> None:
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.unlink(tampered(change))
    assert code_of(e) == 9501


def test_a_module_with_the_linkers_marks_is_linked_and_a_damaged_one_is_refused() -> None:
    """One test of "linked" (docs/passes.md): the marks link writes. The simulator unlinks
    such a module first, so a damaged one is refused (9501) instead of run as a kernel."""
    assert lncsplit.passes.linker.is_linked(lncsplit.link(cores()))
    assert not any(lncsplit.passes.linker.is_linked(c) for c in cores())
    assert not lncsplit.passes.linker.is_linked(_core.generate_module(1, 50, 2))
    damaged = tampered(lambda d: d["functions"][1].update(name="core0.main"))
    assert lncsplit.passes.linker.is_linked(damaged)
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.sim.run(damaged)
    assert code_of(e) == 9501


# ------------------------------------------- the opcodes the linker writes


def test_call_return_switch_queue_instance_and_local_id_round_trip() -> None:
    d: Json = {
        "version": 2,
        "name": "m",
        "arch": "gen3",
        "functions": [
            {
                "name": "main",
                "allocations": [],
                "basic_blocks": [
                    {
                        "name": "b",
                        "instructions": [
                            inst("s", "SwitchQueueInstance", engine="SP", q_x=1),
                            inst("c", "Call", callee="f", core=3, call_x=[1]),
                            inst("cb", "CoreBarrier", id=4, cores=[0, 1], local_id=0),
                            inst("r", "Return"),
                        ],
                    }
                ],
            }
        ],
    }
    m = lncsplit.Module.from_json(json.dumps(d))
    out = json.loads(m.to_json())
    assert out == d
    written = out["functions"][0]["basic_blocks"][0]["instructions"]
    assert list(written[1]) == ["name", "opcode", "callee", "core", "ins", "outs", "call_x"]
    assert list(written[2])[:6] == ["name", "opcode", "id", "cores", "local_id", "ins"]
    lncsplit.verify_bir_serdes(m)


@pytest.mark.parametrize(("key", "value"), [("callee", 3), ("core", "one"), ("core", 1.5)])
def test_call_keys_of_the_wrong_type_are_bir_json_errors(key: str, value: Any) -> None:
    d = {
        "version": 2,
        "name": "m",
        "functions": [
            {
                "name": "main",
                "allocations": [],
                "basic_blocks": [
                    {"name": "b", "instructions": [inst("c", "Call", **{key: value})]}
                ],
            }
        ],
    }
    with pytest.raises(lncsplit.BirJsonError) as e:
        lncsplit.Module.from_json(json.dumps(d))
    assert e.value.path.endswith(f".{key}")


@pytest.mark.parametrize("name", ["01_", "03_", "07_"])
def test_the_simulator_finds_the_linked_program_equivalent_to_its_cores(name: str) -> None:
    from lncsplit.examples import example_paths

    path = next(p for p in example_paths() if p.name.startswith(name))
    cores = lncsplit.run_pipeline([lncsplit.load(path)], lncsplit.PassOptions(lnc_size=2))
    linked = lncsplit.link(cores)
    assert lncsplit.sim.equivalent(cores, linked, None)
    assert lncsplit.sim.equivalent(cores, lncsplit.unlink(linked), None)
