"""XLA's partitioned program → one symbolic module (contract §3.9; seed 001 §4 step 2).

:func:`lower_partitioned` takes the HLO text XLA prints after its ``spmd-partitioning`` pass
(one program that runs on every partition, ``partition-id()`` being the shard) and lowers the
whole ENTRY computation into one symbolic module ``<HloModule name>_nc_symbolic`` with one
function ``main``: whole-program ``arg<k>``/``out<k>`` in Shared DRAM at XLA's tile offsets
(:mod:`.io`), every other value per core in private DRAM (:mod:`.values`), compute on SBUF/PSUM
tiles (DMA in, compute, DMA out). The files, one concept each:

=================  ==========================================================================
``program``        the after/before pair: global shapes, shardings, N
``builder``        the BIR-JSON document: sets, instructions, access patterns, placement
``shard_expr``     per-core integers as shard expressions (digit-linear, else a step sum)
``static_eval``    per-core values of constants and ``partition-id()`` arithmetic (offsets)
``scope``          a computation being lowered; the context of one instruction's handler
``lowerer``        the walk in HLO order, inlining ``call``/``fusion``, the op dispatch
``io``             reading ``arg<k>``, writing ``out<k>`` (the lowest device writes)
``tiles``          cutting arrays into SBUF pieces within the engines' limits
``elementwise``    the elementwise ops
``movement``       reshape … dynamic-update-slice, tuples, calls
``sources``        constant, iota, partition-id, replica-id
``dot``            dot with any batch and contracting dims on the PE
``combiner``       a reduction's ``to_apply`` recognized by its body
``reduce``         reduce (add, max, min): the vector engine, or a matmul with ones
``collectives``    all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute
=================  ==========================================================================

docs/frontend.md lists every op with the instructions it becomes and why they are correct and
race-free.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from lncsplit.arch import UnknownArchError, geometry

from ..hlo import HloModule
from ..hlo_attrs import HloAttributeError
from ..literal import LiteralError
from ..lowering import LoweringError
from ..replica_groups import ReplicaGroupsError
from . import collectives, dot, elementwise, movement, reduce, sources
from .builder import Builder, JsonDict, document_text
from .io import read_argument, write_output
from .lowerer import HANDLERS, Lowerer, leaves
from .program import is_partitioned, num_partitions, read_program
from .scope import Scope

__all__ = [
    "is_partitioned",
    "lower_partitioned",
    "lower_partitioned_json",
    "lower_partitioned_text",
    "num_partitions",
    "supported_ops",
]

for _module in (elementwise, movement, sources, dot, reduce, collectives):
    HANDLERS.update(_module.HANDLERS)


def supported_ops() -> list[str]:
    """The HLO opcodes :func:`lower_partitioned` lowers (besides ``parameter``)."""
    return sorted(HANDLERS)


def _parse(text: object, what: str) -> HloModule:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be HLO text (str), got {type(text).__name__}")
    module = HloModule.parse(text)
    if not module.header.startswith("HloModule") or not module.computations:
        raise LoweringError(
            f"{what} is not HLO text: expected a module as XLA prints it ('HloModule <name>, …' "
            "and its computations)"
        )
    return module


def _lnc(after: HloModule, lnc: object) -> int:
    n = num_partitions(after)
    if lnc is None:
        return n
    if isinstance(lnc, bool) or not isinstance(lnc, int) or lnc < 1:
        raise LoweringError(f"lnc must be a positive integer, got {lnc!r}")
    if lnc != n:
        raise LoweringError(
            f"HloModule {after.name}: lnc {lnc} but the module was partitioned for "
            f"num_partitions={n}"
        )
    return n


def lower_partitioned_text(
    text: str, lnc: int | None = None, *, before: str | None = None, arch: str = "gen3"
) -> str:
    """:func:`lower_partitioned` as BIR-JSON text (the document is written as text: a large
    program's instructions are never a tree of dicts)."""
    after = _parse(text, "text")
    n = _lnc(after, lnc)
    if n > 1 and not is_partitioned(after):
        entry = after.entry
        raise LoweringError(
            f"HloModule {after.name} is not partitioned: its ENTRY %{entry.name if entry else '?'} "
            "does not end in _spmd (give the text XLA prints after spmd-partitioning)"
        )
    before_module = None if before is None else _parse(before, "before")
    try:
        geo = geometry(arch)
    except UnknownArchError as exc:
        raise LoweringError(str(exc)) from None
    program = read_program(after, n, before_module)
    builder = Builder(n, geo)
    params = [
        read_argument(builder, t, _param_name(program, k)) for k, t in enumerate(program.args)
    ]
    lowerer = Lowerer(program, builder, geo)
    try:
        root = lowerer.lower_scope(Scope(program.entry, ""), params)
    except (HloAttributeError, LiteralError, ReplicaGroupsError) as exc:
        raise LoweringError(str(exc)) from None
    _write_outputs(program, builder, root)
    name = f"{after.name or 'module'}_nc_symbolic"
    return document_text(name, geo.name, list(builder.sets.values()), builder.instructions)


def lower_partitioned_json(
    text: str, lnc: int | None = None, *, before: str | None = None, arch: str = "gen3"
) -> JsonDict:
    """:func:`lower_partitioned` as the BIR-JSON document (a dict)."""
    doc: JsonDict = json.loads(lower_partitioned_text(text, lnc, before=before, arch=arch))
    return doc


def _param_name(program: Any, k: int) -> str:
    for i in program.entry.instructions:
        if i.opcode == "parameter" and (i.literal or "").strip() == str(k):
            return str(i.name)
    return f"param{k}"  # pragma: no cover - read_program found every parameter


def _write_outputs(program: Any, builder: Builder, root: Any) -> None:
    outs = leaves(root)
    if len(outs) != len(program.outs):
        raise LoweringError(
            f"the ROOT has {len(outs)} arrays, the program {len(program.outs)} outputs"
        )
    for t, buf in zip(program.outs, outs, strict=True):
        if buf.dims != t.local_dims or buf.ty != t.ty:
            raise LoweringError(
                f"{t.name}: the ROOT's element is {buf.ty}{list(buf.dims)}, expected "
                f"{t.ty}{list(t.local_dims)}"
            )
        write_output(builder, t, buf)


def lower_partitioned(
    text: str, lnc: int | None = None, *, before: str | None = None, arch: str = "gen3"
) -> Any:
    """Lower XLA's partitioned HLO text to one symbolic ``lncsplit.Module`` (contract §3.9).

    ``lnc`` defaults to the module's ``num_partitions`` (a different value is a
    :class:`LoweringError`); ``before`` is the HLO text of the same module before
    ``spmd-partitioning`` (the global shapes and the ROOT's sharding; without it every
    parameter must be replicated or maximal). Every failure is a :class:`LoweringError` naming
    the HLO instruction and its line.
    """
    lncsplit = importlib.import_module("lncsplit")
    return lncsplit.Module.from_json(lower_partitioned_text(text, lnc, before=before, arch=arch))
