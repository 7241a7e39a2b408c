"""Executors for :func:`lncsplit.corpus.runner.run_units`: local threads/processes and Dask.

Each runs the job it is given (``job(unit) -> FileResult``, through
:func:`lncsplit.corpus.unit.call_job`) on every unit and reports each finished unit
through ``on_result(index, FileResult)``; the runner puts the results back in
input order. A unit whose worker died is reported through
``on_lost(index, error_type, message)`` instead. Executors import only the
leaf :mod:`lncsplit.corpus.unit` (and :mod:`lncsplit._inputs`), never the
runner, the split job or the commands.
"""

from __future__ import annotations

from collections.abc import Callable

from lncsplit.corpus.unit import FileResult

OnResult = Callable[[int, FileResult], None]
OnLost = Callable[[int, str, str], None]

__all__ = ["OnLost", "OnResult"]
