"""``lncsplit.frontend`` — the XLA side of the LNC split (seed 001, contract §3.5).

HloSharding text (parse/print/normalize/validate, tile maths), an HLO text reader/writer, the
AwsNeuron custom-call seam (whitelist, partitioner registry, dispatch, reshard planning, cost),
static-ring transfer unpacking, the penguin printer line, ``logical_nc_config``,
``lower_to_symbolic`` (the LNC constraints, §3.5) and ``lower_partitioned`` (XLA's partitioned
program whole, §3.9). Pure Python (numpy); the compiled ``lncsplit`` core is only imported by
:func:`lower_to_symbolic` and :func:`make_pass_options`.
"""

from __future__ import annotations

from .config import ARCH_ALIASES, ARCHS, canonical_arch, logical_nc_config, make_pass_options
from .custom_calls import (
    AWS_NEURON_CUSTOM_CALL_TARGETS,
    COLLECTIVE_MATMUL,
    LNC_SHARDING_CONSTRAINT,
    TRANSFER_WITH_STATIC_RING,
    CustomCallCheckError,
    CustomCallPartitioner,
    LNCShardingConstraintPartitioner,
    check_custom_call,
    custom_call_cost,
    get_custom_call_partitioner,
    handle_custom_call,
    register_custom_call_partitioner,
    registered_targets,
    reset_custom_call_partitioners,
)
from .hlo import HloComputation, HloInstruction, HloModule, HloOperand, HloParseError, HloShape
from .lowering import (
    HLO_SUFFIXES,
    LoweredHlo,
    LoweringError,
    NothingToLowerError,
    digit_linear_fit,
    is_hlo_path,
    lower_hlo_file,
    lower_hlo_text,
    lower_to_symbolic,
    lower_to_symbolic_json,
    offset_expression,
)
from .partitioned import (
    is_partitioned,
    lower_partitioned,
    lower_partitioned_json,
    lower_partitioned_text,
    supported_ops,
)
from .printer import print_lnc_sharding_constraint
from .reshard import (
    STEP_KINDS,
    ReshardError,
    ReshardPlan,
    ReshardStep,
    all_to_all_source_target_dims,
    can_reshard_with_collective_permute,
    plan_default_action,
    plan_reshard,
)
from .sharding import (
    HloSharding,
    HloShardingError,
    HloShardingParseError,
    OpMetadata,
    ShardGroup,
    ShardingValidationError,
)
from .static_ring import is_custom_call_loading_param, unpack_nested_static_ring_transfers
from .tile_assignment import TileAssignment

__all__ = [
    "ARCHS",
    "ARCH_ALIASES",
    "AWS_NEURON_CUSTOM_CALL_TARGETS",
    "COLLECTIVE_MATMUL",
    "LNC_SHARDING_CONSTRAINT",
    "STEP_KINDS",
    "TRANSFER_WITH_STATIC_RING",
    "CustomCallCheckError",
    "CustomCallPartitioner",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "LoweredHlo",
    "NothingToLowerError",
    "HLO_SUFFIXES",
    "is_hlo_path",
    "lower_hlo_file",
    "lower_hlo_text",
    "HloOperand",
    "HloParseError",
    "HloShape",
    "HloSharding",
    "HloShardingError",
    "HloShardingParseError",
    "LNCShardingConstraintPartitioner",
    "LoweringError",
    "OpMetadata",
    "ReshardError",
    "ReshardPlan",
    "ReshardStep",
    "ShardGroup",
    "ShardingValidationError",
    "TileAssignment",
    "all_to_all_source_target_dims",
    "can_reshard_with_collective_permute",
    "canonical_arch",
    "check_custom_call",
    "custom_call_cost",
    "digit_linear_fit",
    "get_custom_call_partitioner",
    "handle_custom_call",
    "is_custom_call_loading_param",
    "logical_nc_config",
    "is_partitioned",
    "lower_partitioned",
    "lower_partitioned_json",
    "lower_partitioned_text",
    "lower_to_symbolic",
    "lower_to_symbolic_json",
    "supported_ops",
    "make_pass_options",
    "offset_expression",
    "plan_default_action",
    "plan_reshard",
    "print_lnc_sharding_constraint",
    "register_custom_call_partitioner",
    "registered_targets",
    "reset_custom_call_partitioners",
    "unpack_nested_static_ring_transfers",
]
