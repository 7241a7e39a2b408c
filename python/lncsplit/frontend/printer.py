"""The penguin-IR printer line of ``AwsNeuronLNCShardingConstraint`` (seed 001 §1)."""

from __future__ import annotations

from collections.abc import Sequence

from .custom_calls import LNC_SHARDING_CONSTRAINT
from .hlo import HloInstruction
from .sharding import HloSharding

__all__ = ["print_lnc_sharding_constraint"]


def print_lnc_sharding_constraint(
    instr: HloInstruction,
    ctx: str = "ctx",
    dsts: Sequence[str] | None = None,
    srcs: Sequence[str] | None = None,
) -> str:
    """``<dst> = <ctx>.LNCShardingConstraintOp(<src>, target_name=<target>, sharding=<text>)``.

    ``dsts``/``srcs`` default to the instruction's name and its operand names; several are
    joined with ``", "``. The sharding is printed in XLA's text form without metadata.
    """
    if instr.opcode != "custom-call" or instr.custom_call_target != LNC_SHARDING_CONSTRAINT:
        raise ValueError(f"%{instr.name} is not an {LNC_SHARDING_CONSTRAINT} custom call")
    sharding: HloSharding | None = instr.sharding
    sharding_text = (
        sharding.to_string(include_metadata=False)
        if sharding is not None
        else instr.attributes.get("sharding", "None")
    )
    dst = ", ".join(dsts) if dsts is not None else instr.name
    src = ", ".join(srcs) if srcs is not None else ", ".join(instr.operands)
    return (
        f"{dst} = {ctx}.LNCShardingConstraintOp({src}, "
        f"target_name={instr.custom_call_target}, sharding={sharding_text})"
    )
