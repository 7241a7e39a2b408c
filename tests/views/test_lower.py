"""The front end from a file: HLO text → symbolic module → split (contract §3.5, §5)."""

from __future__ import annotations

import json

import lncsplit
import pytest
from lncsplit.examples import hlo_example_path
from lncsplit.frontend import HloModule, NothingToLowerError, lower_hlo_text
from lncsplit.views.explain import walk_instructions


def test_shipped_hlo_is_jax_text_that_round_trips() -> None:
    text = hlo_example_path().read_text()
    assert text.startswith("HloModule jit_")
    assert str(HloModule.parse(text)) == text


def test_shipped_hlo_lowers_and_splits_through_the_pipeline() -> None:
    lowered = lower_hlo_text(hlo_example_path().read_text(), 2)
    assert "lowered 3 AwsNeuronLNCShardingConstraint" in lowered.notes[0]
    assert "not lowered" in lowered.notes[1]
    module = lowered.module()
    assert "nc_symbolic" in module.name and module.neuron_core_id is None
    cores = lncsplit.run_pipeline([module], lncsplit.PassOptions(lnc_size=2))
    names = [[r.name for r in walk_instructions(c)] for c in cores]
    # two even constraints on both cores; the 5-element one as one variant per core
    assert names == [
        ["custom-call.7", "custom-call.8", "custom-call.10.0"],
        ["custom-call.7", "custom-call.8", "custom-call.10.1"],
    ]
    # core 1 copies rows 128..255 of the f32[256,512] value (a [2,1] tiling)
    inst = next(r.view for r in walk_instructions(cores[1]) if r.name == "custom-call.7")
    assert (
        [e.eval() for e in inst.outs[0].addrs] == [128, 0] == [e.eval() for e in inst.ins[0].addrs]
    )
    assert inst.outs[0].ap == [[512, 128], [1, 512]]


def test_hlo_without_lnc_constraints_is_nothing_to_lower() -> None:
    text = (
        "HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n"
        "ENTRY %main.3 (Arg_0.1: f32[4]) -> f32[4] {\n"
        "  %Arg_0.1 = f32[4]{0} parameter(0)\n"
        "  ROOT %negate.2 = f32[4]{0} negate(f32[4]{0} %Arg_0.1)\n"
        "}\n"
    )
    with pytest.raises(NothingToLowerError, match="no AwsNeuronLNCShardingConstraint"):
        lower_hlo_text(text, 2)


def test_text_that_is_not_hlo_is_nothing_to_lower() -> None:
    with pytest.raises(NothingToLowerError, match="no HLO instruction"):
        lower_hlo_text(json.dumps({"version": 2}), 2)


def test_lowered_copies_have_equal_counts_so_the_simulator_runs_them() -> None:
    """Contract §3.5/§3.8: each lowered copy reads the tile it writes; a copy of unequal counts
    would be 9401 in the simulator (the whole operand into one tile used to be)."""
    sim = pytest.importorskip("lncsplit.sim")
    module = lower_hlo_text(hlo_example_path().read_text(), 2).module()
    cores = lncsplit.run_pipeline([module.clone()], lncsplit.PassOptions(lnc_size=2))
    for run in (sim.run(module, None, lnc=2), sim.run(cores, None)):
        assert run.lnc == 2 and run.steps
