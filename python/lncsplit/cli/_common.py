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
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from lncsplit.errors import is_os_error_type
from lncsplit.limits import CLI_SPLIT_PEAK_FACTOR, DEFAULT_MAX_FILE_SIZE

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.corpus.runner import Cleanup, CorpusReport
    from lncsplit.corpus.unit import Job, Unit

DEFAULT_CONNECT_TIMEOUT = 10.0

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


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def byte_size(text: str) -> int:
    """argparse type: a size in bytes, ``4G``, ``512M``, ``100k``, ``4GiB`` (powers of 1024)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS else ""
    try:
        v = int(t[: len(t) - len(unit)]) * _SIZE_UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a size such as 4G or 500M, got {text!r}"
        ) from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a size >= 1 byte, got {text!r}")
    return v


def format_size(n: int) -> str:
    """A byte count as :func:`byte_size` reads it back: ``6G``, ``1536M``, ``100k``."""
    for unit in ("T", "G", "M", "K"):
        if n >= _SIZE_UNITS[unit] and n % _SIZE_UNITS[unit] == 0:
            return f"{n // _SIZE_UNITS[unit]}{unit}"
    return str(n)


def seconds(text: str) -> float:
    """argparse type: a positive number of seconds."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return v


def add_runner_options(p: argparse.ArgumentParser, what: str = "inputs") -> None:
    """``--jobs``, ``--executor``, ``--scheduler``, ``--connect-timeout``, ``--batch-size``,
    ``--report``, ``--max-file-size``, ``--fsync``."""
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
    p.add_argument(
        "--connect-timeout",
        type=seconds,
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="S",
        help=f"seconds to wait for --scheduler (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    p.add_argument("--batch-size", type=positive, help=f"{what} per Dask task (default up to 200)")
    p.add_argument(
        "--report", metavar="FILE", help="write the JSON report here (its directory must exist)"
    )
    p.add_argument(
        "--max-file-size",
        type=byte_size,
        default=DEFAULT_MAX_FILE_SIZE,
        metavar="SIZE",
        help="a larger input file is an error, never read (default: this machine's memory "
        f"÷ {CLI_SPLIT_PEAK_FACTOR}, here {format_size(DEFAULT_MAX_FILE_SIZE)}: the largest "
        "file whose split fits in memory)",
    )
    p.add_argument(
        "--fsync",
        action="store_true",
        help="make every written file durable (fsync) before its rename (default: atomic only)",
    )


def add_pass_option(p: argparse.ArgumentParser) -> None:
    """``--pass NAME``: in a compiler dump root (``nc00/sg00/…``), read each core's module
    dumped after pass NAME (the file whose name contains ``after-NAME``; contract §1.7)."""
    p.add_argument(
        "--pass",
        dest="pass_",
        metavar="NAME",
        help="in a compiler dump root (nc00/sg00/...), read the files dumped after pass NAME "
        "(names containing after-NAME; needed when a core's sg<k>/ holds several *.json)",
    )


def add_spelling_option(p: argparse.ArgumentParser) -> None:
    """``--spelling``: the BIR-JSON key names written modules use (contract §1.7)."""
    p.add_argument(
        "--spelling",
        choices=("lncsplit", "compiler"),
        default=None,
        help="key names of the written modules: lncsplit's dialect or the compiler's own "
        "(default: the spelling each input was read in)",
    )


def add_layout_option(p: argparse.ArgumentParser) -> None:
    """``--layout``: how a split output's cores are laid out (contract §1.7)."""
    p.add_argument(
        "--layout",
        choices=("lncsplit", "compiler"),
        default="lncsplit",
        help="lncsplit: OUT/<stem>/nc<cc>.json (default); compiler: the compiler's per-core "
        "dump layout OUT/<stem>/nc<cc>/sg<k>/<stem>.json (k = subgraph_id)",
    )


# ----------------------------------------------------------------------------- messages


def err(msg: str) -> None:
    """One line on stderr, prefixed ``lncsplit:``."""
    sys.stderr.write(f"lncsplit: {msg}\n")


def format_error(info: dict[str, Any]) -> str:
    """``Type code: message``, without repeating what the message already says.

    A few errors a user meets for a mistake of theirs read plainly (the
    report keeps the full error): splitting an already split module (9005).
    """
    msg = str(info.get("message"))
    typ = str(info.get("type"))
    if typ == "NeuronAssertion" and info.get("code") == 9005:
        core = re.search(r"neuron_core_id (\d+)", msg)
        which = f" (it carries neuron_core_id {core.group(1)})" if core else ""
        return (
            f"already split{which}: split takes symbolic modules; "
            "check a split output with `lncsplit verify` [NeuronAssertion 9005]"
        )
    if typ == "InputError" or is_os_error_type(typ):
        return msg  # names the path already (one wording: ``PATH: no such file or directory``)
    if msg.startswith(typ):
        return msg
    code = f" {info['code']}" if info.get("code") is not None else ""
    return f"{typ}{code}: {msg}"


def failure_line(f: Any) -> str:
    """``input: Type code: message`` for a failed unit result, naming the input
    once (an input error's message already starts with it)."""
    text = format_error(f.error or {})
    return text if text.startswith(f"{f.input}") else f"{f.input}: {text}"


def describe_error(e: BaseException) -> str:
    """:func:`format_error` of an exception."""
    from lncsplit.corpus.unit import error_info

    return format_error(error_info(e))


def input_failed(path: str, e: BaseException) -> int:
    """A one-input command's input failed: ``lncsplit: PATH: Type code: message`` on
    stderr (the path once: a message that starts with it is not prefixed again); returns
    :data:`EXIT_FAILED`."""
    text = describe_error(e)
    err(text if text.startswith(path) else f"{path}: {text}")
    return EXIT_FAILED


def one_file(path: str, takes: str) -> None:
    """A one-FILE command refuses a directory: a usage error
    ``PATH is a directory; <takes>``."""
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory; {takes}")


def check_paths(paths: Sequence[str]) -> None:
    """Files named by *options* (``--source``, ``--inputs NPZ``, ``--compare``…)
    must exist: a usage error otherwise (a bad option, exit 2).

    Not for the positional INPUTs: a missing INPUT is a per-path failure
    (contract §5: exit 1, the other inputs still processed), which discovery
    reports (:func:`discover`), or the command's own read for a one-FILE
    command (``explain``, ``lower``, ``info``).
    """
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise UsageError("; ".join(f"{p}: no such file or directory" for p in missing))


def check_outputs(a: argparse.Namespace, *options: str) -> None:
    """Check the output files named by ``--report`` and ``options`` (attribute
    names: ``"plot"``, ``"html"``…) before any work: each one's directory must
    exist and it must not be a directory. A usage error otherwise (exit 2)."""
    from lncsplit._atomic import OutputPathError, check_output_file

    for name in ("report", *options):
        path = getattr(a, name, None)
        if path:
            try:
                check_output_file(path)
            except OutputPathError as e:
                raise UsageError(f"--{name.replace('_', '-')} {e}") from e


def prepare_out(a: argparse.Namespace, option: str = "out", *, create: bool = True) -> str:
    """Create the output directory of ``--out`` and check it can be written,
    before any work: a file there, or a directory that cannot be created or
    written, is a usage error (one line, exit 2). With ``create=False`` it is
    only checked (made when the first output is written). Returns the path."""
    from lncsplit._atomic import OutputPathError, prepare_output_dir

    path: str = getattr(a, option)
    try:
        prepare_output_dir(path, create=create)
    except OutputPathError as e:
        raise UsageError(f"--{option} {e}") from e
    return path


def discover(a: argparse.Namespace, *, core_sets: bool, unique_outputs: bool = False) -> list[Unit]:
    """:func:`lncsplit.corpus.discovery.discover_units` with the command's options:
    ``--max-file-size``, and ``--out`` (when the command has one) excluded
    from the inputs (contract §6)."""
    from lncsplit.corpus.discovery import discover_units

    out = getattr(a, "out", None)
    with usage_errors():
        return discover_units(
            a.inputs,
            core_sets=core_sets,
            unique_outputs=unique_outputs,
            exclude=[out] if out else [],
            max_file_size=getattr(a, "max_file_size", DEFAULT_MAX_FILE_SIZE),
            pass_=getattr(a, "pass_", None),
        )


class Progress:
    """A plain ``\\r`` counter on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.label = label
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.shown = False
        self.counter = label

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        pct = 100.0 * done / total if total else 100.0
        self.counter = f"{self.label} {done}/{total} ({pct:5.1f}%) {now - self.t0:6.1f}s"
        sys.stderr.write(f"\r{self.counter}\033[K")
        sys.stderr.flush()
        self.shown = True

    def phase(self, path: str, phase: str, seconds: float) -> None:
        """A slow file entered a phase (load, passes, write): shown after the counter."""
        if not self.enabled:
            return
        name = os.path.basename(path)
        sys.stderr.write(f"\r{self.counter}  {name}: {phase} ({seconds:.1f}s)\033[K")
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
    from lncsplit.corpus.runner import run_units

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
                connect_timeout=getattr(a, "connect_timeout", None),
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
        inputs = list(getattr(a, "inputs", []) or [])
        where = ", ".join(inputs or ["the inputs"])
        out = getattr(a, "out", None)
        excluded = f" (the output directory {out} is not an input)" if out else ""
        err(f"no modules found in {where}{excluded}{hlo_hint(inputs, report.command)}")
        status = EXIT_FAILED
    if not write_report(a, report):
        status = EXIT_FAILED
    return status


def hlo_hint(inputs: Sequence[str], command: str) -> str:
    """What "no modules found" adds when a directory INPUT holds HLO text: how HLO is taken
    (contract §5: lowered first only when the file is named explicitly; a directory yields
    ``*.json`` modules)."""
    from lncsplit.corpus.discovery import find_hlo_files

    found = [f for d in inputs if os.path.isdir(d) for f in find_hlo_files(d, limit=3)]
    if not found:
        return ""
    shown = ", ".join(found[:2]) + (", …" if len(found) > 2 else "")
    return (
        f": it holds HLO text ({shown}), which is lowered only when the file is named "
        "explicitly (*.hlo, *.hlo.txt, or *.txt starting with HloModule; a directory yields "
        f"*.json modules): lncsplit {command} {found[0]} …"
    )


def write_report(a: argparse.Namespace, report: CorpusReport) -> bool:
    """Write ``--report`` if asked; False (after one line on stderr) when it cannot be."""
    path = getattr(a, "report", None)
    if not path:
        return True
    try:
        report.write(path)
    except OSError as e:
        err(f"cannot write the report {path}: {e.strerror or e}")
        return False
    return True


def interrupted(a: argparse.Namespace | None, exc: KeyboardInterrupt) -> int:
    """Ctrl-C: say what was done (a :class:`~lncsplit.corpus.runner.RunInterrupted`
    carries it), write the partial ``--report``, return 130."""
    from lncsplit.corpus.runner import RunInterrupted

    if isinstance(exc, RunInterrupted):
        err(exc.describe())
        if a is not None:
            write_report(a, exc.report)
    else:
        err("interrupted")
    return EXIT_INTERRUPTED


def infer_lnc(module: Any) -> int | None:
    """A symbolic module's N: the largest ShardId bound of its functions, or None.

    Read from the typed model in Rust (no JSON round trip). A bound above
    :data:`lncsplit.limits.MAX_INFERRED_LNC` is a
    :class:`~lncsplit.limits.ResourceLimitError` (that many per-core modules
    would not fit in memory; contract §6): the user passes ``--lnc`` to insist.
    """
    from lncsplit import _core
    from lncsplit.limits import check_inferred_lnc

    ub = _core.inferred_lnc(module)
    return None if ub is None else check_inferred_lnc(ub, f"module {module.name}")


def lnc_for(module: Any, lnc: int | None) -> int:
    """The N a symbolic module is split into: ``lnc`` (``--lnc``) when given, else its
    ShardId bound (:func:`infer_lnc`), else :data:`DEFAULT_LNC`."""
    return lnc if lnc is not None else (infer_lnc(module) or DEFAULT_LNC)


def unit_modules(
    unit: Unit,
    lnc: int | None,
    split: Callable[[Module, int], list[Module]],
    arch: str | None = None,
) -> tuple[list[Module], int | None]:
    """The modules of one unit and their N: a split output's cores as they are (N = their
    count); a symbolic file's module split by ``split(module, n)`` (N from :func:`lnc_for`;
    an HLO file is lowered first, for ``lnc`` on ``arch``: the input rule of
    :func:`lncsplit._inputs.load_input`); a lone core file's module alone (N None)."""
    from lncsplit._inputs import load_input
    from lncsplit.corpus.discovery import load_core_set

    if unit.kind == "core_set":
        mods = load_core_set(unit)
        return mods, len(mods)
    m = load_input(unit.path, lnc=lnc, arch=arch)
    if m.neuron_core_id is not None:
        return [m], None
    n = lnc_for(m, lnc)
    return split(m, n), n


def print_units(
    report: CorpusReport, line: Callable[[Any], str], *, quiet: bool = False, produced: str = ""
) -> None:
    """Each unit in input order: ``line(result)`` (unless ``quiet``) for a unit that is ok —
    or, when ``produced`` names a ``detail`` key, that produced it (a race or a memory
    violation still has its report) — else ``FAIL  <failure_line>``."""
    for f in report.files:
        if produced in f.detail if produced else f.ok:
            if not quiet:
                print(line(f))
        else:
            print(f"FAIL  {failure_line(f)}")


def finish_with_table(a: argparse.Namespace, report: CorpusReport, *, quiet: bool) -> int:
    """:func:`finish`, then (unless ``quiet``) the summary table."""
    status = finish(a, report)
    if not quiet:
        print(report.table())
    return status


def unit_docs(report: CorpusReport, keys: Sequence[str] = ("report",)) -> list[dict[str, Any]]:
    """The ``--json`` list of a reporting command: ``{"input", <keys>…}`` from the ``detail``
    of a unit that produced ``keys[0]``, else ``{"input", "error"}``."""
    return [
        {"input": f.input, **{k: f.detail[k] for k in keys}}
        if keys[0] in f.detail
        else {"input": f.input, "error": format_error(f.error or {})}
        for f in report.files
    ]
