"""The corpus machinery: :func:`process_files`, the library behind ``lncsplit split``,
and the pieces every bulk command shares, one module each:

- :mod:`~lncsplit.corpus.unit` — the unit, its result and the job protocol (the leaf);
- :mod:`~lncsplit.corpus.discovery` — finding the units;
- :mod:`~lncsplit.corpus.runner` and :mod:`~lncsplit.corpus.executors` — running a job
  over them (threads, processes, Dask) into one report;
- :mod:`~lncsplit.corpus.split_job` — the split's per-file job (the top).

How the split uses them:

- **Inputs** — :func:`lncsplit.corpus.discovery.discover_units` (here as
  :func:`discover_inputs`: every ``*.json`` a file unit, output names unique).
  The module read from ``<root>/<rel>.json`` is written to
  ``OUT/<rel>/nc00.json … nc<N-1>.json``; a file given directly has ``rel`` =
  its name without ``.json``.
- **The per-file job** — :func:`lncsplit.corpus.split_job.process_file`: read → pipeline
  → every core written atomically (:mod:`lncsplit._atomic`: temporary files,
  renames, fsync with ``--fsync``; any failure removes what was written, stale ``ncNN.json`` of
  an earlier run and the emptied directory: a failed input leaves no output).
- **The run and the report** — :func:`lncsplit.corpus.runner.run_units` and
  :class:`lncsplit.corpus.runner.CorpusReport` (the ``--report`` JSON of contract §5,
  files in input order whatever the executor or job count).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Literal

from lncsplit._atomic import core_file_name, prepare_output_dir, write_core_files
from lncsplit.corpus.discovery import InputConflictError, discover_units
from lncsplit.corpus.runner import (
    DEFAULT_LOCAL_EXECUTOR,
    CorpusReport,
    ExecutorName,
    ProgressFn,
    resolve_executor,
    resolve_jobs,
    run_units,
)
from lncsplit.corpus.split_job import process_file, remove_unit_outputs
from lncsplit.corpus.unit import CorpusInput, FileResult, Unit, error_info, failed_result
from lncsplit.limits import DEFAULT_MAX_FILE_SIZE
from lncsplit.pipeline import PassOptions


def discover_inputs(
    inputs: Sequence[str | os.PathLike[str] | Unit],
    out: str | os.PathLike[str] | None = None,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> list[Unit]:
    """The split's inputs: every ``*.json`` a file unit, in order, output names unique.

    The ``out`` tree is not an input even inside an INPUT directory; a path
    that cannot be an input (missing, not a regular file, too large, a link
    out of the inputs) is a unit carrying its error (contract §6). Raises
    :class:`InputConflictError` when two inputs would write the same output
    directory.
    """
    return discover_units(
        inputs,
        core_sets=False,
        unique_outputs=True,
        exclude=[out] if out is not None else [],
        max_file_size=max_file_size,
    )


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


def process_files(
    paths: Sequence[str | os.PathLike[str] | Unit],
    out: str | os.PathLike[str],
    options: PassOptions,
    jobs: int = 1,
    executor: ExecutorName = "auto",
    scheduler: Any = None,
    progress: ProgressFn | None = None,
    batch_size: int | None = None,
    detail: bool = False,
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    connect_timeout: float | None = None,
    spelling: Literal["lncsplit", "compiler"] | None = None,
    layout: Literal["lncsplit", "compiler"] = "lncsplit",
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
        detail: each file's report entry lists, per core, the pruned
            instructions and the dependency edges dropped with them.
        max_file_size: a larger input is an error entry, never read.
        connect_timeout: seconds to wait for a Dask ``scheduler`` (default 10).
        spelling: the BIR-JSON key names of the written cores, ``"lncsplit"`` or
            ``"compiler"`` (contract §1.7; None: each input's own).
        layout: ``"compiler"`` writes core c to ``out/<rel>/nc<cc>/sg<k>/<stem>.json``
            (the compiler's per-core dump layout) instead of ``out/<rel>/ncNN.json``.

    With ``options.create_artifact_dirs`` each core's ``artifact_path`` is
    created under ``options.artifact_root``, by default ``out`` (contract
    §6). A failed file never stops the run: it gets an ``"error"`` entry and
    no output (nor does a missing input, which is such an entry). Raises only
    for usage errors (an ``out`` that is a file or cannot be written,
    conflicting outputs, an unknown executor, a missing optional dependency,
    an unreachable scheduler), and :class:`lncsplit.corpus.runner.RunInterrupted`
    on Ctrl-C.
    """
    out_s = os.fspath(out)
    units = discover_inputs(paths, out_s, max_file_size)
    njobs = resolve_jobs(jobs)
    resolved = resolve_executor(executor, scheduler)
    opts = effective_options(options, njobs, len(units), resolved)
    # Checked, not made: ``out`` is created with the first output written, so a run in
    # which every file failed leaves no empty tree behind (contract §5/§6).
    prepare_output_dir(out_s, create=False)
    return run_units(
        units,
        partial(
            process_file, out=out_s, options=opts, detail=detail, spelling=spelling, layout=layout
        ),
        jobs=njobs,
        executor=resolved,
        scheduler=scheduler,
        progress=progress,
        batch_size=batch_size,
        cleanup=partial(remove_unit_outputs, out=out_s),
        command="split",
        lnc=options.lnc_size,
        counts=True,
        connect_timeout=connect_timeout,
    )


__all__ = [
    "DEFAULT_LOCAL_EXECUTOR",
    "CorpusInput",
    "CorpusReport",
    "FileResult",
    "InputConflictError",
    "Unit",
    "core_file_name",
    "discover_inputs",
    "error_info",
    "failed_result",
    "process_file",
    "process_files",
    "write_core_files",
]
