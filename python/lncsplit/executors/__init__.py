"""Kept for this turn: the executors moved to :mod:`lncsplit.corpus.executors`
(``local``, ``dask``); this package and its two modules only re-export them.
Import from the new home."""

from __future__ import annotations

from lncsplit.corpus.executors import OnLost, OnResult

__all__ = ["OnLost", "OnResult"]
