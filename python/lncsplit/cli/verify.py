"""``lncsplit verify``: the lnc_verifier on symbolic modules and on split outputs (contract §5).

Units (see :mod:`lncsplit.corpus.discovery`): a file holding a symbolic module (or HLO
text named explicitly, lowered first for ``--lnc``: the input rule) gets birverifier and
the symbolic lnc_verifier; a split output (``nc00.json …
nc<N-1>.json`` in one directory) gets the core-set rules, birverifier per
core and the concretized lnc_verifier; an ``nc00.json`` alone without
``neuron_core_id`` is an N = 1 output (birverifier only: the lnc_verifier
does not run at N = 1, contract §3.3); a lone concretized file gets the
structural checks only.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import TYPE_CHECKING, Any

from lncsplit.cli._common import (
    add_pass_option,
    add_runner_options,
    check_outputs,
    discover,
    finish_with_table,
    lnc_for,
    positive,
    print_units,
    run_bulk,
)

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.corpus.unit import FileResult, Unit


def add_parser(sub: Any) -> None:
    """Register ``verify`` on the subparsers ``sub``."""
    v = sub.add_parser("verify", help="run the lnc_verifier on symbolic modules or split outputs")
    v.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="symbolic modules, split outputs (directories, searched), or HLO files named "
        "explicitly (lowered first)",
    )
    v.add_argument(
        "--lnc", type=positive, help="N (default: from the ShardIds / the nc files found)"
    )
    add_runner_options(v)
    add_pass_option(v)
    v.add_argument("--quiet", "-q", action="store_true", help="print failures only")
    v.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Verify every unit; one line per unit in input order, then the summary."""
    check_outputs(a)
    units = discover(a, core_sets=True)
    report = run_bulk(
        a, units, partial(verify_unit, lnc=a.lnc), command="verify", lnc=a.lnc, quiet=a.quiet
    )
    print_units(report, lambda f: f"ok    {f.input} ({f.detail['checked']})", quiet=a.quiet)
    return finish_with_table(a, report, quiet=a.quiet)


def verify_unit(unit: Unit, lnc: int | None) -> FileResult:
    """The job: verify one unit. ``detail`` = ``{"kind", "lnc", "checked"}``."""
    from lncsplit.corpus.unit import guarded

    return guarded(unit, partial(_verify, unit, lnc))


def _verify(unit: Unit, lnc: int | None, res: FileResult) -> None:
    from lncsplit._inputs import load_input
    from lncsplit.corpus.discovery import load_core_set

    n: int | None
    if unit.kind == "core_set":
        n, checked = _verify_set(load_core_set(unit), lnc)
    else:
        n, checked = _verify_file(load_input(unit.path, lnc=lnc), lnc)
    res.detail = {"kind": unit.kind, "lnc": n, "checked": checked}


def _verify_set(mods: list[Module], lnc: int | None) -> tuple[int, str]:
    from lncsplit import passes

    n = len(mods)
    if lnc is not None and lnc != n:
        raise ValueError(f"found {n} core files (nc00…), expected --lnc {lnc}")
    if n == 1 and mods[0].neuron_core_id is None:
        passes.verify_bir(mods[0], 1)
        return 1, "N = 1 output, the untouched module"
    for m in mods:
        passes.verify_bir(m, n)
    passes.verify_concretized(mods, n)
    return n, f"concretized set of {n} cores"


def _verify_file(m: Module, lnc: int | None) -> tuple[int | None, str]:
    from lncsplit import passes

    if m.neuron_core_id is not None:
        passes.verify_bir(m, 1)
        return None, f"core {m.neuron_core_id} (structural checks only; verify its directory)"
    n = lnc_for(m, lnc)
    passes.verify_bir(m, n)
    passes.verify_symbolic(m, n)
    return n, f"symbolic, lnc {n}"
