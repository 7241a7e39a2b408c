"""Split invariants on generated modules (issue 4), checked with hypothesis.

The pure-Python peer splitter (`tests/python_peer.py`, dicts + deepcopy + a dict
walk with its own expression evaluator) is the differential oracle for which
instructions survive on which core.
"""

from __future__ import annotations

import json

import lncsplit
import python_peer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import _core

seeds = st.integers(min_value=0, max_value=2**32 - 1)
cores = st.sampled_from([2, 4, 8])
sizes = st.integers(min_value=5, max_value=400)
fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def gen(seed: int, n: int, lnc: int) -> lncsplit.Module:
    return _core.generate_module(seed, n, lnc)


def names_per_function(m: lncsplit.Module) -> list[list[str]]:
    return [[i.name for i in f.instructions()] for f in m.functions]


@fast
@given(seeds, sizes, cores)
def test_every_core_passes_the_concretized_verifier(seed: int, n: int, lnc: int) -> None:
    m = gen(seed, n, lnc)
    lncsplit.expand_replication(m)
    lncsplit.verify_concretized(lncsplit.split([m], lnc), lnc)


@fast
@given(seeds, sizes, cores)
def test_no_shard_id_remains_after_the_split(seed: int, n: int, lnc: int) -> None:
    for c in lncsplit.split([gen(seed, n, lnc)], lnc):
        assert not _core.has_shard_ids(c)
        assert "ShardIDKind" not in c.to_json()
        assert all(f.shard_ids == [] for f in c.functions)
        assert c.neuron_core_id is not None


@fast
@given(seeds, sizes, cores)
def test_survivors_and_pruned_agree_with_the_reference_splitter(
    seed: int, n: int, lnc: int
) -> None:
    m = gen(seed, n, lnc)
    text = m.to_bytes()
    ours = lncsplit.split([m], lnc)
    ref = python_peer.split_text(text, lnc)
    for core in range(lnc):
        assert names_per_function(ours[core]) == python_peer.instruction_names(ref[core]), core


@fast
@given(seeds, sizes, cores)
def test_instruction_active_on_all_cores_survives_on_all(seed: int, n: int, lnc: int) -> None:
    m = gen(seed, n, lnc)
    unpredicated = {
        i.name
        for f in m.functions
        for i in f.instructions()
        if not i.predicates and i.opcode != "Loop"
    }
    for c in lncsplit.split([m], lnc):
        have = {i.name for f in c.functions for i in f.instructions()}
        assert unpredicated <= have


@fast
@given(seeds, sizes, cores)
def test_split_is_deterministic_and_independent_of_threads(seed: int, n: int, lnc: int) -> None:
    a = [x.to_bytes() for x in lncsplit.split([gen(seed, n, lnc)], lnc, parallel=True)]
    b = [x.to_bytes() for x in lncsplit.split([gen(seed, n, lnc)], lnc, parallel=False)]
    c = [x.to_bytes() for x in lncsplit.split([gen(seed, n, lnc)], lnc, clone="json")]
    assert a == b == c


@fast
@given(seeds, sizes)
def test_expand_then_split_gives_spmd_identical_cores(seed: int, n: int) -> None:
    m = gen(seed, n, 2)
    lncsplit.expand_replication(m)
    c0, c1 = lncsplit.split([m], 2)
    lncsplit.verify_concretized([c0, c1], 2)
    for f0, f1 in zip(c0.functions, c1.functions, strict=True):
        assert [s.tensor_shape for s in f0.allocations] == [s.tensor_shape for s in f1.allocations]


@fast
@given(seeds, sizes, cores)
def test_full_pipeline_accepts_generated_modules(seed: int, n: int, lnc: int) -> None:
    out = lncsplit.run_pipeline([gen(seed, n, lnc)], lncsplit.PassOptions(lnc_size=lnc))
    assert len(out) == lnc
    assert json.loads(out[0].to_json())["attributes"]["neuron_core_id"] == 0


@fast
@given(seeds, st.sampled_from(["inferentia", "sunda", "gen3", "core_v4"]))
def test_generated_modules_of_every_arch_pass_the_pipeline(seed: int, arch: str) -> None:
    m = _core.generate_module(seed, 300, 2, arch)
    out = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=2))
    assert [c.arch for c in out] == [arch, arch]
