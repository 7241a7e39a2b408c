"""``lncsplit lower HLO --out FILE`` and ``lncsplit lower DUMP_ROOT --out DIR`` (§3.5, §3.9, §5).

An HLO file (``*.hlo``, ``*.hlo.txt``, or a ``*.txt`` whose first line starts with
``HloModule``) becomes one symbolic module, written atomically to FILE: a module XLA
partitioned (its ENTRY ends in ``_spmd``) is lowered whole (``lower_partitioned``, with the file
before ``spmd-partitioning`` found beside it), any other module by its LNC sharding constraints
(``AwsNeuronLNCShardingConstraint`` or JAX's ``Sharding``). An XLA dump root (a directory holding
``*after_spmd-partitioning*.txt``) gives one module per partitioned HloModule,
``DIR/<name>.json`` (``<name>.<id>.json`` when two share a name); the others are listed as
skipped on stderr. ``--lnc`` defaults to the module's ``num_partitions`` (an explicit one that
differs is that module's error). Exit 1 when some module failed, or when nothing was lowered.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from lncsplit.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    add_spelling_option,
    check_outputs,
    describe_error,
    err,
    input_failed,
    positive,
)


def add_parser(sub: Any) -> None:
    """Register ``lower`` on the subparsers ``sub``."""
    p = sub.add_parser(
        "lower",
        help="lower XLA/JAX HLO text (a partitioned module, or LNC constraints) to a symbolic module",
    )
    p.add_argument(
        "hlo",
        metavar="HLO",
        help="an HLO file (*.hlo, *.hlo.txt, a *.txt starting with HloModule) or an XLA dump "
        "root (a directory of *after_spmd-partitioning*.txt files)",
    )
    p.add_argument(
        "--lnc",
        type=positive,
        help="N (default: the module's num_partitions; for constraint lowering the arch's "
        "logical_nc_config, 2 on gen3)",
    )
    p.add_argument("--arch", default="gen3", help="target arch (default gen3)")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE|DIR",
        help="the symbolic module to write (a directory for a dump root)",
    )
    add_spelling_option(p)
    p.set_defaults(run=run)


def _write(path: str, lowered: Any, spelling: str | None = None) -> Any:
    from lncsplit._atomic import write_file_atomic

    module = lowered.module()  # validates the document before anything is written
    write_file_atomic(path, module.to_bytes(spelling=spelling))
    return module


def run(a: argparse.Namespace) -> int:
    """Lower one HLO file, or every partitioned module of a dump root."""
    if os.path.isdir(a.hlo):
        return _run_dump_root(a)
    check_outputs(a, "out")  # FILE's directory must exist (contract §6), before any work
    from lncsplit.frontend import NothingToLowerError, canonical_arch
    from lncsplit.frontend.xla_dump import lower_hlo_input

    try:
        arch = canonical_arch(a.arch)
        lowered = lower_hlo_input(a.hlo, a.lnc, arch=arch)
        module = _write(a.out, lowered, a.spelling)
    except NothingToLowerError as e:
        err(f"{a.hlo}: {e}")
        return EXIT_FAILED
    except Exception as e:  # noqa: BLE001 - reported as this input's failure
        return input_failed(a.hlo, e)
    for note in lowered.notes:
        sys.stderr.write(f"note: {note}\n")
    print(
        f"wrote {a.out}: module {module.name}, {module.instruction_count()} instruction(s), "
        f"lnc {lowered.lnc}"
    )
    return EXIT_OK


def _run_dump_root(a: argparse.Namespace) -> int:
    from lncsplit._inputs import read_input
    from lncsplit.frontend import HloModule, LoweringError, canonical_arch
    from lncsplit.frontend.partitioned import lower_partitioned_text, num_partitions
    from lncsplit.frontend.xla_dump import is_dump_root, scan_dump_root

    if not is_dump_root(a.hlo):
        err(
            f"{a.hlo}: a directory that is not an XLA dump root (no *after_spmd-partitioning*.txt "
            "file); lower takes an HLO file or a dump root"
        )
        return EXIT_FAILED
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        err(f"--out {a.out}: a dump root is lowered into a directory, and this is a file")
        return EXIT_FAILED
    found = scan_dump_root(a.hlo)
    for path, why in found.skipped:
        err(f"skipped {path}: {why}")
    if not found.units:
        return input_failed(
            a.hlo,
            LoweringError("nothing partitioned to lower (no module whose ENTRY ends in _spmd)"),
        )
    os.makedirs(a.out, exist_ok=True)
    status = EXIT_OK
    from lncsplit.frontend.lowering import LoweredHlo

    for unit in found.units:
        if unit.error is not None:
            err(describe_error(LoweringError(unit.error)))  # the message names the file
            status = EXIT_FAILED
            continue
        target = os.path.join(a.out, f"{unit.rel}.json")
        try:
            text = read_input(unit.after).decode("utf-8")
            before = None if unit.before is None else read_input(unit.before).decode("utf-8")
            doc = lower_partitioned_text(text, a.lnc, before=before, arch=canonical_arch(a.arch))
            module = _write(target, LoweredHlo(text=doc), a.spelling)
            n = a.lnc if a.lnc is not None else num_partitions(HloModule.parse(text))
        except Exception as e:  # noqa: BLE001 - this unit's failure; the others go on
            input_failed(unit.after, e)
            status = EXIT_FAILED
            continue
        print(
            f"wrote {target}: module {module.name}, {module.instruction_count()} "
            f"instruction(s), lnc {n}"
        )
    return status
