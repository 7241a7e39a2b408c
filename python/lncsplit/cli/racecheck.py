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

``--engines`` (contract §3.10) checks inside each core instead: every input
FILE is one core (or an N = 1 module), every core of a split output DIR (dump
roots included) is checked on its own with :func:`lncsplit.enginecheck`. The
exit code is 1 iff some report is not ``ok`` (or an input failed); ``--json``
prints one ``{"input": <core file>, "report": <EngineReport JSON>}`` per core
(``{"input", "error"}`` for an input that failed). ``--why A B`` prints, per
core, the chain of orderings between instructions A and B or where it breaks
(``--json``: ``{"input", "why"}``); it fails only an input where A or B names
nothing.
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
    r.add_argument(
        "inputs",
        nargs="+",
        metavar="DIR",
        help="split outputs (directories); with --symbolic, symbolic module files; "
        "with --engines also core files (FILE|DIR)",
    )
    r.add_argument(
        "--symbolic",
        action="store_true",
        help="decide every N at once on symbolic module files (docs/passes.md); "
        "--lnc then takes N, LO-HI or all (default 2-64)",
    )
    r.add_argument(
        "--mode",
        choices=("exact", "interval"),
        default="exact",
        help="exact footprints (default) or the compiler's interval filter",
    )
    r.add_argument("--json", action="store_true", help="print JSON instead of text")
    r.add_argument(
        "--engines",
        action="store_true",
        help="check inside each core: engines, DMA queues and semaphores (sync_info)",
    )
    r.add_argument(
        "--why",
        nargs=2,
        metavar=("A", "B"),
        help="with --engines: the chain of orderings between instructions A and B "
        "(NAME, FUNCTION:NAME or @POSITION), or where it breaks",
    )
    r.add_argument(
        "--lnc",
        help="N for symbolic module files (default: their ShardIds, else 2); "
        "with --symbolic: N, LO-HI or all",
    )
    add_runner_options(r)
    add_pass_option(r)
    r.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Check every unit; print its races (or ``ok``) in input order, then the summary."""
    if a.symbolic and (a.engines or a.why):
        # Two different checks: every N across cores vs inside one core.
        raise UsageError("--symbolic and --engines are different checks; give one")
    if a.symbolic and a.pass_ is not None:
        raise UsageError("--pass reads compiler dump roots; --symbolic takes module files")
    if a.symbolic:
        from lncsplit.cli.racecheck_symbolic import run as run_symbolic

        return run_symbolic(a)
    if a.lnc is not None:
        try:
            a.lnc = positive(a.lnc)
        except argparse.ArgumentTypeError as e:
            raise UsageError(f"--lnc: {e}") from None
    check_outputs(a)
    if a.why and not a.engines:
        raise UsageError("--why needs --engines")
    if a.engines:
        return _run_engines(a)
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

    if not report.races:
        u = report.undecided[0]
        return NeuronAssertion(
            9301,
            f"{len(report.undecided)} undecided pair(s); the first: {u.race.summary()}",
            "lncsplit/lnc_barriercheck",
            f"why: {u.reason}",
        )
    race = report.races[0]
    return NeuronAssertion(
        9301,
        f"{len(report.races)} race(s); the first: {race.summary()}",
        "lncsplit/lnc_barriercheck",
        f"fix: {race.fix}",
    )


# ----------------------------------------------------------------------------- --engines


def _run_engines(a: argparse.Namespace) -> int:
    """``racecheck --engines``: every core of every unit on its own (contract §3.10)."""
    if a.lnc is not None:
        raise UsageError("--lnc is for split inputs; --engines checks each core as it is")
    units = discover(a, core_sets=True)
    why = tuple(a.why) if a.why else None
    job = partial(engines_unit, why=why)
    report = run_bulk(a, units, job, command="racecheck --engines", lnc=None, quiet=a.json)
    key = "whys" if why else "reports"
    if not a.json:
        print_units(report, lambda f: f.text, produced=key)
    status = finish(a, report)
    if a.json:
        docs: list[dict[str, Any]] = []
        for f in report.files:
            if key in f.detail:
                docs += f.detail[key]
            else:
                docs.append({"input": f.input, "error": f.error})
        print(json.dumps(docs, indent=2))
    else:
        print(report.table())
    return status


def engines_unit(unit: Unit, why: tuple[str, str] | None = None) -> FileResult:
    """The job of ``--engines``: the engine report (or, with ``why``, the
    explanation) of every core of one unit.

    ``detail`` = ``{"reports": [{"input", "report"}]}`` (``{"whys": [{"input",
    "why"}]}``), one per core in core order; ``text`` = per core its verdict
    line and findings. A report that is not ok fails the unit.
    """
    from lncsplit.corpus.unit import guarded

    return guarded(unit, partial(_check_engines, unit, why))


def _engine_cores(unit: Unit) -> list[tuple[str, Module]]:
    """(file, module) per core: a split output's cores in core order, a file alone."""
    from lncsplit._inputs import load_input
    from lncsplit.corpus.discovery import load_core_set

    if unit.kind == "core_set":
        return list(zip(unit.files, load_core_set(unit), strict=True))
    return [(unit.path, load_input(unit.path))]


def _check_engines(unit: Unit, why: tuple[str, str] | None, res: FileResult) -> None:
    from lncsplit.passes.enginecheck import enginecheck
    from lncsplit.passes.enginecheck import why as explain_order

    cores = _engine_cores(unit)
    lines: list[str] = []
    if why is not None:
        whys = []
        for path, m in cores:
            w = explain_order(m, why[0], why[1])
            whys.append({"input": path, "why": w})
            lines.append(f"{path}:\n{w['text']}")
        res.detail = {"whys": whys}
        res.text = "\n".join(lines)
        return
    reports = []
    bad = []
    for path, m in cores:
        r = enginecheck(m)
        reports.append({"input": path, "report": r.to_dict()})
        lines.append(f"{'ok   ' if r.ok else 'RACE '} {path}: {r}")
        if not r.ok:
            bad.append((path, r))
    res.detail = {"reports": reports}
    res.text = "\n".join(lines)
    if bad:
        path, r = bad[0]
        first = (
            r.races[0].summary()
            if r.races
            else (
                str(r.undecided[0])
                if r.undecided
                else str(next(w for w in r.waits if w.status != "early"))
            )
        )
        res.fail(
            {
                "type": "EngineReport",
                "code": None,
                "message": f"{len(bad)} core(s) not ok; the first, {path}: {first}",
            }
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
