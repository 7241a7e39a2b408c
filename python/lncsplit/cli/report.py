"""``lncsplit report INPUT... --html FILE``: one self-contained HTML page per split (contract
§5; docs/inspect.md).

An INPUT is a split output directory or a symbolic module (split in memory, and then the
source of the explanations), as for ``diff``. With one unit the page is FILE; with several,
FILE is a directory and each page is ``FILE/<name>.html`` (``<name>`` the unit's relative
name). Pages are written atomically. The race section shows ``lncsplit.racecheck`` when this
lncsplit has it.
"""

from __future__ import annotations

import argparse
import os
from functools import partial
from typing import TYPE_CHECKING, Any

from lncsplit.cli._common import (
    add_pass_option,
    add_runner_options,
    err,
    finish,
    format_error,
    positive,
    run_bulk,
)
from lncsplit.cli.diff import add_view_options, discover

if TYPE_CHECKING:
    from lncsplit.corpus.unit import FileResult, Unit


def add_parser(sub: Any) -> None:
    """Register ``report`` on the subparsers ``sub``."""
    p = sub.add_parser("report", help="one self-contained HTML page per split output")
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="DIR",
        help="split output directories (searched), or symbolic modules (split in memory)",
    )
    p.add_argument(
        "--html",
        required=True,
        metavar="FILE",
        help="the page to write (several inputs: a directory, one <name>.html per input)",
    )
    add_view_options(p)
    p.add_argument(
        "--max-rows",
        type=positive,
        default=5000,
        help="instruction rows per page (default 5000; the page says when it is cut)",
    )
    add_runner_options(p)
    add_pass_option(p)
    p.set_defaults(run=run)


def check_html(html: str, several: bool) -> None:
    """Before any work (contract §6): one page's directory must exist; several pages' FILE is
    a directory, created (``mkdir -p``) and checked writable. A usage error otherwise."""
    from lncsplit._atomic import OutputPathError, check_output_file, prepare_output_dir
    from lncsplit.cli._common import UsageError

    try:
        (prepare_output_dir if several else check_output_file)(html)
    except OutputPathError as e:
        raise UsageError(f"--html {e}") from e


def page_paths(units: list[Unit], html: str) -> dict[str, str]:
    """Unit path → page: ``html`` itself for one unit, ``html/<rel>.html`` for several."""
    if len(units) == 1:
        return {units[0].path: html}
    return {u.path: os.path.join(html, *f"{u.rel}.html".split("/")) for u in units}


def run(a: argparse.Namespace) -> int:
    """Write one page per unit, in input order."""
    from lncsplit.cli._common import UsageError
    from lncsplit.views.html import ReportUnavailableError, require_report_extra

    try:  # before any work: the page needs the report extra
        require_report_extra("--html")
    except ReportUnavailableError as e:
        raise UsageError(str(e)) from None
    units = discover(a)
    check_html(a.html, several=len(units) > 1)
    job = partial(
        report_unit,
        pages=page_paths(units, a.html),
        source=a.source,
        lnc=a.lnc,
        arch=a.arch,
        expand=not a.no_expand,
        max_rows=a.max_rows,
        mkdirs=len(units) > 1,
    )
    report = run_bulk(a, units, job, command="report", lnc=a.lnc)
    for f in report.files:
        if f.ok:
            print(f.text)
        else:
            err(f"{f.input}: {format_error(f.error or {})}")
    return finish(a, report)


def report_unit(
    unit: Unit,
    pages: dict[str, str],
    source: str | None,
    lnc: int | None,
    arch: str | None,
    expand: bool,
    max_rows: int,
    mkdirs: bool = False,
) -> FileResult:
    """The job: the page of one unit (``mkdirs``: create its directory under ``--html``)."""
    from lncsplit.corpus.unit import guarded

    body = partial(_report, unit, pages[unit.path], source, lnc, arch, expand, max_rows, mkdirs)
    return guarded(unit, body)


def _report(
    unit: Unit,
    page: str,
    source_path: str | None,
    lnc: int | None,
    arch: str | None,
    expand: bool,
    max_rows: int,
    mkdirs: bool,
    res: FileResult,
) -> None:
    from lncsplit._atomic import write_file_atomic
    from lncsplit.cli._views import unit_views
    from lncsplit.views.html import html_report

    cores, source, notes = unit_views(unit, source_path, lnc=lnc, arch=arch, expand=expand)
    text = html_report(cores, source, title=unit.path, expand=expand, max_rows=max_rows)
    if mkdirs:  # several pages: FILE is a directory the command owns
        os.makedirs(os.path.dirname(page), exist_ok=True)
    write_file_atomic(page, text.encode("utf-8"))
    res.outputs = [page]
    res.instructions_out = [c.instruction_count() for c in cores]
    res.detail = {
        "html": page,
        "lnc": len(cores),
        "source": source.name if source else None,
        "notes": notes,
    }
    why = (
        "explained from the symbolic module"
        if source
        else "presence only: give --source to explain"
    )
    res.text = f"wrote {page} ({unit.path}: {len(cores)} cores, {why})"
