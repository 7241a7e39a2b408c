"""Whole-program inputs and outputs in Shared DRAM, at XLA's tile offsets (contract §3.9).

``arg<k>`` is an ``Input`` set of the parameter's global shape; each core reads its tile —
the offsets and extents of the sharding's tile math (§3.5), as shard expressions — into its
private copy of the per-device buffer (one ``DMACopy``; a replicated or maximal parameter is
read in place, every core's tile being all of it). ``out<k>`` is an ``Output`` set of the global
shape; element e is written by the lowest-numbered device whose tile holds e (replicated: core
0; maximal: its device; partial replication: the lowest device of each replica group), so the
writes of different cores are disjoint — the race check proves it after the split. Cores whose
tiles have the same extents share one instruction; when not every core takes part, predicates
select those that do (and only one survives the split on each core).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from .builder import Builder, DimAccess
from .program import IoTensor
from .shard_expr import member_predicates, table_expression
from .values import Buf, row_major_strides

__all__ = ["read_argument", "tiles", "write_output", "writers"]

Tile = tuple[tuple[int, ...], tuple[int, ...]]  # (offsets, extents)


@functools.lru_cache(maxsize=1024)
def tiles(t: IoTensor, n: int) -> list[Tile]:
    """Each core's (offsets, extents) of ``t``'s global shape (computed once per tensor)."""
    out: list[Tile] = []
    for c in range(n):
        off = tuple(t.sharding.tile_offset_for_device(t.global_dims, c))
        lim = tuple(t.sharding.tile_limit_for_device(t.global_dims, c))
        out.append((off, tuple(b - a for a, b in zip(off, lim, strict=True))))
    return out


def writers(t: IoTensor, n: int) -> list[int]:
    """The cores that write ``out<k>``: per distinct tile, the lowest device holding it."""
    if t.sharding.kind == "maximal":
        return [int(t.sharding.unique_device or 0)]
    seen: set[Tile] = set()
    out = []
    for c, tile in enumerate(tiles(t, n)):
        if tile not in seen and all(e > 0 for e in tile[1]):
            seen.add(tile)
            out.append(c)
    return out


def _groups(cores: Sequence[int], all_tiles: list[Tile]) -> list[list[int]]:
    """The cores grouped by tile extents (first appearance order)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for c in cores:
        groups.setdefault(all_tiles[c][1], []).append(c)
    return list(groups.values())


def _transfers(
    b: Builder,
    t: IoTensor,
    cores: Sequence[int],
    local: Buf,
    step: str,
    outgoing: bool,
) -> None:
    all_tiles = tiles(t, b.n)
    strides = row_major_strides(local.dims)
    for group in _groups(cores, all_tiles):
        extents = all_tiles[group[0]][1]
        offsets = []
        for d in range(len(t.global_dims)):
            vals = [all_tiles[c if c in group else group[0]][0][d] for c in range(b.n)]
            offsets.append(table_expression(vals))
        whole = DimAccess(t.name, t.dtype, t.global_dims, tuple(offsets), extents)
        mine = local.access(list(zip(strides, extents, strict=True)) or [(1, 1)])
        preds = member_predicates(group, b.n)
        src, dst = (mine, whole) if outgoing else (whole, mine)
        b.dma(step, src, dst, preds)


def read_argument(b: Builder, t: IoTensor, param_name: str) -> Buf:
    """``arg<k>`` and the value of ENTRY parameter k (its per-device buffer)."""
    b.shared(t.name, "Input", t.dtype, t.global_dims, t.origin)
    if t.sharding.is_replicated or t.sharding.kind == "maximal":
        return Buf(t.name, t.global_dims, t.ty)
    b.begin_op(param_name, t.origin)
    local = Buf(b.dram(param_name, t.dtype, t.local_dims), t.local_dims, t.ty)
    cores = [c for c, tile in enumerate(tiles(t, b.n)) if all(e > 0 for e in tile[1])]
    _transfers(b, t, cores, local, "read", outgoing=False)
    return local


def write_output(b: Builder, t: IoTensor, value: Buf) -> None:
    """``out<k>``, written from ``value`` (the ROOT's element k, a per-device buffer)."""
    b.shared(t.name, "Output", t.dtype, t.global_dims, t.origin)
    b.begin_op(t.name, t.origin)
    _transfers(b, t, writers(t, b.n), value, "write", outgoing=True)
