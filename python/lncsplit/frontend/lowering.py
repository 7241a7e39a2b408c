"""Front↔back: lower the LNC sharding constraints of an HLO module to a symbolic BIR module.

For every ``AwsNeuronLNCShardingConstraint %x`` with shape S and sharding over N = ``lnc``
devices, :func:`lower_to_symbolic_json` emits ``DMACopy`` instruction(s) whose ``outs[0]`` is a
``symbolic_ap`` with ``ap[d] = [row-major stride of S along d, tile extent]`` and ``addrs[d]`` a
pelican v2 expression that evaluates, with the shard bound to core c, to XLA's
``tile_offset_for_device(S, c)[d]``.

* One instruction ``x`` when every core has the same tile extents and each per-dim offset is a
  *digit-linear* function of the shard id: ``off(c) = b + Σ g_k·((c // w_k) mod p_k)`` over the
  prime-factor digits of N (covers every iota sharding and permutations built from digit
  transposes, ``last_tile_dim_replicate`` included). Each digit becomes
  ``Mult(Modulo(FloorDiv(AffExpr(shard), w), p), g)`` (``FloorDiv``/``Modulo`` are dropped where
  they are the identity; a digit covering all of N is folded into the affine term itself).
* Otherwise per-core variants ``x.0``, ``x.1``, … — one per maximal run of consecutive cores
  with equal extents whose offsets are affine in the shard id (else one per core), each carrying
  predicates that select exactly its cores: ``shard - c == 0`` or ``shard - lo >= 0`` and
  ``hi - shard >= 0``. After ``lncsplit.split`` exactly one variant survives on each core.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lncsplit._inputs import HLO_SUFFIXES, read_input
from lncsplit.errors import LncsplitError
from lncsplit.frontend.dtypes import DTYPE_BYTES, HLO_TO_BIR_DTYPE

from .config import canonical_arch
from .custom_calls import LNC_SHARDING_CONSTRAINT, CustomCallCheckError, check_custom_call
from .hlo import HloInstruction, HloModule
from .sharding import HloSharding, HloShardingParseError
from .tile_assignment import _prime_factors

__all__ = [
    "HLO_SUFFIXES",
    "HLO_TO_BIR_DTYPE",
    "LoweredHlo",
    "LoweringError",
    "NothingToLowerError",
    "digit_linear_fit",
    "is_hlo_path",
    "lower_hlo_file",
    "lower_hlo_text",
    "lower_to_symbolic",
    "lower_to_symbolic_json",
    "offset_expression",
]

JsonDict = dict[str, Any]


class LoweringError(LncsplitError, ValueError):
    """An HLO module that cannot be lowered (bad sharding, tuple shape, unknown dtype, ...)."""


class NothingToLowerError(LoweringError):
    """The HLO text has no LNC sharding constraint (``AwsNeuronLNCShardingConstraint`` or JAX's
    ``Sharding``), or no instruction at all."""


#: JAX's stock sharding-constraint custom call (``jax.lax.with_sharding_constraint``): lowered
#: like ``AwsNeuronLNCShardingConstraint`` when its mesh is the LNC mesh (contract §3.5).
JAX_SHARDING = "Sharding"

#: The custom-call targets lowered as LNC sharding constraints.
CONSTRAINT_TARGETS = (LNC_SHARDING_CONSTRAINT, JAX_SHARDING)


# ----------------------------------------------------------------------------------------------
# pelican v2 wire helpers
# ----------------------------------------------------------------------------------------------


def _shard(n: int) -> JsonDict:
    return {"kind": "ShardIDKind", "ub": n}


def _aff(terms: Sequence[tuple[JsonDict, int]], c: int = 0) -> JsonDict:
    return {
        "kind": "AffExprKind",
        "terms": [{"idx": idx, "coeff": coeff} for idx, coeff in terms if coeff != 0],
        "c": c,
    }


def _const(c: int) -> JsonDict:
    return _aff([], c)


def digit_linear_fit(values: Sequence[int]) -> tuple[int, list[tuple[int, int, int]]] | None:
    """Fit ``values[c] = b + Σ g·((c // w) mod p)`` over the prime digits of ``len(values)``.

    Returns ``(b, [(w, p, g), ...])`` with adjacent digits merged and zero coefficients dropped,
    or None when the function is not digit-linear.
    """
    n = len(values)
    base = int(values[0])
    found: tuple[list[int], list[int], list[int]] | None = None
    for digits_t in sorted(set(itertools.permutations(_prime_factors(n)))):
        digits = list(digits_t)
        weights = [math.prod(digits[k + 1 :]) for k in range(len(digits))]
        coeffs = [int(values[w]) - base for w in weights]
        if all(
            base + sum(g * ((c // w) % p) for g, w, p in zip(coeffs, weights, digits, strict=True))
            == values[c]
            for c in range(n)
        ):
            found = (digits, weights, coeffs)
            break
    if found is None:
        return None
    digits, weights, coeffs = found
    # merge from the least significant digit upwards: (w, p, g) items, most significant first
    items = [(w, p, g) for w, p, g in zip(weights, digits, coeffs, strict=True)]
    merged: list[tuple[int, int, int]] = []
    for w, p, g in reversed(items):
        if merged:
            mw, mp, mg = merged[-1]
            if g == mg * mp and (mg != 0 or g == 0):
                merged[-1] = (mw, mp * p, mg)
                continue
        merged.append((w, p, g))
    merged.reverse()
    return base, [(w, p, g) for w, p, g in merged if g != 0]


def offset_expression(values: Sequence[int]) -> JsonDict | None:
    """A pelican v2 expression of the shard id (``ub = len(values)``) equal to ``values[c]``.

    None when ``values`` is not digit-linear (see :func:`digit_linear_fit`).
    """
    n = len(values)
    fit = digit_linear_fit(values)
    if fit is None:
        return None
    base, terms = fit
    if not terms:
        return _const(base)
    shard = _shard(n)
    if len(terms) == 1 and terms[0][0] == 1 and terms[0][1] == n:
        return _aff([(shard, terms[0][2])], base)
    parts: list[JsonDict] = []
    for w, p, g in terms:
        e: JsonDict = _aff([(shard, 1)])
        if w > 1:
            e = {"kind": "FloorDivKind", "numer": e, "denom": w}
        if w * p < n:
            e = {"kind": "ModuloKind", "numer": e, "denom": p}
        if g != 1:
            e = {"kind": "MultKind", "var": e, "scale": g}
        parts.append(e)
    if base != 0:
        parts.append(_const(base))
    if len(parts) == 1:
        return parts[0]
    return {"kind": "SumKind", "n_terms": len(parts), "terms": parts}


def _affine_fit(cores: Sequence[int], values: Sequence[int]) -> tuple[int, int] | None:
    """``(a, b)`` with ``values[i] == a*cores[i] + b`` for all i, else None."""
    if len(cores) == 1:
        return 0, int(values[0])
    a_num = values[1] - values[0]
    a_den = cores[1] - cores[0]
    if a_num % a_den != 0:
        return None
    a = a_num // a_den
    b = values[0] - a * cores[0]
    if all(a * c + b == v for c, v in zip(cores, values, strict=True)):
        return a, b
    return None


def _select_predicates(lo: int, hi: int, n: int) -> list[JsonDict]:
    shard = _shard(n)
    if lo == hi:
        return [{"expr": _aff([(shard, 1)], -lo), "ge": False}]
    preds: list[JsonDict] = []
    if lo > 0:
        preds.append({"expr": _aff([(shard, 1)], -lo), "ge": True})
    if hi < n - 1:
        preds.append({"expr": _aff([(shard, -1)], hi), "ge": True})
    return preds


# ----------------------------------------------------------------------------------------------
# the lowering
# ----------------------------------------------------------------------------------------------


def _strides(dims: Sequence[int]) -> list[int]:
    return [math.prod(dims[d + 1 :]) for d in range(len(dims))]


def _bir_dtype(instr: HloInstruction) -> str:
    dt = instr.shape.dtype
    if dt not in HLO_TO_BIR_DTYPE:
        raise LoweringError(f"%{instr.name}: element type {dt!r} has no BIR dtype")
    return HLO_TO_BIR_DTYPE[dt]


def _sym_ap(
    memset: str, dtype: str, dims: Sequence[int], extents: Sequence[int], addrs: Sequence[JsonDict]
) -> JsonDict:
    if not dims:  # scalar: one element
        return {
            "kind": "symbolic_ap",
            "ap": [[1, 1]],
            "dtype": dtype,
            "memsetref": memset,
            "addrs": [_const(0)],
        }
    return {
        "kind": "symbolic_ap",
        "ap": [[s, e] for s, e in zip(_strides(dims), extents, strict=True)],
        "dtype": dtype,
        "memsetref": memset,
        "addrs": list(addrs),
    }


def _per_core_tiles(
    sharding: HloSharding, dims: tuple[int, ...], n: int, name: str
) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    if sharding.is_tuple:
        raise LoweringError(f"%{name}: tuple shardings cannot pin an array value")
    if sharding.kind in ("manual", "unknown", "unreduced") or sharding.has_manual_subgroup:
        raise LoweringError(f"%{name}: {sharding} does not map tiles to LNC cores")
    try:
        if sharding.kind == "maximal":
            dev = sharding.unique_device
            assert dev is not None
            if not 0 <= dev < n:
                raise LoweringError(f"%{name}: maximal device {dev} is not a core of lnc={n}")
        elif sharding.is_tiled:
            sharding.validate(dims, n)
    except LoweringError:
        raise
    except ValueError as exc:
        raise LoweringError(f"%{name}: {exc}") from None
    offsets = [sharding.tile_offset_for_device(dims, c) for c in range(n)]
    limits = [sharding.tile_limit_for_device(dims, c) for c in range(n)]
    extents = [
        tuple(b - a for a, b in zip(o, li, strict=True))
        for o, li in zip(offsets, limits, strict=True)
    ]
    return offsets, extents


def _constraint_sharding(instr: HloInstruction) -> HloSharding:
    """The constraint's sharding; a text XLA's parser rejects keeps XLA's message."""
    text = instr.attributes.get("sharding")
    target = instr.custom_call_target
    if text is None:
        raise LoweringError(f"%{instr.name}: {target} without a sharding")
    try:
        return HloSharding.parse(text)
    except HloShardingParseError as exc:
        raise LoweringError(
            f"%{instr.name}: {target} sharding={text}: {exc} (at offset {exc.position})"
        ) from None


@dataclass(frozen=True)
class _CopyShape:
    """What every lowered copy of one constraint shares: its sets, dtype, shapes and sharding."""

    out_set: str
    in_set: str
    dtype: str
    dims: tuple[int, ...]
    in_dims: tuple[int, ...]
    hlo_sharding: str

    def make(
        self, name: str, ext: Sequence[int], addrs: Sequence[JsonDict], preds: list[JsonDict]
    ) -> JsonDict:
        """One ``DMACopy``: reads the tile ``addrs``/``ext`` of the operand and writes the same
        tile of the result (contract §3.5): a copy of equal counts, as the simulator copies."""
        ins = _sym_ap(
            self.in_set, self.dtype, self.in_dims, ext, json.loads(json.dumps(list(addrs)))
        )
        d: JsonDict = {
            "name": name,
            "opcode": "DMACopy",
            "engine": "DMA",
            "ins": [ins],
            "outs": [_sym_ap(self.out_set, self.dtype, self.dims, ext, addrs)],
            "mode": "Copy",
        }
        if preds:
            d["predicates"] = preds
        d["hlo_sharding"] = self.hlo_sharding
        return d


def _digit_linear_addrs(
    offsets: Sequence[tuple[int, ...]], extents: Sequence[tuple[int, ...]], ndims: int
) -> list[JsonDict] | None:
    """One expression per dim when every core has the same extents and digit-linear offsets."""
    if any(e != extents[0] for e in extents):
        return None
    exprs = [offset_expression([off[d] for off in offsets]) for d in range(ndims)]
    if any(x is None for x in exprs):
        return None
    return [x for x in exprs if x is not None]


def _run_end(
    c: int, offsets: Sequence[tuple[int, ...]], extents: Sequence[tuple[int, ...]], ndims: int
) -> int:
    """The last core of the maximal run from ``c`` with equal extents and affine offsets."""
    hi = c
    for cand in range(c + 1, len(offsets)):
        if extents[cand] != extents[c]:
            break
        cores = list(range(c, cand + 1))
        if any(_affine_fit(cores, [offsets[k][d] for k in cores]) is None for d in range(ndims)):
            break
        hi = cand
    return hi


def _run_addrs(cores: list[int], offsets: Sequence[tuple[int, ...]], ndims: int) -> list[JsonDict]:
    n = len(offsets)
    exprs: list[JsonDict] = []
    for d in range(ndims):
        f = _affine_fit(cores, [offsets[k][d] for k in cores])
        assert f is not None
        a, b = f
        exprs.append(_aff([(_shard(n), a)], b) if a != 0 else _const(b))
    return exprs


def _affine_runs(
    offsets: Sequence[tuple[int, ...]], extents: Sequence[tuple[int, ...]], ndims: int
) -> list[tuple[int, int, list[JsonDict]]]:
    """Runs ``(lo, hi, addrs)`` of consecutive cores with equal extents and affine offsets."""
    runs: list[tuple[int, int, list[JsonDict]]] = []
    c = 0
    while c < len(offsets):
        hi = _run_end(c, offsets, extents, ndims)
        runs.append((c, hi, _run_addrs(list(range(c, hi + 1)), offsets, ndims)))
        c = hi + 1
    return runs


def _lower_constraint(
    instr: HloInstruction, out_set: str, in_set: str, in_dims: tuple[int, ...], n: int
) -> list[JsonDict]:
    sharding = _constraint_sharding(instr)
    if instr.shape.is_tuple:
        raise LoweringError(f"%{instr.name}: tuple-shaped {LNC_SHARDING_CONSTRAINT}")
    dims = instr.shape.dims
    copy = _CopyShape(
        out_set,
        in_set,
        _bir_dtype(instr),
        dims,
        in_dims,
        sharding.to_string(include_metadata=False),
    )
    offsets, extents = _per_core_tiles(sharding, dims, n, instr.name)
    # one instruction: equal extents, digit-linear offsets on every dim
    addrs = _digit_linear_addrs(offsets, extents, len(dims))
    if addrs is not None:
        return [copy.make(instr.name, extents[0], addrs, [])]
    # variants: runs of consecutive cores with equal extents and affine offsets
    runs = _affine_runs(offsets, extents, len(dims))
    if len(runs) == 1:
        lo, _, addrs = runs[0]
        return [copy.make(instr.name, extents[lo], addrs, [])]
    return [
        copy.make(f"{instr.name}.{k}", extents[lo], addrs, _select_predicates(lo, hi, n))
        for k, (lo, hi, addrs) in enumerate(runs)
    ]


class _Allocations:
    """The DRAM memory location sets of the lowered module, placed one after another."""

    def __init__(self) -> None:
        self.sets: dict[str, JsonDict] = {}
        self.next_addr = 0

    def add(self, name: str, kind: str, dtype: str, dims: Sequence[int]) -> None:
        if name in self.sets:
            return
        shape = list(dims) if dims else [1]
        size = DTYPE_BYTES.get(dtype, 1) * math.prod(shape)
        self.sets[name] = {
            "name": name,
            "kind": kind,
            "dtype": dtype,
            "tensor_shape": shape,
            "partition_dim": 0,
            "addr_space": "Local",
            "locations": [{"name": f"{name}.dram", "type": "DRAM", "addr": self.next_addr}],
        }
        self.next_addr += -(-size // 64) * 64


def _lower_instruction(
    hlo_module: HloModule, instr: HloInstruction, allocs: _Allocations, n: int
) -> list[JsonDict]:
    """The copies of one constraint, with the memory location sets it reads and writes."""
    if not instr.operands:
        raise LoweringError(f"%{instr.name}: {LNC_SHARDING_CONSTRAINT} has no operand")
    dtype = _bir_dtype(instr)
    op_name = instr.operands[0]
    op = hlo_module.get(op_name)
    op_dims = instr.shape.dims
    op_kind = "Internal"
    if op is not None:
        if not op.shape.is_tuple:
            op_dims = op.shape.dims
        if op.opcode == "parameter":
            op_kind = "Input"
    if tuple(op_dims) != tuple(instr.shape.dims):
        raise LoweringError(
            f"%{instr.name}: operand shape {list(op_dims)} of %{op_name} differs from the "
            f"constraint's {list(instr.shape.dims)}; lncsplit lowers a constraint only over an "
            "operand of its own shape (the copy reads the tile it writes)"
        )
    allocs.add(op_name, op_kind, dtype, op_dims)
    allocs.add(instr.name, "Internal", dtype, instr.shape.dims)
    allocs.sets[instr.name]["kind"] = "Internal"
    return _lower_constraint(instr, instr.name, op_name, op_dims, n)


def _check_is_hlo(hlo_module: HloModule) -> None:
    """Text with neither an ``HloModule`` header nor a computation is not HLO: an error, not an
    empty module."""
    if not hlo_module.header and not hlo_module.computations:
        raise LoweringError(
            "not HLO text: no 'HloModule' header and no computation "
            "(expected the text XLA or JAX prints)"
        )


def _is_constraint(instr: HloInstruction) -> bool:
    """True for an LNC sharding constraint; an unknown ``AwsNeuron*`` target is an error
    (the front end's CustomCallOpChecker)."""
    if instr.opcode != "custom-call":
        return False
    try:
        check_custom_call(instr)
    except CustomCallCheckError as exc:
        raise LoweringError(str(exc)) from exc
    return instr.custom_call_target in CONSTRAINT_TARGETS


def lower_to_symbolic_json(hlo_module: HloModule, lnc: int, *, arch: str = "gen3") -> JsonDict:
    """Lower the LNC sharding constraints of ``hlo_module`` to a symbolic BIR-JSON module (dict).

    The constraints are ``AwsNeuronLNCShardingConstraint`` custom calls and JAX's stock
    ``custom_call_target="Sharding"`` (the same constraint over the LNC mesh: its devices must
    be the ``lnc`` cores). Text with none raises :class:`NothingToLowerError`.

    The module is named ``<hlo name>_nc_symbolic``; it has one function ``main`` (no
    ``shard_ids``: they are derived on load) whose single block holds the lowered ``DMACopy``
    instructions in HLO order. Each constraint gets an ``Internal`` DRAM memory location set
    named after it; each operand a set named after the operand (``Input`` for parameters).
    Raises :class:`LoweringError` for text that is not HLO, an ``AwsNeuron*`` custom call the
    checker does not know, and a constraint that cannot be lowered (with XLA's parse error for
    a sharding it rejects), :class:`NothingToLowerError` when there is no constraint to lower
    (contract §3.5: an empty module would split into nothing), and ``TypeError`` when
    ``hlo_module`` is not an :class:`HloModule` (text is parsed first).
    """
    if not isinstance(hlo_module, HloModule):
        raise TypeError(
            f"hlo_module must be an HloModule, got {type(hlo_module).__name__}: parse the text "
            "first (lower_to_symbolic(HloModule.parse(text), lnc)), or call lower_hlo_text"
        )
    if isinstance(lnc, bool) or not isinstance(lnc, int) or lnc < 1:
        raise LoweringError(f"lnc must be a positive integer, got {lnc!r}")
    _check_is_hlo(hlo_module)
    allocs = _Allocations()
    instructions: list[JsonDict] = []
    for instr in hlo_module.instructions:
        if _is_constraint(instr):
            instructions += _lower_instruction(hlo_module, instr, allocs, lnc)
    if not instructions:
        raise NothingToLowerError(_nothing_message(hlo_module))
    name = hlo_module.name or "module"
    return {
        "version": 2,
        "name": f"{name}_nc_symbolic",
        "arch": canonical_arch(arch),
        "attributes": {},
        "functions": [
            {
                "name": "main",
                "registers": [],
                "allocations": list(allocs.sets.values()),
                "basic_blocks": [{"name": "entry", "instructions": instructions}],
            }
        ],
    }


def _nothing_message(hlo: HloModule) -> str:
    """Why there is nothing to lower: the one wording of the API and of ``lncsplit lower``."""
    instrs = hlo.instructions
    if not instrs:
        return (
            "nothing to lower: no HLO instruction found; is this HLO text as XLA/JAX print it "
            "(jax.jit(f).lower(...).compiler_ir('hlo').as_hlo_text())?"
        )
    return (
        f"nothing to lower: HLO module {hlo.name or '(unnamed)'} has no "
        f"{LNC_SHARDING_CONSTRAINT} or {JAX_SHARDING} custom call ({len(instrs)} other "
        "instruction(s) found); a module XLA partitioned (after spmd-partitioning) is lowered "
        "whole by lower_partitioned"
    )


def lower_to_symbolic(hlo_module: HloModule, lnc: int, *, arch: str = "gen3") -> Any:
    """:func:`lower_to_symbolic_json` loaded as an ``lncsplit.Module`` (imported lazily).

    Raises :class:`NothingToLowerError` when nothing is pinned to a core (contract §3.5).
    """
    lncsplit = importlib.import_module("lncsplit")

    d = lower_to_symbolic_json(hlo_module, lnc, arch=arch)
    return lncsplit.Module.from_json(json.dumps(d))


@dataclass
class LoweredHlo:
    """:func:`lower_hlo_text`'s result: the module's JSON document and notes for the user.

    A lowering that writes its document as JSON text (``lower_partitioned``) passes ``text``
    and leaves ``document`` empty: :attr:`json_document` parses it on demand."""

    document: JsonDict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the N it was lowered for
    lnc: int | None = None
    #: the document as JSON text, when it was written as text
    text: str | None = None

    @property
    def json_document(self) -> JsonDict:
        """The document as a dict (parsed from ``text`` when that is what was written)."""
        if self.text is not None and not self.document:
            self.document = json.loads(self.text)
        return self.document

    def module(self) -> Any:
        """The document loaded as an ``lncsplit.Module``."""
        lncsplit = importlib.import_module("lncsplit")
        return lncsplit.Module.from_json(
            self.text if self.text is not None else json.dumps(self.document)
        )


def lower_hlo_text(text: str, lnc: int, *, arch: str = "gen3") -> LoweredHlo:
    """Parse HLO text (as ``jax.jit(f).lower(...).compiler_ir("hlo").as_hlo_text()`` prints it)
    and lower its LNC sharding constraints (:func:`lower_to_symbolic_json`).

    Raises :class:`NothingToLowerError` when the text holds no HLO instruction or no
    ``AwsNeuronLNCShardingConstraint`` (lncsplit lowers only those: there would be nothing to
    split). The notes say what was lowered and what was left out.
    """
    hlo = HloModule.parse(text)
    instrs = list(hlo.instructions)
    constraints = [
        i
        for i in instrs
        if i.opcode == "custom-call" and i.custom_call_target in CONSTRAINT_TARGETS
    ]
    if not constraints:  # before lower_to_symbolic_json: text that is not HLO at all too
        raise NothingToLowerError(_nothing_message(hlo))
    doc = lower_to_symbolic_json(hlo, lnc, arch=arch)
    made = sum(len(b["instructions"]) for f in doc["functions"] for b in f["basic_blocks"])
    targets = " and ".join(dict.fromkeys(str(i.custom_call_target) for i in constraints))
    notes = [
        f"lowered {len(constraints)} {targets} custom call(s) of HLO module "
        f"{hlo.name or '(unnamed)'} to {made} instruction(s) for lnc {lnc}"
    ]
    others = len(instrs) - len(constraints)
    if others:
        notes.append(
            f"{others} other HLO instruction(s) are not lowered: lncsplit lowers only the LNC "
            "sharding constraints (the data each core owns), not the computation"
        )
    return LoweredHlo(doc, notes, lnc)


def is_hlo_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names HLO text (``*.hlo``, ``*.hlo.txt``; case-insensitive)."""
    return os.fspath(path).lower().endswith(HLO_SUFFIXES)


def lower_hlo_file(path: str | os.PathLike[str], lnc: int, *, arch: str = "gen3") -> LoweredHlo:
    """:func:`lower_hlo_text` of a file (UTF-8; a regular file only, contract §6)."""
    return lower_hlo_text(read_input(os.fspath(path)).decode("utf-8"), lnc, arch=arch)
