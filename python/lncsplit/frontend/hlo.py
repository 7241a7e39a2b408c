"""A reader and writer for the HLO text subset that XLA and JAX print.

``HloModule.parse(text)`` understands the ``HloModule name, ...`` header, computations
(``[ENTRY] %name (params) -> shape {`` ... ``}``) and instruction lines of the form
``[ROOT] %name = <shape> <opcode>(<operands>), key=value, ...``. Everything it does not model
(unknown lines, attributes, header fields, unparsable instruction lines, sharding texts it cannot
parse, XLA's ``FileNames``/``FunctionNames``/``FileLocations``/``StackFrames`` debug sections) is
kept verbatim, never an error; ``str(module)`` prints the text back as it was read (blank lines
and the final newline included) and ``HloModule.parse(str(m)) == m``. Each parsed instruction
knows its 1-based ``line``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from lncsplit.errors import LncsplitError

from .sharding import HloSharding, HloShardingError

__all__ = [
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "HloOperand",
    "HloParseError",
    "HloShape",
]

#: Opcodes whose parenthesised part is a literal/number, not operand names.
_LITERAL_OPCODES = {
    "parameter",
    "constant",
    "iota",
    "rng-get-and-update-state",
    "partition-id",
    "replica-id",
    "after-all",
}

_DTYPE_BYTES = {
    "pred": 1,
    "s4": 1,
    "u4": 1,
    "s8": 1,
    "u8": 1,
    "s16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "u64": 8,
    "f64": 8,
    "c64": 8,
    "c128": 16,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "f8e4m3": 1,
    "f8e4m3b11fnuz": 1,
    "f8e5m2fnuz": 1,
    "f8e4m3fnuz": 1,
    "f8e3m4": 1,
    "token": 0,
    "opaque": 0,
}


class HloParseError(LncsplitError, ValueError):
    """Raised only for text that is not HLO at all (e.g. a shape string that cannot be read)."""


#: The characters the bracket-aware scanners stop at (everything else is skipped in bulk).
_SPECIAL = re.compile(r'["()\[\]{}]|/\*|,')


def _skip_quoted(text: str, i: int) -> int:
    """Index after the string literal starting at ``text[i]`` (a ``"``)."""
    n = len(text)
    j = i + 1
    while j < n and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` (a comma) outside brackets, braces, parentheses, quotes and ``/* */``
    comments."""
    if sep != ",":
        raise ValueError("only commas split HLO text")
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(text)
    search = _SPECIAL.search
    while True:
        m = search(text, i)
        if m is None:
            break
        c = m.group()
        k = m.start()
        if c == '"':
            i = _skip_quoted(text, k)
            continue
        if c == "/*":
            end = text.find("*/", k + 2)
            i = n if end < 0 else end + 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:  # a comma at the top level
            parts.append(text[start:k])
            start = k + 1
        i = k + 1
    parts.append(text[start:])
    return parts


def _match_close(text: str, start: int) -> int:
    """Index of the bracket closing ``text[start]`` (quotes respected); -1 if unbalanced."""
    depth = 0
    i = start
    search = _SPECIAL.search
    while True:
        m = search(text, i)
        if m is None:
            return -1
        c = m.group()
        k = m.start()
        if c == '"':
            i = _skip_quoted(text, k)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return k
        i = k + 1


@dataclass(frozen=True)
class HloShape:
    """An HLO shape: array ``dtype[d0,d1]{layout}`` or tuple ``(s0, s1)``; ``text`` is verbatim."""

    text: str
    dtype: str = ""
    dims: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: str | None = None
    tuple_shapes: tuple[HloShape, ...] = ()
    is_tuple: bool = False

    @classmethod
    def parse(cls, text: str) -> HloShape:
        """Parse a shape string such as ``f32[8,16]{1,0}``, ``f32[<=8]`` or ``(f32[], s32[2])``."""
        t = text.strip()
        if t.startswith("("):
            end = _match_close(t, 0)
            if end != len(t) - 1:
                raise HloParseError(f"cannot parse shape {text!r}")
            inner = t[1:-1].strip()
            elems = [] if not inner else [cls.parse(p) for p in _split_top(inner) if p.strip()]
            return cls(text=t, tuple_shapes=tuple(elems), is_tuple=True)
        m = re.fullmatch(r"([A-Za-z][A-Za-z0-9]*)\[([^\]]*)\](\{.*\})?", t)
        if m is None:
            raise HloParseError(f"cannot parse shape {text!r}")
        dims: list[int] = []
        dyn: list[bool] = []
        body = m.group(2).strip()
        if body:
            for d in body.split(","):
                d = d.strip()
                is_dyn = d.startswith("<=") or d == "?"
                d = d.lstrip("<=")
                dims.append(int(d) if d not in ("", "?") else 0)
                dyn.append(is_dyn)
        layout = m.group(3)[1:-1] if m.group(3) else None
        return cls(text=t, dtype=m.group(1), dims=tuple(dims), dynamic=tuple(dyn), layout=layout)

    @property
    def rank(self) -> int:
        """Number of dimensions (0 for scalars and tuples)."""
        return len(self.dims)

    @property
    def num_elements(self) -> int:
        """Product of the dims."""
        return math.prod(self.dims)

    @property
    def byte_size(self) -> int:
        """Bytes of an array shape (unknown dtypes count 4 bytes per element)."""
        return self.num_elements * _DTYPE_BYTES.get(self.dtype, 4)

    def leaves(self) -> list[HloShape]:
        """The array leaves in order (the shape itself when it is an array)."""
        if not self.is_tuple:
            return [self]
        out: list[HloShape] = []
        for s in self.tuple_shapes:
            out.extend(s.leaves())
        return out

    def __str__(self) -> str:
        return self.text


@dataclass
class HloOperand:
    """One operand reference: optional verbatim prefix (e.g. its shape), ``%`` flag and name."""

    name: str
    prefix: str = ""
    percent: bool = True

    def __str__(self) -> str:
        ref = ("%" if self.percent else "") + self.name
        return f"{self.prefix} {ref}" if self.prefix else ref


@dataclass
class HloInstruction:
    """One HLO instruction line.

    ``attributes`` maps attribute names to their verbatim value text, in order. ``sharding`` is
    the parsed ``sharding=`` attribute (None when absent or unparsable); assigning it updates the
    attribute text.
    """

    name: str
    opcode: str
    shape: HloShape
    operand_refs: list[HloOperand] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)
    is_root: bool = False
    literal: str | None = None
    percent: bool = True
    computation: str = ""
    #: 1-based line of the instruction in the text it was parsed from (None when built).
    line: int | None = None

    @classmethod
    def parse_line(cls, line: str) -> HloInstruction | None:
        """Parse an instruction line; None if the line is not of the modelled form."""
        s = line.strip()
        is_root = s.startswith("ROOT ")
        if is_root:
            s = s[5:].lstrip()
        m = re.match(r"(%?)([^\s=]+)\s*=\s*", s)
        if m is None:
            return None
        head = _split_shape(s[m.end() :])
        if head is None:
            return None
        shape, rest = head
        call = _split_call(rest)
        if call is None:
            return None
        opcode, inner, after = call
        args = _parse_operands(opcode, inner)
        attrs = _parse_attributes(after)
        if args is None or attrs is None:
            return None
        operands, literal = args
        return cls(
            name=m.group(2),
            opcode=opcode,
            shape=shape,
            operand_refs=operands,
            attributes=attrs,
            is_root=is_root,
            literal=literal,
            percent=m.group(1) == "%",
        )

    @property
    def operands(self) -> list[str]:
        """Operand instruction names, in order."""
        return [o.name for o in self.operand_refs]

    @property
    def custom_call_target(self) -> str | None:
        """The unquoted ``custom_call_target`` (None if absent)."""
        v = self.attributes.get("custom_call_target")
        if v is None:
            return None
        return _unquote(v)

    @property
    def backend_config(self) -> str | None:
        """The unquoted ``backend_config`` (None if absent)."""
        v = self.attributes.get("backend_config")
        return None if v is None else _unquote(v)

    @property
    def sharding(self) -> HloSharding | None:
        """The parsed ``sharding=`` attribute, None when absent or not parsable."""
        v = self.attributes.get("sharding")
        if v is None:
            return None
        try:
            return HloSharding.parse(v)
        except HloShardingError:
            return None

    @sharding.setter
    def sharding(self, value: HloSharding | None) -> None:
        if value is None:
            self.attributes.pop("sharding", None)
        else:
            # HloInstruction::ToString prints the sharding with its metadata.
            self.attributes["sharding"] = value.to_string(include_metadata=True)

    def replace_operand(self, old: str, new: str) -> None:
        """Rebind every operand reference named ``old`` to ``new``."""
        for o in self.operand_refs:
            if o.name == old:
                o.name = new

    def to_string(self) -> str:
        """The instruction line (without indentation)."""
        head = ("ROOT " if self.is_root else "") + ("%" if self.percent else "") + self.name
        if self.literal is not None:
            inner = self.literal
        else:
            inner = ", ".join(str(o) for o in self.operand_refs)
        s = f"{head} = {self.shape} {self.opcode}({inner})"
        for k, v in self.attributes.items():
            s += f", {k}={v}" if v != "" else f", {k}"
        return s

    def __str__(self) -> str:
        return self.to_string()

    def _key(self) -> tuple[object, ...]:
        return (self.name, self.opcode, self.shape.text, self.to_string())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HloInstruction):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]


def _split_shape(rest: str) -> tuple[HloShape, str] | None:
    """The leading shape of an instruction's right-hand side (a tuple ``(...)`` or a token with
    its ``{layout}``) and the text after it."""
    if rest.startswith("("):
        end = _match_close(rest, 0)
        if end < 0:
            return None
        shape_text, rest = rest[: end + 1], rest[end + 1 :].lstrip()
    else:
        mm = re.match(r"[A-Za-z][A-Za-z0-9]*\[[^\]]*\]", rest)
        if mm is None:
            return None
        j = mm.end()
        if j < len(rest) and rest[j] == "{":
            k = _match_close(rest, j)
            if k < 0:
                return None
            j = k + 1
        shape_text, rest = rest[:j], rest[j:].lstrip()
    try:
        return HloShape.parse(shape_text), rest
    except (HloParseError, ValueError):
        return None


def _split_call(rest: str) -> tuple[str, str, str] | None:
    """``opcode(inner), attributes`` → ``(opcode, inner, ", attributes")``."""
    mo = re.match(r"([A-Za-z][A-Za-z0-9\-_.]*)\(", rest)
    if mo is None:
        return None
    pstart = mo.end() - 1
    pend = _match_close(rest, pstart)
    if pend < 0:
        return None
    return mo.group(1), rest[pstart + 1 : pend], rest[pend + 1 :].strip()


def _parse_operands(opcode: str, inner: str) -> tuple[list[HloOperand], str | None] | None:
    """The operand references, or the literal of the opcodes whose parentheses hold one."""
    if opcode in _LITERAL_OPCODES:
        return [], inner
    operands: list[HloOperand] = []
    for piece in _split_top(inner) if inner.strip() else []:
        piece = piece.strip()
        if not piece:
            continue
        head, _, ref = piece.rpartition(" ")
        if not ref:
            return None
        operands.append(HloOperand(ref.lstrip("%"), head.strip(), ref.startswith("%")))
    return operands, None


def _parse_attributes(after: str) -> dict[str, str] | None:
    """``, key=value, flag`` → ``{"key": "value", "flag": ""}`` (values verbatim)."""
    attrs: dict[str, str] = {}
    if not after:
        return attrs
    if not after.startswith(","):
        return None
    last = ""
    for piece in _split_top(after[1:]):
        piece = piece.strip()
        if not piece:
            continue
        key, eq, val = piece.partition("=")
        key = key.strip()
        if key == "device_ids" and last == "replica_groups" and "{" not in attrs[last]:
            # replica_groups=mesh[...], device_ids=(...) {...}: one value with a top-level comma
            attrs[last] += f", {piece}"
            continue
        attrs[key] = val.strip() if eq else ""
        last = key
    return attrs


def _unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return bytes(v[1:-1], "utf-8").decode("unicode_escape") if "\\" in v else v[1:-1]
    return v


_T = TypeVar("_T")


def _marked_or_last(items: list[_T], marked: Callable[[_T], bool]) -> _T | None:
    """The first of ``items`` that is ``marked`` (XLA's ROOT, ENTRY), else the last; None when
    there are none."""
    return next((x for x in items if marked(x)), items[-1] if items else None)


@dataclass
class HloComputation:
    """A computation: its verbatim header line and body lines (instructions or verbatim text)."""

    name: str
    header: str
    is_entry: bool = False
    body: list[HloInstruction | str] = field(default_factory=list)
    closing: str = "}"

    @property
    def instructions(self) -> list[HloInstruction]:
        """The parsed instructions, in order."""
        return [b for b in self.body if isinstance(b, HloInstruction)]

    @property
    def root(self) -> HloInstruction | None:
        """The ROOT instruction (last instruction if none is marked)."""
        return _marked_or_last(self.instructions, lambda i: i.is_root)

    def get(self, name: str) -> HloInstruction | None:
        """The instruction called ``name``."""
        for i in self.instructions:
            if i.name == name:
                return i
        return None

    def users(self, name: str) -> list[HloInstruction]:
        """Instructions that use ``name`` as an operand."""
        return [i for i in self.instructions if name in i.operands]

    def remove(self, instr: HloInstruction) -> None:
        """Remove ``instr`` from the body."""
        self.body = [b for b in self.body if b is not instr]

    def replace_instruction(self, old: HloInstruction, new: HloInstruction) -> None:
        """XLA ``ReplaceInstruction``: uses of ``old`` use ``new``; ROOT moves; ``old`` goes."""
        for i in self.instructions:
            if i is not old:
                i.replace_operand(old.name, new.name)
        if old.is_root:
            new.is_root = True
        self.remove(old)

    def to_string(self) -> str:
        """The computation text."""
        lines = [self.header]
        for b in self.body:
            lines.append("  " + b.to_string() if isinstance(b, HloInstruction) else b)
        lines.append(self.closing)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_string()


_COMP_HEADER = re.compile(r"^\s*(ENTRY\s+)?(%?)([^\s(]+)\s*(\(.*)?\{\s*$")


@dataclass
class HloModule:
    """An HLO module: header fields, computations and any verbatim lines between them."""

    name: str
    header: str
    sections: list[HloComputation | str] = field(default_factory=list)
    #: whether the text ends with a newline (printed back the same way)
    final_newline: bool = True

    @classmethod
    def parse(cls, text: str) -> HloModule:
        """Parse HLO text; unmodelled lines are kept verbatim."""
        lines = text.splitlines()
        name = ""
        header = ""
        sections: list[HloComputation | str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if not header and stripped.startswith("HloModule"):
                header = stripped
                m = re.match(r"HloModule\s+([^\s,]+)", stripped)
                name = m.group(1) if m else ""
                i += 1
                continue
            m = _COMP_HEADER.match(line)
            if m is not None:
                comp = HloComputation(
                    name=m.group(3), header=line.rstrip(), is_entry=bool(m.group(1))
                )
                i += 1
                while i < len(lines):
                    body_line = lines[i]
                    if body_line.strip() == "}" or body_line.strip().startswith("} "):
                        comp.closing = body_line.rstrip()
                        break
                    instr = HloInstruction.parse_line(body_line)
                    if instr is None:
                        comp.body.append(body_line.rstrip())
                    else:
                        instr.computation = comp.name
                        instr.line = i + 1
                        comp.body.append(instr)
                    i += 1
                sections.append(comp)
                i += 1
                continue
            sections.append(line.rstrip())
            i += 1
        # XLA's dumps end in a blank line: kept, so the text prints back as it was read
        return cls(name=name, header=header, sections=sections, final_newline=text.endswith("\n"))

    @property
    def computations(self) -> list[HloComputation]:
        """All computations in order."""
        return [s for s in self.sections if isinstance(s, HloComputation)]

    @property
    def entry(self) -> HloComputation | None:
        """The ENTRY computation (the last computation if none is marked)."""
        return _marked_or_last(self.computations, lambda c: c.is_entry)

    @property
    def instructions(self) -> list[HloInstruction]:
        """All instructions of all computations, in text order."""
        out: list[HloInstruction] = []
        for c in self.computations:
            out.extend(c.instructions)
        return out

    def __iter__(self) -> Iterator[HloInstruction]:
        return iter(self.instructions)

    def get(self, name: str) -> HloInstruction | None:
        """The first instruction called ``name``."""
        for i in self.instructions:
            if i.name == name:
                return i
        return None

    def computation_of(self, instr: HloInstruction) -> HloComputation:
        """The computation holding ``instr``."""
        for c in self.computations:
            if any(b is instr for b in c.body):
                return c
        raise KeyError(instr.name)

    def to_string(self) -> str:
        """The module text."""
        parts = [self.header] if self.header else []
        for s in self.sections:
            parts.append(s.to_string() if isinstance(s, HloComputation) else s)
        return "\n".join(parts) + ("\n" if self.final_newline or not parts else "")

    def __str__(self) -> str:
        return self.to_string()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HloModule):
            return NotImplemented
        return self.to_string() == other.to_string()

    __hash__ = None  # type: ignore[assignment]
