"""Progress on one big file (issue 17): a split that takes over a second
reports its phases (load, passes, write) to the phase hook and keeps their
times in its report entry."""

from __future__ import annotations

from pathlib import Path

import pytest
from lncsplit._core import generate_module
from lncsplit.corpus import split_job
from lncsplit.pipeline import PassOptions


@pytest.fixture
def module_file(tmp_path: Path) -> Path:
    p = tmp_path / "m.json"
    p.write_bytes(generate_module(5, 300, 2).to_bytes())
    return p


def test_a_slow_split_reports_each_phase_to_the_hook(
    module_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(split_job, "PHASE_REPORT_AFTER", -1.0)  # every file is "slow"
    seen: list[tuple[str, str]] = []
    split_job.set_phase_hook(lambda path, phase, s: seen.append((path, phase)))
    try:
        res = split_job.process_file(
            str(module_file), str(tmp_path / "out"), PassOptions(lnc_size=2)
        )
    finally:
        split_job.set_phase_hook(None)
    assert res.ok
    assert [p for _, p in seen] == ["load", "passes", "write"]
    assert all(path == str(module_file) for path, _ in seen)
    assert set(res.detail["phases"]) == {"load", "passes", "write"}
    assert all(t >= 0 for t in res.detail["phases"].values())


def test_a_fast_split_reports_nothing(module_file: Path, tmp_path: Path) -> None:
    seen: list[str] = []
    split_job.set_phase_hook(lambda path, phase, s: seen.append(phase))
    try:
        res = split_job.process_file(
            str(module_file), str(tmp_path / "out"), PassOptions(lnc_size=2)
        )
    finally:
        split_job.set_phase_hook(None)
    assert res.ok and seen == [] and "phases" not in res.detail
