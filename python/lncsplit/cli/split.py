"""``lncsplit split``: split modules into per-core modules (contract §5)."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lncsplit.cli._common import (
    DEFAULT_LNC,
    DEFAULT_OUT,
    Progress,
    UsageError,
    add_layout_option,
    add_runner_options,
    add_spelling_option,
    check_outputs,
    err,
    executor_of,
    failure_line,
    finish,
    positive,
    prepare_out,
    usage_errors,
)
from lncsplit.corpus.split_job import set_phase_hook

if TYPE_CHECKING:
    from lncsplit.corpus import CorpusReport

Item = Any  # an INPUT path, or a ready Unit


def add_parser(sub: Any) -> None:
    """Register ``split`` on the subparsers ``sub``."""
    s = sub.add_parser("split", help="split modules into per-core modules")
    s.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="module files or directories (searched recursively for *.json); HLO files named "
        "explicitly (*.hlo, *.hlo.txt, *.txt starting with HloModule) and XLA dump roots "
        "(directories of *after_spmd-partitioning*.txt) are lowered first; none: the example "
        "corpus",
    )
    s.add_argument(
        "--lnc",
        type=positive,
        default=None,
        help=f"number of cores N (default {DEFAULT_LNC}; a module XLA partitioned: its "
        "num_partitions)",
    )
    s.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default ./{DEFAULT_OUT})")
    add_runner_options(s, "files")
    s.add_argument(
        "--no-verify",
        action="store_true",
        help="skip birverifier, lnc_verifier and lnc_barriercheck",
    )
    s.add_argument("--no-expand", action="store_true", help="skip expand_replication")
    s.add_argument(
        "--link",
        action="store_true",
        help="also write the linked module (bir_linker) as linked.json beside the ncNN.json files",
    )
    s.add_argument(
        "--report-detail",
        action="store_true",
        help="in --report, list per file and core the pruned instructions and the dependency "
        "edges dropped with them",
    )
    s.add_argument("--quiet", "-q", action="store_true", help="no progress and no summary table")
    add_spelling_option(s)
    add_layout_option(s)
    s.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Split every input into ``--out`` through :func:`lncsplit.process_files`."""
    from lncsplit.corpus import process_files
    from lncsplit.pipeline import PassOptions

    if not a.inputs:
        from lncsplit.examples import example_paths

        # The shipped modules only (docs/cli.md: `lncsplit/examples/*.json`), not the walk of the
        # whole directory, which would take examples/jax/*/program.json for modules.
        a.inputs = [str(p) for p in example_paths()]
    if a.report_detail and not a.report:
        raise UsageError("--report-detail adds to the --report file: give --report FILE too")
    executor = executor_of(a)
    check_outputs(a)
    prepare_out(a, create=False)  # made with the first output: an all-failed run creates none
    groups = _lnc_groups(_hlo_inputs(a.inputs), a.lnc)
    # Writing outputs creates each core's artifact directory (contract §3.1),
    # for modules that carry an artifact_path: under --out (§6).
    # --no-verify also skips lnc_barriercheck: its bands need the verifier's barrier match.
    options = PassOptions(
        lnc_size=DEFAULT_LNC,
        verify=not a.no_verify,
        expand=not a.no_expand,
        create_artifact_dirs=True,
        racecheck=not a.no_verify,
        link=a.link,
    )
    progress = Progress(not a.quiet, "split")
    set_phase_hook(progress.phase if progress.enabled else None)
    reports = []
    try:
        with usage_errors():
            for n, items in groups:
                reports.append(
                    process_files(
                        items,
                        a.out,
                        replace(options, lnc_size=n),
                        jobs=a.jobs,
                        executor=executor,  # type: ignore[arg-type]
                        scheduler=a.scheduler,
                        progress=progress,
                        batch_size=a.batch_size,
                        max_file_size=a.max_file_size,
                        connect_timeout=a.connect_timeout,
                        detail=a.report_detail,
                        spelling=a.spelling,
                        layout=a.layout,
                    )
                )
    finally:
        set_phase_hook(None)
        progress.close()
    report = _merged(reports, [i for _, items in groups for i in items])
    for f in report.failed:
        err(failure_line(f))
    status = finish(a, report)
    if not a.quiet:
        print(report.table())
    return status


def _hlo_inputs(inputs: list[str]) -> list[tuple[Item, int | None]]:
    """The inputs with each XLA dump root made its partitioned modules' units (the others
    listed as skipped) and each explicitly named ``*.txt`` HLO file a unit named after its
    HloModule; beside each, the N a partitioned module was partitioned for (contract §3.9)."""
    from lncsplit.corpus import Unit
    from lncsplit.corpus.discovery import error_unit
    from lncsplit.frontend.xla_dump import is_dump_root, is_hlo_text_file, scan_dump_root

    out: list[tuple[Item, int | None]] = []
    for p in inputs:
        if os.path.isdir(p) and is_dump_root(p):
            found = scan_dump_root(p)
            for path, why in found.skipped:
                err(f"skipped {path}: {why}")
            if not found.units:
                name = os.path.basename(os.path.normpath(p))
                msg = "an XLA dump root with nothing partitioned (no ENTRY ending in _spmd)"
                out.append((error_unit(p, name, msg, "LoweringError"), None))
            for u in found.units:
                unit = (
                    Unit(u.after, u.rel)
                    if u.error is None
                    else error_unit(u.after, u.rel, u.error, "LoweringError")
                )
                out.append((unit, _partitions_of(u.after)))
        elif os.path.isfile(p) and is_hlo_text_file(p):
            n = _partitions_of(p)
            if p.lower().endswith(".txt") and not p.lower().endswith(".hlo.txt"):
                out.append((Unit(p, _hlo_rel(p)), n))
            else:
                out.append((p, n))
        else:
            out.append((p, None))
    return out


def _partitions_of(path: str) -> int | None:
    """``num_partitions`` of a partitioned module's file (None for any other file)."""
    from lncsplit._inputs import read_input
    from lncsplit.frontend import HloModule
    from lncsplit.frontend.partitioned import num_partitions
    from lncsplit.frontend.xla_dump import is_partitioned_text

    try:
        text = read_input(path).decode("utf-8", "replace")
    except OSError:
        return None
    if not is_partitioned_text(text):
        return None
    return num_partitions(HloModule(name="", header=text.split("\n", 1)[0]))


def _hlo_rel(path: str) -> str:
    """The output name of an explicitly named ``*.txt`` HLO file: its HloModule's name."""
    from lncsplit._inputs import read_input

    head = read_input(path)[:4096].decode("utf-8", "replace").split("\n", 1)[0]
    parts = head.split()
    name = parts[1].rstrip(",") if len(parts) > 1 else ""
    return name or os.path.basename(path)[: -len(".txt")]


def _lnc_groups(
    items: list[tuple[Item, int | None]], lnc: int | None
) -> list[tuple[int, list[Item]]]:
    """The inputs by the N they split over: ``--lnc`` for all when given, else each partitioned
    module's own and :data:`DEFAULT_LNC` for the rest (groups in first-appearance order)."""
    groups: dict[int, list[Item]] = {}
    for item, n in items:
        groups.setdefault(lnc if lnc is not None else (n or DEFAULT_LNC), []).append(item)
    return list(groups.items()) or [(lnc or DEFAULT_LNC, [])]


def _merged(reports: list[CorpusReport], items: list[Item]) -> CorpusReport:
    """One report for runs over several N: files in input order, ``lnc`` None when mixed."""
    if len(reports) == 1:
        return reports[0]
    from lncsplit.corpus import Unit

    paths = [os.path.abspath(i.path if isinstance(i, Unit) else os.fspath(i)) for i in items]

    def position(f: Any) -> int:
        p = os.path.abspath(f.input)
        return next(
            (k for k, q in enumerate(paths) if p == q or p.startswith(q + os.sep)), len(paths)
        )

    files = sorted((f for r in reports for f in r.files), key=position)
    first = reports[0]
    return replace(
        first,
        lnc=None,
        files=files,
        seconds=sum(r.seconds for r in reports),
        interrupted=any(r.interrupted for r in reports),
    )
