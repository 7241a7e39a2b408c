"""Helpers for the CLI / corpus tests: run ``python -m lncsplit``, build corpora and fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lncsplit.examples import example_paths


def run_cli(
    *args: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m lncsplit ARGS`` in a subprocess; stdout/stderr captured (so not a TTY)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "lncsplit", *map(str, args)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def shard(coeff: int = 1, c: int = 0) -> dict[str, Any]:
    return {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "ShardIDKind", "ub": 2}, "coeff": coeff}],
        "c": c,
    }


def partial_barrier_module() -> dict[str, Any]:
    """The barrier example with barrier_0 active on core 0 only: NeuronAssertion 1201."""
    src = next(p for p in example_paths() if p.name.startswith("03_"))
    doc = json.loads(src.read_text())
    doc["name"] = "partial_barrier_nc_symbolic"
    for ins in doc["functions"][0]["basic_blocks"][0]["instructions"]:
        if ins["name"] == "barrier_0":
            ins["predicates"] = [{"expr": shard(1, 0), "ge": False}]
    return doc


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """The examples laid out in nested directories: a/…, b/c/…, plus a top-level file."""
    root = tmp_path / "corpus"
    paths = example_paths()
    for k, p in enumerate(paths):
        sub = root / ("a" if k % 3 == 0 else "b/c" if k % 3 == 1 else "")
        sub.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, sub / p.name)
    return root


@pytest.fixture
def corrupt_corpus(tmp_path: Path) -> Path:
    """Five good files around a truncated one and a pipeline-failing one (sorted in the middle)."""
    root = tmp_path / "corrupt"
    root.mkdir()
    paths = example_paths()
    shutil.copy(paths[0], root / "m1_good.json")
    shutil.copy(paths[1], root / "m2_good.json")
    text = paths[2].read_text()
    (root / "m3_corrupt.json").write_text(text[: len(text) // 2])
    (root / "m4_partial_barrier.json").write_text(json.dumps(partial_barrier_module()))
    shutil.copy(paths[3], root / "m5_good.json")
    shutil.copy(paths[4], root / "m6_good.json")
    return root


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
