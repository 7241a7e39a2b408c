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
``split --out`` writes it) or ``OTHER/<rel>.json``; ``--rtol``/``--atol``
compare float Output sets within that tolerance (contract §3.8; default exact).
``--values`` also prints every Output set as numbers: its dtype and shape, min/max/mean
(NaNs counted apart) and the array with its first and last elements (numpy's summary past
64 elements); ``--json`` carries the same summary and the full lists. Dynamic races are reported, not failures (``lncsplit racecheck`` is
the tool that fails on races).
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
    failure_line,
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
        "--rtol", type=float, default=0.0, help="--compare: relative tolerance of float sets (0)"
    )
    p.add_argument(
        "--atol", type=float, default=0.0, help="--compare: absolute tolerance of float sets (0)"
    )
    p.add_argument("--values", action="store_true", help="print every Output set as numbers")
    p.add_argument(
        "--lnc", type=positive, help="N for a symbolic module (default: its ShardId bound)"
    )
    p.add_argument(
        "--no-expand",
        action="store_true",
        help="do not run expand_replication on symbolic modules first (split runs it by default)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON list, an entry per unit")
    add_runner_options(p)
    add_pass_option(p)
    p.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Simulate every unit; its text (or JSON) per unit in input order, then the summary."""
    import json

    check_outputs(a)
    check_paths([p for p in (a.npz, a.compare) if p])  # option-named: a usage error
    if a.rtol < 0 or a.atol < 0:
        from lncsplit.cli._common import UsageError

        raise UsageError("--rtol and --atol must be >= 0")
    units = discover(a, core_sets=True)  # the safety rules (contract §6)
    single = len(units) == 1
    job = partial(
        sim_unit,
        npz=a.npz,
        compare=a.compare,
        single=single,
        lnc=a.lnc,
        expand=not a.no_expand,
        tolerance=(a.rtol, a.atol),
        values=a.values,
    )
    report = run_bulk(a, units, job, command="sim", lnc=a.lnc, quiet=a.json)
    if a.json:  # one JSON list, as every command's --json (it was one object per line)
        docs = [
            {"input": f.input, "status": f.status, "error": f.error, **f.detail}
            for f in report.files
        ]
        print(json.dumps(docs, indent=2))
    else:
        for f in report.files:
            print(f.text if f.text else f"FAIL  {failure_line(f)}")
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
    tolerance: tuple[float, float] = (0.0, 0.0),
    values: bool = False,
) -> FileResult:
    """The job: simulate one unit (and its counterpart). ``detail`` = the result as JSON."""
    from lncsplit.corpus.unit import guarded

    o = _Options(npz, compare, single, lnc, expand, tolerance, values)
    return guarded(unit, partial(_simulate, unit, o))


@dataclass(frozen=True)
class _Options:
    npz: str | None
    compare: str | None
    single: bool
    lnc: int | None
    expand: bool
    tolerance: tuple[float, float] = (0.0, 0.0)
    values: bool = False


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


def _load(unit: Unit, lnc: int | None = None) -> list[Module]:
    from lncsplit._inputs import load_input
    from lncsplit.corpus.discovery import load_core_set

    return load_core_set(unit) if unit.kind == "core_set" else [load_input(unit.path, lnc=lnc)]


def _load_path(path: str, lnc: int | None = None) -> list[Module]:
    """A module file (HLO lowered first, for ``lnc``), or a split output directory (its cores
    in order)."""
    from lncsplit._inputs import load_input
    from lncsplit.corpus.discovery import discover_units

    if os.path.isfile(path):
        return [load_input(path, lnc=lnc)]
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

    mods = _load(unit, o.lnc)
    res.instructions_in = sum(m.instruction_count() for m in mods)
    inputs = sim.load_inputs(o.npz) if o.npz else None
    result = sim.run(_prepared(mods, o.expand), inputs, o.lnc)
    res.detail = describe(result)
    lines = [_header(unit, result)] + _lines(result)
    if o.values:
        res.detail["values"] = _values(result)
        res.detail["summary"] = _summaries(result)
        lines += _value_lines(result)
    if o.compare:
        other = counterpart(unit, o.compare, o.single)
        theirs = _prepared(_load_path(other, result.lnc), o.expand)
        rtol, atol = o.tolerance
        verdict = sim.equivalent(result, theirs, inputs, result.lnc, rtol=rtol, atol=atol)
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
    if r.opaque:  # one line: a generated module can have thousands
        more = f" and {len(r.opaque) - 1} more" if len(r.opaque) > 1 else ""
        out.append(f"  opaque (hashed, not computed): {r.opaque[0]}{more}")
    return out


def describe(r: SimResult) -> dict[str, Any]:
    """The JSON ``detail`` of a run: lnc, steps, checksums per core, races."""
    return {
        "lnc": r.lnc,
        "symbolic": r.symbolic,
        "steps": r.steps,
        "checksums": [{f"{f}/{s}": h for (f, s), h in sorted(c.items())} for c in r.checksums()],
        "races": [race.to_dict() for race in r.races],
        # instructions that computed the opaque hash, not values (contract §3.8)
        "opaque": [str(o) for o in r.opaque],
    }


def _json_number(x: Any) -> Any:
    """A JSON-safe number: NaN and the infinities as strings."""
    import numpy as np

    # np.vectorize hands over Python numbers or numpy scalars, depending on the dtype
    v = x.item() if isinstance(x, np.generic) else x
    return v if not isinstance(v, float) or np.isfinite(v) else str(v)


def summary(v: Any) -> dict[str, Any]:
    """An Output set's numbers in brief: dtype, shape, the first and last (up to) three
    elements in row-major order, min/max/mean over the non-NaN elements (None when there are
    none) and how many are NaN."""
    import numpy as np

    flat = np.asarray(v).reshape(-1)
    nan = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, dtype=bool)
    finite = flat[~nan]
    stats: dict[str, Any] = {"min": None, "max": None, "mean": None}
    if finite.size:
        stats = {
            "min": _json_number(finite.min()),
            "max": _json_number(finite.max()),
            "mean": _json_number(finite.astype(np.float64).mean()),
        }
    return {
        "dtype": str(flat.dtype),
        "shape": list(np.shape(v)),
        "first": [_json_number(x) for x in flat[:3]],
        "last": [_json_number(x) for x in flat[-3:]],
        **stats,
        "nan": int(nan.sum()),
    }


def _values(r: SimResult) -> list[dict[str, Any]]:
    """Per core, every Output set as a nested list of numbers (NaN and inf as strings)."""
    import numpy as np

    out = []
    for core, sets in enumerate(r.outputs):
        out.append(
            {
                f"{f}/{s}": np.vectorize(_json_number, otypes=[object])(
                    r.values(core, f, s)
                ).tolist()
                for (f, s) in sorted(sets)
            }
        )
    return out


def _summaries(r: SimResult) -> list[dict[str, Any]]:
    """Per core, every Output set's :func:`summary`."""
    return [
        {f"{f}/{s}": summary(r.values(core, f, s)) for (f, s) in sorted(sets)}
        for core, sets in enumerate(r.outputs)
    ]


def _value_lines(r: SimResult) -> list[str]:
    import numpy as np

    lines = []
    for core, sets in enumerate(r.outputs):
        for f, s in sorted(sets):
            v = r.values(core, f, s)
            b = summary(v)
            shape = "x".join(map(str, b["shape"])) or "scalar"
            nan = f", {b['nan']} NaN" if b["nan"] else ""
            stats = f"min {b['min']}, max {b['max']}, mean {b['mean']}{nan}"
            text = np.array2string(v, threshold=64, edgeitems=3, precision=6, max_line_width=96)
            lines.append(f"  core {core} {f}/{s} ({v.dtype}, shape {shape}): {stats}")
            lines += ["    " + line for line in text.splitlines()]
    return lines
