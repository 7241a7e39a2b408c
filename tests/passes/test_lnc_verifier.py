"""lnc_verifier (contract §3.3, neuronx-facts §4): one test per code."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import lncsplit
import pytest
from lnc_builders import aff, inst, load, module, on_core, shard, tensor
from lncsplit import NeuronAssertion

Json = dict[str, Any]


def expect(code: int, line: int, fn: Callable[[], None]) -> NeuronAssertion:
    with pytest.raises(NeuronAssertion) as e:
        fn()
    assert e.value.code == code, str(e.value)
    assert e.value.location == f"lnc_verifier.cpp:{line}"
    return e.value


def barrier(name: str, id_: int, **kw: Any) -> Json:
    return inst(name, "CoreBarrier", id=id_, cores=[0, 1], **kw)


def good() -> Json:
    return module(
        [
            barrier("cb0", 0),
            inst("sb", "GPSIMDSB2SB"),
            inst("only0", predicates=[on_core(0)]),
            barrier("cb1", 1),
        ],
        [tensor("d", [1, 64], "DRAM")],
    )


def split(d: Json) -> list[lncsplit.Module]:
    return lncsplit.split([load(d)], 2)


def edit(m: lncsplit.Module, f: Callable[[Json], None]) -> lncsplit.Module:
    d = json.loads(m.to_json())
    f(d)
    return lncsplit.Module.from_json(json.dumps(d))


def insts(d: Json) -> list[Json]:
    return d["functions"][0]["basic_blocks"][0]["instructions"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------ symbolic


def test_verifier_is_a_no_op_when_lnc_is_1() -> None:
    d = good()
    insts(d)[0]["predicates"] = [on_core(0)]
    lncsplit.verify_symbolic(load(d), 1)
    lncsplit.verify_concretized([load(d)], 1)


def test_symbolic_module_that_splits_cleanly_passes() -> None:
    lncsplit.verify_symbolic(load(good()), 2)


def test_1200_function_with_two_shard_ids() -> None:
    d = good()
    insts(d).append(inst("x", predicates=[{"expr": aff([(shard(4), 1)]), "ge": True}]))
    expect(1200, 195, lambda: lncsplit.verify_symbolic(load(d), 2))


def test_function_without_shard_ids_is_skipped() -> None:
    lncsplit.verify_symbolic(load(module([barrier("cb", 0)])), 2)


def test_1201_core_barrier_active_on_some_cores_only() -> None:
    d = good()
    insts(d)[0]["predicates"] = [on_core(0)]
    e = expect(1201, 208, lambda: lncsplit.verify_symbolic(load(d), 2))
    assert "cb0" in e.detail


def test_core_barrier_active_on_no_core_is_legal() -> None:
    d = good()
    insts(d)[0]["predicates"] = [{"expr": aff([(shard(), 1)], 5), "ge": False}]
    lncsplit.verify_symbolic(load(d), 2)


def test_1202_sb2sb_counts_differ_between_cores() -> None:
    d = good()
    insts(d)[1]["predicates"] = [on_core(1)]
    expect(1202, 222, lambda: lncsplit.verify_symbolic(load(d), 2))


# --------------------------------------------------------------- concretized


def test_split_output_passes_concretized_checks() -> None:
    lncsplit.verify_concretized(split(good()), 2)


def test_1203_module_without_core_id() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: d["attributes"].pop("neuron_core_id"))
    expect(1203, 50, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1199_function_keeps_shard_ids() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: d["functions"][0].__setitem__("shard_ids", [2]))
    expect(1199, 52, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1193_function_count_differs() -> None:
    c0, c1 = split(good())
    extra = {"name": "aux", "allocations": [], "basic_blocks": []}
    bad = edit(c1, lambda d: d["functions"].append(extra))
    expect(1193, 64, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1191_function_missing_on_a_core() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: d["functions"][0].__setitem__("name", "other"))
    expect(1191, 80, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1192_block_count_differs() -> None:
    c0, c1 = split(good())
    bad = edit(
        c1, lambda d: d["functions"][0]["basic_blocks"].append({"name": "x", "instructions": []})
    )
    expect(1192, 81, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1194_block_names_differ() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: d["functions"][0]["basic_blocks"][0].__setitem__("name", "renamed"))
    expect(1194, 85, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1187_core_barrier_count_differs() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: insts(d).pop(0))
    expect(1187, 108, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1198_sb2sb_count_differs() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: insts(d).append(inst("sb2", "GPSIMDSB2SB")))
    expect(1198, 116, lambda: lncsplit.verify_concretized([c0, bad], 2))


def shared(d: Json, core: int, addr: int, target: Json | None) -> None:
    loc = d["functions"][0]["allocations"][0]["locations"][0]
    loc.update({"is_shared_post_dram_alloc": True, "addr": addr})
    if target is not None:
        loc["remote_local_target"] = target


def test_1197_shared_location_without_remote_target() -> None:
    c0, c1 = split(good())
    c0 = edit(c0, lambda d: shared(d, 0, 4096, None))
    c1 = edit(c1, lambda d: shared(d, 1, 4096, None))
    expect(1197, 133, lambda: lncsplit.verify_concretized([c0, c1], 2))


def test_1195_remote_target_at_another_address() -> None:
    c0, c1 = split(good())
    c0 = edit(c0, lambda d: shared(d, 0, 4096, None))
    c1 = edit(c1, lambda d: shared(d, 1, 8192, {"name": "d_loc", "core": 0}))
    expect(1195, 142, lambda: lncsplit.verify_concretized([c0, c1], 2))


def test_shared_location_synchronized_with_its_target_passes() -> None:
    c0, c1 = split(good())
    c0 = edit(c0, lambda d: shared(d, 0, 4096, None))
    c1 = edit(c1, lambda d: shared(d, 1, 4096, {"name": "d_loc", "core": 0}))
    lncsplit.verify_concretized([c0, c1], 2)


def test_1188_core_barrier_ids_not_dense() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: insts(d)[0].__setitem__("id", 7))
    expect(1188, 157, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1189_core_barrier_names_differ() -> None:
    c0, c1 = split(good())
    bad = edit(c1, lambda d: insts(d)[0].__setitem__("name", "cb_other"))
    expect(1189, 164, lambda: lncsplit.verify_concretized([c0, bad], 2))


def test_1196_shared_address_missing_on_a_core() -> None:
    d = good()
    d["functions"][0]["allocations"].append(tensor("e", [1, 64], "DRAM"))
    c0, c1 = split(d)

    def two_shared(doc: Json, addr_e: int, target: bool) -> None:
        shared(doc, 0, 4096, {"name": "d_loc", "core": 0} if target else None)
        loc = doc["functions"][0]["allocations"][1]["locations"][0]
        loc.update({"addr": addr_e, "is_shared_post_dram_alloc": not target})

    c0 = edit(c0, lambda x: two_shared(x, 8192, False))
    c1 = edit(c1, lambda x: two_shared(x, 8192, True))
    expect(1196, 181, lambda: lncsplit.verify_concretized([c0, c1], 2))


def test_concretized_list_of_several_modules_is_checked_per_module() -> None:
    out = lncsplit.split([load(good()), load(good())], 2)
    lncsplit.verify_concretized(out, 2)


# ------------------------------------------------------------------ the set of cores and N itself


def test_symbolic_shard_ub_other_than_lnc_fails() -> None:
    # good()'s ShardIds have ub 2: it cannot be split into 3 cores.
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.verify_symbolic(load(good()), 3)
    assert e.value.code == 9011
    assert "ub 2" in str(e.value) and "3" in str(e.value)


@pytest.mark.parametrize("lnc", [0, -1])
def test_lnc_below_1_is_a_value_error(lnc: int) -> None:
    m = load(good())
    cores = split(good())
    for call in (
        lambda: lncsplit.verify_symbolic(m, lnc),
        lambda: lncsplit.verify_concretized(cores, lnc),
        lambda: lncsplit.split([m], lnc),
    ):
        with pytest.raises(ValueError, match="lnc"):
            call()


def test_concretized_set_with_a_duplicated_core_names_the_missing_one() -> None:
    c0, _c1 = split(good())
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.verify_concretized([c0, c0], 2)
    assert e.value.code == 9006
    text = str(e.value)
    assert "core 1 is missing" in text and "core 0 is given 2 times" in text


def test_concretized_set_missing_a_core_fails() -> None:
    a0, a1 = split(good())
    b0, b1 = split(good())
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.verify_concretized([a0, a1, b1, b1], 2)
    assert e.value.code == 9006
    assert "core 0 is missing" in str(e.value)


def test_concretized_cores_out_of_order_fail() -> None:
    c0, c1 = split(good())
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.verify_concretized([c1, c0], 2)
    assert e.value.code == 9006
    assert "position 0 holds core 1" in str(e.value)
