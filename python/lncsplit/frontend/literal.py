"""HLO literals (``constant(...)``) as numpy arrays (notes xla-hlo-text §8).

XLA prints a scalar as a number (``1``, ``1e-05``, ``-inf``, ``nan``, ``true``) and an array as
nested braces (``{0, 4, 8, 12}``, ``{ { -1, -0.9688 }, { … } }``), row-major. Values are read as
decimals and rounded once to the element type (bf16 from the decimal, to nearest even: XLA
prints bf16 with enough digits for that to be exact). ``{...}`` means XLA left the values out
(a large constant dumped without ``--xla_dump_large_constants=true``): :class:`LiteralError`.
"""

from __future__ import annotations

import math
import re

import numpy as np
import numpy.typing as npt

from lncsplit.errors import LncsplitError

__all__ = ["LiteralError", "bf16_round", "parse_literal", "NUMPY_DTYPES"]


class LiteralError(LncsplitError, ValueError):
    """A literal lncsplit cannot read (values elided, wrong count, a token that is no number)."""


#: HLO element type → the numpy dtype the literal is held in (bf16: float32 holding bf16 values).
NUMPY_DTYPES: dict[str, str] = {
    "pred": "bool",
    "s8": "int8",
    "s16": "int16",
    "s32": "int32",
    "s64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "bf16": "float32",
    "f32": "float32",
    "f64": "float64",
}

_TOKEN = re.compile(r"[^\s{},]+")


def bf16_round(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """Round to the nearest bfloat16 (ties to even), returned as float32 holding those values."""
    f = np.asarray(x, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    nan = np.isnan(f)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(nan, np.float32(np.nan), out).astype(np.float32)


def _number(tok: str) -> float | int | bool:
    t = tok.lower()
    if t in ("true", "false"):
        return t == "true"
    if t.lstrip("+-").startswith("nan"):
        return math.nan
    if t.lstrip("+-") == "inf":
        return -math.inf if t.startswith("-") else math.inf
    try:
        return int(t)
    except ValueError:
        return float(t)


def parse_literal(text: str, dtype: str, dims: tuple[int, ...]) -> np.ndarray:
    """The literal ``text`` of an HLO ``dtype[dims]`` constant, as a numpy array of that shape."""
    if dtype not in NUMPY_DTYPES:
        raise LiteralError(f"constants of element type {dtype!r} are not supported")
    t = text.strip()
    if "..." in t:
        raise LiteralError(
            "the constant's values were left out of the dump ({...}); dump with "
            "XLA_FLAGS=--xla_dump_large_constants=true"
        )
    tokens = _TOKEN.findall(re.sub(r"/\*.*?\*/", "", t))
    count = math.prod(dims)
    if len(tokens) != count:
        raise LiteralError(
            f"a literal of shape {list(dims)} needs {count} values, found {len(tokens)}"
        )
    try:
        values = [_number(x) for x in tokens]
    except ValueError:
        raise LiteralError(f"cannot read the literal {text[:80]!r}") from None
    if dtype == "pred":
        return np.array([bool(v) for v in values], dtype=bool).reshape(dims)
    if dtype == "bf16":
        return bf16_round(np.array(values, dtype=np.float64)).reshape(dims)
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        if any(not isinstance(v, int) or not info.min <= v <= info.max for v in values):
            raise LiteralError(f"a value of the literal {text[:80]!r} is not a {dtype}")
        return np.array(values, dtype=np_dtype).reshape(dims)
    return np.array(values, dtype=np.float64).astype(np_dtype).reshape(dims)
