"""Every bulk command gives the same outputs and the same text on every executor (threads,
worker processes, Dask): the executor decides where a job runs, never what it does or says.

Each executor runs in its own copy of one working directory, with the paths the user types
(relative ones), so the files written, the report JSON and the text printed can be compared
byte for byte, once the run's timings and the executor's own name are set aside.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli, tree_bytes
from lncsplit.examples import example_paths

EXECUTORS = ("thread", "process", "dask")

#: Three shipped examples (a predicated split, a collective, shared DRAM): several units per
#: run, so the order, the report and the per-unit text are compared too, at a cost this
#: 24-run test can afford.
EXAMPLES = ("01_", "05_", "08_")

#: Each bulk command as a user types it in the working directory (``ex/``: the examples,
#: ``out/``: their split); every one writes a ``--report``.
COMMANDS: dict[str, list[str]] = {
    "split": ["split", "ex", "--out", "o"],
    "verify": ["verify", "out"],
    "memory": ["memory", "out", "--plot", "m.png"],
    "diff": ["diff", "out"],
    "report": ["report", "out", "--html", "pages"],
    "racecheck": ["racecheck", "out"],
    "link": ["link", "out", "--out", "linked"],
    "sim": ["sim", "out"],
}

#: The commands that write files besides the report (the others print only).
WRITES = {"split", "memory", "report", "link"}

_TIME = re.compile(r"^  time [0-9.]+ s.*$", re.M)
_EXECUTOR = re.compile(r"\((thread|process|dask)\)")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ex/`` (the shipped examples) and ``out/`` (their split), made once."""
    d = tmp_path_factory.mktemp("agree") / "work"
    (d / "ex").mkdir(parents=True)
    for p in example_paths():
        if p.name.startswith(EXAMPLES):
            shutil.copy(p, d / "ex" / p.name)
    r = run_cli("split", "ex", "--out", "out", "-q", cwd=d)
    assert r.returncode == 0, r.stderr
    return d


def _normalized_text(text: str) -> str:
    return _EXECUTOR.sub("(EXECUTOR)", _TIME.sub("  time", text))


def _normalized_report(raw: bytes) -> Any:
    doc = json.loads(raw)
    for f in doc["files"]:
        f["seconds"] = None
        f.get("detail", {}).pop("phases", None)
    for key in ("seconds", "executor", "throughput_mb_s", "wall_seconds"):
        doc["summary"].pop(key, None)
    return doc


def _run(workdir: Path, tmp_path: Path, command: str, executor: str) -> dict[str, Any]:
    cwd = tmp_path / executor
    shutil.copytree(workdir, cwd)
    before = set(tree_bytes(cwd))
    args = [*COMMANDS[command], "--jobs", "2", "--executor", executor, "--report", "rep.json"]
    r = run_cli(*args, cwd=cwd, timeout=300)
    files = {k: v for k, v in tree_bytes(cwd).items() if k not in before}
    report = files.pop("rep.json", None)
    return {
        "rc": r.returncode,
        "stdout": _normalized_text(r.stdout),
        "stderr": _normalized_text(r.stderr),
        "files": files,
        "report": None if report is None else _normalized_report(report),
    }


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_executor_gives_the_same_outputs_and_text(
    workdir: Path, tmp_path: Path, command: str
) -> None:
    if "dask" in EXECUTORS:
        pytest.importorskip("distributed")
    runs = {e: _run(workdir, tmp_path, command, e) for e in EXECUTORS}
    base = runs["thread"]
    assert base["rc"] == 0, base["stdout"] + base["stderr"]
    assert base["report"] is not None
    assert bool(base["files"]) == (command in WRITES), sorted(base["files"])
    for e in EXECUTORS[1:]:
        got = runs[e]
        assert got["rc"] == base["rc"], (e, got["stderr"])
        assert got["stderr"] == base["stderr"], e
        assert got["stdout"] == base["stdout"], e
        assert sorted(got["files"]) == sorted(base["files"]), e
        for name, data in base["files"].items():
            assert got["files"][name] == data, (e, name)
        assert got["report"] == base["report"], e
