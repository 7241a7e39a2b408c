"""Properties of lnc_barriercheck on generated modules (contract §3.6, issue 11):
the pipeline's output passes racecheck; exact races are interval races; a
barrier removed from a race-free output brings back exactly the races it alone
prevented (checked against a brute-force reference); ``--racy`` corpora are
caught."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import pytest
import race_reference
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import NeuronAssertion, PassOptions, run_pipeline
from lncsplit._core import generate_module

SEEDS = st.integers(min_value=0, max_value=2**32)
Json = dict[str, Any]


def race_keys(report: lncsplit.RaceReport) -> set[tuple[Any, ...]]:
    return {
        (r.a.core, r.a.instruction, r.b.core, r.b.instruction, r.location.core, r.location.name)
        for r in report.races
    }


def pipeline(
    seed: int, n: int, lnc: int, racy: bool = False, small_aps: bool = False, **kw: Any
) -> list[lncsplit.Module]:
    """A generated module through the pipeline. ``small_aps`` caps its access patterns
    (8 partitions × 16 columns) for the brute-force reference, which holds every footprint
    as an explicit set of bytes: at the default size (128 partitions × hundreds of
    columns, per loop instance) its memory has no useful bound."""
    caps: dict[str, int] = {"ap_partitions": 8, "ap_columns": 16} if small_aps else {}
    m = generate_module(seed, n, lnc, racy=racy, **caps)
    return run_pipeline([m], PassOptions(lnc_size=lnc, **kw))


def _strip_barrier(blocks: list[Json], k: int, seen: list[int], removed: set[str]) -> None:
    """Remove the k-th CoreBarrier (counting from ``seen[0]``), renumbering the rest."""
    for b in blocks:
        kept = []
        for i in b["instructions"]:
            if i["opcode"] == "CoreBarrier":
                index = seen[0]
                seen[0] += 1
                if index == k:
                    removed.add(i["name"])
                    continue
                i["id"] = index - (index > k)
            _strip_barrier(i.get("blocks", []), k, seen, removed)
            kept.append(i)
        b["instructions"] = kept


def _drop_dependencies(blocks: list[Json], removed: set[str]) -> None:
    for b in blocks:
        for i in b["instructions"]:
            if "dependencies" in i:
                i["dependencies"] = [d for d in i["dependencies"] if d[0] not in removed]
            _drop_dependencies(i.get("blocks", []), removed)


def without_barrier(cores: list[lncsplit.Module], k: int) -> list[lncsplit.Module]:
    """Every core without its k-th CoreBarrier (module order): ids renumbered,
    dependencies on it dropped."""
    out = []
    for c in cores:
        doc = json.loads(c.to_json())
        seen = [0]
        removed: set[str] = set()
        for f in doc["functions"]:
            _strip_barrier(f["basic_blocks"], k, seen, removed)
        for f in doc["functions"]:
            _drop_dependencies(f["basic_blocks"], removed)
        out.append(lncsplit.Module.from_json(json.dumps(doc)))
    return out


def barrier_count(m: lncsplit.Module) -> int:
    return sum(len(f.instructions(["CoreBarrier"])) for f in m.functions)


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, lnc=st.sampled_from([1, 2, 4, 8]))
def test_the_pipeline_output_passes_racecheck(seed: int, lnc: int) -> None:
    cores = pipeline(seed, 800, lnc)  # order 92 raises 9301 on a race
    assert lncsplit.racecheck(cores).ok
    assert lncsplit.racecheck(cores, "interval").ok


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, lnc=st.sampled_from([2, 3, 4]), racy=st.booleans(), drop=st.integers(0, 50))
def test_exact_races_are_interval_races(seed: int, lnc: int, racy: bool, drop: int) -> None:
    cores = pipeline(seed, 600, lnc, racy=racy, racecheck=False)
    if barrier_count(cores[0]):
        cores = without_barrier(cores, drop % barrier_count(cores[0]))
    exact = lncsplit.racecheck(cores)
    interval = lncsplit.racecheck(cores, "interval")
    assert race_keys(exact) <= race_keys(interval)


def agree_with_reference(cores: list[lncsplit.Module]) -> lncsplit.RaceReport:
    """The Rust checker's exact races of ``main`` equal the brute-force reference's."""
    report = lncsplit.racecheck(cores)
    got = {
        race_reference.RefRace(
            (r.a.core, r.a.instruction, r.a.position),
            (r.b.core, r.b.instruction, r.b.position),
            (r.location.core, r.location.name),
            (r.witness.partition, r.witness.byte),
            r.kind,
            r.a.band,
        )
        for r in report.races
        if r.a.function == "main"
    }
    assert got == race_reference.races(cores)
    assert all(r.a.band == r.b.band for r in report.races)
    return report


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(seed=SEEDS, lnc=st.sampled_from([2, 3]), k=st.integers(0, 1000))
def test_a_removed_barrier_brings_back_the_races_it_alone_prevented(
    seed: int, lnc: int, k: int
) -> None:
    cores = pipeline(seed, 120, lnc, small_aps=True)
    assert lncsplit.racecheck(cores).ok
    n = barrier_count(cores[0])
    if n == 0:
        return
    # The reference names every pair the barrier alone ordered: exactly the races now.
    agree_with_reference(without_barrier(cores, k % n))


@pytest.mark.slow
@settings(max_examples=5, deadline=None)
@given(seed=SEEDS, lnc=st.sampled_from([2, 4]))
def test_racy_modules_agree_with_the_reference(seed: int, lnc: int) -> None:
    cores = pipeline(seed, 100, lnc, racy=True, small_aps=True, racecheck=False)
    assert not agree_with_reference(cores).ok


@settings(max_examples=10, deadline=None)
@given(seed=SEEDS, lnc=st.sampled_from([2, 3, 4, 8]))
def test_racy_corpora_are_caught(seed: int, lnc: int) -> None:
    with pytest.raises(NeuronAssertion) as e:
        pipeline(seed, 400, lnc, racy=True)
    assert e.value.code == 9301 and "racy_" in e.value.message
    cores = pipeline(seed, 400, lnc, racy=True, racecheck=False)
    report = lncsplit.racecheck(cores)
    assert report.races
    assert all("racy_" in r.a.instruction or "racy_" in r.b.instruction for r in report.races)


def test_racy_modules_with_one_core_have_nothing_to_race() -> None:
    cores = pipeline(5, 400, 1, racy=True)
    assert lncsplit.racecheck(cores).ok
