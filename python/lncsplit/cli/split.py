"""``lncsplit split``: split modules into per-core modules (contract §5)."""

from __future__ import annotations

import argparse
from typing import Any

from lncsplit.cli._common import (
    DEFAULT_LNC,
    DEFAULT_OUT,
    Progress,
    add_runner_options,
    check_paths,
    err,
    executor_of,
    finish,
    format_error,
    positive,
    usage_errors,
)


def add_parser(sub: Any) -> None:
    """Register ``split`` on the subparsers ``sub``."""
    s = sub.add_parser("split", help="split modules into per-core modules")
    s.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="module files or directories (searched recursively for *.json); "
        "none: the example corpus shipped with lncsplit",
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
    s.add_argument("--quiet", "-q", action="store_true", help="no progress and no summary table")
    s.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Split every input into ``--out`` through :func:`lncsplit.process_files`."""
    from lncsplit.corpus import process_files
    from lncsplit.pipeline import PassOptions

    if not a.inputs:
        from lncsplit.examples import examples_dir

        a.inputs = [str(examples_dir())]
    check_paths(a.inputs)
    executor = executor_of(a)
    # Writing outputs creates each core's artifact directory (contract §3.1),
    # for modules that carry an artifact_path.
    # --no-verify also skips lnc_barriercheck: its bands need the verifier's barrier match.
    options = PassOptions(
        lnc_size=a.lnc,
        verify=not a.no_verify,
        expand=not a.no_expand,
        create_artifact_dirs=True,
        racecheck=not a.no_verify,
    )
    progress = Progress(not a.quiet, "split")
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
            )
    finally:
        progress.close()
    for f in report.failed:
        err(f"{f.input}: {format_error(f.error or {})}")
    status = finish(a, report)
    if not a.quiet:
        print(report.table())
    return status
