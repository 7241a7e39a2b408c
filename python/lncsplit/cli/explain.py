"""``lncsplit explain FILE --lnc N INSTRUCTION``: why an instruction is kept or pruned on each
core (contract §4, §5; docs/inspect.md).

FILE is the symbolic module (BIR-JSON, or HLO text lowered first). The explanation is for the
module as the pipeline splits it — after ``expand_replication`` unless ``--no-expand``. Exit 1
when the instruction cannot be explained (an unknown name lists close names, an ambiguous one
its ``function:name`` candidates), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lncsplit.cli._common import EXIT_OK, input_failed, one_file, positive


def add_parser(sub: Any) -> None:
    """Register ``explain`` on the subparsers ``sub``."""
    p = sub.add_parser("explain", help="why an instruction is kept or pruned on each core")
    p.add_argument(
        "file", metavar="FILE", help="the symbolic module (BIR-JSON, or *.hlo/*.hlo.txt)"
    )
    p.add_argument("instruction", metavar="INSTRUCTION", help="a name, or function:name")
    p.add_argument("--lnc", type=positive, help="N (default: from the ShardIds, else 2)")
    p.add_argument("--arch", help="arch for HLO input (default gen3)")
    p.add_argument("--no-expand", action="store_true", help="explain without expand_replication")
    p.add_argument("--json", action="store_true", help="print the explanation as JSON")
    p.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Explain one instruction of one module."""
    one_file(
        a.file,
        "explain takes the symbolic module file "
        "(for a split output, use lncsplit diff or lncsplit report)",
    )
    import lncsplit
    from lncsplit.cli._views import load_source

    try:
        module, n, notes = load_source(a.file, a.lnc, a.arch)
        ex = lncsplit.explain(module, n, a.instruction, expand=not a.no_expand)
    except Exception as e:  # noqa: BLE001 - reported as this input's failure
        return input_failed(a.file, e)
    for note in notes:
        sys.stderr.write(f"note: {note}\n")
    print(ex.to_json() if a.json else str(ex))
    return EXIT_OK
