"""Per-generation memory geometry and the arch names (neuronx-facts §7, contract §1.1, §3.4).

This table is the single source of truth for every limit the memory checks
use (a leaf: the memory model and the front end read it from here). The arch
*names*, aliases and ArchLevels have one home, the Rust table
(``rust/src/bir/arch.rs``, read through ``_core.arch_table()``); the geometry
rows here are checked against it at import. Values are the compiler's ``getArchModel``
Core/Statebuf/Psumbuf fields:

============  ==========  ======  ======  =======
arch          inferentia  sunda   gen3    core_v4
============  ==========  ======  ======  =======
ArchLevel     10          20      30      40
SB_SIZE       0x18000     0x30000 0x38000 0x40000
SB partitions 128         128     128     128
reservedSize  0x4000      0x4000  0x4008  0x4008
PSUM banks    4           8       8       8
bank size     2048        2048    2048    2048
PSUM parts    64          128     128     128
dramSizeGb    16          16      24      36
cores/device  4           2       2       2
============  ==========  ======  ======  =======

reservedSize: the wiki pages disagree between 0x4000 and 0x4008 for gen3 and
gen4; lncsplit follows the facts table (0x4008). The reserved bytes are
*reported*, not subtracted: the SBUF allocator stores the full ``SB_SIZE`` as
its per-core budget (seed 002, ``SB_Allocator`` ctor), so the range check is
``addr + bytes_per_partition <= SB_SIZE`` (see ``docs/memory.md``).

SBUF and PSUM are replicated: every core of an LNC gets this full geometry,
never 1/N of it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from lncsplit import _core
from lncsplit.errors import LncsplitError

KIB = 1 << 10
GIB = 1 << 30


class UnknownArchError(LncsplitError, ValueError):
    """An arch name that is neither canonical nor a known alias."""

    def __init__(self, arch: object) -> None:
        self.arch = arch
        known = ", ".join(sorted(ARCH_ALIASES))
        super().__init__(f"Unknown architecture {arch!r} (known: {known})")


@dataclass(frozen=True)
class ArchGeometry:
    """One generation's per-core memory geometry (all sizes in bytes)."""

    name: str
    """Canonical name (``inferentia``, ``sunda``, ``gen3``, ``core_v4``)."""
    arch_level: int
    """ArchLevel ordinal (10/20/30/40)."""
    sb_size: int
    """SBUF bytes per partition (``SB_SIZE``, Statebuf+0)."""
    sb_partitions: int
    """SBUF partitions (Statebuf.numPartitions)."""
    sb_reserved: int
    """SBUF reservedSize per partition (reported, not subtracted)."""
    psum_banks: int
    """PSUM banks per partition."""
    psum_bank_size: int
    """Bytes per PSUM bank per partition."""
    psum_partitions: int
    """PSUM partitions."""
    dram_size_gb: int
    """Per-core HBM window in GiB (Core::dramSizeGb)."""
    cores_per_device: int
    """Physical NeuronCores per device."""

    @property
    def psum_size(self) -> int:
        """PSUM bytes per partition (banks × bank size)."""
        return self.psum_banks * self.psum_bank_size

    @property
    def dram_bytes(self) -> int:
        """Per-core HBM window in bytes: ``dramSizeGb << 30``."""
        return self.dram_size_gb << 30

    def to_dict(self) -> dict[str, int | str]:
        """The table row as a plain dict (derived sizes included)."""
        d: dict[str, int | str] = dict(asdict(self))
        d["psum_size"] = self.psum_size
        d["dram_bytes"] = self.dram_bytes
        return d


INFERENTIA = ArchGeometry("inferentia", 10, 96 * KIB, 128, 0x4000, 4, 2048, 64, 16, 4)
SUNDA = ArchGeometry("sunda", 20, 192 * KIB, 128, 0x4000, 8, 2048, 128, 16, 2)
GEN3 = ArchGeometry("gen3", 30, 224 * KIB, 128, 0x4008, 8, 2048, 128, 24, 2)
CORE_V4 = ArchGeometry("core_v4", 40, 256 * KIB, 128, 0x4008, 8, 2048, 128, 36, 2)

GEOMETRIES: dict[str, ArchGeometry] = {g.name: g for g in (INFERENTIA, SUNDA, GEN3, CORE_V4)}
"""Canonical name → geometry."""


def _aliases() -> dict[str, str]:
    """The names from the one arch table (``rust/src/bir/arch.rs``), checked
    against the geometry rows here (same names, same ArchLevels)."""
    table = _core.arch_table()
    levels = {name: level for name, level, _aliases in table}
    mine = {g.name: g.arch_level for g in GEOMETRIES.values()}
    if levels != mine:  # pragma: no cover - a build mismatch, not user input
        raise RuntimeError(f"arch geometry rows {mine} do not match the arch table {levels}")
    return {a: name for name, _level, aliases in table for a in (name, *aliases)}


ARCH_ALIASES: dict[str, str] = _aliases()
"""Every accepted name (lower case) → canonical name (contract §1.1), from the
one arch table in Rust."""

DEFAULT_ARCH = "gen3"


def canonical_arch(arch: str | None) -> str:
    """The canonical name of ``arch`` (case-insensitive; None → ``gen3``)."""
    if arch is None:
        return DEFAULT_ARCH
    if not isinstance(arch, str):
        raise UnknownArchError(arch)
    try:
        return ARCH_ALIASES[arch.strip().lower()]
    except KeyError:
        raise UnknownArchError(arch) from None


def geometry(arch: str | None = None) -> ArchGeometry:
    """The per-core geometry of ``arch`` (a canonical name or alias).

    Raises :class:`UnknownArchError` (a :class:`~lncsplit.LncsplitError`) on an
    unknown name.
    """
    return GEOMETRIES[canonical_arch(arch)]


__all__ = [
    "ARCH_ALIASES",
    "CORE_V4",
    "DEFAULT_ARCH",
    "GEN3",
    "GEOMETRIES",
    "INFERENTIA",
    "SUNDA",
    "ArchGeometry",
    "UnknownArchError",
    "canonical_arch",
    "geometry",
]
