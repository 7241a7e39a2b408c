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

#: The LNC values accepted on trn2 (gen3).
TRN2_LNC_CHOICES: tuple[int, ...] = (1, 2)


def logical_nc_config(arch: str = "gen3", lnc: int | None = None) -> int:
    """The LNC count N for ``arch``: 2 by default on trn2 (gen3), 1 elsewhere.

    An explicit ``lnc`` must be 1 or 2 on gen3 and 1 on every other arch (the front end's
    ``args.arch != trn2 or args.logical_nc_config == 1`` constraint); anything else raises
    ``ValueError``. The result is the backend's ``PassOptions.lnc_size``.
    """
    a = canonical_arch(arch)
    if lnc is None:
        return 2 if a == "gen3" else 1
    if isinstance(lnc, bool) or not isinstance(lnc, int):
        raise ValueError(f"logical_nc_config must be an integer, got {lnc!r}")
    if a == "gen3":
        if lnc not in TRN2_LNC_CHOICES:
            raise ValueError(f"logical_nc_config must be 1 or 2 on trn2 (gen3), got {lnc}")
        return lnc
    if lnc != 1:
        raise ValueError(
            f"logical_nc_config {lnc} is only supported on trn2 (gen3); arch {a} requires 1"
        )
    return 1


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
