"""lnc_barriercheck: do the N per-core programs of one kernel race? (contract §3.6)

:func:`racecheck` takes the N core modules of one kernel in core order
(``cores[i]`` carries ``neuron_core_id`` i) and returns a :class:`RaceReport`.
It reports races; it raises only for invalid input (``NeuronAssertion`` 9006 a
bad core list, the concretized verifier's error, 9302 a footprint outside its
location, 9303 a ``remote_local_target`` naming nothing, 9304 barrier
sequences that differ, 9305 a GPSIMDSB2SB with N ≠ 2, 9306 more than 10⁸
instances in one function). The checker runs in Rust with the GIL released;
docs/passes.md explains bands, footprints and the sweep.

Every object of the report reads both ways: attributes (``race.a.core``,
``race.witness.byte``) and, like the JSON, keys (``race["a"]["band"]``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lncsplit import _core
from lncsplit._core import Module
from lncsplit.passes._keyed import Keyed

RaceMode = Literal["exact", "interval"]


@dataclass(frozen=True)
class RaceSide(Keyed):
    """One side of a race: the instruction, its core and its band."""

    core: int
    function: str
    instruction: str
    position: int
    """Depth-first index of the instruction in its function, on its core."""
    band: tuple[int, int | None]
    """(latest counted barrier before, earliest after); −1 / None when there is none."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "core": self.core,
            "function": self.function,
            "instruction": self.instruction,
            "position": self.position,
            "band": list(self.band),
        }

    def __str__(self) -> str:
        hi = "inf" if self.band[1] is None else str(self.band[1])
        return f"{self.instruction} (core {self.core}, band [{self.band[0]}, {hi}])"


@dataclass(frozen=True)
class RaceLocation(Keyed):
    """The physical location both sides touch: its owning core and name."""

    core: int
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"core": self.core, "name": self.name}


@dataclass(frozen=True)
class Witness(Keyed):
    """The least (partition, byte) of the location both sides touch."""

    partition: int
    byte: int

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "byte": self.byte}


@dataclass(frozen=True)
class Race(Keyed):
    """Two unordered instructions on two cores touching a common byte."""

    a: RaceSide
    """The lower core's side."""
    b: RaceSide
    location: RaceLocation
    witness: Witness
    kind: str
    """``write-write`` or ``read-write``."""
    fix: str
    """One line: which barrier to add where."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "location": self.location.to_dict(),
            "witness": self.witness.to_dict(),
            "kind": self.kind,
            "fix": self.fix,
        }

    def summary(self) -> str:
        """One line: kind, both sides with their bands, the location and the witness."""
        return (
            f"{self.kind} race in {self.a.function}: {self.a} and {self.b} both touch "
            f"{self.location.name} of core {self.location.core} at partition "
            f"{self.witness.partition}, byte {self.witness.byte}"
        )

    def __str__(self) -> str:
        return f"{self.summary()}\n  fix: {self.fix}"

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Race:
        def side(s: dict[str, Any]) -> RaceSide:
            lo, hi = s["band"]
            return RaceSide(s["core"], s["function"], s["instruction"], s["position"], (lo, hi))

        return Race(
            side(d["a"]),
            side(d["b"]),
            RaceLocation(d["location"]["core"], d["location"]["name"]),
            Witness(d["witness"]["partition"], d["witness"]["byte"]),
            d["kind"],
            d["fix"],
        )


@dataclass(frozen=True)
class UndecidedRace(Keyed):
    """A race the modelled order leaves, on cores whose order across cores may
    come from what lncsplit does not model (semaphores of another core, barriers
    lowered into semaphores, CoreBarriers the engines do not order): neither a
    race nor ok. ``reason`` says which; ``race`` is the candidate."""

    reason: str
    race: Race

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "race": self.race.to_dict()}

    def __str__(self) -> str:
        return f"undecided: {self.race.summary()}\n  why: {self.reason}"


@dataclass(frozen=True)
class RaceReport:
    """What :func:`racecheck` found, races sorted by (function, a's position,
    b's position, cores, location)."""

    mode: str
    races: list[Race]
    undecided: list[UndecidedRace] = field(default_factory=list)
    """Candidate races that order lncsplit does not model may prevent (cores
    with ``sync_info``, docs/engines.md): never ``ok``."""

    @property
    def ok(self) -> bool:
        """True when no race was found and nothing is undecided."""
        return not self.races and not self.undecided

    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "mode", "races": [...]}`` (contract §3.6), with ``"undecided": [...]``
        when something is (§3.10's cross-core rule)."""
        out: dict[str, Any] = {
            "ok": self.ok,
            "mode": self.mode,
            "races": [r.to_dict() for r in self.races],
        }
        if self.undecided:
            out["undecided"] = [u.to_dict() for u in self.undecided]
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """The report as a JSON string (deterministic key order)."""
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        if self.ok:
            return f"no race ({self.mode} mode)"
        head = f"{len(self.races)} race(s)"
        if self.undecided:
            head += f", {len(self.undecided)} undecided"
        lines = [f"{head} ({self.mode} mode)"]
        lines += [str(r) for r in self.races]
        lines += [str(u) for u in self.undecided]
        return "\n".join(lines)


def racecheck(cores: Sequence[Module], mode: RaceMode = "exact") -> RaceReport:
    """lnc_barriercheck over the N core modules of one kernel (core order).

    ``mode="exact"`` intersects the exact footprints; ``mode="interval"``
    intersects bounding boxes (partition range × byte interval), the
    compiler's over-approximating filter: every exact race is an interval
    race. Does not mutate ``cores``.
    """
    return racecheck_cores(cores, mode)


def racecheck_cores(
    cores: Sequence[Module], mode: RaceMode = "exact", *, parallel: bool = True
) -> RaceReport:
    """:func:`racecheck`; ``parallel=False`` walks the cores on the calling
    thread instead of rayon's pool (the same report; the pipeline's choice
    when files run side by side)."""
    if mode not in ("exact", "interval"):
        raise ValueError(f"mode must be 'exact' or 'interval', got {mode!r}")
    doc = json.loads(_core.racecheck(list(cores), mode, parallel))
    undecided = [
        UndecidedRace(u["reason"], Race.from_dict(u["race"])) for u in doc.get("undecided", [])
    ]
    return RaceReport(doc["mode"], [Race.from_dict(r) for r in doc["races"]], undecided)


__all__ = [
    "Race",
    "RaceLocation",
    "RaceMode",
    "RaceReport",
    "RaceSide",
    "UndecidedRace",
    "Witness",
    "racecheck",
]
