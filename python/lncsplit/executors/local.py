"""Local executors: a thread pool, or a pool of spawned worker processes.

Threads work because the heavy steps release the GIL: file reads and writes
(``os.write``/``fsync``), JSON parse and serialization, the passes (Rust,
inside ``py.detach``). Processes avoid the GIL entirely at the cost of a
spawn (~0.3 s per worker: a fresh interpreter importing lncsplit) and
pickling the job and each result. docs/cli.md has the measured comparison
that picks :data:`lncsplit.runner.DEFAULT_LOCAL_EXECUTOR`.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from lncsplit._job import FileResult, Job, Unit, call_job
from lncsplit.executors import OnLost, OnResult


def run_threads(units: list[Unit], job: Job, jobs: int, on_result: OnResult) -> None:
    """Run ``job`` on every unit on a pool of ``jobs`` threads (inline when ``jobs == 1``)."""
    if jobs <= 1 or len(units) == 1:
        for i, unit in enumerate(units):
            on_result(i, call_job(job, unit))
        return
    with ThreadPoolExecutor(
        max_workers=min(jobs, len(units)), thread_name_prefix="lncsplit"
    ) as pool:
        futs = {pool.submit(call_job, job, unit): i for i, unit in enumerate(units)}
        # as_completed waits on every future once; a wait(FIRST_COMPLETED) loop
        # re-arms a waiter on all pending futures per result (quadratic, with
        # the GIL held while the workers want it).
        for f in as_completed(futs):
            on_result(futs[f], f.result())


def _process_chunk(chunk: list[tuple[int, Unit]], job: Job) -> list[tuple[int, FileResult]]:
    return [(i, call_job(job, unit)) for i, unit in chunk]


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
    with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=ctx) as pool:
        futs = {pool.submit(_process_chunk, c, job): c for c in chunks}
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


__all__ = ["run_processes", "run_threads"]
