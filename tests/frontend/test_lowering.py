"""lower_to_symbolic: after the split, core c reads exactly XLA's tile (contract §3.5)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from frontend_pelican_ref import check_wire, evaluate, predicate_holds, shard_ubs
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit.frontend import (
    HloModule,
    HloSharding,
    LoweringError,
    digit_linear_fit,
    lower_to_symbolic_json,
    offset_expression,
)

LNC = "AwsNeuronLNCShardingConstraint"


def _module(shape: tuple[int, ...], sharding: str, dtype: str = "f32") -> HloModule:
    dims = ",".join(map(str, shape))
    layout = ",".join(str(i) for i in reversed(range(len(shape))))
    s = f"{dtype}[{dims}]{{{layout}}}"
    text = (
        "HloModule lowering_test\n\n"
        f"ENTRY %main (p: {dtype}[{dims}]) -> {dtype}[{dims}] {{\n"
        f"  %p = {s} parameter(0)\n"
        f'  ROOT %x = {s} custom-call({s} %p), custom_call_target="{LNC}", sharding={sharding}\n'
        "}\n"
    )
    return HloModule.parse(text)


def _instructions(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for b in d["functions"][0]["basic_blocks"] for i in b["instructions"]]


def _check_symbolic(
    d: dict[str, Any], name: str, shape: tuple[int, ...], sharding: str, n: int
) -> None:
    """On each core exactly one instruction for %name survives; it reads XLA's tile."""
    s = HloSharding.parse(sharding)
    assert "nc_symbolic" in d["name"] and d["version"] == 2
    fn = d["functions"][0]
    assert fn["name"] == "main" and "shard_ids" not in fn
    sets = {a["name"]: a for a in fn["allocations"]}
    assert sets[name]["kind"] == "Internal" and sets[name]["tensor_shape"] == list(shape)
    assert len(sets[name]["locations"]) == 1 and sets[name]["locations"][0]["type"] == "DRAM"
    mine = [i for i in _instructions(d) if i["name"] == name or i["name"].startswith(name + ".")]
    assert mine
    if len(mine) > 1:
        assert all(i["name"] == f"{name}.{k}" for k, i in enumerate(mine))
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    for inst in mine:
        assert inst["opcode"] == "DMACopy"
        for arg in inst["ins"] + inst["outs"]:
            for e in arg["addrs"]:
                check_wire(e)
                assert shard_ubs(e) <= {n}
        for p in inst.get("predicates", []):
            check_wire(p["expr"])
        assert inst["ins"][0]["memsetref"] == "p"
        # contract §3.5: ins[0] reads the same tile of the operand (a copy of equal counts)
        assert inst["ins"][0]["ap"] == inst["outs"][0]["ap"]
        assert inst["ins"][0]["addrs"] == inst["outs"][0]["addrs"]
    for c in range(n):
        alive = [i for i in mine if all(predicate_holds(p, c) for p in i.get("predicates", []))]
        assert len(alive) == 1, (c, [i["name"] for i in alive])
        out = alive[0]["outs"][0]
        assert out["kind"] == "symbolic_ap" and out["memsetref"] == name
        off = s.tile_offset_for_device(shape, c)
        lim = s.tile_limit_for_device(shape, c)
        assert [evaluate(e, c) for e in out["addrs"]] == list(off)
        assert out["ap"] == [[st_, b - a] for st_, a, b in zip(strides, off, lim, strict=True)]


# -- examples -------------------------------------------------------------------------------------
def test_iota_sharding_lowers_to_one_instruction() -> None:
    d = lower_to_symbolic_json(_module((8, 8), "{devices=[8,1]<=[8]}"), 8)
    insts = _instructions(d)
    assert [i["name"] for i in insts] == ["x"]
    assert insts[0]["outs"][0]["addrs"][0] == {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "ShardIDKind", "ub": 8}, "coeff": 1}],
        "c": 0,
    }
    _check_symbolic(d, "x", (8, 8), "{devices=[8,1]<=[8]}", 8)


def test_two_dim_iota_uses_floordiv_and_modulo() -> None:
    d = lower_to_symbolic_json(_module((8, 8), "{devices=[2,4]<=[8]}"), 8)
    insts = _instructions(d)
    assert [i["name"] for i in insts] == ["x"]
    a0, a1 = insts[0]["outs"][0]["addrs"]
    assert a0["kind"] == "MultKind" and a0["var"]["kind"] == "FloorDivKind"
    assert a0["var"]["numer"]["kind"] == "AffExprKind"
    assert a1["kind"] == "MultKind" and a1["var"]["kind"] == "ModuloKind"
    _check_symbolic(d, "x", (8, 8), "{devices=[2,4]<=[8]}", 8)


def test_transposed_iota_and_partial_replication() -> None:
    for sh in (
        "{devices=[4,2]<=[2,4]T(1,0)}",
        "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
    ):
        d = lower_to_symbolic_json(_module((8, 16), sh), 8)
        assert [i["name"] for i in _instructions(d)] == ["x"]
        _check_symbolic(d, "x", (8, 16), sh, 8)


def test_uneven_trailing_shards_get_variants() -> None:
    d = lower_to_symbolic_json(_module((13,), "{devices=[6]<=[6]}", "u32"), 6)
    insts = _instructions(d)
    assert len(insts) > 1 and all("predicates" in i for i in insts)
    _check_symbolic(d, "x", (13,), "{devices=[6]<=[6]}", 6)


def test_uneven_9x2_over_two() -> None:
    d = lower_to_symbolic_json(_module((9, 2), "{devices=[2,1]0,1}"), 2)
    _check_symbolic(d, "x", (9, 2), "{devices=[2,1]0,1}", 2)


def test_non_affine_permutation_gets_variants() -> None:
    sh = "{devices=[4]0,2,3,1}"
    d = lower_to_symbolic_json(_module((8,), sh), 4)
    assert len(_instructions(d)) > 1
    _check_symbolic(d, "x", (8,), sh, 4)


def test_replicated_and_maximal_read_whole_tensor() -> None:
    for sh in ("{replicated}", "{maximal device=1}"):
        d = lower_to_symbolic_json(_module((4, 4), sh), 2)
        insts = _instructions(d)
        assert [i["name"] for i in insts] == ["x"] and "predicates" not in insts[0]
        _check_symbolic(d, "x", (4, 4), sh, 2)


def test_lnc_one_has_no_shard_symbols() -> None:
    d = lower_to_symbolic_json(_module((4,), "{replicated}"), 1)
    assert "ShardIDKind" not in json.dumps(d)


def test_module_shape_and_memory() -> None:
    d = lower_to_symbolic_json(_module((4, 4), "{devices=[2,1]0,1}", "bf16"), 2)
    assert d["name"] == "lowering_test_nc_symbolic" and d["arch"] == "gen3"
    sets = {a["name"]: a for a in d["functions"][0]["allocations"]}
    assert sets["p"]["kind"] == "Input" and sets["x"]["dtype"] == "bfloat16"
    assert sets["x"]["locations"][0]["addr"] != sets["p"]["locations"][0]["addr"]


def test_lowering_errors() -> None:
    with pytest.raises(LoweringError):
        lower_to_symbolic_json(_module((8,), "{devices=[4]<=[4]}"), 2)  # 4 devices, lnc 2
    with pytest.raises(LoweringError):
        lower_to_symbolic_json(_module((8,), "{maximal device=3}"), 2)
    with pytest.raises(LoweringError):
        lower_to_symbolic_json(_module((8,), "{manual}"), 2)
    with pytest.raises(LoweringError):
        lower_to_symbolic_json(_module((8,), "{replicated}"), 0)


def test_lowering_keeps_the_precise_sharding_parse_error() -> None:
    with pytest.raises(LoweringError) as ei:
        lower_to_symbolic_json(_module((8,), "{devices=[2]<=[2,1]T(0,5)}"), 2)
    assert "Out of range iota minor_to_major value 5, expecting value in range [0, 2)" in str(
        ei.value
    )
    assert "%x" in str(ei.value) and "without a parsable" not in str(ei.value)


def test_lowering_rejects_an_unknown_aws_neuron_target() -> None:
    text = str(_module((8,), "{devices=[2]<=[2]}")).replace(
        "  ROOT %x",
        '  %y = f32[8]{0} custom-call(f32[8]{0} %p), custom_call_target="AwsNeuronBogus"\n  ROOT %x',
    )
    with pytest.raises(
        LoweringError, match="unknown AwsNeuron custom call target 'AwsNeuronBogus'"
    ):
        lower_to_symbolic_json(HloModule.parse(text), 2)


@pytest.mark.parametrize("text", ["", "not hlo at all\n", '{"version": 2, "functions": []}'])
def test_lowering_text_that_is_not_hlo_is_an_error(text: str) -> None:
    with pytest.raises(LoweringError, match="not HLO text"):
        lower_to_symbolic_json(HloModule.parse(text), 2)


def test_digit_linear_fit() -> None:
    assert digit_linear_fit([0, 4, 1, 5, 2, 6, 3, 7]) == (0, [(2, 4, 1), (1, 2, 4)])
    assert digit_linear_fit([0, 1, 2, 3]) == (0, [(1, 4, 1)])
    assert digit_linear_fit([0, 2, 3, 1]) is None
    e = offset_expression([5, 5, 5])
    assert e == {"kind": "AffExprKind", "terms": [], "c": 5}


# -- property: random shapes and shardings --------------------------------------------------------
def _split_pow2(n: int, k: int, draw: st.DrawFn) -> list[int]:
    parts = [1] * k
    for _ in range(int(math.log2(n))):
        parts[draw(st.integers(0, k - 1))] *= 2
    return parts


@st.composite
def cases(draw: st.DrawFn) -> tuple[tuple[int, ...], str, int]:
    n = draw(st.sampled_from([1, 2, 4, 8]))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 20), min_size=rank, max_size=rank)))
    kind = draw(st.sampled_from(["tiled", "tiled", "tiled", "replicated", "maximal"]))
    if n == 1 or kind == "replicated":
        return shape, "{replicated}", n
    if kind == "maximal":
        return shape, f"{{maximal device={draw(st.integers(0, n - 1))}}}", n
    repl = draw(st.booleans())
    dims = _split_pow2(n, rank + (1 if repl else 0), draw)
    suffix = " last_tile_dim_replicate" if repl else ""
    form = draw(st.sampled_from(["iota", "iota_t", "list", "perm"]))
    if form == "iota":
        body = f"<={[n]}".replace(" ", "")
    elif form == "iota_t":
        k = draw(st.integers(1, 3))
        reshape = _split_pow2(n, k, draw)
        perm = draw(st.permutations(list(range(k))))
        body = "<=[" + ",".join(map(str, reshape)) + "]"
        if k > 1:
            body += "T(" + ",".join(map(str, perm)) + ")"
    elif form == "list":
        body = ",".join(map(str, range(n)))
    else:
        body = ",".join(map(str, draw(st.permutations(list(range(n))))))
    text = "{devices=[" + ",".join(map(str, dims)) + "]" + body + suffix + "}"
    if math.prod(dims) == 1:
        return shape, "{replicated}", n
    return shape, text, n


@settings(max_examples=400, deadline=None)
@given(cases())
def test_property_each_core_reads_xla_tile_json(case: tuple[tuple[int, ...], str, int]) -> None:
    shape, sharding, n = case
    d = lower_to_symbolic_json(_module(shape, sharding), n)
    canonical = str(HloSharding.parse(sharding))
    _check_symbolic(d, "x", shape, canonical, n)


# -- the same property through the compiled lncsplit ----------------------------------------------
@settings(max_examples=60, deadline=None)
@given(cases())
def test_property_each_core_reads_xla_tile_after_split(
    case: tuple[tuple[int, ...], str, int],
) -> None:
    pytest.importorskip("lncsplit._core")
    import lncsplit
    from lncsplit.frontend import lower_to_symbolic

    shape, sharding, n = case
    s = HloSharding.parse(sharding)
    module = lower_to_symbolic(_module(shape, sharding), n)
    # the symbolic addresses evaluate to XLA's offsets through the compiled Expr.eval
    sym = json.loads(module.to_json())
    for c in range(n):
        for inst in _instructions(sym):
            preds = inst.get("predicates", [])
            if inst["name"].split(".")[0] != "x" or not all(predicate_holds(p, c) for p in preds):
                continue
            vals = [
                lncsplit.pelican.Context.from_json(e).eval({"shard": c})
                for e in inst["outs"][0]["addrs"]
            ]
            assert vals == list(s.tile_offset_for_device(shape, c))
    cores = lncsplit.split([module], n)
    assert len(cores) == n
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    for c, core in enumerate(cores):
        d = json.loads(core.to_json())
        mine = [i for i in _instructions(d) if i["name"] == "x" or i["name"].startswith("x.")]
        assert len(mine) == 1
        out = mine[0]["outs"][0]
        off = s.tile_offset_for_device(shape, c)
        lim = s.tile_limit_for_device(shape, c)
        got = []
        for e in out["addrs"]:
            v = lncsplit.pelican.Context.from_json(e).eval({"shard": c})
            got.append(v if v is not None else evaluate(e, c))
        assert got == list(off)
        assert out["ap"] == [[st_, b - a] for st_, a, b in zip(strides, off, lim, strict=True)]


@settings(max_examples=40, deadline=None)
@given(cases())
def test_split_cores_expose_xla_tiles_through_module_views(
    case: tuple[tuple[int, ...], str, int],
) -> None:
    """The same contract through the public views: on core c exactly one ``x``/``x.<k>``
    survives, and its ``outs[0].addrs[d]`` (pelican Exprs of the module) evaluate to XLA's
    tile offsets, its ``ap`` to ``[stride, extent]``."""
    pytest.importorskip("lncsplit._core")
    import lncsplit
    from lncsplit.frontend import lower_to_symbolic

    shape, sharding, n = case
    s = HloSharding.parse(sharding)
    cores = lncsplit.split([lower_to_symbolic(_module(shape, sharding), n)], n)
    strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
    for c, core in enumerate(cores):
        mine = [
            i
            for f in core.functions
            for i in f.instructions()
            if i.name == "x" or i.name.startswith("x.")
        ]
        assert len(mine) == 1
        out = mine[0].outs[0]
        assert out.kind == "symbolic_ap"
        off = s.tile_offset_for_device(shape, c)
        lim = s.tile_limit_for_device(shape, c)
        bindings = {"shard": c} if n == 1 else {}
        assert [e.eval(bindings) for e in out.addrs] == list(off)
        assert out.ap == [[st_, b - a] for st_, a, b in zip(strides, off, lim, strict=True)]
        # contract §3.5 (revised): ins[0] reads the same tile of the operand, a copy of
        # equal counts
        src = mine[0].ins[0]
        assert src.memsetref == "p" and src.ap == out.ap
        assert [e.eval(bindings) for e in src.addrs] == list(off)


def test_lowered_copy_reads_the_operand_tile_it_writes() -> None:
    """A 2-core row split: core c copies rows [4c, 4c+4) of %p into the same rows of %x."""
    pytest.importorskip("lncsplit._core")
    import lncsplit
    from lncsplit.frontend import lower_to_symbolic

    cores = lncsplit.split([lower_to_symbolic(_module((8, 3), "{devices=[2,1]0,1}"), 2)], 2)
    for c, core in enumerate(cores):
        (inst,) = core.function("main").instructions()
        src, dst = inst.ins[0], inst.outs[0]
        assert [e.eval() for e in src.addrs] == [4 * c, 0] == [e.eval() for e in dst.addrs]
        assert src.ap == dst.ap == [[3, 4], [1, 3]]


def test_operand_of_another_shape_is_a_lowering_error() -> None:
    text = (
        "HloModule reshaped\n\n"
        "ENTRY %main (p: f32[4,2]) -> f32[8] {\n"
        "  %p = f32[4,2]{1,0} parameter(0)\n"
        f'  ROOT %x = f32[8]{{0}} custom-call(f32[4,2]{{1,0}} %p), custom_call_target="{LNC}", '
        "sharding={devices=[2]0,1}\n"
        "}\n"
    )
    with pytest.raises(LoweringError, match="operand shape"):
        lower_to_symbolic_json(HloModule.parse(text), 2)


def test_jax_stock_sharding_custom_call_is_lowered_as_the_lnc_constraint() -> None:
    """Contract §3.5 (2026-12-02): JAX's custom_call_target="Sharding" over the LNC mesh."""
    text = str(_module((8, 4), "{devices=[2,1]<=[2]}")).replace(LNC, "Sharding")
    d = lower_to_symbolic_json(HloModule.parse(text), 2)
    _check_symbolic(d, "x", (8, 4), "{devices=[2,1]<=[2]}", 2)
    with pytest.raises(LoweringError):  # a Sharding over 4 devices is not the 2-core LNC mesh
        lower_to_symbolic_json(
            HloModule.parse(text.replace("<=[2]", "<=[4]").replace("[2,1]", "[4,1]")), 2
        )


def test_lower_to_symbolic_with_nothing_to_lower_raises_nothing_to_lower() -> None:
    from lncsplit.frontend import NothingToLowerError, lower_to_symbolic

    text = (
        "HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4]{0} parameter(0)\n}\n"
    )
    for f in (lower_to_symbolic_json, lower_to_symbolic):
        with pytest.raises(NothingToLowerError, match="nothing to lower"):
            f(HloModule.parse(text), 2)
    assert issubclass(NothingToLowerError, LoweringError)
