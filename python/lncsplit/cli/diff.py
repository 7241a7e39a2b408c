"""``lncsplit diff INPUT...``: what differs between the cores of each split (contract §4, §5;
docs/inspect.md).

An INPUT is a split output directory (``nc00.json`` …; directories are searched, each split
output found is one unit) or a symbolic module (BIR-JSON, or HLO text named explicitly), split
in memory first — then the module itself names the predicate that decided each presence
difference. ``--source`` gives that module for one split output. Differences are not failures:
exit 1 only when an input cannot be read or split.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import TYPE_CHECKING, Any

from lncsplit.cli._common import (
    UsageError,
    add_pass_option,
    add_runner_options,
    finish,
    positive,
    print_units,
    run_bulk,
    unit_docs,
)

if TYPE_CHECKING:
    from lncsplit.corpus.unit import FileResult, Unit


def add_view_options(p: argparse.ArgumentParser) -> None:
    """``--source``, ``--lnc``, ``--arch``, ``--no-expand`` (shared with ``report``)."""
    p.add_argument(
        "--source",
        metavar="FILE",
        help="the symbolic module the split started from (names the deciding predicates; "
        "one INPUT only)",
    )
    p.add_argument(
        "--lnc", type=positive, help="N for symbolic inputs (default: from the ShardIds, else 2)"
    )
    p.add_argument("--arch", help="override the arch (HLO input: default gen3)")
    p.add_argument("--no-expand", action="store_true", help="explain without expand_replication")


def add_parser(sub: Any) -> None:
    """Register ``diff`` on the subparsers ``sub``."""
    p = sub.add_parser("diff", help="what differs between the cores of a split")
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="split output directories (searched), or symbolic modules (split in memory)",
    )
    add_view_options(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_runner_options(p)
    add_pass_option(p)
    p.set_defaults(run=run)


def discover(a: argparse.Namespace) -> list[Unit]:
    """The units of ``diff``/``report``; ``--source`` needs exactly one."""
    from lncsplit.cli import _common

    _common.check_outputs(a)
    _common.check_paths([a.source] if a.source else [])
    units = _common.discover(a, core_sets=True)  # the safety rules (contract §6)
    if a.source and len(units) != 1:
        raise UsageError(
            f"--source names the symbolic module of one split output; the inputs hold {len(units)}"
        )
    return units


def run(a: argparse.Namespace) -> int:
    """Diff every unit, in input order (text, or one JSON list with ``--json``)."""
    units = discover(a)
    job = partial(diff_unit, source=a.source, lnc=a.lnc, arch=a.arch, expand=not a.no_expand)
    report = run_bulk(a, units, job, command="diff", lnc=a.lnc, quiet=a.json)
    if not a.json:
        print_units(report, lambda f: f"== {f.input}\n{f.text}", produced="diff")
    else:
        print(json.dumps(unit_docs(report, ("diff", "notes")), indent=2))
    return finish(a, report)


def diff_unit(
    unit: Unit, source: str | None, lnc: int | None, arch: str | None, expand: bool
) -> FileResult:
    """The job: the differences between the cores of one unit."""
    from lncsplit.corpus.unit import guarded

    return guarded(unit, partial(_diff, unit, source, lnc, arch, expand))


def _diff(
    unit: Unit,
    source_path: str | None,
    lnc: int | None,
    arch: str | None,
    expand: bool,
    res: FileResult,
) -> None:
    import lncsplit
    from lncsplit.cli._views import unit_views

    cores, source, notes = unit_views(unit, source_path, lnc=lnc, arch=arch, expand=expand)
    d = lncsplit.diff(cores, source, expand=expand)
    res.detail = {"diff": d.to_dict(), "notes": notes}
    res.text = "\n".join([*(f"note: {n}" for n in notes), str(d)])
    res.instructions_out = [c.instruction_count() for c in cores]
