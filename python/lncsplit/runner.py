"""Kept for this turn: the runner moved to :mod:`lncsplit.corpus.runner`; this
module only re-exports it. Import from the new home."""

from __future__ import annotations

from lncsplit.corpus.runner import (
    DEFAULT_LOCAL_EXECUTOR,
    INTERRUPTED,
    Cleanup,
    CorpusReport,
    ExecutorName,
    ProgressFn,
    RunInterrupted,
    resolve_executor,
    resolve_jobs,
    run_units,
)

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
