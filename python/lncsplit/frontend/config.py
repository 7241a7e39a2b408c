"""Front↔back configuration: ``logical_nc_config`` (the LNC count N) and architecture names."""

from __future__ import annotations

import importlib
from typing import Any

# One source of truth for arch names and aliases (contract §1.1): the geometry
# table of lncsplit.arch (below the memory model and the front end alike).
from lncsplit.arch import ARCH_ALIASES, GEOMETRIES, canonical_arch

__all__ = ["ARCH_ALIASES", "ARCHS", "canonical_arch", "logical_nc_config", "make_pass_options"]

#: Canonical architecture names, ArchLevel 10/20/30/40.
ARCHS: tuple[str, ...] = tuple(GEOMETRIES)


def logical_nc_config(arch: str = "gen3", lnc: int | None = None) -> int:
    """The LNC count N for ``arch``: by default 2 on trn2 (gen3), 1 elsewhere.

    An explicit ``lnc`` is taken as given on every arch, as the split takes it (contract §3.5,
    2026-12-02: any N >= 1 on every arch; only GPSIMDSB2SB is limited to N == 2, which
    racecheck and the simulator check, §3.6/§3.8). It must be an integer (``TypeError``
    otherwise) >= 1 (``ValueError``). The result is the backend's ``PassOptions.lnc_size``.
    (The compiler's front end accepts only 1 or 2 on trn2 and 1 elsewhere; lncsplit's split
    has no such limit, and one rule for N holds for ``lower``, the pipeline and this.)
    """
    a = canonical_arch(arch)
    if lnc is None:
        return 2 if a == "gen3" else 1
    if isinstance(lnc, bool) or not isinstance(lnc, int):
        raise TypeError(f"lnc must be an integer, got {lnc!r}")
    if lnc < 1:
        raise ValueError(f"lnc must be an integer >= 1, got {lnc}")
    return lnc


def make_pass_options(arch: str = "gen3", lnc: int | None = None) -> Any:
    """An ``lncsplit.PassOptions`` whose ``lnc_size`` equals :func:`logical_nc_config`.

    Imports the compiled ``lncsplit`` lazily; raises ``ImportError`` when it is not built.
    """
    lncsplit = importlib.import_module("lncsplit")

    n = logical_nc_config(arch, lnc)
    cls = lncsplit.PassOptions
    try:
        return cls(lnc_size=n)
    except TypeError:
        opts = cls()
        opts.lnc_size = n
        return opts
