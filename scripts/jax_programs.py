"""The JAX programs of the corpus in ``python/lncsplit/examples/jax/`` (see ``make-jax-corpus``).

Each program is a plain Python function jitted over a device mesh with explicit in and out
shardings, plus a deterministic input generator (``numpy.random.default_rng(SEED)``). The module
imports only numpy at top level: jax is imported inside :func:`worker`, which
``make-jax-corpus`` runs in a subprocess whose ``XLA_FLAGS`` were set before the import (the dump
directory and the host device count are read once, when jax starts).

``worker(name, outdir)`` lowers, compiles and runs one program and writes into ``outdir``
``program.json`` (everything but ``hlo_ops``, which the driver adds from the dump),
``io.npz`` and, for programs that ask for it, ``compiled.txt``.

JAX is not a dependency of lncsplit: run this with a Python that has ``jax``, ``numpy`` and
``ml_dtypes`` (e.g. a venv made with ``python3 -m venv /work/jaxenv``).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SEED = 20261202

# Opcodes that Part-1 programs (elementwise and data movement only) must not contain.
NO_COMPUTE = frozenset(
    {
        "dot",
        "reduce",
        "all-reduce",
        "all-gather",
        "all-to-all",
        "collective-permute",
        "reduce-scatter",
        "convolution",
    }
)


@dataclass(frozen=True)
class Program:
    """One corpus entry.

    ``build(mesh)`` returns ``(fn, in_specs, out_specs)``: the Python function (its ``__name__``
    becomes the jit name, ``jit_<name>``, and so the HLO module name) and one PartitionSpec per
    argument and per output. ``inputs(rng)`` returns the global input arrays.
    ``expect`` must all appear in the after-partitioning module, ``forbid`` none of them.
    """

    name: str
    description: str
    mesh_shape: tuple[int, ...]
    axis_names: tuple[str, ...]
    build: Callable[[Any], tuple[Callable[..., Any], Sequence[Any], Sequence[Any]]]
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    expect: frozenset[str] = frozenset()
    forbid: frozenset[str] = frozenset()
    compiled_text: bool = False
    keep_helper: bool = False
    part: int = 2

    @property
    def num_partitions(self) -> int:
        return int(np.prod(self.mesh_shape))


PROGRAMS: dict[str, Program] = {}


def program(**kw: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``Program(build=<decorated>, name=<decorated's name>, **kw)``."""

    def deco(build: Callable[..., Any]) -> Callable[..., Any]:
        name = build.__name__
        kw.setdefault("forbid", NO_COMPUTE if kw.get("part") == 1 else frozenset())
        PROGRAMS[name] = Program(name=name, build=build, **kw)
        return build

    return deco


def _j() -> tuple[Any, Any, Any, Any]:
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import PartitionSpec

    return jax, jnp, lax, PartitionSpec


_LOGISTIC: list[Any] = []


def hlo_logistic(x: Any) -> Any:
    """XLA's ``logistic`` opcode. ``lax.logistic``/``jax.nn.sigmoid`` lower to 1/(1+exp(-x))
    (jax has "no HLO logistic primitive"), so this primitive lowers to stablehlo.logistic."""
    import jax
    from jax._src.lib.mlir.dialects import hlo
    from jax.extend.core import Primitive
    from jax.interpreters import mlir

    if not _LOGISTIC:
        p = Primitive("hlo_logistic")
        p.def_abstract_eval(lambda a: jax.core.ShapedArray(a.shape, a.dtype))
        p.def_impl(lambda a: jax.nn.sigmoid(a))
        mlir.register_lowering(p, lambda ctx, a: [hlo.logistic(a)])
        _LOGISTIC.append(p)
    return _LOGISTIC[0].bind(x)


def _bf16() -> Any:
    import ml_dtypes

    return ml_dtypes.bfloat16


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---------------------------------------------------------------- Part 1: elementwise and movement


@program(
    description=(
        "A float32 elementwise chain over three row-sharded [32,64] inputs (c in [0.5,2] so "
        "log/sqrt/rsqrt/power stay in domain): add, subtract, multiply, divide, remainder, "
        "maximum, minimum, power, negate, abs, sign, exponential, log, tanh, logistic, rsqrt, "
        "sqrt, sine, cosine, erf, compare, select, and/or/not on pred, convert (pred->f32), "
        "clamp. logistic comes from a one-line primitive lowered to stablehlo.logistic: "
        "jax.nn.sigmoid (also used) lowers to 1/(1+exp(-x)) and never emits it. Two "
        "outputs: out0 f32 and out1 a pred mask, both row-sharded. No collectives."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [
        _normal(rng, (32, 64)),
        _normal(rng, (32, 64)),
        rng.uniform(0.5, 2.0, (32, 64)).astype(np.float32),
    ],
    expect=frozenset(
        "add subtract multiply divide remainder maximum minimum power negate abs sign "
        "exponential log tanh logistic rsqrt sqrt sine cosine erf compare select and or not "
        "convert clamp".split()
    ),
    part=1,
)
def elementwise_f32(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def elementwise_f32(a: Any, b: Any, c: Any) -> Any:
        s = a + b
        d = a - b
        m = s * d
        q = m / c
        r = lax.rem(a, c)
        mx = jnp.maximum(a, b)
        mn = jnp.minimum(a, b)
        pw = lax.pow(c, b)
        ng = lax.neg(a)
        ab = lax.abs(b)
        sg = lax.sign(a)
        ex = lax.exp(mn * 0.5)
        lg = lax.log(c)
        th = lax.tanh(s)
        sig = hlo_logistic(d) + jax.nn.sigmoid(b)
        rs = lax.rsqrt(c)
        sq = lax.sqrt(c)
        sn = lax.sin(a)
        cs = lax.cos(b)
        ef = lax.erf(d)
        gt = a > b
        lt = b < c
        both = lax.bitwise_and(gt, lt)
        either = lax.bitwise_or(gt, lt)
        nb = lax.bitwise_not(both)
        sel = lax.select(both, q, r)
        cl = lax.clamp(np.float32(-1.0), m, np.float32(1.0))
        out = (
            sel
            + mx * mn
            + pw
            + ng * ab
            + sg
            + ex
            + lg
            + th
            + sig
            + rs
            - sq
            + sn * cs
            + ef
            + cl
            + lax.convert_element_type(nb, jnp.float32)
        )
        mask = lax.bitwise_and(either, nb)
        return out, mask

    spec = P("x", None)
    return elementwise_f32, [spec] * 3, [spec, spec]


def _int_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    a = rng.integers(-1000, 1001, (16, 32)).astype(np.int32)
    b = rng.integers(1, 40, (16, 32)).astype(np.int32) * rng.choice([-1, 1], (16, 32)).astype(
        np.int32
    )
    # XLA's defined edge cases: x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0.
    b[0, :4] = 0
    b[9, 5] = 0
    a[3, 3] = np.iinfo(np.int32).min
    b[3, 3] = -1
    a[12, 7] = np.iinfo(np.int32).min
    b[12, 7] = 7
    return [a, b]


@program(
    description=(
        "An int32 elementwise chain over two row-sharded [16,32] inputs with negative values: "
        "add, subtract, multiply, divide and remainder (XLA's truncating rules; the divisor "
        "has zeros and one INT_MIN/-1 pair on purpose: XLA defines x/0=-1, x%0=x, "
        "INT_MIN/-1=INT_MIN, INT_MIN%-1=0), jnp.floor_divide's sign fix-up, maximum, minimum, "
        "abs, negate, sign, compare, select, bitwise and/or/not on int32, clamp, convert "
        "(int32->f32), and two non-splat s32 constants: s32[32] along the unsharded dim and "
        "s32[16,1] along the sharded rows, which XLA cuts per partition (dynamic-slice at a "
        "partition-id table offset). Outputs: out0 int32, out1 int32, out2 f32, all "
        "row-sharded. Only ops of contract 3.9's list (xor and shifts are in "
        "int32_bitwise_shifts)."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=_int_inputs,
    expect=frozenset(
        "add subtract multiply divide remainder maximum minimum abs negate sign compare select "
        "and or not clamp convert".split()
    ),
    forbid=NO_COMPUTE | {"xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"},
    part=1,
)
def elementwise_int32(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def elementwise_int32(a: Any, b: Any) -> Any:
        s = a + b
        d = a - b
        m = a * b
        q = lax.div(a, b)
        r = lax.rem(a, b)
        fq = jnp.floor_divide(a, jnp.where(b == 0, 1, b))
        mx = lax.max(a, b)
        mn = lax.min(a, b)
        t = lax.abs(d) - lax.neg(s) + lax.sign(m)
        band = lax.bitwise_and(a, b)
        bor = lax.bitwise_or(a, d)
        bnot = lax.bitwise_not(s)
        ge = a >= b
        ne = a != b
        sel = lax.select(lax.bitwise_and(ge, ne), q, r)
        cl = lax.clamp(np.int32(-500), t, np.int32(500))
        # Non-splat constants: one along the unsharded dim, one along the sharded rows (XLA
        # slices the latter per partition).
        cols = np.arange(32, dtype=np.int32) * 7 - 100
        rows = (np.arange(16, dtype=np.int32) * -3)[:, None]
        out0 = sel + mx - mn + cl + cols + rows
        out1 = band + bor + bnot + fq + m
        out2 = lax.convert_element_type(q, jnp.float32) * np.float32(
            0.5
        ) + lax.convert_element_type(r, jnp.float32)
        return out0, out1, out2

    spec = P("x", None)
    return elementwise_int32, [spec] * 2, [spec] * 3


@program(
    description=(
        "Integer bit operations outside contract 3.9's op list (expect a LoweringError naming "
        "them until they are added): xor, shift-left, shift-right-arithmetic, "
        "shift-right-logical, and popcnt on row-sharded int32 [16,32] (shift counts 0..31) plus "
        "add/and/or. Outputs out0..out2 int32, row-sharded."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [
        rng.integers(-(2**31), 2**31 - 1, (16, 32), dtype=np.int64).astype(np.int32),
        rng.integers(0, 32, (16, 32)).astype(np.int32),
    ],
    expect=frozenset("xor shift-left shift-right-arithmetic shift-right-logical popcnt".split()),
    part=1,
)
def int32_bitwise_shifts(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def int32_bitwise_shifts(a: Any, s: Any) -> Any:
        x = lax.bitwise_xor(a, s)
        sl = lax.shift_left(a, s)
        sra = lax.shift_right_arithmetic(a, s)
        srl = lax.shift_right_logical(a, s)
        pc = lax.population_count(a)
        return x + pc, lax.bitwise_and(sl, sra), lax.bitwise_or(srl, s)

    spec = P("x", None)
    return int32_bitwise_shifts, [spec] * 2, [spec] * 3


@program(
    description=(
        "Data movement on a row-sharded x f32[16,64] and y s32[16,8]: reshape to [16,8,8], "
        "transpose of the unsharded dims, strided slice, pad (low, high and interior), "
        "concatenate along an unsharded dim, iota, broadcast, convert, copy, a 2-D f32[8,21] "
        "constant; out1 is x "
        "transposed, which XLA shards on its second dim (no collective). Outputs: out0 "
        "f32[16,8,21] row-sharded, out1 f32[64,16] sharded on dim 1."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [
        _normal(rng, (16, 64)),
        rng.integers(-50, 50, (16, 8)).astype(np.int32),
    ],
    expect=frozenset("broadcast reshape transpose slice concatenate pad iota copy convert".split()),
    part=1,
)
def shape_ops(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def shape_ops(x: Any, y: Any) -> Any:
        t = x.reshape(16, 8, 8)
        t = jnp.transpose(t, (0, 2, 1))
        s = t[:, 1:7, ::2]  # [16,6,4]
        p = lax.pad(s, np.float32(-1.0), [(0, 0, 0), (1, 1, 0), (1, 2, 1)])  # [16,8,10]
        io = lax.broadcasted_iota(jnp.float32, (16, 8, 1), 1)
        yb = jnp.broadcast_to(lax.convert_element_type(y, jnp.float32)[:, :, None], (16, 8, 10))
        c = jnp.concatenate([p + io, yb, io], axis=2)  # [16,8,21]
        c = c + np.arange(8 * 21, dtype=np.float32).reshape(8, 21) * 0.25  # a 2-D constant
        c = lax.with_sharding_constraint(c, jax.sharding.NamedSharding(mesh, P("x", None, None)))
        return c, x.T

    return shape_ops, [P("x", None), P("x", None)], [P("x", None, None), P(None, "x")]


@program(
    description=(
        "A replicated x f32[16,32] and u f32[4,32] with row-sharded outputs over 4 partitions: "
        "XLA slices each partition's rows with dynamic-slice whose offsets come from a constant "
        "table indexed by partition-id; out1 puts u into rows 4..7 of x*2 "
        "(lax.dynamic_update_slice) before the same sharding. Outputs out0, out1 f32[16,32] "
        "row-sharded."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (16, 32)), _normal(rng, (4, 32))],
    expect=frozenset("partition-id dynamic-slice constant".split()),
    part=1,
)
def dynamic_slice_partition_id(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def dynamic_slice_partition_id(x: Any, u: Any) -> Any:
        y = lax.dynamic_update_slice(x * 2.0, u, (4, 0))
        return jnp.tanh(x), y

    return dynamic_slice_partition_id, [P(), P()], [P("x", None), P("x", None)]


@program(
    description=(
        "The device index used as data: shard_map over a 4-way mesh adds "
        "100*jax.lax.axis_index('x') (and the index broadcast into an iota) to each "
        "partition's rows of x f32[16,32]. After partitioning, partition-id() feeds convert / "
        "arithmetic as a value, not only as a slice offset. Output out0 f32[16,32] row-sharded "
        "(shard_map's manual-sharding custom calls are gone after partitioning)."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (16, 32))],
    expect=frozenset("partition-id convert".split()),
    part=1,
)
def partition_id_data(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def body(xb: Any) -> Any:
        i = lax.axis_index("x")
        fi = lax.convert_element_type(i, jnp.float32)
        io = lax.broadcasted_iota(jnp.int32, xb.shape, 1) + i * 1000
        return xb + fi * 100.0 + lax.convert_element_type(io, jnp.float32)

    def partition_id_data(x: Any) -> Any:
        return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)

    return partition_id_data, [P("x", None)], [P("x", None)]


@program(
    description=(
        "A bfloat16 elementwise chain on row-sharded x, y bf16[32,64]: multiply, add, "
        "subtract, maximum, tanh, exponential, rsqrt(y*y+1), divide, select(compare), "
        "convert bf16->f32->bf16, times a bf16[64] array constant (reshaped to [1,64]). "
        "Output out0 bf16[32,64] row-sharded (io.npz stores bf16 as float32, exactly)."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [
        _normal(rng, (32, 64)).astype(_bf16()),
        _normal(rng, (32, 64)).astype(_bf16()),
    ],
    expect=frozenset(
        "multiply add subtract maximum tanh exponential rsqrt divide select compare convert".split()
    ),
    part=1,
)
def bf16_elementwise(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def bf16_elementwise(x: Any, y: Any) -> Any:
        one = jnp.bfloat16(1.0)
        a = x * y + x
        b = jnp.maximum(a, y) - jnp.tanh(x)
        c = jnp.exp(jnp.minimum(y, one)) * lax.rsqrt(y * y + one)
        d = b / (jnp.abs(c) + one)
        e = jnp.where(x > y, d, c)
        f = lax.convert_element_type(lax.convert_element_type(e, jnp.float32) * 0.5, jnp.bfloat16)
        w = np.linspace(-1.0, 1.0, 64).astype(_bf16())  # a bf16 array constant
        return f + e * w

    spec = P("x", None)
    return bf16_elementwise, [spec, spec], [spec]


# ------------------------------------------------------------------------------ Part 2


@program(
    description=(
        "Megatron MLP: x f32[16,64] replicated, W1 f32[64,128] column-sharded with bias "
        "b1[128] sharded alike, gelu (tanh form), W2 f32[128,64] row-sharded, b2[64] "
        "replicated; each partition computes a partial [16,64] and an all-reduce (add) sums "
        "them. Output out0 f32[16,64] replicated."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [
        _normal(rng, (16, 64)),
        _normal(rng, (64, 128), 0.125),
        _normal(rng, (128,), 0.1),
        _normal(rng, (128, 64), 0.09),
        _normal(rng, (64,), 0.1),
    ],
    expect=frozenset("dot all-reduce tanh".split()),
    compiled_text=True,
)
def megatron_mlp(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def megatron_mlp(x: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
        h = jax.nn.gelu(x @ w1 + b1, approximate=True)
        return h @ w2 + b2

    return (
        megatron_mlp,
        [P(), P(None, "x"), P("x"), P("x", None), P()],
        [P()],
    )


@program(
    description=(
        "Multi-head self-attention with the 4 heads sharded over 4 partitions: x f32[16,64] "
        "replicated, Wq/Wk/Wv f32[64,4,16] sharded on heads, scores = einsum(q,k)/4, softmax "
        "over keys (local reduce max/add per head), context = einsum(p,v), Wo f32[4,16,64] "
        "sharded on heads; the output projection contracts over heads, so an all-reduce sums "
        "the partitions. Output out0 f32[16,64] replicated."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [
        _normal(rng, (16, 64)),
        _normal(rng, (64, 4, 16), 0.125),
        _normal(rng, (64, 4, 16), 0.125),
        _normal(rng, (64, 4, 16), 0.125),
        _normal(rng, (4, 16, 64), 0.125),
    ],
    expect=frozenset("dot reduce exponential divide all-reduce".split()),
)
def attention_heads(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def attention_heads(x: Any, wq: Any, wk: Any, wv: Any, wo: Any) -> Any:
        q = jnp.einsum("sd,dhk->hsk", x, wq)
        k = jnp.einsum("sd,dhk->hsk", x, wk)
        v = jnp.einsum("sd,dhk->hsk", x, wv)
        s = jnp.einsum("hsk,htk->hst", q, k) / 4.0
        p = jax.nn.softmax(s, axis=-1)
        ctx = jnp.einsum("hst,htk->hsk", p, v)
        return jnp.einsum("hsk,hkd->sd", ctx, wo)

    wspec = P(None, "x", None)
    return attention_heads, [P(), wspec, wspec, wspec, P("x", None, None)], [P()]


@program(
    description=(
        "Layer norm over the hidden dim, which is sharded: x f32[16,64] sharded on dim 1, "
        "gamma/beta f32[64] sharded alike; mean and variance are local reduce(add) + all-reduce "
        "(add) across the 2 partitions, then rsqrt(var+1e-5). Output out0 f32[16,64] sharded "
        "on dim 1."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [
        _normal(rng, (16, 64), 2.0) + 0.5,
        1.0 + _normal(rng, (64,), 0.1),
        _normal(rng, (64,), 0.1),
    ],
    expect=frozenset("reduce all-reduce rsqrt".split()),
)
def layer_norm(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def layer_norm(x: Any, g: Any, b: Any) -> Any:
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) * lax.rsqrt(var + 1e-5) * g + b

    return layer_norm, [P(None, "x"), P("x"), P("x")], [P(None, "x")]


@program(
    description=(
        "Softmax over a sharded axis: x f32[16,64] sharded on dim 1 (the softmax axis) over 2 "
        "partitions; the row max is a local reduce(max) + all-reduce(max), the denominator a "
        "local reduce(add) + all-reduce(add). Output out0 f32[16,64] sharded on dim 1."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (16, 64), 3.0)],
    expect=frozenset("reduce all-reduce exponential divide".split()),
)
def softmax_sharded_axis(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def softmax_sharded_axis(x: Any) -> Any:
        return jax.nn.softmax(x, axis=-1)

    return softmax_sharded_axis, [P(None, "x")], [P(None, "x")]


@program(
    description=(
        "A matmul whose contraction dim is sharded: x f32[32,64] sharded on K (dim 1), "
        "w f32[64,48] sharded on K (dim 0) over 2 partitions; each computes a partial "
        "[32,48] dot and an all-reduce(add) makes the replicated output out0 f32[32,48]."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (32, 64)), _normal(rng, (64, 48), 0.125)],
    expect=frozenset("dot all-reduce".split()),
)
def matmul_sharded_contraction(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def matmul_sharded_contraction(x: Any, w: Any) -> Any:
        return x @ w

    return matmul_sharded_contraction, [P(None, "x"), P("x", None)], [P()]


@program(
    description=(
        "All-gather: x f32[16,32] row-sharded over 4 partitions, out0 = x*2+1 replicated; XLA "
        "computes on the shard and all-gathers along dim 0."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (16, 32))],
    expect=frozenset(["all-gather"]),
)
def all_gather(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def all_gather(x: Any) -> Any:
        return x * 2.0 + 1.0

    return all_gather, [P("x", None)], [P()]


@program(
    description=(
        "Collective-permute: jnp.roll(x, 3, axis=0) on x f32[16,32] row-sharded over 4 "
        "partitions (XLA moves the rows that cross a shard boundary with collective-permute "
        "and source_target_pairs), and a shard_map ppermute rotating each shard to the next "
        "partition. Outputs out0, out1 f32[16,32] row-sharded."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (16, 32))],
    expect=frozenset(["collective-permute"]),
)
def collective_permute(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def rotate(xb: Any) -> Any:
        return lax.ppermute(xb, "x", [(i, (i + 1) % 4) for i in range(4)])

    def collective_permute(x: Any) -> Any:
        r = jnp.roll(x, 3, axis=0)
        p = jax.shard_map(rotate, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)
        return r, p

    return collective_permute, [P("x", None)], [P("x", None), P("x", None)]


@program(
    description=(
        "A 2x2 mesh (data x model): an MLP with x f32[16,64] sharded on rows over 'data', "
        "W1 f32[64,128] column-sharded over 'model', relu, W2 f32[128,64] row-sharded over "
        "'model'; the partial sums are all-reduced within each data row of the mesh "
        "(replica_groups={{0,1},{2,3}}). out1 = column sums of x, replicated: a local reduce "
        "and an all-reduce across 'data' (replica_groups in the mesh[...] {...} form). "
        "Parameters carry partially replicated shardings (last_tile_dim_replicate, iota with "
        "T(1,0)). Outputs out0 f32[16,64] sharded over 'data' and replicated over 'model', "
        "out1 f32[64] replicated."
    ),
    mesh_shape=(2, 2),
    axis_names=("data", "model"),
    inputs=lambda rng: [
        _normal(rng, (16, 64)),
        _normal(rng, (64, 128), 0.125),
        _normal(rng, (128, 64), 0.09),
    ],
    expect=frozenset("dot all-reduce maximum reduce".split()),
    compiled_text=True,
)
def mesh_2d(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def mesh_2d(x: Any, w1: Any, w2: Any) -> Any:
        return jax.nn.relu(x @ w1) @ w2, jnp.sum(x, axis=0)

    return (
        mesh_2d,
        [P("data", None), P(None, "model"), P("model", None)],
        [P("data", None), P()],
    )


@program(
    description=(
        "Device orders that are not the mesh's: a 2x2 mesh ('d','m') with x sharded over the "
        "axis tuple ('m','d') (iota tile assignment [4,1]<=[2,2]T(1,0)) and y over ('m','d') "
        "per dim ([2,2]<=[2,2]T(1,0)). out0 = sum(x, 0) replicated: all-reduce with "
        "replica_groups=mesh[...], device_ids=([2,2]T(1,0)) {...}; out1 = sum(y, 0) sharded "
        "over 'd': all-reduce over a transposed 2x2 device grid; out2 = z*2 with z sharded "
        "over ('m','d') resharded to ('d','m'): a collective-permute whose source_target_pairs "
        "include identity pairs {0,0},{3,3}. Shapes: x, z f32[16,64], y f32[16,64]; outputs "
        "out0 f32[64], out1 f32[64] sharded 'd', out2 f32[16,64] row-sharded ('d','m')."
    ),
    mesh_shape=(2, 2),
    axis_names=("d", "m"),
    inputs=lambda rng: [_normal(rng, (16, 64)), _normal(rng, (16, 64)), _normal(rng, (16, 64))],
    expect=frozenset("reduce all-reduce collective-permute".split()),
)
def mesh_2d_transposed(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def mesh_2d_transposed(x: Any, y: Any, z: Any) -> Any:
        return jnp.sum(x, axis=0), jnp.sum(y, axis=0), z * 2.0

    return (
        mesh_2d_transposed,
        [P(("m", "d"), None), P("m", "d"), P(("m", "d"), None)],
        [P(), P("d"), P(("d", "m"), None)],
    )


@program(
    description=(
        "All-to-all: x f32[16,32] row-sharded over 4 partitions, out0 = x+1 resharded to "
        "column-sharded (P(None,'x')): XLA emits reshape/transpose around an all-to-all."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (16, 32))],
    expect=frozenset(["all-to-all"]),
)
def all_to_all(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def all_to_all(x: Any) -> Any:
        return x + 1.0

    return all_to_all, [P("x", None)], [P(None, "x")]


@program(
    description=(
        "Reduce-scatter: x f32[32,64] and w f32[64,48] sharded on the contraction dim over 4 "
        "partitions. out0 comes from shard_map: a local dot, then lax.psum_scatter over rows "
        "(tiled), which XLA keeps as a reduce-scatter (dimensions={0}). out1 is the same "
        "product left to XLA with a row-sharded result: the partitioner spells it all-reduce "
        "+ dynamic-slice at partition-id offsets (the CPU compiler does not turn that into "
        "reduce-scatter; see compiled.txt). Outputs out0, out1 f32[32,48] row-sharded."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (32, 64)), _normal(rng, (64, 48), 0.125)],
    expect=frozenset("dot reduce-scatter all-reduce dynamic-slice partition-id".split()),
    compiled_text=True,
)
def reduce_scatter(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def local(xb: Any, wb: Any) -> Any:
        return lax.psum_scatter(xb @ wb, "x", scatter_dimension=0, tiled=True)

    def reduce_scatter(x: Any, w: Any) -> Any:
        rs = jax.shard_map(
            local, mesh=mesh, in_specs=(P(None, "x"), P("x", None)), out_specs=P("x", None)
        )(x, w)
        return rs, x @ w

    return reduce_scatter, [P(None, "x"), P("x", None)], [P("x", None), P("x", None)]


@program(
    description=(
        "A bfloat16 MLP: x bf16[16,64] replicated, W1 bf16[64,128] column-sharded, relu, "
        "W2 bf16[128,64] row-sharded, bf16 dots and an all-reduce(add) of the bf16 partial "
        "sums. Output out0 bf16[16,64] replicated."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [
        _normal(rng, (16, 64)).astype(_bf16()),
        _normal(rng, (64, 128), 0.125).astype(_bf16()),
        _normal(rng, (128, 64), 0.09).astype(_bf16()),
    ],
    expect=frozenset("dot all-reduce maximum".split()),
)
def bf16_mlp(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def bf16_mlp(x: Any, w1: Any, w2: Any) -> Any:
        return jax.nn.relu(x @ w1) @ w2

    return bf16_mlp, [P(), P(None, "x"), P("x", None)], [P()]


@program(
    description=(
        "Uneven (padded) tiles inside the program (jit's own arguments must divide evenly): "
        "x f32[12,32] row-sharded over 4 partitions, y = x[1:11] (10 rows) constrained to be "
        "row-sharded, so each partition holds a ceil(10/4)=3-row buffer and partition 3 only 1 "
        "real row (XLA moves rows across shard boundaries to re-tile). out0 = sum(exp(y)) over "
        "the padded sharded rows, replicated: XLA masks the padding (iota + partition-id "
        "offset, compare, select) before reduce + all-reduce; out1 = y*3 replicated f32[10,32] "
        "(all-gather of the padded tiles, then a slice)."
    ),
    mesh_shape=(4,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (12, 32))],
    expect=frozenset("exponential reduce all-reduce partition-id select".split()),
)
def uneven_rows(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def uneven_rows(x: Any) -> Any:
        y = x[1:11]
        y = lax.with_sharding_constraint(y, jax.sharding.NamedSharding(mesh, P("x", None)))
        return jnp.sum(jnp.exp(y), axis=0), y * 3.0

    return uneven_rows, [P("x", None)], [P(), P()]


# ------------------------------------------------------------------------------ the worker


@program(
    description=(
        "Per-token mixing: 1024 tokens, each with its own 4x4 matrix (W f32[1024,4,4], x "
        "f32[1024,4], y = tanh(einsum('tij,tj->ti', W, x))), tokens sharded over 2 "
        "partitions: a dot with a batch dim of 512 per partition, lowered as one small PE "
        "matmul per token — the corpus's largest program in BIR instructions (the "
        "lower_partitioned_instructions_per_s benchmark)."
    ),
    mesh_shape=(2,),
    axis_names=("x",),
    inputs=lambda rng: [_normal(rng, (1024, 4, 4), 0.5), _normal(rng, (1024, 4))],
    expect=frozenset("dot tanh".split()),
)
def per_token_mixing(mesh: Any) -> Any:
    jax, jnp, lax, P = _j()

    def per_token_mixing(w: Any, x: Any) -> Any:
        return jnp.tanh(jnp.einsum("tij,tj->ti", w, x))

    return per_token_mixing, [P("x", None, None), P("x", None)], [P("x", None)]


def _program_json(
    prog: Program,
    jax: Any,
    jaxlib_version: str,
    flags: str,
    in_sh: Any,
    out_sh: Any,
    args: Sequence[np.ndarray],
    outs: Sequence[Any],
) -> dict[str, Any]:
    def arr(prefix: str, k: int, a: Any) -> dict[str, Any]:
        d: dict[str, Any] = {"name": f"{prefix}{k}", "shape": list(a.shape), "dtype": str(a.dtype)}
        if str(a.dtype) == "bfloat16":
            d["stored_dtype"] = "float32"
        return d

    return {
        "name": prog.name,
        "description": prog.description,
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib_version,
        "xla_flags": flags,
        "num_partitions": prog.num_partitions,
        "mesh": {"shape": list(prog.mesh_shape), "axis_names": list(prog.axis_names)},
        "in_shardings": [
            str(s._to_xla_hlo_sharding(a.ndim)) for s, a in zip(in_sh, args, strict=True)
        ],
        "out_shardings": [
            str(s._to_xla_hlo_sharding(o.ndim)) for s, o in zip(out_sh, outs, strict=True)
        ],
        "in_partition_specs": [str(s.spec) for s in in_sh],
        "out_partition_specs": [str(s.spec) for s in out_sh],
        "inputs": [arr("arg", k, a) for k, a in enumerate(args)],
        "outputs": [arr("out", k, o) for k, o in enumerate(outs)],
    }


def print_registry() -> None:
    """The registry as JSON on stdout, for the driver (which may run without numpy)."""
    print(
        json.dumps(
            [
                {
                    "name": p.name,
                    "num_partitions": p.num_partitions,
                    "expect": sorted(p.expect),
                    "forbid": sorted(p.forbid),
                    "keep_helper": p.keep_helper,
                }
                for p in PROGRAMS.values()
            ]
        )
    )


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed``'s layout with fixed zip timestamps: regeneration is byte-stable."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, a in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=False) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(a), allow_pickle=False)


def _stored(a: Any) -> np.ndarray:
    a = np.asarray(a)
    if str(a.dtype) == "bfloat16":
        return a.astype(np.float32)
    return a


def worker(name: str, outdir: str, flags: str) -> None:
    """Lower, compile and run program ``name``; write program.json (sans hlo_ops), io.npz."""
    import jax
    import jaxlib
    from jax.sharding import Mesh, NamedSharding

    prog = PROGRAMS[name]
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    n = prog.num_partitions
    devices = jax.devices()
    if len(devices) < n:
        raise SystemExit(f"{name}: needs {n} devices, jax has {len(devices)}")
    mesh = Mesh(np.array(devices[:n]).reshape(prog.mesh_shape), prog.axis_names)
    fn, in_specs, out_specs = prog.build(mesh)
    in_sh = tuple(NamedSharding(mesh, s) for s in in_specs)
    out_sh = tuple(NamedSharding(mesh, s) for s in out_specs)
    args = prog.inputs(np.random.default_rng(SEED))
    if len(args) != len(in_sh):
        raise SystemExit(f"{name}: {len(args)} inputs but {len(in_sh)} in_shardings")
    jitted = jax.jit(
        fn, in_shardings=in_sh, out_shardings=out_sh[0] if len(out_sh) == 1 else out_sh
    )
    compiled = jitted.lower(*args).compile()
    result = compiled(*[jax.device_put(a, s) for a, s in zip(args, in_sh, strict=True)])
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(outs) != len(out_sh):
        raise SystemExit(f"{name}: {len(outs)} outputs but {len(out_sh)} out_shardings")
    host_outs = [np.asarray(o) for o in outs]
    meta = _program_json(prog, jax, jaxlib.__version__, flags, in_sh, out_sh, args, host_outs)
    (out / "program.json").write_text(json.dumps(meta) + "\n")
    arrays = {f"arg{k}": _stored(a) for k, a in enumerate(args)}
    arrays.update({f"out{k}": _stored(o) for k, o in enumerate(host_outs)})
    write_npz(out / "io.npz", arrays)
    if prog.compiled_text:
        (out / "compiled.txt").write_text(compiled.as_text())
