"""Contract §4: every error lncsplit raises on bad input is a ``LncsplitError``.

The front end's errors keep ``ValueError`` as a second base (callers that
caught ``ValueError`` still work), and ``except lncsplit.LncsplitError`` catches
each of them too — a bad sharding text, an XLA CHECK failure, a custom call
the checker rejects, an HLO module that cannot be lowered.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import lncsplit
import pytest
from lncsplit import frontend
from lncsplit.frontend import HloModule, HloShape, HloSharding


def _exported_error_classes() -> list[type[BaseException]]:
    return [
        obj
        for name in frontend.__all__
        if inspect.isclass(obj := getattr(frontend, name)) and issubclass(obj, Exception)
    ]


def test_the_front_end_exports_its_error_classes() -> None:
    names = {c.__name__ for c in _exported_error_classes()}
    assert {"HloShardingError", "LoweringError", "CustomCallCheckError", "ReshardError"} <= names


@pytest.mark.parametrize("cls", _exported_error_classes(), ids=lambda c: c.__name__)
def test_every_front_end_error_class_is_an_lncsplit_error_and_a_value_error(
    cls: type[BaseException],
) -> None:
    if issubclass(cls, NotImplementedError):  # the partitioner base's Unimplemented, not bad input
        return
    assert issubclass(cls, lncsplit.LncsplitError)
    assert issubclass(cls, ValueError)


BAD_INPUTS: dict[str, Callable[[], object]] = {
    "sharding text XLA rejects": lambda: HloSharding.parse("{maximal}"),
    "tile index of a replicated sharding": lambda: HloSharding.parse(
        "{replicated}"
    ).tile_index_for_device(0),
    "a shape that is not HLO": lambda: HloShape.parse("f32[8"),
    "an unknown AwsNeuron custom call": lambda: frontend.check_custom_call("AwsNeuronNoSuchTarget"),
    "text that is not HLO, lowered": lambda: frontend.lower_to_symbolic(
        HloModule.parse("not HLO text at all"), 2
    ),
}


@pytest.mark.parametrize("call", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_bad_front_end_input_raises_an_lncsplit_error(call: Callable[[], object]) -> None:
    with pytest.raises(lncsplit.LncsplitError):
        call()


_NO_CONSTRAINT = (
    "HloModule jit_f\n\n"
    "ENTRY %main.3 (Arg_0.1: f32[4]) -> f32[4] {\n"
    "  %Arg_0.1 = f32[4]{0} parameter(0)\n"
    "  ROOT %negate.2 = f32[4]{0} negate(f32[4]{0} %Arg_0.1)\n"
    "}\n"
)


def test_lower_to_symbolic_with_nothing_to_lower_raises_as_the_cli_says() -> None:
    """Contract §3.5: text with no constraint raises ``NothingToLowerError`` (a
    ``LoweringError``) from the API as from the CLI — not an empty module. The API's message
    is the one ``lncsplit lower`` prints (it lowers through ``lower_hlo_text``)."""
    with pytest.raises(frontend.NothingToLowerError, match="nothing to lower") as api:
        frontend.lower_to_symbolic(HloModule.parse(_NO_CONSTRAINT), 2)
    with pytest.raises(frontend.NothingToLowerError) as cli:
        frontend.lower_hlo_text(_NO_CONSTRAINT, 2)
    assert str(api.value) == str(cli.value)
    with pytest.raises(frontend.NothingToLowerError):
        frontend.lower_to_symbolic_json(HloModule.parse(_NO_CONSTRAINT), 2)
