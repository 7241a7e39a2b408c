"""Per-core bar chart of SBUF / PSUM / DRAM use against each limit.

matplotlib is an optional extra (``pip install lncsplit[plot]``); it is
imported only when :func:`plot_report` is called.
"""

from __future__ import annotations

import os
from typing import Any

from lncsplit.errors import LncsplitError
from lncsplit.memory.report import MemoryReport


class PlotUnavailableError(LncsplitError, ImportError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - exercised only without matplotlib
        raise PlotUnavailableError(
            "plotting the memory report needs matplotlib: pip install 'lncsplit[plot]' "
            "(or pip install matplotlib)"
        ) from e
    return plt


def plot_report(report: MemoryReport, path: str | os.PathLike[str]) -> None:
    """Draw ``report`` as three per-core bar charts (SBUF, PSUM, DRAM) to ``path``.

    Each bar is the core's use as a percentage of that core's own full limit
    (SBUF high-water mark / SB_SIZE, PSUM banks used / banks, private DRAM /
    ``dramSizeGb << 30``); the 100 % line is the limit. Cores with violations
    are drawn in red. The format follows ``path``'s extension (PNG, SVG, PDF).
    """
    plt = _pyplot()
    labels = [f"c{u.core}" if len(report.cores) <= 8 else str(u.core) for u in report.cores]
    if len({u.module for u in report.cores}) > 1:
        labels = [f"{u.module}\nc{u.core}" for u in report.cores]
    panels = (
        ("SBUF (high-water / SB_SIZE)", "sbuf_high_water", "sbuf_bytes_per_partition"),
        ("PSUM (banks used / banks)", "psum_banks_used", "psum_banks"),
        ("DRAM (private / dramSizeGb<<30)", "private_dram_bytes", "dram_bytes"),
    )
    width = max(6.0, 1.0 + 0.6 * len(report.cores)) * 1.0
    fig, axes = plt.subplots(1, 3, figsize=(width * 1.5, 4.0), squeeze=False)
    try:
        for ax, (title, used_key, limit_key) in zip(axes[0], panels, strict=True):
            pct = []
            for u in report.cores:
                limit = u.limits.get(limit_key, 0)
                used = int(getattr(u, used_key))
                pct.append(100.0 * used / limit if limit else 0.0)
            colors = ["tab:red" if u.violations else "tab:blue" for u in report.cores]
            xs = list(range(len(report.cores)))
            ax.bar(xs, pct, color=colors)
            ax.axhline(100.0, color="black", linestyle="--", linewidth=1)
            ax.set_xticks(xs)
            ax.set_xticklabels(labels, fontsize=8)
            ax.set_title(title, fontsize=10)
            ax.set_ylabel("% of per-core limit")
            ax.set_ylim(0, max([110.0, *[p * 1.1 for p in pct]]))
        status = "ok" if report.ok else f"{len(report.violations)} violation(s)"
        fig.suptitle(f"LNC memory, lnc {report.lnc}: {status}")
        fig.tight_layout()
        _save_atomic(fig, os.fspath(path))
    finally:
        plt.close(fig)


def _save_atomic(fig: Any, path: str) -> None:
    """Render in memory, then write whole or not at all (contract §6)."""
    import io

    from lncsplit._atomic import write_file_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format=os.path.splitext(path)[1][1:].lower() or "png")
    write_file_atomic(path, buf.getvalue())


__all__ = ["PlotUnavailableError", "plot_report"]
