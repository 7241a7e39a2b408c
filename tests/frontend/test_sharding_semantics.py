"""HloSharding semantics: device arrays, tile indices, offsets/limits, validate (notes §1.3)."""

from __future__ import annotations

import numpy as np
import pytest
from lncsplit.frontend import HloSharding, HloShardingError, ShardingValidationError

P = HloSharding.parse


def test_iota_array_4x2_is_row_major() -> None:
    assert P("{devices=[4,2]<=[8]}").tile_assignment.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_transposed_iota_array() -> None:
    a = P("{devices=[4,2]<=[2,4]T(1,0)}").tile_assignment
    assert isinstance(a, np.ndarray)
    assert a.tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_uneven_u32_13_over_6_offsets_and_limits() -> None:
    s = P("{devices=[6]<=[6]}")
    got = [
        (s.tile_offset_for_device([13], d)[0], s.tile_limit_for_device([13], d)[0])
        for d in range(6)
    ]
    assert got == [(0, 3), (3, 6), (6, 9), (9, 12), (12, 13), (13, 13)]
    assert s.partitioned_shape([13]) == (3,)
    assert s.tile_shape([13], 5) == (0,)


def test_uneven_f32_9x2_over_two_devices() -> None:
    s = P("{devices=[2,1]0,1}")
    assert s.partitioned_shape([9, 2]) == (5, 2)
    assert s.tile_offset_for_device([9, 2], 1) == (5, 0)
    assert s.tile_limit_for_device([9, 2], 1) == (9, 2)
    assert s.tile_shape([9, 2], 0) == (5, 2)


def test_tile_index_and_device_for_tile_index() -> None:
    s = P("{devices=[4,2]<=[2,4]T(1,0)}")
    assert s.tile_index_for_device(5) == (1, 1)
    assert s.device_for_tile_index((3, 0)) == 3
    for d in range(8):
        assert s.device_for_tile_index(s.tile_index_for_device(d)) == d


def test_tile_index_drops_replicated_dim() -> None:
    s = P("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}")
    assert s.tile_index_for_device(3) == (1, 0)
    assert s.tiled_data_rank == 2
    assert s.device_for_tile_index((1, 0)) == 2  # first member of the group
    assert s.tile_offset_for_device([8, 8], 3) == (4, 0)


def test_num_tiles_and_total_num_tiles() -> None:
    s = P("{devices=[2,1,4]<=[8] last_tile_dim_replicate}")
    assert s.num_tiles == 2 and s.total_num_tiles == 8
    assert P("{replicated}").num_tiles == 1
    assert P("{maximal device=2}").num_tiles == 1
    with pytest.raises(HloShardingError):
        _ = P("{manual}").num_tiles


def test_predicates() -> None:
    assert P("{replicated}").is_replicated and P("{replicated}").is_tile_maximal
    assert P("{maximal device=1}").is_tile_maximal and not P("{maximal device=1}").is_replicated
    assert P("{manual}").is_manual and not P("{manual}").is_tile_maximal
    assert P("{{replicated}, {manual}}").is_tuple
    assert not P("{devices=[2]0,1}").is_tile_maximal


def test_maximal_and_replicated_cover_whole_shape() -> None:
    for t in ("{replicated}", "{maximal device=1}"):
        s = P(t)
        assert s.tile_offset_for_device([7, 3], 0) == (0, 0)
        assert s.tile_limit_for_device([7, 3], 1) == (7, 3)
    assert P("{maximal device=1}").device_for_tile_index(()) == 1


def test_tile_index_rejects_replicated_and_tuple() -> None:
    with pytest.raises(HloShardingError):
        P("{replicated}").tile_index_for_device(0)
    with pytest.raises(HloShardingError):
        P("{{replicated}}").tile_offset_for_device([2], 0)


def test_validate_ok() -> None:
    P("{devices=[2,2]0,2,1,3}").validate([4, 4], 4)
    P("{devices=[2,1,2]<=[4] last_tile_dim_replicate}").validate([4, 4], 4)
    P("{replicated}").validate([3], 2)
    P("{{replicated}, {devices=[2]0,1}}").validate([[3], [4]], 2)


@pytest.mark.parametrize(
    ("text", "shape", "n", "fragment"),
    [
        ("{devices=[2,2]0,1,2,3}", [4], 4, "Number of tile assignment dimensions"),
        ("{devices=[2]0,4}", [4], 4, "device 4 >= num_devices (4)"),
        ("{devices=[2]0,-1}", [4], None, "device -1 is negative"),
        ("{devices=[2]1,1}", [4], None, "device 1 is not unique in tile assignment"),
        ("{devices=[2]0,1}", [4], 4, "tile_assignment should have 4 devices but has 2"),
        ("{devices=[4]<=[4]}", [4], 8, "tile_assignment should have 8 devices but has 4"),
        ("{maximal device=5}", [4], 4, "device 5 >= num_devices (4)"),
        ("{devices=[1]<=[1]}", [4], None, "Tile assignment only contains a single device"),
    ],
)
def test_validate_failures(text: str, shape: list[int], n: int | None, fragment: str) -> None:
    with pytest.raises(ShardingValidationError) as ei:
        P(text).validate(shape, n)
    assert fragment in str(ei.value)


def test_validate_tuple_leaf_count() -> None:
    with pytest.raises(ShardingValidationError):
        P("{{replicated}, {replicated}}").validate([[3]], 1)
