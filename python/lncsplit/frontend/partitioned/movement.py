"""Data movement: each op one or two DRAM→DRAM ``DMACopy``s, or no instruction (contract §3.9).

A DMA pairs the elements of its two APs in AP order (§3.8), so any rearrangement whose source
elements can be walked by a strided AP in the destination's row-major order is one DMA:

- reshape, copy, a default-layout bitcast: the operand's buffer itself (row-major order is
  unchanged; HLO values are immutable, so sharing the buffer is safe);
- transpose: the source AP walks the operand with its strides permuted;
- broadcast: the source AP has step 0 on the new dims;
- slice: start offset and strides × the slice strides;
- concatenate: one DMA per operand into its offset along the dimension;
- pad: a step-0 broadcast of the pad value over the result, then one DMA of the kept operand
  elements to ``lo + i·(interior + 1)`` (negative padding crops: only the elements that land
  inside are moved);
- dynamic-slice: the start indices are known per core before the run (constants and
  ``partition-id()``, :mod:`static_eval`), clamped as XLA clamps them, and become the source
  AP's offset: one shard expression for every core; a start that depends on data is a
  ``LoweringError``;
- dynamic-update-slice: a copy of the operand, then the update DMA'd at the start offset;
- a bitcast whose layouts are not both the default: the transposes to and from the physical
  orders with the row-major reshape between them (the reshape or transpose it denotes).

Each DMA writes only the op's own result buffer, after its operands are complete (program
order on the core); no other core writes or reads that private buffer.
"""

from __future__ import annotations

import math

import numpy as np

from ..hlo import HloShape
from ..hlo_attrs import HloAttributeError, computation_ref, int_list, padding_config, slice_spec
from .scope import Op
from .shard_expr import table_expression
from .static_eval import clamp_starts
from .values import Buf, Value, row_major_strides

__all__ = ["HANDLERS", "permuted"]


def _attr_ints(op: Op, key: str) -> list[int]:
    try:
        return int_list(op.attr(key), key)
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None


def reshape(op: Op) -> Value:
    x = op.buf(0)
    if x.size != math.prod(op.dims):
        raise op.fail(
            f"{list(x.dims)} has {x.size} elements, {list(op.dims)} has {math.prod(op.dims)}"
        )
    return Buf(x.set, op.dims, op.ty)


def copy(op: Op) -> Value:
    v = op.value(0)
    if isinstance(v, Buf):
        return Buf(v.set, op.dims, v.ty)
    return v


def permuted(op: Op, x: Buf, perm: list[int], step: str) -> Buf:
    """A new buffer holding ``transpose(x, perm)`` (result dim d = operand dim perm[d])."""
    out_dims = tuple(x.dims[p] for p in perm)
    out = op.scratch(step, out_dims, x.ty) if step else op.result(out_dims, x.ty)
    st = x.strides
    op.b.dma(
        step or "copy", x.access([(st[p], out_dims[d]) for d, p in enumerate(perm)]), out.whole()
    )
    return out


def transpose(op: Op) -> Value:
    x = op.buf(0)
    perm = _attr_ints(op, "dimensions")
    if sorted(perm) != list(range(len(x.dims))) or tuple(x.dims[p] for p in perm) != op.dims:
        raise op.fail(f"dimensions={perm} do not transpose {list(x.dims)} to {list(op.dims)}")
    if perm == sorted(perm):
        return Buf(x.set, op.dims, x.ty)
    return permuted(op, x, perm, "")


def _layout(shape: HloShape, op: Op) -> list[int]:
    """Minor-to-major dims of ``shape`` (the default when it prints none)."""
    rank = len(shape.dims)
    if shape.layout is None or shape.layout == "":
        return list(range(rank - 1, -1, -1))
    try:
        order = [int(x) for x in shape.layout.split(",")]
    except ValueError:
        raise op.fail(
            f"layout {{{shape.layout}}}: tiled or annotated layouts are not lowered"
        ) from None
    if sorted(order) != list(range(rank)):
        raise op.fail(f"layout {{{shape.layout}}} is not a permutation of {rank} dims")
    return order


def bitcast(op: Op) -> Value:
    x = op.buf(0)
    src = op.scope.instruction(op.instr.operands[0]).shape
    if src.dtype != op.instr.shape.dtype:
        raise op.fail(f"a bitcast from {src.dtype} to {op.instr.shape.dtype} (bitcast-convert)")
    if x.size != math.prod(op.dims):
        raise op.fail(f"{list(x.dims)} and {list(op.dims)} hold different numbers of elements")
    major_a = list(reversed(_layout(src, op)))
    major_b = list(reversed(_layout(op.instr.shape, op)))
    # physical(A) = transpose(A, major_a); physical(B) = reshape of it; B = its inverse transpose
    phys = permuted(op, x, major_a, "physical") if major_a != sorted(major_a) else x
    b_phys_dims = tuple(op.dims[d] for d in major_b)
    phys_b = Buf(phys.set, b_phys_dims, x.ty)
    if major_b == sorted(major_b):
        return Buf(phys.set, op.dims, x.ty)
    inverse = [major_b.index(d) for d in range(len(major_b))]
    return permuted(op, phys_b, inverse, "")


def broadcast(op: Op) -> Value:
    x = op.buf(0)
    mapped = _attr_ints(op, "dimensions")
    dims = op.dims
    if len(mapped) != len(x.dims) or any(dims[m] != s for m, s in zip(mapped, x.dims, strict=True)):
        raise op.fail(f"dimensions={mapped} do not map {list(x.dims)} into {list(dims)}")
    if list(mapped) == list(range(len(dims))):
        return Buf(x.set, dims, x.ty)
    out = op.result()
    if out.size == 0:
        return out
    step = {m: s for m, s in zip(mapped, x.strides, strict=True)}
    op.b.dma("copy", x.access([(step.get(r, 0), n) for r, n in enumerate(dims)]), out.whole())
    return out


def slice_(op: Op) -> Value:
    x = op.buf(0)
    try:
        spec = slice_spec(op.attr("slice"))
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None
    if len(spec) != len(x.dims):
        raise op.fail(f"slice={op.attr('slice')} for a rank-{len(x.dims)} operand")
    out = op.result()
    if out.size == 0:
        return out
    st = x.strides
    pattern = [(st[d] * s, n) for d, ((_, _, s), n) in enumerate(zip(spec, op.dims, strict=True))]
    start = sum(a * st[d] for d, (a, _, _) in enumerate(spec))
    op.b.dma("copy", x.access(pattern, start), out.whole())
    return out


def concatenate(op: Op) -> Value:
    parts = op.bufs()
    d = _attr_ints(op, "dimensions")[0]
    out = op.result()
    st = out.strides
    offset = 0
    for k, x in enumerate(parts):
        if x.size:
            dst = out.access([(st[e], x.dims[e]) for e in range(len(x.dims))], offset * st[d])
            op.b.dma(f"copy{k}", x.whole(), dst)
        offset += x.dims[d]
    if offset != op.dims[d]:
        raise op.fail(f"operands add up to {offset} along dim {d}, the result has {op.dims[d]}")
    return out


def _kept(lo: int, interior: int, size: int, limit: int) -> tuple[int, int]:
    """First operand index landing inside [0, limit) at ``lo + i·(interior+1)``, and how many."""
    step = interior + 1
    first = (-lo + step - 1) // step if lo < 0 else 0  # ceil(-lo / step)
    last = min(size - 1, (limit - 1 - lo) // step) if limit - 1 - lo >= 0 else -1
    return first, max(0, last - first + 1)


def pad(op: Op) -> Value:
    x, value = op.buf(0), op.buf(1)
    try:
        config = padding_config(op.attr("padding"))
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None
    if len(config) != len(x.dims) or value.dims:
        raise op.fail(
            f"padding={op.attr('padding')} for {list(x.dims)} with a pad value {list(value.dims)}"
        )
    if all(c == (0, 0, 0) for c in config):
        return Buf(x.set, op.dims, x.ty)
    out = op.result()
    if out.size == 0:
        return out
    op.b.dma("fill", value.access([(0, n) for n in op.dims] or [(0, 1)]), out.whole())
    kept = [_kept(lo, i, n, r) for (lo, _, i), n, r in zip(config, x.dims, op.dims, strict=True)]
    if all(c > 0 for _, c in kept):
        xs, os_ = x.strides, out.strides
        src = x.access(
            [(xs[d], c) for d, (_, c) in enumerate(kept)],
            sum(f * xs[d] for d, (f, _) in enumerate(kept)),
        )
        dst_start = sum(
            (lo + f * (i + 1)) * os_[d]
            for d, ((lo, _, i), (f, _)) in enumerate(zip(config, kept, strict=True))
        )
        pattern = [
            (os_[d] * (i + 1), c)
            for d, ((_, _, i), (_, c)) in enumerate(zip(config, kept, strict=True))
        ]
        op.b.dma("place", src, out.access(pattern, dst_start))
    return out


def _start_offset(
    op: Op, first: int, dims: tuple[int, ...], sizes: tuple[int, ...]
) -> int | dict[str, object]:
    """The flat offset of a dynamic (update) slice on every core, as a shard expression."""
    starts = []
    for k in range(first, len(op.instr.operands)):
        s = op.static(k)
        if s is None:
            raise op.fail(
                f"start index {k - first} (%{op.instr.operands[k]}) depends on data: only offsets "
                "computed from constants and partition-id() are lowered (a data-dependent offset)"
            )
        arr = np.asarray(s).reshape(op.n, -1)
        if arr.shape[1] != 1:
            raise op.fail(f"start index {k - first} is not a scalar")
        starts.append([int(v) for v in arr[:, 0]])
    if len(starts) != len(dims):
        raise op.fail(f"{len(starts)} start indices for a rank-{len(dims)} operand")
    strides = row_major_strides(dims)
    flat = []
    for c in range(op.n):
        st = clamp_starts([s[c] for s in starts], dims, list(sizes))
        flat.append(sum(a * b for a, b in zip(st, strides, strict=True)))
    expr = table_expression(flat)
    return expr["c"] if expr["kind"] == "AffExprKind" and not expr["terms"] else expr


def dynamic_slice(op: Op) -> Value:
    x = op.buf(0)
    sizes = tuple(_attr_ints(op, "dynamic_slice_sizes"))
    if (
        sizes != op.dims
        or len(sizes) != len(x.dims)
        or any(z > d for z, d in zip(sizes, x.dims, strict=True))
    ):
        raise op.fail(f"dynamic_slice_sizes={list(sizes)} of {list(x.dims)} into {list(op.dims)}")
    offset = _start_offset(op, 1, x.dims, sizes)
    out = op.result()
    if out.size:
        st = x.strides
        op.b.dma("copy", x.access([(st[d], n) for d, n in enumerate(sizes)], offset), out.whole())
    return out


def dynamic_update_slice(op: Op) -> Value:
    x, u = op.buf(0), op.buf(1)
    if len(u.dims) != len(x.dims) or any(a > b for a, b in zip(u.dims, x.dims, strict=True)):
        raise op.fail(f"an update {list(u.dims)} into {list(x.dims)}")
    offset = _start_offset(op, 2, x.dims, u.dims)
    out = op.result()
    if out.size:
        op.b.dma("copy", x.whole(), out.whole())
    if u.size:
        st = out.strides
        op.b.dma(
            "update", u.whole(), out.access([(st[d], n) for d, n in enumerate(u.dims)], offset)
        )
    return out


def tuple_(op: Op) -> Value:
    return tuple(op.value(k) for k in range(len(op.instr.operands)))


def get_tuple_element(op: Op) -> Value:
    v = op.value(0)
    k = int(op.attr("index"))
    if isinstance(v, Buf) or not 0 <= k < len(v):
        raise op.fail(f"index={k} of a value that is not a tuple of more than {k} elements")
    return v[k]


def call(op: Op) -> Value:
    key = "to_apply" if op.instr.opcode == "call" else "calls"
    try:
        name = computation_ref(op.attr(key))
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None
    return op.lowerer.inline(op, name)


HANDLERS = {
    "reshape": reshape,
    "copy": copy,
    "bitcast": bitcast,
    "transpose": transpose,
    "broadcast": broadcast,
    "slice": slice_,
    "concatenate": concatenate,
    "pad": pad,
    "dynamic-slice": dynamic_slice,
    "dynamic-update-slice": dynamic_update_slice,
    "tuple": tuple_,
    "get-tuple-element": get_tuple_element,
    "call": call,
    "fusion": call,
}
