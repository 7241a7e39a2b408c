"""Drawing the memory model: per-core memory maps and the summary bar chart (matplotlib).

matplotlib is an optional extra (``pip install lncsplit[plot]``), imported only when drawing;
figures are made without pyplot (no global state), so several threads may draw at once.

- :func:`memory_figure` — one row per core: SBUF (partitions × bytes, each placed allocation a
  labelled rectangle, the reserved bytes shaded), PSUM (partitions × bytes across the banks,
  bank boundaries drawn), DRAM (the private window and the shared region as two lanes of one
  address axis, each tensor a labelled rectangle); limits drawn as dashed lines, locations with
  a violation outlined in red and cross-hatched; then the summary row (use as a percentage of
  each core's own limit, the absolute figure written on each bar).
- :func:`plot_memory` — that figure for a set of core modules, saved to a file.
- :func:`plot_report` — the summary row alone, from a report.

Every drawn allocation carries a ``gid`` (``sbuf:<function>/<set>/<location>``, ``psum:…``,
``dram:…``, ``shared:…``; its label ``label:<same>``) so tests and tools can find it.

**Labels never overlap or leave their panel.** Once the figure is laid out, each label is
measured (largest allocations first): it stays when it fits inside its own rectangle (turned
90° if that is what fits) without touching a label already placed; otherwise it is hidden and
the allocation is listed in the panel's key (a legend beside the panel: colour, name, address
and size), so every drawn allocation is named on the map or in its key.
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Sequence
from typing import Any

from lncsplit._core import Module
from lncsplit.errors import LncsplitError
from lncsplit.memory.maps import CoreMap, Placement, memory_maps
from lncsplit.memory.report import MemoryReport, check_memory

__all__ = [
    "INSTALL_HINT",
    "KEY_ENTRIES",
    "PlotUnavailableError",
    "format_bytes",
    "memory_figure",
    "memory_png",
    "plot_memory",
    "plot_report",
    "require_matplotlib",
]

_MEMORY_COLUMNS = ("SBUF", "PSUM", "DRAM")
_VIOLATION = "tab:red"


class PlotUnavailableError(LncsplitError, ImportError):
    """matplotlib is not installed."""


#: How to get matplotlib, said wherever it is missing.
INSTALL_HINT = "pip install 'lncsplit[plot]' (or pip install matplotlib)"


def require_matplotlib(what: str = "plotting the memory report") -> Any:
    """matplotlib's ``Figure``, or :class:`PlotUnavailableError` saying ``what`` needs it
    and how to install it (the one reason, one line)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise PlotUnavailableError(
            f"{what} needs matplotlib, which is not installed: {INSTALL_HINT}"
        ) from e
    return Figure


def _figure(width: float, height: float) -> Any:
    """A new Figure, without pyplot: no global state, so threads can draw at the same time."""
    return require_matplotlib()(figsize=(width, height), layout="constrained")


def format_bytes(n: float) -> str:
    """``512 B``, ``4 KiB``, ``1.5 MiB``, ``24 GiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


def _color(name: str) -> Any:
    """A stable color per tensor name (the same tensor looks the same on every core)."""
    from matplotlib import colormaps

    return colormaps["tab20"](zlib.crc32(name.encode()) % 20)


def _byte_axis(ax: Any, span: float) -> None:
    """Ticks at multiples of a power of two (about six of them), labelled in B/KiB/MiB/GiB."""
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    step = 1
    while span / step > 6:
        step *= 2
    ax.xaxis.set_major_locator(MultipleLocator(step))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_bytes(v)))


def _rect(
    ax: Any, kind: str, p: Placement, x: int, y: float, w: float, h: float, span: float
) -> None:
    """One allocation: a filled rectangle and its label, red and hatched on a violation."""
    from matplotlib.patches import Rectangle

    bad = bool(p.violations)
    ax.add_patch(
        Rectangle(
            (x, y), w, h,
            facecolor=_color(p.set_name),
            edgecolor=_VIOLATION if bad else "black",
            linewidth=2.0 if bad else 0.6,
            hatch="xx" if bad else ("..." if p.remote else None),
            alpha=0.85,
            gid=f"{kind}:{p.anchor}",
        )
    )  # fmt: skip
    narrow = w < 0.08 * span
    ax.text(
        x + w / 2, y + h / 2, _label(p),
        ha="center", va="center", fontsize=7, rotation=90 if narrow else 0,
        clip_on=True, in_layout=False, gid=f"label:{kind}:{p.anchor}",
    )  # fmt: skip


def _label(p: Placement) -> str:
    return p.set_name if not p.remote else f"{p.set_name} -> {p.remote}"


#: Most allocations one panel's key lists (the rest are counted).
KEY_ENTRIES = 20
#: Pixels kept between a label and its rectangle's edge, or another label.
_LABEL_MARGIN = 2.0


def _fit_labels(fig: Any, maps: Sequence[CoreMap]) -> None:
    """Hide every label that does not fit inside its own rectangle or would touch another,
    and list those allocations in the panel's key; repeat while a key changes the layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    placements = {f"{k}:{p.anchor}": p for cm in maps for k, p in _kinds(cm)}
    canvas = FigureCanvasAgg(fig)
    keyed: dict[Any, list[Any]] = {}
    for _round in range(6):
        fig.draw_without_rendering()
        renderer = canvas.get_renderer()  # type: ignore[no-untyped-call]
        changed = False
        for ax in fig.axes:
            hidden = _fit_axes(ax, renderer)
            if hidden:
                keyed.setdefault(ax, []).extend(hidden)
                _key(ax, keyed[ax], placements)
                changed = True
        if not changed:
            return


def _kinds(cm: CoreMap) -> list[tuple[str, Placement]]:
    return [
        *(("sbuf", p) for p in cm.sbuf),
        *(("psum", p) for p in cm.psum),
        *(("dram", p) for p in cm.dram),
        *(("shared", p) for p in cm.shared),
    ]


def _fit_axes(ax: Any, renderer: Any) -> list[Any]:
    """The patches of ``ax`` whose labels are hidden now (they did not fit)."""
    patches = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("label:") and t.get_visible()]
    panel = ax.get_window_extent(renderer)

    def area(t: Any) -> float:
        patch = patches.get(t.get_gid().removeprefix("label:"))
        return (
            0.0
            if patch is None
            else patch.get_window_extent(renderer).width * patch.get_window_extent(renderer).height
        )

    placed: list[Any] = []
    hidden: list[Any] = []
    for t in sorted(labels, key=area, reverse=True):
        patch = patches.get(t.get_gid().removeprefix("label:"))
        box = None if patch is None else patch.get_window_extent(renderer)
        inside = None if box is None else _clip(box, panel)
        fits = None
        for rotation in (t.get_rotation(), 90 - t.get_rotation()):
            t.set_rotation(rotation)
            ext = t.get_window_extent(renderer)
            if (
                inside is not None
                and _within(ext, inside)
                and not any(ext.overlaps(b) for b in placed)
            ):
                fits = ext
                break
        if fits is None:
            t.set_visible(False)
            if patch is not None and patch.get_gid() != "sbuf:reserved":
                hidden.append(patch)
        else:
            placed.append(fits.expanded(1.0, 1.0).padded(_LABEL_MARGIN))
    return hidden


def _clip(box: Any, panel: Any) -> Any | None:
    from matplotlib.transforms import Bbox

    x0, y0 = max(box.x0, panel.x0), max(box.y0, panel.y0)
    x1, y1 = min(box.x1, panel.x1), min(box.y1, panel.y1)
    if x1 - x0 <= 2 * _LABEL_MARGIN or y1 - y0 <= 2 * _LABEL_MARGIN:
        return None
    return Bbox.from_extents(
        x0 + _LABEL_MARGIN, y0 + _LABEL_MARGIN, x1 - _LABEL_MARGIN, y1 - _LABEL_MARGIN
    )


def _within(inner: Any, outer: Any) -> bool:
    return bool(
        inner.x0 >= outer.x0
        and inner.x1 <= outer.x1
        and inner.y0 >= outer.y0
        and inner.y1 <= outer.y1
    )


def _key(ax: Any, patches: list[Any], placements: dict[str, Placement]) -> None:
    """The panel's key: the allocations whose labels could not be drawn on it, by address."""
    from matplotlib.patches import Patch

    items = sorted(
        (placements[p.get_gid()] for p in patches if p.get_gid() in placements),
        key=lambda q: (q.start or 0, q.set_name),
    )
    handles = [
        Patch(
            facecolor=_color(q.set_name),
            edgecolor=_VIOLATION if q.violations else "black",
            linewidth=0.6,
            label=f"{_label(q)}  @{q.start or 0:#x}, {format_bytes(q.size)}",
        )
        for q in items[:KEY_ENTRIES]
    ]
    if len(items) > KEY_ENTRIES:
        handles.append(Patch(facecolor="none", edgecolor="none",
                             label=f"… and {len(items) - KEY_ENTRIES} more"))  # fmt: skip
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=6,
        frameon=False, title="too small to label", title_fontsize=6, borderaxespad=0.0,
        ncols=1 if len(handles) <= 10 else 2, handlelength=1.0,
    )  # fmt: skip


def _unplaced_note(items: Sequence[Placement]) -> str:
    n = sum(1 for p in items if not p.placed)
    return f", {n} unplaced (not drawn)" if n else ""


def _title(ax: Any, text: str, bad: bool) -> None:
    ax.set_title(text, fontsize=9, color=_VIOLATION if bad else "black")


def _view_span(limit: int, ends: Sequence[int]) -> tuple[int, bool]:
    """The byte range to show: the whole budget when the content fills a quarter of it or
    more (or overflows it), else zoomed to the content (at least 4 KiB), so small
    allocations stay visible. Returns (span, zoomed)."""
    hwm = max(ends, default=0)
    if hwm >= limit // 4:
        return max(limit, hwm), False
    return max(4096, int(hwm * 1.25)), True


def _draw_sbuf(ax: Any, cm: CoreMap) -> None:
    from matplotlib.patches import Rectangle

    size = cm.limits["sbuf_bytes_per_partition"]
    parts = cm.limits["sbuf_partitions"]
    reserved = cm.limits.get("sbuf_reserved", 0)
    placed = [p for p in cm.sbuf if p.placed]
    xmax, zoomed = _view_span(size, [p.end or 0 for p in placed])
    if zoomed:
        ax.set_xlabel(
            f"byte in partition (zoomed: limit {format_bytes(size)} off scale)", fontsize=8
        )
    else:
        ax.set_xlabel("byte in partition (hatched: reserved)", fontsize=8)
    if reserved and not zoomed:
        ax.add_patch(
            Rectangle((size - reserved, 0), reserved, parts, facecolor="0.88", edgecolor="0.55",
                      hatch="///", linewidth=0.5, gid="sbuf:reserved")
        )  # fmt: skip
        ax.text(size - reserved / 2, parts / 2, "reserved", rotation=90, ha="center", va="center",
                fontsize=7, color="0.35", clip_on=True, in_layout=False, gid="label:sbuf:reserved")  # fmt: skip
    _partitioned(ax, "sbuf", cm.sbuf, (size, parts), xmax)
    ax.set_ylabel(f"core {cm.core}\npartition")
    bad = any(p.violations for p in cm.sbuf)
    _title(ax, f"SBUF: {len(placed)} placed, high-water {format_bytes(cm.usage.sbuf_high_water)} "
               f"of {format_bytes(size)} ({format_bytes(reserved)} reserved){_unplaced_note(cm.sbuf)}",
           bad)  # fmt: skip


def _partitioned(
    ax: Any, region: str, allocs: list[Placement], limit: tuple[int, int], xmax: int
) -> None:
    """What SBUF and PSUM draw alike: the placed allocations (byte × partition rectangles),
    the memory's ``limit`` (bytes, partitions) as dashed lines, the extent (partitions grow
    down) and the byte axis."""
    for p in allocs:
        if p.placed:
            assert p.start is not None
            _rect(ax, region, p, p.start, p.partition, p.size, p.partitions, xmax)
    ax.axvline(limit[0], color="black", linestyle="--", linewidth=1)
    ax.axhline(limit[1], color="black", linestyle="--", linewidth=1)
    ymax = max([limit[1], *(p.partition + p.partitions for p in allocs)])
    ax.set_xlim(0, xmax * 1.02)
    ax.set_ylim(ymax * 1.02, 0)
    _byte_axis(ax, xmax)


def _draw_psum(ax: Any, cm: CoreMap) -> None:
    bank_size = cm.limits["psum_bank_size"]
    banks = cm.limits["psum_banks"]
    parts = cm.limits["psum_partitions"]
    placed = [p for p in cm.psum if p.placed]
    total = banks * bank_size
    xmax = max([total, *(p.end or 0 for p in placed)])
    for b in range(1, banks):
        ax.axvline(b * bank_size, color="0.7", linestyle=":", linewidth=0.8)
    top = ax.secondary_xaxis("top")
    top.set_xticks(
        [(b + 0.5) * bank_size for b in range(banks)], [f"bank {b}" for b in range(banks)]
    )
    top.tick_params(labelsize=6, length=0)
    _partitioned(ax, "psum", cm.psum, (total, parts), xmax)
    bad = any(p.violations for p in cm.psum)
    _title(ax, f"PSUM: {cm.usage.psum_banks_used} of {banks} banks, {len(placed)} placed"
               f"{_unplaced_note(cm.psum)}", bad)  # fmt: skip


def _draw_dram(ax: Any, cm: CoreMap) -> None:
    """Private window (upper lane) and shared region (lower lane) on one byte axis, zoomed to
    the tensors: the window limit is a dashed line when it is in view, else written."""
    limit = cm.limits["dram_bytes"]
    lanes = ((cm.dram, 1.1, "dram"), (cm.shared, 0.1, "shared"))
    ends = [p.end or 0 for ps, _y, _k in lanes for p in ps if p.placed]
    over = any(v.rule == "dram_budget" for v in cm.violations)
    xmax, _zoomed = _view_span(limit, [*ends, limit if over else 0])
    for items, y, kind in lanes:
        for p in items:
            if p.placed:
                assert p.start is not None
                _rect(ax, kind, p, p.start, y, max(p.size, 1), 0.8, xmax)
    if limit <= xmax * 1.05:
        ax.axvline(limit, color=_VIOLATION if over else "black", linestyle="--", linewidth=1)
        ax.set_xlabel("byte address (dashed: window limit)", fontsize=8)
    else:
        ax.set_xlabel(f"byte address (limit {format_bytes(limit)} off scale)", fontsize=8)
    ax.set_xlim(0, xmax * 1.05)
    ax.set_ylim(0, 2)
    ax.set_yticks([0.5, 1.5], ["shared", "private"])
    _byte_axis(ax, xmax)
    u = cm.usage
    bad = over or any(p.violations for p in (*cm.dram, *cm.shared))
    _title(ax, f"DRAM: private {format_bytes(u.private_dram_bytes)} of {format_bytes(limit)}, "
               f"shared {format_bytes(u.shared_dram_bytes)}{_unplaced_note([*cm.dram, *cm.shared])}",
           bad)  # fmt: skip


_SUMMARY_PANELS = (
    ("SBUF high-water", "sbuf_high_water", "sbuf_bytes_per_partition", True),
    ("PSUM banks used", "psum_banks_used", "psum_banks", False),
    ("private DRAM", "private_dram_bytes", "dram_bytes", True),
)


def _draw_summary(axes: Sequence[Any], report: MemoryReport) -> None:
    """Per core, use as a % of its own limit; every bar says its absolute figure, and the
    y axis is logarithmic so a few MiB against a 24 GiB window still shows."""
    from matplotlib.ticker import NullLocator

    labels = [f"c{u.core}" for u in report.cores]
    xs = list(range(len(report.cores)))
    for ax, (title, used_key, limit_key, is_bytes) in zip(axes, _SUMMARY_PANELS, strict=True):
        pct, texts = [], []
        for u in report.cores:
            limit = u.limits.get(limit_key, 0)
            used = int(getattr(u, used_key))
            pct.append(100.0 * used / limit if limit else 0.0)
            texts.append(format_bytes(used) if is_bytes else str(used))
        colors = [_VIOLATION if u.violations else "tab:blue" for u in report.cores]
        shown = [max(p, 1e-4) for p in pct]
        ax.bar(xs, shown, color=colors, gid=f"summary:{used_key}")
        for x, y, t in zip(xs, shown, texts, strict=True):
            ax.text(x, y * 1.3, t, ha="center", va="bottom", fontsize=7)
        ax.axhline(100.0, color="black", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(NullLocator())  # minor log ticks cost more than they tell
        ax.set_ylim(1e-4, max([1000.0, *(p * 10 for p in shown)]))
        ax.set_xticks(xs, labels, fontsize=8, rotation=0 if len(xs) <= 8 else 45)
        ax.set_title(f"{title} (% of the core's limit)", fontsize=9)
        ax.set_ylabel("% of limit (log)")


def memory_figure(
    maps: Sequence[CoreMap],
    report: MemoryReport,
    *,
    title: str | None = None,
    summary: bool = True,
) -> Any:
    """A matplotlib Figure (made without pyplot, so nothing to close): one row of
    SBUF/PSUM/DRAM maps per core in ``maps``, then the summary row (when ``summary``)."""
    rows = len(maps) + (1 if summary else 0)
    fig = _figure(18, 3.6 * max(rows, 1))
    axes = fig.subplots(max(rows, 1), 3, squeeze=False)
    for r, cm in enumerate(maps):
        for col, draw in enumerate((_draw_sbuf, _draw_psum, _draw_dram)):
            axes[r][col].set_label(f"{_MEMORY_COLUMNS[col].lower()}-core{cm.core}")
            draw(axes[r][col], cm)
    if summary:
        _draw_summary(axes[rows - 1], report)
    status = "ok" if report.ok else f"{len(report.violations)} violation(s)"
    head = f"{title}: " if title else ""
    fig.suptitle(f"{head}LNC memory, lnc {report.lnc}, {len(report.cores)} core(s): {status}")
    if maps:
        _fit_labels(fig, maps)
    return fig


def _save(fig: Any, target: Any) -> None:
    if isinstance(target, str):
        # A file is rendered in memory, then written whole or not at all (contract §6).
        from lncsplit._atomic import write_file_atomic

        buf = io.BytesIO()
        fig.savefig(buf, dpi=90, format=os.path.splitext(target)[1][1:].lower() or "png")
        write_file_atomic(target, buf.getvalue())
        return
    fig.savefig(target, dpi=90)


def memory_png(
    maps: Sequence[CoreMap], report: MemoryReport, *, title: str | None = None, summary: bool = True
) -> bytes:
    """:func:`memory_figure` as PNG bytes (the HTML report embeds these)."""
    buf = io.BytesIO()
    _save(memory_figure(maps, report, title=title, summary=summary), buf)
    return buf.getvalue()


def plot_memory(
    modules: Sequence[Module],
    path: str | os.PathLike[str],
    report: MemoryReport | None = None,
    *,
    title: str | None = None,
    arch: str | None = None,
) -> MemoryReport:
    """Draw the memory maps of the core ``modules`` (plus the summary row) to ``path``.

    ``title`` names the input (it heads the figure). Returns the report drawn (computed with
    ``check_memory(modules, arch=arch)`` when not given). The format follows the extension.
    """
    mods = list(modules)
    if report is None:
        report = check_memory(mods, arch=arch)
    maps = memory_maps(mods, report)
    _save(memory_figure(maps, report, title=title), os.fspath(path))
    return report


def plot_report(
    report: MemoryReport, path: str | os.PathLike[str], title: str | None = None
) -> None:
    """Draw ``report``'s summary (SBUF, PSUM, DRAM use per core as a % of each core's own
    limit, log scale, the absolute figure on each bar) to ``path``; ``title`` names the input."""
    fig = _figure(15, 4.2)
    axes = fig.subplots(1, 3, squeeze=False)
    _draw_summary(axes[0], report)
    status = "ok" if report.ok else f"{len(report.violations)} violation(s)"
    head = f"{title}: " if title else ""
    fig.suptitle(f"{head}LNC memory, lnc {report.lnc}: {status}")
    _save(fig, os.fspath(path))
