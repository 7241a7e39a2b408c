"""Reading one split output (a directory holding ``nc00.json`` … ``nc<N-1>.json``, contract §5).

``diff``, ``report`` and the memory maps take the N core modules of one kernel in core order;
:func:`load_split_dir` reads them from disk and says plainly when a directory is not one split
output, and :func:`check_cores` checks a list of modules given from Python.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lncsplit._core import Module
from lncsplit.errors import LncsplitError

__all__ = ["NotASplitOutputError", "check_cores", "find_split_dirs", "load_split_dir"]


class NotASplitOutputError(LncsplitError, ValueError):
    """A directory that is not one split output, or modules that are not one kernel's cores."""


def find_split_dirs(root: str | os.PathLike[str]) -> list[Path]:
    """Every split output under ``root`` (itself included), in discovery order."""
    from lncsplit.corpus.discovery import discover_units

    return [Path(u.path) for u in discover_units([root], core_sets=True) if u.kind == "core_set"]


def load_split_dir(path: str | os.PathLike[str]) -> list[Module]:
    """The core modules of the split output ``path``, in core order (the core-set rules of
    :mod:`lncsplit.corpus.discovery`: ``nc00 … nc<N-1>`` without gaps, file c carrying core c).

    Raises :class:`NotASplitOutputError` when ``path`` is not a directory holding ``nc00.json``,
    naming the split outputs below it, if any.
    """
    from lncsplit.corpus.discovery import discover_units, load_core_set

    d = Path(path)
    if not d.is_dir():
        raise NotASplitOutputError(
            f"{d} is not a directory; give the directory of one split output "
            "(it holds nc00.json … nc<N-1>.json)"
        )
    units = [u for u in discover_units([d], core_sets=True) if u.kind == "core_set"]
    mine = [u for u in units if Path(u.path) == d]
    if not mine:
        hint = ""
        if units:
            shown = ", ".join(u.path for u in units[:5])
            more = f" and {len(units) - 5} more" if len(units) > 5 else ""
            hint = f"; it contains {len(units)} split output(s): {shown}{more}"
        raise NotASplitOutputError(f"{d} is not one split output: it has no nc00.json{hint}")
    return load_core_set(mine[0])


def check_cores(cores: Sequence[Module], what: str = "cores") -> None:
    """``cores[i]`` must carry ``neuron_core_id`` i (absent or 0 when there is one core)."""
    if not cores:
        raise NotASplitOutputError(f"{what}: no core module")
    n = len(cores)
    for i, m in enumerate(cores):
        if not isinstance(m, Module):  # a TypeError naming the argument (contract §4)
            raise TypeError(f"{what}[{i}] must be a lncsplit.Module, got {type(m).__name__}")
        cid = m.neuron_core_id
        if (n == 1 and cid in (None, 0)) or cid == i:
            continue
        got = "no neuron_core_id" if cid is None else f"neuron_core_id {cid}"
        raise NotASplitOutputError(
            f"{what}: core {i} ({m.name}) has {got}; expected the {n} core modules of one "
            f"split in core order (nc00 … nc{n - 1:02d})"
        )
