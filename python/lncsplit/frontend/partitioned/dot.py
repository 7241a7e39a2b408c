"""``dot`` with any batch and contracting dims on the PE (contract §3.9).

The PE computes ``out = stationaryᵀ · moving`` (§3.8 ``Matmult contract``): both operands in
SBUF with the contraction K on the **partition** dim, K ≤ 128, the stationary's free size
M ≤ 128 (the PSUM partitions), the moving's N ≤ 512 (one float32 PSUM bank), accumulating in
PSUM. So:

1. each operand is put in PE order by one DMA transpose (a strided ``DMACopy``, skipped when the
   operand is already so): lhs as ``[B, K, M]`` (batch dims, contracting dims, free dims),
   rhs as ``[B, K, N]`` — multiple contracting or free dims flatten row-major, in their order;
2. for each batch b, M tile (≤ 128) and N tile (≤ 512): for each K tile (≤ 128) a ``DMACopy`` of
   the lhs block ``[K_t, M_t]`` and of the rhs block ``[K_t, N_t]`` into SBUF (at partition 0),
   and a ``Matmult`` into one PSUM tile — the first K tile overwrites, the next ones carry
   ``accumulate: "add"``: Σ_k lhs[m, k]·rhs[k, n] over the whole K;
3. a ``TensorCopy`` (``convert`` when the result is not float32) of the PSUM tile to SBUF and a
   ``DMACopy`` of it to the result's ``[B, M, N]`` block, which is XLA's dot output order
   (batch, lhs free, rhs free).

Operands of different float types are converted to float32 in SBUF first. Integer and float64
dots are a ``LoweringError`` (the PE computes in float32). The PSUM accumulation is float32,
as XLA's CPU dot accumulates float32 (bf16 products are exact in float32).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..hlo_attrs import HloAttributeError, int_list
from .builder import Access, ApTemplate, body, dma_body
from .movement import permuted
from .scope import Op
from .tiles import MAX_PARTITIONS, Tile
from .values import Buf, Value

__all__ = ["HANDLERS"]

PE_FLOATS = ("f32", "bf16", "f16")
#: the moving operand's free size: one float32 PSUM bank (2 KiB per partition)
MAX_MOVING = 512


def _dims(op: Op, key: str) -> list[int]:
    try:
        return int_list(op.attrs.get(key, "{}"), key)
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None


def _pe_order(
    op: Op, x: Buf, batch: list[int], contract: list[int], step: str
) -> tuple[Buf, int, int, int]:
    """``x`` as ``[B, K, F]`` (F its free dims) and (B, K, F)."""
    free = [d for d in range(len(x.dims)) if d not in batch and d not in contract]
    perm = batch + contract + free
    b = math.prod(x.dims[d] for d in batch)
    k = math.prod(x.dims[d] for d in contract)
    f = math.prod(x.dims[d] for d in free)
    arranged = x if perm == sorted(perm) else permuted(op, x, perm, step)
    return Buf(arranged.set, (b, k, f), x.ty), b, k, f


def _check(
    op: Op, lhs: Buf, rhs: Buf, lb: list[int], lc: list[int], rb: list[int], rc: list[int]
) -> None:
    for x in (lhs, rhs):
        if x.ty not in PE_FLOATS:
            raise op.fail(f"a dot of {x.ty}: the PE multiplies f32, bf16 and f16")
    if op.ty not in PE_FLOATS:
        raise op.fail(f"a dot into {op.ty}: the PE accumulates float32")
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise op.fail("batch or contracting dims of the operands do not pair up")
    for a, b in (*zip(lb, rb, strict=True), *zip(lc, rc, strict=True)):
        if lhs.dims[a] != rhs.dims[b]:
            raise op.fail(f"lhs dim {a} ({lhs.dims[a]}) and rhs dim {b} ({rhs.dims[b]}) differ")
    lf = [d for d in range(len(lhs.dims)) if d not in lb + lc]
    rf = [d for d in range(len(rhs.dims)) if d not in rb + rc]
    want = tuple([lhs.dims[d] for d in lb] + [lhs.dims[d] for d in lf] + [rhs.dims[d] for d in rf])
    if want != op.dims:
        raise op.fail(f"the result is {list(op.dims)}, batch + lhs free + rhs free is {list(want)}")


def dot(op: Op) -> Value:
    lhs, rhs = op.buf(0), op.buf(1)
    lb, lc = _dims(op, "lhs_batch_dims"), _dims(op, "lhs_contracting_dims")
    rb, rc = _dims(op, "rhs_batch_dims"), _dims(op, "rhs_contracting_dims")
    _check(op, lhs, rhs, lb, lc, rb, rc)
    out = op.result()
    if out.size == 0:
        return out
    st, nb, k, m = _pe_order(op, lhs, lb, lc, "lhs_pe")
    mv, _, _, n = _pe_order(op, rhs, rb, rc, "rhs_pe")
    if k == 0:
        zero = op.const("zero", np.zeros((), np.float32), op.ty)
        op.b.dma("zero", zero.access([(0, out.size)]), out.flat(0, out.size))
        return out
    _matmuls(op, st, mv, out, (nb, k, m, n))
    return out


def _matmuls(op: Op, st: Buf, mv: Buf, out: Buf, sizes: tuple[int, int, int, int]) -> None:
    nb, k, m, n = sizes
    b = op.b
    mt_max = min(MAX_PARTITIONS, op.lowerer.geo.psum_partitions, m)
    nt_max, kt_max = min(MAX_MOVING, n), min(MAX_PARTITIONS, k)
    common = "f32" if st.ty != mv.ty else st.ty
    s_tile = Tile.new(b, "stationary", st.dtype, kt_max, mt_max)
    m_tile = Tile.new(b, "moving", mv.dtype, kt_max, nt_max)
    s_conv = Tile.new(b, "stationary_f32", "float32", kt_max, mt_max) if st.ty != common else None
    m_conv = Tile.new(b, "moving_f32", "float32", kt_max, nt_max) if mv.ty != common else None
    psum = b.psum("acc", mt_max, nt_max)
    o_tile = Tile.new(b, "out", out.dtype, mt_max, nt_max)
    t = 0
    convert: dict[str, Any] = {"convert": True} if out.ty != "f32" else {}
    for m0 in range(0, m, mt_max):
        mt = min(mt_max, m - m0)
        for n0 in range(0, n, nt_max):
            nt = min(nt_max, n - n0)
            # everything but the DRAM offsets repeats from batch to batch and K tile to K
            # tile: rendered once per tile shape, each instruction then one concatenation
            acc = Access(psum, "float32", ((nt_max, mt), (1, nt))).text()
            o_ap = o_tile.ap(mt, nt).text()
            evacuate = body("TensorCopy", "DVE", [acc], [o_ap], **convert)
            store = ApTemplate.of(out.set, out.dtype, ((n, mt), (1, nt)))
            per_k: dict[int, _KTile] = {}
            for bi in range(nb):
                for ki, k0 in enumerate(range(0, k, kt_max)):
                    kt = min(kt_max, k - k0)
                    tag = f"t{t}."
                    t += 1
                    kd = per_k.get(kt)
                    if kd is None:
                        kd = per_k[kt] = _KTile.of(
                            st, mv, s_tile, m_tile, s_conv, m_conv, acc, kt, (m, mt, n, nt)
                        )
                    b.emit_body(
                        tag + "load_lhs", dma_body(kd.lhs.at((bi * k + k0) * m + m0), kd.s_ap)
                    )
                    b.emit_body(
                        tag + "load_rhs", dma_body(kd.rhs.at((bi * k + k0) * n + n0), kd.m_ap)
                    )
                    if kd.convert_lhs:
                        b.emit_body(tag + "convert_lhs", kd.convert_lhs)
                    if kd.convert_rhs:
                        b.emit_body(tag + "convert_rhs", kd.convert_rhs)
                    b.emit_body(tag + "matmult", kd.accumulate if ki else kd.first)
                b.emit_body(tag + "evacuate", evacuate)
                b.emit_body(tag + "store", dma_body(o_ap, store.at((bi * m + m0) * n + n0)))


class _KTile(NamedTuple):
    """One K tile shape's rendered parts: the SBUF APs the blocks load into, the DRAM APs they
    load from (offset per use), the converts and the two Matmult forms."""

    s_ap: str
    m_ap: str
    lhs: ApTemplate
    rhs: ApTemplate
    convert_lhs: str
    convert_rhs: str
    first: str
    accumulate: str

    @classmethod
    def of(
        cls,
        st: Buf,
        mv: Buf,
        s_tile: Tile,
        m_tile: Tile,
        s_conv: Tile | None,
        m_conv: Tile | None,
        acc: str,
        kt: int,
        shape: tuple[int, int, int, int],
    ) -> _KTile:
        m, mt, n, nt = shape
        s_ap, m_ap = s_tile.ap(kt, mt).text(), m_tile.ap(kt, nt).text()
        s_in, m_in = s_ap, m_ap
        convert_lhs = convert_rhs = ""
        if s_conv is not None:
            s_in = s_conv.ap(kt, mt).text()
            convert_lhs = body("TensorCopy", "DVE", [s_ap], [s_in], convert=True)
        if m_conv is not None:
            m_in = m_conv.ap(kt, nt).text()
            convert_rhs = body("TensorCopy", "DVE", [m_ap], [m_in], convert=True)
        return cls(
            s_ap,
            m_ap,
            ApTemplate.of(st.set, st.dtype, ((m, kt), (1, mt))),
            ApTemplate.of(mv.set, mv.dtype, ((n, kt), (1, nt))),
            convert_lhs,
            convert_rhs,
            body("Matmult", "PE", [s_in, m_in], [acc], **FIRST),
            body("Matmult", "PE", [s_in, m_in], [acc], **ACCUMULATE),
        )


#: a K tile's Matmult keys: the first overwrites the PSUM tile, the next ones add to it
FIRST: dict[str, Any] = {"contract": True}
ACCUMULATE: dict[str, Any] = {"contract": True, "accumulate": "add"}


HANDLERS = {"dot": dot}
