"""Values made from nothing: constant, iota, partition-id, replica-id (contract §3.9).

- constant: a ``Const`` set with its ``values`` (§3.8), read in place — no instruction. A splat
  array (every element equal, more than one) is one scalar ``Const`` broadcast by a step-0 DMA,
  so a large splat does not write its values out.
- iota: the sequence 0…n−1 of the iota dimension, written by ``Iota`` instructions on SBUF
  tiles (piece [rows, cols] from s: ``base`` s, ``channel_multiplier`` cols, ``multipliers``
  [1], so partition p, column j holds s + cols·p + j), stored to DRAM, then broadcast over the
  other dimensions by a step-0 DMA (rank 1: stored straight into the result).
- partition-id: an ``Iota`` of one element whose ``base`` is the shard expression ``shard``
  (the split binds it to the core's number), as ``u32``.
- replica-id: 0 (one replica, §3.9): a ``Const``.
"""

from __future__ import annotations

import numpy as np

from ..literal import LiteralError, parse_literal
from .builder import BIR_DTYPES
from .scope import Op
from .shard_expr import shard_affine
from .tiles import MAX_PARTITIONS, Tile, flat_pieces, free_limit, tile_cols
from .values import Buf, Value

__all__ = ["HANDLERS"]


def constant(op: Op) -> Value:
    if op.instr.shape.is_tuple:
        raise op.fail("tuple constants are not lowered")
    ty = op.ty
    try:
        values = parse_literal(op.instr.literal or "", ty, op.dims)
    except LiteralError as exc:
        raise op.fail(str(exc)) from None
    flat = values.reshape(-1)
    splat = flat.size > 1 and bool(np.all(flat == flat[0])) and not np.isnan(flat[0].astype(float))
    if not splat:
        return op.const("", values, ty)
    scalar = op.const("value", flat[:1].reshape(()), ty)
    out = op.result()
    op.b.dma("broadcast", scalar.access([(0, n) for n in op.dims]), out.whole())
    return out


def _iota_pieces(op: Op, n: int, ty: str, dst: Buf) -> None:
    """``Iota`` tiles holding 0…n−1 in ``ty``, stored into ``dst`` (flat, n elements)."""
    b = op.b
    cols = tile_cols(n, free_limit(op.lowerer.geo, 1))
    rows = min(MAX_PARTITIONS, -(-n // cols))
    tile = Tile.new(b, "iota", BIR_DTYPES[ty], rows, cols)
    pieces = flat_pieces(n, cols)
    for t, p in enumerate(pieces):
        tag = f"t{t}." if len(pieces) > 1 else ""
        b.emit(
            f"{tag}iota",
            "Iota",
            "Pool",
            [],
            [tile.piece(p)],
            base=p.start,
            channel_multiplier=p.cols,
            multipliers=[1],
        )
        b.dma(f"{tag}store", tile.piece(p), dst.access(p.dram(), p.start))


def iota(op: Op) -> Value:
    ty = op.ty
    if ty == "pred":
        raise op.fail("an iota of pred")
    dims = op.dims
    d = int(op.attr("iota_dimension"))
    if not 0 <= d < len(dims):
        raise op.fail(f"iota_dimension={d} of a rank-{len(dims)} shape")
    out = op.result()
    if out.size == 0:
        return out
    if len(dims) == 1:
        _iota_pieces(op, dims[0], ty, out)
        return out
    seq = op.scratch("seq", (dims[d],), ty)
    _iota_pieces(op, dims[d], ty, seq)
    op.b.dma(
        "broadcast", seq.access([(1 if r == d else 0, k) for r, k in enumerate(dims)]), out.whole()
    )
    return out


def partition_id(op: Op) -> Value:
    b = op.b
    tile = Tile.new(b, "id", BIR_DTYPES["u32"], 1, 1)
    out = op.result((), "u32")
    base = shard_affine(op.n, 1, 0) if op.n > 1 else 0
    b.emit(
        "iota",
        "Iota",
        "Pool",
        [],
        [tile.ap(1, 1)],
        base=base,
        channel_multiplier=0,
        multipliers=[0],
    )
    b.dma("store", tile.ap(1, 1), out.whole())
    return out


def replica_id(op: Op) -> Value:
    return op.const("", np.zeros((), dtype=np.uint32), "u32")


HANDLERS = {
    "constant": constant,
    "iota": iota,
    "partition-id": partition_id,
    "replica-id": replica_id,
}
