"""The Dask executor: the same per-unit job over a Dask cluster.

Needs the optional extra ``pip install 'lncsplit[dask]'`` (``distributed`` is
imported lazily, on first use). Design:

- Units are **batched** — up to 200 per task by default (``batch_size``),
  fewer when the run is small so every worker thread gets at least two
  tasks. Per-task overhead in ``distributed`` is ~1 ms, so one task per unit
  would dominate on small modules.
- Each task runs :func:`process_batch` on a worker: the job reads the inputs
  and writes the outputs itself, so the inputs and any output directory must
  be on a filesystem every worker sees. Only the small per-unit results travel
  back. The job is pickled with each task (a module-level function or a
  ``functools.partial``).
- **Paths stay as the user named them**: units and the job's paths are not
  rewritten, so every executor writes the same files and prints the same
  text. They are resolved in the client's working directory, so the workers
  must run in it (every ``LocalCluster`` does): a run checks each worker's
  directory first (``client.run(os.getcwd)``) and a worker elsewhere is a
  :class:`SchedulerError` naming both directories; a worker that joins later
  in another directory fails its batch's units with that message
  (``WrongDirectory``) instead of reading or writing other files.
- Results are **streamed** into the report with ``as_completed`` as batches
  finish (the progress callback fires per unit of each finished batch).
- **A worker that dies mid-run**: every unit of the lost batch is retried
  once, as a task of its own, one retry task at a time (a dying worker fails
  every task queued on it, so concurrent retries could sink an innocent
  neighbour); a unit whose retry is lost too is reported lost
  (``on_lost(i, "WorkerDied", …)``). Retries run while the other batches
  continue. Note that the scheduler's own
  ``distributed.scheduler.allowed-failures`` (default 3) re-runs a task whose
  worker died before the client ever sees a failure; lncsplit's single retry
  comes on top of it.
- The caller runs split jobs with ``PassOptions(parallel=False)`` (see
  :func:`lncsplit.corpus.effective_options`): one Rust thread per task, so a
  worker's threads are not oversubscribed.
"""

from __future__ import annotations

import logging
import math
import os
from collections import deque
from typing import Any

from lncsplit._atomic import durable, durable_in_this_thread
from lncsplit.corpus.executors import OnLost, OnResult
from lncsplit.corpus.unit import FileResult, Job, Unit, call_job, failed_result
from lncsplit.errors import LncsplitError

#: Default maximum number of files per Dask task.
DEFAULT_BATCH_SIZE = 200


class MissingDependencyError(LncsplitError, ImportError):
    """An optional dependency (the ``dask`` extra) is not installed."""


class SchedulerError(LncsplitError, ValueError):
    """The Dask scheduler cannot be reached (a usage error: one line, exit 2)."""


#: Default seconds to wait for a ``--scheduler`` (``--connect-timeout``).
DEFAULT_CONNECT_TIMEOUT_S = 10.0


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as e:
        raise MissingDependencyError(
            "the dask executor needs the optional dependencies: pip install 'lncsplit[dask]'"
        ) from e
    return distributed


Batch = list[tuple[int, Unit]]


def process_batch(
    batch: Batch, job: Job, fsync: bool = False, cwd: str | None = None
) -> list[tuple[int, FileResult]]:
    """Run ``job`` on ``(index, unit)`` items: the function every Dask task executes.
    ``fsync``: the client's ``--fsync`` (workers do not share its environment); it holds
    for this batch's thread only, so other runs' tasks on a long-lived worker keep theirs.
    ``cwd``: the client's working directory, where the units' paths are resolved; a worker
    running elsewhere fails every unit of the batch (``WrongDirectory``) without running it."""
    wrong = None if cwd is None else wrong_directory(cwd)
    if wrong is not None:
        return [(i, failed_result(unit, "WrongDirectory", wrong)) for i, unit in batch]
    with durable_in_this_thread(fsync):
        return [(i, call_job(job, unit)) for i, unit in batch]


def wrong_directory(cwd: str, worker: str = "this Dask worker") -> str | None:
    """Why a worker running here cannot run the units of a client running in ``cwd``
    (None when this is that directory)."""
    here = os.getcwd()
    if here == cwd or os.path.realpath(here) == os.path.realpath(cwd):
        return None
    return (
        f"{worker} runs in {here}, not in {cwd}, where lncsplit runs: paths are resolved in "
        f"that directory, so start the workers in {cwd} (on a filesystem they share)"
    )


def batch_items(units: list[Unit], batch_size: int | None, workers: int) -> list[Batch]:
    """Split the units into batches of ``(index, unit)``."""
    if batch_size is None:
        size = max(1, min(DEFAULT_BATCH_SIZE, math.ceil(len(units) / max(1, 2 * workers))))
    else:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        size = batch_size
    flat = list(enumerate(units))
    return [flat[k : k + size] for k in range(0, len(flat), size)]


#: How long a run waits for the first Dask worker before giving up.
WORKER_START_TIMEOUT_S = 120.0


def run_dask(
    units: list[Unit],
    job: Job,
    jobs: int,
    scheduler: Any,
    on_result: OnResult,
    on_lost: OnLost,
    batch_size: int | None = None,
    connect_timeout: float | None = None,
) -> None:
    """Run ``job`` on every unit over a Dask cluster, streaming batch results.

    ``scheduler`` is a scheduler address (``"tcp://host:8786"``), an existing
    ``distributed.Client``, or None to start a ``LocalCluster`` of ``jobs``
    single-threaded worker processes for this run. An address that does not
    answer within ``connect_timeout`` seconds (default 10) is a
    :class:`SchedulerError`. On Ctrl-C the batches not finished are
    cancelled (a batch already running on a worker still writes whole files
    or none) and ``KeyboardInterrupt`` is re-raised.
    """
    distributed = _import_distributed()
    cluster = None
    own_client = False
    if isinstance(scheduler, distributed.Client):
        client = scheduler
    else:
        if scheduler is None:
            # No dashboard (no "Port 8787 is already in use"), and Dask's own log lines stay
            # off the user's terminal: a worker slow to stop ("killing", a WARNING) or a
            # heartbeat that meets the closing scheduler (an ERROR with a traceback) are
            # teardown noise; what happens to each unit lncsplit reports itself (WorkerDied…).
            cluster = distributed.LocalCluster(
                n_workers=max(1, jobs),
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
            )
            client = distributed.Client(cluster)
        else:
            client = _connect(distributed, scheduler, connect_timeout)
        own_client = True
    try:
        # A cluster whose workers cannot start would otherwise leave the run
        # waiting forever: fail clearly instead.
        client.wait_for_workers(1, timeout=WORKER_START_TIMEOUT_S)
        _check_directories(client)
        nthreads = sum(client.nthreads().values()) or 1
        batches = batch_items(units, batch_size, nthreads)
        _DaskRun(distributed, client, job, on_result, on_lost).run(batches)
    finally:
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()


def _check_directories(client: Any) -> None:
    """Every worker runs in this client's working directory, or the run is a usage error."""
    here = os.getcwd()
    answers = client.run(wrong_directory, here)  # worker address -> reason or None
    for worker, reason in sorted(answers.items()):
        if reason is not None:
            raise SchedulerError(reason.replace("this Dask worker", f"the Dask worker {worker}", 1))


def _connect(distributed: Any, address: Any, timeout: float | None) -> Any:
    seconds = DEFAULT_CONNECT_TIMEOUT_S if timeout is None else timeout
    try:
        return distributed.Client(address, timeout=seconds)
    except Exception as e:  # noqa: BLE001 - OSError, TimeoutError, a bad address: one line
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SchedulerError(
            f"cannot connect to the Dask scheduler {address} within {seconds:g} s: {reason}"
        ) from None


class _DaskRun:
    """One run's futures: first-time batches, then single-unit retries one at a time."""

    def __init__(
        self, distributed: Any, client: Any, job: Job, on_result: OnResult, on_lost: OnLost
    ) -> None:
        self.distributed = distributed
        self.client = client
        self.job = job
        self.on_result = on_result
        self.on_lost = on_lost
        self.meta: dict[Any, tuple[Batch, bool]] = {}  # future -> (batch, is_retry)
        self.retry_queue: deque[tuple[int, Unit]] = deque()
        self.retry_in_flight = False
        self.ac: Any = None
        self.cwd = os.getcwd()

    def _submit(self, batch: Batch, retry: bool) -> Any:
        f = self.client.submit(process_batch, batch, self.job, durable(), self.cwd, pure=False)
        self.meta[f] = (batch, retry)
        return f

    def run(self, batches: list[Batch]) -> None:
        self.ac = self.distributed.as_completed([self._submit(b, False) for b in batches])
        try:
            self._collect()
        except KeyboardInterrupt:
            self.client.cancel(list(self.meta))
            raise

    def _collect(self) -> None:
        for fut in self.ac:
            batch, retried = self.meta.pop(fut)
            if retried:
                self.retry_in_flight = False
            try:
                results = fut.result()
            except Exception as e:  # noqa: BLE001 - the task was lost (its worker died)
                results = []
                self._lost(batch, retried, e)
            finally:
                fut.release()
            for i, r in results:
                self.on_result(i, r)
            self._next_retry()

    def _lost(self, batch: Batch, retried: bool, e: Exception) -> None:
        if not retried:
            self.retry_queue.extend(batch)
            return
        for i, _unit in batch:
            self.on_lost(
                i,
                "WorkerDied",
                "the worker died while processing this input, and again on the retry "
                f"({type(e).__name__}: {e})",
            )

    def _next_retry(self) -> None:
        # One retry task at a time: a unit that kills its worker again cannot
        # take a neighbour's retry down with it (a dead worker fails every task
        # queued on it).
        if self.retry_in_flight or not self.retry_queue:
            return
        self.ac.add(self._submit([self.retry_queue.popleft()], True))
        self.retry_in_flight = True


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "MissingDependencyError",
    "SchedulerError",
    "batch_items",
    "process_batch",
    "run_dask",
    "wrong_directory",
]
