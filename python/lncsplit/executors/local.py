"""Kept for this turn: moved to :mod:`lncsplit.corpus.executors.local`; this module
only re-exports it. Import from the new home."""

from __future__ import annotations

from lncsplit.corpus.executors.local import run_processes, run_threads

__all__ = ["run_processes", "run_threads"]
