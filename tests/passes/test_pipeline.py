"""PassOptions, run_pipeline and CoreForkPass (contract §3, issue 4)."""

from __future__ import annotations

import lncsplit
import pytest
from lnc_builders import inst, load, module, on_core, tensor
from lncsplit.pipeline import (
    CoreForkError,
    CoreForkPass,
    PassEvent,
    Pipeline,
    group_modules_by_core,
)


def sym() -> lncsplit.Module:
    return load(module([inst("a"), inst("b", predicates=[on_core(1)])], [tensor("t", [8, 8])]))


def test_pass_options_default_lnc_size_is_1() -> None:
    assert lncsplit.PassOptions().lnc_size == 1


def test_pass_options_reject_bad_lnc_size() -> None:
    with pytest.raises(ValueError):
        lncsplit.PassOptions(lnc_size=0)


def test_run_pipeline_splits_into_lnc_cores() -> None:
    out = lncsplit.run_pipeline([sym()], lncsplit.PassOptions(lnc_size=2))
    assert [m.neuron_core_id for m in out] == [0, 1]


def test_run_pipeline_runs_passes_in_compiler_order() -> None:
    events: list[PassEvent] = []
    lncsplit.run_pipeline([sym()], lncsplit.PassOptions(lnc_size=2), hook=events.append)
    orders = [e.order for e in events]
    assert orders == sorted(orders)
    assert [3, 4, 7, 8, 13, 14] == [o for o in orders if o <= 14]
    assert 83 in orders


def test_pipeline_records_per_pass_timings() -> None:
    p = Pipeline(lncsplit.PassOptions(lnc_size=2))
    p.run([sym()])
    assert "08 lnc_splitter" in p.timings
    assert all(t >= 0 for t in p.timings.values())


def test_pipeline_with_lnc_1_leaves_module_symbolic() -> None:
    (m,) = lncsplit.run_pipeline([sym()], lncsplit.PassOptions())
    assert m.neuron_core_id is None


def test_pipeline_without_verify_and_expand_skips_those_passes() -> None:
    events: list[PassEvent] = []
    opts = lncsplit.PassOptions(
        lnc_size=2, verify=False, expand=False, memory=False, racecheck=False
    )
    lncsplit.run_pipeline([sym()], opts, hook=events.append)
    # The LNC tail's lowering and lifetimes always run with N > 1.
    assert [e.name for e in events] == [
        "lnc_splitter",
        "lower_local_collectives",
        "extend_shared_lifetimes",
    ]


def test_group_modules_by_core_groups_split_output() -> None:
    out = lncsplit.split([sym(), sym()], 2)
    groups = group_modules_by_core(2, out)
    assert [[m.neuron_core_id for m in g] for g in groups] == [[0, 0], [1, 1]]


def test_core_fork_pass_on_a_single_module_is_cfp001() -> None:
    with pytest.raises(CoreForkError) as e:
        group_modules_by_core(2, [sym()])
    assert e.value.code == "CFP001"


def test_core_fork_pass_failures_are_reported_per_core_as_cfp002() -> None:
    out = lncsplit.split([sym()], 2)

    def fail_on_core_1(core: int, mods: list[lncsplit.Module]) -> None:
        if core == 1:
            raise lncsplit.NeuronAssertion(1, "boom", "x.cpp:1")

    with pytest.raises(CoreForkError) as e:
        CoreForkPass(fail_on_core_1, parallel=True).run(2, out)
    assert e.value.code == "CFP002"
    assert "Compilation failed for modules targeting the following cores:" in str(e.value)
    assert "core 1" in str(e.value)


def replicated_sym() -> lncsplit.Module:
    from lncsplit.examples import example_paths

    src = next(p for p in example_paths() if "replication" in p.name)
    return lncsplit.load(src)


def test_pipeline_with_lnc_1_is_a_pass_through() -> None:
    # Contract §3.1/§3.6: with N == 1 the module passes through untouched —
    # expand_replication does not grow sets, nothing is renamed, no core id.
    m = replicated_sym()
    before = m.to_bytes()
    events: list[PassEvent] = []
    out = lncsplit.run_pipeline([m], lncsplit.PassOptions(lnc_size=1), hook=events.append)
    assert len(out) == 1 and out[0] is m
    assert m.to_bytes() == before
    assert m.neuron_core_id is None and "nc_symbolic" in m.name
    assert not {"expand_replication", "lnc_splitter"} & {e.name for e in events}


def test_run_pipeline_refuses_a_concretized_input_when_n_above_1() -> None:
    # Contract §3.6: run_pipeline refuses an already concretized input (9005).
    (c0, _c1) = lncsplit.split([sym()], 2)
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.run_pipeline([c0], lncsplit.PassOptions(lnc_size=2))
    assert e.value.code == 9005
    assert c0.name in str(e.value)
