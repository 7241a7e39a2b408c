"""``lncsplit.diff``: what differs between the cores of one split (contract §4, §5).

Three kinds of difference, one line each, grouped by function and block:

- ``presence`` — an instruction kept on some cores only. With the symbolic module the split
  started from (``source=``), the line names the predicate that decided it (from
  :func:`lncsplit.explain`); from the cores alone that predicate is gone (the split drops
  constant-true predicates and deletes the instruction where one is false), and the line says so.
- ``address`` — an address expression (``addrs[d]``, ``tile_addrs``, ``block_addrs``, a
  ``physical_ap`` offset or location) or a shard-bound op field (collective ranks, ``queue``) of
  an instruction kept on several cores that is not the same on all of them.
- ``memory`` — a memory location placed differently (type, address, bank, base partition,
  shared flags, remote target), or present on some cores only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lncsplit._core import Module
from lncsplit.views.explain import (
    BOUND_OP_FIELDS,
    Explanation,
    InstructionRef,
    explain_all,
    expr_text,
    walk_instructions,
)
from lncsplit.views.splitdir import check_cores, check_source

__all__ = ["CoreDiff", "Difference", "diff", "merged_order"]

ALLOCATIONS = "(allocations)"
"""The pseudo-block memory differences are grouped under."""


@dataclass(frozen=True)
class Difference:
    """One difference between cores.

    ``kind`` is ``presence``, ``address`` or ``memory``; ``subject`` names the instruction
    (``load_x``), the address (``load_x ins[0].addrs[0]``) or the location
    (``kv_shared/kv_shared_loc``); ``values`` maps each core to what it has there (``absent``
    when it has nothing); ``detail`` says why, when known.
    """

    kind: str
    function: str
    block: str
    subject: str
    values: dict[int, str]
    detail: str | None = None
    instruction: str | None = None

    def line(self) -> str:
        """The one-line form: ``kind subject: core 0: … | core 1: …  (detail)``."""
        vals = " | ".join(f"core {c}: {v}" for c, v in sorted(self.values.items()))
        tail = f"  — {self.detail}" if self.detail else ""
        return f"{self.kind:<8} {self.subject}: {vals}{tail}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (core keys become strings in JSON)."""
        return {
            "kind": self.kind,
            "function": self.function,
            "block": self.block,
            "subject": self.subject,
            "values": {str(c): v for c, v in sorted(self.values.items())},
            "detail": self.detail,
            "instruction": self.instruction,
        }


@dataclass
class CoreDiff:
    """``lncsplit.diff``'s answer: the differences, in function/block order."""

    lnc: int
    modules: list[str]
    differences: list[Difference] = field(default_factory=list)
    source: str | None = None

    def of_kind(self, kind: str) -> list[Difference]:
        """The differences of one kind (``presence``, ``address``, ``memory``)."""
        return [d for d in self.differences if d.kind == kind]

    @property
    def presence(self) -> list[Difference]:
        """Instructions kept on some cores only."""
        return self.of_kind("presence")

    @property
    def addresses(self) -> list[Difference]:
        """Addresses that differ between cores."""
        return self.of_kind("address")

    @property
    def memory(self) -> list[Difference]:
        """Memory placements that differ between cores."""
        return self.of_kind("memory")

    def __len__(self) -> int:
        return len(self.differences)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "lnc": self.lnc,
            "modules": list(self.modules),
            "source": self.source,
            "counts": {k: len(self.of_kind(k)) for k in ("presence", "address", "memory")},
            "differences": [d.to_dict() for d in self.differences],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        from lncsplit.views.text import render_diff

        return render_diff(self)


# --------------------------------------------------------------------------- per-core index


@dataclass
class _Row:
    """One instruction of one core: where it is and its address texts."""

    block: str
    opcode: str
    addrs: dict[str, str]


def _argument_texts(side: str, k: int, a: Any) -> dict[str, str]:
    label = f"{side}[{k}]"
    out: dict[str, str] = {}
    for d, e in enumerate(a.addrs):
        out[f"{label}.addrs[{d}]"] = expr_text(e)
    for key in ("tile_addrs", "block_addrs"):
        e = getattr(a, key)
        if e is not None:
            out[f"{label}.{key}"] = expr_text(e)
    if a.kind == "physical_ap":
        out[f"{label}.memref"] = str(a.memref)
        out[f"{label}.offset"] = str(a.offset)
    return out


def _row(ref: InstructionRef) -> _Row:
    inst = ref.view
    texts: dict[str, str] = {}
    fields = inst.fields
    for key in BOUND_OP_FIELDS:
        if key in fields:
            texts[key] = _field_text(fields[key])
    for side, args in (
        ("ins", inst.ins),
        ("outs", inst.outs),
        ("indirection_ins", inst.indirection_ins),
    ):
        for k, a in enumerate(args):
            texts.update(_argument_texts(side, k, a))
    return _Row(ref.block, inst.opcode, texts)


def _field_text(v: Any) -> str:
    if isinstance(v, dict):
        from lncsplit.pelican import Context

        try:
            return expr_text(Context.from_json(v))
        except Exception:  # noqa: BLE001 - shown verbatim when it is not an expression
            return json.dumps(v, sort_keys=True)
    return json.dumps(v)


def _index(core: Module) -> dict[tuple[str, str], _Row]:
    return {(r.function, r.name): _row(r) for r in walk_instructions(core)}


def _placement(s: Any, loc: Any) -> str:
    """One location's placement as text (what the memory difference compares)."""
    parts = [str(loc.type)]
    if loc.addr is not None:
        parts.append(f"addr {loc.addr:#x}")
    if loc.bank is not None:
        parts.append(f"bank {loc.bank}")
    if loc.base is not None:
        parts.append(f"base {loc.base}")
    parts.append(f"{s.partitions}x{s.bytes_per_partition}B")
    if s.addr_space != "Local":
        parts.append(str(s.addr_space))
    if loc.is_shared_post_dram_alloc:
        parts.append("shared")
    if loc.written_by_another_core:
        parts.append("written by another core")
    rlt = loc.remote_local_target
    if rlt:
        parts.append(f"remote -> core {rlt.get('core')} {rlt.get('name')}")
    return ", ".join(parts)


def _memory_index(core: Module) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for f in core.functions:
        for s in f.allocations:
            locs = s.locations
            if not locs:
                out[(f.name, f"{s.name}")] = f"unplaced set {s.partitions}x{s.bytes_per_partition}B"
            for loc in locs:
                out[(f.name, f"{s.name}/{loc.name}")] = _placement(s, loc)
    return out


# --------------------------------------------------------------------------- comparing


Key = tuple[str, str]


def merged_order(indexes: Sequence[dict[Key, Any]], first: list[Key]) -> list[Key]:
    """Every key once: ``first``'s order when given (the source module's program order), else
    core 0's, with a key first seen on a later core placed right before its successor there
    (so an instruction kept on core 1 only still sits where it sits in the program)."""
    base: list[Key] = list(dict.fromkeys(first))
    if not base and indexes:
        base = list(indexes[0])
    known = set(base)
    before: dict[Key | None, list[Key]] = {}  # None: the end
    for idx in indexes:
        nxt: Key | None = None
        for k in reversed(list(idx)):
            if k not in known:
                known.add(k)
                before.setdefault(nxt, []).append(k)
            nxt = k
    out: list[Key] = []
    # Emit what goes before a key, then the key; iteratively (chains of new keys can be long).
    stack: list[tuple[Key | None, bool]] = [(k, False) for k in reversed([*base, None])]
    while stack:
        item, expanded = stack.pop()
        if expanded:
            if item is not None:
                out.append(item)
            continue
        stack.append((item, True))
        stack.extend((x, False) for x in reversed(before.get(item, [])))
    return out


def _presence_detail(ex: Explanation | None, absent: list[int]) -> str:
    if ex is None:
        return "deciding predicate unknown without the symbolic module"
    reasons = [c.reason for c in ex.cores if c.core in absent]
    return "; ".join(f"core {c}: {r}" for c, r in zip(absent, reasons, strict=False))


def _presence(
    key: tuple[str, str], rows: list[_Row | None], explained: dict[tuple[str, str], Explanation]
) -> Difference | None:
    present = [c for c, r in enumerate(rows) if r is not None]
    if len(present) == len(rows) or not present:
        return None  # on every core, or pruned on every core: not a difference between them
    absent = [c for c, r in enumerate(rows) if r is None]
    row = rows[present[0]]
    assert row is not None
    values = {c: ("kept" if r is not None else "pruned") for c, r in enumerate(rows)}
    detail = _presence_detail(explained.get(key), absent)
    return Difference("presence", key[0], row.block, key[1], values, detail, key[1])


def _address_diffs(key: tuple[str, str], rows: list[_Row | None]) -> list[Difference]:
    present = {c: r for c, r in enumerate(rows) if r is not None}
    if len(present) < 2:
        return []
    first = next(iter(present.values()))
    labels = list(dict.fromkeys(lbl for r in present.values() for lbl in r.addrs))
    out = []
    for lbl in labels:
        values = {c: r.addrs.get(lbl, "absent") for c, r in present.items()}
        if len(set(values.values())) > 1:
            out.append(
                Difference("address", key[0], first.block, f"{key[1]} {lbl}", values, None, key[1])
            )
    return out


def _instruction_diffs(
    cores: Sequence[Module],
    order: list[tuple[str, str]],
    explained: dict[tuple[str, str], Explanation],
) -> list[Difference]:
    indexes = [_index(c) for c in cores]
    out: list[Difference] = []
    for key in merged_order(indexes, order):
        rows = [idx.get(key) for idx in indexes]
        p = _presence(key, rows, explained)
        if p is not None:
            out.append(p)
        out.extend(_address_diffs(key, rows))
    return out


def _memory_diffs(cores: Sequence[Module]) -> list[Difference]:
    indexes = [_memory_index(c) for c in cores]
    out = []
    for key in merged_order(indexes, []):
        values = {c: idx.get(key, "absent") for c, idx in enumerate(indexes)}
        if len(set(values.values())) > 1:
            out.append(Difference("memory", key[0], ALLOCATIONS, key[1], values))
    return out


def _group(diffs: list[Difference], functions: list[str]) -> list[Difference]:
    """Stable grouping by function (module order) then block (first-seen order)."""
    fpos = {f: i for i, f in enumerate(functions)}
    bpos: dict[tuple[str, str], int] = {}
    for d in diffs:
        bpos.setdefault((d.function, d.block), len(bpos))
    return sorted(
        diffs,
        key=lambda d: (
            fpos.get(d.function, len(fpos)),
            d.block == ALLOCATIONS,
            bpos[(d.function, d.block)],
        ),
    )


def diff(
    cores: Sequence[Module],
    source: Module | None = None,
    *,
    expand: bool = True,
    explanations: Sequence[Explanation] | None = None,
) -> CoreDiff:
    """What differs between ``cores`` (the N core modules of one split, in core order).

    With ``source`` (the symbolic module the split started from; another module is a
    :class:`~lncsplit.views.splitdir.SourceMismatchError`) each presence difference
    names the predicate that decided it; ``expand`` explains ``source`` after
    ``expand_replication`` as the pipeline does (a module without replication is unchanged).
    ``explanations`` (``explain_all(source, N, expand=expand)``, when the caller already has
    it) saves explaining twice. The modules are not modified.
    """
    cores = list(cores)
    check_cores(cores)
    if source is not None:
        check_source(cores, source)
    explained: dict[tuple[str, str], Explanation] = {}
    order: list[tuple[str, str]] = []
    if explanations is None and source is not None and len(cores) > 1:
        explanations = explain_all(source, len(cores), expand=expand)
    if explanations is not None:
        for ex in explanations:
            explained[(ex.function, ex.instruction)] = ex
            order.append((ex.function, ex.instruction))
    diffs = _instruction_diffs(cores, order, explained) + _memory_diffs(cores)
    functions = list(dict.fromkeys(f.name for c in cores for f in c.functions))
    return CoreDiff(
        lnc=len(cores),
        modules=[c.name for c in cores],
        differences=_group(diffs, functions),
        source=source.name if source is not None else None,
    )
