"""The pipeline's quick proof that the memory checks find nothing (orders 15
and 90): ``memory.report.proven_clear``. It may only say *clear* when the
checks report no violation (every test of this folder compares the two, see
``conftest.py``); here: that it does say clear on ordinary split outputs, so
the pipeline skips the Python checks, and that the pipeline still reports
a violation the proof cannot clear."""

from __future__ import annotations

import json

import pytest
from builders import make_module, module, one
from lncsplit import Module
from lncsplit._core import generate_module
from lncsplit.memory import MemoryCheckError, check_collective_buffers, check_memory
from lncsplit.memory.report import proven_clear
from lncsplit.pipeline import PassOptions, run_pipeline


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_split_outputs_are_proven_clear(seed: int) -> None:
    src = Module.from_json(generate_module(seed, 400, 2).to_bytes())
    cores = run_pipeline([src], PassOptions(lnc_size=2, racecheck=False))
    assert check_memory(cores, lnc=2).ok
    assert proven_clear(cores, lnc=2)
    assert check_collective_buffers(cores, lnc=2).ok
    assert proven_clear(cores, lnc=2, cc_only=True)


def test_a_violation_is_not_proven_clear_and_the_checks_report_it() -> None:
    bad = make_module(module([one("t", "SB", [128, 4], addr=0, base=1)]))
    assert not proven_clear([bad], lnc=1)
    assert not check_memory([bad]).ok


@pytest.mark.parametrize("cc_buffer_mb", [-1, 1 << 50])
def test_arguments_the_checks_refuse_or_cannot_hold_are_left_to_them(cc_buffer_mb: int) -> None:
    ok = make_module(module([one("t", "SB", [128, 4], addr=0, base=0)]))
    assert not proven_clear([ok], lnc=1, cc_buffer_mb=cc_buffer_mb)


def test_the_pipeline_still_raises_what_the_proof_cannot_clear() -> None:
    src = Module.from_json(generate_module(1, 200, 2).to_bytes())
    with pytest.raises(MemoryCheckError):
        run_pipeline([src], PassOptions(lnc_size=2, cc_buffer_mb=0, racecheck=False))


def test_a_function_past_the_instance_limit_is_left_to_the_checks_which_raise_9306() -> None:
    from lnc_builders import inst, loop
    from lnc_builders import module as lnc_module
    from lncsplit import NeuronAssertion, split

    cores = split(
        [Module.from_json(json.dumps(lnc_module([loop("l", "i", 200_000_000, [inst("n")])])))], 2
    )
    assert not proven_clear(cores, lnc=2)
    with pytest.raises(NeuronAssertion) as e:
        check_memory(cores, lnc=2)
    assert e.value.code == 9306
