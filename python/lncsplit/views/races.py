"""The race section of the views: ``lncsplit.racecheck`` (contract §3.6) when it exists.

The race checker lands separately; this module is the one seam between it and the views. It
reads only the documented JSON shape of ``RaceReport.to_json()``::

    {"ok": bool, "mode": str, "races": [{"a": {"core", "function", "instruction", "band"},
      "b": {...}, "location": {"core", "name"}, "witness": {"partition", "byte"},
      "kind", "fix"}, ...]}

so it works with the real checker, with a report saved by ``lncsplit racecheck --json``, or
with any object whose ``to_json()`` returns that document (as a ``str`` or a ``dict``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RaceSection", "race_section", "racecheck_available", "sides_index"]


def racecheck_available() -> bool:
    """Whether this lncsplit has ``lncsplit.racecheck``."""
    import lncsplit

    return callable(getattr(lncsplit, "racecheck", None))


@dataclass
class RaceSection:
    """What the report shows about races.

    ``status`` is ``ok`` (checked, no race), ``races`` (checked, ``races`` lists them),
    ``error`` (the checker refused the cores: ``message`` says why) or ``unavailable`` (no
    race checker in this lncsplit, or it was not asked for).
    """

    status: str
    message: str = ""
    mode: str | None = None
    races: list[dict[str, Any]] = field(default_factory=list)
    undecided: list[dict[str, Any]] = field(default_factory=list)
    """Candidate races between cores that order lncsplit does not model may prevent
    (``RaceReport.undecided``): ``{"reason", "race"}``."""
    engine: list[dict[str, Any]] = field(default_factory=list)
    """Races inside one core (``lncsplit.enginecheck``, docs/engines.md): each
    ``EngineRace.to_dict()`` with its ``core``."""
    engine_notes: list[str] = field(default_factory=list)
    """Per core whose engine check did not come out ok without a race: why (non-ok
    waits, undecided findings, a refusal)."""

    def by_instruction(self) -> dict[tuple[str, str], list[int]]:
        """``(function, instruction)`` → indexes of the races it is a side of (any core)."""
        return sides_index(self.races)

    def engine_by_instruction(self) -> dict[tuple[str, str], list[int]]:
        """``(function, instruction)`` → indexes of the engine races it is a side of."""
        return sides_index(self.engine)

    def undecided_by_instruction(self) -> dict[tuple[str, str], list[int]]:
        """``(function, instruction)`` → indexes of the undecided pairs it is a side of."""
        return sides_index([u.get("race") or {} for u in self.undecided])


def sides_index(races: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[int]]:
    """``(function, instruction)`` → indexes of the race dicts (``{"a", "b", …}``) it is a
    side of."""
    out: dict[tuple[str, str], list[int]] = {}
    for k, r in enumerate(races):
        for side in ("a", "b"):
            s = r.get(side) or {}
            key = (str(s.get("function")), str(s.get("instruction")))
            if k not in out.get(key, []):
                out.setdefault(key, []).append(k)
    return out


def _document(report: Any) -> dict[str, Any]:
    if isinstance(report, dict):
        return report
    doc = report.to_json() if hasattr(report, "to_json") else report
    if isinstance(doc, (str, bytes)):
        doc = json.loads(doc)
    if not isinstance(doc, dict):
        raise TypeError(f"a race report must be a JSON object, got {type(doc).__name__}")
    return doc


def _from_document(doc: dict[str, Any]) -> RaceSection:
    races = [r for r in doc.get("races") or [] if isinstance(r, dict)]
    undecided = [u for u in doc.get("undecided") or [] if isinstance(u, dict)]
    status = "ok" if doc.get("ok", not races) and not races and not undecided else "races"
    return RaceSection(status=status, mode=doc.get("mode"), races=races, undecided=undecided)


def _engine_races(cores: Sequence[Any], section: RaceSection) -> None:
    """Add each core's races inside the core (enginecheck) to ``section``."""
    import lncsplit

    check = getattr(lncsplit, "enginecheck", None)
    if not callable(check):
        return
    for c, m in enumerate(cores):
        try:
            rep = check(m)
        except Exception as e:  # noqa: BLE001 - shown in the page, the rest of the report stands
            section.engine_notes.append(
                f"core {c}: the engine check refused it: {type(e).__name__}: {e}"
            )
            continue
        for r in rep.races:
            d = r.to_dict()
            d["a"]["function"], d["b"]["function"] = r.a.function, r.b.function
            d["a"]["label"], d["b"]["label"] = r.a.label(), r.b.label()
            section.engine.append({**d, "core": c})
        bad = [w for w in rep.waits if w.status in ("deadlock", "no-update")]
        if bad or rep.undecided:
            section.engine_notes.append(
                f"core {c}: {len(bad)} wait(s) deadlock or no-update, {len(rep.undecided)} undecided"
                " (lncsplit racecheck --engines lists them)"
            )


def race_section(cores: Sequence[Any], races: Any = None) -> RaceSection:
    """The race section for ``cores``.

    ``races`` is a race report (a ``RaceReport``, its JSON text, or the decoded dict) to show
    as is; ``False`` skips races; ``None`` runs ``lncsplit.racecheck(cores)`` when this
    lncsplit has it. Unless ``False``, each core's races inside the core
    (``lncsplit.enginecheck``) are added. A checker that refuses the cores (9302–9306, a verifier error) gives an
    ``error`` section with its message rather than failing the whole report.
    """
    if races is False:
        return RaceSection("unavailable", "race check not requested")
    if races is not None:
        section = _from_document(_document(races))
        _engine_races(cores, section)
        return section
    import lncsplit

    check = getattr(lncsplit, "racecheck", None)
    if not callable(check):
        return RaceSection(
            "unavailable",
            "this lncsplit has no race checker (lncsplit.racecheck); races are not shown",
        )
    try:
        section = _from_document(_document(check(list(cores))))
    except Exception as e:  # noqa: BLE001 - shown in the page, the rest of the report stands
        section = RaceSection("error", f"{type(e).__name__}: {e}")
    _engine_races(cores, section)
    return section
