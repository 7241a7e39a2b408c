"""The split's per-file job: read → pipeline → artifact directories → every core.

:func:`process_file` is the job of ``lncsplit split`` and of
:func:`lncsplit.process_files`: the top of the corpus machinery, which reads
through :mod:`lncsplit._inputs`, runs :mod:`lncsplit.pipeline` and writes
through :mod:`lncsplit._atomic`. :func:`set_phase_hook` reports the phases
(load, passes, write) of a slow file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal

from lncsplit._atomic import (
    LINKED_FILE,
    FileWriter,
    remove_dirs,
    remove_outputs,
    write_core_files,
    write_files_atomic,
)
from lncsplit._inputs import input_stem, is_hlo_input, lower_input, with_input
from lncsplit.corpus.dump_root import layout_paths, subgraph_of
from lncsplit.corpus.unit import FileResult, Unit, error_info

if TYPE_CHECKING:
    from lncsplit.pipeline import PassOptions


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
    spelling: Literal["lncsplit", "compiler"] | None = None,
    layout: Literal["lncsplit", "compiler"] = "lncsplit",
) -> FileResult:
    """The split job for one file: read → pipeline → artifact directories → every core.

    ``spelling`` (contract §1.7): the key names the cores are written in (None: the
    input's). ``layout="compiler"`` writes core c to ``<rel>/nc<cc>/sg<k>/<stem>.json``
    (k = its ``subgraph_id``) instead of ``<rel>/nc<cc>.json``.

    An HLO file (``*.hlo``, ``*.hlo.txt``, a ``*.txt`` starting with ``HloModule``: the input
    rule, :func:`lncsplit._inputs.is_hlo_input`) is lowered first, with N =
    ``options.lnc_size``. With ``detail`` the result's ``detail`` lists, per core, the
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
        where = _Dest(dest, os.fspath(out), created, spelling, layout, PurePath(inp.rel).name)
        _split_into(res, inp.path, where, options, detail)
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


def _read_module(res: FileResult, path: str, options: PassOptions) -> Any:
    from lncsplit._core import Module

    if is_hlo_input(path):  # the input rule (contract §5), shared with every command
        res.bytes_in = os.path.getsize(path)
        return lower_input(path, options.lnc_size, options.arch).module()
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
    spelling: Literal["lncsplit", "compiler"] | None = None
    layout: Literal["lncsplit", "compiler"] = "lncsplit"
    stem: str = ""


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
    big = res.bytes_in >= STREAM_WRITE_FROM
    cores = run_pipeline(
        [module], replace(options, link=False, create_artifact_dirs=False), _trim if big else None
    )
    if snapshot is not None:
        from lncsplit.views.detail import split_detail

        res.detail = {"cores": split_detail(snapshot, cores)}
    phases.enter("write")
    spelling = dest.spelling
    counts = [m.instruction_count() for m in cores]
    # ``split --link``: the linked module goes beside the cores, in the same write.
    extra: dict[str, bytes | memoryview] = {}
    if options.link:
        extra[LINKED_FILE] = _core.link(cores).to_bytes(version=2, spelling=spelling)
    if options.create_artifact_dirs and options.lnc_size > 1:
        # Only now that the pipeline succeeded, and under --out (contract §6).
        root = options.artifact_root if options.artifact_root is not None else dest.out
        dest.created.extend(create_artifact_dirs_under(cores, root))
    del module
    # ``--layout compiler``: core c at <rel>/nc<cc>/sg<k>/<stem>.json (k its subgraph_id),
    # named now: the writes below free the cores.
    paths = (
        layout_paths(dest.dir, dest.stem, [subgraph_of(m) for m in cores])
        if dest.layout == "compiler"
        else None
    )
    if big:
        writers = [_streamed(m, spelling) for m in cores]
        res.outputs = _write_cores(dest.dir, paths, writers, extra)
        res.bytes_out = sum(os.path.getsize(f) for f in res.outputs[: len(counts)])
    else:
        res.outputs, res.bytes_out = _write_buffered(
            dest.dir, paths, cores, extra, options.parallel, spelling
        )
    del cores
    res.instructions_out = counts
    phases.finish(res)


#: Inputs of at least this size are written core by core, each core streamed into its file
#: (``_core.write_module_file``, ~1 MB chunks) and freed once written: never all N cores'
#: JSON in memory beside their modules (2× the file at N = 2, the CLI's peak). Smaller ones
#: are serialized together into reused buffers, in parallel when the split was (faster on a
#: corpus of small files).
STREAM_WRITE_FROM = 8 << 20


def _trim(_event: Any) -> None:
    """After each pass of a big file's pipeline: the memory the pass freed goes back to the
    kernel now, not after the allocator's purge delay (a second), so the next pass's working
    memory does not add to it in the peak (docs/performance.md, ``cli_split_peak_memory``)."""
    from lncsplit import _core

    _core.trim_memory()


def _streamed(
    core: Any, spelling: Literal["lncsplit", "compiler"] | None
) -> Callable[[str, str, bool], None]:
    """A :data:`lncsplit._atomic.FileWriter` streaming ``core`` (in ``spelling``) into its
    file, then freeing it."""
    from lncsplit import _core

    def write(tmp: str, final: str, fsync: bool) -> None:
        _core.write_module_file(core, tmp, final, 2, fsync, spelling)
        _core.release([core])  # written: its memory is not needed for the next core

    return write


def _write_cores(
    out_dir: str,
    paths: list[str] | None,
    blobs: Sequence[bytes | memoryview | FileWriter],
    extra: dict[str, bytes | memoryview],
) -> list[str]:
    """Write the cores, all or nothing: to ``out_dir/ncCC.json`` (``paths`` None), or each
    to its ``paths[c]`` with ``extra`` in ``out_dir`` (the compiler's layout)."""
    if paths is None:
        return write_core_files(out_dir, blobs, extra)
    at: dict[str, bytes | memoryview | FileWriter] = dict(zip(paths, blobs, strict=True))
    at.update({os.path.join(out_dir, k): v for k, v in extra.items()})
    return write_files_atomic(at)


def _write_buffered(
    out_dir: str,
    paths: list[str] | None,
    cores: list[Any],
    extra: dict[str, bytes | memoryview],
    parallel: bool,
    spelling: Literal["lncsplit", "compiler"] | None,
) -> tuple[list[str], int]:
    """The N cores serialized at once with the GIL released (the bytes of
    ``m.to_bytes(spelling=spelling)``), left in the writer's buffers (no ``bytes`` copy) until
    written out: ``(outputs, their size)``."""
    from lncsplit import _core

    blobs = [memoryview(b) for b in _core.to_buffers_all(cores, 2, parallel, spelling)]
    # Free the per-core modules outside the GIL so worker threads overlap.
    _core.release(cores)
    outputs = _write_cores(out_dir, paths, blobs, extra)
    size = sum(b.nbytes for b in blobs)
    for b in blobs:
        b.release()
    return outputs, size


__all__ = [
    "PHASE_REPORT_AFTER",
    "STREAM_WRITE_FROM",
    "PhaseHook",
    "output_dir",
    "process_file",
    "remove_unit_outputs",
    "set_phase_hook",
]
