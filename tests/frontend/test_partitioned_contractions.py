"""dot and reduce (contract §3.9, part 2): the PE and vector-engine sequences of docs/frontend.md
compute XLA's dot and reduce — run by the simulator on the split cores and on the symbolic
module, and by the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from bir_numpy_ref import bf16
from lncsplit.frontend import LoweringError
from lncsplit.frontend.partitioned import lower_partitioned_json
from partitioned_helpers import hlo, rng_array, run


def _instructions(text: str) -> list[dict]:
    return lower_partitioned_json(text)["functions"][0]["basic_blocks"][0]["instructions"]


def _shape(ty: str, dims: tuple[int, ...]) -> str:
    return f"{ty}[{','.join(map(str, dims))}]"


# ------------------------------------------------------------------------------ dot


@pytest.mark.parametrize(
    ("lhs", "rhs", "attrs", "einsum"),
    [
        ((16, 32), (32, 24), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "mk,kn->mn"),
        ((300, 40), (40, 20), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "mk,kn->mn"),
        ((8, 300), (300, 700), "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "mk,kn->mn"),
        ((40, 16), (24, 40), "lhs_contracting_dims={0}, rhs_contracting_dims={1}", "km,nk->mn"),
        (
            (3, 8, 16),
            (3, 16, 5),
            "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
            "bmk,bkn->bmn",
        ),
        (
            (2, 4, 6, 5),
            (4, 6, 2, 3),
            "lhs_batch_dims={0}, lhs_contracting_dims={1,2}, rhs_batch_dims={2}, rhs_contracting_dims={0,1}",
            "bpqm,pqbn->bmn",
        ),
        ((7,), (7, 9), "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "k,kn->n"),
    ],
)
def test_dot_with_any_batch_and_contracting_dims(
    lhs: tuple[int, ...], rhs: tuple[int, ...], attrs: str, einsum: str
) -> None:
    a, b = rng_array(lhs, "f32", 1), rng_array(rhs, "f32", 2)
    want = np.einsum(einsum, a.astype(np.float64), b.astype(np.float64))
    text = hlo(
        [_shape("f32", lhs), _shape("f32", rhs)],
        [f"%r = {_shape('f32', want.shape)} dot(%p0, %p1), {attrs}"],
    )
    ins = _instructions(text)
    mms = [i for i in ins if i["opcode"] == "Matmult"]
    for i in mms:
        k, m = i["ins"][0]["ap"][0][1], i["ins"][0]["ap"][1][1]
        n = i["ins"][1]["ap"][1][1]
        assert k <= 128 and m <= 128 and n <= 512 and i["contract"] is True
        assert i["outs"][0]["memsetref"].endswith(".acc")
    (got,) = run(text, [a, b])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_long_contraction_accumulates_its_k_tiles_in_psum() -> None:
    text = hlo(
        ["f32[4,300]", "f32[300,6]"],
        ["%r = f32[4,6] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"],
    )
    mms = [i for i in _instructions(text) if i["opcode"] == "Matmult"]
    assert [i.get("accumulate") for i in mms] == [None, "add", "add"]  # K = 128 + 128 + 44


def test_bf16_dot_and_a_mixed_bf16_f32_dot() -> None:
    a, b = bf16(rng_array((16, 32), "f32", 3)), bf16(rng_array((32, 8), "f32", 4))
    want = a.astype(np.float64) @ b.astype(np.float64)
    text = hlo(
        ["bf16[16,32]", "bf16[32,8]"],
        ["%r = bf16[16,8] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"],
    )
    (got,) = run(text, [a, b])
    np.testing.assert_allclose(got, bf16(want.astype(np.float32)), rtol=1e-2, atol=1e-2)
    text = hlo(
        ["bf16[16,32]", "f32[32,8]"],
        ["%r = f32[16,8] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"],
    )
    (got,) = run(text, [a, b])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_an_integer_dot_is_a_lowering_error() -> None:
    text = hlo(
        ["s32[4,4]", "s32[4,4]"],
        ["%r = s32[4,4] dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"],
    )
    with pytest.raises(LoweringError, match=r"%r \(line \d+\): dot: a dot of s32"):
        lower_partitioned_json(text)


# ------------------------------------------------------------------------------ reduce


def _region(name: str, op: str, ty: str = "f32") -> str:
    return (
        f"%{name} (a: {ty}[], b: {ty}[]) -> {ty}[] {{\n"
        f"  %a = {ty}[] parameter(0)\n  %b = {ty}[] parameter(1)\n"
        f"  ROOT %c = {ty}[] {op}(%a, %b)\n}}\n"
    )


REDUCERS = {"add": (np.sum, "0"), "maximum": (np.max, "-inf"), "minimum": (np.min, "inf")}


@pytest.mark.parametrize("op", sorted(REDUCERS))
@pytest.mark.parametrize(
    ("shape", "dims"),
    [
        ((6, 40), (1,)),
        ((40, 6), (0,)),
        ((4, 5, 6), (1,)),
        ((4, 5, 6), (0, 2)),
        ((3, 4, 5), (0, 1, 2)),
        ((300, 3), (0,)),
        ((2, 5000), (1,)),
    ],
)
def test_reduce_over_any_dims(op: str, shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
    f, init = REDUCERS[op]
    x = rng_array(shape, "f32", 5)
    out = tuple(n for d, n in enumerate(shape) if d not in dims)
    text = hlo(
        [_shape("f32", shape)],
        [
            f"%init = f32[] constant({init})",
            f"%r = {_shape('f32', out)} reduce(%p0, %init), dimensions={{{','.join(map(str, dims))}}}, to_apply=%red",
        ],
        extra=_region("red", op),
    )
    (got,) = run(text, [x])
    np.testing.assert_allclose(got, f(x.astype(np.float64), axis=dims), rtol=1e-5, atol=1e-5)


def test_a_float_add_over_leading_dims_is_a_matmul_with_ones_and_max_a_transpose() -> None:
    body = ["%z = f32[] constant(0)", "%r = f32[6] reduce(%p0, %z), dimensions={0}, to_apply=%red"]
    add = _instructions(hlo(["f32[40,6]"], body, extra=_region("red", "add")))
    assert [i["opcode"] for i in add].count("Matmult") == 1 and not any(
        i["opcode"] == "TensorReduce" for i in add
    )
    body[0] = "%z = f32[] constant(-inf)"
    mx = _instructions(hlo(["f32[40,6]"], body, extra=_region("red", "maximum")))
    assert any(i["name"] == "r.transposed" for i in mx) and any(
        i["opcode"] == "TensorReduce" for i in mx
    )
    assert all(i["ins"][0]["ap"][0][1] <= 128 for i in mx if i["opcode"] == "TensorReduce")


def test_reduce_combines_its_init_constant_or_computed() -> None:
    x = rng_array((4, 10), "f32", 6)
    for init_line, want in [
        ("%i = f32[] constant(2.5)", x.sum(axis=1) + 2.5),
        ("%i = f32[] reshape(%p1)", x.sum(axis=1) + 7),
    ]:
        text = hlo(
            ["f32[4,10]", "f32[1]"],
            [init_line, "%r = f32[4] reduce(%p0, %i), dimensions={1}, to_apply=%red"],
            extra=_region("red", "add"),
        )
        (got,) = run(text, [x, np.array([7], np.float32)])
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_integer_and_bf16_reductions() -> None:
    x = rng_array((5, 9), "s32", 7)
    text = hlo(
        ["s32[5,9]"],
        ["%z = s32[] constant(0)", "%r = s32[5] reduce(%p0, %z), dimensions={1}, to_apply=%red"],
        extra=_region("red", "add", "s32"),
    )
    (got,) = run(text, [x])
    np.testing.assert_array_equal(got, x.sum(axis=1))
    y = bf16(rng_array((6, 8), "f32", 8))
    text = hlo(
        ["bf16[6,8]"],
        [
            "%z = bf16[] constant(-inf)",
            "%r = bf16[8] reduce(%p0, %z), dimensions={0}, to_apply=%red",
        ],
        extra=_region("red", "maximum", "bf16"),
    )
    (got,) = run(text, [y])
    np.testing.assert_array_equal(got, y.max(axis=0))


def test_a_reduction_body_that_is_not_add_max_or_min_is_a_lowering_error() -> None:
    text = hlo(
        ["f32[4,4]"],
        ["%z = f32[] constant(1)", "%r = f32[4] reduce(%p0, %z), dimensions={1}, to_apply=%red"],
        extra=_region("red", "multiply"),
    )
    with pytest.raises(LoweringError, match="to_apply=%red is not an add, maximum or minimum"):
        lower_partitioned_json(text)
