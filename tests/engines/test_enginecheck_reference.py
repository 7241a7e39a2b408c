"""enginecheck against the brute-force reference (explicit point sets, transitive
closure), pair for pair, on ``gen --scheduled`` modules with and without
``--racy``; and on a dump shaped like real neuronx-cc ``lower_sync`` output."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import lncsplit
from engine_reference import from_report, reference
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import _core
from lncsplit.passes.enginecheck import enginecheck, why

DATA = Path(__file__).parent / "data"


def scheduled(seed: int, instructions: int, racy: bool) -> lncsplit.Module:
    return _core.generate_module(seed, instructions, racy=racy, scheduled=True)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), racy=st.booleans())
def test_enginecheck_agrees_with_the_brute_force_reference_on_scheduled_modules(
    seed: int, racy: bool
) -> None:
    m = scheduled(seed, 160, racy)
    got = from_report(enginecheck(m))
    want = reference(m)
    assert got[0] == want[0], (
        sorted(got[0] - want[0], key=str)[:3],
        sorted(want[0] - got[0], key=str)[:3],
    )
    assert got[1] == want[1]


def test_scheduled_modules_are_race_free_and_racy_ones_race() -> None:
    racy_races = 0
    for seed in range(4):
        clean = enginecheck(scheduled(seed, 400, False))
        assert clean.ok and not clean.waits, clean
        r = enginecheck(scheduled(seed, 400, True))
        assert not r.waits, "dropping waits leaves every other wait ok"
        racy_races += len(r.races)
    assert racy_races > 0


def test_a_racy_scheduled_module_is_the_clean_one_with_waits_dropped() -> None:
    def strip(m: lncsplit.Module) -> list[Any]:
        doc = json.loads(m.to_json())
        insts = [i for b in doc["functions"][0]["basic_blocks"] for i in b["instructions"]]
        for i in insts:
            si = i.pop("sync_info", {})
            si.pop("on_wait", None)
            if si:
                i["sync_info"] = si
        return insts

    clean, racy = scheduled(7, 300, False), scheduled(7, 300, True)
    assert strip(clean) == strip(racy)
    assert clean.to_json() != racy.to_json()


# ----------------------------------------------------------------------------- real-dump shape


def lncsplit_dialect(doc: dict[str, Any]) -> dict[str, Any]:
    """A compiler-spelled dump (``blocks``, ``memorylocations``, no module name, repeated
    instruction names) in the lncsplit dialect (a repeated name gets ``#k``), for a loader
    that reads only that (contract §1.7 reads both)."""
    doc = copy.deepcopy(doc)
    doc.setdefault("name", "sg00")
    for f in doc["functions"]:
        f["basic_blocks"] = f.pop("blocks")
        for s in f["allocations"]:
            s["locations"] = s.pop("memorylocations")
        seen: dict[str, int] = {}
        for b in f["basic_blocks"]:
            for i in b["instructions"]:
                k = seen[i["name"]] = seen.get(i["name"], 0) + 1
                if k > 1:
                    i["name"] = f"{i['name']}#{k}"
    return doc


def dump_shaped(**edit: Any) -> lncsplit.Module:
    doc = lncsplit_dialect(json.loads((DATA / "scheduled_dump_compiler.json").read_text()))
    insts = {i["name"]: i for b in doc["functions"][0]["basic_blocks"] for i in b["instructions"]}
    for name, on_wait in edit.items():
        insts[name]["sync_info"]["on_wait"] = on_wait
    return lncsplit.Module.from_json(json.dumps(doc))


def test_a_dump_shaped_like_lower_sync_output_is_clean() -> None:
    # load_x (SP DMA) and load_w (Pool DMATrigger → DMABlock) feed mm (PE) by
    # semaphores 3 and 4; mm → act → add by 5, 6; the block ends with a Pool wait for
    # add, an ALL barrier and a reset of 4–7; store (SP) is after that barrier; the last
    # wait counts semaphore 3 on across the reset (16 + 16).
    r = enginecheck(dump_shaped())
    assert r.ok, str(r)
    assert r.to_dict() == {"ok": True, "races": [], "waits": [], "undecided": [], "unchecked": 0}


def test_in_a_dump_shaped_module_dropping_the_wait_for_a_dma_block_races_its_reader() -> None:
    r = enginecheck(dump_shaped(mm=[{"from": "load_x", "id": 3, "wait_value": 16}]))
    assert [(x.a.label(), x.b.instruction, x.kind) for x in r.races] == [
        ("load_w (DMABlock load_w_block)", "mm", "RAW")
    ]
    race = r.races[0]
    assert (race.location.space, race.location.name) == ("SB", "w_sb")
    # w_sb is at addr 256 (its own dims [128, 256]): the least common point.
    assert (race.witness.partition, race.witness.byte) == (0, 256)
    assert race.a.queue == "qPoolDynamic" and race.a.engine == "Pool"
    assert '"from": "load_w_block", "id": 4, "wait_value": 16' in race.fix


def test_in_a_dump_shaped_module_a_wait_counting_past_what_a_reset_leaves_deadlocks() -> None:
    # After the reset of 4–7, semaphore 5 restarts from 0: waiting for 2 is never reached.
    r = enginecheck(
        dump_shaped(**{"Block2-end-cb-wait": [{"from": "mm", "id": 5, "wait_value": 2}]})
    )
    assert [(w.instruction, w.status) for w in r.waits] == [("Block2-end-cb-wait", "deadlock")]
    assert not r.ok


# ----------------------------------------------------------------------------- the compiler's spelling


def compiler_dump(**edit: Any) -> lncsplit.Module:
    """The lower_sync-shaped dump as the compiler writes it (issue 33's loader reads it)."""
    doc = json.loads((DATA / "scheduled_dump_compiler.json").read_text())
    for b in doc["functions"][0]["blocks"]:
        for i in b["instructions"]:
            if i["name"] in edit:
                i["sync_info"]["on_wait"] = edit[i["name"]]
    return lncsplit.Module.from_json(json.dumps(doc))


def test_the_compiler_spelled_dump_reads_as_is_and_is_clean() -> None:
    m = compiler_dump()
    assert m.spelling == "compiler"
    r = enginecheck(m)
    assert r.to_dict() == {"ok": True, "races": [], "waits": [], "undecided": [], "unchecked": 0}


def test_in_the_compiler_spelled_dump_dropping_the_wait_for_a_dma_block_races_its_reader() -> None:
    r = enginecheck(compiler_dump(mm=[{"from": "load_x", "id": 3, "wait_value": 16}]))
    assert [(x.a.label(), x.b.instruction, x.kind) for x in r.races] == [
        ("load_w (DMABlock load_w_block)", "mm", "RAW")
    ]
    assert (r.races[0].witness.partition, r.races[0].witness.byte) == (0, 256)


def test_in_the_compiler_spelled_dump_the_two_barriers_are_told_apart_by_position() -> None:
    w = why(compiler_dump(), "@6", "@10")
    assert w["order"] == "a-before-b"
    assert (w["a"]["instruction"], w["a"]["position"]) == ("barrier", 6)
    assert (w["b"]["instruction"], w["b"]["position"]) == ("barrier", 10)
