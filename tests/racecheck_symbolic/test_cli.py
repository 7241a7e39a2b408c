"""``lncsplit racecheck --symbolic FILE [--lnc N|LO-HI|all] [--json]`` (contract §5)."""

from __future__ import annotations

import json
from pathlib import Path

import kernels
import lncsplit
import pytest
from lncsplit.cli import main


def _file(tmp_path: Path, m: lncsplit.Module, name: str) -> str:
    p = tmp_path / f"{name}.json"
    lncsplit.dump(m, str(p))
    return str(p)


def test_a_race_free_module_exits_0_and_prints_race_free(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _file(tmp_path, kernels.pairs_of_cores(disjoint=True), "free")
    assert main(["racecheck", "--symbolic", f, "--lnc", "2-6"]) == 0
    assert "race-free for N in 2-6" in capsys.readouterr().out


def test_a_race_exits_1_and_json_lists_input_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    free = _file(tmp_path, kernels.pairs_of_cores(disjoint=True), "free")
    racy = _file(tmp_path, kernels.barrier_of_two(), "racy")
    assert main(["racecheck", "--symbolic", free, racy, "--lnc", "2-8", "--json"]) == 1
    docs = json.loads(capsys.readouterr().out)
    assert [d["input"] for d in docs] == [free, racy]
    assert docs[0]["report"]["ok"] is True
    assert docs[1]["report"]["races"][0]["n"] == [3, 4, 5, 6, 7, 8]
    assert docs[1]["report"]["lnc"] == [2, 8]
    assert main(["racecheck", "--symbolic", racy, "--lnc", "all", "--json"]) == 1
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["report"]["races"][0]["n"] == ["3-"]
    assert doc["report"]["lnc"] == "all"


def test_an_unknown_or_an_invalid_n_exits_1(tmp_path: Path) -> None:
    reg = _file(tmp_path, kernels.register_address(), "reg")
    assert main(["racecheck", "--symbolic", reg, "--lnc", "2"]) == 1
    wide = _file(tmp_path, kernels.build([kernels.write("w", kernels.s(64), 64)]), "wide")
    assert main(["racecheck", "--symbolic", wide, "--lnc", "2"]) == 0
    assert main(["racecheck", "--symbolic", wide, "--lnc", "2-3"]) == 1


def test_bad_lnc_is_a_usage_error(tmp_path: Path) -> None:
    f = _file(tmp_path, kernels.late_cores(), "m")
    for bad in ("1", "5-3", "x", "2-"):
        assert main(["racecheck", "--symbolic", f, "--lnc", bad]) == 2
    assert main(["racecheck", str(tmp_path), "--lnc", "2-4"]) == 2


def test_a_split_core_file_fails_with_9005(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    core = lncsplit.split([kernels.late_cores()], 2)[0]
    f = _file(tmp_path, core, "core0")
    assert main(["racecheck", "--symbolic", f, "--json"]) == 1
    assert "9005" in json.loads(capsys.readouterr().out)[0]["error"]
