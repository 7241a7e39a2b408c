"""The hand-written stubs (python/lncsplit/_core.pyi) type-check a usage
sample under ``mypy --strict``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def test_stubs_type_check_under_mypy_strict() -> None:
    pytest.importorskip("mypy")
    env = {**os.environ, "MYPYPATH": str(REPO / "python")}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            os.devnull,
            str(HERE / "typed_usage.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO),
    )
    assert r.returncode == 0, r.stdout + r.stderr
