"""Numbers, not only hashes (contract §3.8): each op and func against numpy."""

from __future__ import annotations

from functools import partial
from typing import Any

import lncsplit
import numpy as np
import pytest
from lncsplit import sim
from lncsplit.errors import NeuronAssertion
from numeric_modules import (
    bf16_round,
    bf16_value,
    bits32,
    cset,
    elementwise,
    module,
    run_values,
    specials,
    ulp_distance,
    whole,
)

SHAPE = (4, 8)
I32 = np.iinfo(np.int32)


def ieee_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.where(a > b, a, b)
    out = np.where((a == b) & np.signbit(a), b, out)  # +0 over −0
    out = np.where((a == b) & ~np.signbit(a), a, out)
    return np.where(np.isnan(a) | np.isnan(b), np.float32(np.nan), out).astype(np.float32)


def ieee_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -ieee_max(-a, -b)


FLOAT_OPS: dict[str, Any] = {
    "add": np.add,
    "subtract": np.subtract,
    "mult": np.multiply,
    "divide": np.divide,
    "max": ieee_max,
    "min": ieee_min,
    "is_equal": lambda a, b: (a == b).astype(np.float32),
    "not_equal": lambda a, b: (a != b).astype(np.float32),
    "is_gt": lambda a, b: (a > b).astype(np.float32),
    "is_ge": lambda a, b: (a >= b).astype(np.float32),
    "is_lt": lambda a, b: (a < b).astype(np.float32),
    "is_le": lambda a, b: (a <= b).astype(np.float32),
    "logical_and": lambda a, b: ((a != 0) & (b != 0)).astype(np.float32),
    "logical_or": lambda a, b: ((a != 0) | (b != 0)).astype(np.float32),
    "logical_xor": lambda a, b: ((a != 0) ^ (b != 0)).astype(np.float32),
    "bypass": lambda a, b: a,
}


@pytest.mark.parametrize("op", sorted(FLOAT_OPS))
def test_tensor_tensor_float32_is_ieee_bit_for_bit(op: str) -> None:
    a, b = specials(SHAPE, 1), specials(SHAPE, 2)
    m = elementwise("TensorTensor", {"op": op}, ["float32", "float32"], "float32")
    with np.errstate(all="ignore"):
        want = FLOAT_OPS[op](a, b).astype(np.float32)
    got = run_values(m, {"x0": a, "x1": b})
    assert (bits32(got) == bits32(want)).all(), (a, b, got, want)


@pytest.mark.parametrize(
    ("alias", "op"), [("multiply", "mult"), ("maximum", "max"), ("less", "is_lt")]
)
def test_nki_aliases_are_the_same_ops(alias: str, op: str) -> None:
    a, b = specials(SHAPE, 3), specials(SHAPE, 4)
    mk = lambda o: elementwise("TensorTensor", {"op": o}, ["float32", "float32"], "float32")  # noqa: E731
    x = {"x0": a, "x1": b}
    assert (bits32(run_values(mk(alias), x)) == bits32(run_values(mk(op), x))).all()


def test_pow_and_mod_in_float32_are_libm_rounded_once() -> None:
    rng = np.random.default_rng(5)
    a = rng.uniform(0.1, 4, SHAPE).astype(np.float32)
    b = rng.uniform(-3, 3, SHAPE).astype(np.float32)
    for op, ref in [("pow", np.power), ("mod", np.fmod)]:
        m = elementwise("TensorTensor", {"op": op}, ["float32", "float32"], "float32")
        want = ref(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
        assert ulp_distance(run_values(m, {"x0": a, "x1": b}), want).max() <= 1
    m = elementwise("TensorTensor", {"op": "mod"}, ["float32", "float32"], "float32")
    z = np.zeros(SHAPE, np.float32)
    assert np.isnan(run_values(m, {"x0": a, "x1": z})).all()


def test_integer_ops_wrap_and_divide_as_xla() -> None:
    a = np.array([7, -7, 7, I32.min, I32.max, 5, -8, 0] * 4, dtype=np.int32).reshape(SHAPE)
    b = np.array([2, 2, 0, -1, 1, -3, 3, 0] * 4, dtype=np.int32).reshape(SHAPE)
    got = {
        op: run_values(
            elementwise("TensorTensor", {"op": op}, ["int32", "int32"], "int32"), {"x0": a, "x1": b}
        )
        for op in ("divide", "mod", "add", "mult", "max", "is_lt", "bitwise_xor", "pow")
    }
    assert got["divide"][0].tolist() == [3, -3, -1, I32.min, I32.max, -1, -2, -1]
    assert got["mod"][0].tolist() == [1, -1, 7, 0, 0, 2, -2, 0]
    assert got["add"][0, 4] == I32.min  # MAX + 1 wraps
    assert (got["mult"] == (a.astype(np.int64) * b).astype(np.int32)).all()
    assert (got["max"] == np.maximum(a, b)).all()
    assert (got["is_lt"] == (a < b)).all()
    assert (got["bitwise_xor"] == (a ^ b)).all()
    assert got["pow"][0].tolist() == [49, 49, 1, 0, I32.max, 0, -512, 1]
    u = elementwise("TensorTensor", {"op": "divide"}, ["uint32", "uint32"], "uint32")
    one = np.full(SHAPE, 9, np.uint32)
    assert (run_values(u, {"x0": one, "x1": np.zeros(SHAPE, np.uint32)}) == 2**32 - 1).all()


def test_bfloat16_inputs_compute_in_float32_and_round_once_to_the_output() -> None:
    rng = np.random.default_rng(6)
    a = bf16_round(rng.standard_normal(SHAPE).astype(np.float32))
    b = bf16_round(rng.standard_normal(SHAPE).astype(np.float32))
    m = elementwise("TensorTensor", {"op": "add"}, ["bfloat16", "bfloat16"], "bfloat16")
    r = sim.run(m, {("main", "x0"): a, ("main", "x1"): b})
    want = bf16_round(bf16_value(a) + bf16_value(b))
    assert (r.outputs[0][("main", "y")] == want).all()
    assert r.values(0, "main", "y").dtype == np.float32


def test_tensor_scalar_chains_constants_operands_and_reverse() -> None:
    x = specials(SHAPE, 7)
    c = np.arange(1, 5, dtype=np.float32).reshape(4, 1)
    keys = {
        "op0": "subtract",
        "const0": 1.0,
        "reverse0": True,
        "op1": "mult",
        "operand1": {"ins": 1},
    }
    m = elementwise(
        "TensorScalar", keys, ["float32"], "float32", extra_ins=[("c", (4, 1), "float32")]
    )
    with np.errstate(all="ignore"):
        want = ((np.float32(1) - x) * c).astype(np.float32)
    assert (bits32(run_values(m, {"x0": x, "c": c})) == bits32(want)).all()
    bypass = elementwise(
        "TensorScalar", {"op0": "add", "const0": 2.5, "op1": "bypass"}, ["float32"], "float32"
    )
    assert (bits32(run_values(bypass, {"x0": x})) == bits32(x + np.float32(2.5))).all()


def test_an_integral_constant_keeps_integer_arithmetic_a_fractional_one_does_not() -> None:
    x = np.full(SHAPE, 2**30 + 1, np.int32)
    ints = elementwise("TensorScalar", {"op0": "mult", "const0": 2}, ["int32"], "int32")
    assert (run_values(ints, {"x0": x}) == np.int32(-2147483646)).all()  # wraps
    floats = elementwise("TensorScalar", {"op0": "mult", "const0": 2.0}, ["int32"], "int32")
    assert (run_values(floats, {"x0": x}) == I32.max).all()  # f32, saturates


def ref_func(name: str, z: np.ndarray) -> np.ndarray:
    """numpy float64 references (the exact formulas of docs/sim.md)."""
    from math import erf, erfc, sqrt

    verf = np.vectorize(erf)
    verfc = np.vectorize(erfc)
    with np.errstate(all="ignore"):
        return {
            "identity": z,
            "exp": np.exp(z),
            "log": np.log(z),
            "tanh": np.tanh(z),
            "sigmoid": np.where(z >= 0, 1 / (1 + np.exp(-z)), np.exp(z) / (1 + np.exp(z))),
            "relu": np.where(np.isnan(z) | (z > 0), z, 0.0),
            "gelu": np.where(np.isinf(z), np.where(z > 0, z, -0.0), 0.5 * z * verfc(-z / sqrt(2))),
            # = 0.5·z·(1 + tanh(u)), without its cancellation for z ≪ 0
            "gelu_tanh": z / (1 + np.exp(-2 * sqrt(2 / np.pi) * (z + 0.044715 * z**3))),
            "silu": z / (1 + np.exp(-z)),
            "rsqrt": 1 / np.sqrt(z),
            "sqrt": np.sqrt(z),
            "square": z * z,
            "reciprocal": 1 / z,
            "negative": -z,
            "abs": np.abs(z),
            "sign": np.where(np.isnan(z) | (z == 0), z, np.sign(z)),
            "sin": np.sin(z),
            "cos": np.cos(z),
            "erf": verf(z),
            "softplus": np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z))),
        }[name]


FUNCS = sorted(
    "identity exp log tanh sigmoid relu gelu gelu_tanh silu rsqrt sqrt square reciprocal "
    "negative abs sign sin cos erf softplus".split()
)


# docs/sim.md's float32 accuracy per func: libm's tanhf is 2 ulp, every other func 1
ULPS = {"tanh": 2}


@pytest.mark.parametrize("func", FUNCS)
def test_every_func_is_within_its_documented_ulps_of_numpys_float64_rounded(func: str) -> None:
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-6, 6, 24), [0.0, -0.0, 1e-40, -1e-40, 1e-3, 20.0, -20.0, 0.5]])
    x = x.astype(np.float32).reshape(SHAPE)
    bias = np.float32(0.25)
    keys = {"func": func, "scale": 1.5, "bias": 0.25}
    m = elementwise("Activation", keys, ["float32"], "float32")
    z = (x * np.float32(1.5)).astype(np.float32) + bias  # the affine step in float32
    want = ref_func(func, z.astype(np.float64)).astype(np.float32)
    got = run_values(m, {"x0": x})
    assert ulp_distance(got, want).max() <= ULPS.get(func, 1), (func, x, got, want)


@pytest.mark.parametrize("spelling", ["Exp", "Ln", "Gelu_apprx_tanh", "Copy", "IDENTITY"])
def test_funcs_read_the_compilers_spellings_case_insensitively(spelling: str) -> None:
    m = elementwise("Activation", {"func": spelling}, ["float32"], "float32")
    r = sim.run(m, {("main", "x0"): np.full(SHAPE, 0.5, np.float32)})
    assert r.opaque == []


def test_activation_special_values_propagate_as_ieee() -> None:
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, -1.0, 1e-45, 100] * 4, np.float32).reshape(
        SHAPE
    )
    got = {
        f: run_values(elementwise("Activation", {"func": f}, ["float32"], "float32"), {"x0": x})
        for f in FUNCS
    }
    assert np.isnan(got["exp"][0, 0]) and got["exp"][0, 2] == 0 and got["exp"][0, 1] == np.inf
    assert got["log"][0, 3] == -np.inf and np.isnan(got["log"][0, 5])
    assert (
        np.signbit(got["sign"][0, 3])
        and got["relu"][0, 3] == 0
        and not np.signbit(got["relu"][0, 3])
    )
    assert got["sigmoid"][0, 2] == 0 and got["sigmoid"][0, 1] == 1
    assert got["sqrt"][0, 3] == 0 and np.signbit(got["sqrt"][0, 3])
    assert (bits32(got["identity"]) == bits32(x)).all()


def test_activation_bias_per_partition_and_bfloat16_output() -> None:
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(SHAPE)
    bias = np.array([[0.0], [1.0], [-1.0], [0.5]], np.float32)
    m = elementwise(
        "Activation",
        {"func": "tanh", "bias": {"ins": 1}},
        ["float32"],
        "bfloat16",
        extra_ins=[("b", (4, 1), "float32")],
    )
    r = sim.run(m, {("main", "x0"): x, ("main", "b"): bias})
    want = bf16_round(np.tanh((x + bias).astype(np.float64)).astype(np.float32))
    assert (r.outputs[0][("main", "y")] == want).all()


def reduce_module(
    op: str, axes: list[int], dtype: str, out_shape: tuple[int, int]
) -> lncsplit.Module:
    sets = [cset("x", "Input", SHAPE, dtype), cset("y", "Output", out_shape, dtype)]
    inst = {
        "name": "red",
        "opcode": "TensorReduce",
        "op": op,
        "axes": axes,
        "ins": [whole("x", SHAPE, dtype)],
        "outs": [whole("y", out_shape, dtype)],
    }
    return module(sets, [inst])


def test_tensor_reduce_sums_in_ap_order_into_float32() -> None:
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(SHAPE) * 1e4).astype(np.float32)
    got = run_values(reduce_module("add", [1], "float32", (4, 1)), {"x": x})
    want = np.cumsum(x, axis=1, dtype=np.float32)[:, -1:]  # sequential, AP order
    assert (bits32(got) == bits32(want)).all()
    mx = run_values(reduce_module("max", [1], "float32", (4, 1)), {"x": x})
    assert (mx == x.max(axis=1, keepdims=True)).all()
    xi = rng.integers(-100, 100, SHAPE, dtype=np.int32)
    assert (
        run_values(reduce_module("add", [1], "int32", (4, 1)), {"x": xi})
        == xi.sum(1, keepdims=True)
    ).all()


def test_tensor_reduce_keeps_the_other_dims_and_refuses_axis_zero() -> None:
    x = np.arange(32, dtype=np.float32).reshape(SHAPE)
    sets = [cset("x", "Input", SHAPE, "float32"), cset("y", "Output", (4, 2), "float32")]
    ap3 = {**whole("x", SHAPE, "float32"), "ap": [[8, 4], [4, 2], [1, 4]]}
    ap3["addrs"] = ap3["addrs"] + [ap3["addrs"][1]]
    inst = {
        "name": "red",
        "opcode": "TensorReduce",
        "op": "min",
        "axes": [2],
        "ins": [ap3],
        "outs": [whole("y", (4, 2), "float32")],
    }
    got = run_values(module(sets, [inst]), {"x": x})
    assert (got == x.reshape(4, 2, 4).min(axis=2)).all()
    inst0 = {**inst, "axes": [0]}
    with pytest.raises(NeuronAssertion) as e:
        sim.run(module(sets, [inst0]))
    assert e.value.code == 9401 and "axes" in str(e.value)


def matmul_module(k: int, m: int, n: int, tiles: int, dtype: str = "bfloat16") -> lncsplit.Module:
    """tiles K-tiles of st [K, M] · mv [K, N] accumulated into a float32 PSUM [M, N]."""
    sets = [
        cset("st", "Input", (k * tiles, m), dtype, "SB"),
        cset("mv", "Input", (k * tiles, n), dtype, "SB"),
        cset("ps", "Output", (m, n), "float32", "PSUM"),
    ]
    insts = []
    for t in range(tiles):
        mm: dict[str, Any] = {
            "name": f"mm{t}",
            "opcode": "Matmult",
            "contract": True,
            "ins": [whole("st", (k, m), dtype, p0=t * k), whole("mv", (k, n), dtype, p0=t * k)],
            "outs": [whole("ps", (m, n), "float32")],
        }
        if t:
            mm["accumulate"] = "add"
        insts.append(mm)
    return module(sets, insts)


def test_a_k_tiled_matmult_with_accumulate_equals_numpys() -> None:
    k, m, n, tiles = 128, 16, 64, 3
    rng = np.random.default_rng(10)
    st = bf16_round(rng.uniform(-1, 1, (k * tiles, m)).astype(np.float32))
    mv = bf16_round(rng.uniform(-1, 1, (k * tiles, n)).astype(np.float32))
    r = sim.run(matmul_module(k, m, n, tiles), {("main", "st"): st, ("main", "mv"): mv})
    got = r.values(0, "main", "ps")
    a, b = bf16_value(st).astype(np.float64), bf16_value(mv).astype(np.float64)
    want = a.T @ b
    bound = (k * tiles) * 2.0**-24 * (np.abs(a).T @ np.abs(b))  # pairwise vs sequential sums
    assert (np.abs(got - want) <= bound).all()
    assert r.opaque == []


@pytest.mark.parametrize(
    ("k", "m", "n", "what"),
    [(129, 4, 8, "K = 129"), (8, 129, 8, "M = 129"), (8, 4, 513, "N = 513")],
)
def test_a_matmult_past_the_engine_limits_is_9401(k: int, m: int, n: int, what: str) -> None:
    with pytest.raises(NeuronAssertion) as e:
        sim.run(matmul_module(k, m, n, 1))
    assert e.value.code == 9401 and what in str(e.value) and "mm0" in str(e.value)


def test_iota_counts_from_base_over_the_partition_and_free_dims() -> None:
    sets = [cset("y", "Output", SHAPE, "int32")]
    inst = {
        "name": "io",
        "opcode": "Iota",
        "base": 5,
        "channel_multiplier": 100,
        "multipliers": [-2],
        "ins": [],
        "outs": [whole("y", SHAPE, "int32")],
    }
    got = run_values(module(sets, [inst]), {})
    p, f = np.indices(SHAPE)
    assert (got == 5 + 100 * p - 2 * f).all()


def test_iota_base_may_be_a_shard_expression_bound_like_addrs() -> None:
    n = 2
    shard = {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "ShardIDKind", "ub": n}, "coeff": 1000}],
        "c": 7,
    }
    sets = [cset("y", "Output", SHAPE, "float32")]
    inst = {
        "name": "io",
        "opcode": "Iota",
        "base": shard,
        "channel_multiplier": 1,
        "multipliers": [10],
        "ins": [],
        "outs": [whole("y", SHAPE, "float32")],
    }
    m = module(sets, [inst], n)
    r = sim.run(m)
    assert r.values(1, "main", "y")[0, 0] == 1007 and r.values(0, "main", "y")[1, 1] == 18
    assert sim.equivalent(m, lncsplit.split([m.clone()], n))


def test_select_takes_nonzero_predicates_nan_true_minus_zero_false() -> None:
    pred = np.array([0.0, -0.0, np.nan, 1.0, -3.0, 0.0, 2.0, 0.0] * 4, np.float32).reshape(SHAPE)
    a, b = np.full(SHAPE, 1.0, np.float32), np.full(SHAPE, 2.0, np.float32)
    m = elementwise("Select", {"select": True}, ["float32", "float32", "float32"], "float32")
    got = run_values(m, {"x0": pred, "x1": a, "x2": b})
    assert got[0].tolist() == [2, 2, 1, 1, 1, 2, 1, 2]


def test_tensor_copy_convert_truncates_saturates_and_rounds_to_nearest_even() -> None:
    x = np.array([3e9, -3e9, np.nan, -1.9, 1.9, 2.5, -0.0, 1e-45] * 4, np.float32).reshape(SHAPE)
    to_int = elementwise("TensorCopy", {"convert": True}, ["float32"], "int32")
    assert run_values(to_int, {"x0": x})[0].tolist() == [I32.max, I32.min, 0, -1, 1, 2, 0, 0]
    to_bf = elementwise("TensorCopy", {"convert": True}, ["float32"], "bfloat16")
    r = sim.run(to_bf, {("main", "x0"): x})
    assert (r.outputs[0][("main", "y")] == bf16_round(x)).all()
    ints = np.array([16777217, -3, 0, 2**31 - 1] * 8, np.int32).reshape(SHAPE)
    to_f = elementwise("TensorCopy", {"convert": True}, ["int32"], "float32")
    assert (run_values(to_f, {"x0": ints}) == ints.astype(np.float32)).all()
    to_i8 = elementwise("TensorCopy", {"convert": True}, ["int32"], "int8")
    assert (run_values(to_i8, {"x0": ints}) == ints.astype(np.int8)).all()  # int → int wraps


def test_fp8_conversion_matches_the_ocp_encodings() -> None:
    x = np.array(
        [448, 464, 465, np.inf, 2**-10, 0.75 * 2**-9, -0.0, np.nan] * 4, np.float32
    ).reshape(SHAPE)
    r = sim.run(
        elementwise("TensorCopy", {"convert": True}, ["float32"], "float8e4"), {("main", "x0"): x}
    )
    assert r.outputs[0][("main", "y")][0].tolist() == [
        0x7E,
        0x7E,
        0x7F,
        0x7F,
        0x00,
        0x01,
        0x80,
        0x7F,
    ]
    ml = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    y = np.linspace(-500, 500, 32, dtype=np.float32).reshape(SHAPE)
    for dt, ml_dt in [("float8e4", ml.float8_e4m3fn), ("float8e5", ml.float8_e5m2)]:
        r = sim.run(
            elementwise("TensorCopy", {"convert": True}, ["float32"], dt), {("main", "x0"): y}
        )
        want = y.astype(ml_dt)
        assert np.array_equal(r.values(0, "main", "y"), want.astype(np.float32), equal_nan=True)


@pytest.mark.parametrize(
    ("opcode", "keys"),
    [
        ("Activation", {"func": "Mish"}),
        ("TensorTensor", {"op": "abs"}),
        ("TensorTensor", {}),
        ("TensorScalar", {"op0": "add"}),
        ("TensorReduce", {"op": "subtract", "axes": [1]}),
        ("Matmult", {}),
        ("Exponential", {}),
    ],
)
def test_names_outside_the_vocabulary_stay_opaque_and_are_listed(
    opcode: str, keys: dict[str, Any]
) -> None:
    m = elementwise(opcode, keys, ["float32", "float32"], "float32")
    r = sim.run(m)
    assert [o.instruction for o in r.opaque] == ["op"] and r.opaque[0].opcode == opcode
    assert r.opaque[0].why


@pytest.mark.parametrize(
    ("keys", "ins", "out", "rule"),
    [
        ({"op": "bitwise_and"}, ["float32", "float32"], "float32", "integer dtypes"),
        ({"op": "add"}, ["float8e3", "float32"], "float32", "float8e3"),
        ({"op": "add"}, ["float32", "float32"], "float8_e8m0fnu", "outs[0]"),
    ],
)
def test_a_dtype_an_op_cannot_take_is_9401_naming_argument_and_rule(
    keys: dict[str, Any], ins: list[str], out: str, rule: str
) -> None:
    with pytest.raises(NeuronAssertion) as e:
        sim.run(elementwise("TensorTensor", keys, ins, out))
    assert e.value.code == 9401 and "op (TensorTensor)" in str(e.value) and rule in str(e.value)


def test_counts_that_do_not_fit_are_9401_naming_the_arguments() -> None:
    sets = [
        cset("x0", "Input", SHAPE, "float32"),
        cset("x1", "Input", (4, 4), "float32"),
        cset("y", "Output", SHAPE, "float32"),
    ]
    inst = {
        "name": "tt",
        "opcode": "TensorTensor",
        "op": "add",
        "ins": [whole("x0", SHAPE, "float32"), whole("x1", (4, 4), "float32")],
        "outs": [whole("y", SHAPE, "float32")],
    }
    with pytest.raises(NeuronAssertion) as e:
        sim.run(module(sets, [inst]))
    assert e.value.code == 9401 and "ins[1] has 16 elements" in str(e.value)


# ------------------------------------------------------ accumulates by value


def acc_module(op: str, dtype: str, copies: int) -> lncsplit.Module:
    sets = [cset(f"x{i}", "Input", SHAPE, dtype) for i in range(copies)] + [
        cset("y", "Output", SHAPE, dtype)
    ]
    insts = [
        {
            "name": f"a{i}",
            "opcode": "DMACopy",
            "ins": [whole(f"x{i}", SHAPE, dtype)],
            "outs": [whole("y", SHAPE, dtype)],
            **({"accumulate": op} if i else {}),
        }
        for i in range(copies)
    ]
    return module(sets, insts)


def test_float_add_accumulates_are_summed_exactly_and_rounded_once() -> None:
    t = np.float32(2.0**-24)
    xs = {"x0": np.ones(SHAPE, np.float32), "x1": np.full(SHAPE, t), "x2": np.full(SHAPE, t)}
    got = run_values(acc_module("add", "float32", 3), xs)
    assert (got == np.float32(1 + 2.0**-23)).all()  # sequential float32 would give 1.0


def test_integer_accumulates_compare_signed_as_signed() -> None:
    xs = {"x0": np.full(SHAPE, -5, np.int32), "x1": np.full(SHAPE, 3, np.int32)}
    assert (run_values(acc_module("max", "int32", 2), xs) == 3).all()
    assert (run_values(acc_module("min", "int32", 2), xs) == -5).all()


def test_accumulates_from_every_core_in_one_interval_are_no_race() -> None:
    n = 4
    shard = {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "ShardIDKind", "ub": n}, "coeff": 1}],
        "c": 0,
    }
    x = {**whole("x", (n, 8), "float32"), "ap": [[8, 1], [1, 8]]}
    x["addrs"] = [shard, x["addrs"][1]]
    acc = cset("acc", "Output", (1, 8), "float32")
    acc["addr_space"] = "Shared"
    sets = [cset("x", "Input", (n, 8), "float32"), acc]
    inst = {
        "name": "a",
        "opcode": "DMACopy",
        "accumulate": "add",
        "ins": [x],
        "outs": [whole("acc", (1, 8), "float32")],
    }
    m = module(sets, [inst], n)
    xv = np.array([[1e8], [1.0], [-1e8], [1.0]], np.float32) * np.ones((1, 8), np.float32)
    r = sim.run(m, {("main", "x"): xv})
    assert r.races == [] and (r.values(0, "main", "acc") == 2.0).all()


# ------------------------------------------------------------ collectives


def cc_module(
    n: int,
    kind: str,
    groups: Any,
    ins_shape: tuple[int, int],
    out_shape: tuple[int, int],
    **extra: Any,
) -> lncsplit.Module:
    sets = [cset("x", "Input", ins_shape, "float32"), cset("y", "Output", out_shape, "float32")]
    inst = {
        "name": "cc",
        "opcode": "CollectiveCompute",
        "cc_channel": {"kind": kind, "replica_groups": groups, "op": "add"},
        "ins": [whole("x", ins_shape, "float32")],
        "outs": [whole("y", out_shape, "float32")],
        **extra,
    }
    return module(sets, [inst], n)


def per_core(n: int, shape: tuple[int, int]) -> list[np.ndarray]:
    return [
        np.full(shape, 10.0**c, np.float32) + np.arange(shape[1], dtype=np.float32)
        for c in range(n)
    ]


def test_all_reduce_over_subgroups_sums_within_each_group_exactly() -> None:
    xs = per_core(4, (1, 8))
    r = sim.run(cc_module(4, "AllReduce", [[0, 2], [1, 3]], (1, 8), (1, 8)), {("main", "x"): xs})
    for c, peer in [(0, 2), (2, 0), (1, 3), (3, 1)]:
        assert (r.values(c, "main", "y") == xs[c] + xs[peer]).all()


def test_all_to_all_sends_chunk_j_of_core_c_to_core_j() -> None:
    xs = per_core(2, (1, 8))
    r = sim.run(cc_module(2, "AllToAll", [[0, 1]], (1, 8), (1, 8)), {("main", "x"): xs})
    y0, y1 = r.values(0, "main", "y")[0], r.values(1, "main", "y")[0]
    assert (y0 == np.concatenate([xs[0][0, :4], xs[1][0, :4]])).all()
    assert (y1 == np.concatenate([xs[0][0, 4:], xs[1][0, 4:]])).all()


def _shard(n: int, c: int, k: int) -> dict[str, Any]:
    return {
        "kind": "AffExprKind",
        "terms": [{"idx": {"kind": "ShardIDKind", "ub": n}, "coeff": c}],
        "c": k,
    }


def test_a_permute_without_a_sender_writes_zeros() -> None:
    n = 3
    shard = partial(_shard, n)
    # recv_from = c − 1 (core 0: −1, no sender); send_to = c + 1
    m = cc_module(
        n,
        "Permute",
        [[0, 1, 2]],
        (1, 8),
        (1, 8),
        recv_from_rank=shard(1, -1),
        send_to_rank=shard(1, 1),
    )
    xs = per_core(n, (1, 8))
    r = sim.run(m, {("main", "x"): xs})
    assert (r.values(0, "main", "y") == 0).all()
    assert (r.values(2, "main", "y") == xs[1]).all()


# ------------------------------------------------------- inputs and outputs


def test_inputs_may_be_floats_ml_dtypes_or_float32_for_bfloat16_sets() -> None:
    m = elementwise("TensorTensor", {"op": "add"}, ["bfloat16", "float32"], "float32")
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(SHAPE)
    r = sim.run(m, {("main", "x0"): x, ("main", "x1"): np.zeros(SHAPE, np.float32)})
    assert (r.values(0, "main", "y") == bf16_value(bf16_round(x))).all()
    with pytest.raises(NeuronAssertion) as e:
        sim.run(m, {("main", "x1"): x.astype(np.float64)})
    assert e.value.code == 9403 and "float32" in str(e.value)
    ml = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    r2 = sim.run(m, {("main", "x0"): x.astype(ml.bfloat16)})
    assert (r2.outputs[0][("main", "y")] != 0).any()


def test_drawn_float_inputs_are_finite_in_minus_one_to_one() -> None:
    m = elementwise("TensorTensor", {"op": "bypass"}, ["bfloat16", "float32"], "float32")
    y = sim.run(m).values(0, "main", "y")
    assert np.isfinite(y).all() and (np.abs(y) <= 1).all() and len(np.unique(y)) > 8


def test_values_is_9403_for_a_set_that_is_not_an_output() -> None:
    r = sim.run(elementwise("TensorTensor", {"op": "add"}, ["float32", "float32"], "float32"))
    with pytest.raises(NeuronAssertion) as e:
        r.values(0, "main", "x0")
    assert e.value.code == 9403


def test_const_values_fill_the_set_before_the_function() -> None:
    c = cset("c", "Const", SHAPE, "float32")
    c["values"] = list(range(32))
    h = cset("h", "Const", SHAPE, "int32")
    h["values"] = {"hex": np.arange(32, dtype="<i4").tobytes().hex()}
    sets = [c, h, cset("y", "Output", SHAPE, "float32")]
    inst = {
        "name": "tt",
        "opcode": "TensorTensor",
        "op": "add",
        "ins": [whole("c", SHAPE, "float32"), whole("h", SHAPE, "int32")],
        "outs": [whole("y", SHAPE, "float32")],
    }
    got = run_values(module(sets, [inst]), {})
    assert (got == 2 * np.arange(32).reshape(SHAPE)).all()


def test_equivalent_compares_floats_within_rtol_atol_and_names_the_values() -> None:
    m = elementwise("Activation", {"func": "exp"}, ["float32"], "float32")
    m2 = elementwise("Activation", {"func": "exp", "scale": 1.0000001}, ["float32"], "float32")
    x = {("main", "x0"): np.linspace(1, 2, 32, dtype=np.float32).reshape(SHAPE)}
    e = sim.equivalent(m, m2, x)
    assert not e and isinstance(e.difference.a, float) and e.difference.set == "y"
    assert sim.equivalent(m, m2, x, rtol=1e-5)
    assert sim.equivalent(m, m2, x, atol=1e-3)


# ------------------------------------------------------------ inputs of Shared sets


def shared_copy_module(n: int) -> lncsplit.Module:
    """y = x on every core, x a Shared Input set (one memory every core reads)."""
    x = cset("x", "Input", SHAPE, "float32")
    x["addr_space"] = "Shared"
    copy = {
        "name": "c",
        "opcode": "TensorCopy",
        "ins": [whole("x", SHAPE, "float32")],
        "outs": [whole("y", SHAPE, "float32")],
    }
    return module([x, cset("y", "Output", SHAPE, "float32")], [copy], n)


def test_a_shared_input_set_takes_one_array_or_equal_ones() -> None:
    m = shared_copy_module(2)
    x = np.arange(32, dtype=np.float32).reshape(SHAPE)
    for given in (x, [x, x.copy()], sim.PerCore({0: x, 1: x.copy()})):
        r = sim.run(m, {("main", "x"): given})
        assert (r.values(1, "main", "y") == x).all()


def test_differing_arrays_for_a_shared_input_set_are_9403() -> None:
    m = shared_copy_module(2)
    x = np.zeros(SHAPE, np.float32)
    with pytest.raises(NeuronAssertion, match="cores 0 and 1 differ") as e:
        sim.run(m, {("main", "x"): [x, x + 1]})
    assert e.value.code == 9403
    with pytest.raises(NeuronAssertion, match=r"given for cores \[1\] only") as e:
        sim.run(m, {("main", "x"): sim.PerCore({1: x})})
    assert e.value.code == 9403
