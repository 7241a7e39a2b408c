"""Small modules for the numeric simulator's tests (contract §3.8, "Numbers").

Every module has one function ``main`` whose sets are DRAM unless named; a
computing instruction reads Input sets and writes an Output set, row by row
in AP order (``ap`` of the whole set), so numpy references line up with the
sets' arrays.
"""

from __future__ import annotations

import json
from typing import Any

import lncsplit
import numpy as np

F32_NAN = 0x7FC00000


def cset(
    name: str, kind: str, shape: tuple[int, ...], dtype: str, ty: str = "DRAM"
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "dtype": dtype,
        "tensor_shape": list(shape),
        "locations": [{"name": f"{name}_loc", "type": ty}],
    }
    if ty in ("SB", "PSUM"):
        s["locations"][0]["base"] = 0
    return s


def whole(name: str, shape: tuple[int, ...], dtype: str, p0: int = 0) -> dict[str, Any]:
    """A symbolic_ap over a [P, F] set (rows from ``p0``): ap [[F, P], [1, F]]."""
    p, f = shape
    return {
        "kind": "symbolic_ap",
        "ap": [[f, p], [1, f]],
        "dtype": dtype,
        "memsetref": name,
        "addrs": [
            {"kind": "AffExprKind", "terms": [], "c": p0},
            {"kind": "AffExprKind", "terms": [], "c": 0},
        ],
    }


def module(sets: list[dict[str, Any]], insts: list[dict[str, Any]], n: int = 1) -> lncsplit.Module:
    return lncsplit.Module.from_json(
        json.dumps(
            {
                "version": 2,
                "name": "num_nc_symbolic",
                "arch": "gen3",
                "functions": [
                    {
                        "name": "main",
                        "shard_ids": [n] if n > 1 else [],
                        "allocations": sets,
                        "basic_blocks": [{"name": "b", "instructions": insts}],
                    }
                ],
            }
        )
    )


def elementwise(
    opcode: str,
    keys: dict[str, Any],
    in_dtypes: list[str],
    out_dtype: str,
    shape: tuple[int, int] = (4, 8),
    extra_ins: list[tuple[str, tuple[int, int], str]] = (),  # type: ignore[assignment]
) -> lncsplit.Module:
    """``y = opcode(x0, x1, …)`` over whole [P, F] sets; ``extra_ins`` adds more
    (name, shape, dtype) inputs after the x's (per-partition operands)."""
    sets = [cset(f"x{i}", "Input", shape, d) for i, d in enumerate(in_dtypes)]
    ins = [whole(f"x{i}", shape, d) for i, d in enumerate(in_dtypes)]
    for name, sh, d in extra_ins:
        sets.append(cset(name, "Input", sh, d))
        ins.append(whole(name, sh, d))
    sets.append(cset("y", "Output", shape, out_dtype))
    inst = {
        "name": "op",
        "opcode": opcode,
        "ins": ins,
        "outs": [whole("y", shape, out_dtype)],
        **keys,
    }
    return module(sets, [inst])


def run_values(m: lncsplit.Module, inputs: dict[str, np.ndarray], out: str = "y") -> np.ndarray:
    r = lncsplit.sim.run(m, {("main", k): v for k, v in inputs.items()})
    return r.values(0, "main", out)


def bits32(x: np.ndarray) -> np.ndarray:
    """float32 bits with every NaN canonical (what the simulator writes)."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).copy()
    b[np.isnan(np.asarray(x, dtype=np.float32))] = F32_NAN
    return b


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 → bfloat16 bits, to nearest even, NaN canonical (an independent numpy reference)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[np.isnan(np.asarray(x, dtype=np.float32))] = 0x7FC0
    return r


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a − b| in float32 ulps (ordered integer distance; NaN vs NaN is 0)."""

    def ordered(x: np.ndarray) -> np.ndarray:
        i = np.asarray(x, dtype=np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    d = np.abs(ordered(a) - ordered(b))
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, d)


SPECIAL_F32 = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.0,
        1e-40,
        -1e-42,
        1e30,
        -1e30,
        np.inf,
        -np.inf,
        np.nan,
        7.0,
        1e-3,
    ],
    dtype=np.float32,
)


def specials(shape: tuple[int, int], seed: int) -> np.ndarray:
    """An array of ``shape`` mixing special float32 values and random ones."""
    rng = np.random.default_rng(seed)
    n = shape[0] * shape[1]
    x = rng.standard_normal(n).astype(np.float32) * np.float32(4)
    pick = rng.random(n) < 0.4
    x[pick] = rng.choice(SPECIAL_F32, pick.sum())
    return x.reshape(shape)
