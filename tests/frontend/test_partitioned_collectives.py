"""The collectives as CollectiveCompute (contract §3.9, part 2): each core's result is XLA's —
every core holds x + its partition id, and the ROOT is tiled so that core c's result is
``out0``'s c-th block — after §3.6's lower_local_collectives on the split cores, on the symbolic
module, and by the reference interpreter."""

from __future__ import annotations

import json

import numpy as np
import pytest
from lncsplit.frontend import LoweringError
from lncsplit.frontend.partitioned import lower_partitioned_json
from lncsplit.frontend.partitioned.collectives import complete_permutation
from partitioned_helpers import before_for, hlo, pipeline, rng_array, run

ADD = "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %c = f32[] add(%a, %b)\n}\n"
MAX = ADD.replace("%add", "%max").replace("add(%a", "maximum(%a")
MIN = ADD.replace("%add", "%min").replace("add(%a", "minimum(%a")


def _per_core(n: int, dims: tuple[int, ...], line: str, out: tuple[int, ...]) -> tuple[str, str]:
    """``x + partition_id`` on every core, then ``line`` (producing %r of shape ``out``); the
    ROOT's tiles along a new leading block are the cores' results."""
    s = ",".join(map(str, dims))
    after = hlo(
        [f"f32[{s}]"],
        [
            "%pid = u32[] partition-id()",
            "%f = f32[] convert(%pid)",
            f"%b = f32[{s}] broadcast(%f), dimensions={{}}",
            f"%x = f32[{s}] add(%p0, %b)",
            line,
        ],
        n=n,
        extra=ADD + MAX + MIN,
    )
    glob = (n * out[0], *out[1:])
    tiling = ",".join([str(n)] + ["1"] * (len(out) - 1))
    before = before_for(after, f"f32[{','.join(map(str, glob))}]", f"{{devices=[{tiling}]<=[{n}]}}")
    return after, before


def _results(after: str, before: str, x: np.ndarray, n: int) -> list[np.ndarray]:
    (got,) = run(after, [x], before=before, n=n)
    return np.split(got, n)


def _xs(x: np.ndarray, n: int) -> list[np.ndarray]:
    return [x + np.float32(c) for c in range(n)]


@pytest.mark.parametrize(
    ("groups_text", "groups"),
    [
        ("{{0,1,2,3}}", [[0, 1, 2, 3]]),
        ("{{0,1},{2,3}}", [[0, 1], [2, 3]]),
        ("[2,2]<=[2,2]T(1,0)", [[0, 2], [1, 3]]),
        ("mesh['axis_0'=2,'axis_1'=2] {'axis_0'}", [[0, 2], [1, 3]]),
        ("mesh['axis_0'=2,'axis_1'=2], device_ids=([2,2]T(1,0)) {'axis_0'}", [[0, 1], [2, 3]]),
    ],
)
@pytest.mark.parametrize(("reducer", "f"), [("add", np.sum), ("max", np.max), ("min", np.min)])
def test_all_reduce_over_every_replica_group_form(
    groups_text: str, groups: list[list[int]], reducer: str, f: object
) -> None:
    n = 4
    line = f"%r = f32[4,8] all-reduce(%x), channel_id=1, replica_groups={groups_text}, use_global_device_ids=true, to_apply=%{reducer}"
    after, before = _per_core(n, (4, 8), line, (4, 8))
    doc = lower_partitioned_json(after, before=before)
    cc = [
        i
        for i in doc["functions"][0]["basic_blocks"][0]["instructions"]
        if i["opcode"] == "CollectiveCompute"
    ]
    assert [c["cc_channel"] for c in cc] == [
        {"kind": "AllReduce", "replica_groups": groups, "op": reducer}
    ]
    x = rng_array((4, 8), "f32", 1)
    xs = _xs(x, n)
    got = _results(after, before, x, n)
    for g in groups:
        want = f(np.stack([xs[c] for c in g]), axis=0)  # type: ignore[operator]
        for c in g:
            np.testing.assert_allclose(got[c], want, rtol=1e-6)


def test_all_reduce_of_a_small_vector_is_lowered_by_gather_and_reduce() -> None:
    line = "%r = f32[3] all-reduce(%x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add"
    after, before = _per_core(2, (3,), line, (3,))
    x = rng_array((3,), "f32", 2)
    got = _results(after, before, x, 2)
    for c in range(2):
        np.testing.assert_allclose(got[c], 2 * x + 1, rtol=1e-6)


@pytest.mark.parametrize("d", [0, 1])
def test_all_gather_along_any_dim(d: int) -> None:
    n = 4
    dims = (2, 3)
    out = (dims[0] * n, dims[1]) if d == 0 else (dims[0], dims[1] * n)
    line = f"%r = f32[{out[0]},{out[1]}] all-gather(%x), channel_id=1, replica_groups={{{{0,1,2,3}}}}, dimensions={{{d}}}, use_global_device_ids=true"
    after, before = _per_core(n, dims, line, out)
    x = rng_array(dims, "f32", 3)
    want = np.concatenate(_xs(x, n), axis=d)
    for r in _results(after, before, x, n):
        np.testing.assert_array_equal(r, want)


@pytest.mark.parametrize("d", [0, 1])
def test_reduce_scatter_along_any_dim(d: int) -> None:
    n = 2
    dims = (4, 6)
    out = (2, 6) if d == 0 else (4, 3)
    line = f"%r = f32[{out[0]},{out[1]}] reduce-scatter(%x), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, dimensions={{{d}}}, to_apply=%add"
    after, before = _per_core(n, dims, line, out)
    x = rng_array(dims, "f32", 4)
    total = sum(_xs(x, n))
    for c, r in enumerate(_results(after, before, x, n)):
        np.testing.assert_allclose(r, np.split(total, n, axis=d)[c], rtol=1e-6)


@pytest.mark.parametrize("d", [0, 1])
def test_all_to_all_along_any_dim(d: int) -> None:
    n = 4
    dims = (4, 8)
    line = f"%r = f32[4,8] all-to-all(%x), channel_id=1, replica_groups={{{{0,1,2,3}}}}, dimensions={{{d}}}"
    after, before = _per_core(n, dims, line, dims)
    x = rng_array(dims, "f32", 5)
    xs = _xs(x, n)
    for c, r in enumerate(_results(after, before, x, n)):
        want = np.concatenate([np.split(xs[j], n, axis=d)[c] for j in range(n)], axis=d)
        np.testing.assert_array_equal(r, want)


@pytest.mark.parametrize(
    "pairs",
    [
        [(0, 1), (1, 2), (2, 3), (3, 0)],
        [(1, 0), (2, 1), (3, 2)],
        [(0, 0), (2, 1), (1, 2), (3, 3)],
        [(0, 2)],
    ],
)
def test_collective_permute_cyclic_or_not_leaves_zeros_where_nothing_is_sent(
    pairs: list[tuple[int, int]],
) -> None:
    n = 4
    text = "{" + ",".join(f"{{{s},{t}}}" for s, t in pairs) + "}"
    line = f"%r = f32[2,3] collective-permute(%x), channel_id=2, source_target_pairs={text}"
    after, before = _per_core(n, (2, 3), line, (2, 3))
    x = rng_array((2, 3), "f32", 6)
    xs = _xs(x, n)
    sender = {t: s for s, t in pairs}
    for c, r in enumerate(_results(after, before, x, n)):
        want = xs[sender[c]] if c in sender else np.zeros_like(x)
        np.testing.assert_array_equal(r, want)


def test_a_partial_permutation_is_completed_into_one() -> None:
    send, recv, silent = complete_permutation([(1, 0), (2, 1), (3, 2)], 4)
    assert send == [3, 0, 1, 2] and recv == [1, 2, 3, 0] and silent == [3]
    assert all(recv[send[c]] == c for c in range(4))


def test_collectives_pass_the_default_pipeline_race_free() -> None:
    body = [
        "%a = f32[4,8] all-reduce(%x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add",
        "%g = f32[8,8] all-gather(%a), channel_id=2, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true",
        "%p = f32[8,8] collective-permute(%g), channel_id=3, source_target_pairs={{0,1},{1,0}}",
        "%r = f32[4,8] reduce-scatter(%p), channel_id=4, replica_groups={{0,1}}, use_global_device_ids=true, dimensions={0}, to_apply=%max",
    ]
    after, before = _per_core(2, (4, 8), "\n  ".join(body), (4, 8))
    cores = pipeline(after, before=before, n=2)
    kinds = [json.loads(c.to_json())["functions"][0] for c in cores]
    assert len(kinds) == 2


def test_a_collective_without_channel_id_or_with_groups_that_do_not_split_the_cores_is_an_error() -> (
    None
):
    line = "%r = f32[2] all-reduce(%x), replica_groups={{0,1}}, to_apply=%add"
    after, _ = _per_core(2, (2,), line, (2,))
    with pytest.raises(LoweringError, match="no channel_id"):
        lower_partitioned_json(after)
    line = "%r = f32[2] all-reduce(%x), channel_id=1, replica_groups={{0,1},{2}}, use_global_device_ids=true, to_apply=%add"
    after, _ = _per_core(4, (2,), line, (2,))
    with pytest.raises(LoweringError, match=r"%r \(line \d+\): all-reduce: replica_groups"):
        lower_partitioned_json(after)
