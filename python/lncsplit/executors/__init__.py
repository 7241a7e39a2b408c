"""Executors for :func:`lncsplit.process_files`: local threads/processes and Dask.

Each runs the same per-file job (:func:`lncsplit.corpus.process_file`) and
reports every finished file through ``on_result(index, FileResult)``; the
caller puts the results back in input order.
"""

from __future__ import annotations

from collections.abc import Callable

from lncsplit.corpus import FileResult

OnResult = Callable[[int, FileResult], None]

__all__ = ["OnResult"]
