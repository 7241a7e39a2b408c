"""A typed usage sample of lncsplit.pelican, checked by ``mypy --strict``
(tests/pelican/test_stubs.py). Not collected as a test."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from lncsplit import pelican
from lncsplit.errors import PelicanAssertion
from lncsplit.pelican import Context, Expr, Predicate


def sample() -> None:
    ctx: Context = Context()
    i: Expr = ctx.affine_iv("i", 0, 8, 1)
    s: Expr = ctx.shard_id(4)
    a: Expr = ctx.aff_expr([(i, 2), (s, 1)], 3)
    m: Expr = ctx.modulo(ctx.sum([a, ctx.constant(1)]), 4)
    v: int | None = m.eval({"i": 1, "shard": 2})
    w: int | None = m.eval({i: 1, s: 2})
    bound: Expr = m.update_shard_id(1)
    wire: dict[str, Any] = a.to_json()
    wire1: dict[str, Any] = a.to_json(version=1)
    again: Expr = Context.from_json(wire, axes={"i": (0, 8, 1)})
    same: Expr = ctx.from_json(wire)
    text: Expr = ctx.from_json('{"kind": "ShardIDKind", "ub": 4}', version=2)
    ok: bool = m.is_legal_delinearized_address(0, True, False)
    tc: int | None = i.trip_count
    kids: list[Expr] = m.children
    code: int = m.kind
    name: str = m.kind_name
    owner: pelican.Context | Any = m.context
    n: int = len(ctx)
    p = Predicate(ctx.aff_expr([(s, 1)], -2), ge=True)
    pv: bool | None = p.eval({"shard": 3})
    mask: int = pelican.eval_mask([p], {"shard": 1})
    cores: npt.NDArray[np.int64] = np.arange(8, dtype=np.int64) % 4
    masks: npt.NDArray[np.uint8] = pelican.eval_mask_batch([p], cores)
    ids: npt.NDArray[np.uint32] = ctx.intern_batch([13, 26], [4, -1], [0, 3], [0, 0])
    e: Expr = ctx.expr(int(ids[1]))
    try:
        ctx.floordiv(a, 0)
    except PelicanAssertion as err:
        msg: str = err.message
        print(msg)
    print(
        v,
        w,
        bound,
        wire1,
        again,
        same,
        text,
        ok,
        tc,
        kids,
        code,
        name,
        owner,
        n,
        pv,
        mask,
        masks,
        e,
    )
    print(ctx.ccdiv(a, 2, replica_groups_id=1), ctx.ccmod(a, 2), ctx.icmp("sge", a, s))
    print(
        ctx.tiled_ap_index(s, 2, is_partition=True),
        ctx.ap_index(0, 4, 1, 2),
        ctx.symbolic_idx(0, 4, 1),
    )
    print(
        ctx.int_runtime_value("r"),
        ctx.cc_get_rank(0, 0),
        ctx.indirect_arg(1),
        ctx.opaque_fn("f", [a]),
    )
    print(hash(a) == hash(a), a == a, a.has_shard, i.infimum, i.supremum)


def module_sample(path: str) -> None:
    """The module views and the I/O errors, as typed by the stub."""
    import errno

    import lncsplit
    from lncsplit.errors import LncsplitIOError

    try:
        m: lncsplit.Module = lncsplit.load(path)
    except FileNotFoundError as err:
        code: int = err.errno if err.errno is not None else errno.ENOENT
        io: bool = isinstance(err, LncsplitIOError)
        print(code, io)
        return
    copy: lncsplit.Module = m.clone("json")
    for f in m.functions:
        regs: list[str] = f.registers
        for inst in f.instructions(["DMACopy"]):
            addrs: list[Expr] = [e for a in inst.outs for e in a.addrs]
            preds: list[Predicate] = inst.predicates
            print(regs, addrs, preds)
        for s in f.allocations:
            for loc in s.locations:
                loc.addr = 0
    print(copy)
