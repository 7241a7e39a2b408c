"""Helpers for the view tests: the example corpus split to disk, golden files."""

from __future__ import annotations

import os
from pathlib import Path

import lncsplit
import pytest
from lncsplit.examples import example_paths

GOLDEN = Path(__file__).resolve().parent / "golden"
#: Set LNCSPLIT_UPDATE_GOLDEN=1 to rewrite the golden files from the current output.
UPDATE = os.environ.get("LNCSPLIT_UPDATE_GOLDEN") == "1"


def example(stem: str) -> Path:
    """The example module whose file name starts with ``stem`` (``02_loop_region``)."""
    return next(p for p in example_paths() if p.name.startswith(stem))


def split_example(path: Path, lnc: int = 2) -> list[lncsplit.Module]:
    """The example through the default pipeline: what ``lncsplit split`` writes."""
    return lncsplit.run_pipeline([lncsplit.load(path)], lncsplit.PassOptions(lnc_size=lnc))


def write_split(cores: list[lncsplit.Module], d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for c, m in enumerate(cores):
        lncsplit.dump(m, d / f"nc{c:02d}.json")
    return d


def check_golden(name: str, text: str) -> None:
    """Compare ``text`` with ``golden/<name>`` (rewrite it with LNCSPLIT_UPDATE_GOLDEN=1)."""
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}: run with LNCSPLIT_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden file"


@pytest.fixture
def split_example_dirs(tmp_path: Path) -> dict[str, Path]:
    """Every example split (lnc 2) into ``tmp/out/<stem>/ncNN.json``."""
    out = {}
    for p in example_paths():
        stem = p.name.removesuffix(".json")
        out[stem] = write_split(split_example(p), tmp_path / "out" / stem)
    return out
