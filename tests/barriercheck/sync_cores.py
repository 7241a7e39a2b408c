"""Two cores sharing one DRAM tensor ``buf``, with engines, queues and ``sync_info`` as a
case names them: the builders of the cross-core-with-engines tests (test_engine_order.py,
tests/views)."""

from __future__ import annotations

from typing import Any

import lncsplit
from lncsplit import Module


def physical_ap(memref: str) -> dict[str, Any]:
    return {
        "kind": "physical_ap",
        "ap": [[64, 64], [1, 64]],
        "offset": 0,
        "dtype": "float32",
        "memref": memref,
        "memsetref": f"{memref}_set",
    }


def location_set(name: str, mem: str, shared: bool = False) -> dict[str, Any]:
    s: dict[str, Any] = {
        "name": f"{name}_set",
        "kind": "Internal",
        "dtype": "float32",
        "tensor_shape": [64, 64],
        "memorylocations": [{"name": name, "type": mem, "addr": 0, "dims": [64, 256]}],
    }
    if shared:
        s["addr_space"] = "Shared"
    return s


def _with_sync(inst: dict[str, Any], sync: dict[str, Any]) -> dict[str, Any]:
    """``inst`` with ``sync_info`` = ``sync`` when any is given."""
    if sync:
        inst["sync_info"] = sync
    return inst


def barrier(engine: str = "SP", k: int = 0, **sync: Any) -> dict[str, Any]:
    inst = {
        "name": f"cb{k}",
        "opcode": "CoreBarrier",
        "id": k,
        "runtime_semaphore": 0,
        "cores": [],
        "engine": engine,
    }
    return _with_sync(inst, sync)


def write(engine: str = "SP", **sync: Any) -> dict[str, Any]:
    """A DMA writing ``buf`` (completes later than it issues)."""
    inst = {
        "name": "w",
        "opcode": "DMACopy",
        "engine": engine,
        "queue": "q0",
        "ins": [physical_ap("sb")],
        "outs": [physical_ap("buf")],
    }
    return _with_sync(inst, sync)


def read(engine: str = "SP", **sync: Any) -> dict[str, Any]:
    """A compute instruction reading ``buf`` into SBUF."""
    inst = {
        "name": "r",
        "opcode": "TensorCopy",
        "engine": engine,
        "ins": [physical_ap("buf")],
        "outs": [physical_ap("sb")],
    }
    return _with_sync(inst, sync)


def marker(engine: str = "DVE") -> dict[str, Any]:
    """An instruction whose only role is to give a module ``sync_info``."""
    return {
        "name": "mark",
        "opcode": "Memset",
        "engine": engine,
        "value": 0,
        "ins": [],
        "outs": [physical_ap("sb2")],
        "sync_info": {"on_wait": [], "on_update": [{"id": 30, "update_value": 1}]},
    }


def core(c: int, insts: list[dict[str, Any]]) -> Module:
    return Module.from_json(
        {
            "version": 2,
            "arch": "gen3",
            "attributes": {"neuron_core_id": c},
            "functions": [
                {
                    "name": "sg0000",
                    "allocations": [
                        location_set("buf", "DRAM", True),
                        location_set("sb", "SB"),
                        location_set("sb2", "SB"),
                    ],
                    "blocks": [{"name": "b0", "instructions": insts}],
                }
            ],
        }
    )


def check(c0: list[dict[str, Any]], c1: list[dict[str, Any]]) -> lncsplit.RaceReport:
    return lncsplit.racecheck([core(0, c0), core(1, c1)])


def update(sid: int) -> dict[str, Any]:
    return {"on_wait": [], "on_update": [{"id": sid, "update_value": 1}]}


def wait(src: str, sid: int) -> list[dict[str, Any]]:
    return [{"from": src, "id": sid, "wait_value": 1}]
