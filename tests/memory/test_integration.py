"""The memory passes on real modules: split → shared DRAM → sync → verifier, and the pipeline."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import module, one


def _symbolic(**extra_sets: Any) -> dict[str, Any]:
    sets = [
        one("x", "SB", [128, 64], addr=0),
        one("acc", "PSUM", [128, 512], addr=0, bank=0),
        one("priv", "DRAM", [128, 64], addr=0),
        one("sh", "DRAM", [128, 64], addr_space="Shared", base=None),
        one("sh2", "DRAM", [3, 7], addr_space="Shared", base=None),
    ]
    return module(sets, core=None, name="net_nc_symbolic")


def _split(d: dict[str, Any], n: int) -> list[Any]:
    import lncsplit

    return list(lncsplit.split([lncsplit.Module.from_json(json.dumps(d))], n))


def _locs(m: Any) -> dict[str, Any]:
    return {loc.name: loc for s in m.functions[0].allocations for loc in s.locations}


def test_alloc_then_sync_makes_the_concretized_verifier_pass() -> None:
    import lncsplit
    from lncsplit import memory

    cores = _split(_symbolic(), 2)
    memory.allocate_shared_dram(cores, 2)
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.verify_concretized(cores, 2)
    assert e.value.code == 1195  # peer has a target but no address yet
    memory.sync_shared_allocations(cores, 2)
    lncsplit.verify_concretized(cores, 2)
    l0, l1 = _locs(cores[0]), _locs(cores[1])
    for name in ("sh", "sh2"):
        assert l0[name].addr == l1[name].addr is not None
        assert l1[name].remote_local_target == {"name": name, "core": 0}
    assert memory.check_memory(cores).ok


def test_placement_survives_a_json_round_trip() -> None:
    import lncsplit
    from lncsplit import memory

    cores = _split(_symbolic(), 2)
    memory.allocate_shared_dram(cores, 2)
    memory.sync_shared_allocations(cores, 2)
    back = [lncsplit.Module.from_json(m.to_json()) for m in cores]
    lncsplit.verify_concretized(back, 2)
    d1 = json.loads(cores[1].to_json())
    (sh,) = [
        loc
        for s in d1["functions"][0]["allocations"]
        for loc in s["locations"]
        if loc["name"] == "sh"
    ]
    assert sh["is_shared_post_dram_alloc"] is True and sh["allocated"] is True
    assert sh["remote_local_target"] == {"name": "sh", "core": 0}


def test_pipeline_runs_shared_dram_and_checks() -> None:
    import lncsplit

    mods = [lncsplit.Module.from_json(json.dumps(_symbolic()))]
    out = lncsplit.run_pipeline(mods, lncsplit.PassOptions(lnc_size=2))
    assert len(out) == 2
    assert _locs(out[0])["sh"].addr == _locs(out[1])["sh"].addr == 0


def test_pipeline_raises_memory_check_error_with_the_report() -> None:
    import lncsplit
    from lncsplit import memory

    d = module([one("p", "PSUM", [16, 4], bank=0, base=16)], core=None, name="bad_nc_symbolic")
    with pytest.raises(memory.MemoryCheckError) as e:
        lncsplit.run_pipeline(
            [lncsplit.Module.from_json(json.dumps(d))], lncsplit.PassOptions(lnc_size=2)
        )
    r = e.value.report
    assert [v.core for v in r.violations] == [0, 1]
    assert all(
        "Sunda PSUM accesses must start at a %32 partition" in v.message for v in r.violations
    )


def test_top_level_check_memory_is_the_memory_one() -> None:
    import lncsplit
    from lncsplit import memory

    assert lncsplit.check_memory is memory.check_memory
    assert lncsplit.MemoryReport is memory.MemoryReport
