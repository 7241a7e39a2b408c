"""Jobs for the executor tests: one that kills its worker, one that breaks the never-raise rule.

Module-level functions (picklable), bound with ``functools.partial``. They
replace the crash hook the executors used to carry in production code.
"""

from __future__ import annotations

import os

from lncsplit.corpus.split_job import process_file
from lncsplit.corpus.unit import FileResult, Unit
from lncsplit.pipeline import PassOptions


def _first_time(marker: str) -> bool:
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def crash_then_split(
    unit: Unit, *, needle: str, marker: str | None, out: str, options: PassOptions
) -> FileResult:
    """The split job, except that a worker about to process a path containing
    ``needle`` dies (``os._exit(1)``): every time without ``marker``, else only
    while the marker file does not exist yet (created first, so the retry passes)."""
    if needle in unit.path and (marker is None or _first_time(marker)):
        os._exit(1)
    return process_file(unit, out, options)


def raising_job(unit: Unit) -> FileResult:
    """A job that raises instead of returning an error entry."""
    raise RuntimeError(f"job broke on {unit.path}")
