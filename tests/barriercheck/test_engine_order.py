"""The cross-core check on cores with ``sync_info`` (contract §3.10's last rule).

In a module with ``sync_info`` a CoreBarrier orders an access of its core before or after it
only when the engine relation of that core does (program order on one engine, ``ALL``
instructions, semaphore waits); without ``sync_info`` every CoreBarrier fences every engine.
Cross-core order through what lncsplit does not model is ``RaceReport.undecided``, never ok.

Each case is two cores sharing one DRAM tensor ``buf``: core 0 writes it before its barrier,
core 1 reads it after its barrier, with the engines, queues and semaphores the case names.
"""

from __future__ import annotations

from typing import Any

from sync_cores import barrier, check, core, marker, read, wait, write

# ------------------------------------------------------------------ without sync_info


def test_without_sync_info_a_core_barrier_fences_every_engine() -> None:
    rep = check([write("SP"), barrier("Pool")], [barrier("Pool"), read("DVE")])
    assert rep.ok, str(rep)
    assert rep.undecided == []


# --------------------------------------------------------------- the writer's side


def test_a_barrier_does_not_wait_for_a_dma_it_does_not_wait_on() -> None:
    # Core 0 has sync_info: the barrier issues after the DMA issues (same engine) but
    # nothing orders the DMA's completion before it.
    rep = check(
        [write("SP", on_update=[{"id": 3, "update_value": 1}]), barrier("SP")], [barrier(), read()]
    )
    assert [(r.a.instruction, r.b.instruction, r.kind) for r in rep.races] == [
        ("w", "r", "read-write")
    ]
    assert rep.races[0].a.band == (-1, None), "the write is after no barrier and before none"
    assert rep.races[0].b.band == (0, None), (
        "the read is after barrier 0 (core 1 fences everything)"
    )


def test_a_barrier_waiting_on_the_dmas_semaphore_orders_it() -> None:
    w = write("SP", on_update=[{"id": 3, "update_value": 1}])
    rep = check([w, barrier("SP", on_wait=wait("w", 3), on_update=[])], [barrier(), read()])
    assert rep.ok, str(rep)


# --------------------------------------------------------------- the reader's side


def test_a_reader_on_another_engine_is_not_after_the_barrier_without_a_wait() -> None:
    rep = check([write(), barrier()], [marker(), barrier("Pool"), read("DVE")])
    assert [(r.a.instruction, r.b.instruction) for r in rep.races] == [("w", "r")]
    assert rep.races[0].b.band == (-1, None)


def test_a_reader_on_the_barriers_engine_is_after_it_by_program_order() -> None:
    rep = check([write(), barrier()], [marker(), barrier("DVE"), read("DVE")])
    assert rep.ok, str(rep)


def test_a_reader_waiting_on_the_barrier_is_after_it() -> None:
    b = barrier("Pool", on_wait=[], on_update=[{"id": 8, "update_value": 1}])
    rep = check([write(), barrier()], [b, read("DVE", on_wait=wait("cb0", 8), on_update=[])])
    assert rep.ok, str(rep)


def test_an_all_engine_barrier_orders_the_issue_of_what_follows() -> None:
    fence = {"name": "fence", "opcode": "AllEngineBarrier", "engine": "ALL", "ins": [], "outs": []}
    rep = check([write(), barrier()], [marker(), barrier("Pool"), fence, read("DVE")])
    assert rep.ok, str(rep)


# ------------------------------------------------------------------------ undecided


def test_remote_semaphores_make_a_candidate_race_undecided_never_ok() -> None:
    r = read("DVE", on_wait=[], on_update=[], remote_semaphores=[{"core": 0, "id": 1}])
    rep = check([write(), barrier()], [marker(), barrier("Pool"), r])
    assert rep.races == []
    assert not rep.ok
    [u] = rep.undecided
    assert "remote_semaphores" in u.reason and (u.race.a.instruction, u.race.b.instruction) == (
        "w",
        "r",
    )
    assert rep.to_dict()["undecided"][0]["reason"] == u.reason


def test_sync_info_without_any_core_barrier_is_undecided() -> None:
    rep = check([write()], [marker(), read("DVE")])
    assert rep.races == [] and not rep.ok
    assert "no CoreBarrier" in rep.undecided[0].reason


def test_barriers_the_engines_do_not_order_are_undecided() -> None:
    c1 = [marker(), barrier("Pool", 0), barrier("DVE", 1), read("DVE")]
    rep = check([write(), barrier(k=0), barrier(k=1)], c1)
    assert rep.races == [] and not rep.ok
    assert "not ordered by the engine relation" in rep.undecided[0].reason


def test_remote_semaphores_without_a_candidate_race_stay_ok() -> None:
    # Extra order can only remove races: with no candidate, nothing is undecided.
    r = read("DVE", on_wait=[], on_update=[], remote_semaphores=[{"core": 0, "id": 1}])
    rep = check([write(), barrier()], [barrier("DVE"), r])
    assert rep.ok, str(rep)


def test_the_cli_fails_an_undecided_unit(tmp_path: Any) -> None:
    import subprocess
    import sys

    d = tmp_path / "k"
    d.mkdir()
    r = read("DVE", on_wait=[], on_update=[], remote_semaphores=[{"core": 0, "id": 1}])
    for c, insts in enumerate(([write(), barrier()], [marker(), barrier("Pool"), r])):
        (d / f"nc{c:02d}.json").write_text(core(c, insts).to_json())
    p = subprocess.run(
        [sys.executable, "-m", "lncsplit", "racecheck", str(d)], capture_output=True, text=True
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert "undecided" in p.stdout + p.stderr
