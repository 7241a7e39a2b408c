"""The Dask executor: the same per-file job over a Dask cluster.

Needs the optional extra ``pip install 'lncsplit[dask]'`` (``distributed`` is
imported lazily, on first use). Design:

- Files are **batched** — up to 200 per task by default (``batch_size``),
  fewer when the corpus is small so every worker thread gets at least two
  tasks. Per-task overhead in ``distributed`` is ~1 ms, so one task per file
  would dominate on small modules.
- Each task runs :func:`process_batch` on a worker: it reads the inputs and
  writes the outputs itself, so ``out`` (and the inputs) must be on a
  filesystem every worker sees. Only the small per-file results travel back.
- Results are **streamed** into the report with ``as_completed`` as batches
  finish (the progress callback fires per file of each finished batch).
- **A worker that dies mid-run**: every file of the lost batch is retried
  once, as a task of its own, one retry task at a time (a dying worker fails
  every task queued on it, so concurrent retries could sink an innocent
  neighbour); a file whose retry is lost too is reported as an error of type
  ``WorkerDied``. Retries run while the other batches continue. Note that the scheduler's own
  ``distributed.scheduler.allowed-failures`` (default 3) re-runs a task whose
  worker died before the client ever sees a failure; lncsplit's single retry
  comes on top of it.
- Each file runs with ``PassOptions(parallel=False)``: one Rust thread per
  task, so a worker's threads are not oversubscribed.

Test hook (test-only): when ``LNCSPLIT_TEST_CRASH_ON`` is set in the
environment of the process that calls :func:`run_dask`, it is forwarded to
the tasks, and a worker about to process a file whose path contains that
string calls ``os._exit(1)``. With ``LNCSPLIT_TEST_CRASH_MARKER`` also set
(a path), it crashes only while that marker file does not exist, creating it
first (so the retry succeeds); without a marker it crashes every time (so the
retry fails too and the file is reported as an error).
"""

from __future__ import annotations

import math
import os
from collections import deque
from typing import Any

from lncsplit.corpus import CorpusInput, FileResult, failed_result, process_file
from lncsplit.errors import LncsplitError
from lncsplit.executors import OnResult
from lncsplit.pipeline import PassOptions

#: Default maximum number of files per Dask task.
DEFAULT_BATCH_SIZE = 200


class MissingDependencyError(LncsplitError, ImportError):
    """An optional dependency (the ``dask`` extra) is not installed."""


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as e:
        raise MissingDependencyError(
            "the dask executor needs the optional dependencies: pip install 'lncsplit[dask]'"
        ) from e
    return distributed


CrashHook = tuple[str, str | None]


def _crash_hook_from_env() -> CrashHook | None:
    needle = os.environ.get("LNCSPLIT_TEST_CRASH_ON")
    if not needle:
        return None
    return (needle, os.environ.get("LNCSPLIT_TEST_CRASH_MARKER") or None)


def _maybe_crash(path: str, hook: CrashHook | None) -> None:
    if hook is None or hook[0] not in path:
        return
    marker = hook[1]
    if marker:
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return
        os.close(fd)
    os._exit(1)


def process_batch(
    batch: list[tuple[int, str, str]],
    out: str,
    options: PassOptions,
    crash_hook: CrashHook | None = None,
) -> list[tuple[int, FileResult]]:
    """Run :func:`~lncsplit.corpus.process_file` on ``(index, path, rel)`` items.

    This is the function every Dask task executes; it never raises for a
    bad input. ``crash_hook`` is the test-only hook of the module docstring.
    """
    results: list[tuple[int, FileResult]] = []
    for i, path, rel in batch:
        _maybe_crash(path, crash_hook)
        results.append((i, process_file(CorpusInput(path, rel), out, options)))
    return results


def batch_items(
    items: list[CorpusInput], batch_size: int | None, workers: int
) -> list[list[tuple[int, str, str]]]:
    """Split the inputs into batches of ``(index, path, rel)``."""
    if batch_size is None:
        size = max(1, min(DEFAULT_BATCH_SIZE, math.ceil(len(items) / max(1, 2 * workers))))
    else:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        size = batch_size
    flat = [(i, it.path, it.rel) for i, it in enumerate(items)]
    return [flat[k : k + size] for k in range(0, len(flat), size)]


#: How long a run waits for the first Dask worker before giving up.
WORKER_START_TIMEOUT_S = 120.0


def run_dask(
    items: list[CorpusInput],
    out: str,
    options: PassOptions,
    jobs: int,
    scheduler: Any,
    on_result: OnResult,
    batch_size: int | None = None,
) -> None:
    """Run every file over a Dask cluster, streaming batch results.

    ``scheduler`` is a scheduler address (``"tcp://host:8786"``), an existing
    ``distributed.Client``, or None to start a ``LocalCluster`` of ``jobs``
    single-threaded worker processes for this run.
    """
    distributed = _import_distributed()
    from dataclasses import replace

    options = replace(options, parallel=False)
    out = os.path.abspath(out)
    items = [CorpusInput(os.path.abspath(it.path), it.rel) for it in items]
    cluster = None
    own_client = False
    if isinstance(scheduler, distributed.Client):
        client = scheduler
    else:
        if scheduler is None:
            cluster = distributed.LocalCluster(
                n_workers=max(1, jobs), threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = distributed.Client(cluster)
        else:
            client = distributed.Client(scheduler)
        own_client = True
    try:
        # A cluster whose workers cannot start would otherwise leave the run
        # waiting forever: fail clearly instead.
        client.wait_for_workers(1, timeout=WORKER_START_TIMEOUT_S)
        nthreads = sum(client.nthreads().values()) or 1
        batches = batch_items(items, batch_size, nthreads)
        _run(distributed, client, batches, items, out, options, on_result)
    finally:
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()


def _run(
    distributed: Any,
    client: Any,
    batches: list[list[tuple[int, str, str]]],
    items: list[CorpusInput],
    out: str,
    options: PassOptions,
    on_result: OnResult,
) -> None:
    hook = _crash_hook_from_env()
    # future -> (batch, is_retry)
    meta: dict[Any, tuple[list[tuple[int, str, str]], bool]] = {}
    futures = []
    for b in batches:
        f = client.submit(process_batch, b, out, options, hook, pure=False)
        meta[f] = (b, False)
        futures.append(f)
    ac = distributed.as_completed(futures)
    retry_queue: deque[tuple[int, str, str]] = deque()
    retry_in_flight = False

    def next_retry() -> None:
        # One retry task at a time: a file that kills its worker again cannot
        # take a neighbour's retry down with it (a dead worker fails every task
        # queued on it).
        nonlocal retry_in_flight
        if retry_in_flight or not retry_queue:
            return
        item = retry_queue.popleft()
        g = client.submit(process_batch, [item], out, options, hook, pure=False)
        meta[g] = ([item], True)
        ac.add(g)
        retry_in_flight = True

    for fut in ac:
        batch, retried = meta.pop(fut)
        if retried:
            retry_in_flight = False
        try:
            results = fut.result()
        except Exception as e:  # noqa: BLE001 - the task was lost (its worker died)
            if not retried:
                retry_queue.extend(batch)
                results = []
            else:
                results = [
                    (
                        i,
                        failed_result(
                            items[i],
                            "WorkerDied",
                            "the worker died while processing this file, and again on the retry "
                            f"({type(e).__name__}: {e})",
                            out,
                        ),
                    )
                    for i, _p, _r in batch
                ]
        finally:
            fut.release()
        for i, r in results:
            on_result(i, r)
        next_retry()


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "MissingDependencyError",
    "batch_items",
    "process_batch",
    "run_dask",
]
