"""``lncsplit gen DIR``: a synthetic corpus of symbolic modules (deterministic per seed).

``--scheduled`` writes one-core modules as a scheduler would emit them instead
(contract §3.10): placed SB/PSUM/DRAM memory with allocator reuse, every
engine, DMA queues (``DMACopy`` and ``DMATrigger`` → ``DMABlock`` in the
module's ``queues``) and ``sync_info`` semaphores; ``enginecheck`` finds them
race-free. With ``--racy`` a quarter of the waits are dropped (the module is
otherwise the same): the races are the pairs those waits ordered.
"""

from __future__ import annotations

import argparse
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
    g.add_argument("dir", metavar="DIR")
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
    try:
        caps = {"ap_partitions": a.ap_partitions, "ap_columns": a.ap_columns}
        given: dict[str, Any] = {k: v for k, v in caps.items() if v is not None}
        if a.scheduled:
            given["scheduled"] = True
        paths = gen(a.dir, a.modules, a.instructions, a.lnc, a.seed, racy=a.racy, **given)
        if a.spelling == "compiler" and paths:
            _respell(paths, a.spelling)
    except Exception as e:  # noqa: BLE001
        return input_failed(a.dir, e)
    n = len(paths) if paths is not None else a.modules
    print(f"wrote {n} modules to {a.dir}")
    return EXIT_OK
