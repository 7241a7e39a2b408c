"""``lncsplit racecheck --symbolic FILE... [--lnc N|LO-HI|all] [--json]``: one race
proof for every N on the symbolic module (contract §3.11, §5).

Each FILE is a symbolic module (BIR-JSON, or HLO text lowered first). ``--lnc`` is one
N, a range ``LO-HI`` (inclusive) or ``all`` (every N ≥ 2); default ``2-64``. The text
output is each report's ``str()``; ``--json`` prints one list of ``{"input",
"report"}`` (``SymbolicRaceReport.to_dict()``) or ``{"input", "error"}``. Exit 1 when
some input has a race, an unknown pair or an invalid N, or fails; 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from lncsplit.cli._common import EXIT_FAILED, EXIT_OK, UsageError, describe_error, err

DEFAULT = "2-64"


def lnc_spec(text: str) -> range | str:
    """``N``, ``LO-HI`` or ``all`` as racecheck_symbolic's ``lnc`` (a UsageError else)."""
    if text == "all":
        return "all"
    lo, sep, hi = text.partition("-")
    try:
        a = int(lo)
        b = int(hi) if sep else a
    except ValueError:
        raise UsageError(f"--lnc takes N, LO-HI or all, got {text!r}") from None
    if a < 2 or b < a:
        raise UsageError(f"--lnc needs 2 <= LO <= HI, got {text!r}")
    return range(a, b + 1)


def _check(path: str, spec: range | str) -> tuple[dict[str, Any], bool, str]:
    """One FILE's JSON entry, whether it is ok, and its text line(s)."""
    from lncsplit.cli._views import load_source
    from lncsplit.passes.racecheck_symbolic import racecheck_symbolic

    try:
        module, _, notes = load_source(path, None, None)
        report = racecheck_symbolic(module, spec)
    except Exception as e:  # noqa: BLE001 - reported as this input's failure
        return {"input": path, "error": describe_error(e)}, False, ""
    lines = [f"note: {note}" for note in notes]
    lines.append(f"{'ok   ' if report.ok else 'FAIL '} {path}: {report}")
    return {"input": path, "report": report.to_dict()}, report.ok, "\n".join(lines)


def run(a: argparse.Namespace) -> int:
    """Check every FILE for every N of ``--lnc``; print each report (or the JSON list)."""
    import os

    if a.mode != "exact":
        raise UsageError("--symbolic decides exact footprints; --mode does not apply")
    spec = lnc_spec(a.lnc if a.lnc is not None else DEFAULT)
    for path in a.inputs:
        if os.path.isdir(path):
            raise UsageError(
                f"{path} is a directory; racecheck --symbolic takes symbolic module files"
            )
    docs: list[dict[str, Any]] = []
    status = EXIT_OK
    for path in a.inputs:
        doc, ok, text = _check(path, spec)
        docs.append(doc)
        if not ok:
            status = EXIT_FAILED
        if a.json:
            continue
        if "error" in doc:
            err(f"{path}: {doc['error']}")
        else:
            print(text)
    if a.json:
        print(json.dumps(docs, indent=2))
    return status
