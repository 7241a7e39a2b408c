"""lnc_barriercheck (`lncsplit.racecheck`, contract §3.6) on hand-built core sets
whose answer is known by construction."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import pytest
from lnc_builders import aff, const, inst, iv, load, loop, module, on_core, sap, shard, tensor
from lncsplit import NeuronAssertion

Json = dict[str, Any]


def shared(name: str, shape: list[int]) -> Json:
    d = tensor(name, shape, "DRAM", addr_space="Shared")
    return d


def rows(set_name: str, start: Json, n: int, cols: int = 8) -> Json:
    """Rows ``start … start+n`` of a ``[P, cols]`` float32 set."""
    return sap(set_name, [[cols, n], [1, cols]], [start, const(0)])


def write(name: str, arg: Json, **kw: Any) -> Json:
    return inst(name, "DMACopy", outs=[arg], **kw)


def read(name: str, arg: Json, **kw: Any) -> Json:
    return inst(name, "DMACopy", ins=[arg], **kw)


def barrier(name: str, bid: int, cores: list[int] | None = None) -> Json:
    return inst(name, "CoreBarrier", id=bid, cores=cores if cores is not None else [])


def split(d: Json, n: int = 2) -> list[lncsplit.Module]:
    return lncsplit.split([load(d)], n)


def def_use(with_barrier: bool) -> Json:
    insts = [write("w", rows("sh", const(1), 1), predicates=[on_core(0)])]
    if with_barrier:
        insts.append(barrier("cb", 0, [0, 1]))
    insts.append(read("r", rows("sh", const(1), 2), predicates=[on_core(1)]))
    return module(insts, [shared("sh", [4, 8])])


def test_a_shared_def_use_without_a_barrier_races_with_its_witness() -> None:
    r = lncsplit.racecheck(split(def_use(False)))
    assert not r.ok and len(r.races) == 1
    race = r.races[0]
    assert (race.a.core, race.a.instruction, race.a.function) == (0, "w", "main")
    assert (race.b.core, race.b.instruction) == (1, "r")
    assert (race.location.core, race.location.name) == (0, "sh_loc")
    assert (race.witness.partition, race.witness.byte) == (1, 0)
    assert race.kind == "read-write"
    assert race.a.band == (-1, None) and race.b.band == (-1, None)
    assert "after w and before r" in race.fix and "CoreBarrier" in race.fix


def test_a_barrier_between_def_and_use_orders_them() -> None:
    cores = split(def_use(True))
    assert lncsplit.racecheck(cores).ok
    assert lncsplit.racecheck(cores, mode="interval").ok


def test_report_json_has_the_contract_shape() -> None:
    r = lncsplit.racecheck(split(def_use(False)))
    doc = json.loads(r.to_json())
    assert doc["ok"] is False and doc["mode"] == "exact"
    (race,) = doc["races"]
    for side in ("a", "b"):
        assert {"core", "function", "instruction", "band"} <= set(race[side])
    assert race["a"]["band"] == [-1, None]
    assert race["location"] == {"core": 0, "name": "sh_loc"}
    assert race["witness"] == {"partition": 1, "byte": 0}
    assert race["kind"] == "read-write" and isinstance(race["fix"], str)
    # Objects read like the JSON too.
    assert r.races[0]["a"]["band"] == [-1, None]
    assert r.races[0]["witness"]["partition"] == 1
    assert json.loads(lncsplit.racecheck(split(def_use(True))).to_json()) == {
        "ok": True,
        "mode": "exact",
        "races": [],
    }


def test_a_barrier_orders_only_the_cores_it_lists() -> None:
    d = module(
        [
            write("w", rows("sh", const(0), 1), predicates=[on_core(0, 3)]),
            barrier("cb", 0, [0, 1]),
            read("r", rows("sh", const(0), 1)),
        ],
        [shared("sh", [4, 8])],
    )
    r = lncsplit.racecheck(split(d, 3))
    assert [(x.a.core, x.b.core) for x in r.races] == [(0, 2)]


def test_interleaved_strided_writes_pass_exact_and_fail_interval() -> None:
    # Core c writes elements c, c+2, c+4, … of the row: never a common byte.
    d = module(
        [write("w", sap("sh", [[16, 1], [2, 8]], [const(0), aff([(shard(), 1)])]))],
        [shared("sh", [1, 16])],
    )
    cores = split(d)
    assert lncsplit.racecheck(cores).ok
    r = lncsplit.racecheck(cores, "interval")
    assert len(r.races) == 1 and r.mode == "interval"
    # Boxes: bytes 0…59 and 4…63 of partition 0; their least common point is byte 4.
    assert (r.races[0].witness.partition, r.races[0].witness.byte) == (0, 4)
    assert r.races[0].kind == "write-write"


@pytest.mark.parametrize(("coeff", "races"), [(2, 0), (1, 1)])
def test_disjoint_partitions_do_not_race_and_overlapping_ones_do(coeff: int, races: int) -> None:
    d = module([write("w", rows("sh", aff([(shard(), coeff)]), 2))], [shared("sh", [4, 8])])
    for mode in ("exact", "interval"):
        r = lncsplit.racecheck(split(d), mode)  # type: ignore[arg-type]
        assert len(r.races) == races
        if races:
            assert (r.races[0].witness.partition, r.races[0].witness.byte) == (1, 0)


def _core(c: int, sets: list[Json], insts: list[Json]) -> lncsplit.Module:
    return load(
        {
            "version": 2,
            "name": f"k_nc{c:02d}",
            "arch": "gen3",
            "attributes": {"neuron_core_id": c},
            "functions": [
                {
                    "name": "main",
                    "allocations": sets,
                    "basic_blocks": [{"name": "bb0", "instructions": insts}],
                }
            ],
        }
    )


def proxy_cores(with_barrier: bool, target: str = "x_loc") -> list[lncsplit.Module]:
    """Core 0 owns private DRAM ``x``; core 1 writes it through a proxy."""
    x = tensor("x", [4, 8], "DRAM")
    px = tensor("x_remote_0", [4, 8], "DRAM")
    px["locations"][0]["remote_local_target"] = {"name": target, "core": 0}
    mid = [barrier("cb", 0)] if with_barrier else []
    c0 = _core(0, [x], [inst("nop"), *mid, read("use", rows("x", const(2), 1))])
    c1 = _core(1, [x, px], [write("put", rows("x_remote_0", const(2), 2)), *mid, inst("nop")])
    return [c0, c1]


def test_a_write_through_a_proxy_races_with_the_owner() -> None:
    r = lncsplit.racecheck(proxy_cores(False))
    assert [(x.a.instruction, x.b.instruction) for x in r.races] == [("use", "put")]
    assert (r.races[0].location.core, r.races[0].location.name) == (0, "x_loc")
    assert lncsplit.racecheck(proxy_cores(True)).ok


def _acc(name: str, op: str, **kw: Any) -> Json:
    return write(name, rows("sh", const(0), 1), accumulate=op, **kw)


def test_accumulates_of_one_op_never_conflict() -> None:
    d = module([_acc("acc", "add")], [shared("sh", [4, 8])])
    assert lncsplit.racecheck(split(d)).ok


def test_accumulates_of_different_ops_are_write_write() -> None:
    d = module(
        [_acc("add", "add"), _acc("max", "max", predicates=[on_core(1)])], [shared("sh", [4, 8])]
    )
    r = lncsplit.racecheck(split(d))
    assert [(x.a.instruction, x.b.instruction, x.kind) for x in r.races] == [
        ("add", "max", "write-write")
    ]


def test_an_accumulate_against_a_read_is_read_write() -> None:
    d = module(
        [_acc("acc", "add", predicates=[on_core(0)]), read("r", rows("sh", const(0), 1))],
        [shared("sh", [4, 8])],
    )
    r = lncsplit.racecheck(split(d))
    assert [(x.a.instruction, x.b.instruction, x.kind) for x in r.races] == [
        ("acc", "r", "read-write")
    ]


def test_loops_race_in_the_one_epoch_where_the_rows_meet() -> None:
    # Body: core 0 writes row i, a barrier, core 1 reads row 3 - i. Row x is
    # written in epoch x and read in epoch 4 - x: they meet at x = 2.
    body = [
        write("w", rows("sh", iv("i"), 1), predicates=[on_core(0)]),
        barrier("cb", 0),
        read("r", rows("sh", aff([(iv("i"), -1)], 3), 1), predicates=[on_core(1)]),
    ]
    d = module([loop("l", "i", 4, body)], [shared("sh", [4, 8])])
    for mode in ("exact", "interval"):
        r = lncsplit.racecheck(split(d), mode)  # type: ignore[arg-type]
        assert len(r.races) == 1
        race = r.races[0]
        assert (race.witness.partition, race.witness.byte) == (2, 0)
        assert race.a.band == (1, 2) == race.b.band
        assert (race.a.position, race.b.position) == (1, 2)


def test_a_barrier_with_an_undecided_mask_does_not_order() -> None:
    d = def_use(True)
    d["functions"][0]["registers"] = ["r0"]
    runtime = {"kind": "IntRuntimeValueKind", "regref": "r0"}
    d["functions"][0]["basic_blocks"][0]["instructions"][1]["predicates"] = [
        {"expr": aff([(runtime, 1)]), "ge": True}
    ]
    assert len(lncsplit.racecheck(split(d)).races) == 1


def _sb2sb(dst: Json) -> Json:
    p = tensor("p", [4, 8], "SB")
    return module(
        [inst("x", "GPSIMDSB2SB", ins=[rows("p", const(0), 2)], outs=[rows("p", dst, 2)])], [p]
    )


def test_gpsimd_sb2sb_writes_the_partner_core() -> None:
    # Each copy reads its own rows 0-1 and writes the partner's rows 0-1.
    r = lncsplit.racecheck(split(_sb2sb(const(0))))
    assert [(x.location.core, x.location.name, x.kind) for x in r.races] == [
        (0, "p_loc", "read-write"),
        (1, "p_loc", "read-write"),
    ]
    assert "no barrier can order" in r.races[0].fix
    assert lncsplit.racecheck(split(_sb2sb(const(2)))).ok


def test_races_are_reported_once_per_instruction_pair_and_sorted() -> None:
    d = module(
        [
            write("w1", rows("sh", const(0), 4), predicates=[on_core(0)]),
            loop("l", "i", 4, [read("r", rows("sh", iv("i"), 1), predicates=[on_core(1)])]),
            write("w2", rows("sh", const(3), 1), predicates=[on_core(1)]),
        ],
        [shared("sh", [4, 8])],
    )
    r = lncsplit.racecheck(split(d))
    got = [(x.a.instruction, x.b.instruction, x.witness.partition) for x in r.races]
    assert got == [("w1", "r", 0), ("w1", "w2", 3)]


def test_racecheck_does_not_mutate_its_cores() -> None:
    cores = split(def_use(False))
    before = [c.to_bytes() for c in cores]
    lncsplit.racecheck(cores)
    lncsplit.racecheck(cores, "interval")
    assert [c.to_bytes() for c in cores] == before


def _code(fn: Any) -> int:
    with pytest.raises(NeuronAssertion) as e:
        fn()
    return e.value.code


def test_a_footprint_outside_its_location_is_9302_naming_instruction_argument_and_set() -> None:
    d = module([write("w", rows("sh", const(3), 2))], [shared("sh", [4, 8])])
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.racecheck(split(d))
    assert e.value.code == 9302
    text = str(e.value)
    assert "w" in text and "outs[0]" in text and "sh" in text


def test_a_remote_local_target_naming_nothing_is_9303() -> None:
    assert _code(lambda: lncsplit.racecheck(proxy_cores(False, "nothing"))) == 9303


def test_barrier_sequences_that_differ_are_9304() -> None:
    cores = split(def_use(True))
    doc = json.loads(cores[0].to_json())
    doc["functions"][0]["registers"] = ["r0"]
    runtime = {"kind": "IntRuntimeValueKind", "regref": "r0"}
    for i in doc["functions"][0]["basic_blocks"][0]["instructions"]:
        if i["name"] == "cb":
            i["predicates"] = [{"expr": aff([(runtime, 1)]), "ge": True}]
    c0 = lncsplit.Module.from_json(json.dumps(doc))
    assert _code(lambda: lncsplit.racecheck([c0, cores[1]])) == 9304


@pytest.mark.parametrize("n", [1, 3])
def test_gpsimd_sb2sb_with_other_than_two_cores_is_9305(n: int) -> None:
    assert _code(lambda: lncsplit.racecheck(split(_sb2sb(const(0)), n))) == 9305


def test_more_than_1e8_instances_in_one_function_is_9306() -> None:
    d = module([loop("l", "i", 200_000_000, [inst("n")])])
    assert _code(lambda: lncsplit.racecheck(split(d))) == 9306


def test_a_bad_core_list_is_9006() -> None:
    cores = split(def_use(True))
    assert _code(lambda: lncsplit.racecheck([cores[1], cores[0]])) == 9006
    assert _code(lambda: lncsplit.racecheck([])) == 9006
    assert _code(lambda: lncsplit.racecheck([cores[1]])) == 9006


def test_cores_failing_the_concretized_verifier_get_its_error() -> None:
    with_cb = split(def_use(True))
    without = split(def_use(False))
    assert _code(lambda: lncsplit.racecheck([with_cb[0], without[1]])) == 1187


def test_one_core_never_races() -> None:
    assert lncsplit.racecheck([load(def_use(False))]).ok


def test_an_unknown_mode_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        lncsplit.racecheck(split(def_use(True)), "fuzzy")  # type: ignore[arg-type]
