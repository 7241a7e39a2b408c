"""``lncsplit sim``: run programs on the simulator (contract §3.8, §5).

Units (see :mod:`lncsplit.corpus.discovery`): a file holding one module (symbolic:
interpreted by N cores with the shard bound; linked: unlinked first) or a
split output directory (``nc00.json …``, the N cores). For each unit it prints
the run's cores, instances executed, a BLAKE2b-8 checksum of every Output set
per core, and every dynamic race. ``--inputs NPZ`` gives Input arrays (keys
``<function>/<set>`` or ``<function>/<set>/<core>``; the others are drawn from
the fixed seed). ``--compare OTHER`` also runs OTHER on the same inputs and
prints the equivalence verdict: the unit fails (exit 1) when they differ.
OTHER is a module file or split output for a single INPUT; with several, a
root where each unit's counterpart is ``OTHER/<rel>`` (a split output, as
``split --out`` writes it) or ``OTHER/<rel>.json``. Dynamic races are reported,
not failures (``lncsplit racecheck`` is the tool that fails on races).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from lncsplit.cli._common import (
    add_pass_option,
    add_runner_options,
    check_outputs,
    check_paths,
    discover,
    finish,
    positive,
    run_bulk,
)

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.corpus.unit import FileResult, Unit
    from lncsplit.sim import SimResult


class NotEquivalent(Exception):
    """The unit and its ``--compare`` counterpart differ."""


def add_parser(sub: Any) -> None:
    """Register ``sim`` on the subparsers ``sub``."""
    p = sub.add_parser("sim", help="simulate modules or split outputs; compare two versions")
    p.add_argument("inputs", nargs="+", metavar="FILE|DIR")
    p.add_argument(
        "--inputs",
        dest="npz",
        metavar="NPZ",
        help="Input arrays (default: drawn from a fixed seed)",
    )
    p.add_argument("--compare", metavar="OTHER", help="also run OTHER and compare the Output sets")
    p.add_argument(
        "--lnc", type=positive, help="N for a symbolic module (default: its ShardId bound)"
    )
    p.add_argument(
        "--no-expand",
        action="store_true",
        help="do not run expand_replication on symbolic modules first (split runs it by default)",
    )
    p.add_argument("--json", action="store_true", help="print each unit's result as JSON")
    add_runner_options(p)
    add_pass_option(p)
    p.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Simulate every unit; its text (or JSON) per unit in input order, then the summary."""
    import json

    check_outputs(a)
    check_paths([p for p in (a.npz, a.compare) if p])  # option-named: a usage error
    units = discover(a, core_sets=True)  # the safety rules (contract §6)
    single = len(units) == 1
    job = partial(
        sim_unit, npz=a.npz, compare=a.compare, single=single, lnc=a.lnc, expand=not a.no_expand
    )
    report = run_bulk(a, units, job, command="sim", lnc=a.lnc)
    for f in report.files:
        if a.json:
            print(json.dumps({"input": f.input, "status": f.status, "error": f.error, **f.detail}))
        else:
            print(f.text if f.text else f"FAIL  {f.input}: {(f.error or {}).get('message')}")
    status = finish(a, report)
    if not a.json:
        print(report.table())
    return status


def sim_unit(
    unit: Unit,
    npz: str | None,
    compare: str | None,
    single: bool,
    lnc: int | None,
    expand: bool = True,
) -> FileResult:
    """The job: simulate one unit (and its counterpart). ``detail`` = the result as JSON."""
    from lncsplit.corpus.unit import guarded

    return guarded(unit, partial(_simulate, unit, _Options(npz, compare, single, lnc, expand)))


@dataclass(frozen=True)
class _Options:
    npz: str | None
    compare: str | None
    single: bool
    lnc: int | None
    expand: bool


def _prepared(mods: list[Module], expand: bool) -> list[Module]:
    """A symbolic module gets expand_replication first, as split does (contract §3.8)."""
    from lncsplit import _core, passes

    if (
        expand
        and len(mods) == 1
        and mods[0].neuron_core_id is None
        and not _core.is_linked(mods[0])
    ):
        passes.expand_replication(mods[0])
    return mods


def _load(unit: Unit) -> list[Module]:
    from lncsplit._inputs import load_input
    from lncsplit.corpus.discovery import load_core_set

    return load_core_set(unit) if unit.kind == "core_set" else [load_input(unit.path)]


def _load_path(path: str) -> list[Module]:
    """A module file, or a split output directory (its cores in order)."""
    import lncsplit
    from lncsplit.corpus.discovery import discover_units

    if os.path.isfile(path):
        return [lncsplit.load(path)]
    units = [
        u
        for u in discover_units([path], core_sets=True)
        if u.kind == "core_set" and os.path.samefile(u.path, path)
    ]
    if not units:
        raise FileNotFoundError(f"{path} holds no split output (nc00.json …)")
    return _load(units[0])


def counterpart(unit: Unit, other: str, single: bool) -> str:
    """The ``--compare`` path for ``unit``."""
    if single or os.path.isfile(other) or os.path.isfile(os.path.join(other, "nc00.json")):
        return other
    below = os.path.join(other, *unit.rel.split("/"))
    return below if os.path.isdir(below) else below + ".json"


def _simulate(unit: Unit, o: _Options, res: FileResult) -> None:
    from lncsplit import sim

    mods = _load(unit)
    res.instructions_in = sum(m.instruction_count() for m in mods)
    inputs = sim.load_inputs(o.npz) if o.npz else None
    result = sim.run(_prepared(mods, o.expand), inputs, o.lnc)
    res.detail = describe(result)
    lines = [_header(unit, result)] + _lines(result)
    if o.compare:
        other = counterpart(unit, o.compare, o.single)
        verdict = sim.equivalent(result, _prepared(_load_path(other), o.expand), inputs, result.lnc)
        res.detail["compare"] = {
            "other": other,
            "equivalent": bool(verdict),
            "difference": None if verdict else str(verdict.difference),
        }
        lines.append(f"  compare {other}: {verdict}")
        res.text = "\n".join(lines)
        if not verdict:
            raise NotEquivalent(f"{unit.path} and {other} differ: {verdict.difference}")
    res.text = "\n".join(lines)


def _header(unit: Unit, r: SimResult) -> str:
    what = "symbolic module" if r.symbolic else "cores"
    return f"{unit.path}: {what}, lnc {r.lnc}, {r.steps} instances, {len(r.races)} dynamic race(s)"


def _lines(r: SimResult) -> list[str]:
    out = []
    for core, sums in enumerate(r.checksums()):
        listing = ", ".join(f"{f}/{s} {h}" for (f, s), h in sorted(sums.items())) or "no Output set"
        out.append(f"  core {core}: {listing}")
    out += [f"  race: {race}" for race in r.races]
    return out


def describe(r: SimResult) -> dict[str, Any]:
    """The JSON ``detail`` of a run: lnc, steps, checksums per core, races."""
    return {
        "lnc": r.lnc,
        "symbolic": r.symbolic,
        "steps": r.steps,
        "checksums": [{f"{f}/{s}": h for (f, s), h in sorted(c.items())} for c in r.checksums()],
        "races": [race.to_dict() for race in r.races],
    }
