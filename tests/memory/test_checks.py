"""One test per seed-002 rule, per arch where the limit differs."""

from __future__ import annotations

from typing import Any

import pytest
from builders import ARCHES, arg, inst, make_module, module, mset, one
from lncsplit.memory import check_memory, geometry
from lncsplit.memory.checks import (
    COREV1_PSUM_ALIGN,
    MATMULT_SB_ALIGN,
    SUNDA_PSUM_ALIGN,
    Rule,
    psum_bank_count,
)


def rules(d: dict[str, Any], **kw: Any) -> list[str]:
    return [v.rule for v in check_memory([make_module(d)], **kw).violations]


# ---------------------------------------------------------------- SBUF


@pytest.mark.parametrize("arch", ARCHES)
def test_sb_using_all_128_partitions_passes(arch: str) -> None:
    assert rules(module([one("t", "SB", [128, 4], addr=0)], arch=arch)) == []


@pytest.mark.parametrize("arch", ARCHES)
def test_sb_partition_overflow_is_reported(arch: str) -> None:
    r = check_memory([make_module(module([one("t", "SB", [128, 4], addr=0, base=1)], arch=arch))])
    assert [v.rule for v in r.violations] == [Rule.SB_PARTITION_RANGE]
    v = r.violations[0]
    assert (v.core, v.location, v.function, v.limit, v.value) == (0, "t", "main", 128, 129)
    assert "'t'" in v.message and "core 0" in v.message and "mem_nc00" in v.message


@pytest.mark.parametrize("arch", ARCHES)
def test_sb_ending_exactly_at_sb_size_passes(arch: str) -> None:
    size = geometry(arch).sb_size
    # 1 KiB per partition ending exactly at SB_SIZE: reserved bytes are not subtracted
    assert rules(module([one("t", "SB", [128, 256], addr=size - 1024)], arch=arch)) == []


@pytest.mark.parametrize("arch", ARCHES)
def test_sb_address_overflow_past_sb_size_is_reported(arch: str) -> None:
    size = geometry(arch).sb_size
    r = check_memory(
        [make_module(module([one("t", "SB", [128, 256], addr=size - 1020)], arch=arch))]
    )
    assert [v.rule for v in r.violations] == [Rule.SB_ADDR_RANGE]
    assert r.violations[0].limit == size and r.violations[0].value == size + 4


def test_sb_limit_differs_per_arch() -> None:
    # 150 KiB per partition: over inferentia's 96 KiB, within sunda's 192 KiB
    d = [one("t", "SB", [128, 150 * 256], addr=0)]
    assert rules(module(d, arch="inferentia")) == [Rule.SB_ADDR_RANGE]
    assert rules(module(d, arch="sunda")) == []


def test_unplaced_sb_tensor_larger_than_sb_size_is_reported() -> None:
    d = module([one("t", "SB", [1, 0x38000 // 4 + 1], addr=None)], arch="gen3")
    assert rules(d) == [Rule.SB_ADDR_RANGE]


# ---------------------------------------------------------------- PSUM


def test_psum_bank_count_is_ceil_bytes_over_2048() -> None:
    assert [psum_bank_count(n) for n in (0, 1, 2048, 2049, 4096, 16384, 16385)] == [
        0,
        1,
        1,
        2,
        2,
        8,
        9,
    ]


@pytest.mark.parametrize("arch", ["sunda", "gen3", "core_v4"])
def test_psum_128_partitions_pass_on_sunda_and_later(arch: str) -> None:
    assert rules(module([one("p", "PSUM", [128, 512], addr=0, bank=0)], arch=arch)) == []


def test_psum_partition_overflow_on_inferentia_64_partitions() -> None:
    ok = module([one("p", "PSUM", [64, 512], addr=0, bank=0)], arch="inferentia")
    bad = module([one("p", "PSUM", [128, 512], addr=0, bank=0)], arch="inferentia")
    assert rules(ok) == []
    r = check_memory([make_module(bad)])
    assert [v.rule for v in r.violations] == [Rule.PSUM_PARTITION_RANGE]
    assert (r.violations[0].limit, r.violations[0].value) == (64, 128)


@pytest.mark.parametrize("arch", ["sunda", "gen3", "core_v4"])
def test_psum_partition_overflow_past_128(arch: str) -> None:
    assert rules(module([one("p", "PSUM", [128, 4], addr=0, bank=0, base=32)], arch=arch)) == [
        Rule.PSUM_PARTITION_RANGE
    ]


@pytest.mark.parametrize("arch", ["sunda", "gen3", "core_v4"])
def test_psum_eight_banks_fit_on_sunda_and_later(arch: str) -> None:
    assert rules(module([one("p", "PSUM", [128, 4096], addr=0, bank=0)], arch=arch)) == []


def test_psum_too_many_banks_on_inferentia() -> None:
    r = check_memory(
        [make_module(module([one("p", "PSUM", [64, 4096], bank=0)], arch="inferentia"))]
    )
    assert Rule.PSUM_BANK_COUNT in [v.rule for v in r.violations]
    v = next(v for v in r.violations if v.rule == Rule.PSUM_BANK_COUNT)
    assert (v.limit, v.value) == (4, 8)
    assert "p is too big for PSUM, requires 8 banks" in v.message


@pytest.mark.parametrize("arch", ARCHES)
def test_psum_nine_banks_never_fit(arch: str) -> None:
    base_parts = 64 if arch == "inferentia" else 128
    assert Rule.PSUM_BANK_COUNT in rules(
        module([one("p", "PSUM", [base_parts, 4097], bank=0)], arch=arch)
    )


def test_psum_bank_range_last_bank_ok_past_last_bank_reported() -> None:
    # 2049 bytes per partition = 2 banks
    ok = module([one("p", "PSUM", [128, 2049], dtype="uint8", bank=6)], arch="gen3")
    bad = module([one("p", "PSUM", [128, 2049], dtype="uint8", bank=7)], arch="gen3")
    assert rules(ok) == []
    r = check_memory([make_module(bad)])
    assert [v.rule for v in r.violations] == [Rule.PSUM_BANK_RANGE]
    assert (r.violations[0].limit, r.violations[0].value) == (8, 9)


def test_psum_bank_range_uses_four_banks_on_inferentia() -> None:
    assert rules(module([one("p", "PSUM", [64, 512], bank=3)], arch="inferentia")) == []
    assert rules(module([one("p", "PSUM", [64, 1024], bank=3)], arch="inferentia")) == [
        Rule.PSUM_BANK_RANGE
    ]


def test_psum_bank_derived_from_addr_when_bank_missing() -> None:
    assert rules(module([one("p", "PSUM", [128, 1024], addr=7 * 2048)], arch="gen3")) == [
        Rule.PSUM_BANK_RANGE,
        Rule.PSUM_ADDR_RANGE,
    ]


def test_psum_address_overflow_is_reported() -> None:
    r = rules(module([one("p", "PSUM", [128, 8], addr=16384 - 16, bank=7)], arch="sunda"))
    assert r == [Rule.PSUM_ADDR_RANGE]


# ---------------------------------------------------------------- alignment


@pytest.mark.parametrize("arch", ["sunda", "gen3", "core_v4"])
@pytest.mark.parametrize("base", [0, 32, 64, 96])
def test_sunda_psum_at_multiple_of_32_passes(arch: str, base: int) -> None:
    assert rules(module([one("p", "PSUM", [32, 4], bank=0, base=base)], arch=arch)) == []


@pytest.mark.parametrize("arch", ["sunda", "gen3", "core_v4"])
def test_sunda_psum_off_32_partition_has_exact_message(arch: str) -> None:
    r = check_memory([make_module(module([one("p", "PSUM", [16, 4], bank=0, base=16)], arch=arch))])
    assert [v.rule for v in r.violations] == [Rule.PSUM_ALIGN_32]
    assert SUNDA_PSUM_ALIGN == "Sunda PSUM accesses must start at a %32 partition"
    assert r.violations[0].message.startswith(SUNDA_PSUM_ALIGN)
    assert r.violations[0].location == "p"


def test_corev1_psum_at_partition_0_passes() -> None:
    assert rules(module([one("p", "PSUM", [32, 4], bank=0, base=0)], arch="inferentia")) == []


def test_corev1_psum_off_partition_0_has_exact_message() -> None:
    r = check_memory(
        [make_module(module([one("p", "PSUM", [32, 4], bank=0, base=32)], arch="inferentia"))]
    )
    assert [v.rule for v in r.violations] == [Rule.PSUM_ALIGN_ZERO]
    assert COREV1_PSUM_ALIGN == "CoreV1 PSUM accesses must start at partition 0"
    assert r.violations[0].message.startswith(COREV1_PSUM_ALIGN)
    assert SUNDA_PSUM_ALIGN not in r.violations[0].message


def _matmult(base: int, opcode: str = "Matmult") -> dict[str, Any]:
    return module(
        [
            one("x", "SB", [64, 16], addr=0, base=base),
            one("w", "SB", [64, 16], addr=1024, base=0),
            one("y", "PSUM", [64, 16], bank=0, base=0),
        ],
        [inst("mm", opcode, [arg("x_set"), arg("w_set")], [arg("y_set")])],
    )


@pytest.mark.parametrize("opcode", ["Matmult", "MatmultMx", "MatmultSparse"])
def test_matmult_inputs_at_sb_partition_0_pass(opcode: str) -> None:
    assert rules(_matmult(0, opcode)) == []


@pytest.mark.parametrize("opcode", ["Matmult", "MatmultMx", "MatmultSparse"])
def test_matmult_input_off_partition_0_has_exact_message(opcode: str) -> None:
    r = check_memory([make_module(_matmult(64, opcode))])
    assert [v.rule for v in r.violations] == [Rule.MATMULT_INPUT_PARTITION]
    assert MATMULT_SB_ALIGN == "Matmult inputs must start at SB Partition 0"
    assert r.violations[0].message.startswith(MATMULT_SB_ALIGN)
    assert r.violations[0].location == "x"


def test_matmult_output_in_sb_off_partition_0_is_not_an_input_violation() -> None:
    d = module(
        [one("x", "SB", [64, 16], addr=0), one("y", "SB", [64, 16], addr=1024, base=64)],
        [inst("mm", "Matmult", [arg("x_set")], [arg("y_set")])],
    )
    assert rules(d) == []


def test_other_opcodes_may_read_sb_off_partition_0() -> None:
    d = module(
        [one("x", "SB", [64, 16], addr=0, base=64), one("y", "SB", [64, 16], addr=1024)],
        [inst("t", "TensorTensor", [arg("x_set")], [arg("y_set")])],
    )
    assert rules(d) == []


# ---------------------------------------------------------------- DRAM


def _dram(gib: int, **kw: Any) -> dict[str, Any]:
    # gib GiB as [1, gib << 28] float32
    return one("d", "DRAM", [1, gib << 28], addr=0, **kw)


@pytest.mark.parametrize(
    "arch,gib", [("inferentia", 16), ("sunda", 16), ("gen3", 24), ("core_v4", 36)]
)
def test_private_dram_filling_the_window_passes(arch: str, gib: int) -> None:
    assert rules(module([_dram(gib)], arch=arch)) == []


@pytest.mark.parametrize(
    "arch,gib", [("inferentia", 16), ("sunda", 16), ("gen3", 24), ("core_v4", 36)]
)
def test_private_dram_over_dram_size_gb_shl_30_is_reported(arch: str, gib: int) -> None:
    d = module([_dram(gib), one("e", "DRAM", [1, 1], addr=gib << 30)], arch=arch)
    r = check_memory([make_module(d)])
    assert [v.rule for v in r.violations] == [Rule.DRAM_BUDGET]
    v = r.violations[0]
    assert v.limit == gib << 30 and v.value == (gib << 30) + 4
    assert v.location is None and v.core == 0


def test_dram_window_differs_per_arch() -> None:
    d = [_dram(20)]
    assert rules(module(d, arch="sunda")) == [Rule.DRAM_BUDGET]
    assert rules(module(d, arch="gen3")) == []


def test_shared_dram_does_not_count_against_the_private_window() -> None:
    d = module([_dram(16), _dram(16, addr_space="Shared") | {"name": "s_set"}], arch="sunda")
    d["functions"][0]["allocations"][1]["locations"][0]["name"] = "s"
    r = check_memory([make_module(d)])
    assert r.ok
    assert r.cores[0].private_dram_bytes == 16 << 30
    assert r.cores[0].shared_dram_bytes == 16 << 30


# ---------------------------------------------------------------- no shared on-chip memory


@pytest.mark.parametrize("mtype", ["SB", "PSUM"])
def test_shared_address_space_on_chip_is_reported(mtype: str) -> None:
    d = module([one("t", mtype, [32, 4], addr=0, bank=0, addr_space="Shared")])
    assert rules(d) == [Rule.SHARED_ON_CHIP]


@pytest.mark.parametrize("mtype", ["SB", "PSUM"])
def test_shared_post_dram_alloc_flag_on_chip_is_reported(mtype: str) -> None:
    d = module([one("t", mtype, [32, 4], addr=0, bank=0, shared=True)])
    r = check_memory([make_module(d)])
    assert [v.rule for v in r.violations] == [Rule.SHARED_ON_CHIP]
    assert "no shared on-chip memory" in r.violations[0].message


def test_remote_local_target_on_sb_is_reported() -> None:
    d = module([one("t", "SB", [32, 4], addr=0, rlt={"name": "t", "core": 0})], core=1)
    assert rules(d) == [Rule.SHARED_ON_CHIP]


def test_local_sb_and_psum_are_not_shared_violations() -> None:
    d = module([one("t", "SB", [32, 4], addr=0, shared=False), one("p", "PSUM", [32, 4], bank=0)])
    assert rules(d) == []


# ---------------------------------------------------------------- GPSIMDSB2SB


def _sb2sb(
    bpp: int, core: int = 0, out_type: str = "SB", moved: int | None = None
) -> dict[str, Any]:
    """A GPSIMDSB2SB between two [128, bpp] uint8 sets moving ``moved`` bytes of
    every partition (default: all of them)."""
    n = bpp if moved is None else moved

    def whole(s: str) -> dict[str, Any]:
        return {**arg(s, dtype="uint8"), "ap": [[bpp, 128], [1, n]]}

    return module(
        [
            one("a", "SB", [128, bpp], dtype="uint8", addr=0),
            one("b", out_type, [128, bpp], dtype="uint8", addr=8192),
        ],
        [inst("swap", "GPSIMDSB2SB", [whole("a_set")], [whole("b_set")])],
        core=core,
    )


def test_gpsimd_sb2sb_with_lnc_2_and_1024_bytes_passes() -> None:
    assert rules(_sb2sb(1024), lnc=2) == []


@pytest.mark.parametrize("lnc", [1, 3, 4])
def test_gpsimd_sb2sb_outside_lnc_2_is_reported(lnc: int) -> None:
    r = check_memory([make_module(_sb2sb(16))], lnc=lnc)
    assert [v.rule for v in r.violations] == [Rule.SB2SB_LNC]
    assert (r.violations[0].limit, r.violations[0].value) == (2, lnc)


def test_gpsimd_sb2sb_over_1024_bytes_per_partition_is_reported() -> None:
    r = check_memory([make_module(_sb2sb(1025, core=1))], lnc=2)
    assert [v.rule for v in r.violations] == [Rule.SB2SB_SIZE, Rule.SB2SB_SIZE]
    assert {v.location for v in r.violations} == {"a_set", "b_set"}
    assert all(v.limit == 1024 and v.value == 1025 for v in r.violations)
    assert "partner core 0" in r.violations[0].message


def test_gpsimd_sb2sb_gate_measures_the_bytes_moved_not_the_set() -> None:
    # 64 bytes of each partition of a 4 KiB-per-partition tensor: within the gate.
    assert rules(_sb2sb(4096, moved=64), lnc=2) == []
    r = check_memory([make_module(_sb2sb(4096, moved=1040))], lnc=2)
    assert [v.rule for v in r.violations] == [Rule.SB2SB_SIZE, Rule.SB2SB_SIZE]
    assert all(v.value == 1040 for v in r.violations)


def test_gpsimd_sb2sb_partner_is_c_plus_1_and_1() -> None:
    from lncsplit.memory.checks import sb2sb_partner

    assert [sb2sb_partner(c) for c in range(4)] == [1, 0, 1, 0]


def test_gpsimd_sb2sb_to_dram_is_reported() -> None:
    assert rules(_sb2sb(16, out_type="DRAM"), lnc=2) == [Rule.SB2SB_MEMORY]


# ---------------------------------------------------------------- collective buffer


def _cc(mb: int, uses: int = 1) -> dict[str, Any]:
    sets = [one("buf", "DRAM", [1, mb << 18], addr=0)]
    insts = [
        inst(f"cc{i}", "CollectiveCompute", [arg("buf_set")], [arg("buf_set")]) for i in range(uses)
    ]
    return module(sets, insts)


def test_cc_dram_within_default_500_mb_passes() -> None:
    assert rules(_cc(500)) == []


def test_cc_dram_over_default_500_mb_is_reported() -> None:
    r = check_memory([make_module(_cc(501))])
    assert [v.rule for v in r.violations] == [Rule.CC_BUFFER]
    assert (r.violations[0].limit, r.violations[0].value) == (500 << 20, 501 << 20)


def test_cc_buffer_size_is_an_option() -> None:
    assert rules(_cc(600), cc_buffer_mb=1000) == []
    assert rules(_cc(600), cc_buffer_mb=500) == [Rule.CC_BUFFER]


def test_cc_set_used_by_many_collectives_counts_once() -> None:
    r = check_memory([make_module(_cc(300, uses=3))])
    assert r.ok and r.cores[0].cc_buffer_bytes == 300 << 20


def test_non_dram_collective_args_do_not_count() -> None:
    d = module(
        [one("s", "SB", [128, 4], addr=0)],
        [inst("cc", "CollectiveCompute", [arg("s_set")], [arg("s_set")])],
    )
    r = check_memory([make_module(d)], cc_buffer_mb=0)
    assert r.ok and r.cores[0].cc_buffer_bytes == 0


# ---------------------------------------------------------------- replicated, not divided


@pytest.mark.parametrize("arch", ARCHES)
def test_every_core_gets_the_full_sbuf_and_psum(arch: str) -> None:
    g = geometry(arch)
    parts = g.psum_partitions
    mods = [
        make_module(
            module(
                [
                    one("t", "SB", [128, g.sb_size // 4], addr=0),
                    one("p", "PSUM", [parts, g.psum_size // 4], bank=0),
                ],
                arch=arch,
                core=c,
            )
        )
        for c in range(2)
    ]
    r = check_memory(mods, lnc=2)
    assert r.ok, str(r)
    for u in r.cores:
        assert u.limits["sbuf_bytes_per_partition"] == g.sb_size
        assert u.limits["psum_banks"] == g.psum_banks
        assert u.sbuf_high_water == g.sb_size and u.psum_banks_used == g.psum_banks


def test_violation_names_module_core_function_location_and_limit() -> None:
    d = module([one("t", "SB", [128, 4], addr=0x38000)], core=1, fname="f1", name="net_nc01")
    v = check_memory([make_module(d)], lnc=2).violations[0]
    assert (v.module, v.core, v.function, v.location, v.rule) == (
        "net_nc01",
        1,
        "f1",
        "t",
        Rule.SB_ADDR_RANGE,
    )
    for piece in ("'net_nc01'", "core 1", "'f1'", "'t'", "limit 229376"):
        assert piece in v.message


def test_instructions_inside_loop_bodies_are_checked() -> None:
    body = inst("mm", "Matmult", [arg("x_set")], [arg("y_set")])
    loop = inst(
        "L",
        "Loop",
        axis={"name": "i", "lo": 0, "ub": 2, "step": 1},
        blocks=[{"name": "body", "instructions": [body]}],
    )
    d = module(
        [one("x", "SB", [32, 4], addr=0, base=32), one("y", "PSUM", [32, 4], bank=0)], [loop]
    )
    assert rules(d) == [Rule.MATMULT_INPUT_PARTITION]


def test_multiple_locations_per_set_are_each_checked() -> None:
    d = module(
        [
            mset(
                "t_set",
                [128, 4],
                [
                    {"name": "t0", "type": "SB", "addr": 0, "base": 0, "allocated": True},
                    {"name": "t1", "type": "SB", "addr": 0x40000, "base": 0, "allocated": True},
                ],
            )
        ],
        arch="core_v4",
    )
    r = check_memory([make_module(d)])
    assert [(v.rule, v.location) for v in r.violations] == [(Rule.SB_ADDR_RANGE, "t1")]


# ---------------------------------------------------------------- sizes beyond 64 bits


@pytest.mark.parametrize("mtype", ["SB", "PSUM", "DRAM"])
def test_size_overflow_is_a_named_violation(mtype: str) -> None:
    # 2^40 × 2^30 float32 elements per partition: beyond 64 bits. The checks
    # must say so instead of skipping the location (contract §3.4).
    d = module([one("huge", mtype, [128, 1 << 40, 1 << 30], addr=0)])
    r = check_memory([make_module(d)])
    assert not r.ok
    (v,) = [v for v in r.violations if v.rule == Rule.SIZE_OVERFLOW]
    assert v.location == "huge" and v.function == "main"
    assert "64 bits" in v.message and "huge" in v.message


# ---------------------------------------------------------------- DRAM use is a union of byte ranges


def _fn(name: str, sets: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "allocations": sets,
        "basic_blocks": [{"name": "bb0", "instructions": []}],
    }


def test_dram_locations_of_two_functions_at_the_same_addresses_count_once() -> None:
    # Contract §3.4: per-core DRAM use = union of placed private byte ranges.
    fns = [_fn("main", [_dram(16)]), _fn("f2", [_dram(16)])]
    r = check_memory([make_module(module([], arch="sunda", functions=fns))])
    assert r.ok, [v.message for v in r.violations]
    assert r.cores[0].private_dram_bytes == 16 << 30


def test_overlapping_dram_ranges_count_their_union() -> None:
    sets = [one("a", "DRAM", [1, 256], addr=0), one("b", "DRAM", [1, 256], addr=2048)]
    fns = [_fn("main", sets), _fn("f2", [one("c", "DRAM", [1, 512], addr=1024)])]
    r = check_memory([make_module(module([], functions=fns))])
    # [0,1024) ∪ [2048,3072) ∪ [1024,3072) = [0,3072)
    assert r.cores[0].private_dram_bytes == 3072


def test_unplaced_dram_locations_add_their_size() -> None:
    sets = [one("a", "DRAM", [1, 256], addr=0), one("u", "DRAM", [1, 256])]
    fns = [_fn("main", sets), _fn("f2", [one("v", "DRAM", [1, 256])])]
    r = check_memory([make_module(module([], functions=fns))])
    assert r.cores[0].private_dram_bytes == 3 * 1024
