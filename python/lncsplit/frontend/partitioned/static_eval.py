"""Values known before the program runs, one per core: what offsets are made of (contract §3.9).

XLA computes a dynamic-slice start from ``partition-id()`` — a constant table indexed by it,
or arithmetic on it — and constants. Such a value is the same every run, different per core:
:class:`StaticEval` computes it for all N cores at once (numpy arrays with a leading core axis)
with XLA's semantics (integer division truncating toward zero, x/0 = −1, x % 0 = x, the
remainder's sign the dividend's, wrapping arithmetic, clamped dynamic-slice starts). A value
that depends on a parameter (data) is ``None``: used as an offset, that is the
"data-dependent offset" ``LoweringError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..hlo import HloInstruction
from ..hlo_attrs import HloAttributeError, int_list, slice_spec
from ..literal import NUMPY_DTYPES, LiteralError, parse_literal

if TYPE_CHECKING:
    from .scope import Scope

__all__ = ["StaticEval", "xla_divide", "xla_remainder"]

Static = Any  # np.ndarray with a leading core axis, a tuple of them, or None


def xla_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division as XLA: toward zero; x/0 = −1 (all ones); MIN/−1 = MIN."""
    dt = a.dtype
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        safe = np.where(b64 == 0, 1, b64)
        q = np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe)
        q = np.where(b64 == 0, -1, q)
    return q.astype(dt) if dt.kind == "i" else (q & ((1 << (8 * dt.itemsize)) - 1)).astype(dt)


def xla_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer remainder as XLA: the dividend's sign; x % 0 = x."""
    dt = a.dtype
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.int64), b.astype(np.int64)
        safe = np.where(b64 == 0, 1, b64)
        r = np.sign(a64) * (np.abs(a64) % np.abs(safe))
        r = np.where(b64 == 0, a64, r)
    return r.astype(dt) if dt.kind == "i" else (r & ((1 << (8 * dt.itemsize)) - 1)).astype(dt)


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
#: integer-or-float ops: (integer form, float form)
_DIVISION = {"divide": (xla_divide, np.divide), "remainder": (xla_remainder, np.fmod)}
_LOGIC = {"and": (np.logical_and, np.bitwise_and), "or": (np.logical_or, np.bitwise_or)}


def _binary(opcode: str, a: np.ndarray, b: np.ndarray, attrs: dict[str, str]) -> Any:
    with np.errstate(all="ignore"):
        if opcode in _ARITH:
            return _ARITH[opcode](a, b)
        if opcode in _DIVISION:
            integer, floating = _DIVISION[opcode]
            return integer(a, b) if a.dtype.kind in "iu" else floating(a, b)
        if opcode in _LOGIC:
            logical, bitwise = _LOGIC[opcode]
            return logical(a, b) if a.dtype == np.bool_ else bitwise(a, b)
        if opcode == "compare":
            f = _COMPARE.get(attrs.get("direction", ""))
            return None if f is None else f(a, b)
    return None


def _unary(opcode: str, a: np.ndarray) -> Any:
    with np.errstate(all="ignore"):
        if opcode == "negate":
            return -a if a.dtype.kind != "b" else None
        if opcode == "abs":
            return np.abs(a)
        if opcode == "not":
            return np.logical_not(a) if a.dtype == np.bool_ else np.invert(a)
        if opcode == "sign":
            return np.sign(a)
    return None


def convert(a: np.ndarray, ty: str) -> np.ndarray | None:
    """``convert`` to HLO type ``ty``: → pred is ``x != 0``; float → int truncates and
    saturates (NaN → 0); int → int wraps."""
    if ty not in NUMPY_DTYPES or ty in ("bf16", "f16"):
        return None
    dt = np.dtype(NUMPY_DTYPES[ty])
    if ty == "pred":
        nonzero: np.ndarray = a != 0
        return nonzero
    if a.dtype.kind == "f" and dt.kind in "iu":
        info = np.iinfo(dt)
        t = np.trunc(np.nan_to_num(a, nan=0.0))
        out: np.ndarray = np.clip(t, info.min, info.max).astype(dt)
        return out
    with np.errstate(all="ignore"):
        wrapped: np.ndarray = a.astype(dt)
    return wrapped


class StaticEval:
    """Per-core values of instructions whose inputs are constants and ``partition-id()``."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._memo: dict[tuple[int, str], Static] = {}

    def value(self, scope: Scope, name: str) -> Static:
        """The per-core value of ``name`` in ``scope`` (None when it depends on data)."""
        key = (id(scope), name)
        if key not in self._memo:
            self._memo[key] = None  # a cycle (never in HLO) reads as "not static"
            instr = scope.instruction(name)
            try:
                self._memo[key] = self._eval(scope, instr)
            except (HloAttributeError, LiteralError, ValueError, IndexError, KeyError):
                self._memo[key] = None
        return self._memo[key]

    def _operands(self, scope: Scope, instr: HloInstruction) -> list[Static] | None:
        vals = [self.value(scope, o) for o in instr.operands]
        return None if any(v is None for v in vals) else vals

    def _eval(self, scope: Scope, instr: HloInstruction) -> Static:  # noqa: C901, PLR0911, PLR0912
        op = instr.opcode
        n = self.n
        shape = instr.shape
        if op == "parameter":
            ref = scope.parameter_ref(instr)
            return None if ref is None else self.value(ref[0], ref[1])
        if op == "partition-id":
            return np.arange(n, dtype=np.uint32)
        if op == "replica-id":
            return np.zeros(n, dtype=np.uint32)
        if op == "constant":
            if shape.is_tuple or shape.dtype in ("bf16", "f16"):
                return None
            lit = parse_literal(instr.literal or "", shape.dtype, shape.dims)
            return np.broadcast_to(lit, (n, *shape.dims)).copy()
        if op == "iota":
            if shape.dtype not in NUMPY_DTYPES or shape.dtype in ("bf16", "f16", "pred"):
                return None
            d = int(instr.attributes.get("iota_dimension", "0"))
            idx = np.indices(shape.dims)[d] if shape.dims else np.zeros(())
            return np.broadcast_to(idx.astype(NUMPY_DTYPES[shape.dtype]), (n, *shape.dims)).copy()
        ops = self._operands(scope, instr)
        if ops is None:
            return None
        if op == "tuple":
            return tuple(ops)
        if op == "get-tuple-element":
            return ops[0][int(instr.attributes["index"])]
        if shape.is_tuple or shape.dtype in ("bf16", "f16"):
            return None
        if op in ("reshape", "bitcast", "copy"):
            return ops[0].reshape((n, *shape.dims))
        if op == "convert":
            return convert(ops[0], shape.dtype)
        if op == "broadcast":
            dims = int_list(instr.attributes.get("dimensions", "{}"))
            src = ops[0]
            view = [1] * len(shape.dims)
            for j, dd in enumerate(dims):
                view[dd] = src.shape[1 + j]
            perm = sorted(range(len(dims)), key=lambda j: dims[j])
            src = src.transpose([0] + [1 + j for j in perm]).reshape((n, *view))
            return np.broadcast_to(src, (n, *shape.dims)).copy()
        if op == "slice":
            spec = slice_spec(instr.attributes["slice"])
            return ops[0][(slice(None), *(slice(a, b, s) for a, b, s in spec))].copy()
        if op == "dynamic-slice":
            sizes = int_list(instr.attributes["dynamic_slice_sizes"])
            return self._dynamic_slice(ops[0], ops[1:], sizes)
        if op == "concatenate":
            d = int_list(instr.attributes["dimensions"])[0]
            return np.concatenate(ops, axis=1 + d)
        if op == "select":
            return np.where(ops[0], ops[1], ops[2])
        if op == "clamp":
            return np.minimum(np.maximum(ops[1], ops[0]), ops[2])
        if len(ops) == 2:
            return _binary(op, ops[0], ops[1], instr.attributes)
        if len(ops) == 1:
            return _unary(op, ops[0])
        return None

    def _dynamic_slice(self, src: np.ndarray, starts: list[np.ndarray], sizes: list[int]) -> Any:
        out = []
        for c in range(self.n):
            st = clamp_starts([int(s[c]) for s in starts], src.shape[1:], sizes)
            out.append(src[c][tuple(slice(a, a + z) for a, z in zip(st, sizes, strict=True))])
        return np.stack(out)


def clamp_starts(starts: list[int], dims: tuple[int, ...], sizes: list[int]) -> list[int]:
    """XLA clamps each dynamic-slice start to ``[0, dim − size]``."""
    return [min(max(s, 0), d - z) for s, d, z in zip(starts, dims, sizes, strict=True)]
