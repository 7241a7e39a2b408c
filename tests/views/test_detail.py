"""split --report-detail: per core, the pruned instructions and the edges dropped with them."""

from __future__ import annotations

import lncsplit
from lncsplit.views.detail import SplitSnapshot, split_detail
from views_helpers import example


def test_pruned_instructions_and_dropped_edges_per_core() -> None:
    m = lncsplit.load(example("01_shard"))
    snap = SplitSnapshot.of(m, expand=True)
    detail = split_detail(snap, lncsplit.split([m], 2))
    assert [d["pruned"] for d in detail] == [["main:bias_one_core1"], ["main:bias_zero_core0"]]
    assert detail[1]["dropped_edges"] == [
        {"function": "main", "from": "add_bias", "to": "bias_zero_core0", "kind": "Flow"}
    ]


def test_edges_of_a_pruned_loop_body_go_with_it() -> None:
    m = lncsplit.load(example("02_loop"))
    detail = split_detail(SplitSnapshot.of(m), lncsplit.split([m], 2))
    core0 = detail[0]
    assert {"main:fixup_core1", "main:fixup_copy", "main:fixup_relu"} <= set(core0["pruned"])
    assert {"function": "main", "from": "fixup_relu", "to": "fixup_copy", "kind": "Flow"} in core0[
        "dropped_edges"
    ]
    # edges between two kept instructions are not listed
    assert all(
        f"main:{e['from']}" in core0["pruned"] or f"main:{e['to']}" in core0["pruned"]
        for e in core0["dropped_edges"]
    )


def test_snapshot_does_not_modify_the_module() -> None:
    m = lncsplit.load(example("06_replication"))
    before = m.to_bytes()
    snap = SplitSnapshot.of(m, expand=True)
    assert ("main", "load_w_replicate") in snap.order and m.to_bytes() == before
