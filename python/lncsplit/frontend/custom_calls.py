"""The custom-call seam: the AwsNeuron target whitelist, the partitioner registry and dispatch.

* :func:`check_custom_call` — the front end's ``CustomCallOpChecker::CheckMisc``: an
  ``AwsNeuron*`` target that is not in :data:`AWS_NEURON_CUSTOM_CALL_TARGETS` raises
  :class:`CustomCallCheckError`.
* The partitioner registry (``custom_call_sharding_helper.cc``): keyed by target, populated once
  lazily (like ``absl::CallOnce`` from ``ShardingPropagation::Run``); the first registration wins
  and a duplicate logs ``Failed to register custom call partitioner for <target>`` on the
  ``lncsplit.frontend`` logger.
* :func:`handle_custom_call` — ``SpmdPartitioningVisitor::HandleCustomCall``: a registered
  partitioner returns its plan; an unregistered target gets XLA's ``DefaultAction`` (reshard the
  operand to ``{replicated}`` with an all-gather, then dynamic-slice to the target sharding).
* :func:`custom_call_cost` — the cost model: zero for the LNC sharding constraint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from lncsplit.errors import LncsplitError

from .hlo import HloInstruction
from .reshard import ReshardPlan, plan_default_action, plan_reshard
from .sharding import HloSharding

__all__ = [
    "AWS_NEURON_CUSTOM_CALL_TARGETS",
    "LNC_SHARDING_CONSTRAINT",
    "TRANSFER_WITH_STATIC_RING",
    "COLLECTIVE_MATMUL",
    "CustomCallCheckError",
    "CustomCallPartitioner",
    "LNCShardingConstraintPartitioner",
    "check_custom_call",
    "custom_call_cost",
    "get_custom_call_partitioner",
    "handle_custom_call",
    "register_custom_call_partitioner",
    "reset_custom_call_partitioners",
]

logger = logging.getLogger("lncsplit.frontend")

LNC_SHARDING_CONSTRAINT = "AwsNeuronLNCShardingConstraint"
TRANSFER_WITH_STATIC_RING = "AwsNeuronTransferWithStaticRing"
COLLECTIVE_MATMUL = "AwsNeuronCollectiveMatmul"

#: The AwsNeuron custom-call targets the checker accepts. The first three are named by seed 001;
#: the others appear as ``custom_call_target`` strings in public Neuron code (see
#: docs/frontend.md for the sources).
AWS_NEURON_CUSTOM_CALL_TARGETS: frozenset[str] = frozenset(
    {
        LNC_SHARDING_CONSTRAINT,
        TRANSFER_WITH_STATIC_RING,
        COLLECTIVE_MATMUL,
        "AwsNeuronCustomNativeKernel",
        "AwsNeuronRmsNorm",
        "AwsNeuronTopK",
        "AwsNeuronArgMax",
        "AwsNeuronSilu",
    }
)


class CustomCallCheckError(LncsplitError, ValueError):
    """An ``AwsNeuron*`` custom call the front-end verifier rejects."""

    def __init__(self, message: str, target: str = "", instruction: str = "") -> None:
        super().__init__(message)
        self.target = target
        self.instruction = instruction


def check_custom_call(instr: HloInstruction | str) -> None:
    """Check one custom call (or a bare target) against the AwsNeuron whitelist.

    Targets not starting with ``AwsNeuron`` are not the checker's business and pass.
    """
    if isinstance(instr, str):
        target, name = instr, ""
    else:
        if instr.opcode != "custom-call":
            return
        target, name = instr.custom_call_target or "", instr.name
    if target.startswith("AwsNeuron") and target not in AWS_NEURON_CUSTOM_CALL_TARGETS:
        where = f" (instruction %{name})" if name else ""
        raise CustomCallCheckError(
            f"[ERROR] unknown AwsNeuron custom call target {target!r}{where}; known targets: "
            + ", ".join(sorted(AWS_NEURON_CUSTOM_CALL_TARGETS)),
            target,
            name,
        )


class CustomCallPartitioner:
    """Base partitioner; ``partition`` returns a :class:`ReshardPlan`.

    The base implementation is XLA's stub: it raises ``NotImplementedError("Implement sharding
    for <target>")``.
    """

    def partition(self, instr: HloInstruction, operand_sharding: HloSharding) -> ReshardPlan:
        """Plan the partitioning of ``instr`` whose operand 0 carries ``operand_sharding``."""
        raise NotImplementedError(f"Implement sharding for {instr.custom_call_target}")

    def can_side_effecting_have_replicated_sharding(self) -> bool:
        """XLA's base returns false."""
        return False


class LNCShardingConstraintPartitioner(CustomCallPartitioner):
    """``AwsNeuronLNCShardingConstraint``: reshard the operand to the pinned sharding.

    Does what ``HandleElementwise`` does: ``operand.Reshard(hlo->sharding())``, so the plan goes
    through XLA's choice of collective-permute, all-to-all, dynamic-slice, all-gather or
    replicate-then-slice.
    """

    def partition(self, instr: HloInstruction, operand_sharding: HloSharding) -> ReshardPlan:
        """The reshard plan from ``operand_sharding`` to the instruction's sharding."""
        target = instr.sharding
        if target is None:
            raise ValueError(f"%{instr.name}: {LNC_SHARDING_CONSTRAINT} has no sharding")
        plan = plan_reshard(operand_sharding, target, instr.shape.dims)
        plan.handler = LNC_SHARDING_CONSTRAINT
        return plan


_lock = threading.Lock()
_partitioners: dict[str, CustomCallPartitioner] = {}
_populated = False
_populating = threading.Lock()

#: Callables run once, lazily, to populate the registry (the CallOnce body).
_DEFAULT_REGISTRATIONS: list[Callable[[], None]] = []


def register_custom_call_partitioner(target: str, partitioner: CustomCallPartitioner) -> bool:
    """Register ``partitioner`` for ``target``; the first registration wins.

    A duplicate logs ``Failed to register custom call partitioner for <target>`` and returns
    False.
    """
    with _lock:
        if target in _partitioners:
            logger.error("Failed to register custom call partitioner for %s", target)
            return False
        _partitioners[target] = partitioner
        return True


def _register_defaults() -> None:
    register_custom_call_partitioner(LNC_SHARDING_CONSTRAINT, LNCShardingConstraintPartitioner())


_DEFAULT_REGISTRATIONS.append(_register_defaults)


def _ensure_populated() -> None:
    global _populated
    if _populated:
        return
    with _populating:
        if _populated:
            return
        for fn in _DEFAULT_REGISTRATIONS:
            fn()
        _populated = True


def get_custom_call_partitioner(target: str) -> CustomCallPartitioner | None:
    """The partitioner registered for ``target`` (None if none); populates the registry once."""
    _ensure_populated()
    with _lock:
        return _partitioners.get(target)


def registered_targets() -> list[str]:
    """The registered targets, sorted."""
    _ensure_populated()
    with _lock:
        return sorted(_partitioners)


def reset_custom_call_partitioners(populate_defaults: bool = True) -> None:
    """Clear the registry (tests); the defaults are registered again lazily if requested."""
    global _populated
    with _lock:
        _partitioners.clear()
    _populated = not populate_defaults


def handle_custom_call(
    instr: HloInstruction, operand_sharding: HloSharding | Sequence[HloSharding]
) -> ReshardPlan:
    """``HandleCustomCall`` dispatch: registered partitioner → its plan; else ``DefaultAction``.

    ``operand_sharding`` is the sharding of operand 0 (a sequence: one per operand, the first
    used). The default action reshards the operand to ``{replicated}`` (all-gather) and then
    dynamic-slices to the instruction's sharding.
    """
    if instr.opcode != "custom-call":
        raise ValueError(f"%{instr.name} is a {instr.opcode}, not a custom-call")
    check_custom_call(instr)
    src = operand_sharding if isinstance(operand_sharding, HloSharding) else operand_sharding[0]
    target = instr.custom_call_target or ""
    partitioner = get_custom_call_partitioner(target)
    if partitioner is not None:
        return partitioner.partition(instr, src)
    tgt = instr.sharding
    if tgt is None:
        tgt = HloSharding.replicate()
    plan = plan_default_action(src, tgt, instr.shape.dims)
    plan.handler = "DefaultAction"
    return plan


def custom_call_cost(instr: HloInstruction) -> float:
    """Cost-model flops/bytes estimate of a custom call.

    ``AwsNeuronLNCShardingConstraint`` is an identity annotation: 0. A static-ring transfer moves
    its bytes (the output byte size); anything else is charged its output bytes too (lncsplit
    has no compute model for the other targets).
    """
    target = instr.custom_call_target
    if target == LNC_SHARDING_CONSTRAINT:
        return 0.0
    return float(sum(leaf.byte_size for leaf in instr.shape.leaves()))
