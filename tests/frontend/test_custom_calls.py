"""The custom-call seam, static-ring unpacking, the penguin printer and logical_nc_config."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from lncsplit.frontend import (
    AWS_NEURON_CUSTOM_CALL_TARGETS,
    CustomCallCheckError,
    CustomCallPartitioner,
    HloInstruction,
    HloModule,
    HloSharding,
    LNCShardingConstraintPartitioner,
    ReshardPlan,
    check_custom_call,
    custom_call_cost,
    get_custom_call_partitioner,
    handle_custom_call,
    is_custom_call_loading_param,
    logical_nc_config,
    print_lnc_sharding_constraint,
    register_custom_call_partitioner,
    reset_custom_call_partitioners,
    unpack_nested_static_ring_transfers,
)

P = HloSharding.parse


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    reset_custom_call_partitioners()
    yield
    reset_custom_call_partitioners()


def _cc(
    target: str, sharding: str = "{devices=[2]1,0}", shape: str = "f32[8]{0}"
) -> HloInstruction:
    line = (
        f'%x = {shape} custom-call({shape} %p), custom_call_target="{target}", sharding={sharding}'
    )
    instr = HloInstruction.parse_line(line)
    assert instr is not None
    return instr


# -- whitelist ------------------------------------------------------------------------------------
def test_whitelist_has_seed_targets() -> None:
    for t in (
        "AwsNeuronLNCShardingConstraint",
        "AwsNeuronTransferWithStaticRing",
        "AwsNeuronCollectiveMatmul",
    ):
        assert t in AWS_NEURON_CUSTOM_CALL_TARGETS
        check_custom_call(t)


def test_unknown_aws_neuron_target_rejected() -> None:
    with pytest.raises(CustomCallCheckError, match="AwsNeuronBogus") as ei:
        check_custom_call(_cc("AwsNeuronBogus"))
    assert ei.value.target == "AwsNeuronBogus" and ei.value.instruction == "x"


def test_non_neuron_targets_pass_the_checker() -> None:
    check_custom_call(_cc("Sharding"))
    check_custom_call("SPMDFullToShardShape")


# -- registry -------------------------------------------------------------------------------------
def test_registry_populated_lazily_with_lnc_constraint() -> None:
    p = get_custom_call_partitioner("AwsNeuronLNCShardingConstraint")
    assert isinstance(p, LNCShardingConstraintPartitioner)
    assert get_custom_call_partitioner("AwsNeuronTransferWithStaticRing") is None
    assert get_custom_call_partitioner("NoSuchTarget") is None


def test_registry_first_registration_wins_and_duplicate_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class A(CustomCallPartitioner):
        pass

    class B(CustomCallPartitioner):
        pass

    a, b = A(), B()
    with caplog.at_level(logging.INFO, logger="lncsplit.frontend"):
        assert register_custom_call_partitioner("MyTarget", a) is True
        assert register_custom_call_partitioner("MyTarget", b) is False
    assert get_custom_call_partitioner("MyTarget") is a
    msgs = [r.getMessage() for r in caplog.records if r.name == "lncsplit.frontend"]
    assert msgs == ["Failed to register custom call partitioner for MyTarget"]


def test_duplicate_of_default_registration_logs(caplog: pytest.LogCaptureFixture) -> None:
    get_custom_call_partitioner("x")  # populate once
    with caplog.at_level(logging.INFO, logger="lncsplit.frontend"):
        register_custom_call_partitioner("AwsNeuronLNCShardingConstraint", CustomCallPartitioner())
    assert "Failed to register custom call partitioner for AwsNeuronLNCShardingConstraint" in (
        caplog.text
    )
    assert isinstance(
        get_custom_call_partitioner("AwsNeuronLNCShardingConstraint"),
        LNCShardingConstraintPartitioner,
    )


def test_base_partitioner_is_unimplemented() -> None:
    register_custom_call_partitioner("Stub", CustomCallPartitioner())
    with pytest.raises(NotImplementedError, match="Implement sharding for Stub"):
        handle_custom_call(_cc("Stub"), P("{devices=[2]0,1}"))


# -- dispatch -------------------------------------------------------------------------------------
def test_lnc_constraint_partitioner_reshards_operand_to_pinned_sharding() -> None:
    plan = handle_custom_call(_cc("AwsNeuronLNCShardingConstraint"), P("{devices=[2]0,1}"))
    assert isinstance(plan, ReshardPlan)
    assert plan.handler == "AwsNeuronLNCShardingConstraint"
    assert plan.kinds == ["collective-permute"]
    assert plan.steps[0].pairs == [(0, 1), (1, 0)]


def test_lnc_constraint_all_to_all_via_registry() -> None:
    instr = _cc("AwsNeuronLNCShardingConstraint", "{devices=[1,2]0,1}", "f32[8,8]{1,0}")
    plan = handle_custom_call(instr, P("{devices=[2,1]0,1}"))
    assert plan.kinds == ["all-to-all"] and plan.steps[0].dims == (0, 1)


def test_unregistered_target_takes_default_action() -> None:
    plan = handle_custom_call(_cc("AwsNeuronTransferWithStaticRing"), P("{devices=[2]0,1}"))
    assert plan.handler == "DefaultAction"
    assert plan.kinds == ["replicate", "dynamic-slice"]
    assert plan.steps[0].method == "all-gather"


def test_unregistered_constraint_never_permutes() -> None:
    reset_custom_call_partitioners(populate_defaults=False)
    plan = handle_custom_call(_cc("AwsNeuronLNCShardingConstraint"), P("{devices=[2]0,1}"))
    assert plan.handler == "DefaultAction"
    assert "collective-permute" not in plan.kinds


def test_dispatch_checks_whitelist() -> None:
    with pytest.raises(CustomCallCheckError):
        handle_custom_call(_cc("AwsNeuronNope"), P("{replicated}"))


# -- cost model -----------------------------------------------------------------------------------
def test_cost_zero_for_constraint() -> None:
    assert custom_call_cost(_cc("AwsNeuronLNCShardingConstraint")) == 0.0
    assert custom_call_cost(_cc("AwsNeuronTransferWithStaticRing")) == 32.0


# -- penguin printer ------------------------------------------------------------------------------
def test_penguin_printer_line() -> None:
    instr = _cc(
        "AwsNeuronLNCShardingConstraint",
        '{devices=[2,1]<=[2] metadata={op_name="a"}}',
        "f32[8,4]{1,0}",
    )
    assert print_lnc_sharding_constraint(instr) == (
        "x = ctx.LNCShardingConstraintOp(p, target_name=AwsNeuronLNCShardingConstraint, "
        "sharding={devices=[2,1]<=[2]})"
    )
    assert print_lnc_sharding_constraint(instr, ctx="nc", dsts=["t1"], srcs=["t0"]) == (
        "t1 = nc.LNCShardingConstraintOp(t0, target_name=AwsNeuronLNCShardingConstraint, "
        "sharding={devices=[2,1]<=[2]})"
    )


def test_penguin_printer_rejects_other_targets() -> None:
    with pytest.raises(ValueError):
        print_lnc_sharding_constraint(_cc("Sharding"))


# -- static ring ----------------------------------------------------------------------------------
RING = "AwsNeuronTransferWithStaticRing"
NESTED = f"""\
HloModule m

ENTRY %main (p0: f32[4]) -> f32[4] {{
  %p0 = f32[4]{{0}} parameter(0)
  %t1 = f32[4]{{0}} custom-call(f32[4]{{0}} %p0), custom_call_target="{RING}"
  %t2 = f32[4]{{0}} custom-call(f32[4]{{0}} %t1), custom_call_target="{RING}"
  %t3 = f32[4]{{0}} custom-call(f32[4]{{0}} %t2), custom_call_target="{RING}"
  ROOT %neg = f32[4]{{0}} negate(f32[4]{{0}} %t3)
}}
"""


def test_is_custom_call_loading_param() -> None:
    m = HloModule.parse(NESTED)
    assert [is_custom_call_loading_param(i) for i in m.instructions] == [
        False,
        True,
        True,
        True,
        False,
    ]


def test_unpack_nested_static_ring_depth_three(caplog: pytest.LogCaptureFixture) -> None:
    m = HloModule.parse(NESTED)
    with caplog.at_level(logging.INFO, logger="lncsplit.frontend"):
        assert unpack_nested_static_ring_transfers(m) is True
    assert [i.name for i in m.instructions] == ["p0", "t1", "neg"]
    neg = m.get("neg")
    assert neg is not None and neg.operands == ["t1"]
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs == [
        "found illegally nested AwsNeuronTransferWithStaticRing, replacing t2 with t1",
        "found illegally nested AwsNeuronTransferWithStaticRing, replacing t3 with t1",
    ]
    assert unpack_nested_static_ring_transfers(m) is False


def test_unpack_moves_root() -> None:
    text = NESTED.replace("  ROOT %neg = f32[4]{0} negate(f32[4]{0} %t3)\n", "").replace(
        "  %t3 =", "  ROOT %t3 ="
    )
    m = HloModule.parse(text)
    unpack_nested_static_ring_transfers(m)
    assert m.entry is not None and m.entry.root is not None and m.entry.root.name == "t1"
    assert "ROOT %t1" in str(m)
    assert HloModule.parse(str(m)) == m


# -- logical_nc_config ----------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["gen3", "trn2", "cayman", "TRN2"])
def test_logical_nc_config_defaults_to_two_on_trn2(arch: str) -> None:
    assert logical_nc_config(arch) == 2


@pytest.mark.parametrize("arch", ["inferentia", "inf1", "sunda", "trn1", "inf2", "core_v4", "trn3"])
def test_logical_nc_config_defaults_to_one_elsewhere(arch: str) -> None:
    assert logical_nc_config(arch) == 1
    assert logical_nc_config(arch, 1) == 1


@pytest.mark.parametrize("arch", ["inf1", "trn1", "gen3", "trn2", "core_v4"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 64])
def test_logical_nc_config_takes_any_explicit_n_on_every_arch(arch: str, n: int) -> None:
    """Contract §3.5 (2026-12-02): any N >= 1 on every arch, as the split does (only
    GPSIMDSB2SB is limited to N == 2)."""
    assert logical_nc_config(arch, n) == n


def test_logical_nc_config_refuses_what_is_no_n() -> None:
    for bad in (0, -1):
        with pytest.raises(ValueError, match=">= 1"):
            logical_nc_config("trn2", bad)
    for wrong in (2.0, "2", True):
        with pytest.raises(TypeError, match="lnc must be an integer"):
            logical_nc_config("trn2", wrong)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        logical_nc_config("nonsense")


def test_logical_nc_config_equals_pass_options_lnc_size() -> None:
    pytest.importorskip("lncsplit._core")
    from lncsplit.frontend import make_pass_options

    assert make_pass_options("trn2").lnc_size == logical_nc_config("trn2") == 2
    assert make_pass_options("trn1").lnc_size == 1


@pytest.mark.parametrize("arch", ["trn1", "trn2", "trn3"])
def test_make_pass_options_takes_the_n_lower_takes(arch: str) -> None:
    """One rule for N: ``make_pass_options(arch, 4)`` is accepted where ``lncsplit lower
    --arch ARCH --lnc 4`` is (it used to refuse 4 on trn2 and anything but 1 elsewhere)."""
    pytest.importorskip("lncsplit._core")
    from lncsplit.frontend import make_pass_options

    assert make_pass_options(arch, 4).lnc_size == 4
