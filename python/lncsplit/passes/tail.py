"""The LNC tail passes that rewrite the cores (contract §3.6).

- :func:`lower_local_collectives` — order 80: each ``CollectiveCompute``
  becomes data movement between the cores (GPSIMDSB2SB or DMA, AllReduce as
  reduce-scatter + barrier + all-gather), bracketed by the core barriers that
  make it race-free; kinds from ``ReduceScatter`` on stay behind a fence.
- :func:`extend_shared_lifetimes` — order 81: every shared location's
  lifetime is bracketed by ``cb_sg<sg>_start_<k>`` / ``cb_sg<sg>_end_<k>`` on
  every core.

Both take the N core modules of one kernel in core order, mutate them in
place (the work runs in Rust with the GIL released) and return the list.
With one core they do nothing. Each logs ``Renumbering core barriers.`` (INFO,
logger ``lncsplit.tail``) when it renumbers, and what it did at DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lncsplit import _core
from lncsplit._core import Module

if TYPE_CHECKING:
    from lncsplit.pipeline import PassOptions

logger = logging.getLogger("lncsplit.tail")

RENUMBER_LOG = "Renumbering core barriers."


def lower_local_collectives(
    cores: Sequence[Module], options: PassOptions | None = None
) -> list[Module]:
    """``lower_local_collectives`` (order 80) on one kernel's N core modules, in place.

    ``options.sendrecv_to_gpsimd_max_bpp`` (default 1024) bounds the bytes per
    partition a ``SendRecv`` may move as one GPSIMDSB2SB (the hard cap is 1024).
    N is ``len(cores)``; ``options.lnc_size``, when not 1, must equal it.

    Errors (``NeuronAssertion``): 9006 a bad ``cores`` list, 9101 a collective
    missing on some core, 9102 an AllReduce with no scatter dim, 9103 ranks that
    are not constant core ids with ``recv_from(send_to(c)) == c``, 9104 a name
    lowering creates that a user already took, 9105 a collective that cannot
    be lowered as written (unknown kind or op, copies that disagree, counts that
    do not fit the kind, a runtime mask, no race-free sequence); or the
    concretized verifier's own error. On error the cores are unchanged.
    """
    mods = list(cores)
    max_bpp = 1024
    if options is not None:
        _check_lnc(options.lnc_size, len(mods))
        max_bpp = options.sendrecv_to_gpsimd_max_bpp
    report = _core.lower_local_collectives(mods, max_bpp)
    for function, name, kind, how in report:
        logger.debug("Lowered %s %s of function %s to %s", kind, name, function, how)
    if len(mods) > 1:
        logger.info(RENUMBER_LOG)
    return mods


def extend_shared_lifetimes(cores: Sequence[Module]) -> list[Module]:
    """``extend_shared_lifetimes`` (order 81) on one kernel's N core modules, in place.

    Errors (``NeuronAssertion``): 9006 a bad ``cores`` list, 9201 cores that
    are not SPMD-identical (functions by name, block names), 9202 a shared
    location live into the entry block (its first access is a read), 9203 a
    bracket name taken by another instruction. On error the cores are unchanged.
    """
    mods = list(cores)
    report = _core.extend_shared_lifetimes(mods)
    for function, k, location, start, end in report:
        logger.debug(
            "Extended shared location %s of function %s (k = %d) from block %s to block %s",
            location,
            function,
            k,
            start,
            end,
        )
    if len(mods) > 1:
        logger.info(RENUMBER_LOG)
    return mods


def _check_lnc(lnc_size: int, n: int) -> None:
    if lnc_size not in (1, n):
        raise ValueError(f"options.lnc_size is {lnc_size} but {n} cores were given")


__all__ = ["RENUMBER_LOG", "extend_shared_lifetimes", "lower_local_collectives"]
