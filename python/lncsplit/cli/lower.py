"""``lncsplit lower HLO_TEXT --lnc N --out FILE``: the front end from a file (contract §3.5, §5).

HLO text as XLA and JAX print it, with ``AwsNeuronLNCShardingConstraint`` custom calls, becomes
one symbolic module (``lower_to_symbolic``), written atomically to FILE; notes on what was and
was not lowered go to stderr. Text with no LNC constraint (or no HLO at all) is exit 1, said
plainly: nothing is pinned to a core, so there is nothing to split.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lncsplit.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    add_spelling_option,
    check_outputs,
    err,
    input_failed,
    positive,
)


def add_parser(sub: Any) -> None:
    """Register ``lower`` on the subparsers ``sub``."""
    p = sub.add_parser(
        "lower", help="lower XLA/JAX HLO text with LNC constraints to a symbolic module"
    )
    p.add_argument(
        "hlo", metavar="HLO_TEXT", help="HLO text (e.g. dumped from jax.jit(f).lower(...))"
    )
    p.add_argument(
        "--lnc", type=positive, help="N (default: the arch's logical_nc_config, 2 on gen3)"
    )
    p.add_argument("--arch", default="gen3", help="target arch (default gen3)")
    p.add_argument("--out", required=True, metavar="FILE", help="the symbolic module to write")
    add_spelling_option(p)
    p.set_defaults(run=run)


def run(a: argparse.Namespace) -> int:
    """Lower one HLO file."""
    check_outputs(a, "out")  # FILE's directory must exist (contract §6), before any work
    from lncsplit._atomic import write_file_atomic
    from lncsplit.frontend import (
        NothingToLowerError,
        canonical_arch,
        logical_nc_config,
        lower_hlo_file,
    )

    try:
        arch = canonical_arch(a.arch)
        n = a.lnc if a.lnc is not None else logical_nc_config(arch)
        lowered = lower_hlo_file(a.hlo, n, arch=arch)
        module = lowered.module()  # validates the document before anything is written
        write_file_atomic(a.out, module.to_bytes(spelling=a.spelling))
    except NothingToLowerError as e:
        err(f"{a.hlo}: {e}")
        return EXIT_FAILED
    except Exception as e:  # noqa: BLE001 - reported as this input's failure
        return input_failed(a.hlo, e)
    for note in lowered.notes:
        sys.stderr.write(f"note: {note}\n")
    print(
        f"wrote {a.out}: module {module.name}, {module.instruction_count()} instruction(s), lnc {n}"
    )
    return EXIT_OK
