"""What every command shares: exit codes, argument types, errors, progress, the bulk run.

A command module uses :func:`add_runner_options` on its parser and
:func:`run_bulk` + :func:`finish` in its ``run`` to get ``--jobs``,
``--executor``, ``--scheduler``, ``--batch-size``, ``--report``, progress on
a terminal, the report file and exit codes the way ``split`` has them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lncsplit._job import Job, Unit
    from lncsplit.runner import Cleanup, CorpusReport

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DEFAULT_LNC = 2
DEFAULT_OUT = "lncsplit-out"


class UsageError(Exception):
    """A usage error: reported on stderr as one line, exit code 2."""


# ----------------------------------------------------------------------------- argument types


def positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {v}")
    return v


def non_negative(text: str) -> int:
    """argparse type: an integer >= 0, or ``auto`` (= 0)."""
    if text == "auto":
        return 0
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {v}")
    return v


def add_runner_options(p: argparse.ArgumentParser, what: str = "inputs") -> None:
    """``--jobs``, ``--executor``, ``--scheduler``, ``--batch-size``, ``--report``."""
    p.add_argument(
        "--jobs",
        "-j",
        type=non_negative,
        default=0,
        help="parallel workers (default 0 = every available CPU)",
    )
    p.add_argument(
        "--executor",
        choices=("auto", "thread", "process", "dask"),
        default="auto",
        help=f"how {what} run in parallel (default auto: dask with --scheduler, else threads)",
    )
    p.add_argument(
        "--scheduler", metavar="ADDR", help="Dask scheduler address (implies --executor dask)"
    )
    p.add_argument("--batch-size", type=positive, help=f"{what} per Dask task (default up to 200)")
    p.add_argument("--report", metavar="FILE", help="write the JSON report here")


# ----------------------------------------------------------------------------- messages


def err(msg: str) -> None:
    """One line on stderr, prefixed ``lncsplit:``."""
    sys.stderr.write(f"lncsplit: {msg}\n")


def format_error(info: dict[str, Any]) -> str:
    """``Type code: message``, without repeating what the message already says."""
    msg = str(info.get("message"))
    typ = str(info.get("type"))
    if msg.startswith(typ):
        return msg
    code = f" {info['code']}" if info.get("code") is not None else ""
    return f"{typ}{code}: {msg}"


def describe_error(e: BaseException) -> str:
    """:func:`format_error` of an exception."""
    from lncsplit._job import error_info

    return format_error(error_info(e))


def check_paths(paths: Sequence[str]) -> None:
    """A missing INPUT is a usage error."""
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise UsageError("no such file or directory: " + ", ".join(missing))


class Progress:
    """A plain ``\\r`` counter on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.label = label
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        pct = 100.0 * done / total if total else 100.0
        sys.stderr.write(f"\r{self.label} {done}/{total} ({pct:5.1f}%) {now - self.t0:6.1f}s")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


# ----------------------------------------------------------------------------- the bulk run


def executor_of(a: argparse.Namespace) -> str:
    """The executor the runner options ask for; inconsistent options are usage errors."""
    executor: str = a.executor
    if a.scheduler and executor == "auto":
        executor = "dask"
    if a.scheduler and executor != "dask":
        raise UsageError("--scheduler needs --executor dask")
    if a.batch_size is not None and executor != "dask":
        raise UsageError("--batch-size is only used by --executor dask")
    return executor


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """What discovery and the runner raise for bad options becomes a usage error."""
    try:
        yield
    except (FileNotFoundError, ValueError, ImportError) as e:  # InputConflictError is a ValueError
        raise UsageError(str(e)) from e


def run_bulk(
    a: argparse.Namespace,
    units: Sequence[Unit],
    job: Job,
    *,
    command: str,
    lnc: int | None,
    cleanup: Cleanup | None = None,
    quiet: bool = False,
) -> CorpusReport:
    """Run ``job`` on ``units`` with the runner options of ``a``, progress on a terminal."""
    from lncsplit.runner import run_units

    progress = Progress(not quiet, command)
    try:
        with usage_errors():
            return run_units(
                units,
                job,
                jobs=a.jobs,
                executor=executor_of(a),
                scheduler=a.scheduler,
                progress=progress,
                batch_size=a.batch_size,
                cleanup=cleanup,
                command=command,
                lnc=lnc,
            )
    finally:
        progress.close()


def finish(a: argparse.Namespace, report: CorpusReport) -> int:
    """Write ``--report`` (if asked) and return the exit code.

    1 when any unit failed, when nothing was found at all (contract §5), or
    when the report cannot be written; else 0.
    """
    status = report.exit_code
    if not report.files:
        err("no modules found in " + ", ".join(getattr(a, "inputs", []) or ["the inputs"]))
        status = EXIT_FAILED
    path = getattr(a, "report", None)
    if path:
        try:
            report.write(path)
        except OSError as e:
            err(f"cannot write the report {path}: {e}")
            status = EXIT_FAILED
    return status


def infer_lnc(module: Any) -> int | None:
    """A symbolic module's N: the largest ShardId bound of its functions, or None."""
    import json

    doc = json.loads(module.to_json())
    ubs = {ub for f in doc.get("functions", []) for ub in f.get("shard_ids", [])}
    return max(ubs) if ubs else None
