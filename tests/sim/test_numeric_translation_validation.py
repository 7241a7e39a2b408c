"""Translation validation with numbers (contract §3.8): ``lncsplit gen --numeric``
modules, for N = 1, 2, 4, 8, exact: symbolic ≡ split ≡ split + the LNC tail ≡
unlink(link(cores)); mutants (an op changed, operands swapped in a subtract)
are told apart."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import _core, sim

props = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(0, 2**32 - 1)


def numeric(seed: int, n: int, instructions: int = 24) -> lncsplit.Module:
    return _core.generate_module(seed=seed, instructions=instructions, lnc=n, numeric=True)


def exact(a: Any, b: Any) -> sim.Equivalence:
    e = sim.equivalent(a, b)
    assert e, str(e)
    assert not e.a.races and not e.b.races
    return e


@pytest.mark.parametrize("n", [1, 2, 4, 8])
@props
@given(seed=seeds)
def test_numeric_modules_symbolic_equals_split_equals_the_tail_equals_unlink_of_link(
    seed: int, n: int
) -> None:
    m = numeric(seed, n)
    e = exact(m, lncsplit.split([m.clone()], n))
    assert e.a.opaque == [], [str(o) for o in e.a.opaque]  # everything computes
    cores = lncsplit.run_pipeline([m.clone()], lncsplit.PassOptions(lnc_size=n))
    ran = sim.run(cores)
    exact(m, ran)
    exact(ran, lncsplit.unlink(lncsplit.link(cores)))


def test_a_numeric_module_computes_numbers() -> None:
    r = sim.run(numeric(1, 2))
    y = r.values(0, "main", "yio")
    assert y[0, 0] == 3 and y[1, 0] == 3 + 16  # Iota: shard base 3, 16 per partition
    assert r.values(1, "main", "yio")[4, 0] == 3 + 64  # core 1 writes rows 4…7


def _mutated(m: lncsplit.Module, change: Any) -> lncsplit.Module:
    d = json.loads(m.to_json())
    insts = d["functions"][0]["basic_blocks"][0]["instructions"]
    assert change(insts), "no instruction to mutate"
    return lncsplit.Module.from_json(json.dumps(d))


def _first(insts: list[dict[str, Any]], pred: Any) -> dict[str, Any] | None:
    return next((i for i in insts if pred(i)), None)


@pytest.mark.parametrize("n", [2, 4])
def test_an_op_changed_is_told_apart(n: int) -> None:
    m = numeric(3, n)
    cores = lncsplit.split([m.clone()], n)

    def change(insts: list[dict[str, Any]]) -> bool:
        i = _first(
            insts, lambda i: i["opcode"] == "Activation" and i.get("func") not in ("identity",)
        )
        if i is None:
            return False
        i["func"] = "exp" if i["func"] != "exp" else "sin"
        return True

    assert not sim.equivalent(_mutated(m, change), cores)


def test_operands_swapped_in_a_subtract_are_told_apart() -> None:
    n = 2
    m = numeric(5, n)
    for seed in range(5, 60):  # a module with a TensorTensor to turn into a subtract
        m = numeric(seed, n)
        d = json.loads(m.to_json())
        if any(
            i["opcode"] == "TensorTensor"
            for i in d["functions"][0]["basic_blocks"][0]["instructions"]
        ):
            break

    def subtract(insts: list[dict[str, Any]]) -> bool:
        i = _first(insts, lambda i: i["opcode"] == "TensorTensor")
        if i is None:
            return False
        i["op"] = "subtract"
        i["ins"][1] = {
            **i["ins"][1],
            "memsetref": "t0" if i["ins"][0]["memsetref"] != "t0" else "t1",
        }
        return True

    def swapped(insts: list[dict[str, Any]]) -> bool:
        subtract(insts)
        i = _first(insts, lambda i: i["opcode"] == "TensorTensor")
        assert i is not None
        i["ins"] = i["ins"][::-1]
        return True

    a, b = _mutated(m, subtract), _mutated(m, swapped)
    assert sim.equivalent(a, lncsplit.split([a.clone()], n))
    assert not sim.equivalent(a, lncsplit.split([b], n))
