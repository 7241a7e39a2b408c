"""The LNC tail in the pipeline (contract §3.6): orders 15, 80, 81 between the
concretized verifier and shared-DRAM placement, on hand-built and generated
kernels, and through ``lncsplit split`` on the example corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lncsplit
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import _core
from lncsplit.pipeline import PassEvent
from tail_kernels import LOWERED, bracketed, collective_kernel


def test_the_tail_runs_after_the_concretized_verifier_and_before_placement() -> None:
    events: list[PassEvent] = []
    m = collective_kernel("AllReduce", 2)
    lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=2), hook=events.append)
    orders = [(e.order, e.name) for e in events]
    i = orders.index((14, "lnc_verifier"))
    assert orders[i + 1 : i + 5] == [
        (15, "collective_buffer_check"),
        (80, "lower_local_collectives"),
        (81, "extend_shared_lifetimes"),
        (82, "coloring_allocator_dram_shared"),
    ]


def test_the_collective_buffer_is_checked_on_the_collectives_as_written() -> None:
    m = collective_kernel("AllReduce", 2)
    with pytest.raises(lncsplit.memory.MemoryCheckError) as e:
        lncsplit.run_pipeline([m.clone()], lncsplit.PassOptions(lnc_size=2, cc_buffer_mb=0))
    assert [v.rule for v in e.value.violations] == ["cc_buffer", "cc_buffer"]
    # Without the memory model the check does not run; the lowering does.
    out = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=2, cc_buffer_mb=0, memory=False))
    bracketed(out, ["x"])


def test_the_bpp_option_reaches_the_lowering() -> None:
    opts = lncsplit.PassOptions(lnc_size=2, sendrecv_to_gpsimd_max_bpp=64)
    out = lncsplit.run_pipeline([collective_kernel("SendRecv", 2, "SB")], opts)
    assert all(i.opcode != "GPSIMDSB2SB" for i in out[0].function("main").instructions())
    out = lncsplit.run_pipeline(
        [collective_kernel("SendRecv", 2, "SB")], lncsplit.PassOptions(lnc_size=2)
    )
    assert any(i.opcode == "GPSIMDSB2SB" for i in out[0].function("main").instructions())


def lowered_names(m: lncsplit.Module) -> list[str]:
    return [
        i.name
        for f in m.functions
        for i in f.instructions(["CollectiveCompute"])
        if (i.fields.get("cc_channel") or {}).get("kind", "AllReduce") in LOWERED
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=20, max_value=600),
    st.sampled_from([2, 4, 8]),
)
def test_generated_kernels_lower_with_every_collective_bracketed(
    seed: int, n: int, lnc: int
) -> None:
    m = _core.generate_module(seed, n, lnc)
    names = lowered_names(m)
    out = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=lnc))
    lncsplit.verify_concretized(out, lnc)
    left = [i.name for c in out for f in c.functions for i in f.instructions(["CollectiveCompute"])]
    assert not set(left) & set(names)
    bracketed(out, names)


def test_split_on_the_example_corpus_lowers_and_verifies(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "lncsplit", *args], capture_output=True, text=True, timeout=300
        )

    out = tmp_path / "out"
    r = cli("split", "--lnc", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert cli("verify", str(out)).returncode == 0
    doc = json.loads((out / "05_collective" / "nc00.json").read_text())
    names = [i["name"] for i in doc["functions"][0]["basic_blocks"][0]["instructions"]]
    assert names[:2] == ["ring_step_fence", "ring_step"]
    shared = json.loads((out / "07_shared_dram" / "nc01.json").read_text())
    first = shared["functions"][0]["basic_blocks"][0]["instructions"][0]
    assert first["name"] == "cb_sg0_start_0"
