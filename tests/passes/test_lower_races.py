"""lnc_barriercheck on the lowering's output (contract §3.6): no race in which
either access belongs to an instruction lower_local_collectives or
extend_shared_lifetimes created — on hand-built kernels of every lowered kind
and on generated modules. These switch on by themselves when
``lncsplit.racecheck`` is in the build; until then the Rust tests' exact race
check (``rust/src/passes/tail_testkit.rs``) stands in for it.
"""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import _core
from tail_kernels import collective_kernel, looped_kernel, split

HAS_RACECHECK = hasattr(lncsplit, "racecheck")
pytestmark = pytest.mark.skipif(
    not HAS_RACECHECK, reason="lncsplit.racecheck not in this build yet"
)


def races(cores: list[lncsplit.Module]) -> list[dict[str, Any]]:
    report = lncsplit.racecheck(cores)  # type: ignore[attr-defined]
    doc = report.to_json()
    doc = json.loads(doc) if isinstance(doc, str) else doc
    return list(doc["races"])


def names(cores: list[lncsplit.Module]) -> list[set[str]]:
    return [{i.name for f in m.functions for i in f.instructions()} for m in cores]


def races_on_created(before: list[set[str]], cores: list[lncsplit.Module]) -> list[dict[str, Any]]:
    """Races where either instruction did not exist before the tail ran."""
    out = []
    for r in races(cores):
        a, b = r["a"], r["b"]
        if a["instruction"] not in before[a["core"]] or b["instruction"] not in before[b["core"]]:
            out.append(r)
    return out


def lower_and_extend(cores: list[lncsplit.Module]) -> list[lncsplit.Module]:
    lncsplit.lower_local_collectives(cores)
    return lncsplit.extend_shared_lifetimes(cores)


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("mtype", ["DRAM", "SB"])
@pytest.mark.parametrize("kind", ["SendRecv", "SendRecvCCE", "AllReduce"])
@pytest.mark.parametrize("in_place", [False, True])
def test_no_race_involves_a_created_instruction(
    kind: str, mtype: str, n: int, in_place: bool
) -> None:
    cores = split(collective_kernel(kind, n, mtype, in_place=in_place), n)
    before = names(cores)
    assert races_on_created(before, lower_and_extend(cores)) == []


def test_no_race_involves_a_created_instruction_in_a_loop() -> None:
    cores = split(looped_kernel(2), 2)
    before = names(cores)
    assert races_on_created(before, lower_and_extend(cores)) == []


def test_without_its_after_barrier_a_lowering_races() -> None:
    cores = lower_and_extend(split(collective_kernel("SendRecv", 2), 2))
    broken = []
    for m in cores:
        d = json.loads(m.to_json())
        block = d["functions"][0]["basic_blocks"][0]
        block["instructions"] = [i for i in block["instructions"] if i["name"] != "x_after"]
        broken.append(lncsplit.Module.from_json(json.dumps(d)))
    lncsplit.extend_shared_lifetimes(broken)  # no shared set: it only renumbers the barriers
    pairs = {(r["a"]["instruction"], r["b"]["instruction"]) for r in races(broken)}
    assert ("x", "consume") in pairs or ("consume", "x") in pairs


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=20, max_value=600),
    st.sampled_from([2, 4, 8]),
)
def test_generated_modules_have_no_race_on_created_instructions(
    seed: int, n: int, lnc: int
) -> None:
    m = _core.generate_module(seed, n, lnc)
    lncsplit.expand_replication(m)
    cores = lncsplit.split([m], lnc)
    before = names(cores)
    assert races_on_created(before, lower_and_extend(cores)) == []
