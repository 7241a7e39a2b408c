"""Units, the core-set rules and the one runner every bulk command shares.

A unit is one input file or one split output (``nc00 … nc<N-1>`` in one
directory, each file carrying its own ``neuron_core_id``); ``verify`` and
``memory`` run through the same runner as ``split`` (``--jobs``,
``--executor``, a report in input order).
"""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import crash_jobs
import pytest
from lncsplit.cli import COMMANDS, main
from lncsplit.corpus import discover_inputs
from lncsplit.corpus.discovery import CoreSetError, check_core_ids, discover_units
from lncsplit.corpus.runner import run_units
from lncsplit.corpus.split_job import remove_unit_outputs
from lncsplit.corpus.unit import FileResult, Unit
from lncsplit.examples import example_paths
from lncsplit.pipeline import PassOptions


def _split(src: Path, out: Path, *extra: str) -> None:
    assert main(["split", str(src), "--out", str(out), "--quiet", *extra]) == 0


def _touch(root: Path, *rels: str) -> None:
    for rel in rels:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}")


# ----------------------------------------------------------------------------- discovery


def test_a_directory_of_core_files_is_one_unit(tmp_path: Path) -> None:
    _touch(tmp_path, "m/nc00.json", "m/nc01.json", "m/notes.json", "a.json", "m/.nc02.json.tmp")
    units = discover_units([tmp_path], core_sets=True)
    assert [(u.kind, u.rel) for u in units] == [
        ("file", "a"),
        ("core_set", "m"),
        ("file", "m/notes"),
    ]
    assert [Path(f).name for f in units[1].files] == ["nc00.json", "nc01.json"]
    assert units[1].path == str(tmp_path / "m") and units[1].error is None


def test_split_discovery_keeps_every_file_a_unit(tmp_path: Path) -> None:
    _touch(tmp_path, "m/nc00.json", "m/nc01.json")
    assert [u.rel for u in discover_inputs([tmp_path])] == ["m/nc00", "m/nc01"]


def test_a_root_that_is_a_split_output_is_named_after_itself(tmp_path: Path) -> None:
    _touch(tmp_path, "kern/nc00.json")
    (unit,) = discover_units([tmp_path / "kern"], core_sets=True)
    assert unit.kind == "core_set" and unit.rel == "kern"


def test_only_canonical_core_names_form_a_set(tmp_path: Path) -> None:
    _touch(tmp_path, "nc1.json", "nc001.json")
    assert {u.kind for u in discover_units([tmp_path], core_sets=True)} == {"file"}


def test_a_gap_in_the_core_files_is_an_error_naming_the_missing_file(tmp_path: Path) -> None:
    _touch(tmp_path, "m/nc00.json", "m/nc02.json")
    (unit,) = discover_units([tmp_path], core_sets=True)
    assert unit.error is not None and unit.error["type"] == "CoreSetError"
    assert "nc01.json" in unit.error["message"] and "nc02.json" in unit.error["message"]


@pytest.mark.parametrize(
    ("ids", "needle"),
    [
        # the passes' diagnosis (analysis/cores.rs, 9006), in the files' names
        ([0, 0], "core 0 is given 2 times: nc00.json, nc01.json; core 1 is missing"),
        ([0, None], "nc01.json carries no neuron_core_id"),
        ([1, 0], "nc00.json carries neuron_core_id 1; .*position 0 holds core 1"),
        ([1], "nc00.json carries neuron_core_id 1, outside 0…0"),
    ],
)
def test_each_core_file_carries_its_own_core(ids: list[int | None], needle: str) -> None:
    files = [f"/o/m/nc{c:02d}.json" for c in range(len(ids))]
    with pytest.raises(CoreSetError, match=needle):
        check_core_ids(files, ids)


@pytest.mark.parametrize("ids", [[None], [0], [0, 1, 2]])
def test_well_formed_core_sets_pass(ids: list[int | None]) -> None:
    check_core_ids([f"nc{c:02d}.json" for c in range(len(ids))], ids)


# ----------------------------------------------------------------------------- verify


def test_verify_accepts_an_lnc_1_output(tmp_path: Path, capsys: Any) -> None:
    _split(example_paths()[0], tmp_path / "out", "--lnc", "1")
    assert main(["verify", str(tmp_path / "out")]) == 0
    assert "N = 1 output" in capsys.readouterr().out


def test_verify_rejects_two_copies_of_one_core(tmp_path: Path, capsys: Any) -> None:
    src = example_paths()[0]
    _split(src, tmp_path / "out")
    d = tmp_path / "out" / src.stem
    shutil.copy(d / "nc00.json", d / "nc01.json")
    assert main(["verify", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "CoreSetError" in out and "core 0 is given 2 times: nc00.json, nc01.json" in out


def test_verify_rejects_a_split_output_missing_a_core(tmp_path: Path, capsys: Any) -> None:
    src = example_paths()[0]
    _split(src, tmp_path / "out")
    d = tmp_path / "out" / src.stem
    (d / "nc01.json").rename(d / "nc02.json")
    assert main(["verify", str(tmp_path / "out")]) == 1
    assert "lacks nc01.json" in capsys.readouterr().out


def _mixed_corpus(tmp_path: Path) -> Path:
    """Split outputs, symbolic files, an N = 1 output and a truncated module."""
    root = tmp_path / "mixed"
    for p in example_paths()[:4]:
        _split(p, root / "split")
        shutil.copy(p, root / p.name)
    _split(example_paths()[4], root / "one", "--lnc", "1")
    text = example_paths()[5].read_text()
    (root / "zz_bad.json").write_text(text[: len(text) // 2])
    return root


def _stable(report: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(report.read_text())
    for f in doc["files"]:
        f["seconds"] = 0
    for k in ("seconds", "jobs"):
        doc["summary"].pop(k)
    return doc


@pytest.mark.parametrize("command", ["verify", "memory"])
def test_report_is_the_same_whatever_jobs(command: str, tmp_path: Path, capsys: Any) -> None:
    root = _mixed_corpus(tmp_path)
    docs = []
    for jobs in ("1", "2"):
        report = tmp_path / f"{command}{jobs}.json"
        assert main([command, str(root), "--jobs", jobs, "--report", str(report)]) == 1
        docs.append(_stable(report))
    assert docs[0] == docs[1]
    files = docs[0]["files"]
    assert docs[0]["summary"]["command"] == command and len(files) == 4 + 1 + 4 + 1
    assert [f["status"] for f in files].count("error") == 1
    assert files[-1]["input"].endswith("zz_bad.json") and files[-1]["status"] == "error"
    capsys.readouterr()


def test_verify_report_says_what_each_unit_is(tmp_path: Path) -> None:
    root = _mixed_corpus(tmp_path)
    report = tmp_path / "r.json"
    main(["verify", str(root), "--report", str(report), "--quiet"])
    detail = {
        Path(f["input"]).name: f.get("detail") for f in json.loads(report.read_text())["files"]
    }
    assert detail[example_paths()[0].stem]["kind"] == "core_set"
    assert detail[example_paths()[0].stem]["lnc"] == 2
    assert detail[example_paths()[4].stem] == {
        "kind": "core_set",
        "lnc": 1,
        "checked": "N = 1 output, the untouched module",
    }
    assert detail[example_paths()[0].name]["checked"] == "symbolic, lnc 2"


def test_verify_runs_on_processes(tmp_path: Path, capsys: Any) -> None:
    _split(example_paths()[0], tmp_path / "out")
    assert main(["verify", str(tmp_path / "out"), "--jobs", "2", "--executor", "process"]) == 0
    assert "concretized set of 2 cores" in capsys.readouterr().out


def test_memory_reports_an_lnc_1_output_as_one_core(tmp_path: Path, capsys: Any) -> None:
    _split(example_paths()[0], tmp_path / "out", "--lnc", "1")
    assert main(["memory", str(tmp_path / "out"), "--json"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert doc["report"]["ok"] and len(doc["report"]["cores"]) == 1


@pytest.mark.parametrize("command", ["split", "verify", "memory"])
def test_no_module_found_is_exit_1(command: str, tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "empty").mkdir()
    args = [command, str(tmp_path / "empty")]
    if command == "split":
        args += ["--out", str(tmp_path / "o"), "--quiet"]
    assert main(args) == 1
    assert "no modules found" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the runner


def _poison_corpus(root: Path) -> Path:
    root.mkdir()
    for p in example_paths()[:3]:
        shutil.copy(p, root / p.name)
    shutil.copy(example_paths()[0], root / "01b_poison.json")
    return root


def test_a_worker_killed_by_its_job_loses_only_its_units(tmp_path: Path) -> None:
    src = _poison_corpus(tmp_path / "src")
    out = str(tmp_path / "o")
    job = partial(
        crash_jobs.crash_then_split,
        needle="poison",
        marker=None,
        out=out,
        options=PassOptions(lnc_size=2, parallel=False),
    )
    units = discover_inputs([src])
    rep = run_units(
        units,
        job,
        jobs=2,
        executor="process",
        cleanup=partial(remove_unit_outputs, out=out),
        lnc=2,
        counts=True,
    )
    assert [f.input for f in rep.files] == [u.path for u in units]
    poison = next(f for f in rep.files if "poison" in f.input)
    assert poison.error is not None and poison.error["type"] == "WorkerDied"
    assert not (tmp_path / "o" / "01b_poison").exists()
    for (
        f
    ) in rep.files:  # a dead worker breaks the pool: other units may be lost, never half-written
        name = Path(f.input).stem
        cores = sorted(p.name for p in (tmp_path / "o" / name).glob("*")) if f.ok else []
        assert f.ok == (cores == ["nc00.json", "nc01.json"]), (f, cores)


def test_a_job_that_raises_still_yields_an_error_entry(tmp_path: Path) -> None:
    units = [Unit(str(p), p.stem) for p in example_paths()[:3]]
    rep = run_units(units, crash_jobs.raising_job, jobs=2, executor="thread")
    assert [f.input for f in rep.files] == [u.path for u in units]
    assert all(f.error is not None and f.error["type"] == "RuntimeError" for f in rep.files)


def test_a_unit_with_a_discovery_error_never_reaches_its_job() -> None:
    seen: list[str] = []

    def job(unit: Unit) -> FileResult:
        seen.append(unit.path)
        return FileResult(input=unit.path)

    bad = Unit(
        "d", "d", kind="core_set", error={"type": "CoreSetError", "code": None, "message": "x"}
    )
    rep = run_units([Unit("a", "a"), bad], job, command="verify")
    assert seen == ["a"] and [f.status for f in rep.files] == ["ok", "error"]
    assert rep.files[1].error == {"type": "CoreSetError", "code": None, "message": "x"}
    assert "2 inputs (1 ok, 1 failed)" in rep.table()


# ----------------------------------------------------------------------------- the package


def test_every_command_is_one_module_with_add_parser_and_run() -> None:
    for module in COMMANDS:
        assert callable(module.add_parser) and callable(module.run)
    names = [m.__name__.rsplit(".", 1)[-1] for m in COMMANDS]
    assert names[:5] == ["split", "verify", "info", "gen", "memory"]
    assert {"link", "unlink"} <= set(names)
    assert "sim" in names
    assert {"explain", "diff", "report", "lower"} <= set(names) and len(set(names)) == len(names)


def test_the_entry_point_is_lncsplit_cli_main() -> None:
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "lncsplit"]
    assert ep.value == "lncsplit.cli:main" and ep.load() is main


def test_memory_plots_every_unit_from_parallel_jobs(tmp_path: Path, capsys: Any) -> None:
    png = tmp_path / "m.png"
    report = tmp_path / "r.json"
    srcs = [str(p) for p in example_paths()[:3]]
    assert main(["memory", *srcs, "--plot", str(png), "--jobs", "2", "--report", str(report)]) == 0
    for k in range(3):
        assert (tmp_path / f"m-{k}.png").read_bytes()[:4] == b"\x89PNG"
    outputs = [f["outputs"] for f in json.loads(report.read_text())["files"]]
    assert outputs == [[str(tmp_path / f"m-{k}.png")] for k in range(3)]
    capsys.readouterr()
