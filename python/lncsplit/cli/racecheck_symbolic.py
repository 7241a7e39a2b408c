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


def run(a: argparse.Namespace) -> int:
    """Check every FILE for every N of ``--lnc``; print each report (or the JSON list)."""
    import os

    from lncsplit.cli._views import load_source
    from lncsplit.passes.racecheck_symbolic import racecheck_symbolic

    if a.mode != "exact":
        raise UsageError("--symbolic decides exact footprints; --mode does not apply")
    spec = lnc_spec(a.lnc if a.lnc is not None else DEFAULT)
    docs: list[dict[str, Any]] = []
    status = EXIT_OK
    for path in a.inputs:
        if os.path.isdir(path):
            raise UsageError(f"{path} is a directory; racecheck --symbolic takes symbolic module files")
        try:
            module, _, notes = load_source(path, None, None)
            report = racecheck_symbolic(module, spec)
        except Exception as e:  # noqa: BLE001 - reported as this input's failure
            status = EXIT_FAILED
            docs.append({"input": path, "error": describe_error(e)})
            if not a.json:
                err(f"{path}: {describe_error(e)}")
            continue
        if not report.ok:
            status = EXIT_FAILED
        docs.append({"input": path, "report": report.to_dict()})
        if not a.json:
            for note in notes:
                print(f"note: {note}")
            print(f"{'ok   ' if report.ok else 'FAIL '} {path}: {report}")
    if a.json:
        print(json.dumps(docs, indent=2))
    return status
