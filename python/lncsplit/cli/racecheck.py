"""``lncsplit racecheck``: lnc_barriercheck on split outputs (contract §3.6, §5).

Units (see :mod:`lncsplit.corpus.discovery`): a split output (``nc00.json …
nc<N-1>.json`` in one directory, core order and core ids checked as
``verify`` does) is checked as one kernel's N cores. A symbolic module file is
first run through the pipeline (N from ``--lnc``, else its ShardIds, else 2)
without the race check, so its own races are reported rather than raised. A
lone core file is an error (its partners are needed). A unit with a race
fails (exit 1); each race is printed with its witness and its fix; ``--json``
prints one JSON list of ``{"input", "report"}`` (the RaceReport,
``to_dict()``) or ``{"input", "error"}`` entries instead.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import TYPE_CHECKING, Any

from lncsplit.cli._common import (
    add_pass_option,
    add_runner_options,
    check_outputs,
    discover,
    finish,
    positive,
    print_units,
    run_bulk,
    unit_docs,
    unit_modules,
)

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.corpus.unit import FileResult, Unit


def add_parser(sub: Any) -> None:
    """Register ``racecheck`` on the subparsers ``sub``."""
    r = sub.add_parser(
        "racecheck", help="lnc_barriercheck: races between the cores of split outputs"
    )
    r.add_argument("inputs", nargs="+", metavar="DIR", help="split outputs (directories)")
    r.add_argument(
        "--mode",
        choices=("exact", "interval"),
        default="exact",
        help="exact footprints (default) or the compiler's interval filter",
    )
    r.add_argument("--json", action="store_true", help="print JSON instead of text")
    r.add_argument(
        "--lnc", type=positive, help="N for symbolic module files (default: their ShardIds, else 2)"
    )
    add_runner_options(r)
    add_pass_option(r)
    r.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Check every unit; print its races (or ``ok``) in input order, then the summary."""
    check_outputs(a)
    units = discover(a, core_sets=True)
    job = partial(racecheck_unit, mode=a.mode, lnc=a.lnc)
    report = run_bulk(a, units, job, command="racecheck", lnc=a.lnc, quiet=a.json)
    if not a.json:
        print_units(
            report,
            lambda f: f"{'ok   ' if f.ok else 'RACE '} {f.input}: {f.text}",
            produced="report",
        )
    status = finish(a, report)
    print(json.dumps(unit_docs(report), indent=2) if a.json else report.table())
    return status


def racecheck_unit(unit: Unit, mode: str, lnc: int | None) -> FileResult:
    """The job: the race report of one unit.

    ``detail`` = ``{"kind", "lnc", "report": RaceReport.to_dict()}``; ``text``
    = the races with witness and fix (or ``no race``); a race fails the unit
    with ``NeuronAssertion`` 9301 naming the first one.
    """
    from lncsplit.corpus.unit import guarded

    return guarded(unit, partial(_check, unit, mode, lnc))


def _check(unit: Unit, mode: str, lnc: int | None, res: FileResult) -> None:
    from lncsplit.corpus.unit import error_info
    from lncsplit.passes.racecheck import racecheck

    cores = _cores(unit, lnc)
    report = racecheck(cores, mode)  # type: ignore[arg-type]
    res.detail = {"kind": unit.kind, "lnc": len(cores), "report": report.to_dict()}
    res.text = str(report)
    if not report.ok:
        res.fail(error_info(_race_error(report)))


def _race_error(report: Any) -> Exception:
    from lncsplit.errors import NeuronAssertion

    race = report.races[0]
    return NeuronAssertion(
        9301,
        f"{len(report.races)} race(s); the first: {race.summary()}",
        "lncsplit/lnc_barriercheck",
        f"fix: {race.fix}",
    )


def _cores(unit: Unit, lnc: int | None) -> list[Module]:
    """The cores of one unit: a split output as is; a symbolic file split first."""
    cores, n = unit_modules(unit, lnc, _split)
    if n is None:
        m = cores[0]
        raise ValueError(
            f"{m.name} is one core (neuron_core_id {m.neuron_core_id}); "
            "racecheck its directory (nc00.json … together)"
        )
    return cores


def _split(m: Module, n: int) -> list[Module]:
    """A symbolic module's cores: the pipeline without the race check (its races are
    reported, not raised)."""
    from lncsplit.pipeline import PassOptions, run_pipeline

    # The instance walk is bounded (10⁸ per function, 9306); N is capped by infer_lnc.
    return run_pipeline([m], PassOptions(lnc_size=n, racecheck=False))
