"""Shared DRAM: placed once on core 0, remote targets elsewhere, then synced."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from builders import loc, make_module, module, mset, one
from lncsplit.errors import LncsplitError
from lncsplit.memory import (
    SharedAllocationError,
    allocate_shared_dram,
    check_memory,
    sync_shared_allocations,
)
from lncsplit.memory.shared_dram import SHARED_REGION_ALIGN


def _shared_module(core: int, n_shared: int = 2, *, fname: str = "main") -> dict[str, Any]:
    sets = [one("priv", "DRAM", [4, 4], addr=0)]
    for i in range(n_shared):
        # 100 bytes each: not a multiple of the alignment
        sets.append(one(f"sh{i}", "DRAM", [1, 25], addr_space="Shared", base=None))
    sets.append(one("sb", "SB", [128, 4], addr=0))
    return module(sets, core=core, fname=fname)


def _cores(n: int = 2, **kw: Any) -> list[Any]:
    return [make_module(_shared_module(c, **kw)) for c in range(n)]


def _loc(m: Any, name: str, fname: str = "main") -> Any:
    fn = next(f for f in m.functions if f.name == fname)
    for s in fn.allocations:
        for x in s.locations:
            if x.name == name:
                return x
    raise KeyError(name)


def test_shared_dram_is_placed_once_on_core_0() -> None:
    mods = _cores()
    allocate_shared_dram(mods, 2)
    a0, a1 = _loc(mods[0], "sh0"), _loc(mods[0], "sh1")
    assert a0.allocated and a1.allocated
    assert a0.is_shared_post_dram_alloc and a1.is_shared_post_dram_alloc
    assert a0.remote_local_target is None
    assert a0.addr % SHARED_REGION_ALIGN == 0 and a1.addr % SHARED_REGION_ALIGN == 0
    assert a1.addr >= a0.addr + 100  # no overlap
    assert a0.addr == 0 and a1.addr == 128


def test_other_cores_get_remote_local_target_instead_of_allocation() -> None:
    mods = _cores(2)
    allocate_shared_dram(mods, 2)
    for name in ("sh0", "sh1"):
        x = _loc(mods[1], name)
        assert x.is_shared_post_dram_alloc
        assert dict(x.remote_local_target) == {"name": name, "core": 0}
        assert not x.allocated and x.addr is None


def test_private_dram_and_sb_are_left_alone() -> None:
    mods = _cores(2)
    allocate_shared_dram(mods, 2)
    for m in mods:
        for name in ("priv", "sb"):
            x = _loc(m, name)
            assert not x.is_shared_post_dram_alloc and x.remote_local_target is None
            assert x.addr == 0


def test_skipping_log_line_once_per_non_owner_core(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="lncsplit.memory")
    allocate_shared_dram(_cores(2), 2)
    lines = [r.getMessage() for r in caplog.records if r.name == "lncsplit.memory"]
    skip = [x for x in lines if x.startswith("Skipping")]
    assert skip == [
        "Skipping shared tensor allocations on core 1, marking as remoteLocalTarget instead"
    ]


def test_already_flagged_local_dram_is_treated_as_shared() -> None:
    sets = [one("f", "DRAM", [1, 4], shared=True, base=None)]
    mods = [make_module(module(sets, core=c)) for c in range(2)]
    allocate_shared_dram(mods, 2)
    assert _loc(mods[0], "f").allocated
    assert dict(_loc(mods[1], "f").remote_local_target) == {"name": "f", "core": 0}


def test_preplaced_shared_tensor_keeps_its_address() -> None:
    sets = [
        one("a", "DRAM", [1, 16], addr_space="Shared", addr=0x1000, allocated=True),
        one("b", "DRAM", [1, 16], addr_space="Shared"),
    ]
    mods = [make_module(module(sets, core=c)) for c in range(2)]
    allocate_shared_dram(mods, 2)
    assert _loc(mods[0], "a").addr == 0x1000
    assert _loc(mods[0], "b").addr == 0x1040


def test_sync_copies_addr_bank_and_base_from_the_target(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lncsplit.memory")
    mods = _cores(2)
    allocate_shared_dram(mods, 2)
    t = _loc(mods[0], "sh1")
    t.bank = 3
    t.base = 5
    sync_shared_allocations(mods, 2)
    x = _loc(mods[1], "sh1")
    assert (x.addr, x.bank, x.base, bool(x.allocated)) == (t.addr, 3, 5, True)
    lines = [r.getMessage() for r in caplog.records if r.name == "lncsplit.memory"]
    assert "Assigned memloc sh1 to address 0x80 based on its remote local target sh1" in lines
    assert "Assigned memloc sh0 to address 0x0 based on its remote local target sh0" in lines


def test_sync_is_skipped_when_lnc_is_1() -> None:
    mods = _cores(2)
    allocate_shared_dram(mods, 2)
    sync_shared_allocations(mods, 1)
    assert _loc(mods[1], "sh0").addr is None


def test_all_cores_agree_on_shared_addresses_after_alloc_and_sync() -> None:
    mods = _cores(4)
    allocate_shared_dram(mods, 4)
    sync_shared_allocations(mods, 4)
    for name in ("sh0", "sh1"):
        assert len({_loc(m, name).addr for m in mods}) == 1
        assert all(_loc(m, name).allocated for m in mods)
    assert check_memory(mods, lnc=4).ok


def test_multiple_functions_share_one_region_per_module() -> None:
    fns = [
        {
            "name": f,
            "allocations": [one(f"{f}_s", "DRAM", [1, 4], addr_space="Shared")],
            "basic_blocks": [{"name": "bb", "instructions": []}],
        }
        for f in ("main", "g")
    ]
    mods = [make_module(module([], core=c, functions=fns)) for c in range(2)]
    allocate_shared_dram(mods, 2)
    sync_shared_allocations(mods, 2)
    assert _loc(mods[0], "main_s").addr != _loc(mods[0], "g_s", "g").addr
    assert _loc(mods[1], "g_s", "g").addr == _loc(mods[0], "g_s", "g").addr


def _sync_error(mods: list[Any]) -> SharedAllocationError:
    with pytest.raises(SharedAllocationError) as e:
        sync_shared_allocations(mods, 2)
    assert isinstance(e.value, LncsplitError)
    return e.value


def test_missing_target_location_is_an_error() -> None:
    mods = [make_module(_shared_module(0, 1)), make_module(_shared_module(1, 2))]
    allocate_shared_dram(mods, 2)
    err = _sync_error(mods)
    assert "'sh1'" in str(err) and "not found" in str(err)
    assert (err.core, err.location, err.function) == (1, "sh1", "main")


def test_missing_target_function_is_an_error() -> None:
    mods = [make_module(_shared_module(0, fname="other")), make_module(_shared_module(1))]
    allocate_shared_dram(mods, 2)
    assert "has no function 'main'" in str(_sync_error(mods))


def test_target_on_a_core_not_present_is_an_error() -> None:
    sets = [one("x", "DRAM", [1, 4], shared=True, rlt={"name": "x", "core": 5})]
    mods = [make_module(module(sets, core=c)) for c in range(2)]
    assert "core 5" in str(_sync_error(mods))


def test_unallocated_target_is_an_error() -> None:
    mods = _cores(2)
    allocate_shared_dram(mods, 2)
    t = _loc(mods[0], "sh0")
    t.allocated = False
    err = _sync_error(mods)
    assert "not allocated" in str(err) and "'sh0'" in str(err)


def test_shared_location_without_target_or_address_is_an_error() -> None:
    sets = [mset("x_set", [1, 4], [loc("x", "DRAM", shared=True)])]
    mods = [make_module(module(sets, core=c)) for c in range(2)]
    err = _sync_error(mods)
    assert "no remote local target" in str(err) and err.core == 1
