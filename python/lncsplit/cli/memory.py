"""``lncsplit memory``: the memory-model report (contract §3.4) per unit, as tables or JSON.

A split output is checked as it is (an N = 1 output as one core); a symbolic
file is first split (pipeline without verification and without its own
memory step, then shared-DRAM placement and sync), so the report shows the
per-core picture; a lone concretized file is checked alone. A unit whose
report has violations fails (exit 1); its ``--plot`` is still drawn — it is
the diagnostic.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
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

# pyplot keeps global state: one figure at a time per process.
_PLOT_LOCK = threading.Lock()


def add_parser(sub: Any) -> None:
    """Register ``memory`` on the subparsers ``sub``."""
    m = sub.add_parser("memory", help="memory-model report (docs/memory.md)")
    m.add_argument("inputs", nargs="+", metavar="INPUT")
    m.add_argument(
        "--lnc", type=positive, help="N for symbolic inputs (default: from the ShardIds, else 2)"
    )
    m.add_argument("--arch", help="override the modules' arch")
    m.add_argument(
        "--plot",
        metavar="PNG",
        help="draw the memory maps of each core and the summary chart (several inputs: PNG gets "
        "-<k> suffixes; each figure's title and the output say which input it draws)",
    )
    m.add_argument("--json", action="store_true", help="print JSON instead of tables")
    add_runner_options(m)
    add_pass_option(m)
    m.set_defaults(run=run)


def plot_paths(units: list[Unit], plot: str | None) -> dict[str, str]:
    """Unit path → PNG: ``plot`` itself for one unit, ``<root>-<k><ext>`` for several."""
    if not plot:
        return {}
    if len(units) == 1:
        return {units[0].path: plot}
    root, ext = os.path.splitext(plot)
    return {u.path: f"{root}-{k}{ext or '.png'}" for k, u in enumerate(units)}


def run(a: argparse.Namespace) -> int:
    """Report every unit in input order (tables, or one JSON list with ``--json``)."""
    check_outputs(a, "plot")
    if a.plot:
        require_plot("--plot")
    units = discover(a, core_sets=True)
    job = partial(memory_unit, lnc=a.lnc, arch=a.arch, plots=plot_paths(units, a.plot))
    report = run_bulk(a, units, job, command="memory", lnc=a.lnc, quiet=a.json)
    if not a.json:
        print_units(report, lambda f: f"== {f.input}\n{f.text}", produced="report")
    else:
        print(json.dumps(unit_docs(report), indent=2))
    return finish(a, report)


def require_plot(option: str) -> None:
    """Before any work: ``option`` draws with matplotlib; without it, a usage error saying
    so and how to install it (exit 2, one line)."""
    from lncsplit.cli._common import UsageError
    from lncsplit.memory.plot import PlotUnavailableError, require_matplotlib

    try:
        require_matplotlib(option)
    except PlotUnavailableError as e:
        raise UsageError(str(e)) from None


def memory_unit(unit: Unit, lnc: int | None, arch: str | None, plots: dict[str, str]) -> FileResult:
    """The job: the memory report of one unit.

    ``detail`` = ``{"kind", "lnc", "report": MemoryReport.to_dict()}``, ``text`` = the
    report's table, ``outputs`` = the plot drawn, if any.
    """
    from lncsplit.corpus.unit import guarded

    return guarded(unit, partial(_report, unit, lnc, arch, plots.get(unit.path)))


def _report(
    unit: Unit, lnc: int | None, arch: str | None, plot: str | None, res: FileResult
) -> None:
    from lncsplit import memory
    from lncsplit.corpus.unit import error_info

    mods, n = _modules(unit, lnc, arch)
    report = memory.check_memory(mods, arch=arch, lnc=1 if n == 1 else None)
    res.detail = {"kind": unit.kind, "lnc": n, "report": report.to_dict()}
    res.text = str(report)
    if plot:
        # The figure is titled with the input and the table says where it went: with several
        # inputs, out-0.png, out-1.png, … each say which input they draw.
        try:
            with _PLOT_LOCK:
                memory.plot_memory(mods, plot, report, title=unit.path)
        except memory.PlotUnavailableError as e:  # a worker without matplotlib: say why
            res.text += f"\nmemory map of {unit.path}: not drawn: {e}"
            res.fail(error_info(e))
            return
        res.text += f"\nmemory map of {unit.path}: {plot}"
        res.outputs = [plot]
    if not report.ok:
        res.fail(error_info(memory.MemoryCheckError(report)))


def _modules(unit: Unit, lnc: int | None, arch: str | None) -> tuple[list[Module], int | None]:
    """Per-core modules of one unit and their N (None for a lone core file)."""
    return unit_modules(unit, lnc, partial(_split, arch=arch), arch)


def _split(m: Module, n: int, arch: str | None) -> list[Module]:
    """A symbolic module's cores, shared DRAM placed and synchronized."""
    from lncsplit import memory
    from lncsplit.pipeline import PassOptions, run_pipeline

    # The pipeline without its memory step: the report is the memory step,
    # and it reports violations instead of raising.
    mods = run_pipeline(
        [m], PassOptions(lnc_size=n, verify=False, memory=False, racecheck=False, arch=arch)
    )
    if n > 1:
        memory.allocate_shared_dram(mods, n)
        memory.sync_shared_allocations(mods, n)
    return mods
