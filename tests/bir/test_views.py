"""Read-only views: iterate a module without converting it to dicts."""

from __future__ import annotations

import json
from collections.abc import Callable

import lncsplit
import pytest
from bir_testdata import small_module_dict
from lncsplit import Module, _core
from lncsplit._core import generate_module


@pytest.fixture
def m() -> Module:
    return Module.from_json(json.dumps(small_module_dict()))


def test_function_view_exposes_everything(m: Module) -> None:
    fs = m.functions
    assert [f.name for f in fs] == ["main", "aux"]
    f = m.function("main")
    assert f is not None and m.function("nope") is None
    assert f.shard_ids == [2]
    assert f.registers == ["r0"]
    assert [b.name for b in f.blocks] == ["bb0"]
    assert [s.name for s in f.allocations] == ["t", "d"]
    assert f.instruction_count() == 7
    names = [i.name for i in f.instructions()]
    assert names == ["a", "l", "b", "cb", "cc", "mm", "rt"]  # depth first, loop bodies included
    assert f.memory_location("t_sb") is not None and f.memory_location("nope") is None
    assert f.memory_location_set("d") is not None and f.memory_location_set("nope") is None
    assert "main" in repr(f)


def test_block_view_exposes_everything(m: Module) -> None:
    f = m.functions[0]
    bb = f.blocks[0]
    assert bb.name == "bb0"
    assert [i.name for i in bb.instructions] == ["a", "l", "cb", "cc", "mm", "rt"]
    loop = bb.instructions[1]
    body = loop.blocks[0]
    assert body.name == "body"
    assert [i.name for i in body.instructions] == ["b"]
    assert "bb0" in repr(bb)


def test_instruction_view_exposes_everything(m: Module) -> None:
    by_name = {i.name: i for i in m.functions[0].instructions()}
    a = by_name["a"]
    assert a.opcode == "DMACopy" and a.opcode_code == 32 and a.engine == "DMA"
    assert [x.kind for x in a.ins] == ["physical_ap"]
    assert [x.kind for x in a.outs] == ["symbolic_ap"]
    assert a.indirection_ins == []
    assert [(p.expr.to_json(), p.ge) for p in a.predicates] == [
        (
            {
                "kind": "AffExprKind",
                "terms": [{"idx": {"kind": "ShardIDKind", "ub": 2}, "coeff": -1}],
                "c": 0,
            },
            False,
        )
    ]
    # Predicates and addresses are pelican objects of the module's own arena.
    assert [p.eval({"shard": 0}) for p in a.predicates] == [True]
    assert a.eval_mask({"shard": 1}) == 0 and a.eval_mask({"shard": 0}) == 1
    assert a.fields == {"mode": "Transpose", "weird": {"k": 1}}
    assert a.axis is None and a.blocks == []
    assert (
        a.to_dict() == json.loads(m.to_json())["functions"][0]["basic_blocks"][0]["instructions"][0]
    )
    loop = by_name["l"]
    assert loop.opcode == "Loop" and loop.opcode_code == 105 and loop.engine == "Unassigned"
    assert loop.axis == {"name": "i", "lo": 0, "ub": 4, "step": 1}
    # fields are the JSON verbatim: the axis keeps its unknown key too
    assert loop.fields == {"axis": {"name": "i", "lo": 0, "ub": 4, "step": 1, "axis_x": 2}}
    assert by_name["b"].dependencies == [("a", "Flow"), ("a", None)]
    assert by_name["cb"].fields == {"id": 0, "cores": [0, 1], "runtime_semaphore": 3}
    cc = by_name["cc"].fields
    assert cc["send_to_rank"] == 1 and cc["queue"] == 0
    assert cc["recv_from_rank"]["kind"] == "ModuloKind"
    assert cc["cc_channel"] == {"kind": "AllReduce", "replica_groups": [[0, 1]], "op": "add"}
    assert by_name["mm"].fields == {
        "replication_resolution": 2,
        "replication_shift_amnt": 32,
        "replication_num_rows": 32,
        "accumulation_flag": 1,
    }
    assert "DMACopy" in repr(a)


def test_argument_view_exposes_everything(m: Module) -> None:
    a = m.functions[0].blocks[0].instructions[0]
    p = a.ins[0]
    assert (p.kind, p.dtype, p.memsetref, p.memref, p.offset) == (
        "physical_ap",
        "bfloat16",
        "d",
        "d_dram",
        8,
    )
    assert p.ap == [[64, 128], [1, 64]]
    assert p.addrs == [] and p.tile_addrs is None and p.block_addrs is None
    s = a.outs[0]
    assert (s.kind, s.dtype, s.memsetref, s.memref, s.offset) == (
        "symbolic_ap",
        "float32",
        "t",
        None,
        None,
    )
    assert s.ap == [[4, 64], [1, 4]]
    assert s.addrs[1].to_json() == {"kind": "AffExprKind", "terms": [], "c": 0}
    assert s.addrs[1].eval({}) == 0
    assert s.to_dict()["arg_x"] == {"k": "v"}
    b = m.functions[0].blocks[0].instructions[1].blocks[0].instructions[0]
    imm, other = b.ins
    assert (imm.kind, imm.dtype, imm.value, imm.ap) == ("imm_value", "float32", 2.5, None)
    assert other.kind == "register_access" and other.to_dict() == {
        "kind": "register_access",
        "regref": "r0",
        "other_x": True,
    }
    assert "symbolic_ap" in repr(s)


def test_memory_views_expose_everything(m: Module) -> None:
    f = m.functions[0]
    t, d = f.allocations
    assert (t.name, t.kind, t.dtype, t.tensor_shape, t.partition_dim, t.addr_space) == (
        "t",
        "Internal",
        "float32",
        [128, 4],
        0,
        "Local",
    )
    assert (t.partitions, t.bytes_per_partition) == (128, 16)
    assert d.addr_space == "Shared" and d.bytes_per_partition == 128
    loc = d.locations[0]
    assert (loc.name, loc.type, loc.set_name, loc.addr, loc.bank, loc.base) == (
        "d_dram",
        "DRAM",
        "d",
        4096,
        None,
        None,
    )
    assert (
        loc.allocated is None
        and loc.is_shared_post_dram_alloc is True
        and loc.written_by_another_core is None
    )
    assert loc.remote_local_target == {"name": "d_dram", "core": 0}
    assert "d_dram" in repr(loc) and "[256, 64]" in repr(d)


def test_memory_location_setters_write_through(m: Module) -> None:
    loc = m.functions[0].memory_location("t_sb")
    assert loc is not None
    loc.addr, loc.bank, loc.base = 512, 3, 32
    loc.allocated = True
    loc.is_shared_post_dram_alloc = False
    loc.remote_local_target = {"name": "t_sb", "core": 0}
    out = json.loads(m.to_json())["functions"][0]["allocations"][0]["locations"][0]
    assert out == {
        "name": "t_sb",
        "type": "SB",
        "addr": 512,
        "bank": 3,
        "base": 32,
        "allocated": True,
        "is_shared_post_dram_alloc": False,
        "remote_local_target": {"name": "t_sb", "core": 0},
        "loc_x": 1.5,
    }
    loc.addr = None
    loc.remote_local_target = None
    out = json.loads(m.to_json())["functions"][0]["allocations"][0]["locations"][0]
    assert "addr" not in out and "remote_local_target" not in out
    with pytest.raises(TypeError):
        loc.remote_local_target = ["t_sb", 0]
    with pytest.raises(ValueError):
        loc.remote_local_target = {"name": "t_sb", "core": -1}
    with pytest.raises(ValueError):
        loc.remote_local_target = {"core": 1}
    with pytest.raises(TypeError):
        loc.addr = "high"


def test_views_keep_the_module_alive() -> None:
    f = Module.from_json(json.dumps(small_module_dict())).functions[0]
    assert f.name == "main" and len(f.instructions()) == 7


def test_stale_view_raises_index_error() -> None:
    m = Module.from_json(json.dumps(small_module_dict()))
    inst = m.functions[1].blocks[0]
    assert inst.instructions == []
    a = m.functions[0].blocks[0].instructions[5]
    assert a.name == "rt"


def test_views_cover_a_generated_module() -> None:
    m = generate_module(11, 2000, 2)
    seen = 0
    d = json.loads(m.to_json())
    for f, fd in zip(m.functions, d["functions"], strict=True):
        insts = f.instructions()
        seen += len(insts)
        for i in insts[:200]:
            assert i.to_dict()["name"] == i.name
            for a in i.ins + i.outs:
                assert a.to_dict()["kind"] == a.kind
        for s, sd in zip(f.allocations, fd["allocations"], strict=True):
            assert s.name == sd["name"] and [loc.name for loc in s.locations] == [
                x["name"] for x in sd["locations"]
            ]
    assert seen == m.instruction_count() == 2000


# -- stale views (docs/bir-json.md: a view of a changed module raises IndexError) ----------------
def _views_of(m: Module) -> dict[str, Callable[[], object]]:
    """One read per view kind, each through a view made now."""
    f = m.functions[0]
    inst = next(i for i in f.instructions() if i.ins)
    block = f.blocks[0]
    arg = inst.ins[0]
    s = f.allocations[0]
    loc = s.locations[0]
    return {
        "FunctionView": lambda: f.name,
        "BlockView": lambda: block.name,
        "InstructionView": lambda: inst.name,
        "ArgumentView": lambda: arg.kind,
        "MemoryLocationSetView": lambda: s.name,
        "MemoryLocationView": lambda: loc.name,
    }


MUTATIONS: dict[str, Callable[[Module], object]] = {
    "split": lambda m: lncsplit.split([m], 2),
    "expand_replication": lncsplit.expand_replication,
    "concretize": lambda m: _core.concretize(m, 1),
    "release": lambda m: _core.release([m]),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_every_view_made_before_a_mutation_raises_index_error(mutation: str) -> None:
    m = generate_module(5, 400, 2)
    reads = _views_of(m)
    for read in reads.values():
        read()
    MUTATIONS[mutation](m)
    for read in reads.values():
        with pytest.raises(IndexError, match="stale view"):
            read()


def test_a_view_taken_before_split_does_not_read_another_instruction() -> None:
    m = generate_module(5, 400, 2)
    views = m.functions[0].instructions()
    names = [v.name for v in views]
    lncsplit.split([m], 2)
    survivors = {i.name for i in m.functions[0].instructions()}
    assert len(survivors) < len(names)  # the split removed instructions: indices moved
    for v in views:
        with pytest.raises(IndexError):
            _ = v.name


def test_views_made_after_a_mutation_read_the_new_module() -> None:
    m = generate_module(5, 400, 2)
    lncsplit.split([m], 2)
    f = m.functions[0]
    assert [i.name for i in f.instructions()] == [i["name"] for i in _all(m)]
    assert m.neuron_core_id == 1


def _all(m: Module) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []

    def walk(blocks: list[dict[str, object]]) -> None:
        for b in blocks:
            for i in b["instructions"]:  # type: ignore[attr-defined]
                out.append(i)
                walk(i.get("blocks", []))

    walk(json.loads(m.to_json())["functions"][0]["basic_blocks"])
    return out


def test_setters_and_reads_leave_views_valid(m: Module) -> None:
    f = m.functions[0]
    insts = f.instructions()
    locs = [loc for s in f.allocations for loc in s.locations]
    for k, loc in enumerate(locs):
        loc.addr = 64 * k
    m.name = "renamed"
    lncsplit.verify_bir(m)  # read-only passes leave views valid too
    assert [loc.addr for loc in locs] == [64 * k for k in range(len(locs))]
    assert [i.name for i in insts] == [i.name for i in f.instructions()]


def test_split_with_lnc_one_changes_nothing_and_keeps_views(m: Module) -> None:
    inst = m.functions[0].instructions()[0]
    assert lncsplit.split([m], 1)[0] is m
    assert inst.name == m.functions[0].instructions()[0].name


def test_an_expression_of_a_released_module_raises_index_error() -> None:
    m = generate_module(5, 400, 2)
    inst = next(i for i in m.functions[0].instructions() if i.predicates)
    p = inst.predicates[0]
    e = p.expr
    kind = e.kind_name
    _core.release([m])
    with pytest.raises(IndexError, match="released"):
        _ = e.kind_name
    with pytest.raises(IndexError, match="released"):
        p.eval({"shard": 0})
    with pytest.raises(IndexError, match="released"):
        e.update_shard_id(0)
    assert kind
