"""check_memory's report: JSON shape, table, errors; the N-cores-vs-1 property."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import ARCHES, make_cores, make_module, module, one
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit.arch import UnknownArchError
from lncsplit.errors import LncsplitError
from lncsplit.memory import MemoryCheckError, MemoryReport, Violation, check_memory
from lncsplit.memory.checks import Rule


def _bad() -> dict[str, Any]:
    return module([one("t", "SB", [129, 4], addr=0), one("p", "PSUM", [16, 4], bank=0, base=16)])


def test_check_memory_reports_and_does_not_raise() -> None:
    r = check_memory([make_module(_bad())])
    assert isinstance(r, MemoryReport)
    assert not r.ok and not bool(r)
    assert all(isinstance(v, Violation) for v in r.violations)
    assert {v.rule for v in r.violations} == {Rule.SB_PARTITION_RANGE, Rule.PSUM_ALIGN_32}


def test_check_memory_accepts_one_module() -> None:
    r = check_memory(make_module(module([one("t", "SB", [4, 4], addr=0)])))
    assert r.ok and len(r.cores) == 1


def test_lnc_defaults_to_number_of_distinct_cores() -> None:
    mods = [make_module(module([], core=c)) for c in range(2)]
    assert check_memory(mods).lnc == 2
    assert check_memory([make_module(module([], core=None))]).lnc == 1


def test_arch_argument_overrides_module_arch() -> None:
    d = module([one("t", "SB", [128, 150 * 256], addr=0)], arch="sunda")
    assert check_memory([make_module(d)]).ok
    r = check_memory([make_module(d)], arch="tonga")
    assert not r.ok and r.cores[0].arch == "inferentia"


def test_unknown_arch_argument_raises() -> None:
    with pytest.raises(UnknownArchError):
        check_memory([make_module(module([]))], arch="nope")


def test_report_json_shape() -> None:
    r = check_memory([make_module(_bad()), make_module(module([], core=1))], lnc=2)
    d = json.loads(r.to_json())
    assert d == r.to_dict()
    assert set(d) == {"version", "ok", "lnc", "cc_buffer_mb", "cores", "violations"}
    assert d["version"] == 1 and d["ok"] is False and d["lnc"] == 2 and d["cc_buffer_mb"] == 500
    assert [c["core"] for c in d["cores"]] == [0, 1]
    core = d["cores"][0]
    for key in (
        "module",
        "core",
        "arch",
        "sbuf_bytes_per_partition",
        "sbuf_high_water",
        "psum_banks_used",
        "private_dram_bytes",
        "shared_dram_bytes",
        "cc_buffer_bytes",
        "limits",
        "violations",
    ):
        assert key in core
    assert set(core["limits"]) == {
        "sbuf_bytes_per_partition",
        "sbuf_partitions",
        "sbuf_reserved",
        "psum_banks",
        "psum_bank_size",
        "psum_partitions",
        "dram_bytes",
        "cc_buffer_bytes",
    }
    v = d["violations"][0]
    assert set(v) == {"module", "core", "function", "location", "rule", "message", "limit", "value"}
    assert d["cores"][1]["violations"] == []


def test_usage_numbers() -> None:
    d = module(
        [
            one("a", "SB", [128, 256], addr=0),  # [0, 1024)
            one("b", "SB", [64, 256], addr=512),  # [512, 1536) overlaps a
            one("c", "SB", [32, 256], addr=4096),  # [4096, 5120)
            one("p", "PSUM", [128, 1024], bank=2),  # 2 banks
            one("q", "PSUM", [128, 512], bank=3),  # bank 3 again
            one("d", "DRAM", [4, 256], addr=0),
            one("s", "DRAM", [2, 256], addr_space="Shared"),
        ]
    )
    u = check_memory([make_module(d)]).cores[0]
    assert u.sbuf_bytes_per_partition == 1536 + 1024
    assert u.sbuf_high_water == 5120
    assert u.sbuf_partitions_high_water == 128
    assert u.psum_banks_used == 2 and u.psum_bank_high_water == 4
    assert u.private_dram_bytes == 4096 and u.shared_dram_bytes == 2048
    assert u["sbuf_high_water"] == 5120


def test_table_rendering_lists_every_core_and_violation() -> None:
    r = check_memory([make_module(_bad()), make_module(module([], core=1))], lnc=2)
    text = str(r)
    assert "SBUF used/part" in text and "PSUM banks" in text and "DRAM private" in text
    assert "mem_nc00" in text and "mem_nc01" in text
    assert "Sunda PSUM accesses must start at a %32 partition" in text
    assert "2 violation(s)" in text


def test_ok_table_says_ok() -> None:
    assert str(check_memory([make_module(module([]))])).rstrip().endswith("OK")


def test_memory_check_error_carries_the_report() -> None:
    r = check_memory([make_module(_bad())])
    e = MemoryCheckError(r)
    assert isinstance(e, LncsplitError)
    assert e.report is r and e.violations == r.violations
    assert "2 violation(s)" in str(e)


# ---------------------------------------------------------------- property

SB_SHAPES = st.tuples(st.integers(1, 160), st.integers(1, 64 * 1024))


@st.composite
def modules(draw: st.DrawFn) -> dict[str, Any]:
    arch = draw(st.sampled_from(ARCHES))
    sets = []
    for i in range(draw(st.integers(0, 4))):
        parts, width = draw(SB_SHAPES)
        addr = draw(st.integers(0, 0x40000))
        base = draw(st.integers(0, 64))
        sets.append(one(f"s{i}", "SB", [parts, width], dtype="uint8", addr=addr, base=base))
    for i in range(draw(st.integers(0, 3))):
        parts = draw(st.integers(1, 128))
        width = draw(st.integers(1, 20000))
        bank = draw(st.integers(0, 8))
        base = draw(st.sampled_from([0, 16, 32, 64]))
        sets.append(one(f"p{i}", "PSUM", [parts, width], dtype="uint8", bank=bank, base=base))
    return module(sets, arch=arch, core=None, name="prop_nc_symbolic")


@settings(max_examples=60, deadline=None)
@given(d=modules(), n=st.integers(2, 4))
def test_n_cores_get_the_same_sbuf_psum_budget_as_one_core(d: dict[str, Any], n: int) -> None:
    single = check_memory(make_cores(d, 1), lnc=1)
    multi = check_memory(make_cores(d, n), lnc=n)
    assert len(multi.cores) == n
    (one_core,) = single.cores
    for u in multi.cores:
        # replicated, not divided: same limits, same use, same verdict per core
        assert u.limits == one_core.limits
        assert u.sbuf_bytes_per_partition == one_core.sbuf_bytes_per_partition
        assert u.sbuf_high_water == one_core.sbuf_high_water
        assert u.psum_banks_used == one_core.psum_banks_used
        assert sorted(v.rule for v in u.violations) == sorted(v.rule for v in one_core.violations)
