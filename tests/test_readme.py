"""The README's Python snippet runs as written (issue 15, item 11)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from lncsplit.examples import example_paths

README = Path(__file__).resolve().parent.parent / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_a_python_snippet() -> None:
    assert python_blocks()


def test_readme_python_snippet_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kernel.json: a shipped symbolic module for 2 cores, with replication so
    # expand_replication has work to do.
    src = next(p for p in example_paths() if "replication" in p.name)
    shutil.copy(src, tmp_path / "kernel.json")
    monkeypatch.chdir(tmp_path)
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "replication_nc00.json",
        "replication_nc01.json",
    ]


def test_the_readme_pipeline_call_gives_the_per_pass_timings_it_promises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # run_pipeline returns the cores; the timings come from its hook, as the README shows.
    src = next(p for p in example_paths() if "replication" in p.name)
    shutil.copy(src, tmp_path / "kernel.json")
    monkeypatch.chdir(tmp_path)
    for block in python_blocks():
        exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
    timed = re.findall(r"^ *(\d+) (\w+): [0-9.]+ ms$", capsys.readouterr().out, flags=re.M)
    assert ("8", "lnc_splitter") in timed and ("92", "lnc_barriercheck") in timed


def _walkthrough_extras(text: str) -> set[str]:
    """The optional extras the README's commands need (pyproject's names)."""
    needs = set()
    if "--plot" in text:
        needs.add("plot")
    if re.search(r"^\$? ?lncsplit report ", text, flags=re.M):
        needs.add("report")
    if re.search(r"--executor dask|--scheduler ", text):
        needs.add("dask")
    return needs


def test_the_demo_environment_has_every_extra_the_readme_uses() -> None:
    # The README's set-up is two commands; the first makes the environment its walkthrough
    # runs in, so that environment has what `--plot`, `report` and Dask need.
    text = README.read_text()
    setup = re.search(r"## Set-up: two commands\n.*?```bash\n(.*?)```", text, flags=re.DOTALL)
    assert setup is not None
    assert [line.split("#")[0].strip() for line in setup.group(1).strip().splitlines()] == [
        "bash scripts/demo",
        "bash scripts/test",
    ]
    demo = (README.parent / "scripts" / "demo").read_text()
    m = re.search(r'setup-env" "([^"]*)"', demo)
    assert m is not None, "scripts/demo makes its environment with scripts/setup-env"
    extras = {e for e in m.group(1).split(",") if e}
    needs = _walkthrough_extras(text)
    assert needs >= {"plot", "report"}
    assert needs <= extras, (
        f"scripts/demo installs {sorted(extras)}; the README uses {sorted(needs)}"
    )
