"""Durability is opt-in (docs/cli.md, Safety): outputs are atomic either way; ``--fsync`` /
``LNCSPLIT_FSYNC=1`` adds an fsync of every file before its rename and of the directory after."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_helpers import run_cli
from lncsplit import _atomic
from lncsplit.examples import example_paths


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    monkeypatch.delenv(_atomic.FSYNC_ENV, raising=False)
    return calls


def test_writes_are_atomic_without_fsync_by_default(tmp_path: Path, fsyncs: list[int]) -> None:
    written = _atomic.write_core_files(str(tmp_path), [b"{}", b"[]"])
    assert [Path(p).read_bytes() for p in written] == [b"{}", b"[]"]
    assert sorted(os.listdir(tmp_path)) == ["nc00.json", "nc01.json"]  # no temporary left
    assert fsyncs == []


def test_durable_writes_fsync_every_file_and_the_directory(
    tmp_path: Path, fsyncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_atomic.FSYNC_ENV, "1")
    assert _atomic.durable()
    _atomic.write_core_files(str(tmp_path), [b"{}", b"[]"])
    assert len(fsyncs) == 3  # two files, then the directory
    _atomic.write_file_atomic(tmp_path / "r.json", b"{}")
    assert len(fsyncs) == 4


def test_fsync_option_splits_the_same_outputs(tmp_path: Path) -> None:
    src = next(p for p in example_paths() if p.stem == "01_shard_predicated")
    plain = run_cli("split", src, "--out", tmp_path / "a", "--quiet")
    durable = run_cli("split", src, "--out", tmp_path / "b", "--quiet", "--fsync")
    assert plain.returncode == durable.returncode == 0, durable.stderr
    for name in ("nc00.json", "nc01.json"):
        a = (tmp_path / "a" / src.stem / name).read_bytes()
        assert a == (tmp_path / "b" / src.stem / name).read_bytes()


def test_a_dask_batch_is_durable_only_for_the_run_that_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lncsplit.corpus.executors.dask import process_batch
    from lncsplit.corpus.unit import FileResult, Unit

    monkeypatch.delenv(_atomic.FSYNC_ENV, raising=False)
    import threading

    seen: list[bool] = []
    other_thread: list[bool] = []

    def job(unit: Unit) -> FileResult:
        seen.append(_atomic.durable())
        t = threading.Thread(target=lambda: other_thread.append(_atomic.durable()))
        t.start()
        t.join()
        return FileResult(input=unit.path, status="ok")

    unit = Unit(path=str(tmp_path / "m.json"), rel="m")
    process_batch([(0, unit)], job, fsync=True)
    process_batch([(0, unit)], job)
    assert seen == [True, False] and not _atomic.durable()
    assert other_thread == [False, False]  # another run's task on the same worker
