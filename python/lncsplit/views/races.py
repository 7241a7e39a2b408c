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

__all__ = ["RaceSection", "race_section", "racecheck_available"]


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

    def by_instruction(self) -> dict[tuple[str, str], list[int]]:
        """``(function, instruction)`` → indexes of the races it is a side of (any core)."""
        out: dict[tuple[str, str], list[int]] = {}
        for k, r in enumerate(self.races):
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
    status = "ok" if doc.get("ok", not races) and not races else "races"
    return RaceSection(status=status, mode=doc.get("mode"), races=races)


def race_section(cores: Sequence[Any], races: Any = None) -> RaceSection:
    """The race section for ``cores``.

    ``races`` is a race report (a ``RaceReport``, its JSON text, or the decoded dict) to show
    as is; ``False`` skips races; ``None`` runs ``lncsplit.racecheck(cores)`` when this
    lncsplit has it. A checker that refuses the cores (9302–9306, a verifier error) gives an
    ``error`` section with its message rather than failing the whole report.
    """
    if races is False:
        return RaceSection("unavailable", "race check not requested")
    if races is not None:
        return _from_document(_document(races))
    import lncsplit

    check = getattr(lncsplit, "racecheck", None)
    if not callable(check):
        return RaceSection(
            "unavailable",
            "this lncsplit has no race checker (lncsplit.racecheck); races are not shown",
        )
    try:
        return _from_document(_document(check(list(cores))))
    except Exception as e:  # noqa: BLE001 - shown in the page, the rest of the report stands
        return RaceSection("error", f"{type(e).__name__}: {e}")
