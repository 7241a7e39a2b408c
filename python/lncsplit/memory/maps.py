"""Memory maps: where each allocation sits on each core (the data behind ``memory --plot``).

One :class:`CoreMap` per checked module (core), built from the modules themselves and their
:class:`~lncsplit.memory.MemoryReport`:

- **SBUF**: partitions × bytes per partition; each placed SB location is a rectangle at
  (``addr``, ``base``) of ``bytes_per_partition`` × ``partitions``.
- **PSUM**: partitions × bytes across the banks (bank ``b`` covers bytes ``[b·2048, (b+1)·2048)``);
  a location sits in the bank the checks count (``bank``, else ``addr`` ÷ 2048), at ``addr``
  mod 2048 within it.
- **DRAM**: one linear byte axis with two lanes: the core's private window (``Local`` locations)
  and the shared region (shared tensors: placed once on core 0, reached through
  ``remote_local_target`` elsewhere, contract §3.4).

Pure data (no matplotlib): :mod:`lncsplit.memory.plot` draws it, the HTML report tabulates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lncsplit._core import MemoryLocationSetView, MemoryLocationView, Module
from lncsplit.memory.checks import Usage, Violation, is_shared_location, tensor_bytes
from lncsplit.memory.report import MemoryReport, check_memory

__all__ = ["CoreMap", "Placement", "memory_maps"]


@dataclass(frozen=True)
class Placement:
    """One memory location of one core.

    ``memory`` is ``SB``, ``PSUM`` or ``DRAM``; ``start`` the byte address (within a partition
    for SB/PSUM, linear for DRAM; None when unplaced); ``size`` the bytes per partition (SB,
    PSUM) or the tensor's bytes (DRAM); ``partition``/``partitions`` the base partition and
    extent; ``shared`` marks the shared DRAM region; ``remote`` names the target of a proxy;
    ``violations`` the memory rules this location breaks on this core.
    """

    function: str
    set_name: str
    location: str
    memory: str
    start: int | None
    size: int
    partition: int
    partitions: int
    bank: int | None = None
    shared: bool = False
    remote: str | None = None
    violations: tuple[str, ...] = ()

    @property
    def placed(self) -> bool:
        """Whether the location has an address."""
        return self.start is not None

    @property
    def end(self) -> int | None:
        """One past the last byte (None when unplaced)."""
        return None if self.start is None else self.start + self.size

    @property
    def anchor(self) -> str:
        """A stable id for links: ``<function>/<set>/<location>``."""
        return f"{self.function}/{self.set_name}/{self.location}"


@dataclass
class CoreMap:
    """Every placement of one core, by memory, with the core's limits and violations."""

    module: str
    core: int
    arch: str
    usage: Usage
    sbuf: list[Placement] = field(default_factory=list)
    psum: list[Placement] = field(default_factory=list)
    dram: list[Placement] = field(default_factory=list)
    shared: list[Placement] = field(default_factory=list)

    @property
    def limits(self) -> dict[str, int]:
        """The core's limits (``CoreUsage.limits``)."""
        return self.usage.limits

    @property
    def violations(self) -> list[Violation]:
        """The core's violations."""
        return self.usage.violations

    def placements(self) -> list[Placement]:
        """Every placement, SBUF, PSUM, private DRAM, shared DRAM."""
        return [*self.sbuf, *self.psum, *self.dram, *self.shared]


def _remote(loc: MemoryLocationView) -> str | None:
    t = loc.remote_local_target
    if not t:
        return None
    return f"core {t.get('core')} {t.get('name')}"


def _psum_start(loc: MemoryLocationView, bank_size: int) -> tuple[int | None, int | None]:
    """(first byte, first bank), in the bank the checks count (``memory.checks``): ``bank``
    when set (≥ 0), at ``addr`` mod the bank size within it (an ``addr`` of 0 in bank 1 is
    the bank's first byte, not bank 0's); without a bank, ``addr`` and its bank."""
    bank = loc.bank if loc.bank is not None and loc.bank >= 0 else None
    if bank is not None:
        return bank * bank_size + (loc.addr or 0) % bank_size, bank
    if loc.addr is not None:
        return loc.addr, loc.addr // bank_size
    return None, None


def _placement(
    fn: str,
    s: MemoryLocationSetView,
    loc: MemoryLocationView,
    bank_size: int,
    rules: tuple[str, ...],
) -> Placement | None:
    bpp = s.bytes_per_partition or 0

    def make(memory: str, start: int | None, size: int, bank: int | None = None) -> Placement:
        shared = memory == "DRAM" and is_shared_location(s, loc)
        return Placement(
            fn, s.name, loc.name, memory, start, size, loc.base or 0, s.partitions,
            bank, shared, _remote(loc), rules,
        )  # fmt: skip

    if loc.type == "SB":
        return make("SB", loc.addr, bpp)
    if loc.type == "PSUM":
        start, bank = _psum_start(loc, bank_size)
        return make("PSUM", start, bpp, bank)
    if loc.type == "DRAM":
        return make("DRAM", loc.addr, tensor_bytes(s) or 0)
    return None


def _rules_by_location(usage: Usage) -> dict[tuple[str | None, str | None], tuple[str, ...]]:
    out: dict[tuple[str | None, str | None], list[str]] = {}
    for v in usage.violations:
        out.setdefault((v.function, v.location), []).append(v.rule)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def _core_map(module: Module, usage: Usage) -> CoreMap:
    cm = CoreMap(module=module.name, core=usage.core, arch=usage.arch, usage=usage)
    bank_size = usage.limits.get("psum_bank_size", 2048)
    rules = _rules_by_location(usage)
    for fn in module.functions:
        for s in fn.allocations:
            for loc in s.locations:
                r = rules.get((fn.name, loc.name), ()) + rules.get((fn.name, s.name), ())
                p = _placement(fn.name, s, loc, bank_size, r)
                if p is None:
                    continue
                lane = {"SB": cm.sbuf, "PSUM": cm.psum}.get(p.memory)
                if lane is None:
                    lane = cm.shared if p.shared else cm.dram
                lane.append(p)
    return cm


def memory_maps(
    modules: Sequence[Module], report: MemoryReport | None = None, *, arch: str | None = None
) -> list[CoreMap]:
    """One :class:`CoreMap` per module (core), in the report's order.

    ``report`` is ``check_memory(modules)`` (computed when not given, with ``arch``); it
    supplies each core's number, limits and violations.
    """
    mods = list(modules)
    if report is None:
        report = check_memory(mods, arch=arch)
    if len(report.cores) != len(mods):
        raise ValueError(f"the report has {len(report.cores)} core entries for {len(mods)} modules")
    return [_core_map(m, u) for m, u in zip(mods, report.cores, strict=True)]
