"""``AwsNeuronTransferWithStaticRing``: nested-transfer unpacking and the parameter-load test.

``unpack_nested_static_ring_transfers`` is the front end's ``UnpackNestedAWSNTWSR`` pass
(seed 001 §3): in every computation, visiting instructions in order, a static-ring transfer whose
operand 0 is itself a static-ring transfer is replaced (``ReplaceInstruction``) by that operand,
so ``transfer(transfer(...transfer(x)))`` collapses to ``transfer(x)`` at any depth.
"""

from __future__ import annotations

import logging

from .custom_calls import TRANSFER_WITH_STATIC_RING
from .hlo import HloInstruction, HloModule

__all__ = ["is_custom_call_loading_param", "unpack_nested_static_ring_transfers"]

logger = logging.getLogger("lncsplit.frontend")


def is_custom_call_loading_param(instr: HloInstruction) -> bool:
    """True iff ``instr`` is a custom call whose target is ``AwsNeuronTransferWithStaticRing``."""
    return instr.opcode == "custom-call" and instr.custom_call_target == TRANSFER_WITH_STATIC_RING


def unpack_nested_static_ring_transfers(module: HloModule) -> bool:
    """Collapse nested static-ring transfers in place; returns True if anything changed.

    Each replacement logs ``found illegally nested AwsNeuronTransferWithStaticRing, replacing
    <tail> with <source>`` (instruction names) on the ``lncsplit.frontend`` logger.
    """
    if module.entry is None:
        raise ValueError("nullptr != entry_computation_")
    changed = False
    for comp in module.computations:
        order = list(comp.instructions)  # text order: XLA prints computations in post order
        for inst in order:
            if not is_custom_call_loading_param(inst) or not inst.operands:
                continue
            if not any(b is inst for b in comp.body):
                continue
            source = comp.get(inst.operands[0])
            if source is None or not is_custom_call_loading_param(source):
                continue
            logger.warning(
                "found illegally nested AwsNeuronTransferWithStaticRing, replacing %s with %s",
                inst.name,
                source.name,
            )
            comp.replace_instruction(inst, source)
            changed = True
    return changed
