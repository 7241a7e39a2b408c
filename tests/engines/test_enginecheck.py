"""lncsplit.enginecheck on hand-built single-core modules whose answer is known by
construction (contract §3.10): one test per promised behaviour."""

from __future__ import annotations

import json

import lncsplit
import pytest
from engine_builders import ap, dma_block, dram, inst, loc, marker, module, psum, sb
from lncsplit.passes.enginecheck import EngineReport, enginecheck, why


def races(r: EngineReport) -> list[tuple[str, str, str]]:
    return [(x.a.label(), x.b.label(), x.kind) for x in r.races]


def statuses(r: EngineReport) -> list[tuple[str, str]]:
    return [(w.instruction, w.status) for w in r.waits]


def load_then(wait: bool, *, reader_engine: str = "Activation") -> lncsplit.Module:
    """SP loads x by DMA (semaphore 1 += 16 at completion); another engine reads x."""
    return module(
        [dram("in", 0), sb("x", 0)],
        [
            inst("load", "DMACopy", "SP", [ap("in")], [ap("x")], update=[(1, 16)], queue="q"),
            inst(
                "use",
                "Activation",
                reader_engine,
                [ap("x")],
                wait=[("load", 1, 16)] if wait else None,
            ),
        ],
    )


# ----------------------------------------------------------------------------- order


def test_a_read_that_waits_for_the_dma_completion_does_not_race() -> None:
    r = enginecheck(load_then(True))
    assert r.ok and not r.races and not r.waits


def test_without_the_wait_the_read_races_the_dma_raw() -> None:
    r = enginecheck(load_then(False))
    assert not r.ok
    assert races(r) == [("load", "use", "RAW")]
    race = r.races[0]
    assert (race.a.position, race.b.position) == (0, 1)
    assert (race.location.space, race.location.name) == ("SB", "x")
    assert (race.witness.partition, race.witness.byte) == (0, 0)
    assert '"from": "load"' in race.fix and "use" in race.fix


def test_two_instructions_of_one_engine_are_in_program_order() -> None:
    m = module(
        [sb("x", 0)],
        [
            marker(),
            inst("w", "Memset", "DVE", outs=[ap("x")]),
            inst("r", "TensorTensor", "DVE", [ap("x")]),
        ],
    )
    assert enginecheck(m).ok


def test_a_dma_completes_after_the_next_instruction_of_its_engine_starts() -> None:
    # Same engine issues both, but a DMA's completion is not in program order.
    r = enginecheck(load_then(False, reader_engine="SP"))
    assert races(r) == [("load", "use", "RAW")]


def test_an_all_instruction_orders_every_engine_but_not_a_dma_completion() -> None:
    sets = [dram("in", 0), sb("x", 0)]
    compute = module(
        sets,
        [
            marker(),
            inst("w", "Memset", "DVE", outs=[ap("x")]),
            inst("bar", "AllEngineBarrier", "ALL"),
            inst("r", "Activation", "Activation", [ap("x")]),
        ],
    )
    assert enginecheck(compute).ok
    dma = module(
        sets,
        [
            inst("load", "DMACopy", "SP", [ap("in")], [ap("x")], update=[(1, 16)], queue="q"),
            inst("bar", "AllEngineBarrier", "ALL"),
            inst("r", "Activation", "Activation", [ap("x")]),
        ],
    )
    assert races(enginecheck(dma)) == [("load", "r", "RAW")]


def test_unassigned_instructions_are_ordered_only_by_semaphores_and_all() -> None:
    sets = [sb("x", 0)]
    m = module(
        sets,
        [
            inst("w", "Memset", "Unassigned", outs=[ap("x")], update=[(2, 1)]),
            inst("r", "Activation", "Activation", [ap("x")]),
        ],
    )
    assert races(enginecheck(m)) == [("w", "r", "RAW")]
    waited = module(
        sets,
        [
            inst("w", "Memset", "Unassigned", outs=[ap("x")], update=[(2, 1)]),
            inst("r", "Activation", "Activation", [ap("x")], wait=[("w", 2, 1)]),
        ],
    )
    assert enginecheck(waited).ok


def test_a_module_without_sync_info_runs_every_instruction_in_order() -> None:
    m = module(
        [dram("in", 0), sb("x", 0)],
        [
            inst("load", "DMACopy", "SP", [ap("in")], [ap("x")], queue="q"),
            inst("use", "Activation", "Activation", [ap("x")]),
        ],
    )
    r = enginecheck(m)
    assert r.ok and r.to_dict() == {
        "ok": True,
        "races": [],
        "waits": [],
        "undecided": [],
        "unchecked": 0,
    }


# ----------------------------------------------------------------------------- footprints


def test_disjoint_partitions_at_the_same_bytes_do_not_race() -> None:
    m = module(
        [sb("lo", 0, 32, base=0), sb("hi", 0, 32, base=32)],
        [
            marker(),
            inst("w", "Memset", "DVE", outs=[ap("lo", parts=32)]),
            inst("r", "Activation", "Activation", [ap("hi", parts=32)]),
        ],
    )
    assert enginecheck(m).ok


def test_psum_banks_are_separate_memories() -> None:
    def two(bank_b: int) -> lncsplit.Module:
        return module(
            [psum("p", 0, 0), psum("q", 0, bank_b)],
            [
                marker(),
                inst("mm", "Matmult", "PE", outs=[ap("p")]),
                inst("act", "Activation", "Activation", [ap("q")]),
            ],
        )

    assert enginecheck(two(1)).ok
    r = enginecheck(two(0))
    assert races(r) == [("mm", "act", "RAW")]
    assert r.races[0].location.bank == 0 and r.races[0].location.space == "PSUM"


def test_dram_locations_conflict_by_byte_range_in_one_arena() -> None:
    # 64 × 64 float32 = 16384 bytes: b starts inside a (overlap) or right after (none).
    def two(addr_b: int) -> lncsplit.Module:
        return module(
            [dram("a", 0), dram("b", addr_b), sb("x", 0), sb("y", 16384)],
            [
                inst("st", "DMACopy", "SP", [ap("x")], [ap("a")], update=[(1, 16)], queue="q1"),
                inst(
                    "ld",
                    "DMACopy",
                    "Activation",
                    [ap("b")],
                    [ap("y")],
                    update=[(2, 16)],
                    queue="q2",
                ),
            ],
        )

    assert enginecheck(two(16384)).ok
    r = enginecheck(two(16000))
    assert races(r) == [("st", "ld", "RAW")]
    race = r.races[0]
    assert (race.location.space, race.location.name, race.location.other) == ("DRAM", "a", "b")
    assert (race.witness.partition, race.witness.byte) == (0, 16000)


def test_two_locations_the_allocator_placed_over_the_same_bytes_race() -> None:
    m = module(
        [sb("old", 1024), sb("new", 1024)],
        [
            marker(),
            inst("r_old", "Activation", "Activation", [ap("old")]),
            inst("w_new", "Memset", "DVE", outs=[ap("new")]),
        ],
    )
    r = enginecheck(m)
    assert races(r) == [("r_old", "w_new", "WAR")]
    assert (r.races[0].location.name, r.races[0].location.other) == ("old", "new")
    assert r.races[0].witness.byte == 1024


def test_an_unplaced_location_aliases_nothing() -> None:
    m = module(
        [loc("u", "SB", None), sb("x", 0)],
        [
            marker(),
            inst("w", "Memset", "DVE", outs=[ap("u")]),
            inst("r", "Activation", "Activation", [ap("x")]),
        ],
    )
    assert enginecheck(m).ok


def test_strided_accesses_that_interleave_never_meet() -> None:
    # Even columns vs odd columns of one location.
    even = {**ap("x", 0, 64, 32), "ap": [[64, 64], [2, 32]]}
    odd = {**ap("x", 1, 64, 32), "ap": [[64, 64], [2, 32]]}
    m = module(
        [sb("x", 0)],
        [
            marker(),
            inst("w", "Memset", "DVE", outs=[even]),
            inst("r", "Activation", "Activation", [odd]),
        ],
    )
    assert enginecheck(m).ok


# ----------------------------------------------------------------------------- DMA queues


def test_completions_on_one_queue_keep_issue_order_and_two_queues_do_not() -> None:
    # l1 loads x, l2 loads y; use reads x but waits only for l2.
    def two(q2: str) -> lncsplit.Module:
        return module(
            [dram("in", 0), dram("in2", 65536), sb("x", 0), sb("y", 1024)],
            [
                inst("l1", "DMACopy", "SP", [ap("in")], [ap("x")], queue="q1"),
                inst(
                    "l2",
                    "DMACopy",
                    "Activation",
                    [ap("in2")],
                    [ap("y")],
                    update=[(1, 16)],
                    queue=q2,
                ),
                inst("use", "TensorTensor", "DVE", [ap("x"), ap("y")], wait=[("l2", 1, 16)]),
            ],
        )

    # One queue: l1 completes before l2, so use (after l2's completion) is after l1's.
    assert enginecheck(two("q1")).ok
    assert races(enginecheck(two("q2"))) == [("l1", "use", "RAW")]


def test_one_queue_orders_completions_not_the_transfers_themselves() -> None:
    # Both write x: l2 is issued before l1 completes, so the transfers overlap.
    m = module(
        [dram("in", 0), dram("in2", 65536), sb("x", 0)],
        [
            inst("l1", "DMACopy", "SP", [ap("in")], [ap("x")], queue="q1"),
            inst(
                "l2", "DMACopy", "Activation", [ap("in2")], [ap("x")], update=[(1, 16)], queue="q1"
            ),
        ],
    )
    assert races(enginecheck(m)) == [("l1", "l2", "WAW")]


def test_a_dma_without_queue_is_a_queue_of_its_own() -> None:
    m = module(
        [dram("in", 0), dram("in2", 65536), sb("x", 0)],
        [
            inst("l1", "DMACopy", "SP", [ap("in")], [ap("x")]),
            inst("l2", "DMACopy", "SP", [ap("in2")], [ap("x")], update=[(1, 16)]),
        ],
    )
    assert races(enginecheck(m)) == [("l1", "l2", "WAW")]


def trigger_module(block_waits: bool) -> lncsplit.Module:
    """Pool triggers a DMABlock (two descriptors, one per half of x); DVE writes x's
    first half first and bumps semaphore 5; the block waits for it or not."""
    halves = [
        ([ap("in", 0, 32)], [ap("x", 0, 32)]),
        ([ap("in", 32 * 64, 32)], [ap("x", 32 * 64, 32)]),
    ]
    sync = {"update": [(4, 16)]}
    if block_waits:
        sync["wait"] = [("init", 5, 1)]
    return module(
        [dram("in", 0), sb("x", 0)],
        [
            inst("init", "Memset", "DVE", outs=[ap("x", 0, 32)], update=[(5, 1)]),
            inst("trig", "DMATrigger", "Pool", dma_blocks=["blk"], queue="qPool"),
            inst("use", "Activation", "Activation", [ap("x")], wait=[("blk", 4, 16)]),
        ],
        queues=[
            {
                "name": "qPool",
                "blocks": [
                    {
                        "name": "qPool_Block0",
                        "instructions": [dma_block("blk", "trig", halves, **sync)],
                    }
                ],
            }
        ],
    )


def test_a_dma_trigger_accesses_its_blocks_descriptors_until_the_block_completes() -> None:
    # The reader waits for the block. Unless the block waits for init, its descriptors
    # overwrite init's half (WAW) and nothing orders init before the reader (RAW).
    r = enginecheck(trigger_module(False))
    assert races(r) == [("init", "trig (DMABlock blk)", "WAW"), ("init", "use", "RAW")]
    assert r.races[0].b.dma_block == "blk" and r.races[0].b.position == 1
    assert enginecheck(trigger_module(True)).ok


def test_a_trigger_naming_no_block_is_a_json_error_at_its_path() -> None:
    m = module(
        [sb("x", 0)],
        [marker(), inst("trig", "DMATrigger", "Pool", dma_blocks=["ghost"])],
        queues=[],
    )
    with pytest.raises(lncsplit.BirJsonError) as e:
        enginecheck(m)
    assert "dma_blocks[0]" in str(e.value) and "ghost" in str(e.value)


# ----------------------------------------------------------------------------- semaphores


def test_repeated_names_are_distinct_instructions_by_position() -> None:
    # Two instructions named "w" (the compiler's spelling allows it): the wait for the
    # count 2 is satisfied by the second.
    m = module(
        [sb("x", 0), sb("y", 1024)],
        [
            inst("w", "Memset", "DVE", outs=[ap("x")], update=[(3, 1)]),
            inst("w", "Memset", "DVE", outs=[ap("y")], update=[(3, 1)]),
            inst("r", "Activation", "Activation", [ap("x"), ap("y")], wait=[("w", 3, 2)]),
        ],
        compiler=True,
    )
    r = enginecheck(m)
    assert r.ok and not r.waits
    early = module(
        [sb("x", 0), sb("y", 1024)],
        [
            inst("w", "Memset", "DVE", outs=[ap("x")], update=[(3, 1)]),
            inst("r", "Activation", "Activation", [ap("x"), ap("y")], wait=[("w", 3, 1)]),
            inst("w", "Memset", "DVE", outs=[ap("y")], update=[(3, 1)]),
        ],
        compiler=True,
    )
    # r reads y, which the second w (position 2) writes later and unordered: WAR.
    assert races(enginecheck(early)) == [("r", "w", "WAR")]
    assert enginecheck(early).races[0].b.position == 2


def test_a_reset_starts_the_count_from_zero() -> None:
    def after_reset(wait_value: int) -> lncsplit.Module:
        return module(
            [sb("x", 0)],
            [
                inst("a", "NoOp", "DVE", update=[(3, 1)]),
                inst("reset", "GroupResetSemaphores", "ALL", sema_group=[3]),
                inst("w", "Memset", "DVE", outs=[ap("x")], update=[(3, 1)]),
                inst("r", "Activation", "Activation", [ap("x")], wait=[("w", 3, wait_value)]),
            ],
        )

    assert enginecheck(after_reset(1)).ok
    # Counting on across the reset (2) is never reached: deadlock, and r takes part in no race.
    r = enginecheck(after_reset(2))
    assert statuses(r) == [("r", "deadlock")] and not r.races and not r.ok


def test_an_early_wait_does_not_order_the_waiter_after_from() -> None:
    m = module(
        [sb("x", 0)],
        [
            inst("first", "NoOp", "DVE", update=[(3, 1)]),
            inst("w", "Memset", "DVE", outs=[ap("x")], update=[(3, 1)]),
            inst("r", "Activation", "Activation", [ap("x")], wait=[("w", 3, 1)]),
        ],
    )
    r = enginecheck(m)
    assert statuses(r) == [("r", "early")]
    assert races(r) == [("w", "r", "RAW")]
    assert r.ok is False  # the race, not the early wait, makes it not ok


def test_a_wait_whose_only_update_comes_after_the_waiter_is_a_deadlock() -> None:
    m = module(
        [sb("x", 0)],
        [
            inst("r", "Activation", "Activation", [ap("x")], wait=[("w", 3, 1)], update=[(4, 1)]),
            inst("w", "Memset", "DVE", outs=[ap("x")], update=[(3, 1)], wait=[("r", 4, 1)]),
        ],
    )
    r = enginecheck(m)
    assert ("r", "deadlock") in statuses(r) and not r.ok


def test_a_wait_naming_nothing_or_a_semaphore_never_updated_is_no_update() -> None:
    m = module(
        [sb("x", 0)],
        [
            inst("w", "Memset", "DVE", outs=[ap("x")], update=[(3, 1)]),
            inst("r1", "Activation", "Activation", [ap("x")], wait=[("nobody", 3, 1)]),
            inst("r2", "TensorTensor", "Pool", [ap("x")], wait=[("w", 42, 1)]),
        ],
    )
    r = enginecheck(m)
    assert statuses(r) == [("r1", "no-update"), ("r2", "no-update")] and not r.ok
    assert r.waits[1].from_ == "w" and r.waits[1]["from"] == "w" and r.waits[1].id == 42


# ----------------------------------------------------------------------------- undecided


def test_a_semaphore_with_two_updating_streams_is_undecided() -> None:
    m = module(
        [sb("x", 0)],
        [
            inst("a", "NoOp", "DVE", update=[(3, 1)]),
            inst("b", "NoOp", "Pool", update=[(3, 1)]),
            inst("r", "Activation", "Activation", [ap("x")], wait=[("b", 3, 2)]),
        ],
    )
    r = enginecheck(m)
    assert not r.ok and any("two streams" in u.reason for u in r.undecided)


def test_a_reset_without_a_group_is_undecided() -> None:
    m = module([sb("x", 0)], [marker(), inst("reset", "GroupResetSemaphores", "ALL")])
    r = enginecheck(m)
    assert [u.instruction for u in r.undecided] == ["reset"] and not r.ok


def test_a_register_address_on_sb_is_undecided_not_a_race() -> None:
    reg = {"kind": "register_ap", "memref": "x", "memsetref": "x_set"}
    m = module(
        [sb("x", 0)],
        [
            marker(),
            inst("w", "Memset", "DVE", outs=[ap("x")]),
            inst("r", "Activation", "Activation", [reg]),
        ],
    )
    r = enginecheck(m)
    assert not r.races and [u.instruction for u in r.undecided] == ["r"] and not r.ok


def test_back_edges_count_unchecked_pairs_and_keep_the_report_ok() -> None:
    body = [
        inst("w", "Memset", "DVE", outs=[ap("x")], update=[(3, 1)]),
        inst("r", "Activation", "Activation", [ap("x")], wait=[("w", 3, 1)]),
        inst("reset", "GroupResetSemaphores", "ALL", sema_group=[3]),
        inst("br", "CompareAndBranch", "Pool", comp_op="IS_LTIMM", on_true="b0", on_false="b1"),
    ]
    r = enginecheck(module([sb("x", 0)], body, [marker()]))
    assert r.ok and r.unchecked >= 1 and not r.races


# ----------------------------------------------------------------------------- bad input and JSON


def test_malformed_sync_info_is_a_json_error_at_its_path() -> None:
    bad = inst("w", "Memset", "DVE")
    bad["sync_info"] = {"on_wait": [{"from": "x", "id": "three", "wait_value": 1}]}
    with pytest.raises(lncsplit.BirJsonError) as e:
        enginecheck(module([sb("x", 0)], [bad]))
    assert "sync_info.on_wait[0].id" in str(e.value)


def test_a_symbolic_module_is_9601_and_a_linked_module_is_9602() -> None:
    pred = {"expr": {"kind": "ShardIDKind", "ub": 2}, "ge": True}
    symbolic = lncsplit.Module.from_json(
        json.dumps(
            {
                "version": 2,
                "name": "k_nc_symbolic",
                "functions": [
                    {
                        "name": "main",
                        "allocations": [],
                        "basic_blocks": [
                            {
                                "name": "b",
                                "instructions": [
                                    {"name": "i", "opcode": "NoOp", "predicates": [pred]}
                                ],
                            }
                        ],
                    }
                ],
            }
        )
    )
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        enginecheck(symbolic)
    assert e.value.code == 9601
    linked = lncsplit.Module.from_json(
        json.dumps(
            {
                "version": 2,
                "name": "k/sgLnk",
                "attributes": {"lnc": 2},
                "functions": [{"name": "main", "allocations": [], "basic_blocks": []}],
            }
        )
    )
    with pytest.raises(lncsplit.NeuronAssertion) as e2:
        enginecheck(linked)
    assert e2.value.code == 9602


def test_to_json_has_exactly_the_contract_keys() -> None:
    r = enginecheck(trigger_module(False))
    d = json.loads(r.to_json())
    assert sorted(d) == ["ok", "races", "unchecked", "undecided", "waits"]
    race = d["races"][0]
    assert sorted(race) == ["a", "b", "fix", "kind", "location", "witness"]
    assert sorted(race["a"]) == sorted(race["b"]) == ["engine", "instruction", "position"]
    assert sorted(race["location"]) == ["name", "space"]
    assert sorted(race["witness"]) == ["byte", "partition"]
    assert race["b"] == {"instruction": "trig", "position": 1, "engine": "Pool"}
    w = enginecheck(
        module(
            [sb("x", 0)],
            [marker(), inst("r", "Activation", "Activation", [ap("x")], wait=[("n", 7, 1)])],
        )
    ).to_dict()["waits"][0]
    assert sorted(w) == ["from", "id", "instruction", "position", "status", "wait_value"]


def test_the_report_is_exported_and_the_module_is_not_mutated() -> None:
    m = load_then(False)
    before = m.to_json()
    r = lncsplit.enginecheck(m)
    assert isinstance(r, lncsplit.EngineReport)
    assert m.to_json() == before
    with pytest.raises(TypeError):
        enginecheck("not a module")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- why


def test_why_gives_the_chain_of_orderings_or_where_it_breaks() -> None:
    m = load_then(True)
    w = why(m, "load", "use")
    assert w["order"] == "a-before-b" and "waits for semaphore 1" in w["text"]
    assert why(m, "use", "load")["order"] == "b-before-a"
    broken = why(load_then(False), "load", "@1")
    assert broken["order"] == "unordered" and '"from": "load"' in broken["fix"]
    with pytest.raises(lncsplit.errors.InstructionNotFoundError):
        why(m, "load", "ghost")
