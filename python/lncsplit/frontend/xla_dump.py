"""HLO files and XLA dump roots on the command line (contract §3.9 "Command line", §5).

- An explicitly named HLO file — ``*.hlo``, ``*.hlo.txt``, or a ``*.txt`` whose first line starts
  with ``HloModule`` — is lowered by :func:`lower_hlo_input`: a module XLA partitioned (its ENTRY
  ends in ``_spmd``) whole, by :func:`lower_partitioned`, with its *before* file when one sits
  beside it; any other module by its sharding constraints (§3.5).
- An *XLA dump root* is a directory holding ``*after_spmd-partitioning*.txt`` files (XLA's
  ``--xla_dump_to``, one flat directory). :func:`scan_dump_root` makes each module whose ENTRY
  ends in ``_spmd`` one unit named after its HloModule (``<name>.<id>`` when two modules share a
  name); its *before* is the one file of the same directory whose name starts with the after
  file's ``module_<id>.<name>.`` prefix and contains ``before_spmd-partitioning`` (none, or
  several, is that unit's error). Modules that are not partitioned are listed as skipped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from lncsplit._inputs import is_hlo_input, read_input

from .hlo import HloModule
from .lowering import LoweredHlo, LoweringError, lower_hlo_text

__all__ = [
    "AFTER_MARK",
    "BEFORE_MARK",
    "DumpRoot",
    "DumpUnit",
    "find_before",
    "is_dump_root",
    "is_hlo_text_file",
    "lower_hlo_input",
    "scan_dump_root",
]

AFTER_MARK = "after_spmd-partitioning"
BEFORE_MARK = "before_spmd-partitioning"
_MODULE_ID = re.compile(r"^module_(\d+)\.")
_HEADER_NAME = re.compile(r"^HloModule\s+([^\s,]+)")
_SPMD_ENTRY = re.compile(r"^ENTRY\s+%?(\S+)_spmd\s", re.M)


def is_hlo_text_file(path: str | os.PathLike[str]) -> bool:
    """``*.hlo``, ``*.hlo.txt``, or a regular ``*.txt`` file whose first line starts with
    ``HloModule``: the input rule's test (:func:`lncsplit._inputs.is_hlo_input`, its one home)."""
    return is_hlo_input(path)


def is_dump_root(path: str | os.PathLike[str]) -> bool:
    """A directory holding at least one ``*after_spmd-partitioning*.txt`` file."""
    p = os.fspath(path)
    if not os.path.isdir(p):
        return False
    try:
        return any(AFTER_MARK in n and n.endswith(".txt") for n in os.listdir(p))
    except OSError:
        return False


def _module_name(text: str) -> str:
    m = _HEADER_NAME.match(text.lstrip("\ufeff"))
    return m.group(1) if m else ""


def is_partitioned_text(text: str) -> bool:
    """The ENTRY computation's name ends in ``_spmd`` (called computations may too)."""
    return _SPMD_ENTRY.search(text) is not None


def find_before(after_path: str, name: str | None = None) -> str | None:
    """The *before* file of ``after_path`` (same directory, ``module_<id>.<name>.`` prefix,
    ``before_spmd-partitioning`` in the name); None when there is none; a
    :class:`LoweringError` when there are several."""
    directory, base = os.path.split(os.path.abspath(after_path))
    m = _MODULE_ID.match(base)
    if m is None:
        return None
    if name is None:
        name = _module_name(read_input(after_path).decode("utf-8", "replace"))
    prefix = f"module_{m.group(1)}.{name}."
    if not base.startswith(prefix):
        return None
    found = sorted(
        n for n in os.listdir(directory) if n.startswith(prefix) and BEFORE_MARK in n and n != base
    )
    if len(found) > 1:
        raise LoweringError(
            f"{after_path}: several files before spmd-partitioning match {prefix}*: "
            + ", ".join(found)
        )
    return os.path.join(directory, found[0]) if found else None


@dataclass(frozen=True)
class DumpUnit:
    """One partitioned module of a dump root."""

    after: str
    before: str | None
    name: str
    module_id: str
    rel: str
    error: str | None = None


@dataclass
class DumpRoot:
    """What :func:`scan_dump_root` found: the units, and the modules skipped with why."""

    path: str
    units: list[DumpUnit] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def scan_dump_root(path: str | os.PathLike[str]) -> DumpRoot:
    """The partitioned modules of an XLA dump root (see the module doc), in file-name order."""
    root = os.fspath(path)
    found = DumpRoot(root)
    names = sorted(n for n in os.listdir(root) if AFTER_MARK in n and n.endswith(".txt"))
    units: list[tuple[str, str, str, str | None, str | None]] = []
    for n in names:
        p = os.path.join(root, n)
        if not os.path.isfile(p):
            continue
        text = read_input(p).decode("utf-8", "replace")
        if not is_partitioned_text(text):
            found.skipped.append((p, "not partitioned (its ENTRY does not end in _spmd)"))
            continue
        name = _module_name(text) or n
        m = _MODULE_ID.match(n)
        mid = m.group(1) if m else ""
        before: str | None = None
        error: str | None = None
        try:
            before = find_before(p, name)
        except LoweringError as exc:
            error = str(exc)
        if before is None and error is None:
            error = (
                f"{p}: no file before spmd-partitioning beside it (module_{mid}.{name}.*"
                f"{BEFORE_MARK}*.txt)"
            )
        units.append((p, name, mid, before, error))
    counts: dict[str, int] = {}
    for _, name, _, _, _ in units:
        counts[name] = counts.get(name, 0) + 1
    for p, name, mid, before, error in units:
        rel = name if counts[name] == 1 else f"{name}.{mid}"
        found.units.append(DumpUnit(p, before, name, mid, rel, error))
    return found


def lower_hlo_input(
    path: str | os.PathLike[str],
    lnc: int | None = None,
    *,
    arch: str = "gen3",
    before: str | None = None,
) -> LoweredHlo:
    """Lower an explicitly named HLO file (see the module doc). ``lnc`` None: the module's
    ``num_partitions`` for a partitioned module, the arch's default otherwise. ``before``
    overrides the file found beside a partitioned one."""
    from .config import logical_nc_config
    from .partitioned import lower_partitioned_text, num_partitions

    p = os.fspath(path)
    text = read_input(p).decode("utf-8")
    if not is_partitioned_text(text):
        return lower_hlo_text(text, lnc if lnc is not None else logical_nc_config(arch), arch=arch)
    before_path = before if before is not None else find_before(p, _module_name(text))
    before_text = None if before_path is None else read_input(before_path).decode("utf-8")
    doc = lower_partitioned_text(text, lnc, before=before_text, arch=arch)
    module = HloModule.parse(text)
    entry = module.entry
    made = doc.count('"opcode":')
    partitions = num_partitions(module)
    shapes = f"global shapes from {before_path}" if before_path else "no file before it"
    notes = [
        f"lowered HloModule {module.name} (ENTRY %{entry.name if entry else '?'}, partitioned "
        f"for {partitions} cores) to {made} instruction(s); {shapes}"
    ]
    n = lnc if lnc is not None else num_partitions(module)
    return LoweredHlo(notes=notes, lnc=n, text=doc)
