"""XLA ``HloSharding`` V2 text: the lexer, the parser and the printer (xla-sharding-notes §1).

XLA keeps its text format apart from its model: ``hlo_lexer.cc``/``hlo_parser.cc`` read the text
into an ``OpSharding`` record and ``hlo_sharding.cc`` holds the model. lncsplit does the same:
this module turns text into :class:`ParsedLeaf` records (every XLA parse check and message,
XLA's ``ParseSingleSharding``/``ParseTileAssignment``) and prints a sharding back
(``HloSharding::Print``); :mod:`lncsplit.frontend.sharding` builds the model from the records
(``HloSharding.parse``) and owns the normalizations and tile maths.

It also holds the values the text carries (:class:`OpMetadata`, :class:`ShardGroup`) and the
sharding error family, since the parser, the lowest layer, raises it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lncsplit.errors import LncsplitError

from .tile_assignment import TileAssignment

if TYPE_CHECKING:  # the printer reads the model; the model imports this module
    from .sharding import HloSharding

__all__ = [
    "SUBGROUP_TYPES",
    "HloShardingError",
    "HloShardingParseError",
    "OpMetadata",
    "ParsedLeaf",
    "ShardGroup",
    "ShardingValidationError",
    "parse_sharding_text",
    "print_sharding",
]

#: Subgroup type names accepted in ``last_tile_dims={...}``, in XLA's normalization order
#: (MAXIMAL < MANUAL < UNREDUCED < REPLICATED).
SUBGROUP_TYPES: tuple[str, ...] = ("maximal", "manual", "unreduced", "replicated")

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


class HloShardingError(LncsplitError, ValueError):
    """Base error for sharding misuse (XLA CHECK failures surface as this)."""


class HloShardingParseError(HloShardingError):
    """A sharding text that XLA's parser rejects; ``str(e)`` is XLA's exact message."""

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


class ShardingValidationError(HloShardingError):
    """``HloSharding.validate`` failure; the message follows XLA's ``ValidateNonTuple``."""


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


@dataclass(frozen=True)
class ParsedLeaf:
    """One checked ``{...}`` leaf, as XLA's parser hands it to the ``HloSharding`` factories.

    ``kind`` is replicated, maximal, manual, unknown, unreduced or tiled; ``device`` is set for
    maximal, ``tile_assignment`` for tiled (with ``subgroup_types``, ``last_tile_dim_replicate``
    already turned into ``("replicated",)``).
    """

    kind: str
    metadata: tuple[OpMetadata, ...] = ()
    shard_group: ShardGroup | None = None
    device: int | None = None
    tile_assignment: TileAssignment | None = None
    subgroup_types: tuple[str, ...] = ()


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


def _scan_string(text: str, i: int) -> tuple[_Tok, int]:
    j, n = i + 1, len(text)
    while j < n and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    j = min(j + 1, n)
    return _Tok("STRING", text[i:j], i), j


def _scan_int(text: str, i: int) -> tuple[_Tok, int]:
    j = i + 1
    while j < len(text) and text[j].isdigit():
        j += 1
    return _Tok("INT", text[i:j], i), j


def _scan_word(text: str, i: int) -> tuple[_Tok, int]:
    """An identifier, a keyword, or an attribute name (``word=``, the ``=`` eaten)."""
    j, n = i + 1, len(text)
    while j < n and _is_ident_char(text[j]):
        j += 1
    word = text[i:j]
    if j < n and text[j] == "=" and not text.startswith("==", j):
        return _Tok("ATTR", word, i), j + 1
    return _Tok("KW" if word in _KEYWORDS else "IDENT", word, i), j


def _starts_int(text: str, i: int) -> bool:
    return text[i].isdigit() or (text[i] == "-" and text[i + 1 : i + 2].isdigit())


def _scan(text: str, i: int) -> tuple[_Tok | None, int]:
    """The token at ``i`` (None for whitespace and ``/* */`` comments) and where the next starts."""
    c = text[i]
    if c.isspace():
        return None, i + 1
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return None, len(text) if j < 0 else j + 2
    if c in "{}[](),":
        return _Tok(c, c, i), i + 1
    if text.startswith("<=", i):
        return _Tok("LEQ", "<=", i), i + 2
    if c == '"':
        return _scan_string(text, i)
    if _starts_int(text, i):
        return _scan_int(text, i)
    if _is_ident_start(c):
        return _scan_word(text, i)
    return _Tok("ERROR", c, i), i + 1


def _lex(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i = 0
    while i < len(text):
        tok, i = _scan(text, i)
        if tok is not None:
            toks.append(tok)
    toks.append(_Tok("EOF", "", len(text)))
    return toks


# ----------------------------------------------------------------------------------------------
# Parser
# ----------------------------------------------------------------------------------------------

#: The bare keywords of a leaf body that only set a flag.
_FLAGS = frozenset({"replicated", "maximal", "manual", "unknown", "unreduced"})
#: XLA's precedence when several flags are given (replicated wins, tiled is the fallback).
_FLAG_PRECEDENCE = ("replicated", "maximal", "manual", "unknown", "unreduced")


@dataclass
class _LeafAttrs:
    """What a leaf body said, before the checks at the end of ``ParseSingleSharding``."""

    flags: set[str] = field(default_factory=set)
    last_tile_dim_replicate: bool = False
    shard_group: ShardGroup | None = None
    devices: list[int] = field(default_factory=list)
    tile_dims: list[int] = field(default_factory=list)
    iota_reshape: list[int] = field(default_factory=list)
    iota_perm: list[int] = field(default_factory=list)
    subgroup_types: list[str] = field(default_factory=list)
    metadata: list[OpMetadata] = field(default_factory=list)


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
    def sharding(self) -> ParsedLeaf | list[ParsedLeaf]:
        self.expect("{", "expected '{' to start sharding attribute")
        if self.tok.kind not in ("{", "}"):
            return self.single(lbrace_pre_lexed=True)
        elements: list[ParsedLeaf] = []
        if self.tok.kind != "}":
            elements.append(self.single(lbrace_pre_lexed=False))
            while self.eat(","):
                elements.append(self.single(lbrace_pre_lexed=False))
        self.expect("}", "expected '}' to end sharding attribute")
        return elements

    # leaf ::= '{' item* '}'   (XLA's ParseSingleSharding)
    def single(self, lbrace_pre_lexed: bool) -> ParsedLeaf:
        if not lbrace_pre_lexed:
            self.expect("{", "expected '{' to start sharding attribute")
        loc = self.tok.pos
        if self.tok.kind == "IDENT" and self.tok.text in ("mesh", "maximal_mesh"):
            raise self.error("V3 NamedSharding (mesh) is not supported by lncsplit")
        attrs = _LeafAttrs()
        while self.tok.kind != "}":
            self._item(attrs)
        leaf = self._build(attrs, loc)
        self.lex()  # the closing '}'
        return leaf

    def _item(self, a: _LeafAttrs) -> None:
        """One item of a leaf body: a flag keyword, a shard group or an attribute."""
        t = self.tok
        if t.kind == "KW" and t.text in _FLAGS:
            a.flags.add(t.text)
            self.lex()
        elif t.kind == "KW" and t.text == "last_tile_dim_replicate":
            a.last_tile_dim_replicate = True
            self.lex()
        elif t.kind == "KW" and t.text in ("shard_as", "shard_like"):
            self.lex()
            a.shard_group = ShardGroup(t.text == "shard_as", self.int64())
        elif t.kind == "ATTR":
            self._attribute(a)
        else:
            raise self.error("unexpected token")

    def _attribute(self, a: _LeafAttrs) -> None:
        parse = self._ATTRIBUTES.get(self.tok.text)
        if parse is None:
            raise self.error(
                "unknown attribute in sharding: expected device=, devices= "
                "metadata= or last_tile_dims= "
            )
        parse(self, a)

    def _device_attr(self, a: _LeafAttrs) -> None:
        if self.lex().kind != "INT":
            raise self.error("device= attribute must be an integer")
        a.devices = [int(self.tok.text)]
        self.lex()

    # tile_assignment ::= '[' INT (',' INT)* ']' ( device_list | '<=' iota )
    def _devices_attr(self, a: _LeafAttrs) -> None:
        self.lex()
        self.expect("[", "expected '[' to start sharding devices shape")
        a.tile_dims = self.int_list()
        self.expect("]", "expected ']' to end sharding devices shape")
        if self.eat("LEQ"):
            a.iota_reshape, a.iota_perm = self._iota()
        else:
            a.devices = self.int_list()

    # iota ::= '[' INT (',' INT)* ']' ( 'T' '(' INT (',' INT)* ')' )?   (ParseIotaTileAssignmentArray)
    def _iota(self) -> tuple[list[int], list[int]]:
        self.expect("[", "expected '[' to start sharding iota_reshape_dims")
        reshape = self.int_list()
        self.expect("]", "expected ']' to end sharding iota_reshape_dims")
        if len(reshape) == 1:
            return reshape, [0]
        msg = "expected 'T(' to start sharding devices iota_transpose_perm"
        if self.tok.kind != "IDENT" or self.tok.text != "T":
            raise self.error(msg)
        self.lex()
        self.expect("(", msg)
        perm = [self._perm_entry(len(reshape))]
        while self.eat(","):
            perm.append(self._perm_entry(len(reshape)))
        self.expect(")", "expected ')' to end sharding devices iota_transpose_perm")
        return reshape, perm

    def _perm_entry(self, rank: int) -> int:
        d = self.int64()
        # XLA compares the int64 with the unsigned rank, so a negative entry is out of range too.
        if not 0 <= d < rank:
            raise self.error(
                f"Out of range iota minor_to_major value {d}, expecting value in range [0, {rank})"
            )
        return d

    def _metadata_attr(self, a: _LeafAttrs) -> None:
        self.lex()
        a.metadata = self.metadata_list()

    def _last_tile_dims_attr(self, a: _LeafAttrs) -> None:
        self.lex()
        a.subgroup_types = self.sharding_type_list()

    _ATTRIBUTES: dict[str, Callable[[_Parser, _LeafAttrs], None]] = {
        "device": _device_attr,
        "devices": _devices_attr,
        "metadata": _metadata_attr,
        "last_tile_dims": _last_tile_dims_attr,
    }

    # -- the checks at the end of ParseSingleSharding ------------------------------------------
    def _build(self, a: _LeafAttrs, loc: int) -> ParsedLeaf:
        for kind in _FLAG_PRECEDENCE:
            if kind in a.flags:
                return self._build_flagged(kind, a, loc)
        return self._build_tiled(a, loc)

    def _build_flagged(self, kind: str, a: _LeafAttrs, loc: int) -> ParsedLeaf:
        md = tuple(a.metadata)
        if kind == "maximal":
            if len(a.devices) != 1:
                raise self.error("maximal shardings should have exactly one device assigned", loc)
            return ParsedLeaf("maximal", md, a.shard_group, device=a.devices[0])
        if a.devices:
            raise self.error(f"{kind} shardings should not have any devices assigned", loc)
        return ParsedLeaf(kind, md, a.shard_group)

    def _build_tiled(self, a: _LeafAttrs, loc: int) -> ParsedLeaf:
        if not a.tile_dims:
            raise self.error(
                "non-maximal shardings must have a tile assignment list including dimensions", loc
            )
        if len(a.iota_perm) != len(a.iota_reshape):
            raise self.error(
                "iota_transpose_perm should have the same rank as iota_reshape_dims : "
                f"expected {len(a.iota_reshape)}, saw {len(a.iota_perm)}.",
                loc,
            )
        types = list(a.subgroup_types)
        if a.last_tile_dim_replicate:
            if types:
                raise self.error(
                    "last_tile_dim_replicate and last_tile_dims cannot both be set", loc
                )
            types = ["replicated"]
        # The checks below are lncsplit's: XLA only DCHECKs them (undefined in a release build).
        if any(d <= 0 for d in a.tile_dims):
            raise self.error("tile assignment dimensions must be positive", loc)
        ta = self._iota_tiles(a, loc) if a.iota_reshape else self._list_tiles(a, loc)
        if len(types) > len(a.tile_dims):
            raise self.error("more last_tile_dims than tile assignment dimensions", loc)
        md = tuple(a.metadata)
        return ParsedLeaf(
            "tiled", md, a.shard_group, tile_assignment=ta, subgroup_types=tuple(types)
        )

    def _iota_tiles(self, a: _LeafAttrs, loc: int) -> TileAssignment:
        if any(d <= 0 for d in a.iota_reshape):
            raise self.error("iota_reshape_dims must be positive", loc)
        if sorted(a.iota_perm) != list(range(len(a.iota_reshape))):
            raise self.error("iota_transpose_perm must be a permutation", loc)
        held, want = math.prod(a.iota_reshape), math.prod(a.tile_dims)
        if held != want:
            raise self.error(
                f"iota_reshape_dims hold {held} devices but the tile assignment dimensions "
                f"hold {want}",
                loc,
            )
        return TileAssignment.iota(a.tile_dims, a.iota_reshape, a.iota_perm)

    def _list_tiles(self, a: _LeafAttrs, loc: int) -> TileAssignment:
        if len(a.devices) <= 1:
            raise self.error("non-maximal shardings must have more than one device assigned", loc)
        want = math.prod(a.tile_dims)
        if len(a.devices) != want:
            raise self.error(
                f"the tile assignment dimensions hold {want} devices "
                f"but {len(a.devices)} were listed",
                loc,
            )
        return TileAssignment.from_devices(a.tile_dims, a.devices)

    # -- last_tile_dims and metadata ------------------------------------------------------------
    def sharding_type_list(self) -> list[str]:
        self.expect("{", "expected '{' to start sharding type list")
        out: list[str] = []
        if self.tok.kind != "}":
            out.append(self._sharding_type())
            while self.eat(","):
                out.append(self._sharding_type())
        self.expect("}", "expected '}' to end sharding type list")
        return out

    def _sharding_type(self) -> str:
        if self.tok.kind != "KW" or self.tok.text not in SUBGROUP_TYPES:
            raise self.error("expected sharding type")
        t = self.tok.text
        self.lex()
        return t

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
            return self._raw_braced()
        if t.kind in ("STRING", "INT", "IDENT", "KW"):
            self.lex()
            return t.text
        raise self.error("expected metadata value")

    def _raw_braced(self) -> str:
        """A ``{...}`` value kept verbatim (nested braces balanced)."""
        depth = 0
        start = self.tok.pos
        while True:
            tk = self.tok
            if tk.kind == "EOF":
                raise self.error("expected '}'")
            depth += {"{": 1, "}": -1}.get(tk.kind, 0)
            self.lex()
            if depth == 0:
                return self.text[start : tk.pos + 1]


def parse_sharding_text(text: str) -> ParsedLeaf | list[ParsedLeaf]:
    """Parse XLA's sharding text: one leaf, or the flat leaf list of a tuple sharding.

    Raises :class:`HloShardingParseError` with XLA's message and the offending position.
    """
    p = _Parser(text)
    s = p.sharding()
    if p.tok.kind != "EOF":
        raise p.error("unexpected token")
    return s


# ----------------------------------------------------------------------------------------------
# Printer
# ----------------------------------------------------------------------------------------------


def _metadata_text(metadata: Sequence[OpMetadata]) -> str:
    if len(metadata) == 1:
        return " metadata={" + str(metadata[0]) + "}"
    return " metadata={" + ", ".join("{" + str(m) + "}" for m in metadata) + "}"


def _tuple_text(s: HloSharding, include_metadata: bool) -> str:
    elements = s.tuple_elements
    if not elements:
        return "{}"
    parts = [print_sharding(elements[0], include_metadata)]
    for i, e in enumerate(elements[1:], start=1):
        sep = f", /*index={i}*/" if i % 5 == 0 else ", "
        parts.append(sep + print_sharding(e, include_metadata))
    return "{" + "".join(parts) + "}"


def _leaf_body(s: HloSharding) -> str:
    if s.kind in ("replicated", "manual", "unknown", "unreduced"):
        return s.kind
    if s.kind == "maximal":
        return f"maximal device={s.unique_device}"
    body = "devices=" + s.tile_assignment_object.to_string()
    if s.replicate_on_last_tile_dim:
        body += " last_tile_dim_replicate"
    if s.subgroup_types:
        body += " last_tile_dims={" + ", ".join(s.subgroup_types) + "}"
    return body


def print_sharding(s: HloSharding, include_metadata: bool = False) -> str:
    """XLA's ``HloSharding::Print`` text; metadata only with ``include_metadata``."""
    if s.is_tuple:
        return _tuple_text(s, include_metadata)
    tail = f" {s.shard_group}" if s.shard_group is not None else ""
    if include_metadata and s.metadata:
        tail += _metadata_text(s.metadata)
    return "{" + _leaf_body(s) + tail + "}"
