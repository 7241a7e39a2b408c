"""A pure-Python stand-in for the Rust module views, built from BIR-JSON dicts.

Same attribute names as ``lncsplit.Module`` / ``FunctionView`` /
``MemoryLocationSetView`` / ``MemoryLocationView`` / ``InstructionView`` /
``ArgumentView``. Tests build modules with :func:`make_module`, which returns a
real ``lncsplit.Module`` when the Rust views exist (``LNCSPLIT_FAKES=1``
forces the fakes) and a fake otherwise.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DTYPE_SIZES = {
    "float64": 8,
    "int64": 8,
    "uint64": 8,
    "float32": 4,
    "int32": 4,
    "uint32": 4,
    "bfloat16": 2,
    "float16": 2,
    "int16": 2,
    "uint16": 2,
    "int8": 1,
    "uint8": 1,
}

ALIASES = {
    "tonga": "inferentia",
    "inf1": "inferentia",
    "trainium": "sunda",
    "trn1": "sunda",
    "inf2": "sunda",
    "cayman": "gen3",
    "trn2": "gen3",
    "mariana": "core_v4",
    "trn3": "core_v4",
}


@dataclass
class FakeLocation:
    name: str
    type: str
    set_name: str
    addr: int | None = None
    bank: int | None = None
    base: int | None = None
    allocated: bool | None = None
    is_shared_post_dram_alloc: bool | None = None
    written_by_another_core: bool | None = None
    remote_local_target: dict[str, Any] | None = None


@dataclass
class FakeSet:
    name: str
    dtype: str
    tensor_shape: list[int]
    kind: str | None = None
    partition_dim: int | None = None
    addr_space: str | None = None
    locations: list[FakeLocation] = field(default_factory=list)

    @property
    def partitions(self) -> int:
        pd = self.partition_dim or 0
        return self.tensor_shape[pd] if pd < len(self.tensor_shape) else 1

    @property
    def bytes_per_partition(self) -> int | None:
        size = DTYPE_SIZES.get(self.dtype.lower())
        if size is None:
            return None
        pd = self.partition_dim or 0
        for i, d in enumerate(self.tensor_shape):
            if i != pd:
                size *= d
        return size


@dataclass
class FakeArg:
    kind: str
    memsetref: str | None = None
    memref: str | None = None
    ap: list[list[int]] = field(default_factory=list)
    dtype: str | None = None


@dataclass
class FakeInst:
    name: str
    opcode: str
    ins: list[FakeArg] = field(default_factory=list)
    outs: list[FakeArg] = field(default_factory=list)
    body: list[FakeInst] = field(default_factory=list)


@dataclass
class FakeFunction:
    name: str
    allocations: list[FakeSet] = field(default_factory=list)
    blocks: list[list[FakeInst]] = field(default_factory=list)

    def instructions(self, opcodes: Sequence[str] | None = None) -> list[FakeInst]:
        out: list[FakeInst] = []

        def walk(insts: list[FakeInst]) -> None:
            for i in insts:
                if opcodes is None or i.opcode in opcodes:
                    out.append(i)
                walk(i.body)

        for b in self.blocks:
            walk(b)
        return out

    def accesses(
        self, opcodes: Sequence[str]
    ) -> list[tuple[str, str, str | None, str | None, list[str]]]:
        groups: dict[tuple[str, str, str | None, str | None], list[str]] = {}
        for i in self.instructions(opcodes):
            for side, args in (("in", i.ins), ("out", i.outs)):
                for a in args:
                    names = groups.setdefault((i.opcode, side, a.memsetref, a.memref), [])
                    if not names or names[-1] != i.name:
                        names.append(i.name)
        return [(*k, v) for k, v in groups.items()]

    def moved_bytes_per_partition(self, opcodes: Sequence[str]) -> list[tuple[str, str, str, int]]:
        """Bytes per partition of ``ins[0]``/``outs[0]``: the non-partition ap dims' points
        (the fakes' APs never overlap), capped by the set's partition size."""
        sets = {s.name: s for s in self.allocations}
        out = []
        for i in self.instructions(opcodes):
            for side, args in (("in", i.ins[:1]), ("out", i.outs[:1])):
                for a in args:
                    s = sets.get(a.memsetref or "")
                    bpp = s.bytes_per_partition if s is not None else None
                    if s is None or bpp is None:
                        continue
                    n = DTYPE_SIZES.get((a.dtype or s.dtype).lower(), 1)
                    for _step, num in a.ap[1:]:
                        n *= num
                    out.append((i.name, side, s.name, min(bpp, n) if a.ap else bpp))
        return out

    def memory_location(self, name: str) -> FakeLocation | None:
        for s in self.allocations:
            for loc in s.locations:
                if loc.name == name:
                    return loc
        return None

    def memory_location_set(self, name: str) -> FakeSet | None:
        for s in self.allocations:
            if s.name == name:
                return s
        return None


@dataclass
class FakeModule:
    name: str
    arch: str = "gen3"
    neuron_core_id: int | None = None
    functions: list[FakeFunction] = field(default_factory=list)

    def function(self, name: str) -> FakeFunction | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None


def _arg(d: dict[str, Any]) -> FakeArg:
    return FakeArg(
        d.get("kind", "physical_ap"),
        d.get("memsetref"),
        d.get("memref"),
        d.get("ap", []),
        d.get("dtype"),
    )


def _inst(d: dict[str, Any]) -> FakeInst:
    body: list[FakeInst] = []
    for b in d.get("blocks", []):
        body.extend(_inst(x) for x in b.get("instructions", []))
    return FakeInst(
        d["name"],
        d["opcode"],
        [_arg(a) for a in d.get("ins", [])],
        [_arg(a) for a in d.get("outs", [])],
        body,
    )


def fake_from_dict(d: dict[str, Any]) -> FakeModule:
    """Build a fake module from a contract §1 JSON dict."""
    arch = d.get("arch", "gen3").lower()
    arch = ALIASES.get(arch, arch)
    core = d.get("attributes", {}).get("neuron_core_id")
    fns = []
    for f in d.get("functions", []):
        sets = []
        for s in f.get("allocations", []):
            locs = [
                FakeLocation(
                    name=loc["name"],
                    type=loc["type"],
                    set_name=s["name"],
                    addr=loc.get("addr"),
                    bank=loc.get("bank"),
                    base=loc.get("base"),
                    allocated=loc.get("allocated"),
                    is_shared_post_dram_alloc=loc.get("is_shared_post_dram_alloc"),
                    written_by_another_core=loc.get("written_by_another_core"),
                    remote_local_target=copy.deepcopy(loc.get("remote_local_target")),
                )
                for loc in s.get("locations", [])
            ]
            sets.append(
                FakeSet(
                    s["name"],
                    s["dtype"],
                    list(s.get("tensor_shape", [])),
                    s.get("kind"),
                    s.get("partition_dim"),
                    s.get("addr_space"),
                    locs,
                )
            )
        blocks = [[_inst(i) for i in b.get("instructions", [])] for b in f.get("basic_blocks", [])]
        fns.append(FakeFunction(f["name"], sets, blocks))
    return FakeModule(d["name"], arch, core, fns)


def real_available() -> bool:
    """True when ``lncsplit.Module.from_json`` exists and the fakes are not forced."""
    if os.environ.get("LNCSPLIT_FAKES") == "1":
        return False
    try:
        import lncsplit
    except ImportError:
        return False
    return hasattr(lncsplit, "Module") and hasattr(lncsplit.Module, "from_json")


def make_module(d: dict[str, Any]) -> Any:
    """A module from a JSON dict: real when available, else a fake."""
    if real_available():
        import lncsplit

        return lncsplit.Module.from_json(json.dumps(d))
    return fake_from_dict(copy.deepcopy(d))


def make_cores(d: dict[str, Any], n: int) -> list[Any]:
    """The N per-core modules of symbolic module ``d`` (``lncsplit.split`` when real)."""
    if real_available():
        import lncsplit

        return list(lncsplit.split([lncsplit.Module.from_json(json.dumps(d))], n))
    out = []
    for c in range(n):
        dc = copy.deepcopy(d)
        dc.setdefault("attributes", {})["neuron_core_id"] = c
        dc["name"] = dc["name"].replace("nc_symbolic", f"nc{c:02d}")
        out.append(fake_from_dict(dc))
    return out
