"""``reduce`` (add, max, min) over any dims (contract §3.9).

The op is recognized by the ``to_apply`` body (:mod:`combiner`). With K the kept dims (M
elements) and R the reduced ones (R elements per result element), two ways:

- **Free-dim reduction on the vector engine** (the general way). The operand is seen as
  ``[M, R]`` — as it is when the reduced dims are the trailing ones, else after one DMA
  transpose putting them last. Per block of ≤ 128 rows (partitions) and chunk of ≤ 2048
  columns, a ``DMACopy`` into SBUF and a ``TensorReduce op`` over the free axis (``axes [1]``)
  into one column of a partials tile; a second ``TensorReduce`` folds the partials. §3.8's
  TensorReduce reduces only free dims (axis 0 is the partitions), which is why the rows go on
  the partitions and the reduced elements along them.
- **Partition-dim reduction of an add by a matmul with ones** (float ``add`` whose reduced
  dims are the leading ones: the operand is already ``[R, M]``, R along the partitions). The PE
  contracts over the partition dim: ``Matmult`` with a stationary column of ones ``[R_t, 1]``
  and the operand block ``[R_t, M_t]`` as moving gives ``Σ_r x[r, m]`` in a ``[1, M_t]`` PSUM
  tile, accumulated over R tiles of 128 — no transpose: the products by 1 are exact and the sum
  is float32, like TensorReduce's. max and min have no matmul form, so they take the
  transpose and the vector engine.

The init value is combined last (``TensorScalar op init`` for a constant, ``TensorTensor`` with
it loaded for one computed at run time; nothing when it is the op's identity), and the result
converted to the output type by the instruction that writes it. Integer reductions stay in
their type (wrapping add); float ones accumulate in float32. At most 2048 × 2048 elements reduce
into one result element (one level of partials); more is a ``LoweringError``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..hlo_attrs import HloAttributeError, int_list
from .builder import Access, Builder
from .combiner import reduction_op
from .movement import permuted
from .scope import Op
from .tiles import MAX_PARTITIONS, Tile, free_limit
from .values import Buf, Value

__all__ = ["HANDLERS"]

FLOATS = ("f64", "f32", "bf16", "f16")
MAX_MOVING = 512


def _identity(alu: str, value: float) -> bool:
    if alu == "add":
        return value == 0
    return value == (-math.inf if alu == "max" else math.inf)


class _Init:
    """How the init value is combined: nothing, a constant, or a loaded scalar."""

    def __init__(self, op: Op, alu: str, init: Buf) -> None:
        self.alu = alu
        self.init = init
        self.const: float | int | None = None
        self.skip = False
        s = op.static(1)
        if s is not None:
            vals = np.asarray(s).reshape(-1)
            if vals.size and np.all(vals == vals[0]):
                v = vals[0].item()
                if init.ty in FLOATS and _identity(alu, float(v)):
                    self.skip = True
                elif init.ty not in FLOATS and alu == "add" and v == 0:
                    self.skip = True
                elif init.ty not in FLOATS or math.isfinite(float(v)):
                    self.const = v

    def apply(
        self,
        b: Builder,
        tag: str,
        acc: Access,
        out: Access,
        scratch: Tile | None,
        rows: int,
        engine: str,
    ) -> None:
        """``out = acc op init`` (or ``out = acc`` converted)."""
        if self.skip:
            b.emit(f"{tag}result", "TensorCopy", engine, [acc], [out], convert=True)
        elif self.const is not None:
            b.emit(
                f"{tag}init", "TensorScalar", engine, [acc], [out], op0=self.alu, const0=self.const
            )
        else:
            assert scratch is not None
            b.dma(f"{tag}load_init", self.init.access([(0, rows), (0, 1)]), scratch.ap(rows, 1))
            b.emit(
                f"{tag}init", "TensorTensor", engine, [acc, scratch.ap(rows, 1)], [out], op=self.alu
            )


def reduce(op: Op) -> Value:
    if len(op.instr.operands) != 2:
        raise op.fail("a variadic reduce (several operands) is not lowered")
    x, init = op.buf(0), op.buf(1)
    if init.dims or init.ty != x.ty:
        raise op.fail(f"an init of {init.ty}{list(init.dims)} for a reduce of {x.ty}")
    try:
        reduced = sorted(int_list(op.attr("dimensions"), "dimensions"))
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None
    kept = [d for d in range(len(x.dims)) if d not in reduced]
    if tuple(x.dims[d] for d in kept) != op.dims or any(not 0 <= d < len(x.dims) for d in reduced):
        raise op.fail(f"dimensions={reduced} of {list(x.dims)} do not give {list(op.dims)}")
    alu = reduction_op(op)
    out = op.result()
    m = math.prod(x.dims[d] for d in kept)
    r = math.prod(x.dims[d] for d in reduced)
    if m == 0:
        return out
    if r == 0:
        op.b.dma("fill", init.access([(0, m)]), out.flat(0, m))
        return out
    how = _Init(op, alu, init)
    leading = reduced == list(range(len(reduced)))
    trailing = reduced == list(range(len(kept), len(x.dims)))
    if alu == "add" and x.ty in FLOATS and leading and not trailing:
        _ones_matmul(op, Buf(x.set, (r, m), x.ty), out, how)
        return out
    if not trailing:
        x = permuted(op, x, kept + reduced, "transposed")
    _free_dim(op, Buf(x.set, (m, r), x.ty), out, how)
    return out


def _free_dim(op: Op, x: Buf, out: Buf, how: _Init) -> None:
    """``out[i] = op_j x[i, j]`` on the vector engine (see the module doc)."""
    b = op.b
    m, r = x.dims
    cols = min(r, free_limit(op.lowerer.geo, 4, 4))
    chunks = -(-r // cols)
    if chunks > cols:
        raise op.fail(
            f"{r} elements reduce into each result element; at most {cols * cols} are lowered"
        )
    rows_max = min(MAX_PARTITIONS, m)
    acc_dtype = "float32" if x.ty in FLOATS else x.dtype
    engine = "DVE" if x.ty in FLOATS else "Pool"
    tile = Tile.new(b, "in", x.dtype, rows_max, cols)
    parts = Tile.new(b, "partials", acc_dtype, rows_max, chunks) if chunks > 1 else None
    acc = Tile.new(b, "acc", acc_dtype, rows_max, 1)
    res = Tile.new(b, "out", out.dtype, rows_max, 1)
    scratch = (
        Tile.new(b, "init", x.dtype, rows_max, 1) if not how.skip and how.const is None else None
    )
    for t, m0 in enumerate(range(0, m, rows_max)):
        rows = min(rows_max, m - m0)
        tag = f"t{t}." if m > rows_max else ""
        for j, r0 in enumerate(range(0, r, cols)):
            rc = min(cols, r - r0)
            b.dma(f"{tag}load{j}", x.access([(r, rows), (1, rc)], m0 * r + r0), tile.ap(rows, rc))
            dst = (
                acc.ap(rows, 1)
                if parts is None
                else Access(parts.set, acc_dtype, ((chunks, rows), (1, 1)), 0, j)
            )
            b.emit(
                f"{tag}reduce{j}",
                "TensorReduce",
                engine,
                [tile.ap(rows, rc)],
                [dst],
                op=how.alu,
                axes=[1],
            )
        if parts is not None:
            b.emit(
                f"{tag}fold",
                "TensorReduce",
                engine,
                [parts.ap(rows, chunks)],
                [acc.ap(rows, 1)],
                op=how.alu,
                axes=[1],
            )
        how.apply(b, tag, acc.ap(rows, 1), res.ap(rows, 1), scratch, rows, engine)
        b.dma(f"{tag}store", res.ap(rows, 1), out.access([(1, rows), (1, 1)], m0))


def _ones_matmul(op: Op, x: Buf, out: Buf, how: _Init) -> None:
    """``out[j] = Σ_i x[i, j]``: a matmul with a column of ones contracts the partitions."""
    b = op.b
    r, m = x.dims
    kt_max, nt_max = min(MAX_PARTITIONS, r), min(MAX_MOVING, m)
    one = op.const("one", np.ones((), np.float32), x.ty)
    ones = Tile.new(b, "ones", x.dtype, kt_max, 1)
    b.dma("ones", one.access([(0, kt_max), (0, 1)]), ones.ap(kt_max, 1))
    moving = Tile.new(b, "moving", x.dtype, kt_max, nt_max)
    psum = b.psum("acc", 1, nt_max)
    res = Tile.new(b, "out", out.dtype, 1, nt_max)
    scratch = (
        Tile.new(b, "init", x.dtype, 1, nt_max) if not how.skip and how.const is None else None
    )
    t = 0
    for n0 in range(0, m, nt_max):
        nt = min(nt_max, m - n0)
        acc = Access(psum, "float32", ((nt_max, 1), (1, nt)))
        for ki, k0 in enumerate(range(0, r, kt_max)):
            kt = min(kt_max, r - k0)
            tag = f"t{t}."
            t += 1
            b.dma(f"{tag}load", x.access([(m, kt), (1, nt)], k0 * m + n0), moving.ap(kt, nt))
            keys: dict[str, Any] = {"contract": True, **({"accumulate": "add"} if ki else {})}
            b.emit(
                f"{tag}matmult", "Matmult", "PE", [ones.ap(kt, 1), moving.ap(kt, nt)], [acc], **keys
            )
        if scratch is not None:  # the init, loaded along the row
            b.dma(f"{tag}load_init", how.init.access([(0, 1), (0, nt)]), scratch.ap(1, nt))
            b.emit(
                f"{tag}init",
                "TensorTensor",
                "DVE",
                [acc, scratch.ap(1, nt)],
                [res.ap(1, nt)],
                op="add",
            )
        else:
            how.apply(b, tag, acc, res.ap(1, nt), None, 1, "DVE")
        b.dma(f"{tag}store", res.ap(1, nt), out.access([(nt, 1), (1, nt)], n0))


HANDLERS = {"reduce": reduce}
