"""Translation validation with numbers (contract §3.8): ``lncsplit gen --numeric``
modules, for N = 1, 2, 4, 8, exact: symbolic ≡ split ≡ split + the LNC tail ≡
unlink(link(cores)); mutants (an op changed, operands swapped in a subtract)
are told apart."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import numpy as np
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


R, C = 4, 16  # the generator's rows per core and columns (rust/src/gen/numeric.rs)


def _after_evacuation(m: lncsplit.Module, insts: list[dict[str, Any]]) -> lncsplit.Module:
    """``m`` with ``insts`` placed right after the Matmult's PSUM evacuation
    (the Activation writing ``t3``), just before the DMACopy that stores
    ``t3`` to the Output ``ymm``: what they write to ``t3`` is what ``ymm``
    holds. ``t3`` is then ``identity`` or ``tanh`` of two K-tiles of bfloat16
    products of drawn inputs in [-1, 1), so finite with |t3| <= 16."""
    d = json.loads(m.to_json())
    body = d["functions"][0]["basic_blocks"][0]["instructions"]
    k = next(i for i, x in enumerate(body) if x["name"].startswith("evac"))
    store = body[k + 1]
    assert body[k]["outs"][0]["memsetref"] == "t3"
    assert store["opcode"] == "DMACopy" and store["ins"][0]["memsetref"] == "t3"
    assert store["outs"][0]["memsetref"] == "ymm"
    body[k + 1 : k + 1] = insts
    return lncsplit.Module.from_json(json.dumps(d))


def _tile(m: lncsplit.Module, name: str) -> dict[str, Any]:
    """The evacuation's ``outs[0]`` access pattern, on tile ``name``."""
    d = json.loads(m.to_json())
    body = d["functions"][0]["basic_blocks"][0]["instructions"]
    evac = next(x for x in body if x["name"].startswith("evac"))
    return {**evac["outs"][0], "memsetref": name}


def _ymm_difference(e: sim.Equivalence, n: int) -> list[Any]:
    """Per core, ``ymm`` of side b minus side a on the core's own rows; the
    rows it does not write must agree (zeros on both sides)."""
    out = []
    for c in range(n):
        a, b = e.a.values(c, "main", "ymm"), e.b.values(c, "main", "ymm")
        own = slice(c * R, (c + 1) * R)
        rest = np.ones(a.shape[0], dtype=bool)
        rest[own] = False
        assert (a[rest] == b[rest]).all()
        out.append(b[own] - a[own])
    return out


@pytest.mark.parametrize("n", [2, 4])
@props
@given(seed=seeds)
def test_an_op_changed_is_told_apart(seed: int, n: int) -> None:
    m = numeric(seed, n)
    t3 = _tile(m, "t3")

    def step(op: str) -> dict[str, Any]:
        return {
            "name": "probe",
            "opcode": "TensorScalar",
            "op0": op,
            "const0": 1.0,
            "ins": [t3],
            "outs": [t3],
        }

    ref, mutant = _after_evacuation(m, [step("add")]), _after_evacuation(m, [step("subtract")])
    cores = lncsplit.split([ref.clone()], n)
    exact(ref, cores)
    e = sim.equivalent(mutant, cores)
    assert not e
    # it reached the output: t3 + 1 against t3 - 1 on every element of ymm
    for d in _ymm_difference(e, n):
        assert np.allclose(d, 2.0, rtol=0, atol=1e-5), d


@pytest.mark.parametrize("n", [2, 4])
@props
@given(seed=seeds)
def test_operands_swapped_in_a_subtract_are_told_apart(seed: int, n: int) -> None:
    m = numeric(seed, n)
    t2, t3 = _tile(m, "t2"), _tile(m, "t3")
    shift = {
        "name": "shift",
        "opcode": "TensorScalar",
        "op0": "add",
        "const0": 100.0,
        "ins": [t3],
        "outs": [t2],
    }

    def subtract(ins: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "name": "probe",
            "opcode": "TensorTensor",
            "op": "subtract",
            "ins": ins,
            "outs": [t3],
        }

    ref = _after_evacuation(m, [shift, subtract([t3, t2])])  # t3 - (t3 + 100) ≈ -100
    mutant = _after_evacuation(m, [shift, subtract([t2, t3])])  # (t3 + 100) - t3 ≈ +100
    cores = lncsplit.split([ref.clone()], n)
    exact(ref, cores)
    e = sim.equivalent(mutant, cores)
    assert not e
    for d in _ymm_difference(e, n):
        assert np.allclose(d, -200.0, rtol=0, atol=1e-3), d


@pytest.mark.parametrize("n", [2, 4])
@props
@given(seed=seeds)
def test_a_func_changed_is_told_apart(seed: int, n: int) -> None:
    # the evacuation itself: identity or tanh becomes exp, and exp(x) differs
    # from x and from tanh(x) for every real x
    m = numeric(seed, n)
    d = json.loads(m.to_json())
    evac = next(
        x
        for x in d["functions"][0]["basic_blocks"][0]["instructions"]
        if x["name"].startswith("evac")
    )
    assert evac["func"] in ("identity", "tanh")
    evac["func"] = "exp"
    mutant = lncsplit.Module.from_json(json.dumps(d))
    e = sim.equivalent(mutant, lncsplit.split([m.clone()], n))
    assert not e
    for diff in _ymm_difference(e, n):
        assert (diff != 0).all(), diff
