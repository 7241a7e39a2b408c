"""The simulator's promises (contract §3.8), one test per behaviour."""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import lncsplit
import numpy as np
import pytest
from lncsplit import sim
from lncsplit.errors import NeuronAssertion
from sim_modules import ap, const, shard, sset


def module(
    sets: list[dict[str, Any]], insts: list[dict[str, Any]], n: int = 1, name: str = "t"
) -> lncsplit.Module:
    m: dict[str, Any] = {
        "version": 2,
        "name": f"{name}_nc_symbolic",
        "arch": "gen3",
        "functions": [
            {
                "name": "main",
                "shard_ids": [n] if n > 1 else [],
                "registers": ["r0"],
                "allocations": sets,
                "basic_blocks": [{"name": "b", "instructions": insts}],
            }
        ],
    }
    return lncsplit.Module.from_json(json.dumps(m))


def copy(name: str, src: dict[str, Any], dst: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, "opcode": "DMACopy", "ins": [src], "outs": [dst], **extra}


def rows(n: int = 2) -> lncsplit.Module:
    """Each core copies its 2 rows of x to y."""
    return module(
        [sset("x", "Input", 2 * n, 4, "DRAM"), sset("y", "Output", 2 * n, 4, "DRAM")],
        [
            copy(
                "mv",
                ap("x", 2, 4, shard(n, 2), const(0), 4),
                ap("y", 2, 4, shard(n, 2), const(0), 4),
            )
        ],
        n,
    )


X = np.arange(16, dtype=np.uint32).reshape(4, 4)


def test_lncsplit_sim_is_reachable_as_the_contract_names_it() -> None:
    assert lncsplit.sim.run is sim.run
    assert lncsplit.sim.equivalent is sim.equivalent
    assert lncsplit.sim.SimResult is sim.SimResult


def test_a_symbolic_module_runs_on_n_cores_with_the_shard_bound() -> None:
    r = sim.run(rows(), {("main", "x"): X})
    assert r.lnc == 2 and r.symbolic
    y0, y1 = r.outputs[0][("main", "y")], r.outputs[1][("main", "y")]
    assert y0.dtype == np.uint32 and y0.shape == (4, 4)
    assert (y0[:2] == X[:2]).all() and (y0[2:] == 0).all()
    assert (y1[2:] == X[2:]).all() and (y1[:2] == 0).all()
    assert r.steps == 2


def test_lnc_overrides_and_must_match_the_shard_bound() -> None:
    with pytest.raises(NeuronAssertion) as e:
        sim.run(rows(), lnc=4)
    assert e.value.code == 9401


def test_concretized_cores_run_each_on_its_core() -> None:
    cores = lncsplit.split([rows()], 2)
    r = sim.run(cores, {("main", "x"): X})
    assert not r.symbolic
    assert (r.outputs[1][("main", "y")][2:] == X[2:]).all()


def test_cores_out_of_order_are_9006() -> None:
    cores = lncsplit.split([rows()], 2)
    with pytest.raises(NeuronAssertion) as e:
        sim.run([cores[1], cores[0]])
    assert e.value.code == 9006


def test_inputs_may_differ_per_core() -> None:
    other = X + 100
    r = sim.run(rows(), {("main", "x"): [X, other]})
    assert (r.outputs[1][("main", "y")][2:] == other[2:]).all()
    r = sim.run(rows(), {("main", "x"): sim.PerCore({1: other}, X)})
    assert (r.outputs[0][("main", "y")][:2] == X[:2]).all()
    assert (r.outputs[1][("main", "y")][2:] == other[2:]).all()


def test_inputs_none_are_drawn_from_a_fixed_seed() -> None:
    a, b = sim.run(rows()), sim.run(rows())
    ya = a.outputs[0][("main", "y")]
    assert (ya == b.outputs[0][("main", "y")]).all()
    assert ya[:2].any()


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        (("main", "nothing"), X, "no such set"),
        (("main", "y"), X, "not Input"),
        (("main", "x"), X.astype(np.uint16), "dtype"),
        (("main", "x"), X.astype(np.int32), "dtype"),
        (("main", "x"), X[:2], "shape"),
        (("main", "x"), [X, X, X], "list of 3"),
    ],
)
def test_wrong_inputs_are_9403_naming_the_set(key: tuple[str, str], value: Any, what: str) -> None:
    with pytest.raises(NeuronAssertion) as e:
        sim.run(rows(), {key: value})
    assert e.value.code == 9403
    assert key[1] in str(e.value) and what in str(e.value)


def test_a_bfloat16_set_takes_uint16_arrays_bytes_as_they_are() -> None:
    m = module(
        [
            sset("x", "Input", 1, 4, "DRAM", dtype="bfloat16"),
            sset("y", "Output", 1, 4, "DRAM", dtype="bfloat16"),
        ],
        [
            copy(
                "mv",
                ap("x", 1, 4, const(0), const(0), 4, "bfloat16"),
                ap("y", 1, 4, const(0), const(0), 4, "bfloat16"),
            )
        ],
    )
    x = np.array([[0x3F80, 0xFFFF, 1, 0x7FC0]], dtype=np.uint16)
    y = sim.run(m, {("main", "x"): x}).outputs[0][("main", "y")]
    assert y.dtype == np.uint16 and (y == x).all()


def test_partition_dim_other_than_zero_round_trips() -> None:
    xs = sset("x", "Input", 2, 3, "DRAM")
    xs["tensor_shape"], xs["partition_dim"] = [3, 2], 1
    ys = dict(xs, name="y", kind="Output", locations=[{"name": "y_loc", "type": "DRAM"}])
    m = module(
        [xs, ys],
        [copy("mv", ap("x", 2, 3, const(0), const(0), 3), ap("y", 2, 3, const(0), const(0), 3))],
    )
    x = np.arange(6, dtype=np.uint32).reshape(3, 2)
    assert (sim.run(m, {("main", "x"): x}).outputs[0][("main", "y")] == x).all()


def _copy_module(**extra: Any) -> lncsplit.Module:
    src = extra.pop("src", ap("x", 2, 2, const(0), const(0), 4))
    dst = extra.pop("dst", ap("y", 2, 2, const(0), const(0), 4))
    return module(
        [sset("x", "Input", 4, 4, "DRAM"), sset("y", "Output", 4, 4, "DRAM")],
        [copy("c", src, dst, **extra)],
    )


def test_transpose_enumerates_the_destination_with_its_first_two_dims_swapped() -> None:
    y = sim.run(_copy_module(mode="Transpose"), {("main", "x"): X}).outputs[0][("main", "y")]
    assert (y[:2, :2] == X[:2, :2].T).all()


def test_replicate_repeats_the_source_to_fill_the_destination() -> None:
    m = _copy_module(
        mode="Replicate",
        src=ap("x", 1, 4, const(0), const(0), 4),
        dst=ap("y", 4, 4, const(0), const(0), 4),
    )
    y = sim.run(m, {("main", "x"): X}).outputs[0][("main", "y")]
    assert (y == X[0]).all()


@pytest.mark.parametrize(
    ("op", "want"), [("add", X[:2, :2] * 2), ("max", X[:2, :2]), ("min", X[:2, :2])]
)
def test_accumulate_combines_by_value_in_the_dtype(op: str, want: Any) -> None:
    two = [
        copy("first", ap("x", 2, 2, const(0), const(0), 4), ap("y", 2, 2, const(0), const(0), 4))
    ]
    two.append(
        copy(
            "acc",
            ap("x", 2, 2, const(0), const(0), 4),
            ap("y", 2, 2, const(0), const(0), 4),
            accumulate=op,
        )
    )
    m = module([sset("x", "Input", 4, 4, "DRAM"), sset("y", "Output", 4, 4, "DRAM")], two)
    y = sim.run(m, {("main", "x"): X}).outputs[0][("main", "y")]
    assert (y[:2, :2] == want).all()


def test_accumulate_add_wraps() -> None:
    big = np.full((4, 4), 2**32 - 1, dtype=np.uint32)
    m = _copy_module(accumulate="add")
    assert (sim.run(m, {("main", "x"): big}).outputs[0][("main", "y")][:2, :2] == 2**32 - 1).all()
    two = module(
        [sset("x", "Input", 4, 4, "DRAM"), sset("y", "Output", 4, 4, "DRAM")],
        [
            copy(
                f"a{i}",
                ap("x", 2, 2, const(0), const(0), 4),
                ap("y", 2, 2, const(0), const(0), 4),
                accumulate="add",
            )
            for i in range(2)
        ],
    )
    assert (sim.run(two, {("main", "x"): big}).outputs[0][("main", "y")][:2, :2] == 2**32 - 2).all()


def test_a_copy_of_unequal_counts_is_9401_naming_it_and_its_opcode() -> None:
    with pytest.raises(NeuronAssertion) as e:
        sim.run(_copy_module(dst=ap("y", 2, 3, const(0), const(0), 4)))
    assert e.value.code == 9401 and "c (DMACopy)" in str(e.value)


def test_an_access_out_of_bounds_is_9401_naming_instruction_and_set() -> None:
    with pytest.raises(NeuronAssertion) as e:
        sim.run(_copy_module(src=ap("x", 2, 2, const(3), const(0), 4)))
    assert e.value.code == 9401 and "c" in str(e.value) and "set x" in str(e.value)


@pytest.mark.parametrize(
    ("dtype", "value", "bits"),
    [
        ("float32", 1.5, struct.unpack("<I", struct.pack("<f", 1.5))[0]),
        ("int32", -1, 2**32 - 1),
        ("uint32", 7, 7),
    ],
)
def test_memset_writes_its_immediate_in_its_dtype(dtype: str, value: Any, bits: int) -> None:
    ms = {
        "name": "ms",
        "opcode": "Memset",
        "ins": [{"kind": "imm_value", "dtype": dtype, "value": value}],
        "outs": [ap("y", 1, 4, const(0), const(0), 4)],
    }
    m = module([sset("y", "Output", 1, 4, "DRAM")], [ms])
    assert (sim.run(m).outputs[0][("main", "y")] == bits).all()


def test_memset_without_an_immediate_writes_its_value_key_else_zero() -> None:
    ms = {
        "name": "ms",
        "opcode": "Memset",
        "value": 9,
        "ins": [],
        "outs": [ap("y", 1, 4, const(0), const(0), 4)],
    }
    m = module([sset("y", "Output", 1, 4, "DRAM")], [ms])
    assert (sim.run(m).outputs[0][("main", "y")] == 9).all()


def _field(tag: str, value: bytes) -> bytes:
    return struct.pack("<I", len(tag)) + tag.encode() + struct.pack("<Q", len(value)) + value


def _splitmix(h: int, j: int, n: int) -> bytes:
    mask = 2**64 - 1
    state = h ^ ((j + 1) * 0x9E3779B97F4A7C15 & mask)
    out = b""
    while len(out) < n:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out += z.to_bytes(8, "little")
    return out[:n]


def _activation(name: str, **extra: Any) -> lncsplit.Module:
    act = {
        "name": name,
        "opcode": "Activation",
        "engine": "Activation",
        "func": "Mish",  # outside the func vocabulary: opaque (contract §3.8)
        "ins": [ap("x", 2, 4, const(0), const(0), 4)],
        "outs": [ap("y", 2, 4, const(0), const(0), 4), ap("z", 1, 2, const(0), const(0), 2)],
        **extra,
    }
    return module(
        [
            sset("x", "Input", 2, 4, "DRAM"),
            sset("y", "Output", 2, 4, "DRAM"),
            sset("z", "Output", 1, 2, "DRAM"),
        ],
        [act],
    )


def test_an_opaque_instruction_is_blake2b_8_of_its_fields_and_input_bytes() -> None:
    x = np.arange(8, dtype=np.uint32).reshape(2, 4) * 3
    r = sim.run(_activation("act"), {("main", "x"): x})
    data = (
        _field("opcode", b"Activation") + _field("key:func", b'"Mish"') + _field("in", x.tobytes())
    )
    h = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
    assert r.outputs[0][("main", "y")].tobytes() == _splitmix(h, 0, 32)
    assert r.outputs[0][("main", "z")].tobytes() == _splitmix(h, 1, 8)


def test_the_opaque_function_ignores_name_and_engine_but_sees_fields_and_inputs() -> None:
    base = sim.run(_activation("act")).outputs[0][("main", "y")]
    assert (sim.run(_activation("renamed", engine="Pool")).outputs[0][("main", "y")] == base).all()
    assert not (sim.run(_activation("act", func="Arctan")).outputs[0][("main", "y")] == base).all()
    other = np.ones((2, 4), dtype=np.uint32)
    assert not (
        sim.run(_activation("act"), {("main", "x"): other}).outputs[0][("main", "y")] == base
    ).all()


def test_gpsimdsb2sb_with_other_than_two_cores_is_9401() -> None:
    sb = {
        "name": "p",
        "opcode": "GPSIMDSB2SB",
        "ins": [ap("a", 1, 4, const(0), const(0), 4)],
        "outs": [ap("b", 1, 4, const(0), const(0), 4)],
    }
    m = module([sset("a", "Internal", 1, 4, "SB"), sset("b", "Internal", 1, 4, "SB")], [sb], 4)
    with pytest.raises(NeuronAssertion) as e:
        sim.run(m)
    assert e.value.code == 9401 and "GPSIMDSB2SB" in str(e.value)


def test_gpsimdsb2sb_copies_to_the_partner_core() -> None:
    insts = [
        copy("ld", ap("x", 1, 4, shard(2, 1), const(0), 4), ap("a", 1, 4, const(0), const(0), 4)),
        {
            "name": "p",
            "opcode": "GPSIMDSB2SB",
            "ins": [ap("a", 1, 4, const(0), const(0), 4)],
            "outs": [ap("b", 1, 4, const(0), const(0), 4)],
        },
        {"name": "cb", "opcode": "CoreBarrier", "id": 0, "cores": [0, 1]},
        copy("st", ap("b", 1, 4, const(0), const(0), 4), ap("y", 1, 4, shard(2, 1), const(0), 4)),
    ]
    sets = [
        sset("x", "Input", 2, 4, "DRAM"),
        sset("y", "Output", 2, 4, "DRAM"),
        sset("a", "Internal", 1, 4, "SB"),
        sset("b", "Internal", 1, 4, "SB"),
    ]
    r = sim.run(module(sets, insts, 2), {("main", "x"): X[:2]})
    assert (r.outputs[0][("main", "y")][0] == X[1]).all()
    assert (r.outputs[1][("main", "y")][1] == X[0]).all()
    assert not r.races


def test_an_undecided_address_is_9401() -> None:
    rt = {"kind": "IntRuntimeValueKind", "regref": "r0"}
    with pytest.raises(NeuronAssertion) as e:
        sim.run(_copy_module(src=ap("x", 2, 2, const(0), rt, 4)))
    assert e.value.code == 9401 and "undecided" in str(e.value)


def test_cores_reaching_different_sync_points_are_9402() -> None:
    cb = {"name": "cb", "opcode": "CoreBarrier", "id": 0, "cores": [0, 1]}
    cores = lncsplit.split([module([], [cb], 2)], 2)
    j = json.loads(cores[1].to_json())
    j["functions"][0]["basic_blocks"][0]["instructions"] = []
    with pytest.raises(NeuronAssertion) as e:
        sim.run([cores[0], lncsplit.Module.from_json(json.dumps(j))])
    assert e.value.code == 9402


def _racy(barrier: bool) -> lncsplit.Module:
    """Core 1 writes a shared tile core 0 then reads."""
    insts = [
        {
            "name": "w",
            "opcode": "Memset",
            "ins": [{"kind": "imm_value", "dtype": "uint32", "value": 5}],
            "outs": [ap("s", 1, 4, const(0), const(0), 4)],
            "predicates": [{"expr": shard(2, 1, -1), "ge": False}],
        },
        copy("r", ap("s", 1, 4, const(0), const(0), 4), ap("y", 1, 4, const(0), const(0), 4)),
    ]
    if barrier:
        insts.insert(1, {"name": "cb", "opcode": "CoreBarrier", "id": 0, "cores": [0, 1]})
    return module(
        [sset("s", "Internal", 1, 4, "DRAM", shared=True), sset("y", "Output", 1, 4, "DRAM")],
        insts,
        2,
    )


def test_bytes_the_core_order_decides_are_dynamic_races() -> None:
    r = sim.run(_racy(False))
    assert len(r.races) == 1
    race = r.races[0]
    assert (
        race.location == (0, "y_loc") and (race.partition, race.byte) == (0, 0) and race.bytes == 4
    )
    assert race.forward == sim.Writer(0, "r") and race.sync is None
    assert "depend on the core order" in str(race) and race.to_dict()["witness"] == {
        "partition": 0,
        "byte": 0,
    }
    assert (r.outputs[0][("main", "y")] == 0).all()  # the forward order continues
    ordered = sim.run(_racy(True))
    assert not ordered.races and (ordered.outputs[0][("main", "y")] == 5).all()


def test_equivalent_names_the_first_difference_and_its_writers() -> None:
    a = _copy_module()
    b = _copy_module(src=ap("x", 2, 2, const(0), const(1), 4))
    e = sim.equivalent(a, b, {("main", "x"): X})
    assert not e and not e.ok
    d = e.difference
    assert d is not None and (d.core, d.function, d.set, d.index) == (0, "main", "y", (0, 0))
    assert (d.a, d.b) == (0, 1) and d.a_writer == sim.Writer(0, "c") == d.b_writer
    assert "main/y[0, 0]" in str(e)
    assert sim.equivalent(a, _copy_module(), {("main", "x"): X})


def test_equivalent_runs_a_symbolic_side_on_the_other_sides_cores() -> None:
    cores = lncsplit.split([rows()], 2)
    assert sim.equivalent(rows(), cores)
    assert sim.equivalent(sim.run(rows()), cores)


def test_checksums_digest_each_output() -> None:
    c = sim.run(rows()).checksums()
    assert len(c) == 2 and len(c[0][("main", "y")]) == 16


def test_an_npz_keys_function_set_and_core(tmp_path: Any) -> None:
    p = tmp_path / "in.npz"
    np.savez(p, **{"main/x": X, "main/x/1": X + 1})
    inputs = sim.load_inputs(p)
    r = sim.run(rows(), inputs)
    assert (r.outputs[0][("main", "y")][:2] == X[:2]).all()
    assert (r.outputs[1][("main", "y")][2:] == X[2:] + 1).all()
    np.savez(p, **{"main/x/a/b": X})
    with pytest.raises(NeuronAssertion):
        sim.load_inputs(p)


def _trigger_module(dma_blocks: list[str], spelling: str) -> lncsplit.Module:
    """A DMATrigger on queue qPool starts a DMABlock whose two descriptors
    copy the two halves of a DRAM input into an SB tile (offsets in
    elements); a DMACopy stores the tile to an output. ``spelling``: the
    compiler's (contract §1.7: no module name, ``memorylocations``,
    ``blocks``, the entry ``sg0000``) or lncsplit's own."""
    compiler = spelling == "compiler"

    def tensor(name: str, kind: str, ty: str) -> dict[str, Any]:
        loc = {"name": name, "type": ty, "addr": 0, "dims": [4, 32], "base": 0}
        return {
            "name": f"{name}_set",
            "kind": kind if compiler else kind.removeprefix("External"),
            "dtype": "float32",
            "tensor_shape": [4, 8],
            "memorylocations" if compiler else "locations": [loc],
        }

    def pap(name: str, row: int, nrows: int) -> dict[str, Any]:
        return {
            "kind": "physical_ap",
            "ap": [[8, nrows], [1, 8]],
            "offset": row * 8,
            "dtype": "float32",
            "memref": name,
            "memsetref": f"{name}_set",
        }

    descs = [
        {
            "name": f"blk-desc{k}",
            "opcode": "DMADescriptorCopy",
            "engine": "DMA",
            "ins": [pap("x", 2 * k, 2)],
            "outs": [pap("t", 2 * k, 2)],
        }
        for k in range(2)
    ]
    block = {
        "name": "blk",
        "opcode": "DMABlock",
        "engine": "DMA",
        "dma_trigger": "go",
        "ins": [],
        "outs": [],
        "sync_info": {"on_update": [{"id": 4, "update_value": 16}]},
        "blocks": [{"name": "blk_Block0", "instructions": descs}],
    }
    insts = [
        {
            "name": "go",
            "opcode": "DMATrigger",
            "engine": "Pool",
            "queue": "qPool",
            "dge_type": "SWDGE",
            "dma_blocks": dma_blocks,
            "ins": [],
            "outs": [],
        },
        {
            "name": "store",
            "opcode": "DMACopy",
            "engine": "SP",
            "queue": "qSP",
            "ins": [pap("t", 0, 4)],
            "outs": [pap("y", 0, 4)],
            "sync_info": {"on_wait": [{"from": "blk", "id": 4, "wait_value": 16}]},
        },
    ]
    m = {
        "version": 2,
        "arch": "gen3",
        **({} if compiler else {"name": "trigger"}),
        "functions": [
            {
                "name": "sg0000",
                "allocations": [
                    tensor("x", "ExternalInput", "DRAM"),
                    tensor("t", "Internal", "SB"),
                    tensor("y", "ExternalOutput", "DRAM"),
                ],
                "blocks" if compiler else "basic_blocks": [{"name": "b", "instructions": insts}],
            }
        ],
        "queues": [
            {"name": "qSP", "blocks": []},
            {"name": "qPool", "blocks": [{"name": "qPool_Block0", "instructions": [block]}]},
        ],
    }
    return lncsplit.Module.from_json(json.dumps(m))


@pytest.mark.parametrize("spelling", ["lncsplit", "compiler"])
def test_a_dma_trigger_runs_its_blocks_descriptors_as_copies(spelling: str) -> None:
    if spelling == "compiler" and not hasattr(lncsplit.Module, "spelling"):
        pytest.skip("this build's loader does not read the compiler's spelling (contract §1.7)")
    m = _trigger_module(["blk"], spelling)
    x = np.arange(32, dtype=np.float32).reshape(4, 8) + 0.5
    r = sim.run(m, {("sg0000", "x_set"): x})
    assert (r.values(0, "sg0000", "y_set") == x).all()  # the bytes the descriptors copied
    assert [o for o in r.opaque if o.instruction == "go"] == []  # not the opaque function
    started_nothing = sim.run(_trigger_module([], spelling), {("sg0000", "x_set"): x})
    assert (started_nothing.values(0, "sg0000", "y_set") == 0).all()
