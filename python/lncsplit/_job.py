"""The unit of work every bulk command runs, and the split's per-file job.

A leaf module (it imports no other part of the corpus machinery), shared by
:mod:`lncsplit.discovery` (which makes :class:`Unit` s), :mod:`lncsplit.runner`
and the executors (which run a job on each unit and collect
:class:`FileResult` s), and the commands (which define jobs).

- A **unit** is one input file, or one split output — a directory holding
  ``nc00.json … nc<N-1>.json`` (kind ``"core_set"``).
- A **job** is a callable ``job(unit) -> FileResult`` that never raises for a
  bad input. It must be picklable for the process and Dask executors: a
  module-level function, or a :func:`functools.partial` of one bound to
  picklable arguments. :func:`guarded` turns a body that raises into such a job.
- :func:`process_file` is the job of ``lncsplit split``.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from lncsplit._atomic import LINKED_FILE, remove_dirs, remove_outputs, write_core_files
from lncsplit.errors import LncsplitError
from lncsplit.limits import DEFAULT_MAX_FILE_SIZE

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.pipeline import PassOptions

UnitKind = Literal["file", "core_set"]
T = TypeVar("T")


class InputError(LncsplitError):
    """An input path that is not read (contract §6): missing, not a regular
    file (a FIFO, socket or device), larger than ``--max-file-size``, or a
    symbolic link that leads out of the inputs. The message names the path."""


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
    """

    path: str
    rel: str
    kind: UnitKind = "file"
    files: tuple[str, ...] = ()
    error: ErrorInfo | None = field(default=None, hash=False)

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
    or None; ``message`` is ``str(exc)``.
    """
    code = getattr(exc, "code", None)
    if code is None and isinstance(exc, OSError):
        code = exc.errno
    if code is not None and not isinstance(code, (int, str)):
        code = str(code)
    return {"type": type(exc).__name__, "code": code, "message": str(exc) or repr(exc)}


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


# ----------------------------------------------------------------------------- the split job


def strip_json(name: str) -> str:
    """``m.json`` → ``m`` (case-insensitive); other names unchanged."""
    return name[:-5] if name.lower().endswith(".json") and len(name) > 5 else name


#: Explicitly named inputs read as HLO text and lowered first (contract §5). The same as
#: ``lncsplit.frontend.HLO_SUFFIXES`` (a test checks it): this leaf module does not import the
#: front end until it reads such a file.
HLO_SUFFIXES = (".hlo.txt", ".hlo")


def input_stem(name: str) -> str:
    """The output name of an explicitly named input: ``m.json``, ``m.hlo``, ``m.hlo.txt`` → ``m``."""
    low = name.lower()
    for suffix in HLO_SUFFIXES:
        if low.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return strip_json(name)


def output_dir(out: str | os.PathLike[str], rel: str) -> str:
    """``OUT/<rel>`` for a unit's relative name."""
    return os.path.join(os.fspath(out), *rel.split("/"))


def remove_unit_outputs(unit: Unit, out: str) -> None:
    """Remove what the split job may have written for ``unit`` (a lost unit's cleanup)."""
    remove_outputs(output_dir(out, unit.rel))


def process_file(
    inp: Unit | str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: PassOptions,
    detail: bool = False,
) -> FileResult:
    """The split job for one file: read → pipeline → artifact directories → every core.

    A ``*.hlo``/``*.hlo.txt`` file is HLO text, lowered first (``lower_hlo_text`` with N =
    ``options.lnc_size``). With ``detail`` the result's ``detail`` lists, per core, the
    instructions the split pruned and the dependency edges dropped with them
    (``--report-detail``). Never raises for a bad input: the error is returned in the result
    (``status="error"``) and no output of the file remains. Only
    ``KeyboardInterrupt``/``SystemExit`` propagate, after removing what this
    file had written (contract §6: whole files or none).

    With ``options.create_artifact_dirs``, each core's ``artifact_path`` is
    created under ``options.artifact_root`` (default: ``out``), after the
    pipeline succeeded and before the cores are written (contract §3.1, §6).
    """
    if not isinstance(inp, Unit):
        inp = Unit(os.fspath(inp), input_stem(PurePath(inp).name))
    t0 = time.perf_counter()
    res = FileResult(input=inp.path)
    dest = output_dir(out, inp.rel)
    created: list[str] = []
    try:
        _split_into(res, inp.path, _Dest(dest, os.fspath(out), created), options, detail)
    except Exception as e:  # noqa: BLE001 - a failed file never stops the run
        remove_dirs(created)
        remove_outputs(dest)
        res.fail(error_info(e))
    except BaseException:
        remove_dirs(created)
        raise
    res.seconds = time.perf_counter() - t0
    return res


PhaseHook = Callable[[str, str, float], None]
"""``hook(path, phase, seconds)``: the split of ``path`` entered ``phase``
(``"load"``, ``"passes"``, ``"write"``) ``seconds`` after it started."""

#: Seconds a file's split runs before its phases are reported.
PHASE_REPORT_AFTER = 1.0

_phase_hook: PhaseHook | None = None


def set_phase_hook(hook: PhaseHook | None) -> None:
    """Report the phases of every split that takes over
    :data:`PHASE_REPORT_AFTER` seconds to ``hook`` (None: stop). In-process
    executors only (a worker process has its own hook)."""
    global _phase_hook
    _phase_hook = hook


class _Phases:
    """Times the phases of one file's split; reports the slow ones."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.t0 = self.last = time.perf_counter()
        self.current = ""
        self.seconds: dict[str, float] = {}

    def enter(self, phase: str) -> None:
        now = time.perf_counter()
        if self.current:
            self.seconds[self.current] = round(now - self.last, 6)
        self.current, self.last = phase, now
        hook = _phase_hook
        if hook is not None and phase and now - self.t0 > PHASE_REPORT_AFTER:
            hook(self.path, phase, now - self.t0)

    def finish(self, res: FileResult) -> None:
        """Close the last phase; a slow file keeps its phase times in ``detail``."""
        self.enter("")
        if time.perf_counter() - self.t0 > PHASE_REPORT_AFTER:
            res.detail["phases"] = self.seconds


def _open_regular(path: str) -> tuple[int, int]:
    """Open an input that must be a regular file: ``(fd, size)``, blocking reads.

    Opened non-blocking and checked with ``fstat`` before reading, so a FIFO
    or a device that replaced the file after discovery is refused without
    blocking (contract §6). The caller closes ``fd``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(not_regular_message(path, st.st_mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_input(path: str) -> bytes:
    """The bytes of an input file, which must be a regular file (see :func:`_open_regular`)."""
    fd, _size = _open_regular(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


class _ReadBuffer(threading.local):
    """The calling thread's input buffer, reused from file to file: a corpus
    job reads each file with one ``read`` into memory already faulted in,
    instead of a fresh ``bytes`` object per file."""

    def __init__(self) -> None:
        # Runs once in every thread that touches the object.
        self.data = bytearray()


_buffer = _ReadBuffer()

#: A buffer grown past this for one big input is not kept for the next one.
KEEP_READ_BUFFER = 64 << 20


def _read_into(fd: int, size: int, buf: bytearray) -> int:
    """Read the whole file into ``buf`` (grown as needed); returns its length.

    Asks for one byte more than ``size``: a regular file that did not change
    since ``fstat`` is read with one system call (the short count is its end).
    """
    n = 0
    want = size + 1
    while True:
        if len(buf) < n + want:
            buf.extend(bytes(n + want - len(buf)))
        with memoryview(buf) as view:
            got = os.readv(fd, [view[n : n + want]])
        n += got
        if got < want:
            return n
        want = max(want, 1 << 20)  # the file grew since fstat: read on


def _read_bytes(fd: int, size: int) -> bytes:
    """The whole file as one fresh ``bytes`` (asks for one byte more than
    ``size``, as :func:`_read_into` does; a file that grew is read on)."""
    parts = []
    want = size + 1
    while True:
        got = os.read(fd, want)
        parts.append(got)
        if len(got) < want:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        want = max(want, 1 << 20)


def with_input(path: str, fn: Callable[[memoryview | bytes], T]) -> tuple[T, int]:
    """``fn`` of an input file's bytes (a regular file only): ``(result, size)``.

    The bytes are a view into this thread's reused read buffer, valid only
    while ``fn`` runs (``Module.from_json`` copies what it keeps). A file
    too big for the reused buffer (:data:`KEEP_READ_BUFFER`) is read into
    one fresh ``bytes`` instead, which ``Module.from_json`` parses in place:
    one buffer the kernel fills, where the reused path would zero a fresh
    bytearray and then copy it into Rust (measured on a 100 MB module:
    ``lncsplit info`` 0.60 s → 0.48 s against ``lncsplit.load``'s 0.44 s).
    """
    fd, size = _open_regular(path)
    if size >= KEEP_READ_BUFFER:
        try:
            whole = _read_bytes(fd, size)
        finally:
            os.close(fd)
        return fn(whole), len(whole)
    buf = _buffer.data
    try:
        n = _read_into(fd, size, buf)
    finally:
        os.close(fd)
    try:
        with memoryview(buf) as view, view[:n] as data:
            return fn(data), n
    finally:
        if len(buf) > KEEP_READ_BUFFER:
            _buffer.data = bytearray()


def prefetch(path: str) -> None:
    """Ask the kernel to start reading ``path`` now (``POSIX_FADV_WILLNEED``):
    the runner calls it for the next unit while this one is split, so a file
    not yet in the page cache is read from disk in the background. Never
    raises, never blocks (a non-regular file is left alone)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:  # pragma: no cover - not Linux
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a socket"``, ``"a character device"``… for an ``st_mode``."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def not_regular_message(path: str, mode: int) -> str:
    """The error of an input that is not a regular file."""
    return f"{path} is {file_kind(mode)}, not a regular file: not read"


def load_input(path: str) -> Module:
    """``Module.from_json`` of an input file (regular files only, read into
    the thread's reused buffer) — how every command reads an input."""
    from lncsplit import Module

    return with_input(path, Module.from_json)[0]


def _read_module(res: FileResult, path: str, options: PassOptions) -> Any:
    from lncsplit import Module

    if path.lower().endswith(HLO_SUFFIXES):
        from lncsplit.frontend import lower_hlo_text

        data = read_input(path)
        res.bytes_in = len(data)
        text = data.decode("utf-8")
        return lower_hlo_text(text, options.lnc_size, arch=options.arch or "gen3").module()
    # A file split on one core (``parallel=False``: the corpus runs files side
    # by side, or --jobs 1) is read on that core too: the parallel loader's
    # pre-scan looks for big instruction arrays in every file over ~120 KB, and
    # on a corpus of 1 MB modules it finds none and costs 16 % of the load.
    module, res.bytes_in = with_input(path, partial(Module.from_json, parallel=options.parallel))
    return module


@dataclass(frozen=True)
class _Dest:
    """Where one file's outputs go: its directory, the root of its artifact
    directories, and the list of directories created for it (for cleanup)."""

    dir: str
    out: str
    created: list[str]


def _split_into(
    res: FileResult, path: str, dest: _Dest, options: PassOptions, detail: bool = False
) -> None:

    from lncsplit import _core
    from lncsplit.passes import create_artifact_dirs_under
    from lncsplit.pipeline import run_pipeline

    phases = _Phases(path)
    phases.enter("load")
    module = _read_module(res, path, options)
    res.instructions_in = module.instruction_count()
    snapshot = None
    if detail:
        from lncsplit.views.detail import SplitSnapshot

        snapshot = SplitSnapshot.of(module, expand=options.expand)
    phases.enter("passes")
    cores = run_pipeline([module], replace(options, link=False, create_artifact_dirs=False))
    if snapshot is not None:
        from lncsplit.views.detail import split_detail

        res.detail = {"cores": split_detail(snapshot, cores)}
    phases.enter("write")
    # The N cores written at once, with the GIL released (same bytes as
    # ``m.to_bytes()`` one after the other); in parallel when the split was.
    # They stay in the writer's buffers (no ``bytes`` copy) until written out.
    blobs = [memoryview(b) for b in _core.to_buffers_all(cores, 2, options.parallel)]
    counts = [m.instruction_count() for m in cores]
    # ``split --link``: the linked module goes beside the cores, in the same write.
    extra: dict[str, bytes | memoryview] = {}
    if options.link:
        extra[LINKED_FILE] = _core.link(cores).to_bytes(version=2)
    if options.create_artifact_dirs and options.lnc_size > 1:
        # Only now that the pipeline succeeded, and under --out (contract §6).
        root = options.artifact_root if options.artifact_root is not None else dest.out
        dest.created.extend(create_artifact_dirs_under(cores, root))
    # Free the per-core modules outside the GIL so worker threads overlap.
    _core.release(cores)
    del cores, module
    res.outputs = write_core_files(dest.dir, blobs, extra)
    res.instructions_out = counts
    res.bytes_out = sum(b.nbytes for b in blobs)
    for b in blobs:
        b.release()
    phases.finish(res)


__all__ = [
    "DEFAULT_MAX_FILE_SIZE",
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
