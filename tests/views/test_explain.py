"""lncsplit.explain: per core, kept or pruned and why (contract §4, §5, the splitter of §3.1)."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import _core
from lncsplit.examples import example_paths
from lncsplit.views.explain import (
    AmbiguousInstructionError,
    InstructionNotFoundError,
    explain_all,
    walk_instructions,
)
from views_helpers import check_golden, example


def shard(coeff: int = 1, c: int = 0, ub: int = 2) -> dict[str, Any]:
    return {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "ShardIDKind", "ub": ub}, "coeff": coeff}],
        "c": c,
    }


def iv(axis: str, coeff: int = 1, c: int = 0) -> dict[str, Any]:
    return {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "AffIVKind", "axis": axis}, "coeff": coeff}],
        "c": c,
    }


def inst(
    name: str, preds: list[tuple[dict[str, Any], bool]] | None = None, **kw: Any
) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "opcode": "NoOp", "ins": [], "outs": []}
    if preds:
        d["predicates"] = [{"expr": e, "ge": ge} for e, ge in preds]
    d.update(kw)
    return d


def module(*functions: tuple[str, list[dict[str, Any]]]) -> lncsplit.Module:
    doc = {
        "version": 2,
        "name": "t_nc_symbolic",
        "arch": "gen3",
        "functions": [
            {
                "name": f,
                "registers": ["r0"],
                "basic_blocks": [{"name": "bb", "instructions": insts}],
            }
            for f, insts in functions
        ],
    }
    return lncsplit.Module.from_json(json.dumps(doc))


def loop(name: str, body: list[dict[str, Any]], axis: str = "i", **kw: Any) -> dict[str, Any]:
    return inst(
        name,
        opcode="Loop",
        axis={"name": axis, "lo": 0, "ub": 4, "step": 1},
        blocks=[{"name": f"{name}_body", "instructions": body}],
        **kw,
    )


# -- the decision and its reasons -----------------------------------------------------------------


def test_false_predicate_prunes_and_is_named() -> None:
    ex = lncsplit.explain(module(("main", [inst("only0", [(shard(1, 0), False)])])), 2, "only0")
    assert ex.kept_on == [0]
    c1 = ex.cores[1]
    assert not c1.kept and c1.deciding is not None
    assert c1.deciding.text == "1*shard<2> == 0" and c1.deciding.bound_text == "1 == 0"
    assert c1.predicates[0].value is False
    assert c1.reason.startswith("pruned: 1*shard<2> == 0 is false with shard = 1")


def test_kept_instruction_lists_the_constant_true_predicates_dropped() -> None:
    m = module(("main", [inst("x", [(shard(1, 0), False), (shard(1, 5), True)])]))
    c0 = lncsplit.explain(m, 2, "x").cores[0]
    assert c0.kept and c0.dropped_predicates == ["1*shard<2> == 0", "1*shard<2> + 5 >= 0"]
    assert all(p.dropped and p.value is True for p in c0.predicates)


def test_undecided_predicate_names_its_loop_axes_and_stays() -> None:
    m = module(("main", [loop("l", [inst("first", [(iv("i"), False), (shard(1, 0), False)])])]))
    ex = lncsplit.explain(m, 2, "first")
    c0 = ex.cores[0]
    assert c0.kept
    undecided = [p for p in c0.predicates if p.value is None]
    assert len(undecided) == 1 and undecided[0].undecided_axes == ("i",)
    assert not undecided[0].dropped and "on loop axes i" in c0.reason
    assert c0.dropped_predicates == ["1*shard<2> == 0"]
    assert not ex.cores[1].kept


def test_runtime_predicate_is_undecided_and_said_so() -> None:
    reg = {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "IntRuntimeValueKind", "regref": "r0"}, "coeff": 1}],
        "c": 0,
    }
    m = module(("main", [inst("x", [(reg, True)])]))
    p = lncsplit.explain(m, 2, "x").cores[0].predicates[0]
    assert p.value is None and p.runtime and "runtime" in p.value_text


def test_loop_is_pruned_iff_all_children_are_and_says_which() -> None:
    body = [inst("a", [(shard(1, 0), False)]), inst("b", [(shard(1, -1), True)])]
    m = module(("main", [loop("l", body), loop("only0", [inst("c", [(shard(1, 0), False)])])]))
    l0 = lncsplit.explain(m, 2, "l").cores[0]
    assert l0.kept and l0.pruned_children == ["b"] and "1 of 2 children kept" in l0.reason
    o1 = lncsplit.explain(m, 2, "only0").cores[1]
    assert not o1.kept and o1.pruned_children == ["c"] and "all 1 children are pruned" in o1.reason


def test_a_loops_own_false_predicate_does_not_prune_it() -> None:
    m = module(("main", [loop("l", [inst("a")], predicates=[{"expr": shard(1, 0), "ge": False}])]))
    c1 = lncsplit.explain(m, 2, "l").cores[1]
    assert c1.kept and "does not prune a Loop" in c1.reason
    assert [c.name for c in lncsplit.split([m], 2)[1].function("main").instructions()] == ["l", "a"]


def test_empty_loop_is_kept() -> None:
    m = module(("main", [loop("l", [])]))
    assert all(c.kept for c in lncsplit.explain(m, 2, "l").cores)


def test_addresses_before_and_after_binding() -> None:
    ex = lncsplit.explain(lncsplit.load(example("01_shard")), 2, "load_x")
    a = [x for x in ex.cores[1].addresses if x.argument == "ins[0]" and x.field == "addrs[0]"][0]
    assert (a.memsetref, a.before, a.after, a.value) == ("x_dram", "64*shard<2>", "64", 64)
    assert [x.value for x in ex.cores[0].addresses if x.field == "addrs[0]"][0] == 0


def test_address_depending_on_a_loop_axis_has_no_value() -> None:
    ex = lncsplit.explain(lncsplit.load(example("02_loop")), 2, "load_tile")
    a = [x for x in ex.cores[1].addresses if x.field == "addrs[1]"][0]
    assert a.after == "128*t" and a.value is None


def test_collective_rank_fields_are_bound_too() -> None:
    ex = lncsplit.explain(lncsplit.load(example("05_collective")), 2, "ring_step")
    got = {(c.core, a.field): a.value for c in ex.cores for a in c.addresses if a.argument == "op"}
    assert got[(0, "recv_from_rank")] == 1 and got[(1, "recv_from_rank")] == 0
    assert got[(0, "queue")] == 0 and got[(1, "queue")] == 1


def test_lnc_one_passes_through() -> None:
    ex = lncsplit.explain(module(("main", [inst("x", [(shard(1, 0, ub=1), False)])])), 1, "x")
    assert len(ex.cores) == 1 and ex.cores[0].kept and "untouched" in ex.cores[0].reason


def test_expand_explains_the_replication_copies() -> None:
    m = lncsplit.load(example("06_replication"))
    with pytest.raises(InstructionNotFoundError):
        lncsplit.explain(m, 2, "load_w_replicate")
    ex = lncsplit.explain(m, 2, "load_w_replicate", expand=True)
    assert ex.opcode == "DMACopy" and ex.kept_on == [0, 1]


def test_explain_does_not_modify_the_module() -> None:
    m = lncsplit.load(example("02_loop"))
    before = m.to_bytes()
    explain_all(m, 2, expand=True)
    assert m.to_bytes() == before


def test_a_concretized_module_is_refused() -> None:
    core = lncsplit.split([lncsplit.load(example("01_shard"))], 2)[0]
    with pytest.raises(lncsplit.LncsplitError, match="already concretized"):
        lncsplit.explain(core, 2, "load_x")


# -- names ----------------------------------------------------------------------------------------


def test_unknown_name_lists_close_names() -> None:
    m = lncsplit.load(example("02_loop"))
    with pytest.raises(InstructionNotFoundError) as e:
        lncsplit.explain(m, 2, "scale_core")
    assert e.value.close[0] == "scale_core0" and "close names: scale_core0" in str(e.value)
    with pytest.raises(InstructionNotFoundError, match="no close name"):
        lncsplit.explain(m, 2, "zzzzzz")


def test_ambiguous_name_lists_candidates_and_function_colon_name_resolves() -> None:
    m = module(("main", [inst("x", [(shard(1, 0), False)])]), ("other", [inst("x")]))
    with pytest.raises(AmbiguousInstructionError) as e:
        lncsplit.explain(m, 2, "x")
    assert e.value.candidates == ["main:x", "other:x"] and "function:name" in str(e.value)
    assert lncsplit.explain(m, 2, "main:x").kept_on == [0]
    assert lncsplit.explain(m, 2, "other:x").kept_on == [0, 1]


def test_errors_are_lncsplit_errors_and_lookup_errors() -> None:
    assert issubclass(InstructionNotFoundError, lncsplit.LncsplitError)
    assert issubclass(AmbiguousInstructionError, LookupError)


# -- JSON -----------------------------------------------------------------------------------------


def test_json_has_the_contract_shape() -> None:
    doc = json.loads(
        lncsplit.explain(lncsplit.load(example("01_shard")), 2, "bias_zero_core0").to_json()
    )
    assert doc["instruction"] == "bias_zero_core0" and doc["lnc"] == 2
    assert [c["core"] for c in doc["cores"]] == [0, 1]
    for c in doc["cores"]:
        assert isinstance(c["kept"], bool) and isinstance(c["reason"], str)
        for p in c["predicates"]:
            assert isinstance(p["expr"], str) and p["value"] in (True, False, None)
    assert [c["kept"] for c in doc["cores"]] == [True, False]
    assert doc["cores"][1]["predicates"][0] == {
        "expr": "1*shard<2>",
        "ge": False,
        "predicate": "1*shard<2> == 0",
        "bound": "1 == 0",
        "value": False,
        "undecided_axes": [],
        "runtime": False,
        "dropped": False,
    }


def test_a_lowered_collective_says_what_lower_local_collectives_made_of_it() -> None:
    # A generated module has SendRecv, SendRecvCCE and AllReduce (lowered into copies and
    # barriers) and ReduceScatter (kept, a fence before it).
    m = _core.generate_module(1, 300, 2)
    cores = lncsplit.run_pipeline([m.clone()], lncsplit.PassOptions(lnc_size=2))
    written = {(r.function, r.name) for r in walk_instructions(m)}
    verdicts = set()
    for ex in explain_all(m, 2, expand=True):
        if ex.opcode != "CollectiveCompute":
            continue
        for c in ex.cores:
            here = {(r.function, r.name): r.view.opcode for r in walk_instructions(cores[c.core])}
            if here.get((ex.function, ex.instruction)) == "CollectiveCompute":
                assert c.verdict == "kept" and not c.lowered_into
                continue
            made = [
                n
                for f, n in here
                if f == ex.function
                and (
                    n == ex.instruction
                    or (n.startswith(ex.instruction + "_") and (f, n) not in written)
                )
            ]
            assert c.kept and c.verdict == "lowered" and c.lowered_into == made
            assert c.reason == (
                f"lowered by lower_local_collectives into {', '.join(made)} (the split keeps it: "
                + c.reason.partition("(the split keeps it: ")[2]
            )
            assert c.to_dict()["lowered_into"] == made
            text = str(ex)
            assert f"core {c.core}: LOWERED by lower_local_collectives into " in text
            assert f"core {c.core}: KEPT" not in text
        verdicts |= {c.verdict for c in ex.cores}
    assert verdicts == {"kept", "lowered"}


# -- the answer is the splitter's decision --------------------------------------------------------


def _presence(cores: list[lncsplit.Module]) -> list[set[tuple[str, str]]]:
    return [{(r.function, r.name) for r in walk_instructions(c)} for c in cores]


def _check_against_split(m: lncsplit.Module, lnc: int) -> None:
    explained = explain_all(m, lnc)
    present = _presence(lncsplit.split([m.clone()], lnc))
    for ex in explained:
        for c in ex.cores:
            assert c.kept == ((ex.function, ex.instruction) in present[c.core]), (
                ex.instruction,
                c.core,
            )


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.stem)
def test_explain_matches_the_split_on_every_example(path: Any) -> None:
    _check_against_split(lncsplit.load(path), 2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(5, 300), st.sampled_from([2, 4, 8]))
def test_property_explain_kept_equals_presence_after_split(seed: int, n: int, lnc: int) -> None:
    _check_against_split(_core.generate_module(seed, n, lnc), lnc)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(5, 200), st.sampled_from([2, 4]))
def test_property_dropped_predicates_are_the_ones_the_split_drops(
    seed: int, n: int, lnc: int
) -> None:
    m = _core.generate_module(seed, n, lnc)
    explained = {(e.function, e.instruction): e for e in explain_all(m, lnc)}
    for c, core in enumerate(lncsplit.split([m.clone()], lnc)):
        for r in walk_instructions(core):
            ce = explained[(r.function, r.name)].cores[c]
            assert len(r.view.predicates) == sum(1 for p in ce.predicates if not p.dropped)


# -- golden outputs on the example corpus ---------------------------------------------------------


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.stem)
def test_golden_explain_text(path: Any) -> None:
    m = lncsplit.load(path)
    text = "\n\n".join(str(ex) for ex in explain_all(m, 2, expand=True)) + "\n"
    check_golden(f"{path.stem}.explain.txt", text)
