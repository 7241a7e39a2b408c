"""The unit of work every bulk command runs, and the job protocol.

A leaf of the corpus machinery (it imports no other part of it), shared by
:mod:`lncsplit.corpus.discovery` (which makes :class:`Unit` s),
:mod:`lncsplit.corpus.runner` and the executors (which run a job on each unit
and collect :class:`FileResult` s), and the commands (which define jobs).

- A **unit** is one input file, or one split output — a directory holding
  ``nc00.json … nc<N-1>.json`` (kind ``"core_set"``).
- A **job** is a callable ``job(unit) -> FileResult`` that never raises for a
  bad input. It must be picklable for the process and Dask executors: a
  module-level function, or a :func:`functools.partial` of one bound to
  picklable arguments. :func:`guarded` turns a body that raises into such a job.
- :func:`lncsplit.corpus.split_job.process_file` is the job of ``lncsplit split``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from lncsplit.errors import os_error_message

UnitKind = Literal["file", "core_set"]

ErrorInfo = dict[str, Any]
"""``{"type": str, "code": int | str | None, "message": str}`` (contract §5)."""


@dataclass(frozen=True)
class Unit:
    """One unit of work of a bulk command.

    Attributes:
        path: the input file, or the directory of a split output.
        rel: the POSIX name its outputs go under, relative to ``--out``
            (a file ``<root>/<rel>.json``; a split output directory ``<root>/<rel>``).
        kind: ``"file"`` or ``"core_set"``.
        files: a core set's core files in core order (``nc00.json`` first);
            empty for a file.
        error: a problem found by discovery (a malformed core set…): the unit
            is reported failed with it and its job is never called.
        dump_root: a core set found in a compiler dump root (``nc<cc>/sg<k>/``, contract
            §1.7): a core file without ``neuron_core_id`` is given its directory's core.
    """

    path: str
    rel: str
    kind: UnitKind = "file"
    files: tuple[str, ...] = ()
    error: ErrorInfo | None = field(default=None, hash=False)
    dump_root: bool = False

    @property
    def sources(self) -> tuple[str, ...]:
        """Every file the unit reads."""
        return self.files if self.kind == "core_set" else (self.path,)


CorpusInput = Unit
"""The name :func:`lncsplit.process_files` has always taken (``CorpusInput(path, rel)``)."""


@dataclass
class FileResult:
    """The outcome of one unit: one ``files`` entry of the ``--report`` JSON.

    ``input``, ``status``, ``outputs``, ``error`` (``{"type", "code",
    "message"}`` or None), ``instructions_in``, ``instructions_out`` (one
    count per core, core 0 first) and ``seconds`` are the contract's report
    fields (§5); ``detail`` holds command-specific JSON data (a memory report,
    a race report, what was checked…) and is written only when non-empty.
    ``text`` is what the command prints for the unit (a table, a race
    with its witness…); ``bytes_in``/``bytes_out`` feed the summary's
    throughput and ``kind`` (the unit's) its wording. These three are not
    part of the per-file JSON.
    """

    input: str
    status: Literal["ok", "error"] = "ok"
    outputs: list[str] = field(default_factory=list)
    error: ErrorInfo | None = None
    instructions_in: int | None = None
    instructions_out: list[int] = field(default_factory=list)
    seconds: float = 0.0
    bytes_in: int = 0
    bytes_out: int = 0
    detail: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    kind: UnitKind = "file"

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def fail(self, error: ErrorInfo) -> None:
        """Mark the result failed: no outputs, no output counts."""
        self.status = "error"
        self.error = error
        self.outputs = []
        self.instructions_out = []

    def to_json(self) -> dict[str, Any]:
        """The report entry, keys in contract order (``detail`` last, when set)."""
        doc: dict[str, Any] = {
            "input": self.input,
            "status": self.status,
            "outputs": list(self.outputs),
            "error": self.error,
            "instructions_in": self.instructions_in,
            "instructions_out": list(self.instructions_out),
            "seconds": round(self.seconds, 6),
        }
        if self.detail:
            doc["detail"] = self.detail
        return doc


Job = Callable[[Unit], FileResult]
"""A per-unit job: never raises for a bad input; picklable (see the module docstring)."""


def error_info(exc: BaseException) -> ErrorInfo:
    """``{"type", "code", "message"}`` for an exception.

    ``type`` is the class name (``NeuronAssertion``, ``BirJsonError``,
    ``OSError``, …); ``code`` is the error's ``.code`` (an int for
    NeuronAssertion, ``"CFP002"`` for CoreForkPass, the errno for OS errors)
    or None; ``message`` is ``str(exc)`` — for an OS error naming a file, the
    one wording ``PATH: no such file or directory``
    (:func:`lncsplit.errors.os_error_message`).
    """
    code = getattr(exc, "code", None)
    message = str(exc)
    if isinstance(exc, OSError):
        code = exc.errno if code is None else code
        message = os_error_message(exc)
    if code is not None and not isinstance(code, (int, str)):
        code = str(code)
    return {"type": type(exc).__name__, "code": code, "message": message or repr(exc)}


def failed_result(
    unit: Unit, exc_type: str, message: str, code: int | str | None = None
) -> FileResult:
    """An error entry for a unit that never produced a result of its own.

    Used for discovery errors and for units an executor lost (a dead worker:
    ``exc_type="WorkerDied"``).
    """
    res = FileResult(input=unit.path, kind=unit.kind)
    res.fail({"type": exc_type, "code": code, "message": message})
    return res


def guarded(unit: Unit, body: Callable[[FileResult], None]) -> FileResult:
    """Run ``body(result)`` for ``unit``, timed; an exception becomes the result's error.

    The shape of every job but the split's: ``body`` fills ``outputs``,
    ``detail``… of the fresh result and raises on failure. Only
    ``KeyboardInterrupt``/``SystemExit`` propagate.
    """
    t0 = time.perf_counter()
    res = FileResult(input=unit.path, kind=unit.kind)
    try:
        body(res)
    except Exception as e:  # noqa: BLE001 - a failed unit never stops the run
        res.fail(error_info(e))
    res.seconds = time.perf_counter() - t0
    return res


def call_job(job: Job, unit: Unit) -> FileResult:
    """What every executor calls: a discovery error short-cuts the job, and a
    job that breaks its never-raises promise still yields an error entry."""
    if unit.error is not None:
        return failed_result(
            unit, str(unit.error["type"]), str(unit.error["message"]), unit.error.get("code")
        )
    try:
        return job(unit)
    except Exception as e:  # noqa: BLE001
        info = error_info(e)
        return failed_result(unit, info["type"], info["message"], info["code"])


__all__ = [
    "CorpusInput",
    "ErrorInfo",
    "FileResult",
    "Job",
    "Unit",
    "UnitKind",
    "call_job",
    "error_info",
    "failed_result",
    "guarded",
]
