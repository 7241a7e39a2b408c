"""Kept for this turn: lnc_barriercheck's wrapper moved to :mod:`lncsplit.passes.racecheck`
(named for its public verb); this module only re-exports it. Import from the new home,
or use :func:`lncsplit.racecheck`."""

from __future__ import annotations

from lncsplit.passes.racecheck import (
    Race,
    RaceLocation,
    RaceMode,
    RaceReport,
    RaceSide,
    Witness,
    racecheck,
    racecheck_cores,
)

__all__ = [
    "Race",
    "RaceLocation",
    "RaceMode",
    "RaceReport",
    "RaceSide",
    "Witness",
    "racecheck",
    "racecheck_cores",
]
