"""Kept for this turn: the per-generation geometry and the arch names moved to
:mod:`lncsplit.arch` (the front end reads them too, without the memory model); this
module only re-exports them. Import from the new home."""

from __future__ import annotations

from lncsplit.arch import (
    ARCH_ALIASES,
    CORE_V4,
    DEFAULT_ARCH,
    GEN3,
    GEOMETRIES,
    GIB,
    INFERENTIA,
    KIB,
    SUNDA,
    ArchGeometry,
    UnknownArchError,
    canonical_arch,
    geometry,
)

__all__ = [
    "ARCH_ALIASES",
    "CORE_V4",
    "DEFAULT_ARCH",
    "GEN3",
    "GEOMETRIES",
    "GIB",
    "INFERENTIA",
    "KIB",
    "SUNDA",
    "ArchGeometry",
    "UnknownArchError",
    "canonical_arch",
    "geometry",
]
