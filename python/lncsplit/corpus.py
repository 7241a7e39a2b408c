"""Bulk corpus splitting: input discovery, the per-file job, the report.

``lncsplit split`` and :func:`process_files` share this module (contract §5):

- **Inputs** are files or directories. A directory is searched recursively for
  ``*.json`` (hidden files and directories — any path part starting with
  ``.`` — are skipped, so temporaries never count); the order is the
  command-line order of the inputs, and inside a directory the sorted relative
  POSIX path. The module read from ``<root>/<rel>.json`` is written to
  ``OUT/<rel>/nc00.json … nc<N-1>.json``; a file given directly has
  ``rel`` = its name without ``.json``. Two inputs with the same ``rel`` are
  a usage error (:class:`InputConflictError`).
- **The per-file job** (:func:`process_file`) reads the file, runs the pass
  pipeline, serializes every core in memory, then writes each core to a
  temporary file in the output directory (``.ncNN.json.<pid>.<n>.tmp``),
  fsyncs it, and only when every core is on disk renames them into place and
  fsyncs the directory. Any failure — parse, pass, serialization, I/O —
  removes the temporaries, any core already renamed, stale ``ncNN.json``
  left by an earlier run, and the output directory itself when it is left
  empty: a failed input leaves no output.
- **The report** (:class:`CorpusReport`) is the ``--report`` JSON of contract
  §5, files in input order whatever the executor or job count.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from lncsplit.pipeline import PassOptions

ExecutorName = Literal["auto", "thread", "process", "dask"]
ProgressFn = Callable[[int, int], None]

#: The local executor ``executor="auto"`` picks (measured, see docs/cli.md).
DEFAULT_LOCAL_EXECUTOR: Literal["thread", "process"] = "thread"

_CORE_FILE = re.compile(r"^nc(\d{2,})\.json$")


class InputConflictError(ValueError):
    """Two inputs map to the same output directory, or an input is missing."""


@dataclass(frozen=True)
class CorpusInput:
    """One input file and the relative output name it maps to.

    ``path`` is the file as discovered (the root joined with the relative
    path); ``rel`` is the POSIX relative path without ``.json``, so the
    outputs go to ``OUT/<rel>/ncNN.json``.
    """

    path: str
    rel: str


def core_file_name(core: int) -> str:
    """``nc00.json``, ``nc01.json``, … (two digits, more past 99)."""
    return f"nc{core:02d}.json"


def _strip_json(name: str) -> str:
    return name[:-5] if name.lower().endswith(".json") and len(name) > 5 else name


def _hidden(parts: Iterable[str]) -> bool:
    return any(p.startswith(".") and p not in (".", "..") for p in parts)


def discover_inputs(inputs: Sequence[str | os.PathLike[str] | CorpusInput]) -> list[CorpusInput]:
    """Expand files and directories into the ordered list of input files.

    Raises :class:`FileNotFoundError` for a path that does not exist and
    :class:`InputConflictError` when two inputs would write the same output
    directory.
    """
    out: list[CorpusInput] = []
    for item in inputs:
        if isinstance(item, CorpusInput):
            out.append(item)
            continue
        p = Path(item)
        if p.is_dir():
            found: list[tuple[str, str]] = []
            for dirpath, dirnames, filenames in os.walk(p):
                rel_dir = Path(dirpath).relative_to(p)
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                for fn in filenames:
                    if fn.startswith(".") or not fn.lower().endswith(".json"):
                        continue
                    rel = (rel_dir / fn).as_posix()
                    found.append((rel, os.path.join(dirpath, fn)))
            found.sort()
            out.extend(CorpusInput(path, _strip_json(rel)) for rel, path in found)
        elif p.exists():
            out.append(CorpusInput(str(p), _strip_json(p.name)))
        else:
            raise FileNotFoundError(f"no such file or directory: {os.fspath(item)}")
    seen: dict[str, str] = {}
    for ci in out:
        if ci.rel in seen:
            raise InputConflictError(
                f"{seen[ci.rel]} and {ci.path} would both be written to <out>/{ci.rel}/"
            )
        seen[ci.rel] = ci.path
    return out


@dataclass
class FileResult:
    """The outcome of one input file (one ``files`` entry of the report).

    ``instructions_out`` lists the instruction count of each core, core 0
    first; ``error`` is ``{"type", "code", "message"}`` or None.
    ``bytes_in``/``bytes_out`` feed the summary's throughput and are not
    part of the per-file JSON.
    """

    input: str
    status: Literal["ok", "error"] = "ok"
    outputs: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    instructions_in: int | None = None
    instructions_out: list[int] = field(default_factory=list)
    seconds: float = 0.0
    bytes_in: int = 0
    bytes_out: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        """The report entry, keys in contract order."""
        return {
            "input": self.input,
            "status": self.status,
            "outputs": list(self.outputs),
            "error": self.error,
            "instructions_in": self.instructions_in,
            "instructions_out": list(self.instructions_out),
            "seconds": round(self.seconds, 6),
        }


def error_info(exc: BaseException) -> dict[str, Any]:
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


_tmp_counter = itertools.count()
_tmp_lock = threading.Lock()


def _tmp_name(final: str) -> str:
    with _tmp_lock:
        n = next(_tmp_counter)
    d, base = os.path.split(final)
    return os.path.join(d, f".{base}.{os.getpid()}.{threading.get_ident()}.{n}.tmp")


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_fsync(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _stale_core_files(dirpath: str) -> list[str]:
    try:
        names = os.listdir(dirpath)
    except OSError:
        return []
    return [os.path.join(dirpath, n) for n in names if _CORE_FILE.match(n)]


def write_core_files(out_dir: str, blobs: Sequence[bytes]) -> list[str]:
    """Write ``blobs[c]`` to ``out_dir/ncCC.json`` for every core, all or nothing.

    Every core is written to a temporary file and fsynced before any is
    renamed into place; on failure everything written is removed and the
    error re-raised. Core files of an earlier run beyond ``len(blobs)`` are
    removed on success, so the directory holds exactly this run's cores.
    """
    created = not os.path.isdir(out_dir)
    if created:
        os.makedirs(out_dir, exist_ok=True)
    finals = [os.path.join(out_dir, core_file_name(c)) for c in range(len(blobs))]
    temps: list[str] = []
    renamed: list[str] = []
    try:
        for final, data in zip(finals, blobs, strict=True):
            tmp = _tmp_name(final)
            temps.append(tmp)
            _write_fsync(tmp, data)
        for tmp, final in zip(temps, finals, strict=True):
            os.replace(tmp, final)
            renamed.append(final)
        keep = set(finals)
        for stale in _stale_core_files(out_dir):
            if stale not in keep:
                os.unlink(stale)
        _fsync_dir(out_dir)
    except BaseException:
        for p in temps + renamed:
            try:
                os.unlink(p)
            except OSError:
                pass
        remove_outputs(out_dir)
        raise
    return finals


def remove_outputs(out_dir: str) -> None:
    """Remove every ``ncNN.json`` of ``out_dir`` and the directory if then empty."""
    for stale in _stale_core_files(out_dir):
        try:
            os.unlink(stale)
        except OSError:
            pass
    try:
        os.rmdir(out_dir)
    except OSError:
        pass


def output_dir(out: str | os.PathLike[str], rel: str) -> str:
    """``OUT/<rel>`` for an input's relative name."""
    return os.path.join(os.fspath(out), *rel.split("/"))


def process_file(
    inp: CorpusInput | str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: PassOptions,
) -> FileResult:
    """The whole job for one file: read → pipeline → write every core atomically.

    Never raises for a bad input: the error is returned in the result
    (``status="error"``) and no output of the file remains. Only
    ``KeyboardInterrupt``/``SystemExit`` propagate.
    """
    if not isinstance(inp, CorpusInput):
        inp = CorpusInput(os.fspath(inp), _strip_json(Path(inp).name))
    t0 = time.perf_counter()
    res = FileResult(input=inp.path)
    dest = output_dir(out, inp.rel)
    try:
        from lncsplit import Module, _core
        from lncsplit.pipeline import run_pipeline

        with open(inp.path, "rb") as f:
            data = f.read()
        res.bytes_in = len(data)
        module = Module.from_json(data)
        del data
        res.instructions_in = module.instruction_count()
        cores = run_pipeline([module], options)
        blobs = [m.to_bytes(version=2) for m in cores]
        counts = [m.instruction_count() for m in cores]
        # Free the per-core modules outside the GIL so worker threads overlap.
        _core.release(cores)
        del cores, module
        res.outputs = write_core_files(dest, blobs)
        res.instructions_out = counts
        res.bytes_out = sum(len(b) for b in blobs)
    except Exception as e:  # noqa: BLE001 - a failed file never stops the run
        remove_outputs(dest)
        res.status = "error"
        res.error = error_info(e)
        res.outputs = []
        res.instructions_out = []
    res.seconds = time.perf_counter() - t0
    return res


def failed_result(
    inp: CorpusInput, exc_type: str, message: str, out: str | None = None
) -> FileResult:
    """An error entry for a file the executor lost (a dead worker)."""
    if out is not None:
        remove_outputs(output_dir(out, inp.rel))
    return FileResult(
        input=inp.path,
        status="error",
        error={"type": exc_type, "code": None, "message": message},
    )


@dataclass
class CorpusReport:
    """The result of :func:`process_files`: per-file entries in input order.

    :meth:`to_json` is the ``--report`` document of contract §5. Its
    ``summary`` holds ``files``, ``ok``, ``errors``, ``instructions_in``
    (total), ``instructions_out`` (total over every core of every file),
    ``instructions_out_per_core`` (list, core 0 first), ``bytes_in``,
    ``bytes_out``, ``seconds`` (wall time of the run), ``throughput_mb_s``
    (input MB — 10^6 bytes — per wall second), ``jobs`` and ``executor``.
    """

    lnc: int
    files: list[FileResult]
    seconds: float = 0.0
    jobs: int = 1
    executor: str = "thread"

    @property
    def ok(self) -> bool:
        """True iff every input succeeded."""
        return all(f.ok for f in self.files)

    @property
    def exit_code(self) -> int:
        """0 when every input succeeded, else 1."""
        return 0 if self.ok else 1

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if not f.ok]

    def summary(self) -> dict[str, Any]:
        per_core = [0] * self.lnc
        for f in self.files:
            for c, n in enumerate(f.instructions_out):
                if c < len(per_core):
                    per_core[c] += n
        ok = [f for f in self.files if f.ok]
        bytes_in = sum(f.bytes_in for f in self.files)
        return {
            "files": len(self.files),
            "ok": len(ok),
            "errors": len(self.files) - len(ok),
            "instructions_in": sum(f.instructions_in or 0 for f in ok),
            "instructions_out": sum(per_core),
            "instructions_out_per_core": per_core,
            "bytes_in": bytes_in,
            "bytes_out": sum(f.bytes_out for f in self.files),
            "seconds": round(self.seconds, 6),
            "throughput_mb_s": round(bytes_in / 1e6 / self.seconds, 3)
            if self.seconds > 0
            else None,
            "jobs": self.jobs,
            "executor": self.executor,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "lnc": self.lnc,
            "files": [f.to_json() for f in self.files],
            "summary": self.summary(),
        }

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the report JSON (indented, UTF-8) atomically."""
        import json

        data = (json.dumps(self.to_json(), indent=2) + "\n").encode()
        final = os.fspath(path)
        parent = os.path.dirname(final) or "."
        os.makedirs(parent, exist_ok=True)
        tmp = _tmp_name(final)
        try:
            _write_fsync(tmp, data)
            os.replace(tmp, final)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def table(self) -> str:
        """The human summary printed by ``lncsplit split``."""
        s = self.summary()
        ok_in = s["instructions_in"]
        rows = [("input", s["ok"], ok_in)]
        for c, n in enumerate(s["instructions_out_per_core"]):
            rows.append((f"core {c}", s["ok"], n))
        rows.append(("total out", s["ok"] * self.lnc, s["instructions_out"]))
        lines = [
            f"lncsplit split: {s['files']} files ({s['ok']} ok, {s['errors']} failed), "
            f"lnc {self.lnc}, jobs {self.jobs} ({self.executor})",
            f"  {'':<10} {'files':>8} {'instructions':>14}",
        ]
        lines += [f"  {name:<10} {files:>8} {n:>14,}" for name, files, n in rows]
        mbs = s["throughput_mb_s"]
        lines.append(
            f"  time {self.seconds:.3f} s, {s['bytes_in'] / 1e6:.2f} MB in, "
            f"{s['bytes_out'] / 1e6:.2f} MB out, throughput "
            + (f"{mbs:.2f} MB/s" if mbs is not None else "n/a")
        )
        return "\n".join(lines)


def effective_options(options: PassOptions, jobs: int, files: int, executor: str) -> PassOptions:
    """The options each file runs with.

    Files are the unit of parallelism: every file runs with
    ``parallel=False`` (one core per file; no rayon/thread oversubscription),
    except a run with a single file and ``jobs > 1`` on the thread executor,
    which lets that file's cores split in parallel. Under Dask it is always
    ``parallel=False``.
    """
    par = executor == "thread" and files == 1 and jobs > 1 and options.parallel
    return replace(options, parallel=par)


def resolve_jobs(jobs: int | None) -> int:
    """``None``/``0`` → the CPUs this process may use; otherwise ``jobs`` (≥ 1)."""
    if jobs is None or jobs == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - non-Linux
            return max(1, os.cpu_count() or 1)
    if jobs < 0:
        raise ValueError(f"jobs must be >= 0, got {jobs}")
    return jobs


def process_files(
    paths: Sequence[str | os.PathLike[str] | CorpusInput],
    out: str | os.PathLike[str],
    options: PassOptions,
    jobs: int = 1,
    executor: ExecutorName = "auto",
    scheduler: Any = None,
    progress: ProgressFn | None = None,
    batch_size: int | None = None,
) -> CorpusReport:
    """Split every input file into ``out``; returns the :class:`CorpusReport`.

    Args:
        paths: files and/or directories (see :func:`discover_inputs`).
        out: output root; file ``<rel>.json`` goes to ``out/<rel>/ncNN.json``.
        options: the pass options (``lnc_size`` is N).
        jobs: worker count (``0`` = every available CPU). Output is
            byte-identical whatever ``jobs`` is.
        executor: ``"thread"`` (a thread pool over the GIL-free Rust work),
            ``"process"`` (spawned worker processes), ``"dask"`` (a Dask
            cluster; needs ``lncsplit[dask]``) or ``"auto"`` (``"dask"`` when
            ``scheduler`` is given, else :data:`DEFAULT_LOCAL_EXECUTOR`).
        scheduler: Dask scheduler address, or a ``distributed.Client``. With
            ``executor="dask"`` and no scheduler a ``LocalCluster`` of
            ``jobs`` single-threaded workers is started for the run.
        progress: called as ``progress(done, total)`` after every file.
        batch_size: files per Dask task (default: up to 200, fewer when the
            corpus is small so every worker gets work).

    A failed file never stops the run: it gets an ``"error"`` entry and no
    output. Raises only for usage errors (missing inputs, conflicting
    outputs, an unknown executor, a missing optional dependency).
    """
    items = discover_inputs(paths)
    njobs = resolve_jobs(jobs)
    if executor == "auto":
        executor = "dask" if scheduler is not None else DEFAULT_LOCAL_EXECUTOR
    if executor not in ("thread", "process", "dask"):
        raise ValueError(f"unknown executor {executor!r} (auto, thread, process or dask)")
    if scheduler is not None and executor != "dask":
        raise ValueError("a scheduler is only used by executor='dask'")
    opts = effective_options(options, njobs, len(items), executor)
    out_s = os.fspath(out)
    os.makedirs(out_s, exist_ok=True)
    results: list[FileResult | None] = [None] * len(items)
    done = 0
    lock = threading.Lock()

    def on_result(i: int, r: FileResult) -> None:
        nonlocal done
        with lock:
            results[i] = r
            done += 1
            d = done
        if progress is not None:
            progress(d, len(items))

    t0 = time.perf_counter()
    if items:
        if executor == "dask":
            from lncsplit.executors.dask import run_dask

            run_dask(items, out_s, opts, njobs, scheduler, on_result, batch_size=batch_size)
        elif executor == "process":
            from lncsplit.executors.local import run_processes

            run_processes(items, out_s, opts, njobs, on_result)
        else:
            from lncsplit.executors.local import run_threads

            run_threads(items, out_s, opts, njobs, on_result)
    seconds = time.perf_counter() - t0
    files = [
        r if r is not None else failed_result(items[i], "InternalError", "file was never processed")
        for i, r in enumerate(results)
    ]
    return CorpusReport(
        lnc=options.lnc_size, files=files, seconds=seconds, jobs=njobs, executor=executor
    )


__all__ = [
    "DEFAULT_LOCAL_EXECUTOR",
    "CorpusInput",
    "CorpusReport",
    "FileResult",
    "InputConflictError",
    "core_file_name",
    "discover_inputs",
    "error_info",
    "process_file",
    "process_files",
    "write_core_files",
]
