"""The one runner of every bulk command: a job over many units, in parallel, with a report.

``split``, ``verify``, ``memory`` (and every command that reads many inputs)
run the same way (contract §5): the units found by
:func:`lncsplit.corpus.discovery.discover_units` go through :func:`run_units` with
the command's job (see :mod:`lncsplit.corpus.unit`) on a local thread or process
pool or a Dask cluster (``--jobs``, ``--executor``, ``--scheduler``,
``--batch-size``), and come back as a :class:`CorpusReport` — per-unit
entries in input order whatever the executor or job count, one ``--report``
JSON writer, one summary table.

A unit that an executor loses (its worker process died) is reported as an
error of type ``WorkerDied``; ``cleanup(unit)`` (optional) then removes
whatever the job may have left of its outputs.

Ctrl-C (``KeyboardInterrupt``) cancels the units not started yet, lets the
running ones finish (each writes whole files or none), and raises
:class:`RunInterrupted` carrying the partial report: the finished units as
they ended, the others as ``Interrupted`` errors (contract §5: exit 130).
Under Dask the batches already running on workers are abandoned: their
outputs are whole but not listed as done.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from lncsplit._atomic import write_file_atomic
from lncsplit.corpus.unit import FileResult, Job, Unit, failed_result

ExecutorName = Literal["auto", "thread", "process", "dask"]
ResolvedExecutor = Literal["thread", "process", "dask"]
ProgressFn = Callable[[int, int], None]
Cleanup = Callable[[Unit], None]

#: The local executor ``executor="auto"`` picks (measured, see docs/cli.md).
DEFAULT_LOCAL_EXECUTOR: Literal["thread", "process"] = "thread"


def resolve_jobs(jobs: int | None) -> int:
    """``None``/``0`` → the CPUs this process may use; otherwise ``jobs`` (≥ 1)."""
    if jobs is None or jobs == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - non-Linux
            return max(1, os.cpu_count() or 1)
    if jobs < 0:
        raise ValueError(f"jobs must be >= 0, got {jobs}")
    return jobs


def resolve_executor(executor: str, scheduler: Any = None) -> ResolvedExecutor:
    """``"auto"`` → ``"dask"`` with a scheduler, else :data:`DEFAULT_LOCAL_EXECUTOR`.

    Raises :class:`ValueError` for an unknown name or a scheduler given to a
    local executor.
    """
    if executor == "auto":
        return "dask" if scheduler is not None else DEFAULT_LOCAL_EXECUTOR
    if executor not in ("thread", "process", "dask"):
        raise ValueError(f"unknown executor {executor!r} (auto, thread, process or dask)")
    if scheduler is not None and executor != "dask":
        raise ValueError("a scheduler is only used by executor='dask'")
    return executor  # type: ignore[return-value]


@dataclass
class CorpusReport:
    """The result of a bulk command: per-unit entries in input order.

    :meth:`to_json` is the ``--report`` document of contract §5:
    ``{"version": 1, "lnc": N, "files": [...], "summary": {...}}``. The
    summary always holds ``files``, ``ok``, ``errors``, ``seconds`` (wall time
    of the run), ``jobs``, ``executor`` and ``command``; with ``counts`` (the
    split) also ``instructions_in`` (total over successful files),
    ``instructions_out`` (total over every core), ``instructions_out_per_core``
    (core 0 first), ``bytes_in``, ``bytes_out`` (successful files only, like
    the instruction counts) and ``throughput_mb_s`` (their input MB — 10^6
    bytes — per wall second). ``lnc`` is None when each unit's N was
    inferred.
    """

    lnc: int | None
    files: list[FileResult]
    seconds: float = 0.0
    jobs: int = 1
    executor: str = "thread"
    command: str = "split"
    counts: bool = True
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        """True iff every unit succeeded."""
        return all(f.ok for f in self.files)

    @property
    def exit_code(self) -> int:
        """0 when every unit succeeded, else 1."""
        return 0 if self.ok else 1

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if not f.ok]

    def _per_core(self) -> list[int]:
        width = self.lnc or max((len(f.instructions_out) for f in self.files), default=0)
        per_core = [0] * width
        for f in self.files:
            for c, n in enumerate(f.instructions_out[:width]):
                per_core[c] += n
        return per_core

    def _count_summary(self) -> dict[str, Any]:
        per_core = self._per_core()
        # Successful units only, as the outputs are: a failed file's bytes were read but
        # not split, and counting them made an all-failed run report a throughput.
        done = [f for f in self.files if f.ok]
        return {
            "instructions_in": sum(f.instructions_in or 0 for f in done),
            "instructions_out": sum(per_core),
            "instructions_out_per_core": per_core,
            "bytes_in": sum(f.bytes_in for f in done),
            "bytes_out": sum(f.bytes_out for f in done),
        }

    def summary(self) -> dict[str, Any]:
        ok = sum(f.ok for f in self.files)
        s: dict[str, Any] = {"files": len(self.files), "ok": ok, "errors": len(self.files) - ok}
        if self.counts:
            s.update(self._count_summary())
        s["seconds"] = round(self.seconds, 6)
        if self.counts:
            s["throughput_mb_s"] = (
                round(s["bytes_in"] / 1e6 / self.seconds, 3) if self.seconds > 0 else None
            )
        s.update(jobs=self.jobs, executor=self.executor, command=self.command)
        if self.interrupted:
            s["interrupted"] = True
        return s

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "lnc": self.lnc,
            "files": [f.to_json() for f in self.files],
            "summary": self.summary(),
        }

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the report JSON (indented, UTF-8) atomically; its directory must exist."""
        data = (json.dumps(self.to_json(), indent=2) + "\n").encode()
        write_file_atomic(os.fspath(path), data)

    def table(self) -> str:
        """The human summary every bulk command prints."""
        s = self.summary()
        noun = "files" if all(f.kind == "file" for f in self.files) else "inputs"
        lnc = self.lnc if self.lnc is not None else "per input"
        lines = [
            f"lncsplit {self.command}: {s['files']} {noun} ({s['ok']} ok, {s['errors']} failed), "
            f"lnc {lnc}, jobs {self.jobs} ({self.executor})"
        ]
        if not self.counts:
            lines.append(f"  time {self.seconds:.3f} s")
            return "\n".join(lines)
        rows = [("input", s["ok"], s["instructions_in"])]
        rows += [(f"core {c}", s["ok"], n) for c, n in enumerate(s["instructions_out_per_core"])]
        rows.append(
            ("total out", s["ok"] * len(s["instructions_out_per_core"]), s["instructions_out"])
        )
        lines.append(f"  {'':<10} {'files':>8} {'instructions':>14}")
        lines += [f"  {name:<10} {files:>8} {n:>14,}" for name, files, n in rows]
        mbs = s["throughput_mb_s"]
        lines.append(
            f"  time {self.seconds:.3f} s, {s['bytes_in'] / 1e6:.2f} MB in, "
            f"{s['bytes_out'] / 1e6:.2f} MB out, throughput "
            + (f"{mbs:.2f} MB/s" if mbs is not None else "n/a")
        )
        return "\n".join(lines)


#: The error type of a unit an interrupted run never started.
INTERRUPTED = "Interrupted"


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_units`; ``report`` holds what was done."""

    def __init__(self, report: CorpusReport) -> None:
        super().__init__("interrupted")
        self.report = report

    def describe(self) -> str:
        """``interrupted: 12 of 200 files done (11 ok, 1 failed), 188 not processed; …``."""
        r = self.report
        started = [f for f in r.files if not (f.error and f.error.get("type") == INTERRUPTED)]
        ok = sum(f.ok for f in started)
        noun = "files" if all(f.kind == "file" for f in r.files) else "inputs"
        return (
            f"interrupted: {len(started)} of {len(r.files)} {noun} done ({ok} ok, "
            f"{len(started) - ok} failed), {len(r.files) - len(started)} not processed; "
            "every output written is complete"
        )


_NEVER = ("InternalError", "unit was never processed")


@dataclass(frozen=True)
class _Where:
    """Where Dask runs: the scheduler, units per task, connect timeout."""

    scheduler: Any
    batch_size: int | None
    connect_timeout: float | None


def run_units(
    units: Sequence[Unit],
    job: Job,
    *,
    jobs: int | None = 1,
    executor: str = "auto",
    scheduler: Any = None,
    progress: ProgressFn | None = None,
    batch_size: int | None = None,
    cleanup: Cleanup | None = None,
    command: str = "split",
    lnc: int | None = None,
    counts: bool = False,
    connect_timeout: float | None = None,
) -> CorpusReport:
    """Run ``job`` on every unit; returns the :class:`CorpusReport` (units in input order).

    Args:
        units: from :func:`lncsplit.corpus.discovery.discover_units`.
        job: ``job(unit) -> FileResult``, never raising for a bad input;
            picklable for ``"process"`` and ``"dask"`` (a module-level
            function or a :func:`functools.partial` of one).
        jobs: worker count (``0``/None = every available CPU).
        executor: ``"thread"``, ``"process"`` (spawned workers), ``"dask"``
            (needs ``lncsplit[dask]``) or ``"auto"`` (see :func:`resolve_executor`).
        scheduler: Dask scheduler address or ``distributed.Client``; with
            ``executor="dask"`` and none, a ``LocalCluster`` of ``jobs``
            single-threaded workers runs for the call. Dask tasks see absolute
            unit paths, so the job's own paths should be absolute too.
        progress: ``progress(done, total)`` after every unit.
        batch_size: units per Dask task (default: up to 200, fewer for small runs).
        cleanup: ``cleanup(unit)`` for a unit whose worker died mid-job.
        command, lnc, counts: recorded in the report (see :class:`CorpusReport`).
        connect_timeout: seconds to wait for a Dask ``scheduler`` (default 10).

    A unit with a discovery error is reported failed without running ``job``.
    Raises only for usage errors (an unknown executor, a missing optional
    dependency, an unreachable scheduler), and :class:`RunInterrupted` on
    Ctrl-C.
    """
    njobs = resolve_jobs(jobs)
    resolved = resolve_executor(executor, scheduler)
    items = list(units)
    results: list[FileResult | None] = [None] * len(items)
    done = 0
    lock = threading.Lock()

    def on_result(i: int, r: FileResult) -> None:
        nonlocal done
        with lock:
            results[i] = r
            done += 1
            d = done
        if progress is not None:
            progress(d, len(items))

    def on_lost(i: int, exc_type: str, message: str) -> None:
        if cleanup is not None:
            cleanup(items[i])
        on_result(i, failed_result(items[i], exc_type, message))

    t0 = time.perf_counter()
    interrupted = False
    try:
        if items:
            where = _Where(scheduler, batch_size, connect_timeout)
            _dispatch(resolved, items, job, njobs, on_result, on_lost, where)
    except KeyboardInterrupt:
        interrupted = True
    with lock:
        missing = (INTERRUPTED, "not processed: the run was interrupted") if interrupted else None
        files = [
            r if r is not None else failed_result(items[i], *(missing or _NEVER))
            for i, r in enumerate(results)
        ]
    report = CorpusReport(
        lnc=lnc,
        files=files,
        seconds=time.perf_counter() - t0,
        jobs=njobs,
        executor=resolved,
        command=command,
        counts=counts,
        interrupted=interrupted,
    )
    if interrupted:
        raise RunInterrupted(report)
    return report


def _dispatch(
    executor: ResolvedExecutor,
    items: list[Unit],
    job: Job,
    jobs: int,
    on_result: Callable[[int, FileResult], None],
    on_lost: Callable[[int, str, str], None],
    where: _Where,
) -> None:
    if executor == "dask":
        from lncsplit.corpus.executors.dask import run_dask

        run_dask(
            items,
            job,
            jobs,
            where.scheduler,
            on_result,
            on_lost,
            batch_size=where.batch_size,
            connect_timeout=where.connect_timeout,
        )
    elif executor == "process":
        from lncsplit.corpus.executors.local import run_processes

        run_processes(items, job, jobs, on_result, on_lost)
    else:
        from lncsplit.corpus.executors.local import run_threads

        run_threads(items, job, jobs, on_result)


__all__ = [
    "DEFAULT_LOCAL_EXECUTOR",
    "INTERRUPTED",
    "RunInterrupted",
    "Cleanup",
    "CorpusReport",
    "ExecutorName",
    "ProgressFn",
    "resolve_executor",
    "resolve_jobs",
    "run_units",
]
