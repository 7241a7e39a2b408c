"""The Dask executor on a ``distributed.LocalCluster`` (2 single-threaded worker processes)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import crash_jobs
import pytest
from cli_helpers import run_cli, tree_bytes
from lncsplit.corpus import discover_inputs, process_files
from lncsplit.corpus.runner import CorpusReport, run_units
from lncsplit.corpus.split_job import remove_unit_outputs
from lncsplit.examples import example_paths
from lncsplit.pipeline import PassOptions

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    # Fail a task on the first worker death (the default is 3 silent re-runs), so
    # lncsplit's own retry is what the tests observe.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as c:
            yield c


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    with distributed.Client(cluster) as c:
        yield c


def _poison_corpus(root: Path) -> Path:
    root.mkdir()
    for p in example_paths():
        shutil.copy(p, root / p.name)
    shutil.copy(example_paths()[0], root / "04b_poison.json")
    return root


def test_dask_output_matches_local_threads(corpus: Path, tmp_path: Path, client: Any) -> None:
    opts = PassOptions(lnc_size=2)
    local = process_files([corpus], tmp_path / "local", opts, jobs=1, executor="thread")
    remote = process_files(
        [corpus], tmp_path / "dask", opts, executor="dask", scheduler=client, batch_size=2
    )
    assert remote.ok and remote.executor == "dask"
    assert tree_bytes(tmp_path / "local") == tree_bytes(tmp_path / "dask")
    assert [f.input for f in local.files] == [f.input for f in remote.files]


def test_dask_streams_results_per_batch(corpus: Path, tmp_path: Path, client: Any) -> None:
    seen: list[tuple[int, int]] = []
    process_files(
        [corpus],
        tmp_path / "o",
        PassOptions(lnc_size=2),
        executor="dask",
        scheduler=client,
        batch_size=3,
        progress=lambda d, t: seen.append((d, t)),
    )
    n = len(example_paths())
    assert [d for d, _ in seen] == list(range(1, n + 1)) and all(t == n for _, t in seen)


def test_dask_reports_bad_files_without_stopping(
    corrupt_corpus: Path, tmp_path: Path, client: Any
) -> None:
    rep = process_files(
        [corrupt_corpus], tmp_path / "o", PassOptions(lnc_size=2), executor="dask", scheduler=client
    )
    status = {Path(f.input).stem: f.status for f in rep.files}
    assert status["m3_corrupt"] == status["m4_partial_barrier"] == "error"
    assert [s for s in status.values()].count("ok") == 4
    assert not (tmp_path / "o" / "m3_corrupt").exists()


def _crash_run(src: Path, out: Path, client: Any, marker: Path | None) -> CorpusReport:
    """Split ``src`` over Dask with a job that kills its worker on ``*poison*``."""
    cloudpickle = pytest.importorskip("cloudpickle")
    # The workers need not import the test helpers: ship the job's code with it.
    cloudpickle.register_pickle_by_value(crash_jobs)
    job = partial(
        crash_jobs.crash_then_split,
        needle="poison",
        marker=None if marker is None else str(marker),
        out=str(out),
        options=PassOptions(lnc_size=2, parallel=False),
    )
    return run_units(
        discover_inputs([src]),
        job,
        executor="dask",
        scheduler=client,
        batch_size=4,
        cleanup=partial(remove_unit_outputs, out=str(out)),
        lnc=2,
        counts=True,
    )


def test_dask_worker_killed_once_is_retried(tmp_path: Path, client: Any) -> None:
    src = _poison_corpus(tmp_path / "src")
    marker = tmp_path / "crashed-once"
    rep = _crash_run(src, tmp_path / "o", client, marker)
    assert marker.exists()  # a worker really died
    assert rep.ok, [f.error for f in rep.failed]
    assert (tmp_path / "o" / "04b_poison" / "nc01.json").is_file()


def test_dask_worker_killed_twice_reports_its_file(tmp_path: Path, client: Any) -> None:
    src = _poison_corpus(tmp_path / "src")
    rep = _crash_run(src, tmp_path / "o", client, None)
    bad = [f for f in rep.files if not f.ok]
    assert [Path(f.input).name for f in bad] == ["04b_poison.json"]
    assert bad[0].error is not None and bad[0].error["type"] == "WorkerDied"
    assert not (tmp_path / "o" / "04b_poison").exists()
    assert sum(f.ok for f in rep.files) == len(example_paths())


def test_cli_split_with_a_dask_scheduler(corpus: Path, tmp_path: Path, cluster: Any) -> None:
    report = tmp_path / "r.json"
    r = run_cli(
        "split",
        corpus,
        "--out",
        tmp_path / "o",
        "--scheduler",
        cluster.scheduler_address,
        "--batch-size",
        "2",
        "--report",
        report,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(report.read_text())
    assert doc["summary"]["executor"] == "dask" and doc["summary"]["ok"] == len(example_paths())


def test_cli_verify_with_a_dask_scheduler(tmp_path: Path, cluster: Any) -> None:
    out = tmp_path / "o"
    assert run_cli("split", *example_paths()[:2], "--out", out, "--quiet").returncode == 0
    report = tmp_path / "r.json"
    r = run_cli("verify", out, "--scheduler", cluster.scheduler_address, "--report", report)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(report.read_text())
    assert doc["summary"]["executor"] == "dask" and doc["summary"]["command"] == "verify"
    assert [f["detail"]["checked"] for f in doc["files"]] == ["concretized set of 2 cores"] * 2


def test_missing_dask_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import builtins

    from lncsplit.corpus.executors import dask as dx

    real = builtins.__import__

    def fake(name: str, *a: Any, **k: Any) -> Any:
        if name == "distributed":
            raise ImportError("no distributed")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(dx.MissingDependencyError, match=r"lncsplit\[dask\]"):
        process_files(example_paths()[:1], tmp_path / "o", PassOptions(lnc_size=2), executor="dask")
