"""Finding the units a bulk command works on: files and split outputs.

Every command that reads many inputs (``split``, ``verify``, ``memory``, and
those that follow) finds them here, with the same rules:

- INPUT is files or directories. A directory is searched recursively for
  ``*.json``; hidden files and directories (a name starting with ``.``) are
  skipped, so temporaries never count. Order: the command-line order of the
  inputs; inside a directory, the sorted relative POSIX path.
- A file ``<root>/<rel>.json`` is a unit of kind ``"file"`` with ``rel``; a
  file given directly has ``rel`` = its name without ``.json``.
- With ``core_sets=True`` the core files of one directory (canonical names
  ``nc00.json``, ``nc01.json``, …) form **one** unit of kind ``"core_set"``
  (one split output; ``rel`` = the directory relative to the root, or the
  root's own name). The set must be exactly ``nc00 … nc<N-1>``: a gap is a
  discovery error of that unit (reported, its job never runs). Each core
  file must carry its own ``neuron_core_id``, equal to its index — checked by
  :func:`load_core_set` when the modules are read. An ``nc00.json`` alone
  without ``neuron_core_id`` is an N = 1 output (contract §5).

Safety rules for untrusted trees (contract §6) belong here too, so every
command gets them at once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from lncsplit._atomic import core_file_name, core_index
from lncsplit._job import Unit, strip_json
from lncsplit.errors import LncsplitError

if TYPE_CHECKING:
    from lncsplit._core import Module

InputItem = str | os.PathLike[str] | Unit


class InputConflictError(ValueError):
    """Two inputs map to the same output directory."""


class CoreSetError(LncsplitError):
    """A split output that is not exactly ``nc00 … nc<N-1>``, each with its own core."""


def discover_units(
    inputs: Sequence[InputItem], *, core_sets: bool = False, unique_outputs: bool = False
) -> list[Unit]:
    """Expand files and directories into the ordered list of units.

    Args:
        inputs: files, directories, or ready :class:`Unit` s (kept as given).
        core_sets: group each directory's ``ncNN.json`` into one core-set unit
            (``verify``, ``memory``); otherwise every ``*.json`` is a file unit
            (``split``).
        unique_outputs: raise :class:`InputConflictError` when two units have
            the same ``rel`` (a command writing ``OUT/<rel>/``).

    Raises :class:`FileNotFoundError` for a path that does not exist.
    """
    units: list[Unit] = []
    for item in inputs:
        if isinstance(item, Unit):
            units.append(item)
            continue
        path = os.fspath(item)
        if os.path.isdir(path):
            units.extend(_walk(path, core_sets))
        elif os.path.exists(path):
            units.append(Unit(path, strip_json(PurePath(path).name)))
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
    if unique_outputs:
        _check_unique(units)
    return units


def _walk(root: str, core_sets: bool) -> list[Unit]:
    found: list[tuple[str, Unit]] = []  # (sort key: relative POSIX path, unit)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        names = sorted(
            fn for fn in filenames if not fn.startswith(".") and fn.lower().endswith(".json")
        )
        cores = _core_names(names) if core_sets else {}
        if cores:
            rel = rel_dir if rel_dir != "." else Path(os.path.abspath(root)).name
            found.append(("" if rel_dir == "." else rel_dir, core_set_unit(dirpath, rel, cores)))
        taken = set(cores.values())
        for fn in names:
            if fn in taken:
                continue
            rel = fn if rel_dir == "." else f"{rel_dir}/{fn}"
            found.append((rel, Unit(os.path.join(dirpath, fn), strip_json(rel))))
    found.sort(key=lambda kv: kv[0])
    return [u for _, u in found]


def _core_names(names: Sequence[str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for fn in names:
        c = core_index(fn)
        if c is not None:
            out[c] = fn
    return out


def core_set_unit(dirpath: str, rel: str, cores: dict[int, str]) -> Unit:
    """The unit of one split output; a gap in ``nc00 … nc<N-1>`` is its discovery error."""
    n = max(cores) + 1
    files = tuple(os.path.join(dirpath, cores[c]) for c in sorted(cores))
    missing = [core_file_name(c) for c in range(n) if c not in cores]
    error = None
    if missing:
        found = ", ".join(cores[c] for c in sorted(cores))
        error = {
            "type": CoreSetError.__name__,
            "code": None,
            "message": f"split output {dirpath} lacks {', '.join(missing)} "
            f"(a split output is nc00.json … {core_file_name(n - 1)}; found {found})",
        }
    return Unit(dirpath, rel, kind="core_set", files=files, error=error)


def _check_unique(units: Sequence[Unit]) -> None:
    seen: dict[str, str] = {}
    for u in units:
        if u.rel in seen:
            raise InputConflictError(
                f"{seen[u.rel]} and {u.path} would both be written to <out>/{u.rel}/"
            )
        seen[u.rel] = u.path


def check_core_ids(files: Sequence[str], ids: Sequence[int | None]) -> None:
    """The core-set rule on what the files carry: file ``c`` has ``neuron_core_id`` c.

    One file without a core id (or with core 0) is an N = 1 output. Raises
    :class:`CoreSetError` naming every offending file.
    """
    if len(ids) == 1 and ids[0] in (None, 0):
        return
    names = [PurePath(f).name for f in files]
    problems = []
    no_id = [name for name, i in zip(names, ids, strict=True) if i is None]
    if no_id:
        problems.append(f"{', '.join(no_id)} without neuron_core_id")
    by_id: dict[int, list[str]] = {}
    for name, i in zip(names, ids, strict=True):
        if i is not None:
            by_id.setdefault(i, []).append(name)
    for core, group in sorted(by_id.items()):
        if len(group) > 1:
            both = "both" if len(group) == 2 else "all"
            problems.append(f"{' and '.join(group)} {both} carry neuron_core_id {core}")
    for c, (name, i) in enumerate(zip(names, ids, strict=True)):
        if i is not None and i != c and len(by_id[i]) == 1:
            problems.append(f"{name} carries neuron_core_id {i}, expected {c}")
    if problems:
        where = os.path.dirname(files[0]) or "."
        raise CoreSetError(f"split output {where}: " + "; ".join(problems))


def load_core_set(unit: Unit) -> list[Module]:
    """Read a core-set unit's modules in core order, checking the core-set rules."""
    from lncsplit import load

    if unit.error is not None:
        raise CoreSetError(str(unit.error["message"]))
    modules = [load(f) for f in unit.files]
    check_core_ids(unit.files, [m.neuron_core_id for m in modules])
    return modules


__all__ = [
    "CoreSetError",
    "InputConflictError",
    "check_core_ids",
    "core_set_unit",
    "discover_units",
    "load_core_set",
]
