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
