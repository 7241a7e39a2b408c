"""A ``DMATrigger`` accesses its DMA blocks' descriptors (contract §3.6 via §3.8, §1.7).

Two cores in the compiler's spelling share one DRAM tensor: core 0 starts a DMA whose only
descriptor writes it (the trigger's own ``ins``/``outs`` are empty, as in real dumps), core 1
reads it with no barrier between. The race is the descriptor's.
"""

from __future__ import annotations

import copy
from typing import Any

import lncsplit
import pytest
from lncsplit import Module
from sync_cores import location_set, physical_ap


def _core(c: int, descriptor_writes: bool) -> dict[str, Any]:
    sets = [location_set("buf", "DRAM", shared=True), location_set("sb", "SB")]
    if c == 0:
        insts = [
            {
                "name": "start",
                "opcode": "DMATrigger",
                "engine": "Pool",
                "queue": "q",
                "dma_blocks": ["blk"],
                "ins": [],
                "outs": [],
            },
        ]
        desc = {
            "name": "blk-desc0",
            "opcode": "DMADescriptorCopy",
            "engine": "DMA",
            "ins": [physical_ap("sb")],
            "outs": [physical_ap("buf")],
        }
        if not descriptor_writes:
            desc["ins"], desc["outs"] = [physical_ap("buf")], [physical_ap("sb")]
        queues = [
            {
                "name": "q",
                "blocks": [
                    {
                        "name": "q_Block0",
                        "instructions": [
                            {
                                "name": "blk",
                                "opcode": "DMABlock",
                                "engine": "DMA",
                                "ins": [],
                                "outs": [],
                                "blocks": [{"name": "blk_Block0", "instructions": [desc]}],
                            }
                        ],
                    }
                ],
            }
        ]
    else:
        insts = [
            {
                "name": "read",
                "opcode": "DMACopy",
                "engine": "SP",
                "ins": [physical_ap("buf")],
                "outs": [physical_ap("sb")],
            }
        ]
        queues = []
    return {
        "version": 2,
        "arch": "gen3",
        "attributes": {"neuron_core_id": c},
        "functions": [
            {
                "name": "sg0000",
                "allocations": sets,
                "blocks": [{"name": "b0", "instructions": insts}],
            }
        ],
        "queues": queues,
    }


def _cores(descriptor_writes: bool) -> list[Module]:
    return [Module.from_json(copy.deepcopy(_core(c, descriptor_writes))) for c in (0, 1)]


@pytest.mark.parametrize("mode", ["exact", "interval"])
def test_a_dma_triggers_descriptor_write_races_with_the_other_cores_read(mode: str) -> None:
    report = lncsplit.racecheck(_cores(descriptor_writes=True), mode=mode)  # type: ignore[arg-type]
    assert not report.ok
    assert any("start" in (r.a.instruction, r.b.instruction) for r in report.races)


def test_descriptors_that_only_read_the_shared_tensor_do_not_race() -> None:
    assert lncsplit.racecheck(_cores(descriptor_writes=False)).ok


def test_a_trigger_naming_a_block_no_queue_holds_is_an_error() -> None:
    doc = _core(0, True)
    doc["queues"] = []
    cores = [Module.from_json(doc), Module.from_json(_core(1, True))]
    with pytest.raises(lncsplit.LncsplitError, match="blk"):
        lncsplit.racecheck(cores)
