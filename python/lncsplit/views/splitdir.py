"""Reading one split output (a directory holding ``nc00.json`` … ``nc<N-1>.json``, contract §5).

``diff``, ``report`` and the memory maps take the N core modules of one kernel in core order;
:func:`load_split_dir` reads them from disk and says plainly when a directory is not one split
output, and :func:`check_cores` checks a list of modules given from Python.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lncsplit._core import Module, load
from lncsplit.corpus import core_file_name
from lncsplit.errors import LncsplitError

__all__ = ["NotASplitOutputError", "check_cores", "find_split_dirs", "load_split_dir"]


class NotASplitOutputError(LncsplitError, ValueError):
    """A directory that is not one split output, or modules that are not one kernel's cores."""


def _core_files(d: Path) -> list[Path]:
    files = []
    c = 0
    while (d / core_file_name(c)).is_file():
        files.append(d / core_file_name(c))
        c += 1
    return files


def find_split_dirs(root: str | os.PathLike[str]) -> list[Path]:
    """Every directory under ``root`` (itself included) holding ``nc00.json``, sorted;
    hidden directories are skipped."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if core_file_name(0) in filenames:
            out.append(Path(dirpath))
    return out


def load_split_dir(path: str | os.PathLike[str]) -> list[Module]:
    """The core modules of the split output ``path``, in core order.

    Raises :class:`NotASplitOutputError` when ``path`` is not a directory holding ``nc00.json``
    (naming the split outputs below it, if any) or when the files are not one kernel's cores.
    """
    d = Path(path)
    if not d.is_dir():
        raise NotASplitOutputError(
            f"{d} is not a directory; give the directory of one split output "
            "(it holds nc00.json … nc<N-1>.json)"
        )
    files = _core_files(d)
    if not files:
        below = [p for p in find_split_dirs(d) if p != d]
        hint = ""
        if below:
            shown = ", ".join(str(p) for p in below[:5])
            more = f" and {len(below) - 5} more" if len(below) > 5 else ""
            hint = f"; it contains {len(below)} split output(s): {shown}{more}"
        raise NotASplitOutputError(
            f"{d} is not one split output: it has no {core_file_name(0)}{hint}"
        )
    cores = [load(f) for f in files]
    check_cores(cores, what=str(d))
    return cores


def check_cores(cores: Sequence[Module], what: str = "cores") -> None:
    """``cores[i]`` must carry ``neuron_core_id`` i (absent or 0 when there is one core)."""
    if not cores:
        raise NotASplitOutputError(f"{what}: no core module")
    n = len(cores)
    for i, m in enumerate(cores):
        cid = m.neuron_core_id
        if (n == 1 and cid in (None, 0)) or cid == i:
            continue
        got = "no neuron_core_id" if cid is None else f"neuron_core_id {cid}"
        raise NotASplitOutputError(
            f"{what}: core {i} ({m.name}) has {got}; expected the {n} core modules of one "
            f"split in core order (nc00 … nc{n - 1:02d})"
        )
