"""Attribute values, literals and replica groups as XLA prints them (notes xla-hlo-text §5–8)."""

from __future__ import annotations

import numpy as np
import pytest
from lncsplit.frontend.hlo_attrs import (
    HloAttributeError,
    computation_ref,
    int_list,
    int_lists,
    padding_config,
    slice_spec,
)
from lncsplit.frontend.literal import LiteralError, bf16_round, parse_literal
from lncsplit.frontend.replica_groups import ReplicaGroupsError, expand_replica_groups


def test_attribute_values() -> None:
    assert int_list("{2,0,1}") == [2, 0, 1] and int_list("{}") == []
    assert int_lists("{{0,1},{2,3}}") == [[0, 1], [2, 3]]
    assert slice_spec("{[0:8:1], [1:7:1], [0:8:2]}") == [(0, 8, 1), (1, 7, 1), (0, 8, 2)]
    assert slice_spec("{[1:4], [0:32]}") == [(1, 4, 1), (0, 32, 1)]
    assert padding_config("0_0_0x1_1_0x-1_2_1") == [(0, 0, 0), (1, 1, 0), (-1, 2, 1)]
    assert padding_config("2_3") == [(2, 3, 0)]
    assert computation_ref("%region_0.0") == "region_0.0"
    for bad in (lambda: int_list("1,0"), lambda: slice_spec("{[1]}"), lambda: padding_config("1")):
        with pytest.raises(HloAttributeError):
            bad()


@pytest.mark.parametrize(
    ("text", "n", "groups"),
    [
        ("{{0,1},{2,3}}", 4, [[0, 1], [2, 3]]),
        ("{{0,1,2,3}}", 4, [[0, 1, 2, 3]]),
        ("{}", 3, [[0, 1, 2]]),
        ("[2,2]<=[4]", 4, [[0, 1], [2, 3]]),
        ("[1,2]<=[2]", 2, [[0, 1]]),
        ("[2,2]<=[2,2]T(1,0)", 4, [[0, 2], [1, 3]]),
        ("mesh['axis_0'=2,'axis_1'=1,'axis_2'=2] {'axis_0'}", 4, [[0, 2], [1, 3]]),
        ("mesh['axis_0'=1,'axis_1'=2] {'axis_1'}", 2, [[0, 1]]),
        ("mesh['axis_0'=4,'axis_1'=1] {'axis_0'}", 4, [[0, 1, 2, 3]]),
        ("mesh['axis_0'=2,'axis_1'=2], device_ids=([2,2]T(1,0)) {'axis_0'}", 4, [[0, 1], [2, 3]]),
        ("mesh['axis_0'=4,'axis_1'=1], device_ids=([2,2]T(1,0)) {'axis_0'}", 4, [[0, 2, 1, 3]]),
        ("mesh['a'=2,'b'=2], device_ids=(3,2,1,0) {'b'}", 4, [[3, 2], [1, 0]]),
        ("mesh['a'=4] {'a':(1)2}", 4, [[0, 1], [2, 3]]),
        ("mesh['a'=4] {'a':(2)2}", 4, [[0, 2], [1, 3]]),
        ("mesh['a'=2,'b'=2] {}", 4, [[0], [1], [2], [3]]),
    ],
)
def test_replica_groups_in_every_form_xla_prints(
    text: str, n: int, groups: list[list[int]]
) -> None:
    assert expand_replica_groups(text, n) == groups


@pytest.mark.parametrize(
    ("text", "n"),
    [
        ("{{0,1},{2}}", 3),
        ("{{0,1}}", 4),
        ("mesh['a'=2] {'c'}", 2),
        ("maximal_mesh[device_id=0]", 1),
    ],
)
def test_replica_groups_that_do_not_split_the_devices_are_an_error(text: str, n: int) -> None:
    with pytest.raises(ReplicaGroupsError):
        expand_replica_groups(text, n)


def test_literals() -> None:
    assert parse_literal("1e-05", "f32", ()).item() == np.float32(1e-05)
    assert np.isneginf(parse_literal("-inf", "f32", ()))
    assert parse_literal("true", "pred", ()).item() is True
    np.testing.assert_array_equal(parse_literal("{0, 4, 8, 12}", "s32", (4,)), [0, 4, 8, 12])
    np.testing.assert_array_equal(
        parse_literal("{ { 1, 2 }, { 3, 4 } }", "f32", (2, 2)), [[1, 2], [3, 4]]
    )
    np.testing.assert_array_equal(parse_literal("{ {0}, {-3} }", "s32", (2, 1)), [[0], [-3]])
    b = parse_literal("{ -0.9688, 0.3965 }", "bf16", (2,))
    np.testing.assert_array_equal(b, bf16_round(np.array([-0.96875, 0.396484375])))
    with pytest.raises(LiteralError, match="xla_dump_large_constants"):
        parse_literal("{...}", "f32", (100,))
    with pytest.raises(LiteralError, match="needs 4 values"):
        parse_literal("{1, 2}", "f32", (4,))
