"""The BIR-JSON document the lowering writes: sets, instructions, access patterns.

One function ``main``, one block ``entry`` (contract §3.9). :class:`Builder` owns the names
(unique sets and instructions), places memory (private DRAM bump-allocated, 64-byte aligned;
each op's SBUF tiles from address 0 and its PSUM tiles from bank 0 — ops run one after the other
on one core, so one op's scratch is free when the next begins), and writes instructions as plain
dicts. Access patterns follow contract §3.6: ``ap`` steps are flat element strides, the start is
``addrs[0]`` partitions plus an element offset in the last entry (:func:`addrs_for`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from lncsplit.arch import ArchGeometry
from lncsplit.frontend.dtypes import DTYPE_BYTES, NUMERIC_HLO_DTYPES

from ..lowering import LoweringError

JsonDict = dict[str, Any]
Pattern = list[tuple[int, int]]  # [(step, num), ...], partition dim first
Offset = int | JsonDict  # an element offset: a number or a pelican expression of the shard

#: HLO element type → BIR dtype, for the types whose values are simulated as JAX computes them.
BIR_DTYPES = NUMERIC_HLO_DTYPES

DRAM_ALIGN = 64
SB_ALIGN = 64


_CONSTANTS: dict[int, JsonDict] = {}


def const_expr(c: int) -> JsonDict:
    """The pelican v2 constant ``c`` (one shared dict per value: the document is only ever
    serialized, never mutated, and lowering writes the same few constants many times)."""
    e = _CONSTANTS.get(c)
    if e is None:
        e = {"kind": "AffExprKind", "terms": [], "c": int(c)}
        if len(_CONSTANTS) < 1 << 16:
            _CONSTANTS[c] = e
    return e


_ZERO = const_expr(0)


def addrs_for(k: int, partition: Offset, element: Offset) -> list[JsonDict]:
    """``addrs`` of a ``k``-dim AP (k ≥ 2) starting ``partition`` partitions and ``element``
    elements into its set: contract §3.6 adds ``addrs[0]·F`` and, past dim 0, the last entry
    times a stride of 1 (``S′[last] = 1`` when the AP has the set's rank; the plain sum when it
    has not), so every shape of set reads the same start."""
    first = const_expr(partition) if isinstance(partition, int) else partition
    last = const_expr(element) if isinstance(element, int) else element
    if k == 2:
        return [first, last]
    return [first, *([_ZERO] * (k - 2)), last]


_AP_TEXT: dict[Any, str] = {}
_EXPR_TEXT: dict[int, str] = {}


def expr_text(x: Offset | JsonDict) -> str:
    """An expression (or a constant) as JSON text."""
    if isinstance(x, int):
        hit = _EXPR_TEXT.get(x)
        if hit is None:
            hit = f'{{"kind":"AffExprKind","terms":[],"c":{x}}}'
            if len(_EXPR_TEXT) < 1 << 16:
                _EXPR_TEXT[x] = hit
        return hit
    if x.get("kind") == "AffExprKind" and not x.get("terms"):
        return expr_text(int(x["c"]))
    return json.dumps(x, separators=(",", ":"))


_ZERO_TEXT = '{"kind":"AffExprKind","terms":[],"c":0}'


_KEY_TEXT: dict[tuple[str, Any, type], str] = {}


def _key_text(key: str, v: Any) -> str:
    """``,"key":value`` (memoized for the few scalar keys the lowering writes again and again)."""
    if isinstance(v, (dict, list)):
        return f',"{key}":{value_text(v)}'
    k = (key, v, type(v))
    hit = _KEY_TEXT.get(k)
    if hit is None:
        hit = f',"{key}":{value_text(v)}'
        if len(_KEY_TEXT) < 1 << 16:
            _KEY_TEXT[k] = hit
    return hit


def value_text(v: Any) -> str:
    """An op-specific key's value as JSON text."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    return json.dumps(v, separators=(",", ":"))


class Access(NamedTuple):
    """One access pattern: ``set`` from ``partition``/``element`` with ``pattern`` (a tuple:
    it is built in every loop of the lowering, and, with number offsets, is its own cache key)."""

    set: str
    dtype: str
    pattern: tuple[tuple[int, int], ...]
    partition: Offset = 0
    element: Offset = 0

    @property
    def elements(self) -> int:
        """Elements the pattern touches."""
        return math.prod(n for _, n in self.pattern)

    def json(self) -> JsonDict:
        """The argument as a dict."""
        out: JsonDict = json.loads(self.text())
        return out

    def text(self) -> str:
        """The argument as JSON text (cached: a loop writes the same few APs many times)."""
        # Tiles are read from their start again and again; DRAM offsets mostly once each.
        cacheable = self.partition == 0 and self.element == 0
        if cacheable:
            hit = _AP_TEXT.get(self)
            if hit is not None:
                return hit
        pattern = self.pattern
        if len(pattern) < 2:
            pattern = ((1, 1), *pattern) if pattern else ((1, 1), (1, 1))
        if len(pattern) == 2:
            (s0, n0), (s1, n1) = pattern
            ap = f"[{s0},{n0}],[{s1},{n1}]"
            zeros = ""
        else:
            ap = ",".join(f"[{s},{n}]" for s, n in pattern)
            zeros = ("," + _ZERO_TEXT) * (len(pattern) - 2)
        text = (
            f'{{"kind":"symbolic_ap","ap":[{ap}],"dtype":"{self.dtype}","memsetref":'
            f'{_quoted(self.set)},"addrs":[{expr_text(self.partition)}{zeros},'
            f"{expr_text(self.element)}]}}"
        )
        if cacheable and len(_AP_TEXT) < 1 << 18:
            _AP_TEXT[self] = text
        return text


class ApTemplate(NamedTuple):
    """An AP whose element offset changes from one use to the next (a loop over DRAM):
    rendered once up to the offset, so each use is one concatenation."""

    head: str
    tail: str

    @classmethod
    def of(cls, set_: str, dtype: str, pattern: tuple[tuple[int, int], ...]) -> ApTemplate:
        marker = -987654321
        text = Access(set_, dtype, pattern, 0, marker).text()
        head, _, tail = text.partition(expr_text(marker))
        return cls(head, tail)

    def at(self, element: int) -> str:
        """The AP's JSON text from flat element ``element``."""
        return self.head + expr_text(element) + self.tail


_QUOTED: dict[str, str] = {}


def _quoted(name: str) -> str:
    """A set name as a JSON string (memoized: a few sets are named by many APs)."""
    hit = _QUOTED.get(name)
    if hit is None:
        hit = json.dumps(name)
        if len(_QUOTED) < 1 << 16:
            _QUOTED[name] = hit
    return hit


@dataclass(frozen=True)
class DimAccess:
    """An access of a whole-program (Shared) tensor in §3.5's form: ``addrs[d]`` the tile's
    offset along tensor dim d, ``ap[d] = [row-major stride, extent]``."""

    set: str
    dtype: str
    dims: tuple[int, ...]
    offsets: tuple[Offset, ...]
    extents: tuple[int, ...]

    @property
    def elements(self) -> int:
        """Elements the access touches."""
        return math.prod(self.extents)

    def json(self) -> JsonDict:
        """The argument as a dict."""
        out: JsonDict = json.loads(self.text())
        return out

    def text(self) -> str:
        """The argument as JSON text."""
        if not self.dims:
            ap, addrs = "[1,1]", expr_text(0)
        else:
            strides = [math.prod(self.dims[d + 1 :]) for d in range(len(self.dims))]
            ap = ",".join(f"[{s},{e}]" for s, e in zip(strides, self.extents, strict=True))
            addrs = ",".join(expr_text(o) for o in self.offsets)
        return (
            f'{{"kind":"symbolic_ap","ap":[{ap}],"dtype":"{self.dtype}",'
            f'"memsetref":{json.dumps(self.set)},"addrs":[{addrs}]}}'
        )


AnyAccess = Access | DimAccess


class Builder:
    """Accumulates the module's sets and instructions."""

    def __init__(self, n: int, geo: ArchGeometry) -> None:
        self.n = n
        self.geo = geo
        self.sets: dict[str, JsonDict] = {}
        #: the instructions, each as its JSON text
        self.instructions: list[str] = []
        self._names: set[str] = set()
        self._repeats: dict[str, int] = {}
        self._dram_next = 0
        self._sb_next = 0
        self._psum_next = 0
        #: the HLO instruction being lowered (its name prefixes what it emits)
        self.prefix = ""
        #: how errors name it: ``%name (line L)`` (contract §3.9)
        self.where = ""

    # -- names -------------------------------------------------------------------------------

    def _unique(self, base: str, taken: Any) -> str:
        if base not in taken:
            return base
        k = 1
        while f"{base}.{k}" in taken:
            k += 1
        return f"{base}.{k}"

    def inst_name(self, step: str) -> str:
        """A unique instruction name ``<prefix>.<step>`` (``<prefix>`` alone for an empty step;
        ``<base>.<k>`` for the k-th repeat of a base, counted per base)."""
        base = f"{self.prefix}.{step}" if step else self.prefix
        name = base
        while name in self._names:
            k = self._repeats.get(base, 0) + 1
            self._repeats[base] = k
            name = f"{base}.{k}"
        self._names.add(name)
        return name

    # -- memory ------------------------------------------------------------------------------

    def begin_op(self, prefix: str, where: str | None = None) -> None:
        """Start lowering one HLO instruction (``where`` names it in errors, ``%name (line
        L)``): its scratch starts at SBUF 0 and PSUM bank 0."""
        self.prefix = prefix
        self.where = where or f"%{prefix}"
        self._sb_next = 0
        self._psum_next = 0

    def _add_set(
        self,
        base: str,
        kind: str,
        dtype: str,
        shape: Sequence[int],
        location: JsonDict,
        addr_space: str = "Local",
        values: Any = None,
    ) -> str:
        name = self._unique(base, self.sets)
        d: JsonDict = {
            "name": name,
            "kind": kind,
            "dtype": dtype,
            "tensor_shape": [int(x) for x in shape] or [1],
            "partition_dim": 0,
            "addr_space": addr_space,
            "locations": [{"name": f"{name}.{location.pop('suffix')}", **location}],
        }
        if values is not None:
            d["values"] = values
        self.sets[name] = d
        return name

    def _place_dram(self, base: str, dtype: str, shape: Sequence[int]) -> int:
        """The next private DRAM address; a set past the core's window is a LoweringError."""
        size = DTYPE_BYTES[dtype] * max(1, math.prod(shape))
        addr = self._dram_next
        self._dram_next += -(-size // DRAM_ALIGN) * DRAM_ALIGN
        if self._dram_next > self.geo.dram_bytes:
            raise LoweringError(
                f"{self.where}: {base} {dtype}{list(shape)} does not fit: the program's per-core values "
                f"take {self._dram_next} bytes of private DRAM, more than the "
                f"{self.geo.dram_bytes} bytes of one {self.geo.name} core"
            )
        return addr

    def dram(self, base: str, dtype: str, shape: Sequence[int], kind: str = "Internal") -> str:
        """A private DRAM set (placed in this core's window)."""
        loc = {"suffix": "dram", "type": "DRAM", "addr": self._place_dram(base, dtype, shape)}
        return self._add_set(base, kind, dtype, shape, loc)

    def shared(
        self, name: str, kind: str, dtype: str, shape: Sequence[int], where: str = ""
    ) -> str:
        """A whole-program tensor in Shared DRAM (placed later, once, on core 0: §3.4);
        ``where`` names its HLO instruction in errors."""
        loc = {"suffix": "dram", "type": "DRAM"}
        out = self._add_set(name, kind, dtype, shape, loc, addr_space="Shared")
        if self.shared_dram_bytes() > self.geo.dram_bytes:
            raise LoweringError(
                f"{where or name}: {name} {dtype}{list(shape)} does not fit: the program's inputs and outputs "
                f"take {self.shared_dram_bytes()} bytes of shared DRAM, more than the "
                f"{self.geo.dram_bytes} bytes of the shared region"
            )
        return out

    def const(self, base: str, dtype: str, shape: Sequence[int], values: np.ndarray) -> str:
        """A ``Const`` DRAM set carrying its ``values`` (contract §3.8)."""
        loc = {"suffix": "dram", "type": "DRAM", "addr": self._place_dram(base, dtype, shape)}
        return self._add_set(base, "Const", dtype, shape, loc, values=const_values(values, dtype))

    def sb(self, base: str, dtype: str, partitions: int, free: int) -> str:
        """An SBUF tile of ``partitions`` × ``free`` elements (this op's scratch)."""
        bpp = DTYPE_BYTES[dtype] * free
        addr = self._sb_next
        self._sb_next += -(-bpp // SB_ALIGN) * SB_ALIGN
        loc = {"suffix": "sb", "type": "SB", "addr": addr, "base": 0}
        return self._add_set(f"{self.prefix}.{base}", "Internal", dtype, [partitions, free], loc)

    def psum(self, base: str, partitions: int, free: int) -> str:
        """A float32 PSUM tile (one bank: ``free`` ≤ 512)."""
        bank = self._psum_next
        self._psum_next += 1
        loc = {
            "suffix": "psum",
            "type": "PSUM",
            "addr": bank * self.geo.psum_bank_size,
            "bank": bank,
            "base": 0,
        }
        return self._add_set(
            f"{self.prefix}.{base}", "Internal", "float32", [partitions, free], loc
        )

    def sb_bytes_used(self) -> int:
        """SBUF bytes per partition this op's tiles take so far."""
        return self._sb_next

    def private_dram_bytes(self) -> int:
        """Bytes of this core's private DRAM the module places."""
        return self._dram_next

    def shared_dram_bytes(self) -> int:
        """Bytes of the Shared sets (each rounded up to the 64-byte alignment of §3.4)."""
        total = 0
        for s in self.sets.values():
            if s["addr_space"] == "Shared":
                size = DTYPE_BYTES[s["dtype"]] * math.prod(s["tensor_shape"])
                total += -(-size // DRAM_ALIGN) * DRAM_ALIGN
        return total

    # -- instructions ------------------------------------------------------------------------

    def emit(
        self,
        step: str,
        opcode: str,
        engine: str,
        ins: Sequence[AnyAccess | str],
        outs: Sequence[AnyAccess | str],
        *,
        predicates: list[JsonDict] | None = None,
        **keys: Any,
    ) -> None:
        """Append one instruction (as JSON text); ``keys`` are its op-specific keys. An
        argument may be given already rendered (``Access.text()``: a loop's invariant APs are
        rendered once)."""
        self.emit_body(step, body(opcode, engine, ins, outs, predicates=predicates, **keys))

    def emit_body(self, step: str, rest: str) -> None:
        """Append one instruction named ``<prefix>.<step>`` whose JSON after the name is
        ``rest`` (from :func:`body` or :func:`dma_body`: a loop renders an instruction that
        repeats once and emits it under each iteration's name)."""
        name = self.inst_name(step)
        # HLO names never hold a quote or a backslash; anything else is quoted as JSON
        quoted = f'"{name}"' if '"' not in name and "\\" not in name else json.dumps(name)
        self.instructions.append('{"name":' + quoted + rest)

    def dma(
        self,
        step: str,
        src: AnyAccess | str,
        dst: AnyAccess | str,
        predicates: list[JsonDict] | None = None,
    ) -> None:
        """A ``DMACopy`` of equal counts (contract §3.8: elements paired in AP order)."""
        if not isinstance(src, str) and not isinstance(dst, str):
            assert src.elements == dst.elements, (src, dst)
        if predicates:
            self.emit(step, "DMACopy", "DMA", [src], [dst], predicates=predicates, mode="Copy")
            return
        # the lowering's most frequent instruction, rendered in one piece
        s = src if isinstance(src, str) else src.text()
        d = dst if isinstance(dst, str) else dst.text()
        self.emit_body(step, dma_body(s, d))


def body(
    opcode: str,
    engine: str,
    ins: Sequence[AnyAccess | str],
    outs: Sequence[AnyAccess | str],
    *,
    predicates: list[JsonDict] | None = None,
    **keys: Any,
) -> str:
    """An instruction's JSON text after its name (``,"opcode":…}``), for
    :meth:`Builder.emit_body`."""
    ins_text = ",".join([a if isinstance(a, str) else a.text() for a in ins])
    outs_text = ",".join([a if isinstance(a, str) else a.text() for a in outs])
    tail = "".join([_key_text(k, v) for k, v in keys.items()])
    if predicates:
        tail = ',"predicates":' + json.dumps(predicates, separators=(",", ":")) + tail
    return (
        f',"opcode":"{opcode}","engine":"{engine}","ins":[{ins_text}],"outs":[{outs_text}]{tail}}}'
    )


def dma_body(src: str, dst: str) -> str:
    """A plain ``DMACopy``'s JSON text after its name, from its rendered source and
    destination (equal counts are the caller's to keep)."""
    return (
        ',"opcode":"DMACopy","engine":"DMA","ins":[' + src + '],"outs":[' + dst + '],"mode":"Copy"}'
    )


_NUMPY_OF_BIR = {
    "float64": "<f8",
    "float32": "<f4",
    "float16": "<f2",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "i1",
    "uint64": "<u8",
    "uint32": "<u4",
    "uint16": "<u2",
    "uint8": "u1",
}


def const_values(values: np.ndarray, dtype: str) -> Any:
    """A ``Const`` set's ``values``: a flat row-major list of numbers, or ``{"hex": …}`` (the
    little-endian bytes in ``dtype``) when a float is not finite — JSON has no inf or NaN."""
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind == "f" and not np.all(np.isfinite(flat)):
        if dtype == "bfloat16":  # bf16 values are held as float32: their top 16 bits
            data = (flat.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
        else:
            data = flat.astype(_NUMPY_OF_BIR[dtype]).tobytes()
        return {"hex": data.hex()}
    if flat.dtype.kind == "f":
        return [float(x) for x in flat]
    return [int(x) for x in flat]


def document_text(name: str, arch: str, sets: list[JsonDict], instructions: list[str]) -> str:
    """The module's BIR-JSON (version 2): one function ``main``, one block ``entry``."""
    return (
        f'{{"version":2,"name":{json.dumps(name)},"arch":"{arch}","attributes":{{}},'
        f'"functions":[{{"name":"main","registers":[],"allocations":'
        f'{json.dumps(sets, separators=(",", ":"))},"basic_blocks":[{{"name":"entry",'
        f'"instructions":[{",".join(instructions)}]}}]}}]}}'
    )
