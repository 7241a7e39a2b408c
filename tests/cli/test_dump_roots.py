"""Compiler dump roots on the command line and from Python (contract §1.7).

``<workdir>/nc00/sg00/bir_debug.*.json``, ``nc01/…``: every command that takes split outputs
takes them; ``--pass NAME`` picks a core's file; a gap is 9006 naming the missing core; split
writes the layout with ``--layout compiler`` and refuses a dump root as input.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lncsplit
import pytest
from cli_helpers import run_cli
from lncsplit import NeuronAssertion
from lncsplit.corpus.discovery import discover_units
from lncsplit.corpus.dump_root import DumpRootError
from lncsplit.examples import compiler_example_paths, example_paths, scheduled_dump_root

DUMP = "bir_debug.sg0000.after-lower_sync.before-lower_act.json"


def _split_root(tmp_path: Path, example: Path | None = None) -> Path:
    """An example split into the compiler's layout: OUT/<stem>/nc<cc>/sg00/<stem>.json."""
    ex = example or compiler_example_paths()[0]
    out = tmp_path / "out"
    r = run_cli("split", ex, "--out", out, "--layout", "compiler")
    assert r.returncode == 0, r.stdout + r.stderr
    root = out / ex.stem
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json")) == [
        f"nc00/sg00/{ex.stem}.json",
        f"nc01/sg00/{ex.stem}.json",
    ]
    return root


def test_split_layout_compiler_writes_a_dump_root_in_the_spelling_read(tmp_path: Path) -> None:
    root = _split_root(tmp_path)
    cores = lncsplit.load_cores(root)
    assert [c.neuron_core_id for c in cores] == [0, 1]
    assert [c.spelling for c in cores] == ["compiler", "compiler"]


def test_split_spelling_converts_the_written_cores(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_cli("split", example_paths()[0], "--out", out, "--spelling", "compiler")
    assert r.returncode == 0, r.stderr
    core = lncsplit.load(out / example_paths()[0].stem / "nc00.json")
    assert core.spelling == "compiler"


@pytest.mark.parametrize(
    "command",
    [
        ["verify"],
        ["racecheck"],
        ["memory"],
        ["diff"],
        ["sim"],
    ],
    ids=lambda c: c[0],
)
def test_every_command_that_takes_split_outputs_takes_a_dump_root(
    tmp_path: Path, command: list[str]
) -> None:
    root = _split_root(tmp_path)
    r = run_cli(*command, root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout


def test_report_takes_a_dump_root(tmp_path: Path) -> None:
    root = _split_root(tmp_path)
    html = tmp_path / "r.html"
    r = run_cli("report", root, "--html", html)
    assert r.returncode == 0, r.stdout + r.stderr
    assert html.stat().st_size > 0


def test_link_and_unlink_layout_compiler_round_trip_a_dump_root(tmp_path: Path) -> None:
    root = _split_root(tmp_path)
    linked = tmp_path / "linked.json"
    r = run_cli("link", root, "--out", linked)
    assert r.returncode == 0, r.stdout + r.stderr
    assert lncsplit.load(linked).spelling == "compiler"
    back = tmp_path / "back"
    r = run_cli("unlink", linked, "--out", back, "--layout", "compiler")
    assert r.returncode == 0, r.stdout + r.stderr
    for c in (0, 1):
        mine = back / f"nc{c:02d}" / "sg00" / "linked.json"
        theirs = next((root / f"nc{c:02d}" / "sg00").glob("*.json"))
        assert mine.read_bytes() == theirs.read_bytes()


def test_info_describes_each_core_of_a_dump_root() -> None:
    r = run_cli("info", scheduled_dump_root(), "--json")
    assert r.returncode == 0, r.stderr
    docs = json.loads(r.stdout)
    assert [d["neuron_core_id"] for d in docs] == [0, 1]
    assert {d["spelling"] for d in docs} == {"compiler"}
    assert all(d["offsets"] == "elements" for d in docs)


def test_the_scheduled_dump_root_verifies_and_is_race_free() -> None:
    for command in ("verify", "racecheck"):
        r = run_cli(command, scheduled_dump_root())
        assert r.returncode == 0, r.stdout + r.stderr


def test_a_core_without_neuron_core_id_takes_its_directory_index_in_memory_only(
    tmp_path: Path,
) -> None:
    cores = lncsplit.load_cores(scheduled_dump_root())
    assert [c.neuron_core_id for c in cores] == [0, 1]
    assert "neuron_core_id" not in json.loads(cores[1].to_json())["attributes"]


def _copy_root(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    shutil.copytree(scheduled_dump_root(), root)
    return root


def test_a_gap_in_the_cores_is_9006_naming_the_missing_core(tmp_path: Path) -> None:
    root = _copy_root(tmp_path)
    (root / "nc01").rename(root / "nc02")
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.load_cores(root)
    assert e.value.code == 9006 and "nc01" in str(e.value)
    r = run_cli("racecheck", root)
    assert r.returncode == 1
    assert "9006" in r.stdout + r.stderr and "nc01" in r.stdout + r.stderr


def test_core_directories_without_any_sg_directory_are_no_dump_root(tmp_path: Path) -> None:
    """Contract §1.7: a dump root's nc<cc>/ hold sg<k>/ directories; empty nc00/ nc01/
    (the artifact directories split creates) are skipped like any empty directory."""
    for c in ("nc00", "nc01"):
        (tmp_path / "out" / "k" / c).mkdir(parents=True)
    assert discover_units([tmp_path], core_sets=True) == []
    root = _copy_root(tmp_path)
    shutil.rmtree(root / "nc01" / "sg00")
    with pytest.raises(NeuronAssertion) as e:  # one core with sg<k>/: still a dump root
        lncsplit.load_cores(root)
    assert e.value.code == 9006


def test_several_files_and_no_pass_is_an_error_naming_pass(tmp_path: Path) -> None:
    root = _copy_root(tmp_path)
    for c in ("nc00", "nc01"):
        shutil.copy(root / c / "sg00" / DUMP, root / c / "sg00" / "bir_debug.after-lower_act.json")
    with pytest.raises(DumpRootError, match="--pass") as e:
        lncsplit.load_cores(root)
    assert DUMP in str(e.value) and "after-lower_act" in str(e.value)
    cores = lncsplit.load_cores(root, pass_="lower_sync")
    assert len(cores) == 2
    with pytest.raises(DumpRootError, match="candidates"):
        lncsplit.load_cores(root, pass_="no_such_pass")
    r = run_cli("verify", root)
    assert r.returncode == 1 and "--pass" in r.stdout
    r = run_cli("verify", root, "--pass", "lower_sync")
    assert r.returncode == 0, r.stdout + r.stderr


def test_files_under_a_dump_root_are_not_units_of_their_own_and_split_refuses_the_root(
    tmp_path: Path,
) -> None:
    root = _copy_root(tmp_path)
    units = discover_units([tmp_path], core_sets=True)
    assert [(u.kind, u.rel, len(u.files)) for u in units] == [("core_set", "work", 2)]
    units = discover_units([tmp_path])
    assert len(units) == 1 and units[0].error is not None
    assert "per-core dumps: use verify" in units[0].error["message"]
    r = run_cli("split", root, "--out", tmp_path / "out")
    assert r.returncode == 1
    assert "per-core dumps" in r.stderr


def test_several_kernels_are_one_unit_each(tmp_path: Path) -> None:
    root = _copy_root(tmp_path)
    for c in ("nc00", "nc01"):
        shutil.copytree(root / c / "sg00", root / c / "sg01")
    units = discover_units([root], core_sets=True)
    assert [u.rel for u in units] == ["work/sg00", "work/sg01"]
    assert len(lncsplit.load_cores(root, subgraph=1)) == 2
