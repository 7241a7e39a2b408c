"""The per-generation geometry table (neuronx-facts §7)."""

from __future__ import annotations

import dataclasses

import pytest
from lncsplit.arch import ARCH_ALIASES, UnknownArchError
from lncsplit.errors import LncsplitError
from lncsplit.memory import geometry

TABLE = {
    #            level  SB_SIZE  parts reserved banks bank  psum_p hbm cores
    "inferentia": (10, 0x18000, 128, 0x4000, 4, 2048, 64, 16, 4),
    "sunda": (20, 0x30000, 128, 0x4000, 8, 2048, 128, 16, 2),
    "gen3": (30, 0x38000, 128, 0x4008, 8, 2048, 128, 24, 2),
    "core_v4": (40, 0x40000, 128, 0x4008, 8, 2048, 128, 36, 2),
}


@pytest.mark.parametrize("arch", sorted(TABLE))
def test_geometry_table_matches_facts(arch: str) -> None:
    g = geometry(arch)
    got = (
        g.arch_level,
        g.sb_size,
        g.sb_partitions,
        g.sb_reserved,
        g.psum_banks,
        g.psum_bank_size,
        g.psum_partitions,
        g.dram_size_gb,
        g.cores_per_device,
    )
    assert got == TABLE[arch]
    assert g.name == arch
    assert g.dram_bytes == g.dram_size_gb << 30
    assert g.psum_size == g.psum_banks * 2048


def test_sb_sizes_are_96_192_224_256_kib() -> None:
    assert [geometry(a).sb_size // 1024 for a in ("inferentia", "sunda", "gen3", "core_v4")] == [
        96,
        192,
        224,
        256,
    ]


@pytest.mark.parametrize(
    "alias,canonical",
    [
        ("tonga", "inferentia"),
        ("inf1", "inferentia"),
        ("trainium", "sunda"),
        ("trn1", "sunda"),
        ("inf2", "sunda"),
        ("cayman", "gen3"),
        ("trn2", "gen3"),
        ("mariana", "core_v4"),
        ("trn3", "core_v4"),
        ("GEN3", "gen3"),
    ],
)
def test_arch_aliases_resolve_to_canonical(alias: str, canonical: str) -> None:
    assert geometry(alias) is geometry(canonical)


def test_default_arch_is_gen3() -> None:
    assert geometry(None).name == "gen3"


def test_unknown_arch_is_a_clear_lncsplit_error() -> None:
    with pytest.raises(UnknownArchError, match="Unknown architecture 'gen9'") as e:
        geometry("gen9")
    assert isinstance(e.value, LncsplitError)
    assert isinstance(e.value, ValueError)


def test_geometry_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        geometry("gen3").sb_size = 1  # type: ignore[misc]


def test_every_alias_maps_to_a_table_row() -> None:
    for a in ARCH_ALIASES:
        assert geometry(a).name in TABLE


def test_arch_names_and_aliases_come_from_the_one_table_in_rust() -> None:
    from lncsplit import _core
    from lncsplit.arch import ARCH_ALIASES, GEOMETRIES

    table = _core.arch_table()
    assert [name for name, _level, _aliases in table] == list(GEOMETRIES)
    assert {name: level for name, level, _ in table} == {
        g.name: g.arch_level for g in GEOMETRIES.values()
    }
    want = {a: name for name, _level, aliases in table for a in (name, *aliases)}
    assert ARCH_ALIASES == want and ARCH_ALIASES["trn2"] == "gen3"
