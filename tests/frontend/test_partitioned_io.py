"""§3.9's I/O model: whole-program ``arg<k>``/``out<k>`` in Shared DRAM, each core reading its
tile at XLA's offsets and the lowest device holding a tile writing it — and the errors of a
program that cannot be lowered."""

from __future__ import annotations

import re

import lncsplit
import numpy as np
import pytest
from bir_numpy_ref import eval_expr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit.frontend import HloSharding, LoweringError
from lncsplit.frontend.partitioned import lower_partitioned, lower_partitioned_json
from partitioned_helpers import hlo, pipeline, rng_array, run


def _before(
    global_shape: str, sharding: str, root_sharding: str, n: int, body: str | None = None
) -> str:
    body = body or f"ROOT %r = {global_shape} negate(%x)"
    return (
        f"HloModule t, num_partitions={n}\n\n"
        f"ENTRY %main (x: {global_shape.split('{')[0]}) -> f32[] {{\n"
        f"  %x = {global_shape} parameter(0), sharding={sharding}\n"
        f"  {body}, sharding={root_sharding}\n"
        "}\n"
    )


def _pair(gdims: tuple[int, ...], sharding: str, root_sharding: str, n: int) -> tuple[str, str]:
    """An after/before pair of ``negate`` with the parameter and ROOT sharded as given."""
    g = f"f32[{','.join(map(str, gdims))}]"
    s = HloSharding.parse(sharding)
    local = s.partitioned_shape(gdims)
    rs = HloSharding.parse(root_sharding)
    rlocal = rs.partitioned_shape(gdims)
    after_body = [f"%r = f32[{','.join(map(str, rlocal))}] negate(%p0)"]
    if tuple(local) != tuple(rlocal):
        pytest.skip("the pair needs a reshard")
    after = hlo([f"f32[{','.join(map(str, local))}]"], after_body, n=n, shardings=[sharding])
    return after, _before(g, sharding, root_sharding, n)


def _by_name(doc: dict) -> dict[str, dict]:
    return {i["name"]: i for i in doc["functions"][0]["basic_blocks"][0]["instructions"]}


def _active(inst: dict, c: int) -> bool:
    for p in inst.get("predicates", []):
        v = eval_expr(p["expr"], c)
        if (p.get("ge", True) and v < 0) or (not p.get("ge", True) and v != 0):
            return False
    return True


@pytest.mark.parametrize(
    ("gdims", "sharding", "n"),
    [
        ((8, 4), "{devices=[2,1]<=[2]}", 2),
        ((8, 4), "{devices=[1,2]<=[2]}", 2),
        ((8, 8), "{devices=[2,2]<=[2,2]T(1,0)}", 4),
        ((8, 4), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", 4),
        ((16,), "{devices=[4]0,2,1,3}", 4),
    ],
)
def test_each_core_reads_its_tile_of_arg_at_xla_offsets(
    gdims: tuple[int, ...], sharding: str, n: int
) -> None:
    after, before = _pair(gdims, sharding, sharding, n)
    doc = lower_partitioned_json(after, before=before)
    s = HloSharding.parse(sharding)
    reads = [
        i
        for i in doc["functions"][0]["basic_blocks"][0]["instructions"]
        if i["ins"] and i["ins"][0]["memsetref"] == "arg0"
    ]
    for c in range(n):
        mine = [i for i in reads if _active(i, c)]
        assert len(mine) == 1
        src = mine[0]["ins"][0]
        assert [eval_expr(a, c) for a in src["addrs"]] == list(s.tile_offset_for_device(gdims, c))
        assert [n_ for _, n_ in src["ap"]] == list(s.tile_shape(gdims, c))
    x = rng_array(gdims, "f32", 1)
    (got,) = run(after, [x], before=before, n=n)
    np.testing.assert_array_equal(got, -x)


@pytest.mark.parametrize(
    ("root_sharding", "writers"),
    [
        ("{replicated}", [0]),
        ("{maximal device=1}", [1]),
        ("{devices=[2,1,2]<=[4] last_tile_dim_replicate}", [0, 2]),
        ("{devices=[4,1]<=[4]}", [0, 1, 2, 3]),
        ("{devices=[2,1,2]<=[2,2]T(1,0) last_tile_dim_replicate}", [0, 1]),
    ],
)
def test_the_lowest_device_holding_a_tile_writes_it(root_sharding: str, writers: list[int]) -> None:
    n = 4
    after, before = _pair((8, 4), root_sharding, root_sharding, n)
    doc = lower_partitioned_json(after, before=before)
    writes = [
        i
        for i in doc["functions"][0]["basic_blocks"][0]["instructions"]
        if i["outs"][0]["memsetref"] == "out0"
    ]
    assert [c for c in range(n) if any(_active(i, c) for i in writes)] == writers
    x = rng_array((8, 4), "f32", 2)
    (got,) = run(after, [x], before=before, n=n)
    np.testing.assert_array_equal(got, -x)
    cores = lncsplit.run_pipeline(
        [lower_partitioned(after, before=before)], lncsplit.PassOptions(lnc_size=n)
    )
    assert lncsplit.racecheck(cores).ok


def test_uneven_tiles_read_only_the_elements_they_hold() -> None:
    # f32[10] over 4 devices: ceil-div tiles of 3, the last holds 1
    after = hlo(["f32[3]"], ["%r = f32[3]{0} negate(%p0)"], n=4, shardings=["{devices=[4]<=[4]}"])
    before = _before("f32[10]{0}", "{devices=[4]<=[4]}", "{devices=[4]<=[4]}", 4)
    doc = lower_partitioned_json(after, before=before)
    reads = [
        i
        for i in doc["functions"][0]["basic_blocks"][0]["instructions"]
        if i["ins"] and i["ins"][0]["memsetref"] == "arg0"
    ]
    extents = {c: next(i for i in reads if _active(i, c))["ins"][0]["ap"][0][1] for c in range(4)}
    assert extents == {0: 3, 1: 3, 2: 3, 3: 1}
    x = rng_array((10,), "f32", 3)
    (got,) = run(after, [x], before=before, n=4)
    np.testing.assert_array_equal(got, -x)
    pipeline(after, before=before, n=4)


def test_inputs_and_outputs_are_whole_program_sets_in_shared_dram() -> None:
    after, before = _pair((8, 4), "{devices=[2,1]<=[2]}", "{devices=[2,1]<=[2]}", 2)
    doc = lower_partitioned_json(after, before=before)
    sets = {s["name"]: s for s in doc["functions"][0]["allocations"]}
    assert sets["arg0"]["kind"] == "Input" and sets["arg0"]["tensor_shape"] == [8, 4]
    assert sets["out0"]["kind"] == "Output" and sets["out0"]["tensor_shape"] == [8, 4]
    assert {sets[k]["addr_space"] for k in ("arg0", "out0")} == {"Shared"}
    private = [s for s in sets.values() if s["name"] not in ("arg0", "out0")]
    assert all(s["addr_space"] == "Local" for s in private)


# ------------------------------------------------------------------------------ errors


def test_sharded_parameters_without_before_are_a_lowering_error() -> None:
    after, _ = _pair((8, 4), "{devices=[2,1]<=[2]}", "{devices=[2,1]<=[2]}", 2)
    with pytest.raises(LoweringError, match="needs the module before spmd-partitioning"):
        lower_partitioned_json(after)


def test_a_before_whose_shapes_disagree_is_a_lowering_error() -> None:
    after, _ = _pair((8, 4), "{devices=[2,1]<=[2]}", "{devices=[2,1]<=[2]}", 2)
    before = _before("f32[6,4]{1,0}", "{devices=[2,1]<=[2]}", "{devices=[2,1]<=[2]}", 2)
    with pytest.raises(LoweringError, match=r"per-device buffer is \[3, 4\].*has \[4, 4\]"):
        lower_partitioned_json(after, before=before)


def test_lnc_other_than_num_partitions_is_a_lowering_error() -> None:
    text = hlo(["f32[4]"], ["%r = f32[4]{0} negate(%p0)"], n=2)
    with pytest.raises(LoweringError, match="num_partitions=2"):
        lower_partitioned(text, 4)
    assert lower_partitioned(text, 2).name == "t_nc_symbolic"


def test_a_module_that_is_not_partitioned_is_a_lowering_error() -> None:
    text = hlo(["f32[4]"], ["%r = f32[4]{0} negate(%p0)"], n=2).replace("main_spmd", "main")
    with pytest.raises(LoweringError, match="not partitioned"):
        lower_partitioned_json(text)


def test_text_that_is_not_hlo_is_a_lowering_error() -> None:
    with pytest.raises(LoweringError, match="not HLO text"):
        lower_partitioned_json('{"version": 2}')


def test_a_program_that_does_not_fit_a_cores_dram_is_a_lowering_error() -> None:
    """Inputs and outputs past the shared region, or a value past the core's private DRAM,
    name the HLO instruction and its line (contract §3.9)."""
    text = hlo(["f32[100000,100000]"], ["%r = f32[100000,100000]{1,0} negate(%p0)"], n=1)
    with pytest.raises(LoweringError, match=r"^%p0 \(line 5\): arg0 .*more than the .* bytes"):
        lower_partitioned_json(text.replace("main_spmd", "main"))
    body = [
        "%b = f32[100000,100000]{1,0} broadcast(%p0), dimensions={}",
        "%r = f32[1,1]{1,0} slice(%b), slice={[0:1], [0:1]}",
    ]
    text = hlo(["f32[]"], body, n=1).replace("main_spmd", "main")
    with pytest.raises(LoweringError, match=r"^%b \(line 6\): .*private DRAM, more than"):
        lower_partitioned_json(text)


# ------------------------------------------------------------------------------ malformed text

_SMALL_PROGRAMS = ("shape_ops", "megatron_mlp", "collective_permute", "dynamic_slice_partition_id")


@st.composite
def _mutated_pair(draw: st.DrawFn) -> tuple[str, str]:
    """A shipped program's after/before texts with one line of one of them damaged: deleted,
    cut short, a character replaced, a number changed, or a copy of another line inserted."""
    from jax_corpus import program

    prog = program(draw(st.sampled_from(_SMALL_PROGRAMS)))
    texts = [prog.after, prog.before]
    which = draw(st.integers(0, 1))
    lines = texts[which].split("\n")
    i = draw(st.integers(0, len(lines) - 1))
    kind = draw(st.sampled_from(["delete", "cut", "char", "number", "insert"]))
    line = lines[i]
    if kind == "delete":
        del lines[i]
    elif kind == "cut":
        lines[i] = line[: draw(st.integers(0, len(line)))]
    elif kind == "char" and line:
        j = draw(st.integers(0, len(line) - 1))
        lines[i] = line[:j] + draw(st.sampled_from(list("{}[](),=%0123456789-x "))) + line[j + 1 :]
    elif kind == "number":
        delta = draw(st.sampled_from([-1, 1, 7, 1000]))
        lines[i] = re.sub(r"\d+", lambda m: str(int(m.group()) + delta), line, count=1)
    else:
        lines.insert(i, lines[draw(st.integers(0, len(lines) - 1))])
    texts[which] = "\n".join(lines)
    return texts[0], texts[1]


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated_pair())
def test_damaged_real_programs_lower_or_raise_a_lowering_error(pair: tuple[str, str]) -> None:
    """Bad input is a LoweringError (contract §3.9, §4), never another exception: a damaged
    line of a real dump either still lowers to a module that loads, or is refused."""
    after, before = pair
    try:
        module = lower_partitioned(after, before=before)
    except LoweringError:
        return
    assert module.instruction_count() > 0
