"""Hand-built single-core modules (lncsplit dialect) for the engine-check tests.

Every location is a float32 set ``<name>_set`` of ``parts × cols`` with one
location ``<name>``; accesses are ``physical_ap``s; ``module(...)`` wraps
instructions into a core-0 module with an optional ``queues`` list.
"""

from __future__ import annotations

import json
from typing import Any

import lncsplit

Json = dict[str, Any]


def loc(
    name: str,
    ty: str,
    addr: int | None,
    parts: int = 64,
    cols: int = 64,
    *,
    base: int = 0,
    bank: int = 0,
) -> Json:
    loc: Json = {"name": name, "type": ty, "base": base}
    if addr is not None:
        loc["addr"] = addr
    if ty == "PSUM":
        loc["bank"] = bank
    return {
        "name": f"{name}_set",
        "kind": "Internal",
        "dtype": "float32",
        "tensor_shape": [parts, cols],
        "locations": [loc],
    }


def sb(name: str, addr: int, parts: int = 64, cols: int = 64, *, base: int = 0) -> Json:
    return loc(name, "SB", addr, parts, cols, base=base)


def psum(name: str, addr: int, bank: int, parts: int = 64, cols: int = 64) -> Json:
    return loc(name, "PSUM", addr, parts, cols, bank=bank)


def dram(name: str, addr: int, parts: int = 64, cols: int = 64) -> Json:
    return loc(name, "DRAM", addr, parts, cols)


def ap(
    memref: str, offset: int = 0, parts: int = 64, cols: int = 64, pitch: int | None = None
) -> Json:
    """``parts × cols`` elements of ``memref`` from element ``offset`` (partition pitch ``pitch``)."""
    return {
        "kind": "physical_ap",
        "ap": [[cols if pitch is None else pitch, parts], [1, cols]],
        "offset": offset,
        "dtype": "float32",
        "memref": memref,
        "memsetref": f"{memref}_set",
    }


def inst(
    name: str,
    opcode: str,
    engine: str,
    ins: list[Json] | None = None,
    outs: list[Json] | None = None,
    *,
    wait: list[tuple[str, int, int]] | None = None,
    update: list[tuple[int, int]] | None = None,
    **keys: Any,
) -> Json:
    i: Json = {
        "name": name,
        "opcode": opcode,
        "engine": engine,
        "ins": ins or [],
        "outs": outs or [],
    }
    si: Json = {}
    if wait:
        si["on_wait"] = [{"from": f, "id": k, "wait_value": v} for f, k, v in wait]
    if update:
        si["on_update"] = [{"id": k, "update_value": v} for k, v in update]
    if si:
        i["sync_info"] = si
    i.update(keys)
    return i


def dma_block(
    name: str, trigger: str, descs: list[tuple[list[Json], list[Json]]], **sync: Any
) -> Json:
    """A DMABlock of ``queues`` with one descriptor per (ins, outs)."""
    b: Json = {
        "name": name,
        "opcode": "DMABlock",
        "engine": "DMA",
        "dma_trigger": trigger,
        "ins": [],
        "outs": [],
        "blocks": [
            {
                "name": f"{name}_Block0",
                "instructions": [
                    {
                        "name": f"{name}-desc{k}",
                        "opcode": "DMADescriptorCopy",
                        "engine": "DMA",
                        "ins": i,
                        "outs": o,
                    }
                    for k, (i, o) in enumerate(descs)
                ],
            }
        ],
    }
    if sync:
        si: Json = {}
        if "wait" in sync:
            si["on_wait"] = [{"from": f, "id": k, "wait_value": v} for f, k, v in sync["wait"]]
        if "update" in sync:
            si["on_update"] = [{"id": k, "update_value": v} for k, v in sync["update"]]
        b["sync_info"] = si
    return b


def module(
    sets: list[Json],
    *blocks: list[Json],
    queues: list[Json] | None = None,
    core: int | None = 0,
    compiler: bool = False,
) -> lncsplit.Module:
    """A one-function module; ``compiler=True`` writes it in the compiler's spelling
    (``blocks``, ``memorylocations``, no module name: contract §1.7), where
    instruction names may repeat."""
    doc: Json = {
        "version": 2,
        "name": "core",
        "functions": [
            {
                "name": "main",
                "allocations": sets,
                "basic_blocks": [
                    {"name": f"b{k}", "instructions": b} for k, b in enumerate(blocks)
                ],
            }
        ],
    }
    if core is not None:
        doc["attributes"] = {"neuron_core_id": core}
    if queues is not None:
        doc["queues"] = queues
    if compiler:
        del doc["name"]
        for f in doc["functions"]:
            f["blocks"] = f.pop("basic_blocks")
            for s in f["allocations"]:
                s["memorylocations"] = s.pop("locations")
    return lncsplit.Module.from_json(json.dumps(doc))


def marker() -> Json:
    """A Pool NoOp with an update: makes a module "scheduled" (it uses semaphores)."""
    return inst("marker", "NoOp", "Pool", update=[(99, 1)])
