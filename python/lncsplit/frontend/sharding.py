"""XLA ``HloSharding``: the V2 text format, XLA's construction-time normalizations and tile maths.

Parse with :meth:`HloSharding.parse`, print with ``str()``. Follows xla-sharding-notes §1:
replicated, ``maximal device=N``, manual, unknown, unreduced, tiled (device list or iota
``<=[...]T(...)``), ``last_tile_dim_replicate``, ``last_tile_dims={...}``, tuples (printed with
``/*index=i*/`` before every fifth element), ``shard_as``/``shard_like`` and ``metadata``.
Equality and hashing compare the materialized tile assignment, the flags, the subgroup types and
the shard group; metadata is ignored, as in XLA's ``operator==``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

import numpy as np

from .tile_assignment import IntArray, TileAssignment

__all__ = [
    "HloSharding",
    "HloShardingError",
    "HloShardingParseError",
    "OpMetadata",
    "ShardGroup",
    "ShardingValidationError",
    "SUBGROUP_TYPES",
]

#: Subgroup type names accepted in ``last_tile_dims={...}``, in XLA's normalization order
#: (MAXIMAL < MANUAL < UNREDUCED < REPLICATED).
SUBGROUP_TYPES: tuple[str, ...] = ("maximal", "manual", "unreduced", "replicated")
_TYPE_ORDER = {t: i for i, t in enumerate(SUBGROUP_TYPES)}

#: Field order of XLA's ``OpMetadataToString``.
_METADATA_ORDER = (
    "op_type",
    "op_name",
    "source_file",
    "source_line",
    "source_end_line",
    "source_column",
    "source_end_column",
    "profile_type",
    "deduplicated_name",
    "preserve_layout",
    "scheduling_name",
    "stack_frame_id",
)


class HloShardingError(ValueError):
    """Base error for sharding misuse (XLA CHECK failures surface as this)."""


class HloShardingParseError(HloShardingError):
    """A sharding text that XLA's parser rejects; ``str(e)`` is XLA's exact message."""

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


class ShardingValidationError(HloShardingError):
    """``HloSharding.validate`` failure; the message follows XLA's ``ValidateNonTuple``."""


@runtime_checkable
class _HasDims(Protocol):
    @property
    def dims(self) -> tuple[int, ...]: ...


ShapeLike = Sequence[int] | _HasDims


def _dims_of(shape: ShapeLike) -> tuple[int, ...]:
    if isinstance(shape, _HasDims):
        return tuple(int(d) for d in shape.dims)
    return tuple(int(d) for d in shape)


@dataclass(frozen=True)
class OpMetadata:
    """One ``op_metadata`` record: ``(key, raw value text)`` pairs in XLA's print order."""

    fields: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, fields: Iterable[tuple[str, str]]) -> OpMetadata:
        """Build from pairs, ordering known keys like ``OpMetadataToString`` (unknown keys last)."""
        items = list(fields)
        known = {k: i for i, k in enumerate(_METADATA_ORDER)}
        items.sort(key=lambda kv: known.get(kv[0], len(known)))
        return cls(tuple(items))

    def get(self, key: str) -> str | None:
        """The raw value text of ``key`` (strings keep their quotes)."""
        for k, v in self.fields:
            if k == key:
                return v
        return None

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.fields)


@dataclass(frozen=True)
class ShardGroup:
    """A ``shard_as N`` (``shard_as=True``) or ``shard_like N`` hint."""

    shard_as: bool
    group_id: int

    def __str__(self) -> str:
        return f"{'shard_as' if self.shard_as else 'shard_like'} {self.group_id}"


# ----------------------------------------------------------------------------------------------
# Lexer
# ----------------------------------------------------------------------------------------------

_KEYWORDS = {
    "replicated",
    "maximal",
    "manual",
    "unknown",
    "unreduced",
    "last_tile_dim_replicate",
    "shard_as",
    "shard_like",
    "true",
    "false",
}


@dataclass(frozen=True)
class _Tok:
    kind: str  # "{", "}", "[", "]", "(", ")", ",", "LEQ", "INT", "ATTR", "IDENT", "KW",
    # "STRING", "EOF", "ERROR"
    text: str
    pos: int


def _is_ident_start(c: str) -> bool:
    return c.isalpha() or c == "_"


def _is_ident_char(c: str) -> bool:
    return c.isalnum() or c in "_.-"


def _lex(text: str) -> list[_Tok]:  # noqa: C901
    toks: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "{}[](),":
            toks.append(_Tok(c, c, i))
            i += 1
            continue
        if text.startswith("<=", i):
            toks.append(_Tok("LEQ", "<=", i))
            i += 2
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            toks.append(_Tok("STRING", text[i:j], i))
            i = j
            continue
        if c.isdigit() or (c == "-" and i + 1 < n and text[i + 1].isdigit()):
            j = i + 1
            while j < n and text[j].isdigit():
                j += 1
            toks.append(_Tok("INT", text[i:j], i))
            i = j
            continue
        if _is_ident_start(c):
            j = i + 1
            while j < n and _is_ident_char(text[j]):
                j += 1
            word = text[i:j]
            if j < n and text[j] == "=" and not text.startswith("==", j):
                toks.append(_Tok("ATTR", word, i))
                i = j + 1
                continue
            toks.append(_Tok("KW" if word in _KEYWORDS else "IDENT", word, i))
            i = j
            continue
        toks.append(_Tok("ERROR", c, i))
        i += 1
    toks.append(_Tok("EOF", "", n))
    return toks


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _lex(text)
        self.i = 0

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def lex(self) -> _Tok:
        if self.tok.kind != "EOF":
            self.i += 1
        return self.tok

    def error(self, msg: str, pos: int | None = None) -> HloShardingParseError:
        return HloShardingParseError(msg, self.tok.pos if pos is None else pos)

    def expect(self, kind: str, msg: str) -> None:
        if self.tok.kind != kind:
            raise self.error(msg)
        self.lex()

    def eat(self, kind: str) -> bool:
        if self.tok.kind == kind:
            self.lex()
            return True
        return False

    def int64(self) -> int:
        if self.tok.kind != "INT":
            raise self.error("expects integer")
        v = int(self.tok.text)
        self.lex()
        return v

    def int_list(self) -> list[int]:
        out = [self.int64()]
        while self.eat(","):
            out.append(self.int64())
        return out

    # sharding ::= '{' '}' | '{' body '}' | '{' leaf (',' leaf)* '}'
    def sharding(self) -> HloSharding:
        self.expect("{", "expected '{' to start sharding attribute")
        if self.tok.kind not in ("{", "}"):
            return self.single(lbrace_pre_lexed=True)
        elements: list[HloSharding] = []
        if self.tok.kind != "}":
            elements.append(self.single(lbrace_pre_lexed=False))
            while self.eat(","):
                elements.append(self.single(lbrace_pre_lexed=False))
        self.expect("}", "expected '}' to end sharding attribute")
        return HloSharding.tuple_of(elements)

    def single(self, lbrace_pre_lexed: bool) -> HloSharding:  # noqa: C901, PLR0912, PLR0915
        if not lbrace_pre_lexed:
            self.expect("{", "expected '{' to start sharding attribute")
        loc = self.tok.pos
        if self.tok.kind == "IDENT" and self.tok.text in ("mesh", "maximal_mesh"):
            raise self.error("V3 NamedSharding (mesh) is not supported by lncsplit")
        replicated = maximal = manual = unknown = unreduced = False
        last_tile_dim_replicate = False
        shard_group: ShardGroup | None = None
        devices: list[int] = []
        tile_dims: list[int] = []
        iota_reshape: list[int] = []
        iota_perm: list[int] = []
        subgroup_types: list[str] = []
        metadata: list[OpMetadata] = []
        while self.tok.kind != "}":
            t = self.tok
            if t.kind == "KW" and t.text == "maximal":
                maximal = True
                self.lex()
            elif t.kind == "KW" and t.text == "replicated":
                replicated = True
                self.lex()
            elif t.kind == "KW" and t.text == "manual":
                manual = True
                self.lex()
            elif t.kind == "KW" and t.text == "unknown":
                unknown = True
                self.lex()
            elif t.kind == "KW" and t.text == "unreduced":
                unreduced = True
                self.lex()
            elif t.kind == "KW" and t.text == "last_tile_dim_replicate":
                last_tile_dim_replicate = True
                self.lex()
            elif t.kind == "KW" and t.text in ("shard_as", "shard_like"):
                self.lex()
                shard_group = ShardGroup(t.text == "shard_as", self.int64())
            elif t.kind == "ATTR" and t.text == "device":
                if self.lex().kind != "INT":
                    raise self.error("device= attribute must be an integer")
                devices = [int(self.tok.text)]
                self.lex()
            elif t.kind == "ATTR" and t.text == "devices":
                self.lex()
                self.expect("[", "expected '[' to start sharding devices shape")
                tile_dims = self.int_list()
                self.expect("]", "expected ']' to end sharding devices shape")
                if self.tok.kind == "LEQ":
                    self.lex()
                    self.expect("[", "expected '[' to start sharding iota_reshape_dims")
                    iota_reshape = self.int_list()
                    self.expect("]", "expected ']' to end sharding iota_reshape_dims")
                    if len(iota_reshape) == 1:
                        iota_perm = [0]
                    else:
                        msg = "expected 'T(' to start sharding devices iota_transpose_perm"
                        if self.tok.kind != "IDENT" or self.tok.text != "T":
                            raise self.error(msg)
                        self.lex()
                        self.expect("(", msg)
                        while True:
                            d = self.int64()
                            if d >= len(iota_reshape):
                                raise self.error(f"Out of range iota minor_to_major value {d}.")
                            iota_perm.append(d)
                            if not self.eat(","):
                                break
                        self.expect(")", "expected ')' to end sharding devices iota_transpose_perm")
                else:
                    devices = self.int_list()
            elif t.kind == "ATTR" and t.text == "metadata":
                self.lex()
                metadata = self.metadata_list()
            elif t.kind == "ATTR" and t.text == "last_tile_dims":
                self.lex()
                subgroup_types = self.sharding_type_list()
            elif t.kind == "ATTR":
                raise self.error(
                    "unknown attribute in sharding: expected device=, devices= "
                    "metadata= or last_tile_dims= "
                )
            else:
                raise self.error("unexpected token")

        md = tuple(metadata)
        result: HloSharding
        if replicated:
            if devices:
                raise self.error("replicated shardings should not have any devices assigned", loc)
            result = HloSharding.replicate(md)
        elif maximal:
            if len(devices) != 1:
                raise self.error("maximal shardings should have exactly one device assigned", loc)
            result = HloSharding.assign_device(devices[0], md)
        elif manual:
            if devices:
                raise self.error("manual shardings should not have any devices assigned", loc)
            result = HloSharding.manual(md)
        elif unknown:
            if devices:
                raise self.error("unknown shardings should not have any devices assigned", loc)
            result = HloSharding.unknown(md)
        elif unreduced:
            if devices:
                raise self.error("unreduced shardings should not have any devices assigned", loc)
            result = HloSharding.unreduced(md)
        else:
            if not tile_dims:
                raise self.error(
                    "non-maximal shardings must have a tile assignment list including dimensions",
                    loc,
                )
            if len(iota_perm) != len(iota_reshape):
                raise self.error(
                    "iota_transpose_perm should have the same rank as iota_reshape_dims : "
                    f"expected {len(iota_reshape)}, saw {len(iota_perm)}.",
                    loc,
                )
            if last_tile_dim_replicate:
                if subgroup_types:
                    raise self.error(
                        "last_tile_dim_replicate and last_tile_dims cannot both be set", loc
                    )
                subgroup_types = ["replicated"]
            if any(d <= 0 for d in tile_dims):
                raise self.error("tile assignment dimensions must be positive", loc)
            ta: TileAssignment
            if iota_reshape:
                if any(d <= 0 for d in iota_reshape):
                    raise self.error("iota_reshape_dims must be positive", loc)
                if sorted(iota_perm) != list(range(len(iota_reshape))):
                    raise self.error("iota_transpose_perm must be a permutation", loc)
                if math.prod(iota_reshape) != math.prod(tile_dims):
                    raise self.error(
                        f"iota_reshape_dims hold {math.prod(iota_reshape)} devices but the tile "
                        f"assignment dimensions hold {math.prod(tile_dims)}",
                        loc,
                    )
                ta = TileAssignment.iota(tile_dims, iota_reshape, iota_perm)
            else:
                if len(devices) <= 1:
                    raise self.error(
                        "non-maximal shardings must have more than one device assigned", loc
                    )
                if len(devices) != math.prod(tile_dims):
                    raise self.error(
                        f"the tile assignment dimensions hold {math.prod(tile_dims)} devices "
                        f"but {len(devices)} were listed",
                        loc,
                    )
                ta = TileAssignment.from_devices(tile_dims, devices)
            if len(subgroup_types) > len(tile_dims):
                raise self.error("more last_tile_dims than tile assignment dimensions", loc)
            result = HloSharding.subgroup(ta, subgroup_types, md)
        if shard_group is not None:
            result = result.with_shard_group(shard_group)
        self.lex()  # the closing '}'
        return result

    def sharding_type_list(self) -> list[str]:
        self.expect("{", "expected '{' to start sharding type list")
        out: list[str] = []
        if self.tok.kind != "}":
            while True:
                if self.tok.kind != "KW" or self.tok.text not in _TYPE_ORDER:
                    raise self.error("expected sharding type")
                out.append(self.tok.text)
                self.lex()
                if not self.eat(","):
                    break
        self.expect("}", "expected '}' to end sharding type list")
        return out

    def metadata_list(self) -> list[OpMetadata]:
        self.expect("{", "expected '{' to start metadata")
        if self.tok.kind == "{":
            out = [self.metadata_body()]
            while self.eat(","):
                out.append(self.metadata_body())
            self.expect("}", "expected '}' to end metadata list")
            return out
        return [self.metadata_fields()]

    def metadata_body(self) -> OpMetadata:
        self.expect("{", "expected '{' to start metadata")
        return self.metadata_fields()

    def metadata_fields(self) -> OpMetadata:
        fields: list[tuple[str, str]] = []
        while self.tok.kind != "}":
            if self.tok.kind == ",":
                self.lex()
                continue
            if self.tok.kind != "ATTR":
                raise self.error("expected metadata attribute")
            key = self.tok.text
            self.lex()
            fields.append((key, self.raw_value()))
        self.lex()
        return OpMetadata.of(fields)

    def raw_value(self) -> str:
        t = self.tok
        if t.kind == "{":
            depth = 0
            start = t.pos
            while True:
                tk = self.tok
                if tk.kind == "EOF":
                    raise self.error("expected '}'")
                if tk.kind == "{":
                    depth += 1
                elif tk.kind == "}":
                    depth -= 1
                self.lex()
                if depth == 0:
                    return self.text[start : tk.pos + 1]
        if t.kind in ("STRING", "INT", "IDENT", "KW"):
            self.lex()
            return t.text
        raise self.error("expected metadata value")


# ----------------------------------------------------------------------------------------------
# HloSharding
# ----------------------------------------------------------------------------------------------

_LEAF_KINDS = ("replicated", "maximal", "manual", "unknown", "unreduced", "tiled")


class HloSharding:
    """An XLA ``HloSharding`` (immutable).

    Build with :meth:`parse` or the factory methods (:meth:`replicate`, :meth:`assign_device`,
    :meth:`manual`, :meth:`unknown`, :meth:`unreduced`, :meth:`tile`, :meth:`iota_tile`,
    :meth:`partial_tile`, :meth:`subgroup`, :meth:`tuple_of`), which apply XLA's normalizations.
    """

    __slots__ = (
        "_elements",
        "_kind",
        "_metadata",
        "_repl_last",
        "_shard_group",
        "_subgroups",
        "_ta",
    )

    def __init__(
        self,
        kind: str,
        tile_assignment: TileAssignment | None = None,
        *,
        replicate_on_last_tile_dim: bool = False,
        subgroup_types: Sequence[str] = (),
        shard_group: ShardGroup | None = None,
        metadata: Sequence[OpMetadata] = (),
        elements: Sequence[HloSharding] = (),
    ) -> None:
        """Raw constructor (no normalization); use the factory methods instead."""
        self._kind = kind
        self._ta = tile_assignment
        self._repl_last = replicate_on_last_tile_dim
        self._subgroups: tuple[str, ...] = tuple(subgroup_types)
        self._shard_group = shard_group
        self._metadata: tuple[OpMetadata, ...] = tuple(metadata)
        self._elements: tuple[HloSharding, ...] = tuple(elements)

    # -- factories -------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> HloSharding:
        """Parse XLA's sharding text; raises :class:`HloShardingParseError` (XLA's messages)."""
        p = _Parser(text)
        s = p.sharding()
        if p.tok.kind != "EOF":
            raise p.error("unexpected token")
        return s

    @classmethod
    def replicate(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{replicated}``."""
        return cls("replicated", metadata=metadata)

    @classmethod
    def manual(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{manual}``."""
        return cls("manual", metadata=metadata)

    @classmethod
    def unknown(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{unknown}``."""
        return cls("unknown", metadata=metadata)

    @classmethod
    def unreduced(cls, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{unreduced}``."""
        return cls("unreduced", metadata=metadata)

    @classmethod
    def assign_device(cls, device: int, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``{maximal device=N}``."""
        return cls("maximal", TileAssignment.from_devices([1], [device]), metadata=metadata)

    @classmethod
    def tile(
        cls, tile_assignment: TileAssignment, metadata: Sequence[OpMetadata] = ()
    ) -> HloSharding:
        """A plain tiled sharding (no subgroups)."""
        return cls("tiled", tile_assignment, metadata=metadata)

    @classmethod
    def iota_tile(
        cls,
        dims: Sequence[int],
        reshape_dims: Sequence[int] | None = None,
        perm: Sequence[int] | None = None,
        metadata: Sequence[OpMetadata] = (),
    ) -> HloSharding:
        """A tiled sharding with an (canonicalized) iota tile assignment."""
        return cls.tile(TileAssignment.iota(dims, reshape_dims, perm), metadata)

    @classmethod
    def tuple_of(cls, elements: Sequence[HloSharding]) -> HloSharding:
        """A (flat) tuple sharding."""
        for e in elements:
            if e.is_tuple:
                raise HloShardingError("tuple sharding elements must not be tuples")
        return cls("tuple", elements=elements)

    @classmethod
    def partial_tile(cls, ta: TileAssignment, metadata: Sequence[OpMetadata] = ()) -> HloSharding:
        """``last_tile_dim_replicate`` sharding with XLA's ``PartialTile`` normalization."""
        n = ta.num_elements
        if len(ta.dims) == 1 or ta.dims[-1] == n:
            return cls.replicate(metadata)
        if ta.dims[-1] == 1:
            return cls("tiled", ta.reshape(ta.dims[:-1]), metadata=metadata)
        group = ta.dims[-1]
        if ta.is_iota:
            r, p = ta.reshape_dims, ta.transpose_perm
            assert r is not None and p is not None
            if r[p[-1]] == group:
                return cls("tiled", ta, replicate_on_last_tile_dim=True, metadata=metadata)
            grouped = _group_minor_iota_dims_sorted(r, p, group)
            if grouped is not None:
                new_ta = TileAssignment.iota(ta.dims, grouped[0], grouped[1])
                return cls("tiled", new_ta, replicate_on_last_tile_dim=True, metadata=metadata)
        flat = ta.array().reshape(-1, group)
        sorted_arr = np.sort(flat, axis=1).reshape(ta.dims)
        return cls(
            "tiled",
            TileAssignment.from_array(sorted_arr),
            replicate_on_last_tile_dim=True,
            metadata=metadata,
        )

    @classmethod
    def subgroup(  # noqa: C901, PLR0912, PLR0915
        cls,
        ta: TileAssignment,
        subgroup_types: Sequence[str],
        metadata: Sequence[OpMetadata] = (),
    ) -> HloSharding:
        """Sharding with trailing subgroup dims, normalized like XLA's ``Subgroup``."""
        types = list(subgroup_types)
        for t in types:
            if t not in _TYPE_ORDER:
                raise HloShardingError(f"unknown subgroup type {t!r}")
        if not types:
            return cls("tiled", ta, metadata=metadata)
        nd = len(ta.dims)
        data_dims = nd - len(types)
        if data_dims < 0:
            raise HloShardingError("more subgroup types than tile assignment dimensions")
        if all(t == types[0] for t in types) and math.prod(ta.dims[:data_dims]) == 1:
            if types[0] == "manual":
                return cls.manual(metadata)
            if types[0] == "replicated":
                return cls.replicate(metadata)
            if types[0] == "unreduced":
                return cls.unreduced(metadata)
        perm = list(range(data_dims))
        type_to_dims: dict[str, list[int]] = {}
        needs_merging = False
        removed: list[int] = []
        for i, t in enumerate(types):
            if ta.dims[i + data_dims] == 1:
                removed.append(i + data_dims)
                needs_merging = True
                continue
            lst = type_to_dims.setdefault(t, [])
            if lst:
                needs_merging = True
            lst.append(i + data_dims)
        needs_merging |= len(type_to_dims) > 1

        def create(tiles: TileAssignment, tys: list[str]) -> HloSharding:
            if len(tys) == 1 and tys[-1] == "replicated":
                return cls.partial_tile(tiles, metadata)
            if len(tys) == 1 and tys[-1] == "manual" and tiles.num_elements == tiles.dims[-1]:
                return cls.manual(metadata)
            if tys and tys[-1] == "replicated":
                s = cls.partial_tile(tiles, metadata)
                return cls("tiled", s._ta, subgroup_types=tys, metadata=metadata)
            return cls("tiled", tiles, subgroup_types=tys, metadata=metadata)

        if not needs_merging:
            return create(ta, types)
        merged_shape = list(ta.dims[:data_dims])
        transposed_shape = list(merged_shape)
        merged_types: list[str] = []
        for t in SUBGROUP_TYPES:
            dims = type_to_dims.get(t, [])
            if not dims:
                continue
            size = 1
            for d in dims:
                perm.append(d)
                size *= ta.dims[d]
                transposed_shape.append(ta.dims[d])
            merged_shape.append(size)
            merged_types.append(t)
        new_ta: TileAssignment | None = None
        if ta.is_iota:
            full_perm = perm + removed
            tr = ta.transpose(full_perm)
            if tr.is_iota:
                assert tr.reshape_dims is not None and tr.transpose_perm is not None
                new_ta = TileAssignment.iota(merged_shape, tr.reshape_dims, tr.transpose_perm)
        if new_ta is None:
            arr = ta.array()
            full = perm + removed
            arr_t = np.transpose(arr, full).reshape(merged_shape)
            new_ta = TileAssignment.from_array(arr_t)
        return create(new_ta, merged_types)

    # -- modifiers ---------------------------------------------------------------------------
    def with_shard_group(self, group: ShardGroup | None) -> HloSharding:
        """A copy carrying ``shard_as``/``shard_like`` ``group`` (None clears it)."""
        return HloSharding(
            self._kind,
            self._ta,
            replicate_on_last_tile_dim=self._repl_last,
            subgroup_types=self._subgroups,
            shard_group=group,
            metadata=self._metadata,
            elements=self._elements,
        )

    def with_metadata(self, metadata: Sequence[OpMetadata]) -> HloSharding:
        """A copy carrying ``metadata`` (tuples: applied to no element)."""
        return HloSharding(
            self._kind,
            self._ta,
            replicate_on_last_tile_dim=self._repl_last,
            subgroup_types=self._subgroups,
            shard_group=self._shard_group,
            metadata=() if self.is_tuple else metadata,
            elements=self._elements,
        )

    # -- predicates --------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """One of replicated, maximal, manual, unknown, unreduced, tiled, tuple."""
        return self._kind

    @property
    def is_tuple(self) -> bool:
        """True for tuple shardings."""
        return self._kind == "tuple"

    @property
    def is_replicated(self) -> bool:
        """True for ``{replicated}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_replicated for e in self._elements)
        return self._kind == "replicated"

    @property
    def is_tile_maximal(self) -> bool:
        """True for replicated and ``maximal`` shardings (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_tile_maximal for e in self._elements)
        return self._kind in ("replicated", "maximal")

    @property
    def is_manual(self) -> bool:
        """True for ``{manual}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_manual for e in self._elements)
        return self._kind == "manual"

    @property
    def is_unknown(self) -> bool:
        """True for ``{unknown}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_unknown for e in self._elements)
        return self._kind == "unknown"

    @property
    def is_unreduced(self) -> bool:
        """True for ``{unreduced}`` (tuples: every element)."""
        if self.is_tuple:
            return all(e.is_unreduced for e in self._elements)
        return self._kind == "unreduced"

    @property
    def is_tiled(self) -> bool:
        """True for a tiled leaf (device list or iota)."""
        return self._kind == "tiled"

    @property
    def replicate_on_last_tile_dim(self) -> bool:
        """True when the last tile dim holds replicas (``last_tile_dim_replicate``)."""
        return self._repl_last

    @property
    def subgroup_types(self) -> tuple[str, ...]:
        """The ``last_tile_dims`` types (empty when printed as ``last_tile_dim_replicate``)."""
        return self._subgroups

    @property
    def has_manual_subgroup(self) -> bool:
        """True when a trailing subgroup dim is manual."""
        return "manual" in self._subgroups

    @property
    def shard_group(self) -> ShardGroup | None:
        """The ``shard_as``/``shard_like`` hint."""
        return self._shard_group

    @property
    def metadata(self) -> tuple[OpMetadata, ...]:
        """The op metadata records."""
        return self._metadata

    @property
    def tuple_elements(self) -> tuple[HloSharding, ...]:
        """The leaves of a tuple sharding (empty for leaves)."""
        return self._elements

    @property
    def tile_assignment_object(self) -> TileAssignment:
        """The :class:`TileAssignment` (``[0]`` for replicated/manual/unknown/unreduced)."""
        if self.is_tuple:
            raise HloShardingError("tuple shardings have no tile assignment")
        if self._ta is None:
            return TileAssignment.from_devices([1], [0])
        return self._ta

    @property
    def tile_assignment(self) -> IntArray:
        """The materialized device array (numpy, read-only)."""
        return self.tile_assignment_object.array()

    @property
    def tile_assignment_dims(self) -> tuple[int, ...]:
        """Dimensions of the tile assignment array."""
        return self.tile_assignment_object.dims

    @property
    def unique_device(self) -> int | None:
        """The device of a ``maximal`` sharding, else None."""
        if self._kind == "maximal":
            return int(self.tile_assignment.reshape(-1)[0])
        if self.is_tuple and self._elements:
            devs = {e.unique_device for e in self._elements}
            if len(devs) == 1:
                return devs.pop()
        return None

    # -- tile maths ----------------------------------------------------------------------------
    def _require_leaf(self, what: str, allow_maximal: bool = True) -> None:
        if self.is_tuple:
            raise HloShardingError(f"{what} is not defined for tuple shardings")
        if self._kind in ("manual", "unknown", "unreduced"):
            raise HloShardingError(f"{what} is not defined for {{{self._kind}}} shardings")
        if not allow_maximal and self._kind in ("replicated", "maximal"):
            raise HloShardingError(f"{what} is not defined for {{{self._kind}}} shardings")

    @property
    def tiled_data_rank(self) -> int:
        """Number of leading tile dims that tile data (excludes replica/subgroup dims)."""
        self._require_leaf("tiled_data_rank", allow_maximal=False)
        return len(self.tile_assignment_dims) - int(self._repl_last) - len(self._subgroups)

    @property
    def num_tiles(self) -> int:
        """Number of distinct data tiles (1 if tile-maximal)."""
        self._require_leaf("num_tiles")
        if self.is_tile_maximal:
            return 1
        return math.prod(self.tile_assignment_dims[: self.tiled_data_rank])

    @property
    def total_num_tiles(self) -> int:
        """Product of all tile assignment dims (1 if tile-maximal)."""
        self._require_leaf("total_num_tiles")
        if self.is_tile_maximal:
            return 1
        return math.prod(self.tile_assignment_dims)

    @property
    def num_devices(self) -> int:
        """Number of entries in the tile assignment."""
        return self.tile_assignment_object.num_elements

    def tile_index_for_device(self, device: int) -> tuple[int, ...]:
        """The data-tile index held by ``device`` (last match, like XLA)."""
        self._require_leaf("tile_index_for_device", allow_maximal=False)
        found = np.argwhere(self.tile_assignment == device)
        if len(found) == 0:
            raise HloShardingError(f"device {device} is not in the tile assignment")
        idx = tuple(int(x) for x in found[-1])
        return idx[: self.tiled_data_rank]

    def device_for_tile_index(self, index: Sequence[int]) -> int:
        """``A[index]``; a data-rank index on a subgrouped array gets zeros appended."""
        self._require_leaf("device_for_tile_index")
        if self._kind == "maximal":
            return int(self.tile_assignment.reshape(-1)[0])
        if self._kind == "replicated":
            raise HloShardingError("device_for_tile_index is not defined for {replicated}")
        full = list(index) + [0] * (len(self.tile_assignment_dims) - len(index))
        return int(self.tile_assignment[tuple(full)])

    def tile_offset_for_device(self, shape: ShapeLike, device: int) -> tuple[int, ...]:
        """Per-dim start of ``device``'s tile: ``min(idx*ceil(S/n), S)``; 0 if tile-maximal."""
        dims = _dims_of(shape)
        self._require_leaf("tile_offset_for_device")
        if self.is_tile_maximal:
            return tuple(0 for _ in dims)
        self._check_rank(dims)
        idx = self.tile_index_for_device(device)
        tdims = self.tile_assignment_dims
        return tuple(min(i * -(-s // n), s) for i, s, n in zip(idx, dims, tdims, strict=False))

    def tile_limit_for_device(self, shape: ShapeLike, device: int) -> tuple[int, ...]:
        """Per-dim end of ``device``'s tile: ``min((idx+1)*ceil(S/n), S)``; S if tile-maximal."""
        dims = _dims_of(shape)
        self._require_leaf("tile_limit_for_device")
        if self.is_tile_maximal:
            return dims
        self._check_rank(dims)
        idx = self.tile_index_for_device(device)
        tdims = self.tile_assignment_dims
        return tuple(
            min((i + 1) * -(-s // n), s) for i, s, n in zip(idx, dims, tdims, strict=False)
        )

    def tile_shape(self, shape: ShapeLike, device: int) -> tuple[int, ...]:
        """``limit - offset`` per dim for ``device`` (may be 0 for trailing shards)."""
        lo = self.tile_offset_for_device(shape, device)
        hi = self.tile_limit_for_device(shape, device)
        return tuple(b - a for a, b in zip(lo, hi, strict=True))

    def partitioned_shape(self, shape: ShapeLike) -> tuple[int, ...]:
        """SPMD per-device buffer shape: ``ceil(S_i / n_i)`` per data dim (padded)."""
        dims = _dims_of(shape)
        if self.is_tile_maximal or self._kind in ("manual", "unknown", "unreduced"):
            return dims
        self._check_rank(dims)
        return tuple(-(-s // n) for s, n in zip(dims, self.tile_assignment_dims, strict=False))

    def _check_rank(self, dims: tuple[int, ...]) -> None:
        if len(dims) != self.tiled_data_rank:
            raise HloShardingError(
                f"shape rank {len(dims)} does not match the tiled data rank "
                f"{self.tiled_data_rank} of {self}"
            )

    def validate(
        self, shape: ShapeLike | Sequence[ShapeLike], num_devices: int | None = None
    ) -> None:
        """Check the sharding against ``shape`` and ``num_devices`` like XLA's ``Validate``.

        For tuple shardings pass a sequence of leaf shapes. Raises
        :class:`ShardingValidationError`.
        """
        try:
            if self.is_tuple:
                shapes = cast(list[ShapeLike], list(shape))  # type: ignore[arg-type]
                if len(shapes) != len(self._elements):
                    raise ShardingValidationError(
                        f"tuple shape has {len(shapes)} leaf nodes while this sharding has "
                        f"{len(self._elements)}"
                    )
                for e, s in zip(self._elements, shapes, strict=True):
                    e._validate_leaf(s, num_devices)
            else:
                self._validate_leaf(shape, num_devices)  # type: ignore[arg-type]
        except ShardingValidationError as exc:
            raise ShardingValidationError(
                f"{exc} Note: While validating sharding {self} against shape "
                f"{list(_safe_dims(shape))}"
            ) from None

    def _validate_leaf(self, shape: ShapeLike, num_devices: int | None) -> None:
        dims = _dims_of(shape)
        if self._kind in ("replicated", "manual", "unknown", "unreduced"):
            return
        if self._kind == "maximal":
            _device_in_range(int(self.tile_assignment.reshape(-1)[0]), num_devices)
            return
        ta = self.tile_assignment_object
        if ta.num_elements == 1:
            raise ShardingValidationError(
                "Tile assignment only contains a single device. If a replicated sharding was "
                "intended, use HloSharding::Replicated(). If a device placement was intended, "
                "use HloSharding::AssignDevice()"
            )
        if len(dims) != self.tiled_data_rank:
            raise ShardingValidationError(
                "Number of tile assignment dimensions (excluding subgroups) is different than "
                f"the input rank. sharding={self}, input_shape={list(dims)}"
            )
        if ta.is_iota:
            if num_devices is not None and ta.num_elements != num_devices:
                raise ShardingValidationError(
                    f"tile_assignment should have {num_devices} devices but has {ta.num_elements}"
                )
            return
        seen: set[int] = set()
        for d in ta.devices():
            _device_in_range(d, num_devices)
            if d in seen:
                raise ShardingValidationError(f"device {d} is not unique in tile assignment")
            seen.add(d)
        if num_devices is not None and len(seen) != num_devices:
            raise ShardingValidationError(
                f"tile_assignment should have {num_devices} devices but has {len(seen)}"
            )

    # -- printing ------------------------------------------------------------------------------
    def to_string(self, include_metadata: bool = True) -> str:  # noqa: C901
        """XLA's ``HloSharding::Print`` text (metadata included by default)."""
        if self.is_tuple:
            if not self._elements:
                return "{}"
            parts = [self._elements[0].to_string(include_metadata)]
            for i, e in enumerate(self._elements[1:], start=1):
                sep = f", /*index={i}*/" if i % 5 == 0 else ", "
                parts.append(sep + e.to_string(include_metadata))
            return "{" + "".join(parts) + "}"
        tail = ""
        if self._shard_group is not None:
            tail += f" {self._shard_group}"
        if include_metadata and self._metadata:
            if len(self._metadata) == 1:
                tail += " metadata={" + str(self._metadata[0]) + "}"
            else:
                tail += " metadata={" + ", ".join("{" + str(m) + "}" for m in self._metadata)
                tail += "}"
        if self._kind in ("replicated", "manual", "unknown", "unreduced"):
            return "{" + self._kind + tail + "}"
        if self._kind == "maximal":
            return "{maximal device=" + str(self.unique_device) + tail + "}"
        assert self._ta is not None
        body = "devices=" + self._ta.to_string()
        if self._repl_last:
            body += " last_tile_dim_replicate"
        if self._subgroups:
            body += " last_tile_dims={" + ", ".join(self._subgroups) + "}"
        return "{" + body + tail + "}"

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"HloSharding.parse({self.to_string()!r})"

    def _key(self) -> tuple[object, ...]:
        ta: tuple[object, ...] = ()
        if self._ta is not None and self._kind in ("tiled", "maximal"):
            ta = (self._ta.dims, tuple(self._ta.devices()))
        return (
            self._kind,
            ta,
            self._repl_last,
            self._subgroups,
            self._shard_group,
            tuple(e._key() for e in self._elements),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HloSharding):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _safe_dims(shape: object) -> list[object]:
    try:
        return list(_dims_of(shape))  # type: ignore[arg-type]
    except Exception:
        try:
            return [list(_dims_of(s)) for s in shape]  # type: ignore[attr-defined]
        except Exception:
            return [shape]


def _device_in_range(device: int, num_devices: int | None) -> None:
    if device < 0:
        raise ShardingValidationError(f"device {device} is negative in tile assignment")
    if num_devices is not None and device >= num_devices:
        raise ShardingValidationError(
            f"device {device} >= num_devices ({num_devices}) in tile assignment"
        )


def _group_minor_iota_dims_sorted(
    dims: Sequence[int], perm: Sequence[int], group_size: int
) -> tuple[list[int], list[int]] | None:
    """Regroup minor iota dims so the replication group is sorted (XLA's helper)."""
    grouped = 0
    split: tuple[int, int] | None = None
    for i in range(len(perm) - 1, -1, -1):
        dim = perm[i]
        size = dims[dim]
        if size <= group_size:
            if group_size % size != 0:
                return None
            group_size //= size
            grouped += 1
        else:
            if size % group_size != 0:
                return None
            split = (dim, size // group_size)
            grouped += 1
            group_size = 1
            break
    if split is None:
        new_dims = list(dims)
        new_perm = list(perm)
    else:
        split_i, major = split
        new_dims = (
            list(dims[:split_i]) + [major, dims[split_i] // major] + list(dims[split_i + 1 :])
        )
        new_perm = []
        perm_split = 0
        for i, pd in enumerate(perm):
            new_perm.append(pd if pd <= split_i else pd + 1)
            if pd == split_i:
                perm_split = i
                break
        new_perm.append(new_perm[perm_split] + 1)
        for i in range(perm_split + 2, len(perm) + 1):
            pd = perm[i - 1]
            new_perm.append(pd if pd <= split_i else pd + 1)
    if grouped:
        head, tail = new_perm[: len(new_perm) - grouped], new_perm[len(new_perm) - grouped :]
        new_perm = head + sorted(tail)
    return new_dims, new_perm
