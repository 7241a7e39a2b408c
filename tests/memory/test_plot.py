"""plot_report draws a per-core bar chart."""

from __future__ import annotations

import os

import pytest
from builders import make_module, module, one
from lncsplit.memory import check_memory, plot_report

pytest.importorskip("matplotlib")


def test_plot_report_writes_a_png(tmp_path: os.PathLike[str]) -> None:
    mods = [
        make_module(module([one("t", "SB", [128, 4096], addr=0)], core=0)),
        make_module(module([one("t", "SB", [129, 4096], addr=0)], core=1)),
    ]
    r = check_memory(mods, lnc=2)
    out = os.path.join(os.fspath(tmp_path), "mem.png")
    plot_report(r, out)
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
