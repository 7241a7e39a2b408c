"""Kept for this turn: the former home of the unit, the job protocol and the split job.

``lncsplit._job`` was split by subsystem (docs/cli.md): reading inputs is
:mod:`lncsplit._inputs`; :class:`Unit`, :class:`FileResult` and the job
protocol are :mod:`lncsplit.corpus.unit`; :func:`process_file` and
:func:`set_phase_hook` are :mod:`lncsplit.corpus.split_job`. This module only
re-exports them (a value assigned here, such as ``PHASE_REPORT_AFTER``, does
not reach the new home); import from the new homes.
"""

from __future__ import annotations

from lncsplit._inputs import (
    HLO_SUFFIXES,
    InputError,
    file_kind,
    input_stem,
    load_input,
    not_regular_message,
    prefetch,
    read_input,
    strip_json,
    with_input,
)
from lncsplit.corpus.split_job import (
    PHASE_REPORT_AFTER,
    PhaseHook,
    output_dir,
    process_file,
    remove_unit_outputs,
    set_phase_hook,
)
from lncsplit.corpus.unit import (
    CorpusInput,
    ErrorInfo,
    FileResult,
    Job,
    Unit,
    UnitKind,
    call_job,
    error_info,
    failed_result,
    guarded,
)
from lncsplit.limits import DEFAULT_MAX_FILE_SIZE

__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
    "HLO_SUFFIXES",
    "PHASE_REPORT_AFTER",
    "CorpusInput",
    "ErrorInfo",
    "InputError",
    "FileResult",
    "Job",
    "PhaseHook",
    "Unit",
    "UnitKind",
    "call_job",
    "error_info",
    "failed_result",
    "file_kind",
    "guarded",
    "input_stem",
    "load_input",
    "not_regular_message",
    "output_dir",
    "prefetch",
    "process_file",
    "read_input",
    "remove_unit_outputs",
    "set_phase_hook",
    "strip_json",
    "with_input",
]
