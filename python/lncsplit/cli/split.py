"""``lncsplit split``: split modules into per-core modules (contract §5)."""

from __future__ import annotations

import argparse
from typing import Any

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


def add_parser(sub: Any) -> None:
    """Register ``split`` on the subparsers ``sub``."""
    s = sub.add_parser("split", help="split modules into per-core modules")
    s.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="module files or directories (searched recursively for *.json); files named "
        "*.hlo/*.hlo.txt are XLA/JAX HLO text, lowered first; none: the example corpus",
    )
    s.add_argument(
        "--lnc",
        type=positive,
        default=DEFAULT_LNC,
        help=f"number of cores N (default {DEFAULT_LNC})",
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
    prepare_out(a)
    # Writing outputs creates each core's artifact directory (contract §3.1),
    # for modules that carry an artifact_path: under --out (§6).
    # --no-verify also skips lnc_barriercheck: its bands need the verifier's barrier match.
    options = PassOptions(
        lnc_size=a.lnc,
        verify=not a.no_verify,
        expand=not a.no_expand,
        create_artifact_dirs=True,
        racecheck=not a.no_verify,
        link=a.link,
    )
    progress = Progress(not a.quiet, "split")
    set_phase_hook(progress.phase if progress.enabled else None)
    try:
        with usage_errors():
            report = process_files(
                a.inputs,
                a.out,
                options,
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
    finally:
        set_phase_hook(None)
        progress.close()
    for f in report.failed:
        err(failure_line(f))
    status = finish(a, report)
    if not a.quiet:
        print(report.table())
    return status
