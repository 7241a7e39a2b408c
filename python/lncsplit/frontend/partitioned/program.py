"""The partitioned program's whole-program inputs and outputs (contract §3.9).

XLA keeps ``sharding=`` only on ENTRY parameters after partitioning and gives them per-device
(padded, ceil-div) shapes, so the module *before* ``spmd-partitioning`` supplies the global
shapes (its ENTRY parameter k ↔ ``arg<k>``, its ROOT element k ↔ ``out<k>``) and the ROOT's
sharding. :func:`read_program` pairs the two modules and checks that the after module's shapes
are XLA's per-device buffers of those; without ``before`` every parameter must be replicated or
maximal (then global = local and the ROOT is replicated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..hlo import HloComputation, HloInstruction, HloModule, HloShape
from ..lowering import LoweringError
from ..sharding import HloSharding, HloShardingError
from .builder import BIR_DTYPES

__all__ = ["IoTensor", "Program", "is_partitioned", "num_partitions", "read_program", "where"]

_REPLICATED = HloSharding.replicate()


def where(instr: HloInstruction) -> str:
    """``%name (line L)``: how errors name an HLO instruction."""
    line = f" (line {instr.line})" if instr.line is not None else ""
    return f"%{instr.name}{line}"


def num_partitions(module: HloModule) -> int:
    """``num_partitions=`` of the module header (1 when absent)."""
    m = re.search(r"[,\s]num_partitions=(\d+)", module.header)
    return int(m.group(1)) if m else 1


def is_partitioned(module: HloModule) -> bool:
    """Whether the module is XLA's output of ``spmd-partitioning``: its ENTRY computation's name
    ends in ``_spmd`` (called computations may too; only ENTRY decides)."""
    entry = module.entry
    return entry is not None and entry.is_entry and entry.name.endswith("_spmd")


@dataclass(frozen=True)
class IoTensor:
    """``arg<k>`` or ``out<k>``: its global shape, per-device buffer and sharding."""

    name: str
    ty: str
    global_dims: tuple[int, ...]
    local_dims: tuple[int, ...]
    sharding: HloSharding
    #: the HLO instruction it comes from, as errors name it (``%param (line 5)``)
    origin: str = ""

    @property
    def dtype(self) -> str:
        return BIR_DTYPES[self.ty]


@dataclass
class Program:
    """The after module, the number of partitions, and the ENTRY's I/O."""

    module: HloModule
    entry: HloComputation
    n: int
    args: list[IoTensor]
    outs: list[IoTensor]


def _parameters(comp: HloComputation) -> list[HloInstruction]:
    """ENTRY's parameters in parameter-number order (matched by ``parameter(k)``, never name)."""
    params: dict[int, HloInstruction] = {}
    for i in comp.instructions:
        if i.opcode == "parameter":
            try:
                k = int((i.literal or "").strip())
            except ValueError:
                raise LoweringError(f"{where(i)}: parameter number {i.literal!r}") from None
            params[k] = i
    if sorted(params) != list(range(len(params))):
        raise LoweringError(f"ENTRY %{comp.name}: parameters {sorted(params)} are not 0…k")
    return [params[k] for k in range(len(params))]


def _leaves(shape: HloShape) -> list[HloShape]:
    return shape.leaves()


def _sharding_of(instr: HloInstruction) -> HloSharding | None:
    text = instr.attributes.get("sharding")
    if text is None:
        return None
    try:
        return HloSharding.parse(text)
    except HloShardingError as exc:
        raise LoweringError(f"{where(instr)}: sharding={text}: {exc}") from None


def _check_leaf_sharding(s: HloSharding, what: str, n: int) -> None:
    if s.is_tuple:
        raise LoweringError(f"{what}: a tuple sharding {s} for an array")
    if s.kind in ("manual", "unknown", "unreduced") or s.has_manual_subgroup:
        raise LoweringError(f"{what}: sharding {s} does not map tiles to the {n} partitions")
    if s.kind == "maximal" and not 0 <= (s.unique_device or 0) < n:
        raise LoweringError(f"{what}: maximal device {s.unique_device} is not one of {n}")


def _io(
    name: str,
    ty: str,
    global_shape: HloShape,
    local_shape: HloShape,
    sharding: HloSharding,
    what: str,
    n: int,
) -> IoTensor:
    if ty not in BIR_DTYPES:
        raise LoweringError(f"{what}: element type {ty!r} has no BIR dtype")
    if local_shape.dtype != global_shape.dtype:
        raise LoweringError(
            f"{what}: element type {local_shape.dtype} after partitioning but "
            f"{global_shape.dtype} before"
        )
    _check_leaf_sharding(sharding, what, n)
    gdims = global_shape.dims
    try:
        if sharding.is_tiled:
            sharding.validate(gdims, n)
        expect = sharding.partitioned_shape(gdims)
    except ValueError as exc:
        raise LoweringError(f"{what}: sharding {sharding} of {global_shape}: {exc}") from None
    if tuple(expect) != tuple(local_shape.dims):
        raise LoweringError(
            f"{what}: the module before spmd-partitioning says {global_shape.dtype}{list(gdims)} "
            f"sharded {sharding}, whose per-device buffer is {list(expect)}, but the "
            f"partitioned module has {list(local_shape.dims)}"
        )
    return IoTensor(name, ty, tuple(gdims), tuple(local_shape.dims), sharding, what)


def _entry(module: HloModule, what: str) -> HloComputation:
    entry = module.entry
    if entry is None or entry.root is None:
        raise LoweringError(f"{what}: no ENTRY computation with instructions")
    return entry


def _root_shardings(before_root: HloInstruction, count: int) -> list[HloSharding]:
    s = _sharding_of(before_root)
    if s is None:
        return [_REPLICATED] * count
    if s.is_tuple:
        elems = list(s.tuple_elements)
        if len(elems) != count:
            raise LoweringError(
                f"{where(before_root)} (before): tuple sharding of {len(elems)} elements for "
                f"{count} outputs"
            )
        return elems
    return [s] * count  # one array sharding for every element


def read_program(after: HloModule, n: int, before: HloModule | None) -> Program:
    """Pair the partitioned module with the one before partitioning (see the module doc)."""
    entry = _entry(after, "partitioned module")
    params = _parameters(entry)
    root = entry.root
    assert root is not None
    out_local = _leaves(root.shape)
    if before is None:
        return _without_before(after, entry, params, root, out_local, n)
    bentry = _entry(before, "module before spmd-partitioning")
    bparams = _parameters(bentry)
    broot = bentry.root
    assert broot is not None
    if len(bparams) != len(params):
        raise LoweringError(
            f"the module before spmd-partitioning has {len(bparams)} ENTRY parameters, the "
            f"partitioned one {len(params)}"
        )
    args = []
    for k, (p, bp) in enumerate(zip(params, bparams, strict=True)):
        s = _sharding_of(p) or _sharding_of(bp) or _REPLICATED
        args.append(_io(f"arg{k}", p.shape.dtype, bp.shape, p.shape, s, where(p), n))
    out_global = _leaves(broot.shape)
    if len(out_global) != len(out_local):
        raise LoweringError(
            f"ROOT {where(root)} has {len(out_local)} outputs but the module before "
            f"spmd-partitioning has {len(out_global)} ({where(broot)})"
        )
    shardings = _root_shardings(broot, len(out_global))
    outs = [
        _io(f"out{k}", lo.dtype, g, lo, s, f"ROOT {where(root)} element {k}", n)
        for k, (g, lo, s) in enumerate(zip(out_global, out_local, shardings, strict=True))
    ]
    return Program(after, entry, n, args, outs)


def _without_before(
    after: HloModule,
    entry: HloComputation,
    params: list[HloInstruction],
    root: HloInstruction,
    out_local: list[HloShape],
    n: int,
) -> Program:
    args = []
    for k, p in enumerate(params):
        s = _sharding_of(p) or _REPLICATED
        if not (s.is_replicated or s.kind == "maximal"):
            raise LoweringError(
                f"{where(p)}: parameter {k} is sharded {s}: lower_partitioned needs the module "
                "before spmd-partitioning (before=...) for the global shapes"
            )
        args.append(_io(f"arg{k}", p.shape.dtype, p.shape, p.shape, s, where(p), n))
    outs = [
        _io(f"out{k}", lo.dtype, lo, lo, _REPLICATED, f"ROOT {where(root)} element {k}", n)
        for k, lo in enumerate(out_local)
    ]
    return Program(after, entry, n, args, outs)
