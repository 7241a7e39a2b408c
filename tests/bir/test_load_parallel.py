"""The parallel loader gives the serial loader's module or error (issue 17).

``Module.from_json`` reads big ``functions[*].basic_blocks[*].instructions``
arrays in chunks on several cores (rust/src/bir/load/parallel.rs); anything
unusual reads the text serially, and any failure of the parallel read reads
it again serially, so every error is the serial loader's. ``_load_traced``
takes the size from which an array is read in parallel (so small inputs
exercise the parallel path) and says which way a load went: ``"serial"`` (no
plan), ``"parallel"`` or ``"fallback"`` (a plan, but the parallel read failed).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from bir_testdata import insts as _insts
from bir_testdata import loop_body as _body
from bir_testdata import small_module_dict
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import Module
from lncsplit._core import _load_traced, generate_module

D = dict[str, Any]

#: Smallest array read in parallel by default (``PAR_MIN_ELEMENTS``).
PAR_MIN = 4096
#: A size no array reaches: the serial loader.
SERIAL = 10**9


def _serial(text: str | bytes) -> Module | Exception:
    m, path = _load_traced(text, SERIAL)
    assert path == "serial"
    return m


def _assert_same(got: Module | Exception, want: Module | Exception) -> None:
    if isinstance(want, Exception):
        assert type(got) is type(want)
        assert str(got) == str(want)
        assert getattr(got, "path", None) == getattr(want, "path", None)
    else:
        assert isinstance(got, Module), got
        assert got.to_bytes() == want.to_bytes()


def _parallel(text: str | bytes, min_elements: int) -> tuple[Module | Exception, str]:
    got, path = _load_traced(text, min_elements)
    _assert_same(got, _serial(text))
    return got, path


def test_a_big_module_is_read_in_parallel_with_the_serial_bytes() -> None:
    data = generate_module(1, 20000, 2).to_bytes()
    m, path = _parallel(data, PAR_MIN)
    assert path == "parallel"
    assert isinstance(m, Module) and m.to_bytes() == data
    assert Module.from_json(data).to_bytes() == data


def test_small_modules_are_read_serially() -> None:
    data = generate_module(1, 300, 2).to_bytes()
    assert _load_traced(data, PAR_MIN)[1] == "serial"


# ------------------------------------------------------ random texts, same module


def _objects(v: Any) -> list[D]:
    """Every object in `v`, outermost first."""
    out: list[D] = []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            out.append(x)
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


def _shuffled(d: D, rng: random.Random) -> D:
    items = list(d.items())
    rng.shuffle(items)
    return dict(items)


def _reorder(v: Any, rng: random.Random) -> Any:
    """`v` with the keys of some objects in another order."""
    if isinstance(v, list):
        return [_reorder(x, rng) for x in v]
    if isinstance(v, dict):
        d = {k: _reorder(x, rng) for k, x in v.items()}
        return _shuffled(d, rng) if rng.random() < 0.3 else d
    return v


def _variant(doc: D, rng: random.Random) -> D:
    """The same module written another way: keys reordered (the module's
    `version` may come last), unknown keys with escapes and brackets in
    strings (some non-ASCII)."""
    doc = _reorder(doc, rng)
    for o in _objects(doc):
        if "opcode" in o and rng.random() < 0.2:
            o["zz_note"] = {"s": 'a"]}[{\\é', "n": [1, {"x": None}]}
    return doc


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(1, 400),
    lnc=st.sampled_from([2, 4]),
    min_elements=st.sampled_from([1, 2, 7, 64]),
    variant=st.integers(0, 2**32),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 1]),
)
def test_the_parallel_read_equals_the_serial_read(
    seed: int,
    n: int,
    lnc: int,
    min_elements: int,
    variant: int,
    ascii_only: bool,
    indent: int | None,
) -> None:
    doc = json.loads(generate_module(seed, n, lnc).to_json())
    plain = json.dumps(doc)
    got, path = _parallel(plain, min_elements)
    top = max(len(b["instructions"]) for f in doc["functions"] for b in f["basic_blocks"])
    assert path == ("parallel" if top >= min_elements else "serial")
    text = json.dumps(_variant(doc, random.Random(variant)), ensure_ascii=ascii_only, indent=indent)
    got, path = _parallel(text, min_elements)
    assert isinstance(got, Module)
    assert path in ("parallel", "serial")


def test_a_hand_written_module_with_loops_registers_and_unknown_keys_reads_in_parallel() -> None:
    text = json.dumps(small_module_dict())
    _, path = _parallel(text, 1)
    assert path == "parallel"
    # `registers` after the blocks: register names are checked when the
    # function ends, in both reads.
    d = small_module_dict()
    f = d["functions"][0]
    f["registers"] = f.pop("registers")
    assert _parallel(json.dumps(d), 1)[1] == "parallel"


@pytest.mark.parametrize(
    "text",
    [
        '{"functions": [{"basic_blocks": [{"instructions": [{}]}]}], "version": 2, "name": "m"}',
        '{"version": 2, "name": "m", "functions": [{"basic_blocks": [{"instruction\\u0073": [{}]}]}]}',
        '{"version": 2, "version": 2, "name": "m", "functions": []}',
    ],
    ids=["version-last", "escaped-key", "duplicate-key"],
)
def test_texts_of_an_unusual_shape_are_read_serially(text: str) -> None:
    assert _parallel(text, 1)[1] == "serial"


# ----------------------------------------------------- errors: the serial errors


MUTATIONS: dict[str, Callable[[D], None]] = {
    "memsetref": lambda d: _insts(d)[0]["outs"][0].__setitem__("memsetref", "nope"),
    "dependency": lambda d: _body(d)["dependencies"].__setitem__(0, ["nope", "Flow"]),
    "axis": lambda d: _body(d)["predicates"][0]["expr"]["terms"][0]["idx"].__setitem__(
        "axis", "nope"
    ),
    "register": lambda d: _insts(d)[5]["predicates"][0]["expr"]["terms"][0]["idx"].__setitem__(
        "regref", "nope"
    ),
    "opcode": lambda d: _insts(d)[2].__setitem__("opcode", "Nope"),
    "name-type": lambda d: _insts(d)[3].__setitem__("name", 7),
    "duplicate-name": lambda d: _body(d).__setitem__("name", _insts(d)[0]["name"]),
    "no-name": lambda d: _insts(d)[4].pop("name"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_an_error_inside_an_array_read_in_parallel_is_the_serial_error(name: str) -> None:
    d = small_module_dict()
    MUTATIONS[name](d)
    got, path = _parallel(json.dumps(d), 1)
    assert isinstance(got, Exception)
    assert path == "fallback"


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    where=st.floats(0, 1),
    mutation=st.sampled_from(["opcode", "name", "dependency", "truncate", "memsetref"]),
)
def test_an_error_anywhere_in_a_big_module_is_the_serial_error(
    seed: int, where: float, mutation: str
) -> None:
    doc = json.loads(generate_module(seed, 300, 2).to_json())
    insts = [o for o in _objects(doc) if "opcode" in o]
    inst = insts[int(where * (len(insts) - 1))]
    text = ""
    if mutation == "opcode":
        inst["opcode"] = "Nope"
    elif mutation == "name":
        inst["name"] = ["x"]
    elif mutation == "dependency":
        inst["dependencies"] = [["nowhere", "Flow"]]
    elif mutation == "memsetref":
        args = [a for a in inst.get("outs", []) + inst.get("ins", []) if "memsetref" in a]
        if args:
            args[0]["memsetref"] = "nope"
        else:
            inst["opcode"] = "Nope"
    else:
        plain = json.dumps(doc)
        text = plain[: int(len(plain) * (0.05 + 0.9 * where))]
    got, _ = _parallel(text or json.dumps(copy.deepcopy(doc)), 16)
    assert isinstance(got, Exception)
