"""Local executors: a thread pool, or a pool of spawned worker processes.

Threads work because the heavy steps release the GIL: file reads and writes
(``os.write``/``fsync``), JSON parse and serialization, the passes (Rust,
inside ``py.detach``). Processes avoid the GIL entirely at the cost of a
spawn (~0.3 s per worker: a fresh interpreter importing lncsplit) and
pickling each result. docs/cli.md has the measured comparison that picks
:data:`lncsplit.corpus.DEFAULT_LOCAL_EXECUTOR`.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from lncsplit.corpus import CorpusInput, FileResult, failed_result, process_file
from lncsplit.executors import OnResult
from lncsplit.pipeline import PassOptions


def run_threads(
    items: list[CorpusInput], out: str, options: PassOptions, jobs: int, on_result: OnResult
) -> None:
    """Run every file on a pool of ``jobs`` threads (inline when ``jobs == 1``)."""
    if jobs <= 1 or len(items) == 1:
        for i, inp in enumerate(items):
            on_result(i, process_file(inp, out, options))
        return
    with ThreadPoolExecutor(
        max_workers=min(jobs, len(items)), thread_name_prefix="lncsplit"
    ) as pool:
        futs = {pool.submit(process_file, inp, out, options): i for i, inp in enumerate(items)}
        # as_completed waits on every future once; a wait(FIRST_COMPLETED) loop
        # re-arms a waiter on all pending futures per result (quadratic, with
        # the GIL held while the workers want it).
        for f in as_completed(futs):
            on_result(futs[f], f.result())


def _process_chunk(
    chunk: list[tuple[int, CorpusInput]], out: str, options: PassOptions
) -> list[tuple[int, FileResult]]:
    return [(i, process_file(inp, out, options)) for i, inp in chunk]


def _chunks(items: list[CorpusInput], jobs: int) -> list[list[tuple[int, CorpusInput]]]:
    # Small chunks keep the pool balanced; a few per worker amortize the IPC.
    size = max(1, min(8, len(items) // (jobs * 4)))
    indexed = list(enumerate(items))
    return [indexed[k : k + size] for k in range(0, len(indexed), size)]


def run_processes(
    items: list[CorpusInput], out: str, options: PassOptions, jobs: int, on_result: OnResult
) -> None:
    """Run every file on ``jobs`` spawned worker processes.

    ``spawn`` (not ``fork``): forking a process whose Rust thread pool
    already exists can deadlock. A worker that dies takes the pool down; the
    files not yet reported are then reported as errors (``WorkerDied``).
    """
    ctx = multiprocessing.get_context("spawn")
    chunks = _chunks(items, jobs)
    reported: set[int] = set()
    with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=ctx) as pool:
        futs = {pool.submit(_process_chunk, c, out, options): c for c in chunks}
        for f in as_completed(futs):
            try:
                results = f.result()
            except BrokenProcessPool as e:
                results = [
                    (i, failed_result(inp, "WorkerDied", f"worker process died: {e}", out))
                    for i, inp in futs[f]
                ]
            for i, r in results:
                if i not in reported:
                    reported.add(i)
                    on_result(i, r)


__all__ = ["run_processes", "run_threads"]
