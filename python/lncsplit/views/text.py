"""Plain-text renderings of the views (what ``lncsplit explain`` and ``lncsplit diff`` print)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lncsplit.views.diff import CoreDiff
    from lncsplit.views.explain import CoreExplanation, Explanation

__all__ = ["render_diff", "render_explanation"]


def _table(rows: Sequence[tuple[str, ...]], indent: str) -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]


def _core_lines(c: CoreExplanation) -> list[str]:
    if c.lowered_into:  # "lowered by lower_local_collectives into …"
        lines = [f"core {c.core}: LOWERED {c.reason.removeprefix('lowered ')}"]
    else:
        verdict, _, why = c.reason.partition(": ")
        lines = [f"core {c.core}: {verdict.upper()} - {why}"]
    if c.predicates:
        lines.append("  predicates (shard bound):")
        rows = [
            (p.text, "->", p.bound_text, p.value_text, "dropped" if p.dropped else "")
            for p in c.predicates
        ]
        lines += _table(rows, "    ")
    if c.children:
        kids = ", ".join(f"{k.name} {'kept' if k.kept else 'pruned'}" for k in c.children)
        lines.append(f"  children: {kids}")
    return lines


def _address_lines(ex: Explanation) -> list[str]:
    """One row per address: as written, then its value on each core."""
    if not ex.cores or not ex.cores[0].addresses:
        return []
    header = ("argument", "set", "field", "written", *(f"core {c.core}" for c in ex.cores))
    rows = [header]
    for k, a in enumerate(ex.cores[0].addresses):
        per_core = tuple(c.addresses[k].after for c in ex.cores)
        rows.append((a.argument, a.memsetref or "-", a.field, a.before, *per_core))
    return ["addresses (before and after binding the shard):", *_table(rows, "  ")]


def render_explanation(ex: Explanation) -> str:
    """``lncsplit explain``'s text output."""
    kept = ", ".join(map(str, ex.kept_on)) or "none"
    lowered = ", ".join(map(str, ex.lowered_on))
    tail = f"; lowered by lower_local_collectives on core(s) {lowered}" if lowered else ""
    lines = [
        f"{ex.function}:{ex.instruction} ({ex.opcode}) in block {ex.block} of {ex.module}",
        f"lnc {ex.lnc}: kept on core(s) {kept}{' by the split' if lowered else ''}{tail}",
    ]
    for c in ex.cores:
        lines += _core_lines(c)
    lines += _address_lines(ex)
    return "\n".join(lines)


def render_diff(d: CoreDiff) -> str:
    """``lncsplit diff``'s text output: a summary line, then one line per difference under
    ``function F`` / ``block B`` headings."""
    counts = ", ".join(f"{len(d.of_kind(k))} {k}" for k in ("presence", "address", "memory"))
    lines = [
        f"diff of {d.lnc} core(s) ({', '.join(d.modules)}): {len(d.differences)} difference(s) ({counts})"
    ]
    if d.source is None and d.presence:
        lines.append("  (give the symbolic module with --source to name the deciding predicates)")
    fn = blk = None
    for x in d.differences:
        if x.function != fn:
            fn, blk = x.function, None
            lines.append(f"function {fn}")
        if x.block != blk:
            blk = x.block
            lines.append(f"  block {blk}")
        lines.append(f"    {x.line()}")
    return "\n".join(lines)
