"""Elementwise ops: DMA the operands' pieces into SBUF, compute, DMA the result out (§3.9).

Every operand has the result's shape (XLA makes broadcasts explicit) except the scalar bounds
of ``clamp`` and the scalar predicate of ``select``, which are DMA'd into the tile with step 0.
The array is cut flat (``tiles.py``): piece by piece, each operand is loaded into its own tile,
one to three compute instructions write the result tile, and one DMA stores it. The compute
instructions carry contract §3.8's keys, so the simulator computes their values:

- ``TensorTensor op``: add, subtract, multiply (``mult``), divide, remainder (``mod``), maximum
  (``max``), minimum (``min``), power (``pow``), and/or (``logical_*`` on pred, ``bitwise_*`` on
  integers), compare (``is_equal``, ``not_equal``, ``is_lt``, ``is_le``, ``is_gt``, ``is_ge``);
- ``TensorScalar``: negate (float ``x·−1``; integer ``0 − x``, wrapping), integer sign
  (``max −1`` then ``min 1``), not (pred ``x == 0``; integers ``x xor all-ones``), convert to pred
  (``x ≠ 0``);
- ``Activation func``: exponential, log, tanh, logistic (``sigmoid``), rsqrt, sqrt, sine (``sin``),
  cosine (``cos``), erf, float abs and sign;
- ``Select``; ``TensorCopy convert``; clamp as ``max`` then ``min``; integer abs as
  ``max(x, 0 − x)``.

§3.8 computes integer operations in the *output's* integer type, so a comparison or a
test against zero of integers is computed into an integer tile of the operands' type first and
then converted to pred (computing in uint8 would truncate the operands). A ``convert`` to the
same type, and ``abs`` of an unsigned type, are the operand itself (no instruction). Each op
writes only its own result tile and buffer, on its own core: no other core touches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lncsplit.frontend.dtypes import DTYPE_BYTES

from .builder import BIR_DTYPES, Access, Builder
from .scope import Op
from .tiles import MAX_PARTITIONS, Tile, flat_pieces, free_limit, tile_cols
from .values import Buf, Value

__all__ = ["HANDLERS"]

TENSOR_TENSOR = {
    "add": "add",
    "subtract": "subtract",
    "multiply": "mult",
    "divide": "divide",
    "remainder": "mod",
    "maximum": "max",
    "minimum": "min",
    "power": "pow",
}
ACTIVATION = {
    "exponential": "exp",
    "log": "log",
    "tanh": "tanh",
    "logistic": "sigmoid",
    "rsqrt": "rsqrt",
    "sqrt": "sqrt",
    "sine": "sin",
    "cosine": "cos",
    "erf": "erf",
}
COMPARE = {
    "EQ": "is_equal",
    "NE": "not_equal",
    "LT": "is_lt",
    "LE": "is_le",
    "GT": "is_gt",
    "GE": "is_ge",
}

FLOATS = ("f64", "f32", "bf16", "f16", "f8e4m3fn", "f8e5m2")
SIGNED = ("s8", "s16", "s32", "s64")
UNSIGNED = ("u8", "u16", "u32", "u64")


def _engine(ty: str) -> str:
    """Integer arithmetic runs on the Pool (GpSimd) engine, float on the vector engine."""
    return "DVE" if ty in FLOATS else "Pool"


@dataclass(frozen=True)
class Step:
    """One compute instruction of a recipe; operands named ``i<k>`` (operand k's tile),
    ``t<k>`` (temporary k) and ``out`` (the result tile)."""

    opcode: str
    ins: tuple[str, ...]
    out: str
    keys: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Plan:
    """The steps of one piece, and the HLO types of the temporaries they use."""

    steps: tuple[Step, ...]
    temps: tuple[str, ...] = ()


def tt(alu: str, a: str = "i0", b: str = "i1", out: str = "out") -> Step:
    """``TensorTensor op``."""
    return Step("TensorTensor", (a, b), out, (("op", alu),))


def ts(alu: str, c: float, x: str = "i0", out: str = "out", **more: Any) -> Step:
    """``TensorScalar op0 const0`` (and whatever ``more`` keys)."""
    return Step("TensorScalar", (x,), out, (("op0", alu), ("const0", c), *more.items()))


def act(func: str) -> Step:
    """``Activation func``."""
    return Step("Activation", ("i0",), "out", (("func", func),))


def convert_step(x: str = "i0", out: str = "out") -> Step:
    """``TensorCopy convert``."""
    return Step("TensorCopy", (x,), out, (("convert", True),))


SELECT = Step("Select", ("i0", "i1", "i2"), "out", (("select", True),))


def _all_ones(ty: str) -> int:
    return -1 if ty in SIGNED else (1 << (8 * DTYPE_BYTES[BIR_DTYPES[ty]])) - 1


def _integer_unary(code: str, ty: str) -> Plan:
    if code == "negate":  # 0 − x, wrapping
        return Plan((ts("subtract", 0, reverse0=True),))
    if code == "abs":  # max(x, 0 − x)
        return Plan((ts("subtract", 0, out="t0", reverse0=True), tt("max", "i0", "t0")), (ty,))
    if code == "sign":
        if ty in UNSIGNED:
            return Plan((ts("min", 1),))
        return Plan((ts("max", -1, op1="min", const1=1),))
    return Plan((ts("bitwise_xor", _all_ones(ty)),))  # not


def _unary(code: str, ty: str, x: Buf) -> Plan | Buf:
    """negate, abs, sign, not."""
    if ty in FLOATS and code != "not":
        return Plan((ts("mult", -1.0),) if code == "negate" else (act(code),))
    if code == "not" and ty == "pred":
        return Plan((ts("is_equal", 0),))
    if code == "abs" and ty in UNSIGNED:
        return x
    return _integer_unary(code, ty)


def _recipe(op: Op, operands: list[Buf]) -> Plan | Buf:
    """The compute plan of one piece — or, when no instruction is needed, the result itself."""
    code = op.instr.opcode
    ty = op.ty
    src = operands[0].ty if operands else ty
    if code in TENSOR_TENSOR or code in ("and", "or"):
        alu = TENSOR_TENSOR.get(code) or ("logical_" if ty == "pred" else "bitwise_") + code
        return Plan((tt(alu),))
    if code == "compare":
        alu = _compare_op(op, src)
        if src in FLOATS or src in ("pred", "u8"):
            return Plan((tt(alu),))
        return Plan((tt(alu, out="t0"), convert_step("t0")), (src,))
    if code in ACTIVATION:
        if ty not in FLOATS:
            raise op.fail(f"{code} of {ty}: the activation functions take floats")
        return Plan((act(ACTIVATION[code]),))
    if code in ("negate", "abs", "sign", "not"):
        return _unary(code, ty, operands[0])
    if code == "select":
        return Plan((SELECT,))
    if code == "clamp":  # clamp(lo, x, hi) = min(max(x, lo), hi)
        return Plan((tt("max", "i1", "i0", "t0"), tt("min", "t0", "i2")), (ty,))
    if code == "convert":
        return _convert(op, operands[0])
    raise op.fail("not an elementwise op")  # pragma: no cover - dispatch guards it


def _compare_op(op: Op, src: str) -> str:
    direction = op.attr("direction")
    if direction not in COMPARE:
        raise op.fail(f"direction={direction}")
    kind = op.attrs.get("type")
    if kind is not None and kind not in ("FLOAT", "SIGNED", "UNSIGNED"):
        raise op.fail(f"type={kind}: only the default FLOAT/SIGNED/UNSIGNED comparisons")
    return COMPARE[direction]


def _convert(op: Op, x: Buf) -> Plan | Buf:
    ty = op.ty
    same_width_ints = (
        x.ty not in FLOATS
        and ty not in (*FLOATS, "pred")
        and DTYPE_BYTES[BIR_DTYPES[x.ty]] == DTYPE_BYTES[BIR_DTYPES[ty]]
    )
    if x.ty == ty or same_width_ints:
        # the same bytes (two's complement; pred's 0/1): the operand itself, seen as ``ty``
        return Buf(x.set, op.dims, ty)
    if ty == "pred":
        if x.ty in FLOATS or BIR_DTYPES[x.ty] == "uint8":
            return Plan((ts("not_equal", 0),))
        return Plan((ts("not_equal", 0, out="t0"), convert_step("t0")), (x.ty,))
    return Plan((convert_step(),))


def emit_plan(b: Builder, step: str, plan: Plan, tiles: dict[str, Access], ty: str) -> None:
    """The plan's instructions over the named tiles (``ty``: the result's HLO type)."""
    engine = _engine(ty)
    for s in plan.steps:
        eng = "Activation" if s.opcode == "Activation" else engine
        b.emit(step, s.opcode, eng, [tiles[x] for x in s.ins], [tiles[s.out]], **dict(s.keys))


def elementwise(op: Op) -> Value:
    """One elementwise instruction (see the module doc)."""
    operands = op.bufs()
    dims = op.dims
    for k, x in enumerate(operands):
        scalar_ok = op.instr.opcode in ("clamp", "select") and not x.dims
        if x.dims != dims and not scalar_ok:
            raise op.fail(f"operand {k} has shape {list(x.dims)}, the result {list(dims)}")
    plan = _recipe(op, operands)
    if isinstance(plan, Buf):
        return plan
    out = op.result()
    total = out.size
    if total == 0:
        return out
    types = [x.ty for x in operands] + [out.ty, *plan.temps]
    width = max(DTYPE_BYTES[BIR_DTYPES[t]] for t in types)
    cols = tile_cols(total, free_limit(op.lowerer.geo, len(types), width))
    rows = min(MAX_PARTITIONS, -(-total // cols))
    b = op.b
    in_tiles = [Tile.new(b, f"in{k}", x.dtype, rows, cols) for k, x in enumerate(operands)]
    out_tile = Tile.new(b, "out", out.dtype, rows, cols)
    temp_tiles = [
        Tile.new(b, f"tmp{k}", BIR_DTYPES[t], rows, cols) for k, t in enumerate(plan.temps)
    ]
    pieces = flat_pieces(total, cols)
    for t, p in enumerate(pieces):
        tag = f"t{t}." if len(pieces) > 1 else ""
        tiles = {"out": out_tile.piece(p)}
        for k, (x, tile) in enumerate(zip(operands, in_tiles, strict=True)):
            broadcast = not x.dims and bool(dims)
            src = x.access([(0, p.rows), (0, p.cols)]) if broadcast else x.access(p.dram(), p.start)
            tiles[f"i{k}"] = tile.piece(p)
            b.dma(f"{tag}load{k}", src, tiles[f"i{k}"])
        for k, tile in enumerate(temp_tiles):
            tiles[f"t{k}"] = tile.piece(p)
        emit_plan(b, f"{tag}compute", plan, tiles, out.ty)
        b.dma(f"{tag}store", tiles["out"], out.access(p.dram(), p.start))
    return out


HANDLERS = {
    code: elementwise
    for code in (
        *TENSOR_TENSOR,
        *ACTIVATION,
        "and",
        "or",
        "not",
        "compare",
        "negate",
        "abs",
        "sign",
        "select",
        "clamp",
        "convert",
    )
}
