"""Kept for this turn: moved to :mod:`lncsplit.corpus.executors.dask`; this module
only re-exports it (a job pickled for a worker names the new home). Import from
the new home."""

from __future__ import annotations

from lncsplit.corpus.executors.dask import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CONNECT_TIMEOUT_S,
    MissingDependencyError,
    SchedulerError,
    batch_items,
    process_batch,
    run_dask,
)

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "MissingDependencyError",
    "SchedulerError",
    "batch_items",
    "process_batch",
    "run_dask",
]
