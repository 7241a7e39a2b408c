"""``lncsplit report DIR --html FILE``: one self-contained HTML page for one split output.

The page has a summary, the per-core instruction table (kept or pruned and why, from
:func:`lncsplit.explain` when the symbolic module is given), the memory maps of every core
(PNG images embedded as ``data:`` URIs) with their allocation tables, the differences between
cores (:func:`lncsplit.diff`) and the races (``lncsplit.racecheck`` when it exists). Rows link
to each other: an instruction to the memory it touches and to its races, a race to both
instructions and the location.

No network: the CSS and the small script are inline, the images embedded. The HTML comes from
a jinja2 template (``templates/report.html.j2``, autoescaped); jinja2 and matplotlib are the
``report`` extra.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lncsplit._core import Module
from lncsplit.errors import LncsplitError
from lncsplit.views.diff import CoreDiff, diff, merged_order
from lncsplit.views.explain import Explanation, explain_all, walk_instructions
from lncsplit.views.races import RaceSection, race_section
from lncsplit.views.splitdir import check_cores, check_source, load_split_dir

__all__ = [
    "DEFAULT_MAX_ROWS",
    "ReportUnavailableError",
    "html_report",
    "report_data",
    "require_report_extra",
    "write_html_report",
]

DEFAULT_MAX_ROWS = 5000
"""Instruction rows shown by default; a larger module's table is cut (the page says so)."""

Progress = Callable[[int, int], None]


class ReportUnavailableError(LncsplitError, ImportError):
    """jinja2 (or matplotlib) is not installed."""


def require_report_extra(what: str = "the HTML report") -> Any:
    """jinja2, after checking that matplotlib (the memory maps) is there too; else
    :class:`ReportUnavailableError` naming what is missing and how to install it."""
    import importlib

    found: dict[str, Any] = {}
    missing = []
    for name in ("jinja2", "matplotlib"):
        try:
            found[name] = importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ReportUnavailableError(
            f"{what} needs jinja2 and matplotlib ({' and '.join(missing)} not installed): "
            "pip install 'lncsplit[report]'"
        )
    return found["jinja2"]


def _jinja() -> Any:
    return require_report_extra()


# --------------------------------------------------------------------------- data


@dataclass
class _Ids:
    """Anchor ids of the page: instructions ``i<k>``, memory sets ``s<k>``, locations ``l<k>``."""

    inst: dict[tuple[str, str], str] = field(default_factory=dict)
    sets: dict[tuple[int, str, str], str] = field(default_factory=dict)
    locs: dict[tuple[int, str, str], str] = field(default_factory=dict)

    def instruction(self, key: tuple[str, str]) -> str:
        return self.inst.setdefault(key, f"i{len(self.inst)}")


def _core_cells(
    present: list[bool], ex: Explanation | None, explained: bool
) -> list[dict[str, Any]]:
    """One cell per core: ``state`` (``kept``, ``pruned`` or ``lowered``: kept by the split,
    replaced by lower_local_collectives), ``kept`` (the instruction is in this core's output), the
    reason and the evidence. ``explained``: the page has the symbolic module."""
    cells = []
    for c, here in enumerate(present):
        if ex is not None:
            ce = ex.cores[c]
            state = ce.verdict
            cells.append(
                {
                    "state": state,
                    "kept": state == "kept",
                    "reason": ce.reason
                    if state == "lowered"
                    else (ce.reason.partition(": ")[2] or ce.reason),
                    "predicates": [
                        f"{p.text}  ->  {p.bound_text}: {p.value_text}"
                        + ("  (dropped)" if p.dropped else "")
                        for p in ce.predicates
                    ],
                    "children": ce.pruned_children,
                }
            )
        else:
            if explained:  # not in the symbolic module: made after the split
                reason = (
                    "made after the split (by the LNC tail)"
                    if here
                    else "not on this core (made after the split on others)"
                )
            else:
                reason = (
                    "present on this core"
                    if here
                    else "absent (give --source for the deciding predicate)"
                )
            state = "kept" if here else "pruned"
            cells.append(
                {"state": state, "kept": here, "reason": reason, "predicates": [], "children": []}
            )
    return cells


def _instruction_rows(
    cores: Sequence[Module],
    explained: dict[tuple[str, str], Explanation],
    order: list[tuple[str, str]],
    diffs: CoreDiff,
    races: RaceSection,
    ids: _Ids,
) -> list[dict[str, Any]]:
    per_core: list[dict[tuple[str, str], Any]] = []
    for c in cores:
        per_core.append({(r.function, r.name): r for r in walk_instructions(c)})
    differing = {(d.function, d.instruction) for d in diffs.differences if d.instruction}
    race_index = races.by_instruction()
    engine_index = races.engine_by_instruction()
    undecided_index = races.undecided_by_instruction()
    rows = []
    for key in merged_order(per_core, order):
        refs = [idx.get(key) for idx in per_core]
        first = next(r for r in refs if r is not None) if any(refs) else None
        ex = explained.get(key)
        sets = sorted(
            {
                (c, a.memsetref)
                for c, r in enumerate(refs)
                if r is not None
                for a in (*r.view.ins, *r.view.outs, *r.view.indirection_ins)
                if a.memsetref
            }
        )
        race_ids = race_index.get(key, [])
        rows.append(
            {
                "id": ids.instruction(key),
                "function": key[0],
                "name": key[1],
                "block": first.block if first is not None else (ex.block if ex else ""),
                "opcode": first.view.opcode if first is not None else (ex.opcode if ex else ""),
                "cells": _core_cells([r is not None for r in refs], ex, bool(explained)),
                "differs": key in differing,
                "memory": [
                    {"core": c, "set": s, "href": "#" + ids.sets[(c, key[0], s)]}
                    for c, s in sets
                    if (c, key[0], s) in ids.sets
                ],
                "races": [{"n": k, "href": f"#r{k}"} for k in race_ids],
                "undecided": [{"n": k, "href": f"#u{k}"} for k in undecided_index.get(key, [])],
                "engine_races": [{"n": k, "href": f"#e{k}"} for k in engine_index.get(key, [])],
            }
        )
    return rows


def _memory_rows(maps: Sequence[Any], ids: _Ids) -> list[list[dict[str, Any]]]:
    """Per core, one row per location (anchors: the location, and its set on the first row)."""
    out = []
    for cm in maps:
        rows = []
        for p in cm.placements():
            set_key = (cm.core, p.function, p.set_name)
            set_id = None
            if set_key not in ids.sets:
                set_id = ids.sets[set_key] = f"s{len(ids.sets)}"
            loc_id = ids.locs.setdefault((cm.core, p.function, p.location), f"l{len(ids.locs)}")
            rows.append(
                {
                    "id": loc_id,
                    "set_id": set_id,
                    "p": p,
                    "lane": "shared DRAM" if p.shared else p.memory,
                    "addr": "-" if p.start is None else f"{p.start:#x}",
                    "bad": bool(p.violations),
                }
            )
        out.append(rows)
    return out


def _memory_images(maps: Sequence[Any], report: Any, title: str) -> tuple[list[str], str | None]:
    try:
        from lncsplit.memory.plot import memory_png
    except ImportError:  # pragma: no cover - matplotlib is part of the report extra
        return [], None

    def uri(png: bytes) -> str:
        return "data:image/png;base64," + base64.b64encode(png).decode("ascii")

    per_core = [
        uri(memory_png([cm], report, title=f"{title}, core {cm.core}", summary=False))
        for cm in maps
    ]
    summary = uri(memory_png([], report, title=title, summary=True))
    return per_core, summary


def _linked_sides(r: dict[str, Any], ids: _Ids) -> list[dict[str, Any]]:
    """Both sides of a race dict, each with the ``href`` of its instruction's row (or None)."""
    sides = []
    for side in ("a", "b"):
        s = r.get(side) or {}
        key = (str(s.get("function")), str(s.get("instruction")))
        sides.append({**s, "href": "#" + ids.inst[key] if key in ids.inst else None})
    return sides


def _race_rows(races: RaceSection, ids: _Ids) -> list[dict[str, Any]]:
    rows = []
    for k, r in enumerate(races.races):
        sides = _linked_sides(r, ids)
        loc = r.get("location") or {}
        lk = (
            int(loc.get("core", -1)),
            str((r.get("a") or {}).get("function")),
            str(loc.get("name")),
        )
        rows.append(
            {
                "id": f"r{k}",
                "a": sides[0],
                "b": sides[1],
                "location": loc,
                "location_href": "#" + ids.locs[lk] if lk in ids.locs else None,
                "witness": r.get("witness") or {},
                "kind": r.get("kind"),
                "fix": r.get("fix"),
            }
        )
    return rows


def _engine_rows(races: RaceSection, ids: _Ids) -> list[dict[str, Any]]:
    """The races inside one core, each side linked to its instruction's row."""
    rows = []
    for k, r in enumerate(races.engine):
        a, b = _linked_sides(r, ids)
        rows.append({**r, "id": f"e{k}", "a": a, "b": b})
    return rows


def _undecided_rows(races: RaceSection, ids: _Ids) -> list[dict[str, Any]]:
    """The pairs the cross-core check leaves undecided, each side linked to its row."""
    rows = []
    for k, u in enumerate(races.undecided):
        r = u.get("race") or {}
        a, b = _linked_sides(r, ids)
        rows.append(
            {
                "id": f"u{k}",
                "reason": u.get("reason"),
                "a": a,
                "b": b,
                "location": r.get("location") or {},
                "witness": r.get("witness") or {},
            }
        )
    return rows


def report_data(
    cores: Sequence[Module],
    source: Module | None = None,
    *,
    title: str | None = None,
    races: Any = None,
    expand: bool = True,
    max_rows: int = DEFAULT_MAX_ROWS,
    images: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as plain data (the template's context)."""
    from lncsplit import __version__
    from lncsplit.memory import check_memory, memory_maps

    cores = list(cores)
    check_cores(cores)
    if source is not None:
        check_source(cores, source)
    n = len(cores)
    title = title or cores[0].name
    explanations = None
    if source is not None and n > 1:
        explanations = explain_all(source, n, expand=expand, progress=progress)
    explained = {(ex.function, ex.instruction): ex for ex in explanations or []}
    order = list(explained)
    diffs = diff(cores, source, expand=expand, explanations=explanations or [])
    report = check_memory(cores)
    maps = memory_maps(cores, report)
    ids = _Ids()
    memory_rows = _memory_rows(maps, ids)
    race_sec = race_section(cores, races)
    rows = _instruction_rows(cores, explained, order, diffs, race_sec, ids)
    race_rows = _race_rows(race_sec, ids)
    images_per_core, summary_image = _memory_images(maps, report, title) if images else ([], None)
    return {
        "title": title,
        "version": __version__,
        "lnc": n,
        "modules": [c.name for c in cores],
        "arch": cores[0].arch,
        "source": source.name if source is not None else None,
        "cores": [
            {
                "core": cm.core,
                "module": cm.module,
                "instructions": cores[i].instruction_count(),
                "kept": sum(1 for r in rows if r["cells"][i]["state"] == "kept"),
                "pruned": sum(1 for r in rows if r["cells"][i]["state"] == "pruned"),
                "lowered": sum(1 for r in rows if r["cells"][i]["state"] == "lowered"),
                "violations": [v.message for v in cm.violations],
                "memory_rows": memory_rows[i],
                "image": images_per_core[i] if images_per_core else None,
            }
            for i, cm in enumerate(maps)
        ],
        "memory_ok": report.ok,
        "summary_image": summary_image,
        "rows": rows[:max_rows],
        "rows_total": len(rows),
        "rows_differing": sum(1 for r in rows if r["differs"]),
        "diff_lines": [{"d": d, "line": d.line()} for d in diffs.differences],
        "diff_counts": {k: len(diffs.of_kind(k)) for k in ("presence", "address", "memory")},
        "races": race_sec,
        "race_rows": race_rows,
        "engine_rows": _engine_rows(race_sec, ids),
        "undecided_rows": _undecided_rows(race_sec, ids),
    }


def html_report(cores: Sequence[Module], source: Module | None = None, **kwargs: Any) -> str:
    """The report page as one HTML string (see :func:`report_data` for the options)."""
    jinja2 = _jinja()
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lncsplit.views", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return str(env.get_template("report.html.j2").render(**report_data(cores, source, **kwargs)))


def write_html_report(
    split_dir: str | os.PathLike[str],
    path: str | os.PathLike[str],
    source: Module | None = None,
    **kwargs: Any,
) -> Path:
    """Read the split output ``split_dir`` and write its report page to ``path`` (atomically:
    a temporary file beside it, then a rename)."""
    cores = load_split_dir(split_dir)
    kwargs.setdefault("title", str(split_dir))
    text = html_report(cores, source, **kwargs)
    from lncsplit._atomic import write_file_atomic

    out = Path(path)
    write_file_atomic(out, text.encode("utf-8"))
    return out
