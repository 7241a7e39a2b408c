"""``lncsplit link``, ``unlink``, ``split --link`` and ``info`` of a linked module
(contract §5, §3.7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lncsplit
import pytest
from cli_helpers import run_cli, tree_bytes
from lncsplit.examples import example_paths


@pytest.fixture
def outputs(tmp_path: Path) -> Path:
    """Two split outputs of the examples: out/01_…/nc00.json, nc01.json and out/03_…/…"""
    src = tmp_path / "src"
    src.mkdir()
    for p in example_paths():
        if p.name.startswith(("01_", "03_")):
            shutil.copy(p, src / p.name)
    r = run_cli("split", src, "--lnc", "2", "--out", tmp_path / "out", "-q")
    assert r.returncode == 0, r.stderr
    return tmp_path / "out"


def split_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.is_dir())


def test_link_one_split_output_writes_file_and_tensor_map_beside(
    outputs: Path, tmp_path: Path
) -> None:
    d = split_dirs(outputs)[0]
    dest = tmp_path / "linked" / "prog.json"
    # FILE's directory must exist, as for --report (contract §6): checked before any work.
    r = run_cli("link", d, "--out", dest)
    assert r.returncode == 2 and "does not exist" in r.stderr and not dest.parent.exists()
    dest.parent.mkdir()
    r = run_cli("link", d, "--out", dest)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in dest.parent.iterdir()) == ["prog.json", "prog.tensor-map.json"]
    linked = lncsplit.load(dest)
    cores = [lncsplit.load(d / f"nc{c:02d}.json") for c in range(2)]
    assert linked.to_bytes() == lncsplit.link(cores).to_bytes()
    tmap = json.loads((dest.parent / "prog.tensor-map.json").read_text())
    assert tmap == lncsplit.tensor_map(linked)


def test_two_links_into_one_directory_keep_both_tensor_maps(outputs: Path, tmp_path: Path) -> None:
    # The map of FILE is <stem>.tensor-map.json beside it: a second link into the same
    # directory does not overwrite the first one's map.
    first, second = split_dirs(outputs)
    assert run_cli("link", first, "--out", tmp_path / "a.json").returncode == 0
    assert run_cli("link", second, "--out", tmp_path / "b.json").returncode == 0
    names = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    assert names == ["a.json", "a.tensor-map.json", "b.json", "b.tensor-map.json"]
    for stem in ("a", "b"):
        tmap = json.loads((tmp_path / f"{stem}.tensor-map.json").read_text())
        assert tmap == lncsplit.tensor_map(lncsplit.load(tmp_path / f"{stem}.json"))


def test_unlink_gives_the_split_output_back_byte_for_byte(outputs: Path, tmp_path: Path) -> None:
    d = split_dirs(outputs)[1]
    assert run_cli("link", d, "--out", tmp_path / "l.json").returncode == 0
    r = run_cli("unlink", tmp_path / "l.json", "--out", tmp_path / "back")
    assert r.returncode == 0, r.stderr
    assert tree_bytes(tmp_path / "back") == tree_bytes(d)


def test_link_several_split_outputs_writes_name_linked_json(outputs: Path, tmp_path: Path) -> None:
    dirs = split_dirs(outputs)
    r = run_cli("link", *dirs, "--out", tmp_path / "many", "--report", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    assert sorted(tree_bytes(tmp_path / "many")) == sorted(
        f"{d.name}/{f}" for d in dirs for f in ("linked.json", "linked.tensor-map.json")
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert [f["input"] for f in report["files"]] == [str(d) for d in dirs]
    assert all(f["status"] == "ok" and len(f["outputs"]) == 2 for f in report["files"])


def test_link_of_a_tree_links_every_split_output_in_it(outputs: Path, tmp_path: Path) -> None:
    r = run_cli("link", outputs, "--out", tmp_path / "all", "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == [
        d.name for d in split_dirs(outputs)
    ]


def test_split_link_writes_linked_json_beside_the_cores(tmp_path: Path) -> None:
    src = next(p for p in example_paths() if p.name.startswith("07_"))
    r = run_cli("split", src, "--lnc", "2", "--out", tmp_path / "out", "--link", "-q")
    assert r.returncode == 0, r.stderr
    d = tmp_path / "out" / src.stem
    assert sorted(p.name for p in d.iterdir()) == ["linked.json", "nc00.json", "nc01.json"]
    cores = [lncsplit.load(d / f"nc{c:02d}.json") for c in range(2)]
    assert (d / "linked.json").read_bytes() == lncsplit.link(cores).to_bytes()
    # The linked module belongs to the split output: verify still sees one unit.
    v = run_cli("verify", tmp_path / "out")
    assert v.returncode == 0, v.stdout + v.stderr
    assert "1 inputs" in v.stdout or "1 input" in v.stdout
    # A rerun without --link leaves no stale linked module behind.
    assert run_cli("split", src, "--lnc", "2", "--out", tmp_path / "out", "-q").returncode == 0
    assert sorted(p.name for p in d.iterdir()) == ["nc00.json", "nc01.json"]


def copy_set(src: Path, dst: Path, names: dict[str, str]) -> Path:
    dst.mkdir(parents=True)
    for old, new in names.items():
        shutil.copy(src / old, dst / new)
    return dst


def test_a_core_set_with_a_gap_fails_naming_the_files(outputs: Path, tmp_path: Path) -> None:
    d = copy_set(split_dirs(outputs)[0], tmp_path / "gap", {"nc00.json": "nc00.json"})
    shutil.copy(split_dirs(outputs)[0] / "nc01.json", d / "nc02.json")
    r = run_cli("link", d, "--out", tmp_path / "x.json")
    assert r.returncode == 1
    assert "nc01.json" in r.stdout and "nc02.json" in r.stdout
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.tensor-map.json").exists()


def test_duplicate_cores_fail_naming_the_files(outputs: Path, tmp_path: Path) -> None:
    src = split_dirs(outputs)[0]
    d = copy_set(src, tmp_path / "dup", {"nc00.json": "nc00.json"})
    shutil.copy(src / "nc00.json", d / "nc01.json")
    r = run_cli("link", d, "--out", tmp_path / "x.json")
    assert r.returncode == 1
    assert "core 0 is given 2 times: nc00.json, nc01.json" in r.stdout
    assert not (tmp_path / "x.json").exists()


def test_cores_of_different_kernels_fail_naming_the_files(outputs: Path, tmp_path: Path) -> None:
    a, b = split_dirs(outputs)
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(a / "nc00.json", d / "nc00.json")
    shutil.copy(b / "nc01.json", d / "nc01.json")
    r = run_cli("link", d, "--out", tmp_path / "x.json")
    assert r.returncode == 1
    assert "different kernels" in r.stdout
    assert "cores[0] = nc00.json" in r.stdout and "cores[1] = nc01.json" in r.stdout
    assert not (tmp_path / "x.json").exists()


def test_link_takes_directories_only(outputs: Path, tmp_path: Path) -> None:
    f = split_dirs(outputs)[0] / "nc00.json"
    r = run_cli("link", f, "--out", tmp_path / "x.json")
    assert r.returncode == 2
    assert "not files" in r.stderr


def test_link_of_a_directory_without_split_output_exits_1(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = run_cli("link", tmp_path / "empty", "--out", tmp_path / "x.json")
    assert r.returncode == 1
    assert "no modules found" in r.stderr


def test_unlink_of_a_module_link_did_not_make_is_9501(outputs: Path, tmp_path: Path) -> None:
    r = run_cli("unlink", split_dirs(outputs)[0] / "nc00.json", "--out", tmp_path / "back")
    assert r.returncode == 1
    assert "9501" in r.stderr
    assert not (tmp_path / "back").exists()


def test_info_describes_a_linked_module(outputs: Path, tmp_path: Path) -> None:
    d = split_dirs(outputs)[1]
    assert run_cli("link", d, "--out", tmp_path / "l.json").returncode == 0
    r = run_cli("info", tmp_path / "l.json")
    assert r.returncode == 0, r.stderr
    assert "linked        2 cores" in r.stdout
    assert "call_def_1_instance_0 -> nc01.main (core 1)" in r.stdout
    j = json.loads(run_cli("info", tmp_path / "l.json", "--json").stdout)["linked"]
    assert j["lnc"] == 2
    assert [c["core"] for c in j["cores"]] == [0, 1]
    ids = [i for c in j["cores"] for i in c["barriers"]]
    assert ids == list(range(j["barriers"]))
    plain = json.loads(run_cli("info", d / "nc00.json", "--json").stdout)
    assert "linked" not in plain
