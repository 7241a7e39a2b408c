"""``lncsplit racecheck --engines FILE|DIR [--json] [--why A B]`` and ``lncsplit gen
--scheduled [--racy]`` (contract §3.10, §5)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_cli
from lncsplit.examples import example_paths


def gen(tmp_path: Path, racy: bool, modules: int = 2) -> Path:
    out = tmp_path / ("racy" if racy else "clean")
    args = [
        "gen",
        out,
        "--scheduled",
        "--modules",
        str(modules),
        "--instructions",
        "300",
        "--seed",
        "3",
    ]
    r = run_cli(*args, *(["--racy"] if racy else []))
    assert r.returncode == 0, r.stderr
    return out


def test_scheduled_modules_are_ok_and_exit_0(tmp_path: Path) -> None:
    d = gen(tmp_path, racy=False)
    r = run_cli("racecheck", "--engines", d)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [line for line in r.stdout.splitlines() if "gen_" in line]
    assert len(lines) == 2 and all(line.startswith("ok ") for line in lines), r.stdout


def test_racy_scheduled_modules_print_each_race_with_its_fix_and_exit_1(tmp_path: Path) -> None:
    d = gen(tmp_path, racy=True)
    r = run_cli("racecheck", "--engines", d)
    assert r.returncode == 1
    assert "RACE " in r.stdout and " race: " in r.stdout and "fix: make " in r.stdout


def test_json_prints_one_input_and_report_per_core_with_the_contract_keys(tmp_path: Path) -> None:
    d = gen(tmp_path, racy=True)
    r = run_cli("racecheck", "--engines", d, "--json")
    assert r.returncode == 1
    docs = json.loads(r.stdout)
    assert [Path(x["input"]).name for x in docs] == ["gen_0000.json", "gen_0001.json"]
    for x in docs:
        assert sorted(x) == ["input", "report"]
        assert sorted(x["report"]) == ["ok", "races", "unchecked", "undecided", "waits"]
    race = next(r for x in docs for r in x["report"]["races"])
    assert sorted(race["a"]) == ["engine", "instruction", "position"]


def test_every_core_of_a_split_output_is_checked(tmp_path: Path) -> None:
    src = next(p for p in example_paths() if p.stem == "08_shared_handoff")
    r = run_cli("split", src, "--out", tmp_path / "out", "--quiet")
    assert r.returncode == 0, r.stderr
    r = run_cli("racecheck", "--engines", tmp_path / "out", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    names = [Path(x["input"]).name for x in json.loads(r.stdout)]
    assert names == ["nc00.json", "nc01.json"]


def test_a_symbolic_module_fails_its_input_with_9601(tmp_path: Path) -> None:
    src = next(p for p in example_paths() if p.stem == "08_shared_handoff")
    r = run_cli("racecheck", "--engines", src)
    assert r.returncode == 1
    assert "9601" in r.stdout + r.stderr


def test_why_prints_the_chain_of_orderings(tmp_path: Path) -> None:
    data = (
        Path(__file__).resolve().parent.parent / "engines" / "data" / "scheduled_dump_compiler.json"
    )
    doc = json.loads(data.read_text())
    # The lncsplit dialect (the compiler's spelling is read once issue 33 lands).
    doc.setdefault("name", "sg00")
    for f in doc["functions"]:
        f["basic_blocks"] = f.pop("blocks")
        for s in f["allocations"]:
            s["locations"] = s.pop("memorylocations")
        f["basic_blocks"][1]["instructions"][-1]["name"] = "barrier#2"
    core = tmp_path / "nc00.json"
    core.write_text(json.dumps(doc))
    r = run_cli("racecheck", "--engines", core, "--why", "load_w", "mm")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "happens before" in r.stdout and "semaphore 4" in r.stdout
    r = run_cli("racecheck", "--engines", core, "--why", "load_w", "ghost", "--json")
    assert r.returncode == 1
    assert "ghost" in r.stdout


def test_why_without_engines_is_a_usage_error(tmp_path: Path) -> None:
    r = run_cli("racecheck", tmp_path, "--why", "a", "b")
    assert r.returncode == 2
    assert "--why needs --engines" in r.stderr


def test_every_core_of_a_compiler_dump_root_is_checked() -> None:
    # The shipped scheduled dump root: nc00/sg00/…after-lower_sync… and nc01 (no neuron_core_id).
    import lncsplit.examples as ex

    root = Path(ex.__file__).parent / "compiler" / "scheduled"
    r = run_cli("racecheck", "--engines", root, "--pass", "lower_sync", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    docs = json.loads(r.stdout)
    assert [Path(x["input"]).parts[-3:-1] for x in docs] == [("nc00", "sg00"), ("nc01", "sg00")]
    assert all(x["report"]["ok"] for x in docs)


def test_symbolic_with_engines_is_a_usage_error(tmp_path: Path) -> None:
    # two different checks (every N across cores, inside one core): one per run
    d = gen(tmp_path, racy=False, modules=1)
    r = run_cli("racecheck", "--symbolic", "--engines", d / "gen_0000.json")
    assert r.returncode == 2 and "--symbolic and --engines" in r.stderr, r.stderr


def test_scheduled_with_numeric_or_lnc_generic_is_a_usage_error(tmp_path: Path) -> None:
    for other in (["--numeric"], ["--lnc-generic", "4"]):
        out = tmp_path / other[0].strip("-")
        r = run_cli("gen", out, "--scheduled", *other, "--modules", "1")
        assert r.returncode == 2 and f"--scheduled and {other[0]}" in r.stderr, r.stderr
        assert not out.exists()
