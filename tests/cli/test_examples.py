"""The example corpus shipped in the package."""

from __future__ import annotations

import json
from importlib import resources

import lncsplit
import pytest
from lncsplit.examples import compiler_example_paths, example_paths
from lncsplit.pipeline import PassOptions, run_pipeline

MECHANISMS = {
    "01_shard_predicated": "predicates",
    "02_loop_region": "Loop",
    "03_core_barrier": "CoreBarrier",
    "04_sb2sb": "GPSIMDSB2SB",
    "05_collective": "recv_from_rank",
    "06_replication": "replication_resolution",
    "07_shared_dram": '"Shared"',
    "08_shared_handoff": '"CoreBarrier"',
}


def test_examples_ship_inside_the_package() -> None:
    files = sorted(
        f.name for f in resources.files("lncsplit.examples").iterdir() if f.name.endswith(".json")
    )
    assert files == sorted(f"{k}.json" for k in MECHANISMS)
    assert 6 <= len(example_paths()) <= 8


@pytest.mark.parametrize(
    "path",
    example_paths() + compiler_example_paths(),
    ids=lambda p: f"{p.parent.name}/{p.stem}",  # type: ignore[attr-defined]
)
def test_example_passes_the_whole_pipeline_at_lnc_2(path: object) -> None:
    m = lncsplit.load(str(path))
    assert m.neuron_core_id is None and "nc_symbolic" in m.name
    cores = run_pipeline([m], PassOptions(lnc_size=2))
    assert [c.neuron_core_id for c in cores] == [0, 1]
    assert lncsplit.check_memory(cores).ok


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.stem)
def test_example_shows_its_mechanism_and_explains_it(path: object) -> None:
    text = open(str(path)).read()
    doc = json.loads(text)
    assert MECHANISMS[path.stem] in text  # type: ignore[attr-defined]
    assert doc["comment"]
    instrs = doc["functions"][0]["basic_blocks"][0]["instructions"]
    assert all(i.get("comment") for i in instrs)


def test_the_compiler_examples_are_the_examples_in_the_compiler_spelling() -> None:
    names = [p.name for p in compiler_example_paths()]
    assert names == [p.name for p in example_paths()]
    for ours, theirs in zip(example_paths(), compiler_example_paths(), strict=True):
        c = lncsplit.load(str(theirs))
        assert c.spelling == "compiler" and '"blocks"' in theirs.read_text()
        assert c.to_bytes(spelling="lncsplit") == lncsplit.load(str(ours)).to_bytes()


def test_comments_survive_the_split() -> None:
    path = example_paths()[0]
    cores = run_pipeline([lncsplit.load(str(path))], PassOptions(lnc_size=2))
    doc = json.loads(cores[0].to_json())
    assert doc["comment"] == json.loads(path.read_text())["comment"]
    assert all("comment" in i for i in doc["functions"][0]["basic_blocks"][0]["instructions"])


def test_predicated_example_prunes_per_core() -> None:
    path = next(p for p in example_paths() if p.stem == "01_shard_predicated")
    cores = run_pipeline([lncsplit.load(str(path))], PassOptions(lnc_size=2))
    names = [
        {
            i["name"]
            for i in json.loads(c.to_json())["functions"][0]["basic_blocks"][0]["instructions"]
        }
        for c in cores
    ]
    assert "bias_zero_core0" in names[0] and "bias_zero_core0" not in names[1]
    assert "bias_one_core1" in names[1] and "bias_one_core1" not in names[0]


def test_loop_example_deletes_the_loop_whose_children_are_all_pruned() -> None:
    path = next(p for p in example_paths() if p.stem == "02_loop_region")
    cores = run_pipeline([lncsplit.load(str(path))], PassOptions(lnc_size=2))
    texts = [c.to_json() for c in cores]
    assert "fixup_core1" not in texts[0] and "fixup_core1" in texts[1]
    assert "late_tiles_core0" in texts[0] and "late_tiles_core0" not in texts[1]
