"""HloSharding text format: round trips, normalizations, exact parse errors (notes §1.1-1.2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit.frontend import HloSharding, HloShardingParseError, TileAssignment

P = HloSharding.parse


@pytest.mark.parametrize(
    "text",
    [
        "{replicated}",
        "{manual}",
        "{unknown}",
        "{unreduced}",
        "{maximal device=3}",
        "{devices=[2,2]0,2,1,3}",
        "{devices=[8,1]<=[8]}",
        "{devices=[4,2]<=[2,4]T(1,0)}",
        "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
        "{devices=[2,2]<=[4] last_tile_dims={manual}}",
        "{devices=[2,2,2]<=[8] last_tile_dims={manual, replicated}}",
        "{replicated shard_as 3}",
        "{devices=[2]0,1 shard_like 1}",
        '{replicated metadata={op_name="a"}}',
        '{devices=[2]0,1 metadata={{op_name="b"}, {op_name="c"}}}',
        "{}",
        "{{replicated}, {maximal device=0}}",
    ],
)
def test_round_trip_prints_stably(text: str) -> None:
    s = P(text)
    full = s.to_string(include_metadata=True)
    assert full == text
    assert P(full) == s
    assert P(full).to_string(include_metadata=True) == full
    assert str(P(str(s))) == str(s)


def test_str_prints_metadata_only_when_asked_like_xla_to_string() -> None:
    # XLA: HloSharding::ToString(bool include_metadata = false) (notes §1.2).
    s = P('{devices=[2]0,1 shard_as 2 metadata={op_name="b"}}')
    assert str(s) == "{devices=[2]0,1 shard_as 2}"
    assert s.to_string() == str(s)
    assert (
        s.to_string(include_metadata=True) == '{devices=[2]0,1 shard_as 2 metadata={op_name="b"}}'
    )
    assert repr(s) == """HloSharding.parse('{devices=[2]0,1 shard_as 2 metadata={op_name="b"}}')"""
    t = P('{{replicated metadata={op_name="a"}}, {manual}}')
    assert str(t) == "{{replicated}, {manual}}"
    assert t.to_string(include_metadata=True) == '{{replicated metadata={op_name="a"}}, {manual}}'


def test_tuple_prints_index_comment_before_every_fifth_element() -> None:
    text = "{{replicated}, {manual}, {unknown}, {replicated}, {replicated}, {maximal device=1}}"
    s = P(text)
    assert str(s) == (
        "{{replicated}, {manual}, {unknown}, {replicated}, {replicated}, "
        "/*index=5*/{maximal device=1}}"
    )
    assert P(str(s)) == s
    assert len(s.tuple_elements) == 6 and s.is_tuple


def test_empty_tuple_prints_braces() -> None:
    s = P("{}")
    assert s.is_tuple and s.tuple_elements == () and str(s) == "{}"


def test_items_in_any_order() -> None:
    assert str(P("{last_tile_dim_replicate devices=[2,2]<=[4]}")) == (
        "{devices=[2,2]<=[4] last_tile_dim_replicate}"
    )
    assert str(P("{device=2 maximal}")) == "{maximal device=2}"


def test_flag_precedence_replicated_beats_maximal_and_manual() -> None:
    assert P("{manual replicated}").is_replicated
    assert P("{maximal device=1 manual}").kind == "maximal"
    assert P("{unknown manual}").is_manual
    assert P("{unreduced unknown}").is_unknown


def test_metadata_fields_print_in_xla_order() -> None:
    s = P('{replicated metadata={source_line=3 op_name="n" op_type="t" source_file="f.py"}}')
    assert s.to_string(include_metadata=True) == (
        '{replicated metadata={op_type="t" op_name="n" source_file="f.py" source_line=3}}'
    )
    assert s.to_string(include_metadata=False) == "{replicated}"
    assert s == P("{replicated}")  # metadata is not part of equality


def test_shard_group_is_part_of_equality() -> None:
    assert P("{replicated shard_as 1}") != P("{replicated}")
    assert P("{replicated shard_as 1}") != P("{replicated shard_like 1}")
    assert P("{replicated shard_as 1}").shard_group is not None


# -- normalization rule 1: list stays list, iota stays iota; equality by materialized array -------
def test_list_and_iota_equal_but_print_differently() -> None:
    a, b = P("{devices=[2,2]0,1,2,3}"), P("{devices=[2,2]<=[4]}")
    assert a == b and hash(a) == hash(b)
    assert str(a) == "{devices=[2,2]0,1,2,3}"
    assert str(b) == "{devices=[2,2]<=[4]}"


def test_transposed_iota_equals_list() -> None:
    assert P("{devices=[2,2,2]<=[2,2,2]T(2,0,1)}") == P("{devices=[2,2,2]0,2,4,6,1,3,5,7}")


# -- rule 2: iota canonicalization ----------------------------------------------------------------
def test_iota_identity_perm_merges_to_single_dim() -> None:
    assert str(P("{devices=[2,6]<=[3,4]T(0,1)}")) == "{devices=[2,6]<=[12]}"
    ta = TileAssignment.iota([2, 6], [3, 4], [0, 1])
    assert ta.reshape_dims == (12,) and ta.transpose_perm == (0,)


def test_iota_size_one_dims_dropped_and_runs_merged() -> None:
    ta = TileAssignment.iota([3, 4, 5], [1, 3, 1, 4, 1, 5], [4, 3, 2, 5, 1, 0])
    assert ta.reshape_dims == (3, 20) and ta.transpose_perm == (1, 0)
    assert str(P("{devices=[60]<=[1,3,1,4,1,5]T(4,3,2,5,1,0)}")) == ("{devices=[60]<=[3,20]T(1,0)}")


def test_iota_real_transpose_kept() -> None:
    assert str(P("{devices=[4,2]<=[2,4]T(1,0)}")) == "{devices=[4,2]<=[2,4]T(1,0)}"


# -- rule 3: last_tile_dim_replicate (PartialTile) ------------------------------------------------
def test_partial_tile_groups_sorted() -> None:
    s = P("{devices=[2,2]1,0,3,2 last_tile_dim_replicate}")
    assert str(s) == "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}"


def test_partial_tile_rank1_is_replicated() -> None:
    assert str(P("{devices=[4]0,1,2,3 last_tile_dim_replicate}")) == "{replicated}"


def test_partial_tile_last_dim_all_devices_is_replicated() -> None:
    assert str(P("{devices=[1,4]<=[4] last_tile_dim_replicate}")) == "{replicated}"


def test_partial_tile_last_dim_one_dropped() -> None:
    assert str(P("{devices=[4,1]<=[4] last_tile_dim_replicate}")) == "{devices=[4]<=[4]}"
    assert str(P("{devices=[2,1]1,0 last_tile_dim_replicate}")) == "{devices=[2]1,0}"


def test_partial_tile_iota_kept_when_minor_dim_is_group() -> None:
    s = P("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}")
    assert str(s) == "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"


def test_partial_tile_iota_regrouped_sorted() -> None:
    s = P("{devices=[2,4]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}")
    assert str(s) == "{devices=[2,4]<=[8] last_tile_dim_replicate}"


# -- rule 4: last_tile_dims (Subgroup) ------------------------------------------------------------
def test_last_tile_dims_replicated_only_prints_as_last_tile_dim_replicate() -> None:
    s = P("{devices=[2,1,2]0,1,2,3 last_tile_dims={replicated}}")
    assert str(s) == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"


def test_last_tile_dims_types_sorted_replicated_last() -> None:
    s = P("{devices=[2,2,2]<=[8] last_tile_dims={replicated, manual}}")
    assert s.subgroup_types == ("manual", "replicated")
    assert str(s) == "{devices=[2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, replicated}}"


def test_last_tile_dims_size_one_removed_and_same_types_merged() -> None:
    s = P("{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated, replicated}}")
    assert str(s) == "{devices=[2,4]<=[8] last_tile_dim_replicate}"
    s2 = P("{devices=[2,2,2]<=[8] last_tile_dims={manual, manual}}")
    assert str(s2) == "{devices=[2,4]<=[8] last_tile_dims={manual}}"


def test_last_tile_dims_trivial_data_is_manual_or_replicated() -> None:
    assert str(P("{devices=[1,1,4]<=[4] last_tile_dims={manual}}")) == "{manual}"
    assert str(P("{devices=[1,4]<=[4] last_tile_dims={replicated}}")) == "{replicated}"
    assert str(P("{devices=[1,4]<=[4] last_tile_dims={unreduced}}")) == "{unreduced}"


# -- parse errors (exact XLA text) ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{replicated device=0}", "replicated shardings should not have any devices assigned"),
        ("{maximal}", "maximal shardings should have exactly one device assigned"),
        ("{maximal devices=[2]0,1}", "maximal shardings should have exactly one device assigned"),
        ("{manual device=0}", "manual shardings should not have any devices assigned"),
        ("{unknown device=0}", "unknown shardings should not have any devices assigned"),
        ("{unreduced device=0}", "unreduced shardings should not have any devices assigned"),
        (
            "{last_tile_dim_replicate}",
            "non-maximal shardings must have a tile assignment list including dimensions",
        ),
        ("{devices=[1]0}", "non-maximal shardings must have more than one device assigned"),
        (
            "{foo=1}",
            "unknown attribute in sharding: expected device=, devices= metadata= or "
            "last_tile_dims= ",
        ),
        ("{bogus}", "unexpected token"),
        ("{devices=[2,2]<=[2,2]}", "expected 'T(' to start sharding devices iota_transpose_perm"),
        (
            "{devices=[2,2]<=[2,2]T(0,2)}",
            "Out of range iota minor_to_major value 2, expecting value in range [0, 2)",
        ),
        (
            "{devices=[2,2,2]<=[2,4]T(-1,0)}",
            "Out of range iota minor_to_major value -1, expecting value in range [0, 2)",
        ),
        ("{devices=[2,2]<=2,2}", "expected '[' to start sharding iota_reshape_dims"),
        ("{devices=[2,2]<=[2,2}", "expected ']' to end sharding iota_reshape_dims"),
        (
            "{devices=[2,2]<=[2,2]T[0,1]}",
            "expected 'T(' to start sharding devices iota_transpose_perm",
        ),
        ("{devices=[2,2]<=[2,2]T(1,0}", "expected ')' to end sharding devices iota_transpose_perm"),
        ("{devices=[2,2]<=[2,2]T(1,)}", "expects integer"),
        (
            "{devices=[2,2]<=[2,2]T(0)}",
            "iota_transpose_perm should have the same rank as iota_reshape_dims : "
            "expected 2, saw 1.",
        ),
        ("{devices=2,2]<=[4]}", "expected '[' to start sharding devices shape"),
        ("{devices=[2,2<=[4]}", "expected ']' to end sharding devices shape"),
        ("replicated", "expected '{' to start sharding attribute"),
        ("{{replicated} {manual}}", "expected '}' to end sharding attribute"),
    ],
)
def test_parse_error_exact_message(text: str, message: str) -> None:
    with pytest.raises(HloShardingParseError) as ei:
        P(text)
    assert str(ei.value) == message


def test_parse_error_is_value_error() -> None:
    with pytest.raises(ValueError):
        P("{maximal}")


def test_nested_tuple_leaf_rejected() -> None:
    with pytest.raises(HloShardingParseError):
        P("{{{replicated}}}")


# -- property: random shardings round trip --------------------------------------------------------
def _factorizations(n: int, k: int) -> list[list[int]]:
    if k == 1:
        return [[n]]
    out = []
    for d in range(1, n + 1):
        if n % d == 0:
            out += [[d] + rest for rest in _factorizations(n // d, k - 1)]
    return out


@st.composite
def sharding_texts(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["replicated", "maximal", "manual", "list", "iota", "tuple"]))
    if kind == "replicated":
        return "{replicated}"
    if kind == "manual":
        return "{manual}"
    if kind == "maximal":
        return f"{{maximal device={draw(st.integers(0, 7))}}}"
    if kind == "tuple":
        n = draw(st.integers(0, 7))
        leaves = [
            draw(sharding_texts().filter(lambda t: not t.startswith("{{") and t != "{}"))
            for _ in range(n)
        ]
        return "{" + ", ".join(leaves) + "}"
    n = draw(st.sampled_from([2, 4, 6, 8, 12]))
    rank = draw(st.integers(1, 3))
    dims = draw(st.sampled_from(_factorizations(n, rank)))
    suffix = draw(st.sampled_from(["", " last_tile_dim_replicate", " last_tile_dims={manual}"]))
    if kind == "list":
        perm = draw(st.permutations(list(range(n))))
        body = ",".join(map(str, perm))
    else:
        rk = draw(st.integers(1, 3))
        reshape = draw(st.sampled_from(_factorizations(n, rk)))
        if rk == 1:
            body = f"<=[{n}]"
        else:
            tp = draw(st.permutations(list(range(rk))))
            body = "<=[" + ",".join(map(str, reshape)) + "]T(" + ",".join(map(str, tp)) + ")"
    return "{devices=[" + ",".join(map(str, dims)) + "]" + body + suffix + "}"


@settings(max_examples=300, deadline=None)
@given(sharding_texts())
def test_property_parse_print_round_trip(text: str) -> None:
    s = P(text)
    printed = str(s)
    again = P(printed)
    assert again == s
    assert str(again) == printed


@settings(max_examples=300, deadline=None)
@given(sharding_texts())
def test_property_normalization_keeps_device_to_tile_mapping(text: str) -> None:
    s = P(text)
    if not s.is_tiled or s.subgroup_types:
        return
    import numpy as np

    arr = np.asarray(s.tile_assignment)
    assert sorted(arr.reshape(-1).tolist()) == list(range(arr.size))
    # the materialized array of the printed form is the same
    assert np.array_equal(P(str(s)).tile_assignment, arr)
