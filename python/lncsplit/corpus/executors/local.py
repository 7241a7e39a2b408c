"""Local executors: a thread pool, or a pool of spawned worker processes.

Threads work because the heavy steps release the GIL: file reads and writes
(``os.write``/``fsync``), JSON parse and serialization, the passes (Rust,
inside ``py.detach``). Processes avoid the GIL entirely at the cost of a
spawn (~0.3 s per worker: a fresh interpreter importing lncsplit) and
pickling the job and each result. docs/cli.md has the measured comparison
that picks :data:`lncsplit.corpus.runner.DEFAULT_LOCAL_EXECUTOR`.

Ctrl-C: both pools cancel the units not started and wait for the running
ones (a unit writes whole files or none), report the finished ones, then
re-raise ``KeyboardInterrupt``. Worker processes ignore SIGINT (the parent
decides) and stop between the units of their chunk once told to.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from lncsplit._inputs import prefetch
from lncsplit.corpus.executors import OnLost, OnResult
from lncsplit.corpus.unit import FileResult, Job, Unit, call_job


def run_threads(units: list[Unit], job: Job, jobs: int, on_result: OnResult) -> None:
    """Run ``job`` on every unit on a pool of ``jobs`` threads (inline when ``jobs == 1``)."""
    if jobs <= 1 or len(units) == 1:
        for i, unit in enumerate(units):
            on_result(i, _call_prefetching(job, unit, units[i + 1 : i + 2]))
        return
    pool = ThreadPoolExecutor(max_workers=min(jobs, len(units)), thread_name_prefix="lncsplit")
    # The pool starts units in order: unit i + jobs is the one this worker
    # (or the next one free) takes after unit i.
    futs = {
        pool.submit(_call_prefetching, job, unit, units[i + jobs : i + jobs + 1]): i
        for i, unit in enumerate(units)
    }
    reported: set[int] = set()
    try:
        # as_completed waits on every future once; a wait(FIRST_COMPLETED) loop
        # re-arms a waiter on all pending futures per result (quadratic, with
        # the GIL held while the workers want it).
        for f in as_completed(futs):
            reported.add(futs[f])
            on_result(futs[f], f.result())
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        _report_finished(futs, reported, on_result)
        raise
    finally:
        pool.shutdown(wait=True)


def _call_prefetching(job: Job, unit: Unit, after: list[Unit]) -> FileResult:
    """Run ``job`` on ``unit`` after asking the kernel to read the unit that
    comes ``after`` it: reading the next file overlaps splitting this one."""
    for nxt in after:
        for path in nxt.sources:
            prefetch(path)
    return call_job(job, unit)


def _report_finished(futs: dict[Future[Any], Any], reported: set[int], emit: Any) -> None:
    """After a cancel: report what finished while the pool wound down."""
    for f, key in futs.items():
        if not f.done() or f.cancelled() or f.exception() is not None:
            continue
        result = f.result()
        for i, r in result if isinstance(key, list) else [(key, result)]:
            if i not in reported:
                reported.add(i)
                emit(i, r)


# Set in worker processes by _init_worker: the parent's "stop" flag.
_STOP: Any = None


def _init_worker(stop: Any) -> None:
    """Worker process start: ignore Ctrl-C (the parent cancels), remember the stop flag."""
    global _STOP
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _STOP = stop


def _process_chunk(chunk: list[tuple[int, Unit]], job: Job) -> list[tuple[int, FileResult]]:
    out = []
    for i, unit in chunk:
        if _STOP is not None and _STOP.is_set():
            break  # interrupted: the rest of the chunk is not started
        out.append((i, _call_prefetching(job, unit, [u for k, u in chunk if k == i + 1])))
    return out


def _chunks(units: list[Unit], jobs: int) -> list[list[tuple[int, Unit]]]:
    # Small chunks keep the pool balanced; a few per worker amortize the IPC.
    size = max(1, min(8, len(units) // (jobs * 4)))
    indexed = list(enumerate(units))
    return [indexed[k : k + size] for k in range(0, len(indexed), size)]


def run_processes(
    units: list[Unit], job: Job, jobs: int, on_result: OnResult, on_lost: OnLost
) -> None:
    """Run ``job`` on every unit on ``jobs`` spawned worker processes.

    ``spawn`` (not ``fork``): forking a process whose Rust thread pool
    already exists can deadlock. A worker that dies takes the pool down; the
    units not yet reported are then lost (``on_lost(i, "WorkerDied", …)``).
    """
    ctx = multiprocessing.get_context("spawn")
    chunks = _chunks(units, jobs)
    reported: set[int] = set()
    stop = ctx.Event()
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(chunks)),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(stop,),
    )
    futs: dict[Future[Any], Any] = {pool.submit(_process_chunk, c, job): c for c in chunks}
    try:
        for f in as_completed(futs):
            try:
                results = f.result()
            except BrokenProcessPool as e:
                for i, _unit in futs[f]:
                    if i not in reported:
                        reported.add(i)
                        on_lost(i, "WorkerDied", f"worker process died: {e}")
                continue
            for i, r in results:
                if i not in reported:
                    reported.add(i)
                    on_result(i, r)
    except KeyboardInterrupt:
        stop.set()
        with contextlib.suppress(BrokenProcessPool):
            pool.shutdown(wait=True, cancel_futures=True)
        _report_finished(futs, reported, on_result)
        raise
    finally:
        pool.shutdown(wait=True)


__all__ = ["run_processes", "run_threads"]
