"""Reading one split output (a directory holding ``nc00.json`` … ``nc<N-1>.json``, contract §5).

``diff``, ``report`` and the memory maps take the N core modules of one kernel in core order;
:func:`load_split_dir` reads them from disk and says plainly when a directory is not one split
output, :func:`check_cores` checks a list of modules given from Python, and
:func:`check_source` checks that a symbolic module is the one those cores were split from.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lncsplit._core import Module
from lncsplit.errors import LncsplitError

__all__ = [
    "NotASplitOutputError",
    "SourceMismatchError",
    "check_cores",
    "check_source",
    "find_split_dirs",
    "load_split_dir",
]


class NotASplitOutputError(LncsplitError, ValueError):
    """A directory that is not one split output, or modules that are not one kernel's cores."""


class SourceMismatchError(LncsplitError, ValueError):
    """A symbolic module given as the source of cores it is not the source of."""


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


def _block_paths(fn: Any) -> list[str]:
    """Every block of a function, loop bodies included: ``entry``, ``entry/tiles/tiles_body``."""
    out: list[str] = []
    stack = [("", b) for b in reversed(fn.blocks)]
    while stack:
        prefix, b = stack.pop()
        path = f"{prefix}/{b.name}" if prefix else b.name
        out.append(path)
        nested = [(f"{path}/{i.name}", nb) for i in b.instructions for nb in i.blocks]
        stack.extend(reversed(nested))
    return out


def _mismatch(cores: Sequence[Module], source: Module) -> str | None:
    """What shows that ``cores`` were not split from ``source`` (None: nothing does).

    The split renames ``nc_symbolic`` to ``ncNN`` (N = 1: the name is kept), keeps the
    functions and their top-level blocks, and only removes loop bodies (a deleted loop):
    names, functions and block shapes must agree. The tail adds instructions, never blocks.
    """
    n = len(cores)
    for c, m in enumerate(cores):
        want = source.name.replace("nc_symbolic", f"nc{c:02d}") if n > 1 else source.name
        if m.name != want:
            return f"core {c} is named {m.name}; a split of {source.name} names it {want}"
    src_fns = [f.name for f in source.functions]
    src_blocks = {f.name: _block_paths(f) for f in source.functions}
    for c, m in enumerate(cores):
        fns = [f.name for f in m.functions]
        if fns != src_fns:
            return f"core {c} has the functions {', '.join(fns)}; the source {', '.join(src_fns)}"
        for f in m.functions:
            mine, theirs = _block_paths(f), src_blocks[f.name]
            top = [p for p in mine if "/" not in p]
            if top != [p for p in theirs if "/" not in p] or not set(mine) <= set(theirs):
                extra = [p for p in mine if p not in theirs] or top
                return (
                    f"the blocks of function {f.name} differ: core {c} has {', '.join(extra)}, "
                    f"the source {', '.join(theirs[:8])}{' …' if len(theirs) > 8 else ''}"
                )
    return None


def check_source(
    cores: Sequence[Module],
    source: Module,
    *,
    source_label: str | None = None,
    cores_label: str | None = None,
) -> None:
    """``source`` must be the symbolic module ``cores`` were split from (their names,
    functions and block shapes agree), else :class:`SourceMismatchError` naming both
    (``source_label``/``cores_label``: how the caller names them, e.g. the paths)."""
    why = _mismatch(cores, source)
    if why is None:
        return
    src = f"{source_label} ({source.name})" if source_label else source.name
    names = ", ".join(m.name for m in cores)
    dst = f"{cores_label} ({names})" if cores_label else names
    raise SourceMismatchError(f"{src} is not the module {dst} came from: {why}")
