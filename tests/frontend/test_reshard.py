"""The reshard planner picks XLA's collective in the order of xla-sharding-notes §3."""

from __future__ import annotations

import pytest
from lncsplit.frontend import (
    HloSharding,
    ReshardError,
    all_to_all_source_target_dims,
    plan_reshard,
)
from lncsplit.frontend.reshard import STEP_KINDS, plan_default_action

P = HloSharding.parse


def test_unchanged_when_equal() -> None:
    plan = plan_reshard(P("{devices=[2,2]0,1,2,3}"), P("{devices=[2,2]<=[4]}"), [8, 8])
    assert plan.path == "unchanged" and plan.kinds == ["none"]


def test_collective_permute_pairs_row_major_with_identity_pairs() -> None:
    plan = plan_reshard(P("{devices=[2,2]0,1,2,3}"), P("{devices=[2,2]0,2,1,3}"), [8, 8])
    assert plan.path == "collective-permute"
    assert plan.kinds == ["collective-permute"]
    assert plan.steps[0].pairs == [(0, 0), (1, 2), (2, 1), (3, 3)]


def test_collective_permute_with_partial_replication() -> None:
    src = P("{devices=[2,2]0,1,2,3 last_tile_dim_replicate}")
    tgt = P("{devices=[2,2]2,3,0,1 last_tile_dim_replicate}")
    plan = plan_reshard(src, tgt, [4])
    assert plan.kinds == ["collective-permute"]
    assert plan.steps[0].pairs == [(0, 2), (1, 3), (2, 0), (3, 1)]


def test_all_to_all_dims_2x1_to_1x2() -> None:
    assert all_to_all_source_target_dims(P("{devices=[2,1]0,1}"), P("{devices=[1,2]0,1}")) == [
        (0, 1)
    ]
    plan = plan_reshard(P("{devices=[2,1]0,1}"), P("{devices=[1,2]0,1}"), [8, 8])
    assert plan.path == "all-to-all"
    assert plan.kinds == ["all-to-all"]
    assert plan.steps[0].dims == (0, 1)
    assert plan.steps[0].replica_groups == [[0, 1]]


def test_all_to_all_followed_by_permute_when_order_differs() -> None:
    plan = plan_reshard(P("{devices=[2,1]0,1}"), P("{devices=[1,2]1,0}"), [8, 8])
    assert plan.kinds == ["all-to-all", "collective-permute"]
    assert plan.steps[-1].pairs == [(0, 1), (1, 0)]


def test_all_to_all_pairing_algorithm_three_dims() -> None:
    # sizes differ on dims 0 and 2: source {4,1}, target {1,4}
    src, tgt = P("{devices=[4,2,1]<=[8]}"), P("{devices=[1,2,4]<=[8]}")
    assert all_to_all_source_target_dims(src, tgt) == [(0, 2)]
    # chained swaps: the size-1 dim moves 0 -> 1 -> 2 (hand-traced through the algorithm)
    src2, tgt2 = P("{devices=[1,2,4]<=[8]}"), P("{devices=[2,4,1]<=[8]}")
    assert all_to_all_source_target_dims(src2, tgt2) == [(1, 0), (2, 1)]


def test_all_to_all_none_when_multisets_differ() -> None:
    src, tgt = P("{devices=[2,2]<=[4]}"), P("{devices=[4,1]<=[4]}")
    assert all_to_all_source_target_dims(src, tgt) is None


def test_partial_replicate_dynamic_slice() -> None:
    src = P("{devices=[2,1,2]<=[4] last_tile_dim_replicate}")
    plan = plan_reshard(src, P("{devices=[2,2]<=[4]}"), [8, 8])
    assert plan.path == "partial-replicate-dynamic-slice"
    assert plan.kinds == ["dynamic-slice"]
    assert plan.steps[0].offsets == {0: (0, 0), 1: (0, 4), 2: (4, 0), 3: (4, 4)}


def test_partial_replicate_dynamic_slice_then_permute() -> None:
    src = P("{devices=[2,1,2]<=[4] last_tile_dim_replicate}")
    plan = plan_reshard(src, P("{devices=[2,2]0,2,1,3}"), [8, 8])
    assert plan.kinds == ["dynamic-slice", "collective-permute"]
    assert plan.steps[1].pairs == [(0, 0), (1, 2), (2, 1), (3, 3)]


def test_all_gather_to_partial_replicate() -> None:
    plan = plan_reshard(
        P("{devices=[2,2]<=[4]}"), P("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"), [8, 8]
    )
    assert plan.path == "all-gather-to-partial-replicate"
    assert plan.kinds == ["all-gather"]
    assert plan.steps[0].replica_groups == [[0, 1], [2, 3]]
    assert plan.steps[0].gather_dims == (1,)


def test_replicate_then_slice() -> None:
    plan = plan_reshard(P("{devices=[2,2]<=[4]}"), P("{devices=[4,1]<=[4]}"), [8, 8])
    assert plan.path == "replicate-then-slice"
    assert plan.kinds == ["replicate", "dynamic-slice"]
    assert plan.steps[0].method == "all-gather"
    assert plan.steps[1].offsets[3] == (6, 0)


def test_replicated_to_tiled_is_local_dynamic_slice() -> None:
    plan = plan_reshard(P("{replicated}"), P("{devices=[4]<=[4]}"), [13])
    assert plan.kinds == ["dynamic-slice"]
    assert plan.steps[0].offsets == {0: (0,), 1: (4,), 2: (8,), 3: (12,)}


def test_tiled_to_replicated_is_replicate() -> None:
    plan = plan_reshard(P("{devices=[4]<=[4]}"), P("{replicated}"), [16])
    assert plan.kinds == ["replicate"]


def test_maximal_source_broadcasts() -> None:
    plan = plan_reshard(P("{maximal device=1}"), P("{devices=[2]0,1}"), [8])
    assert plan.kinds == ["replicate", "dynamic-slice"]
    assert plan.steps[0].method == "broadcast"


def test_tuple_recurses_per_leaf() -> None:
    plan = plan_reshard(
        P("{{devices=[2]0,1}, {replicated}}"), P("{{devices=[2]1,0}, {replicated}}"), [[4], [2]]
    )
    assert plan.path == "tuple"
    assert [p.kinds for p in plan.leaf_plans] == [["collective-permute"], ["none"]]


def test_manual_not_modelled() -> None:
    with pytest.raises(ReshardError):
        plan_reshard(P("{manual}"), P("{replicated}"), [4])


def test_default_action_is_all_gather_then_dynamic_slice() -> None:
    plan = plan_default_action(P("{devices=[2]0,1}"), P("{devices=[2]1,0}"), [8])
    assert plan.kinds == ["replicate", "dynamic-slice"]
    assert plan.steps[0].method == "all-gather"


def test_step_kinds_are_documented() -> None:
    assert set(STEP_KINDS) == {
        "none",
        "collective-permute",
        "all-to-all",
        "dynamic-slice",
        "all-gather",
        "replicate",
    }
