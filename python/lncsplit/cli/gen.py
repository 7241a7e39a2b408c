"""``lncsplit gen DIR``: a synthetic corpus of symbolic modules (deterministic per seed).

DIR is new, or an empty directory: a directory that holds anything is refused (writing into it
would mix two corpora, and a later ``split DIR`` would split both) unless ``--force``. DIR that
cannot be used (a file, not writable) is a usage error, exit 2, as every output path is.

``--scheduled`` writes one-core modules as a scheduler would emit them instead
(contract §3.10): placed SB/PSUM/DRAM memory with allocator reuse, every
engine, DMA queues (``DMACopy`` and ``DMATrigger`` → ``DMABlock`` in the
module's ``queues``) and ``sync_info`` semaphores; ``enginecheck`` finds them
race-free. With ``--racy`` a quarter of the waits are dropped (the module is
otherwise the same): the races are the pairs those waits ordered.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Literal

from lncsplit.cli._common import (
    DEFAULT_LNC,
    EXIT_OK,
    UsageError,
    add_spelling_option,
    input_failed,
    positive,
)


def add_parser(sub: Any) -> None:
    """Register ``gen`` on the subparsers ``sub``."""
    g = sub.add_parser("gen", help="generate a synthetic corpus of symbolic modules")
    g.add_argument("dir", metavar="DIR", help="a new or empty directory")
    g.add_argument(
        "--force",
        action="store_true",
        help="write into DIR even when it is not empty (files of the same names are replaced)",
    )
    g.add_argument("--modules", type=positive, default=8, help="number of modules (default 8)")
    g.add_argument(
        "--instructions",
        type=positive,
        default=1000,
        help="instructions per module (default 1000)",
    )
    g.add_argument(
        "--lnc", type=positive, default=DEFAULT_LNC, help=f"ShardId bound (default {DEFAULT_LNC})"
    )
    g.add_argument(
        "--lnc-generic",
        type=positive,
        default=None,
        metavar="NMAX",
        help="modules for every N <= NMAX at once (sets sized for NMAX cores, barriers over "
        "every core, no GPSIMDSB2SB or collective): for racecheck --symbolic",
    )
    g.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    g.add_argument(
        "--racy",
        action="store_true",
        help="plant known races (racy_<n> instructions) for tests of lncsplit racecheck; "
        "with --scheduled: drop a quarter of the waits",
    )
    g.add_argument(
        "--scheduled",
        action="store_true",
        help="one-core scheduled modules (engines, DMA queues, sync_info semaphores) "
        "for lncsplit racecheck --engines",
    )
    g.add_argument(
        "--ap-partitions",
        type=positive,
        default=None,
        metavar="P",
        help="at most P partitions (rows) per access pattern (default: every partition)",
    )
    g.add_argument(
        "--ap-columns",
        type=positive,
        default=None,
        metavar="C",
        help="at most C elements per partition per access pattern (default: columns/(2*lnc))",
    )
    g.add_argument(
        "--numeric",
        action="store_true",
        help="modules whose compute computes values (random ops and funcs of the vocabulary, "
        "docs/sim.md); --instructions caps their computing instructions",
    )
    add_spelling_option(g)
    g.set_defaults(run=run)


def _respell(paths: list[Any], spelling: Literal["lncsplit", "compiler"]) -> None:
    """Rewrite generated modules in ``spelling`` (the generator writes lncsplit's)."""
    import lncsplit
    from lncsplit._atomic import write_file_atomic

    for p in paths:
        write_file_atomic(p, lncsplit.load(p).to_bytes(spelling=spelling))


def run(a: argparse.Namespace) -> int:
    """Write a synthetic corpus of symbolic modules to DIR."""
    from lncsplit import _core

    gen: Any = getattr(_core, "generate_corpus", None)
    if gen is None:
        raise UsageError("this build of lncsplit has no generator (_core.generate_corpus)")
    if a.scheduled and (a.numeric or a.lnc_generic is not None):
        # A scheduled module is one core of its own kind: neither option could apply to it.
        other = "--numeric" if a.numeric else "--lnc-generic"
        raise UsageError(f"gen: --scheduled and {other} describe different modules; give one")
    check_dir(a.dir, force=a.force)
    try:
        caps = {"ap_partitions": a.ap_partitions, "ap_columns": a.ap_columns}
        given: dict[str, Any] = {k: v for k, v in caps.items() if v is not None}
        if a.numeric:
            given["numeric"] = True
        lnc = a.lnc
        if a.lnc_generic is not None:
            # --lnc-generic NMAX sizes the module for NMAX cores (its ShardId ub).
            lnc = a.lnc_generic
            given["lnc_generic"] = True
        if a.scheduled:
            given["scheduled"] = True
        paths = gen(a.dir, a.modules, a.instructions, lnc, a.seed, racy=a.racy, **given)
        if a.spelling == "compiler" and paths:
            _respell(paths, a.spelling)
    except Exception as e:  # noqa: BLE001
        return input_failed(a.dir, e)
    n = len(paths) if paths is not None else a.modules
    print(f"wrote {n} modules to {a.dir}")
    return EXIT_OK


def check_dir(path: str, *, force: bool) -> None:
    """Before any work: DIR must be usable as an output directory (contract §5: else a usage
    error, exit 2) and, without ``force``, hold nothing yet."""
    from lncsplit._atomic import OutputPathError, prepare_output_dir

    try:
        prepare_output_dir(path, create=False)
    except OutputPathError as e:
        raise UsageError(f"gen DIR: {e}") from e
    if force or not os.path.isdir(path):
        return
    with os.scandir(path) as entries:
        held = sorted(e.name for e in entries)
    if held:
        shown = ", ".join(held[:3]) + (", …" if len(held) > 3 else "")
        raise UsageError(
            f"gen DIR: {path} is not empty ({shown}): generating into it would mix two corpora; "
            "give a new or empty directory, or --force to write into it anyway"
        )
