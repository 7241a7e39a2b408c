"""The collectives XLA's partitioner emits, as ``CollectiveCompute`` (contract §3.9, §3.8).

Each is one ``CollectiveCompute`` of the matching kind over the LNC cores, on private DRAM
buffers, with ``cc_channel.replica_groups`` the groups XLA wrote (every form expanded:
:mod:`lncsplit.frontend.replica_groups`) — lowered later by §3.6's lower_local_collectives
(an AllReduce into DMA reduce-scatter + barrier + all-gather, or gather-and-reduce when it has
no scatter dim or runs over subgroups; the other kinds stay, behind a fence barrier). Its APs
walk the buffers flat (``[[E, 1], [1, E]]``): a collective pairs elements in AP order, so the
flat order is the meaning, and an AllReduce of E ≥ 4 elements divisible by N has a scatter dim.

- all-reduce (add/max/min by its ``to_apply`` body): ``AllReduce``, in → result.
- all-gather along dim d: ``AllGather`` concatenates the group's inputs *flat*; that is the
  concatenation along d when d is the outermost non-trivial dim, else the gathered ``[G, …]``
  stage is rearranged by one DMA (member g's block to ``g·n_d`` along d).
- reduce-scatter along d: the input is first rearranged so that member g's chunk along d is
  the g-th flat chunk (one DMA, when d is not outermost), then ``ReduceScatter`` gives member g
  chunk g of the reduction.
- all-to-all along d: chunk j along d goes to member j and comes back as the j-th block along
  d: the same rearrangement before and after ``AllToAll`` (outs(c) chunk j ← ins(j) chunk c).
- collective-permute: ``Permute`` with ``send_to_rank``/``recv_from_rank`` the shard
  expressions of XLA's ``source_target_pairs``. §3.6 needs a permutation (recv_from(send_to(c))
  = c); pairs that leave cores out are completed by pairing each core that sends nothing with
  one that receives nothing, and those receivers' results are then zeroed (XLA's
  collective-permute writes zeros where no pair targets a partition) by a predicated DMA.

Members are partition ids (XLA prints ``use_global_device_ids=true`` with a ``channel_id``); a
collective without ``channel_id`` is cross-replica (one replica here) and a ``LoweringError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..hlo_attrs import HloAttributeError, int_list, int_lists
from ..literal import NUMPY_DTYPES
from ..replica_groups import ReplicaGroupsError, expand_replica_groups
from .builder import BIR_DTYPES, Access
from .combiner import reduction_op
from .scope import Op
from .shard_expr import member_predicates, table_expression
from .values import Buf, Value

__all__ = ["HANDLERS", "complete_permutation"]


def _flat(x: Buf, count: int | None = None) -> Access:
    e = x.size if count is None else count
    return x.access([(e, 1), (1, e)])


def _groups(op: Op) -> list[list[int]]:
    if "channel_id" not in op.attrs:
        raise op.fail(
            "no channel_id: a cross-replica collective (lncsplit lowers partition collectives)"
        )
    text = op.attrs.get("replica_groups", "{}")
    try:
        return expand_replica_groups(text, op.n)
    except ReplicaGroupsError as exc:
        raise op.fail(str(exc)) from None


def _collective(
    op: Op,
    step: str,
    kind: str,
    src: Access,
    dst: Access,
    groups: list[list[int]],
    alu: str | None = None,
    **keys: Any,
) -> None:
    channel: dict[str, object] = {"kind": kind, "replica_groups": groups}
    if alu is not None:
        channel["op"] = alu
    op.b.emit(step, "CollectiveCompute", "Pool", [src], [dst], cc_channel=channel, **keys)


def _dimension(op: Op) -> int:
    try:
        dims = int_list(op.attr("dimensions"), "dimensions")
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None
    if len(dims) != 1:
        raise op.fail(f"dimensions={dims}: one dimension expected")
    return dims[0]


def _operands(op: Op) -> list[Buf]:
    """The array operands (a tuple-shaped collective works on each)."""
    return op.bufs()


def _results(op: Op) -> list[Buf]:
    """A buffer per array of the result (a tuple-shaped collective has several)."""
    leaves = op.instr.shape.leaves()
    for leaf in leaves:
        if leaf.dtype not in BIR_DTYPES:
            raise op.fail(f"element type {leaf.dtype!r} has no BIR dtype")
    if len(leaves) == 1:
        return [op.result(leaves[0].dims, leaves[0].dtype)]
    return [op.scratch(str(k), leaf.dims, leaf.dtype) for k, leaf in enumerate(leaves)]


def _result_value(results: list[Buf]) -> Value:
    return results[0] if len(results) == 1 else tuple(results)


def _grouped(x: Buf, d: int, g: int) -> tuple[list[tuple[int, int]], tuple[int, ...]]:
    """The AP walking ``x`` as ``[g, …]``: block k of g along dim d first, then x's dims with
    dim d cut to one block — and the block's dims."""
    block = x.dims[:d] + (x.dims[d] // g,) + x.dims[d + 1 :]
    st = x.strides
    return [(block[d] * st[d], g), *((st[e], block[e]) for e in range(len(block)))], block


def _outermost(dims: tuple[int, ...], d: int) -> bool:
    """Whether dim d's blocks are contiguous (every dim before d has extent 1)."""
    return all(n == 1 for n in dims[:d])


def all_reduce(op: Op) -> Value:
    groups = _groups(op)
    alu = reduction_op(op)
    xs = _operands(op)
    results = _results(op)
    for k, (x, out) in enumerate(zip(xs, results, strict=True)):
        if x.dims != out.dims or x.ty != out.ty:
            raise op.fail(
                f"operand {k} is {x.ty}{list(x.dims)}, its result {out.ty}{list(out.dims)}"
            )
        if x.size:
            _collective(
                op, f"cc{k}" if len(xs) > 1 else "", "AllReduce", _flat(x), _flat(out), groups, alu
            )
    return _result_value(results)


def all_gather(op: Op) -> Value:
    groups = _groups(op)
    g = len(groups[0])
    d = _dimension(op)
    (x,) = _operands(op)
    (out,) = _results(op)
    if out.dims != x.dims[:d] + (x.dims[d] * g,) + x.dims[d + 1 :]:
        raise op.fail(
            f"gathering {list(x.dims)} along {d} over groups of {g} is not {list(out.dims)}"
        )
    if not x.size:
        return out
    if _outermost(x.dims, d):
        _collective(op, "", "AllGather", _flat(x), _flat(out), groups)
        return out
    stage = op.scratch("gathered", (g, *x.dims), x.ty)
    _collective(op, "", "AllGather", _flat(x), _flat(stage), groups)
    pattern, _ = _grouped(out, d, g)
    op.b.dma("arrange", stage.whole(), out.access(pattern))
    return out


def reduce_scatter(op: Op) -> Value:
    groups = _groups(op)
    g = len(groups[0])
    d = _dimension(op)
    alu = reduction_op(op)
    (x,) = _operands(op)
    (out,) = _results(op)
    if x.dims[d] % g or out.dims != x.dims[:d] + (x.dims[d] // g,) + x.dims[d + 1 :]:
        raise op.fail(
            f"scattering {list(x.dims)} along {d} over groups of {g} is not {list(out.dims)}"
        )
    if not out.size:
        return out
    src = x
    if not _outermost(x.dims, d):
        pattern, block = _grouped(x, d, g)
        src = op.scratch("arranged", (g, *block), x.ty)
        op.b.dma("arrange", x.access(pattern), src.whole())
    _collective(op, "", "ReduceScatter", _flat(src), _flat(out), groups, alu)
    return out


def all_to_all(op: Op) -> Value:
    groups = _groups(op)
    g = len(groups[0])
    if len(op.instr.operands) != 1:
        raise op.fail("a tuple all-to-all (several operands) is not lowered")
    d = _dimension(op)
    (x,) = _operands(op)
    (out,) = _results(op)
    if x.dims != out.dims or x.dims[d] % g:
        raise op.fail(
            f"an all-to-all of {list(x.dims)} along {d} over groups of {g} into {list(out.dims)}"
        )
    if not x.size:
        return out
    if _outermost(x.dims, d):
        _collective(op, "", "AllToAll", _flat(x), _flat(out), groups)
        return out
    pattern, block = _grouped(x, d, g)
    sent = op.scratch("sent", (g, *block), x.ty)
    got = op.scratch("received", (g, *block), x.ty)
    op.b.dma("arrange", x.access(pattern), sent.whole())
    _collective(op, "", "AllToAll", _flat(sent), _flat(got), groups)
    back, _ = _grouped(out, d, g)
    op.b.dma("restore", got.whole(), out.access(back))
    return out


def complete_permutation(
    pairs: list[tuple[int, int]], n: int
) -> tuple[list[int], list[int], list[int]]:
    """``(send_to, recv_from, silent)``: a permutation of 0…n−1 holding XLA's pairs, each core
    that sends nothing paired with one that receives nothing (in order), and the cores XLA's
    pairs leave without a sender (their results are zeros)."""
    send: dict[int, int] = {}
    recv: dict[int, int] = {}
    for s, t in pairs:
        if not (0 <= s < n and 0 <= t < n) or s in send or t in recv:
            raise ValueError(f"source_target_pairs {pairs} are not a partial permutation of {n}")
        send[s], recv[t] = t, s
    silent = [c for c in range(n) if c not in recv]
    idle = [c for c in range(n) if c not in send]
    for s, t in zip(idle, silent, strict=True):
        send[s], recv[t] = t, s
    return [send[c] for c in range(n)], [recv[c] for c in range(n)], silent


def collective_permute(op: Op) -> Value:
    if "channel_id" not in op.attrs:
        raise op.fail(
            "no channel_id: a cross-replica collective (lncsplit lowers partition collectives)"
        )
    try:
        listed = int_lists(op.attr("source_target_pairs"), "source_target_pairs")
        if any(len(p) != 2 for p in listed):
            raise ValueError(f"source_target_pairs {listed} are not pairs")
        send, recv, silent = complete_permutation([(p[0], p[1]) for p in listed], op.n)
    except (HloAttributeError, ValueError) as exc:
        raise op.fail(str(exc)) from None
    xs = _operands(op)
    results = _results(op)
    everyone = [list(range(op.n))]
    for k, (x, out) in enumerate(zip(xs, results, strict=True)):
        if x.dims != out.dims:
            raise op.fail(f"operand {k} is {list(x.dims)}, its result {list(out.dims)}")
        if not x.size:
            continue
        tag = f"cc{k}" if len(xs) > 1 else ""
        _collective(
            op,
            tag,
            "Permute",
            _flat(x),
            _flat(out),
            everyone,
            send_to_rank=table_expression(send),
            recv_from_rank=table_expression(recv),
        )
        if silent:
            zero = op.const(f"zero{k}", np.zeros((), NUMPY_DTYPES[out.ty]), out.ty)
            preds = member_predicates(silent, op.n)
            op.b.dma(
                f"{tag}.zero" if tag else "zero",
                zero.access([(0, out.size), (0, 1)]),
                _flat(out),
                preds,
            )
    return _result_value(results)


HANDLERS = {
    "all-reduce": all_reduce,
    "all-gather": all_gather,
    "reduce-scatter": reduce_scatter,
    "all-to-all": all_to_all,
    "collective-permute": collective_permute,
}
