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
  without ``neuron_core_id`` is an N = 1 output (contract §5). A
  ``linked.json`` beside core files (``split --link``) belongs to that split
  output and is not a unit of its own.
- A **compiler dump root** (a directory holding ``nc00/`` … ``nc<N-1>/``, each with
  ``sg<k>/`` directories of ``*.json``; contract §1.7, :mod:`lncsplit.corpus.dump_root`)
  gives one ``"core_set"`` unit per ``sg<k>`` with ``core_sets=True`` (its files chosen by
  ``pass_``, ``--pass``); without, one error unit ("per-core dumps: use verify/…"). Files
  under a dump root are never units of their own.

Safety rules for untrusted trees (contract §6), so every command gets them
at once:

- Only regular files are units. A FIFO, socket or device named ``*.json``
  (or named directly) is an error unit, found with ``stat`` and never
  opened; a file larger than ``max_file_size`` (``--max-file-size``, default
  4 GiB) likewise, before it is read. A missing INPUT is an error unit: the
  other inputs are still processed (exit 1).
- A symbolic link is followed only when its target is inside an INPUT root;
  one leading elsewhere is an error unit naming its target. Each directory
  is visited once per root (real directories before links to them), so a
  link cycle ends.
- ``exclude`` (the ``--out`` of a command that writes) is never walked, so
  a ``--out`` inside an INPUT does not feed a run its own outputs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

from lncsplit._atomic import LINKED_FILE, core_file_name, core_index, is_within
from lncsplit._inputs import (
    InputError,
    input_stem,
    is_hlo_input,
    load_input,
    not_regular_message,
    strip_json,
)
from lncsplit.corpus.dump_root import (
    SPLIT_MESSAGE,
    core_dirs,
    dump_root_sets,
    imply_cores,
    sg_dir_name,
)
from lncsplit.corpus.unit import ErrorInfo, Unit
from lncsplit.errors import LncsplitError
from lncsplit.limits import DEFAULT_MAX_FILE_SIZE

if TYPE_CHECKING:
    from lncsplit._core import Module

InputItem = str | os.PathLike[str] | Unit


class InputConflictError(ValueError):
    """Two inputs map to the same output directory."""


class CoreSetError(LncsplitError):
    """A split output that is not exactly ``nc00 … nc<N-1>``, each with its own core."""


def discover_units(
    inputs: Sequence[InputItem],
    *,
    core_sets: bool = False,
    unique_outputs: bool = False,
    exclude: Iterable[str | os.PathLike[str]] = (),
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
    pass_: str | None = None,
) -> list[Unit]:
    """Expand files and directories into the ordered list of units.

    Args:
        inputs: files, directories, or ready :class:`Unit` s (kept as given).
        core_sets: group each directory's ``ncNN.json`` into one core-set unit
            (``verify``, ``memory``); otherwise every ``*.json`` is a file unit
            (``split``).
        unique_outputs: raise :class:`InputConflictError` when two units have
            the same ``rel`` (a command writing ``OUT/<rel>/``).
        exclude: directories that are not inputs even inside an INPUT (the
            ``--out`` tree of a command that writes one).
        max_file_size: a larger file is an error unit, never read.
        pass_: in a compiler dump root, read each core's file dumped after this pass
            (``--pass``; contract §1.7).

    A path that cannot be an input — missing, not a regular file, larger than
    ``max_file_size``, a symbolic link leading out of every INPUT root — is a
    unit whose ``error`` says so (reported failed, never opened; contract §6).
    """
    items = [i if isinstance(i, Unit) else os.fspath(i) for i in inputs]
    roots = [os.path.realpath(p) for p in items if isinstance(p, str) and os.path.exists(p)]
    walker = _Walker(roots, _dir_ids(exclude), core_sets, max_file_size, pass_)
    units: list[Unit] = []
    for item in items:
        units.extend([item] if isinstance(item, Unit) else walker.input_units(item))
    if unique_outputs:
        _check_unique(units)
    return units


def error_unit(path: str, rel: str, message: str, error_type: str = InputError.__name__) -> Unit:
    """A unit that is reported failed (with an :class:`InputError` unless ``error_type`` names
    another class) and never processed."""
    info: ErrorInfo = {"type": error_type, "code": None, "message": message}
    return Unit(path, rel, error=info)


def _dir_ids(dirs: Iterable[str | os.PathLike[str]]) -> set[tuple[int, int]]:
    ids = set()
    for d in dirs:
        try:
            st = os.stat(d)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            ids.add((st.st_dev, st.st_ino))
    return ids


@dataclass
class _Walker:
    """The discovery rules of contract §6 over every INPUT of one call."""

    roots: list[str]
    excluded: set[tuple[int, int]]
    core_sets: bool
    max_file_size: int
    pass_: str | None = None
    visited: set[tuple[int, int]] = field(default_factory=set)

    def input_units(self, path: str) -> list[Unit]:
        rel = input_stem(PurePath(path).name)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return [error_unit(path, rel, f"{path}: no such file or directory")]
        except OSError as e:
            return [error_unit(path, rel, f"{path}: {e.strerror or e}")]
        if stat.S_ISDIR(st.st_mode):
            return self.walk(path)
        return [self.file_unit(path, rel, st)]

    def file_unit(self, path: str, rel: str, st: os.stat_result) -> Unit:
        """A file (already ``stat`` ed, never opened here), or its error unit."""
        if not stat.S_ISREG(st.st_mode):
            return error_unit(path, rel, not_regular_message(path, st.st_mode))
        if st.st_size > self.max_file_size:
            return error_unit(
                path,
                rel,
                f"{path} is {st.st_size} bytes, more than the maximum file size "
                f"{self.max_file_size} (--max-file-size): not read",
            )
        return Unit(path, rel)

    def walk(self, root: str) -> list[Unit]:
        """Every unit below ``root``, sorted by relative POSIX path.

        Real directories are walked before symbolic links to directories, so
        a link to a directory that is also reached directly is skipped (each
        directory is visited once per root; a link cycle ends there).
        """
        self.visited = set()
        st = os.stat(root)
        if (st.st_dev, st.st_ino) in self.excluded:
            return []
        self.visited.add((st.st_dev, st.st_ino))
        found: list[tuple[str, Unit]] = []  # (sort key: relative POSIX path, unit)
        stack: list[tuple[str, str]] = [(root, "")]
        linked: list[tuple[str, str]] = []
        while stack or linked:
            dirpath, rel_dir = stack.pop() if stack else linked.pop(0)
            found.extend(self._directory(root, dirpath, rel_dir, stack, linked))
        found.sort(key=lambda kv: kv[0])
        return [u for _, u in found]

    def _directory(
        self,
        root: str,
        dirpath: str,
        rel_dir: str,
        stack: list[tuple[str, str]],
        linked: list[tuple[str, str]],
    ) -> list[tuple[str, Unit]]:
        try:
            entries = sorted(os.scandir(dirpath), key=lambda e: e.name)
        except OSError as e:
            return [(rel_dir, error_unit(dirpath, rel_dir or "", f"{dirpath}: {e.strerror or e}"))]
        files: list[tuple[str, str, os.stat_result]] = []  # (name, path, stat)
        found: list[tuple[str, Unit]] = []
        cores = core_dirs(dirpath)
        if cores:  # a compiler dump root: its nc<cc>/ are its cores, not inputs of their own
            found.extend(self._dump_root(root, dirpath, rel_dir))
        for entry in entries:
            if entry.name.startswith(".") or entry.path in cores.values():
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            looked = self._look(entry, rel)
            if isinstance(looked, Unit):
                found.append((rel, looked))
            elif looked is None:
                continue
            elif stat.S_ISDIR(looked.st_mode):
                did = (looked.st_dev, looked.st_ino)
                if did not in self.excluded and did not in self.visited:
                    self.visited.add(did)
                    (linked if entry.is_symlink() else stack).append((entry.path, rel))
            elif entry.name.lower().endswith(".json"):
                files.append((entry.name, entry.path, looked))
        found.extend(self._files(root, dirpath, rel_dir, files))
        return found

    def _dump_root(self, root: str, dirpath: str, rel_dir: str) -> list[tuple[str, Unit]]:
        """The units of a compiler dump root: one core set per ``sg<k>`` (or, for a command
        that takes symbolic modules, one error unit saying what the root is)."""
        from lncsplit.corpus.unit import error_info

        rel = rel_dir if rel_dir else PurePath(os.path.abspath(root)).name
        if not self.core_sets:
            return [(rel_dir, error_unit(dirpath, rel, f"{dirpath}: {SPLIT_MESSAGE}"))]
        sets = dump_root_sets(dirpath, self.pass_)
        out: list[tuple[str, Unit]] = []
        for s in sets:
            sub = rel if len(sets) == 1 else f"{rel}/{sg_dir_name(s.subgraph)}"
            info = None if s.error is None else error_info(s.error)
            unit = Unit(dirpath, sub, kind="core_set", files=s.files, error=info, dump_root=True)
            out.append((rel_dir, unit))
        return out

    def _look(self, entry: os.DirEntry[str], rel: str) -> os.stat_result | Unit | None:
        """The entry's ``stat`` (links followed only inside a root), an error unit, or None."""
        candidate = entry.name.lower().endswith(".json")
        try:
            is_link = entry.is_symlink()
            if is_link:
                target = os.path.realpath(entry.path)
                if not any(is_within(target, r) for r in self.roots):
                    if candidate or os.path.isdir(target):
                        return error_unit(
                            entry.path,
                            strip_json(rel),
                            f"{entry.path} is a symbolic link to {target}, outside the inputs: "
                            "not followed (give the target as an INPUT to include it)",
                        )
                    return None
            return os.stat(entry.path)
        except OSError as e:
            if not candidate:
                return None
            return error_unit(entry.path, strip_json(rel), f"{entry.path}: {e.strerror or e}")

    def _files(
        self,
        root: str,
        dirpath: str,
        rel_dir: str,
        files: list[tuple[str, str, os.stat_result]],
    ) -> list[tuple[str, Unit]]:
        found: list[tuple[str, Unit]] = []
        regular = [fn for fn, _p, st in files if stat.S_ISREG(st.st_mode)]
        cores = _core_names(regular) if self.core_sets else {}
        if cores:
            rel = rel_dir if rel_dir else PurePath(os.path.abspath(root)).name
            found.append((rel_dir, core_set_unit(dirpath, rel, cores)))
        taken = set(cores.values())
        if cores:  # `split --link` writes linked.json into the split output: part of it
            taken.add(LINKED_FILE)
        for fn, path, st in files:
            if fn in taken:
                continue
            rel = f"{rel_dir}/{fn}" if rel_dir else fn
            found.append((rel, self.file_unit(path, strip_json(rel), st)))
        return found


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


def find_hlo_files(root: str, limit: int = 3, budget: int = 10_000) -> list[str]:
    """Up to ``limit`` HLO files below ``root`` (:func:`lncsplit._inputs.is_hlo_input`), in
    sorted order, for the message of a directory that yields no module (discovery reads
    ``*.json`` only; contract §5). Hidden entries are skipped and links not followed, as the
    walk does; at most ``budget`` entries are looked at, so a huge tree costs little."""
    found: list[str] = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        budget -= len(dirs) + len(files)
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            if not name.startswith(".") and not os.path.islink(path) and is_hlo_input(path):
                found.append(path)
                if len(found) == limit:
                    return found
        if budget <= 0:
            break
    return found


def _check_unique(units: Sequence[Unit]) -> None:
    seen: dict[str, str] = {}
    for u in units:
        if u.error is not None:
            continue
        if u.rel in seen:
            raise InputConflictError(
                f"{seen[u.rel]} and {u.path} would both be written to <out>/{u.rel}/"
            )
        seen[u.rel] = u.path


def check_core_ids(files: Sequence[str], ids: Sequence[int | None]) -> None:
    """The core-set rule on what the files carry: file ``c`` has ``neuron_core_id`` c.

    One file without a core id (or with core 0) is an N = 1 output. The rule
    and its diagnosis are the passes' (``rust/src/analysis/cores.rs``, 9006),
    given the file names. Raises :class:`CoreSetError` naming every offending
    file.
    """
    from lncsplit._core import diagnose_core_set

    detail = diagnose_core_set(list(ids), [PurePath(f).name for f in files])
    if detail is not None:
        where = os.path.dirname(files[0]) or "."
        raise CoreSetError(f"split output {where}: {detail}")


def load_core_set(unit: Unit) -> list[Module]:
    """Read a core-set unit's modules in core order, checking the core-set rules."""
    if unit.error is not None:
        raise CoreSetError(str(unit.error["message"]))
    modules = [load_input(f) for f in unit.files]
    if unit.dump_root:  # a core without neuron_core_id is its nc<cc>/ (contract §1.7)
        imply_cores(modules, unit.files)
    check_core_ids(unit.files, [m.neuron_core_id for m in modules])
    return modules


__all__ = [
    "CoreSetError",
    "InputConflictError",
    "check_core_ids",
    "core_set_unit",
    "discover_units",
    "error_unit",
    "find_hlo_files",
    "load_core_set",
]
