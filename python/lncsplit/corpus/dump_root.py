"""Compiler dump roots (contract §1.7): ``<workdir>/nc00/sg00/bir_debug.*.json``, ``nc01/…``.

``neuronx-cc --internal-print-after=<pass>`` writes one directory per core, ``nc00/`` …
``nc<N-1>/``, each holding one ``sg<k>/`` directory per kernel (subgraph id k) with the
modules dumped after the named passes. A directory whose children include ``nc<cc>/``
directories is a *dump root*; each ``sg<k>`` is one kernel's core set. This module is
the one place that reads that layout: discovery (:mod:`lncsplit.corpus.discovery`) makes
its units from :func:`dump_root_sets`, :func:`load_cores` reads one from Python.

Decisions (written down in docs/bir-json.md, "Compiler dump roots"):

- A core's module for ``sg<k>`` is the ``*.json`` file whose name contains
  ``after-<NAME>`` for ``--pass NAME``; without ``--pass`` the only ``*.json`` there.
  Several files and no ``--pass``, or no match, is that unit's error listing the
  candidates and naming ``--pass`` (no guess by date or name). Two files matching one
  ``--pass`` is an error too (the first is not guessed either).
- A gap in ``nc00 … nc<N-1>``, or a core lacking ``sg<k>``, is ``NeuronAssertion`` 9006
  naming the missing core (the passes' core-set rule); the file choice's errors are
  :class:`DumpRootError`.
- The ``rel`` of a kernel's unit is the dump root's own; when the root holds several
  ``sg<k>``, ``<root>/sg<k>`` (so outputs of two kernels never collide).
- A module without ``neuron_core_id`` gets its ``nc<cc>`` index as its core id, in memory
  only (``_core.set_implied_core``: written outputs keep the key absent).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from lncsplit.errors import LncsplitError, NeuronAssertion

if TYPE_CHECKING:
    from lncsplit._core import Module

_CORE_DIR = re.compile(r"^nc(\d{2,})$")
_SG_DIR = re.compile(r"^sg(\d{2,})$")

#: The passes' core-set code (``rust/src/analysis/cores.rs``).
BAD_CORE_SET = 9006

#: What ``split`` says of a dump root (its files are cores, not symbolic modules).
SPLIT_MESSAGE = "per-core dumps: use verify/racecheck/link/memory/diff/sim/report/info"


def core_dir_name(core: int) -> str:
    """``nc00``, ``nc01``, … (the compiler's per-core directory)."""
    return f"nc{core:02d}"


def sg_dir_name(subgraph: int) -> str:
    """``sg00``, ``sg01``, …"""
    return f"sg{subgraph:02d}"


def core_dirs(dirpath: str) -> dict[int, str]:
    """The ``nc<cc>`` child directories of ``dirpath`` by core index (empty: not a dump root).
    Hidden names and symbolic links are not looked at (contract §6: a dump root's cores are
    its own directories). ``nc<cc>/`` directories none of which holds an ``sg<k>/`` are no
    dump root (contract §1.7: its cores hold ``sg<k>/`` directories): ``split`` creates
    such empty ones as the cores' ``artifact_path`` (``OUT/out/<kernel>/nc<cc>``), and a
    split output must stay readable by ``racecheck``, ``verify``… as split outputs."""
    out: dict[int, str] = {}
    try:
        entries = list(os.scandir(dirpath))
    except OSError:
        return out
    for e in entries:
        m = _CORE_DIR.match(e.name)
        if m and not e.is_symlink() and e.is_dir(follow_symlinks=False):
            out[int(m.group(1))] = e.path
    if not any(_sg_dirs(d) for d in out.values()):
        return {}
    return out


def is_dump_root(dirpath: str) -> bool:
    """Whether ``dirpath`` holds ``nc<cc>/`` directories, one at least holding an ``sg<k>/``
    (contract §1.7)."""
    return bool(core_dirs(dirpath))


def _sg_dirs(core_dir: str) -> dict[int, str]:
    out: dict[int, str] = {}
    try:
        entries = list(os.scandir(core_dir))
    except OSError:
        return out
    for e in entries:
        m = _SG_DIR.match(e.name)
        if m and not e.is_symlink() and e.is_dir(follow_symlinks=False):
            out[int(m.group(1))] = e.path
    return out


def _json_files(sg_dir: str) -> list[str]:
    try:
        entries = sorted(os.scandir(sg_dir), key=lambda e: e.name)
    except OSError:
        return []
    return [
        e.path
        for e in entries
        if e.name.lower().endswith(".json")
        and not e.name.startswith(".")
        and stat.S_ISREG(os.stat(e.path, follow_symlinks=False).st_mode)
    ]


def choose_file(sg_dir: str, pass_: str | None) -> str:
    """The module of one core's ``sg<k>`` for ``--pass`` ``pass_`` (see the module docs);
    :class:`DumpRootError` naming the candidates and ``--pass`` otherwise."""
    files = _json_files(sg_dir)
    names = [PurePath(f).name for f in files]
    listed = ", ".join(names) or "none"
    if pass_ is None:
        if len(files) == 1:
            return files[0]
        why = "no *.json file" if not files else f"{len(files)} files"
        raise DumpRootError(
            f"{sg_dir}: {why} ({listed}); name the pass whose dump to read with --pass NAME "
            "(the file whose name contains after-NAME)"
        )
    needle = f"after-{pass_}"
    hits = [f for f, n in zip(files, names, strict=True) if needle in n]
    if len(hits) == 1:
        return hits[0]
    what = "no file" if not hits else f"{len(hits)} files"
    raise DumpRootError(
        f"{sg_dir}: {what} for --pass {pass_} (a name containing {needle}); candidates: {listed}"
    )


class DumpRootError(LncsplitError):
    """A core's ``sg<k>`` without one file for ``--pass`` (none, several, no match)."""


def missing_core(message: str) -> NeuronAssertion:
    """9006 (the passes' core-set rule) for a dump root lacking a core."""
    return NeuronAssertion(BAD_CORE_SET, message, "lncsplit/dump_root")


@dataclass(frozen=True)
class CoreSet:
    """One kernel (``sg<k>``) of a dump root: its files in core order, or why not."""

    subgraph: int
    files: tuple[str, ...]
    error: LncsplitError | None


def dump_root_sets(root: str, pass_: str | None = None) -> list[CoreSet]:
    """Every ``sg<k>`` of the dump root ``root``, in subgraph order."""
    cores = core_dirs(root)
    if not cores:
        return []
    n = max(cores) + 1
    sgs = {c: _sg_dirs(d) for c, d in cores.items()}
    subgraphs = sorted({k for per in sgs.values() for k in per}) or [0]
    out: list[CoreSet] = []
    for k in subgraphs:
        out.append(_core_set(root, n, cores, sgs, k, pass_))
    return out


def _core_set(
    root: str,
    n: int,
    cores: dict[int, str],
    sgs: dict[int, dict[int, str]],
    k: int,
    pass_: str | None,
) -> CoreSet:
    missing = [core_dir_name(c) for c in range(n) if c not in cores]
    if missing:
        found = ", ".join(core_dir_name(c) for c in sorted(cores))
        return CoreSet(
            k,
            (),
            missing_core(
                f"dump root {root} lacks core {', '.join(missing)} "
                f"(a dump root is nc00/ … {core_dir_name(n - 1)}/; found {found})"
            ),
        )
    lacking = [core_dir_name(c) for c in range(n) if k not in sgs[c]]
    if lacking:
        return CoreSet(
            k,
            (),
            missing_core(
                f"dump root {root}: core {', '.join(lacking)} has no {sg_dir_name(k)}/ "
                f"(every core holds each kernel's {sg_dir_name(k)}/)"
            ),
        )
    files: list[str] = []
    for c in range(n):
        try:
            files.append(choose_file(sgs[c][k], pass_))
        except DumpRootError as e:
            return CoreSet(k, (), e)
    return CoreSet(k, tuple(files), None)


def layout_paths(out_dir: str, stem: str, subgraphs: Sequence[int]) -> list[str]:
    """Where ``--layout compiler`` writes core c of one split or unlink (contract §1.7):
    ``<out_dir>/nc<cc>/sg<k>/<stem>.json``, k = the core's ``subgraph_id``."""
    return [
        os.path.join(out_dir, core_dir_name(c), sg_dir_name(k), f"{stem}.json")
        for c, k in enumerate(subgraphs)
    ]


def subgraph_of(module: Module) -> int:
    """A module's ``subgraph_id`` attribute (default 0)."""
    k = (module.attributes or {}).get("subgraph_id", 0)
    return k if isinstance(k, int) and not isinstance(k, bool) and k >= 0 else 0


def core_of(path: str) -> int | None:
    """The core index a dump-root file's ``nc<cc>/sg<k>/`` parents give, or None."""
    parts = PurePath(path).parts
    if len(parts) >= 3 and _SG_DIR.match(parts[-2]):
        m = _CORE_DIR.match(parts[-3])
        if m:
            return int(m.group(1))
    return None


def imply_cores(modules: Sequence[Module], files: Sequence[str]) -> None:
    """Give each module without ``neuron_core_id`` the core its ``nc<cc>/`` directory names
    (in memory only; contract §1.7)."""
    from lncsplit._core import set_implied_core, written_core_id

    for m, f in zip(modules, files, strict=True):
        core = core_of(f)
        if core is not None and written_core_id(m) is None:
            set_implied_core(m, core)


def load_cores(
    path: str | os.PathLike[str], pass_: str | None = None, subgraph: int = 0
) -> list[Module]:
    """``lncsplit.load_cores``: kernel ``sg<subgraph>`` of the compiler dump root ``path``,
    one module per core in core order, each core's file chosen by ``pass_`` (contract §1.7).

    Raises ``NeuronAssertion`` 9006 naming a missing core (or ``sg<k>``),
    :class:`DumpRootError` when a core's ``sg<k>`` has no single file for ``pass_``,
    :class:`~lncsplit.errors.LncsplitIOError` when ``path`` is not a dump root, and the
    loader's errors for a file that does not read; the core ids are then checked by the
    passes' core-set rule (file c carries core c).
    """
    from lncsplit._inputs import load_input
    from lncsplit.corpus.discovery import check_core_ids
    from lncsplit.errors import LncsplitIOError

    root = os.fspath(path)
    if not isinstance(subgraph, int) or isinstance(subgraph, bool) or subgraph < 0:
        raise TypeError(f"subgraph must be an int >= 0, got {subgraph!r}")
    if not os.path.isdir(root):
        raise LncsplitIOError(f"{root}: not a directory (a compiler dump root holds nc00/ …)")
    sets = {s.subgraph: s for s in dump_root_sets(root, pass_)}
    if not sets:
        raise LncsplitIOError(f"{root}: not a compiler dump root (no nc00/ … directories)")
    s = sets.get(subgraph)
    if s is None:
        have = ", ".join(sg_dir_name(k) for k in sorted(sets))
        raise missing_core(f"dump root {root} has no {sg_dir_name(subgraph)}/ (it has {have})")
    if s.error is not None:
        raise s.error
    modules = [load_input(f) for f in s.files]
    imply_cores(modules, s.files)
    check_core_ids(s.files, [m.neuron_core_id for m in modules])
    return modules


__all__ = [
    "SPLIT_MESSAGE",
    "CoreSet",
    "DumpRootError",
    "choose_file",
    "core_dir_name",
    "core_dirs",
    "core_of",
    "dump_root_sets",
    "imply_cores",
    "is_dump_root",
    "layout_paths",
    "load_cores",
    "missing_core",
    "sg_dir_name",
    "subgraph_of",
]
