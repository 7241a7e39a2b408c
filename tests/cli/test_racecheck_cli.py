"""``lncsplit racecheck DIR... [--mode exact|interval] [--json]`` and races through
``lncsplit split`` (contract §5, §3.6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import run_cli
from lncsplit.examples import example_paths


def handoff(with_barrier: bool) -> dict[str, Any]:
    """Example 08: core 0 writes a shared tensor, core 1 reads it; optionally
    without the barrier between them."""
    src = next(p for p in example_paths() if p.stem == "08_shared_handoff")
    doc = json.loads(src.read_text())
    if not with_barrier:
        insts = doc["functions"][0]["basic_blocks"][0]["instructions"]
        doc["functions"][0]["basic_blocks"][0]["instructions"] = [
            {k: v for k, v in i.items() if k != "dependencies"}
            for i in insts
            if i["opcode"] != "CoreBarrier"
        ]
    return doc


def split_out(tmp_path: Path, name: str, doc: dict[str, Any]) -> Path:
    """Split ``doc`` at lnc 2 without the race check; returns its output directory."""
    src = tmp_path / "in" / f"{name}.json"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(json.dumps(doc))
    r = run_cli("split", src, "--out", tmp_path / "out", "--no-verify", "--quiet")
    assert r.returncode == 0, r.stderr
    return tmp_path / "out" / name


def test_a_race_free_split_output_exits_0(tmp_path: Path) -> None:
    out = split_out(tmp_path, "ok", handoff(True))
    r = run_cli("racecheck", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no race" in r.stdout


def test_a_race_exits_1_and_prints_its_witness_and_fix(tmp_path: Path) -> None:
    out = split_out(tmp_path, "racy", handoff(False))
    r = run_cli("racecheck", out)
    assert r.returncode == 1
    assert "read-write race" in r.stdout and "produce" in r.stdout and "consume" in r.stdout
    assert "handoff_loc of core 0 at partition 0, byte 0" in r.stdout
    assert "fix: insert a CoreBarrier" in r.stdout


def test_json_prints_the_race_report(tmp_path: Path) -> None:
    racy = split_out(tmp_path, "racy", handoff(False))
    ok = split_out(tmp_path, "ok", handoff(True))
    r = run_cli("racecheck", racy, ok, "--json", "--mode", "interval")
    assert r.returncode == 1
    docs = json.loads(r.stdout)
    assert [Path(d["input"]).name for d in docs] == ["racy", "ok"]
    report = docs[0]["report"]
    assert report["ok"] is False and report["mode"] == "interval"
    race = report["races"][0]
    assert (race["a"]["instruction"], race["b"]["instruction"]) == ("produce", "consume")
    assert race["witness"] == {"partition": 0, "byte": 0}
    assert docs[1]["report"] == {"ok": True, "mode": "interval", "races": []}


def test_directories_are_searched_for_split_outputs(tmp_path: Path) -> None:
    split_out(tmp_path, "a", handoff(True))
    split_out(tmp_path, "b", handoff(False))
    r = run_cli("racecheck", tmp_path / "out", "--report", tmp_path / "rep.json")
    assert r.returncode == 1
    rep = json.loads((tmp_path / "rep.json").read_text())
    status = {Path(f["input"]).name: f["status"] for f in rep["files"]}
    assert status == {"a": "ok", "b": "error"}
    bad = next(f for f in rep["files"] if f["status"] == "error")
    assert bad["error"]["code"] == 9301


def test_a_symbolic_file_is_split_then_checked(tmp_path: Path) -> None:
    src = tmp_path / "h.json"
    src.write_text(json.dumps(handoff(False)))
    r = run_cli("racecheck", src)
    assert r.returncode == 1 and "produce" in r.stdout


def test_no_module_found_exits_1(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert run_cli("racecheck", tmp_path / "empty").returncode == 1


def test_a_bad_mode_is_a_usage_error(tmp_path: Path) -> None:
    out = split_out(tmp_path, "ok", handoff(True))
    assert run_cli("racecheck", out, "--mode", "fuzzy").returncode == 2


def test_split_reports_a_race_as_that_files_error(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "racy.json").write_text(json.dumps(handoff(False)))
    (src / "ok.json").write_text(json.dumps(handoff(True)))
    r = run_cli("split", src, "--out", tmp_path / "out", "--report", tmp_path / "rep.json")
    assert r.returncode == 1
    assert "9301" in r.stderr and "racy.json" in r.stderr
    rep = json.loads((tmp_path / "rep.json").read_text())
    status = {Path(f["input"]).name: f["status"] for f in rep["files"]}
    assert status == {"ok.json": "ok", "racy.json": "error"}
    assert not (tmp_path / "out" / "racy").exists()


def test_gen_racy_corpora_fail_racecheck(tmp_path: Path) -> None:
    assert (
        run_cli(
            "gen", tmp_path / "g", "--modules", "2", "--instructions", "300", "--racy"
        ).returncode
        == 0
    )
    r = run_cli("split", tmp_path / "g", "--out", tmp_path / "o", "--quiet")
    assert r.returncode == 1
    assert run_cli("gen", tmp_path / "c", "--modules", "2", "--instructions", "300").returncode == 0
    assert run_cli("split", tmp_path / "c", "--out", tmp_path / "co", "--quiet").returncode == 0
    assert run_cli("racecheck", tmp_path / "co").returncode == 0
