"""A reduction's ``to_apply`` recognized by its body, not its name (contract §3.9).

XLA names reduction bodies freely (``%region_0.0``, ``%add.clone``, ``%region_1.0.clone``); what
makes one an add, max or min is its ROOT: ``add`` / ``maximum`` / ``minimum`` of the
computation's two scalar parameters, in either order. Anything else (a body with more
instructions, a tuple body of a variadic reduce, ``or``/``multiply``) is a ``LoweringError``
naming the computation and its ROOT.
"""

from __future__ import annotations

from ..hlo_attrs import HloAttributeError, computation_ref
from .program import where
from .scope import Op

__all__ = ["REDUCERS", "reduction_op"]

#: HLO opcode of a body's ROOT → the op of contract §3.8's vocabulary.
REDUCERS = {"add": "add", "maximum": "max", "minimum": "min"}


def reduction_op(op: Op) -> str:
    """``add``, ``max`` or ``min``: what ``op``'s ``to_apply`` computes."""
    try:
        name = computation_ref(op.attr("to_apply"))
    except HloAttributeError as exc:
        raise op.fail(str(exc)) from None
    comp = next((c for c in op.lowerer.program.module.computations if c.name == name), None)
    if comp is None:
        raise op.fail(f"to_apply=%{name}: no such computation")
    root = comp.root
    params = {
        i.name: (i.literal or "").strip() for i in comp.instructions if i.opcode == "parameter"
    }
    if (
        root is None
        or root.opcode not in REDUCERS
        or sorted(params.values()) != ["0", "1"]
        or sorted(params.get(o, "") for o in root.operands) != ["0", "1"]
        or root.shape.dims
        or len(comp.instructions) != 3
    ):
        got = f"ROOT {where(root)} {root.opcode}" if root is not None else "no ROOT"
        raise op.fail(
            f"to_apply=%{name} is not an add, maximum or minimum of its two parameters ({got}); "
            "reduce and the collectives take those three"
        )
    return REDUCERS[root.opcode]
