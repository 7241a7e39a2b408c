"""enginecheck: inside one NeuronCore, do the engines and the DMA queues race? (contract §3.10)

:func:`enginecheck` takes one core module (or an N = 1 module) and returns an
:class:`EngineReport`: every pair of accesses within the core whose *physical*
footprints intersect, at least one a write, that neither program order per
engine, ``ALL`` instructions, DMA queue order nor a semaphore wait orders. It
reports; it raises only for invalid input (``NeuronAssertion`` 9601 a symbolic
module, 9602 a linked module, 9302 a footprint outside its location, 9306 more
than 10⁸ instances; ``BirJsonError`` at the path of malformed ``sync_info``,
``queue``, ``dma_blocks``, ``sema_group`` or ``queues``). The check runs in Rust
with the GIL released; docs/engines.md explains the model with a worked race.

:meth:`EngineReport.to_json` prints exactly §3.10's keys. The Python objects
carry a little more (each side's ``function``, ``queue`` and ``dma_block``; a
location's ``other``, ``bank`` and ``addr_space``), and every object also
reads like its JSON (``race["a"]["position"]``).

:func:`why` explains the order between two instructions (``racecheck
--engines --why A B``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from lncsplit import _core
from lncsplit._core import Module
from lncsplit.errors import InstructionNotFoundError
from lncsplit.passes._keyed import Keyed
from lncsplit.passes.racecheck import Witness

WaitStatus = Literal["early", "deadlock", "no-update"]


@dataclass(frozen=True)
class EngineSide(Keyed):
    """One side of an engine race: the instruction, its position and engine."""

    instruction: str
    position: int
    """Depth-first index of the instruction in its function (a DMABlock's: its trigger's)."""
    engine: str
    function: str
    queue: str | None = None
    """The DMA queue, for a DMA or a DMABlock."""
    dma_block: str | None = None
    """The DMABlock, when the access is one a ``DMATrigger`` started."""

    def to_dict(self) -> dict[str, Any]:
        return {"instruction": self.instruction, "position": self.position, "engine": self.engine}

    def label(self) -> str:
        """``name`` or ``name (DMABlock b)``."""
        return (
            f"{self.instruction} (DMABlock {self.dma_block})"
            if self.dma_block
            else self.instruction
        )

    def __str__(self) -> str:
        return f"{self.label()} ({self.engine}, position {self.position})"

    @staticmethod
    def from_dict(d: dict[str, Any]) -> EngineSide:
        return EngineSide(
            d["instruction"],
            d["position"],
            d["engine"],
            d.get("function", ""),
            d.get("queue"),
            d.get("dma_block"),
        )


@dataclass(frozen=True)
class EngineLocation(Keyed):
    """Where the race is: the memory (``SB``, ``PSUM``, ``DRAM``) and a's location."""

    space: str
    name: str
    other: str | None = None
    """b's location, when the allocator placed two locations over one byte."""
    bank: int | None = None
    """The PSUM bank."""
    addr_space: str | None = None
    """The DRAM arena (address space)."""

    def to_dict(self) -> dict[str, Any]:
        return {"space": self.space, "name": self.name}


@dataclass(frozen=True)
class EngineRace(Keyed):
    """Two unordered accesses of one core with a common physical byte."""

    kind: str
    """``RAW`` (a writes, b reads), ``WAR`` or ``WAW``."""
    a: EngineSide
    """The earlier position."""
    b: EngineSide
    location: EngineLocation
    witness: Witness
    """The least common (partition, byte); on DRAM partition 0 and the arena byte."""
    fix: str
    """The semaphore wait that would order them."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "location": self.location.to_dict(),
            "witness": self.witness.to_dict(),
            "fix": self.fix,
        }

    def summary(self) -> str:
        """One line: kind, both sides, the location and the witness."""
        other = (
            f" (and {self.location.other}, placed over the same bytes)"
            if self.location.other
            else ""
        )
        return (
            f"{self.kind} race: {self.a} and {self.b} both touch {self.location.space} "
            f"{self.location.name}{other} at partition {self.witness.partition}, byte {self.witness.byte}"
        )

    def __str__(self) -> str:
        return f"{self.summary()}\n  fix: {self.fix}"

    @staticmethod
    def from_dict(d: dict[str, Any]) -> EngineRace:
        loc = d["location"]
        return EngineRace(
            d["kind"],
            EngineSide.from_dict(d["a"]),
            EngineSide.from_dict(d["b"]),
            EngineLocation(
                loc["space"], loc["name"], loc.get("other"), loc.get("bank"), loc.get("addr_space")
            ),
            Witness(d["witness"]["partition"], d["witness"]["byte"]),
            d["fix"],
        )


@dataclass(frozen=True)
class EngineWait(Keyed):
    """A semaphore wait whose status is not ``ok``."""

    instruction: str
    position: int
    from_: str
    """The instruction the wait names (``"from"`` in the JSON)."""
    id: int
    wait_value: int
    status: WaitStatus
    """``early`` (it does not order the waiter after ``from``), ``deadlock`` (it is never
    satisfied before the waiter), ``no-update`` (``from`` names nothing, or ``id`` is never
    updated)."""
    function: str = ""
    dma_block: str | None = None
    """The DMABlock that waits, when the waiter is one."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "instruction": self.instruction,
            "position": self.position,
            "from": self.from_,
            "id": self.id,
            "wait_value": self.wait_value,
            "status": self.status,
        }

    def __str__(self) -> str:
        who = (
            f"{self.instruction} (DMABlock {self.dma_block})"
            if self.dma_block
            else self.instruction
        )
        return (
            f"{self.status} wait: {who} (position {self.position}) waits for semaphore "
            f"{self.id} >= {self.wait_value} from {self.from_}"
        )

    @staticmethod
    def from_dict(d: dict[str, Any]) -> EngineWait:
        return EngineWait(
            d["instruction"],
            d["position"],
            d["from"],
            d["id"],
            d["wait_value"],
            d["status"],
            d.get("function", ""),
            d.get("dma_block"),
        )


@dataclass(frozen=True)
class EngineUndecided(Keyed):
    """Something the check cannot decide; never silently ordered."""

    reason: str
    instruction: str
    position: int
    function: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "instruction": self.instruction, "position": self.position}

    def __str__(self) -> str:
        return f"undecided at {self.instruction} (position {self.position}): {self.reason}"


@dataclass(frozen=True)
class EngineReport:
    """What :func:`enginecheck` found.

    ``races`` are sorted by (a's position, b's position, location); ``waits``
    lists the waits that are not ``ok``; ``unchecked`` counts the pairs
    back-edges leave unchecked (they do not make ``ok`` false).
    """

    races: list[EngineRace]
    waits: list[EngineWait]
    undecided: list[EngineUndecided]
    unchecked: int

    @property
    def ok(self) -> bool:
        """No race, no ``deadlock`` or ``no-update`` wait, nothing undecided."""
        return (
            not self.races
            and not self.undecided
            and all(w.status not in ("deadlock", "no-update") for w in self.waits)
        )

    def to_dict(self) -> dict[str, Any]:
        """Exactly contract §3.10's JSON."""
        return {
            "ok": self.ok,
            "races": [r.to_dict() for r in self.races],
            "waits": [w.to_dict() for w in self.waits],
            "undecided": [u.to_dict() for u in self.undecided],
            "unchecked": self.unchecked,
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as a JSON string (contract §3.10; deterministic key order)."""
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        head = "ok" if self.ok else "NOT ok"
        counts = (
            f"{len(self.races)} race(s), {len(self.waits)} wait(s) not ok, "
            f"{len(self.undecided)} undecided, {self.unchecked} pair(s) unchecked across back-edges"
        )
        lines = [f"{head}: {counts}"]
        lines += [str(r) for r in self.races]
        lines += [str(w) for w in self.waits]
        lines += [str(u) for u in self.undecided]
        return "\n".join(lines)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> EngineReport:
        return EngineReport(
            [EngineRace.from_dict(r) for r in d["races"]],
            [EngineWait.from_dict(w) for w in d["waits"]],
            [
                EngineUndecided(u["reason"], u["instruction"], u["position"], u.get("function", ""))
                for u in d["undecided"]
            ],
            d["unchecked"],
        )


def enginecheck(module: Module) -> EngineReport:
    """The intra-core race check of one core module (contract §3.10).

    Does not mutate ``module``.
    """
    if not isinstance(module, Module):
        raise TypeError(f"module must be a lncsplit.Module, got {type(module).__name__}")
    return EngineReport.from_dict(json.loads(_core.enginecheck(module)))


def why(module: Module, a: str, b: str) -> dict[str, Any]:
    """The chain of orderings between instructions ``a`` and ``b``, or where it breaks.

    ``a`` and ``b`` are ``NAME`` (its first instance in depth-first order),
    ``FUNCTION:NAME``, ``@POSITION`` or ``FUNCTION:@POSITION``; a DMABlock's
    name stands for the block its first trigger starts. Returns ``{"a", "b",
    "function", "order": "a-before-b" | "b-before-a" | "unordered", "text",
    ...}``: with an order, ``"chain"`` lists each step ``{"from", "to",
    "edge"}``; unordered, ``"breaks"`` names per engine the latest instruction
    ordered before b and the first ordered after a, and ``"fix"`` the wait that
    would order them. ``"blocked": true`` when either can never run. A name
    that finds nothing raises :class:`~lncsplit.errors.InstructionNotFoundError`.
    """
    if not isinstance(module, Module):
        raise TypeError(f"module must be a lncsplit.Module, got {type(module).__name__}")
    doc: dict[str, Any] = json.loads(_core.enginecheck_why(module, a, b))
    if "not_found" in doc:
        raise InstructionNotFoundError(doc["not_found"], module.name, [])
    return doc


__all__ = [
    "EngineLocation",
    "EngineRace",
    "EngineReport",
    "EngineSide",
    "EngineUndecided",
    "EngineWait",
    "WaitStatus",
    "enginecheck",
    "why",
]
