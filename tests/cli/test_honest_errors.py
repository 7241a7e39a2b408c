"""What a new user hit (issue 39, items 4 and 6): inputs of the wrong kind refused plainly on
the command line, and the smaller rules every command keeps — a failed run counts nothing and
creates nothing, ``gen`` never mixes corpora, one wording for a missing file, one exit code for
an output path that cannot be used, one JSON list per command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run_cli
from lncsplit.examples import example_paths, hlo_example_path


def _example(prefix: str) -> Path:
    return next(p for p in example_paths() if p.name.startswith(prefix))


# ----------------------------------------------------------------------------- wrong kinds


def test_split_of_a_linked_module_says_unlink_it_first(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("split", _example("03_"), "--out", out, "--link").returncode == 0
    linked = out / _example("03_").stem / "linked.json"
    r = run_cli("split", linked, "--out", tmp_path / "again")
    assert r.returncode == 1
    assert "9008" in r.stderr and "a linked module (made by link): unlink it first" in r.stderr
    assert "9002" not in r.stderr


def test_verify_of_cores_of_two_kernels_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("split", _example("01_"), _example("03_"), "--out", out).returncode == 0
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(out / _example("03_").stem / "nc00.json", mixed / "nc00.json")
    shutil.copy(out / _example("01_").stem / "nc01.json", mixed / "nc01.json")
    r = run_cli("verify", mixed)
    assert r.returncode == 1
    assert "cores of different kernels" in r.stdout, r.stdout
    assert "1187" not in r.stdout


# ----------------------------------------------------------------------------- a failed split


def test_an_all_failed_split_counts_nothing_and_creates_no_out(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 2, "name": "m", "functions": [' + " " * 100_000)  # cut mid-write
    out, report = tmp_path / "out", tmp_path / "report.json"
    r = run_cli("split", bad, "--out", out, "--report", report)
    assert r.returncode == 1
    summary = json.loads(report.read_text())["summary"]
    assert summary["errors"] == 1 and summary["bytes_in"] == 0 and summary["bytes_out"] == 0
    assert summary["throughput_mb_s"] in (0, None)
    assert "0.00 MB in" in r.stdout
    assert not out.exists()


def test_a_split_with_one_success_creates_out(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    assert run_cli("split", _example("01_"), "--out", out).returncode == 0
    assert (out / _example("01_").stem / "nc00.json").is_file()


def test_split_still_refuses_an_out_it_cannot_use_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "afile").write_text("x")
    r = run_cli("split", _example("01_"), "--out", tmp_path / "ro" / "afile" / "out")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


# ----------------------------------------------------------------------------- gen


def test_gen_into_a_non_empty_directory_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    assert run_cli("gen", d, "--modules", "2", "--instructions", "20").returncode == 0
    before = sorted(p.name for p in d.iterdir())
    r = run_cli("gen", d, "--modules", "3", "--instructions", "20", "--seed", "1")
    assert r.returncode == 2
    assert "not empty" in r.stderr and "--force" in r.stderr
    assert sorted(p.name for p in d.iterdir()) == before


def test_gen_force_writes_into_a_non_empty_directory(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "README").write_text("mine\n")
    r = run_cli("gen", d, "--modules", "2", "--instructions", "20", "--force")
    assert r.returncode == 0, r.stderr
    assert (d / "README").read_text() == "mine\n"
    assert len(list(d.glob("*.json"))) == 2


def test_gen_into_an_empty_directory_needs_no_force(tmp_path: Path) -> None:
    d = tmp_path / "empty"
    d.mkdir()
    assert run_cli("gen", d, "--modules", "1", "--instructions", "20").returncode == 0


# ----------------------------------------------------------------------------- output paths


def test_an_output_path_that_cannot_be_used_is_a_usage_error_everywhere(tmp_path: Path) -> None:
    """One rule (contract §5): ``gen afile`` is exit 2 as ``split --out afile`` is."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    gen = run_cli("gen", afile, "--modules", "1", "--instructions", "20")
    split = run_cli("split", _example("01_"), "--out", afile)
    assert gen.returncode == split.returncode == 2, (gen.stderr, split.stderr)
    assert afile.read_text() == "x"


# ----------------------------------------------------------------------------- missing files


def _missing_cases(tmp_path: Path) -> dict[str, list[str | Path]]:
    missing = tmp_path / "missing.json"
    out = tmp_path / "o"
    return {
        "split": ["split", missing, "--out", out],
        "verify": ["verify", missing],
        "memory": ["memory", missing],
        "info": ["info", missing],
        "explain": ["explain", missing, "x"],
        "unlink": ["unlink", missing, "--out", out],
        "lower": ["lower", tmp_path / "missing.hlo.txt", "--out", tmp_path / "m.json"],
        "diff --source": ["diff", _example("01_"), "--source", missing],
        "sim --compare": ["sim", _example("01_"), "--compare", missing],
    }


@pytest.mark.parametrize("case", list(_missing_cases(Path("t"))))
def test_a_missing_file_has_one_wording(case: str, tmp_path: Path) -> None:
    args = _missing_cases(tmp_path)[case]
    name = "missing.hlo.txt" if case == "lower" else "missing.json"
    r = run_cli(*args)
    text = r.stdout + r.stderr
    assert f"{tmp_path / name}: no such file or directory" in text, text
    assert "Errno" not in text and "FileNotFoundError" not in text
    assert text.count("no such file or directory") == 1
    assert text.count(str(tmp_path / name)) == 1  # the path once, not "x: … : x"


# ----------------------------------------------------------------------------- --json


def test_sim_json_prints_one_list_as_the_other_commands_do(tmp_path: Path) -> None:
    r = run_cli("sim", _example("01_"), _example("03_"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert isinstance(doc, list) and [d["input"] for d in doc] == [
        str(_example("01_")),
        str(_example("03_")),
    ]
    assert all(d["status"] == "ok" and "checksums" in d for d in doc)


def test_sim_json_lists_a_failed_input_too(tmp_path: Path) -> None:
    r = run_cli("sim", _example("01_"), tmp_path / "missing.json", "--json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert [d["status"] for d in doc] == ["ok", "error"]


def test_hlo_input_keeps_working_for_sim_json(tmp_path: Path) -> None:
    r = run_cli("sim", hlo_example_path(), "--json")
    assert r.returncode == 0 and isinstance(json.loads(r.stdout), list)
