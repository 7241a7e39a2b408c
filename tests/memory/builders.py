"""Contract §1 JSON builders for the memory tests."""

from __future__ import annotations

import json
from typing import Any

import lncsplit
from lncsplit import Module

ARCHES = ("inferentia", "sunda", "gen3", "core_v4")


def loc(
    name: str,
    type: str,
    *,
    addr: int | None = None,
    bank: int | None = None,
    base: int | None = 0,
    allocated: bool | None = None,
    shared: bool | None = None,
    rlt: dict[str, Any] | None = None,
) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "type": type}
    if addr is not None:
        d["addr"] = addr
    if bank is not None:
        d["bank"] = bank
    if base is not None:
        d["base"] = base
    if allocated is None:
        allocated = addr is not None
    d["allocated"] = allocated
    if shared is not None:
        d["is_shared_post_dram_alloc"] = shared
    if rlt is not None:
        d["remote_local_target"] = rlt
    return d


def mset(
    name: str,
    shape: list[int],
    locations: list[dict[str, Any]],
    *,
    dtype: str = "float32",
    kind: str = "Internal",
    addr_space: str | None = None,
    partition_dim: int = 0,
) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "dtype": dtype,
        "tensor_shape": shape,
        "partition_dim": partition_dim,
        "locations": locations,
    }
    if addr_space is not None:
        d["addr_space"] = addr_space
    return d


def one(
    name: str,
    type: str,
    shape: list[int],
    *,
    dtype: str = "float32",
    addr_space: str | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """A set with one location named ``name`` (the set is ``name + "_set"``)."""
    return mset(f"{name}_set", shape, [loc(name, type, **kw)], dtype=dtype, addr_space=addr_space)


def arg(setname: str, memref: str | None = None, dtype: str = "float32") -> dict[str, Any]:
    return {
        "kind": "physical_ap",
        "ap": [[1, 1], [1, 1]],
        "offset": 0,
        "dtype": dtype,
        "memsetref": setname,
        "memref": memref if memref is not None else setname.removesuffix("_set"),
    }


def inst(
    name: str,
    opcode: str,
    ins: list[dict[str, Any]] | None = None,
    outs: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "opcode": opcode, "ins": ins or [], "outs": outs or []}
    if opcode == "CollectiveCompute":
        d.setdefault("cc_channel", {"kind": "AllReduce", "replica_groups": [[0, 1]], "op": "add"})
    d.update(extra)
    return d


def module(
    sets: list[dict[str, Any]],
    insts: list[dict[str, Any]] | None = None,
    *,
    arch: str = "gen3",
    core: int | None = 0,
    name: str | None = None,
    fname: str = "main",
    functions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    if name is None:
        name = "mem_nc_symbolic" if core is None else f"mem_nc{core:02d}"
    d: dict[str, Any] = {"version": 2, "name": name, "arch": arch, "attributes": {}}
    if core is not None:
        d["attributes"]["neuron_core_id"] = core
    if functions is None:
        functions = [
            {
                "name": fname,
                "allocations": sets,
                "basic_blocks": [{"name": "bb0", "instructions": insts or []}],
            }
        ]
    d["functions"] = functions
    return d


def make_module(d: dict[str, Any]) -> Module:
    """The ``lncsplit.Module`` of a contract §1 JSON dict."""
    return Module.from_json(json.dumps(d))


def make_cores(d: dict[str, Any], n: int) -> list[Module]:
    """The N per-core modules of symbolic module ``d`` (``lncsplit.split``)."""
    return lncsplit.split([make_module(d)], n)
