"""Hypothesis: mutated valid modules give a module or a typed error, never anything else."""

from __future__ import annotations

import json
from typing import Any

from bir_testdata import small_module_dict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lncsplit import LncsplitError, Module
from lncsplit._core import generate_module

_BASES = [
    json.dumps(small_module_dict()),
    generate_module(4, 60, 2).to_json(),
    generate_module(8, 40, 4).to_json(),
]

JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6,
)
NAMES = st.sampled_from(
    [
        "kind",
        "name",
        "opcode",
        "memsetref",
        "memref",
        "axis",
        "ub",
        "terms",
        "idx",
        "ap",
        "addrs",
        "version",
        "functions",
        "basic_blocks",
        "instructions",
        "blocks",
        "predicates",
        "expr",
        "dependencies",
        "regref",
        "n_terms",
        "Loop",
        "ShardIDKind",
        "AffIVKind",
        "symbolic_ap",
        "main",
        "t",
        "i",
    ]
)


def _containers(v: Any, out: list[Any]) -> None:
    if isinstance(v, dict):
        out.append(v)
        for x in v.values():
            _containers(x, out)
    elif isinstance(v, list):
        out.append(v)
        for x in v:
            _containers(x, out)


def _mutate_dict(draw: st.DrawFn, box: dict[str, Any], op: str) -> None:
    key = draw(st.sampled_from(sorted(box)))
    if op == "drop":
        del box[key]
    elif op in ("type", "junk"):
        box[key] = draw(JUNK)
    elif op == "rename":
        box[draw(NAMES)] = box.pop(key)
    elif op == "flip":
        box[key] = draw(NAMES)
    else:
        box[draw(NAMES)] = box[key]


def _mutate_list(draw: st.DrawFn, box: list[Any], op: str) -> None:
    if box and op == "drop":
        box.pop(draw(st.integers(0, len(box) - 1)))
    elif box and op == "dup":
        box.append(box[draw(st.integers(0, len(box) - 1))])
    else:
        box.insert(draw(st.integers(0, len(box))), draw(JUNK))


def _break_text(draw: st.DrawFn, text: str) -> str:
    """Sometimes (1 in 10) break the JSON text itself."""
    if draw(st.integers(0, 9)) != 0:
        return text
    cut = draw(st.integers(0, len(text)))
    return (
        text[:cut] + draw(st.sampled_from(["", "}", "]", ",", '"', "@", "\\u12"])) + text[cut + 1 :]
    )


@st.composite
def mutated(draw: st.DrawFn) -> str:
    doc = json.loads(draw(st.sampled_from(_BASES)))
    for _ in range(draw(st.integers(1, 4))):
        boxes: list[Any] = []
        _containers(doc, boxes)
        box = boxes[draw(st.integers(0, len(boxes) - 1))]
        op = draw(st.sampled_from(["drop", "type", "junk", "rename", "flip", "dup"]))
        if isinstance(box, dict) and box:
            _mutate_dict(draw, box, op)
        elif isinstance(box, list):
            _mutate_list(draw, box, op)
    return _break_text(draw, json.dumps(doc, sort_keys=draw(st.booleans())))


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=mutated())
def test_mutated_modules_give_only_typed_errors(text: str) -> None:
    try:
        m = Module.from_json(text)
    except LncsplitError:
        return
    # Whatever loads must write, and what it writes must load back byte-stably.
    try:
        out = m.to_bytes()
    except LncsplitError:
        return
    assert Module.from_json(out).to_bytes() == out
    assert m.clone().to_bytes() == out
