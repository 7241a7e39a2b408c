"""Memory maps (lncsplit.memory.maps / plot): checked by the patches drawn, not by pixels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lncsplit
import pytest
from lncsplit import memory
from lncsplit.memory.plot import format_bytes, memory_figure
from views_helpers import example, split_example

plt = pytest.importorskip("matplotlib.pyplot")

GEN3_SB = 0x38000


def loc(name: str, type: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "type": type, **kw}


def mset(name: str, shape: list[int], locations: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "Internal",
        "dtype": "float32",
        "tensor_shape": shape,
        "locations": locations,
        **kw,
    }


def core_module(core: int, allocations: list[dict[str, Any]]) -> lncsplit.Module:
    doc = {
        "version": 2,
        "name": f"m_nc{core:02d}",
        "arch": "gen3",
        "attributes": {"neuron_core_id": core},
        "functions": [
            {
                "name": "main",
                "allocations": allocations,
                "basic_blocks": [{"name": "bb", "instructions": []}],
            }
        ],
    }
    return lncsplit.Module.from_json(json.dumps(doc))


def sample_cores() -> list[lncsplit.Module]:
    """Core 0 fits; core 1 has an SBUF partition overflow (base 100 + 64 > 128)."""

    def allocs(base: int) -> list[dict[str, Any]]:
        return [
            mset("a_sb", [64, 1024], [loc("a_sb_loc", "SB", addr=0, base=0)]),  # 4 KiB/partition
            mset("b_sb", [64, 512], [loc("b_sb_loc", "SB", addr=65536, base=base)]),
            mset("u_sb", [8, 8], [loc("u_sb_loc", "SB", base=0)]),  # unplaced
            mset("acc", [128, 512], [loc("acc_loc", "PSUM", addr=2048, bank=1, base=0)]),
            mset("x_dram", [128, 256], [loc("x_dram_loc", "DRAM", addr=0)]),
            mset("kv", [16, 16], [loc("kv_loc", "DRAM", addr=0)], addr_space="Shared"),
        ]

    return [core_module(0, allocs(0)), core_module(1, allocs(100))]


def gids(ax: Any, prefix: str) -> list[str]:
    return [p.get_gid() for p in ax.patches if (p.get_gid() or "").startswith(prefix)]


def axes_by_label(fig: Any) -> dict[str, Any]:
    return {ax.get_label(): ax for ax in fig.axes if ax.get_label()}


def test_maps_place_every_location_in_its_lane_with_its_violations() -> None:
    maps = memory.memory_maps(sample_cores())
    c0, c1 = maps
    assert [p.set_name for p in c0.sbuf] == ["a_sb", "b_sb", "u_sb"]
    assert [p.placed for p in c0.sbuf] == [True, True, False]
    assert (c0.sbuf[0].start, c0.sbuf[0].size, c0.sbuf[0].partitions) == (0, 4096, 64)
    assert [p.set_name for p in c0.psum] == ["acc"] and c0.psum[0].bank == 1
    assert [p.set_name for p in c0.dram] == ["x_dram"] and [p.set_name for p in c0.shared] == ["kv"]
    assert c0.dram[0].size == 128 * 256 * 4
    assert not any(p.violations for p in c0.placements())
    assert c1.sbuf[1].violations == ("sb_partition_range",)


def test_figure_draws_one_labelled_rectangle_per_placed_allocation() -> None:
    maps = memory.memory_maps(sample_cores())
    report = memory.check_memory(sample_cores())
    fig = memory_figure(maps, report, title="sample")
    try:
        ax = axes_by_label(fig)
        for c in (0, 1):
            assert sorted(gids(ax[f"sbuf-core{c}"], "sbuf:main/")) == [
                "sbuf:main/a_sb/a_sb_loc",
                "sbuf:main/b_sb/b_sb_loc",
            ]  # the unplaced u_sb is not drawn (the title says so)
            assert "1 unplaced" in ax[f"sbuf-core{c}"].get_title()
            assert gids(ax[f"psum-core{c}"], "psum:") == ["psum:main/acc/acc_loc"]
            assert gids(ax[f"dram-core{c}"], "dram:") == ["dram:main/x_dram/x_dram_loc"]
            assert gids(ax[f"dram-core{c}"], "shared:") == ["shared:main/kv/kv_loc"]
            labels = {t.get_text() for t in ax[f"sbuf-core{c}"].texts}
            assert {"a_sb", "b_sb"} <= labels
        # core 1's overflowing allocation is outlined in red and its panel title is red
        bad = [p for p in ax["sbuf-core1"].patches if p.get_gid() == "sbuf:main/b_sb/b_sb_loc"][0]
        assert bad.get_edgecolor()[:3] == pytest.approx((0.839, 0.153, 0.157), abs=0.01)
        assert bad.get_hatch() == "xx"
        good = [p for p in ax["sbuf-core0"].patches if p.get_gid() == "sbuf:main/b_sb/b_sb_loc"][0]
        assert good.get_hatch() is None
        assert "sample" in fig._suptitle.get_text() and "1 violation" in fig._suptitle.get_text()
    finally:
        plt.close(fig)


def test_reserved_sbuf_bytes_are_shaded_when_the_budget_is_in_view() -> None:
    big = [
        mset("big", [128, GEN3_SB // 8], [loc("big_loc", "SB", addr=0, base=0)])
    ]  # half the budget
    cores = [core_module(0, big)]
    fig = memory_figure(memory.memory_maps(cores), memory.check_memory(cores), summary=False)
    try:
        sb = axes_by_label(fig)["sbuf-core0"]
        (reserved,) = [p for p in sb.patches if p.get_gid() == "sbuf:reserved"]
        assert reserved.get_x() == GEN3_SB - 0x4008 and reserved.get_width() == 0x4008
        assert sb.get_xlim()[1] >= GEN3_SB
    finally:
        plt.close(fig)


def test_dram_panel_is_zoomed_to_the_tensors_not_the_24_gib_window() -> None:
    cores = split_example(example("07_shared"))
    fig = memory_figure(memory.memory_maps(cores), memory.check_memory(cores), summary=False)
    try:
        for c in (0, 1):
            ax = axes_by_label(fig)[f"dram-core{c}"]
            assert gids(ax, "dram:") and gids(ax, "shared:")
            assert ax.get_xlim()[1] < 1 << 20  # 512 KiB of tensors, not 24 GiB
            assert "off scale" in ax.get_xlabel() and "24 GiB" in ax.get_title()
    finally:
        plt.close(fig)


def test_dram_budget_violation_brings_the_limit_into_view() -> None:
    huge = [mset("huge", [128, 1 << 26], [loc("huge_loc", "DRAM", addr=0)])]  # 32 GiB > 24 GiB
    cores = [core_module(0, huge)]
    fig = memory_figure(memory.memory_maps(cores), memory.check_memory(cores), summary=False)
    try:
        ax = axes_by_label(fig)["dram-core0"]
        assert ax.get_xlim()[1] >= 24 << 30
        assert any(abs(line.get_xdata()[0] - (24 << 30)) < 1 for line in ax.lines)
        assert ax.title.get_color() == "tab:red"
    finally:
        plt.close(fig)


def test_summary_tick_labels_do_not_overlap_with_eight_cores_and_long_names() -> None:
    allocs = [mset("x", [128, 64], [loc("x_loc", "DRAM", addr=0)])]
    cores = []
    for c in range(8):
        m = core_module(c, allocs)
        m.name = f"a_rather_long_transformer_block_attention_kernel_nc{c:02d}"
        cores.append(m)
    report = memory.check_memory(cores)
    fig = memory_figure([], report, title="long names")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        r = canvas.get_renderer()
        for ax in fig.axes:
            boxes = [t.get_window_extent(r) for t in ax.get_xticklabels() if t.get_text()]
            assert len(boxes) == 8
            for a, b in zip(boxes, boxes[1:], strict=False):
                assert a.x1 <= b.x0, "x tick labels overlap"
    finally:
        plt.close(fig)


def test_plot_memory_writes_a_png_titled_with_the_input(tmp_path: Path) -> None:
    out = tmp_path / "m.png"
    report = memory.plot_memory(sample_cores(), out, title="corpus/kernel_a")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not report.ok


def test_plot_report_keeps_the_summary_chart(tmp_path: Path) -> None:
    out = tmp_path / "s.png"
    memory.plot_report(memory.check_memory(sample_cores()), out, title="x")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 512, 4096, 1536 << 10, 24 << 30)] == [
        "0 B",
        "512 B",
        "4 KiB",
        "1.5 MiB",
        "24 GiB",
    ]


def _drawn(fig: Any) -> tuple[Any, dict[str, Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer(), axes_by_label(fig)


def test_psum_patches_sit_in_the_banks_the_report_counts() -> None:
    # ps_t1 is in bank 1 at offset 0 of its bank: drawn in bank 1, not at byte 0 under ps_t0.
    allocs = [
        mset("ps_t0", [128, 512], [loc("ps_t0_loc", "PSUM", addr=0, bank=0, base=0)]),
        mset("ps_t1", [128, 512], [loc("ps_t1_loc", "PSUM", addr=0, bank=1, base=0)]),
        mset("ps_t3", [128, 256], [loc("ps_t3_loc", "PSUM", addr=6144 + 512, base=0)]),
    ]
    cores = [core_module(0, allocs)]
    report = memory.check_memory(cores)
    fig = memory_figure(memory.memory_maps(cores, report), report, summary=False)
    try:
        ax = axes_by_label(fig)["psum-core0"]
        patches = {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith("psum:")}
        banks = {gid: int(p.get_x() // 2048) for gid, p in patches.items()}
        assert banks == {
            "psum:main/ps_t0/ps_t0_loc": 0,
            "psum:main/ps_t1/ps_t1_loc": 1,
            "psum:main/ps_t3/ps_t3_loc": 3,
        }
        assert patches["psum:main/ps_t3/ps_t3_loc"].get_x() == 6144 + 512
        (usage,) = report.cores
        assert len(set(banks.values())) == usage.psum_banks_used
        assert max(banks.values()) + 1 == usage.psum_bank_high_water
        xs = sorted((p.get_x(), p.get_x() + p.get_width()) for p in patches.values())
        assert all(a[1] <= b[0] for a, b in zip(xs, xs[1:], strict=False)), "patches overlap"
    finally:
        plt.close(fig)


def _crowded_dram() -> list[dict[str, Any]]:
    """One big tensor and many small ones right after it: the labels cannot all sit inside."""
    sets = [mset("activations_dram", [128, 256], [loc("act_loc", "DRAM", addr=0)])]
    addr = 128 * 256 * 4
    for k in range(12):
        sets.append(mset(f"bias_{k}_dram", [1, 64], [loc(f"bias_{k}_loc", "DRAM", addr=addr)]))
        addr += 256
    sets.append(
        mset("kv_cache_shared", [16, 16], [loc("kv_loc", "DRAM", addr=0)], addr_space="Shared")
    )
    sets.append(mset("ps", [128, 512], [loc("ps_loc", "PSUM", addr=0, bank=0, base=0)]))
    return sets


@pytest.mark.parametrize("which", ["crowded", "08_shared_handoff", "07_shared_dram"])
def test_labels_neither_overlap_nor_leave_their_panel(which: str) -> None:
    cores = (
        [core_module(0, _crowded_dram())]
        if which == "crowded"
        else split_example(example(which[:3]))
    )
    report = memory.check_memory(cores)
    fig = memory_figure(memory.memory_maps(cores, report), report, summary=False)
    try:
        r, axes = _drawn(fig)
        for name, ax in axes.items():
            panel = ax.get_window_extent(r)
            labels = [
                t for t in ax.texts if (t.get_gid() or "").startswith("label:") and t.get_visible()
            ]
            boxes = [(t.get_gid(), t.get_window_extent(r)) for t in labels]
            for gid, b in boxes:
                assert (
                    b.x0 >= panel.x0 - 1 and b.x1 <= panel.x1 + 1
                    and b.y0 >= panel.y0 - 1 and b.y1 <= panel.y1 + 1
                ), f"{name}: {gid} leaves its panel"  # fmt: skip
            for k, (ga, a) in enumerate(boxes):
                for gb, b in boxes[k + 1 :]:
                    assert not a.overlaps(b), f"{name}: {ga} and {gb} overlap"
            # Every drawn allocation is named: on the panel, or in the panel's key (its legend).
            named = {t.get_gid().removeprefix("label:") for t in labels}
            legend = ax.get_legend()
            keyed = {t.get_text().split()[0] for t in legend.get_texts()} if legend else set()
            for p in ax.patches:
                gid = p.get_gid() or ""
                if ":" in gid and gid != "sbuf:reserved":
                    set_name = gid.split("/")[1]
                    assert gid in named or set_name in keyed, f"{name}: {gid} is not named"
            if legend is not None:
                box = legend.get_window_extent(r)
                for gid, b in boxes:
                    assert not box.overlaps(b), f"{name}: the key covers {gid}"
    finally:
        plt.close(fig)
