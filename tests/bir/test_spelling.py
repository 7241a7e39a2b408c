"""The compiler's own spelling (contract §1.7): both spellings read, the one read written back.

The compiler-spelled twins here are made two ways: by renaming keys in the JSON (independent
of lncsplit's writer: what a file from neuronx-cc looks like) and by ``to_json(spelling=...)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lncsplit
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import BirJsonError, Module, NeuronAssertion
from lncsplit._core import generate_module
from lncsplit.examples import example_paths, examples_dir

SPELLINGS = ("lncsplit", "compiler")

#: lncsplit key → the compiler's, per object (contract §1.7's table).
FUNCTION_KEYS = {"basic_blocks": "blocks"}
SET_KEYS = {"locations": "memorylocations"}
AXIS_KEYS = {"lo": "lb", "step": "stride"}


def compiler_twin(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its keys renamed into the compiler's spelling by hand (no lncsplit code)."""

    def block(b: dict[str, Any]) -> None:
        for inst in b.get("instructions", []):
            if inst.get("opcode") == "Loop":
                axis = inst.pop("axis")
                inst["LoopAxis"] = {AXIS_KEYS.get(k, k): v for k, v in axis.items()}
            for nested in inst.get("blocks", []):
                block(nested)

    out = json.loads(json.dumps(doc))
    for f in out["functions"]:
        f["blocks"] = f.pop("basic_blocks")
        for s in f.get("allocations", []):
            if "locations" in s:
                s["memorylocations"] = s.pop("locations")
        for b in f["blocks"]:
            block(b)
    return out


def _examples() -> list[Path]:
    return example_paths()


def _instruction_names(m: Module) -> list[str]:
    return [i.name for f in m.functions for i in f.instructions()]


# ------------------------------------------------------------- the bug this section fixed


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.stem)
def test_a_shipped_example_in_the_compiler_spelling_is_not_read_as_an_empty_module(
    path: Path,
) -> None:
    doc = json.loads(path.read_text())
    original = Module.from_json(doc)
    twin = Module.from_json(compiler_twin(doc))
    assert twin.spelling == "compiler"
    assert original.spelling == "lncsplit"
    assert twin.instruction_count() == original.instruction_count() > 0
    assert _instruction_names(twin) == _instruction_names(original)
    text = twin.to_json()
    assert '"blocks":' in text and '"basic_blocks"' not in text
    assert '"memorylocations"' in text or '"locations"' not in text


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.stem)
def test_split_of_a_compiler_spelled_module_is_split_of_its_dialect_twin(path: Path) -> None:
    doc = json.loads(path.read_text())
    n = 2
    dialect = lncsplit.split([Module.from_json(doc)], n)
    twin = lncsplit.split([Module.from_json(compiler_twin(doc))], n)
    assert [m.spelling for m in twin] == ["compiler"] * n
    for c, (a, b) in enumerate(zip(dialect, twin, strict=True)):
        assert _instruction_names(a) == _instruction_names(b), f"core {c}"
        # Addresses and everything else: the twin's core in lncsplit's spelling is the
        # dialect's core byte for byte.
        assert b.to_bytes(spelling="lncsplit") == a.to_bytes(), f"core {c}"


# ------------------------------------------------------------- writing back, converting


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.stem)
def test_writers_write_back_the_spelling_read_byte_stable_after_one_load(
    path: Path, spelling: str
) -> None:
    first = Module.from_json(path.read_bytes()).to_bytes(spelling=spelling)  # type: ignore[arg-type]
    m = Module.from_json(first)
    assert m.spelling == spelling
    assert m.to_bytes() == first
    assert m.clone().spelling == spelling
    assert m.clone(method="json").to_bytes() == first


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.stem)
def test_converting_and_converting_back_gives_the_original_bytes(path: Path) -> None:
    m = Module.from_json(path.read_bytes())
    original = m.to_bytes()
    there = Module.from_json(m.to_bytes(spelling="compiler"))
    assert there.to_bytes(spelling="lncsplit") == original
    back = Module.from_json(there.to_bytes(spelling="lncsplit"))
    assert back.to_bytes(spelling="compiler") == there.to_bytes()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(1, 300),
    lnc=st.sampled_from([2, 4]),
    spelling=st.sampled_from(SPELLINGS),
)
def test_load_write_in_either_spelling_load_keeps_the_meaning(
    seed: int, n: int, lnc: int, spelling: str
) -> None:
    m = generate_module(seed, n, lnc)
    text = m.to_json(spelling=spelling)  # type: ignore[arg-type]
    back = Module.from_json(text)
    assert back.spelling == spelling
    assert back.to_bytes(spelling="lncsplit") == m.to_bytes()
    assert back.to_json() == text
    # The split of either is the same split.
    a = [c.to_bytes() for c in lncsplit.split([m.clone()], lnc)]
    b = [c.to_bytes(spelling="lncsplit") for c in lncsplit.split([back], lnc)]
    assert a == b


def test_to_json_refuses_an_unknown_spelling() -> None:
    m = Module.from_json(example_paths()[0].read_bytes())
    with pytest.raises(ValueError, match="lncsplit.*compiler"):
        m.to_json(spelling="klr")  # type: ignore[arg-type]


def test_dump_writes_the_spelling_asked_for(tmp_path: Path) -> None:
    m = Module.from_json(example_paths()[0].read_bytes())
    lncsplit.dump(m, tmp_path / "c.json", spelling="compiler")
    lncsplit.dump(m, tmp_path / "l.json")
    assert lncsplit.load(tmp_path / "c.json").spelling == "compiler"
    assert (tmp_path / "c.json").read_bytes() == m.to_bytes(spelling="compiler")
    assert (tmp_path / "l.json").read_bytes() == m.to_bytes()


# ------------------------------------------------------------- errors


def _core(**function: Any) -> dict[str, Any]:
    return {"version": 2, "name": "m", "functions": [{"name": "main", **function}]}


def test_a_function_with_neither_blocks_key_is_an_error_at_that_function() -> None:
    with pytest.raises(BirJsonError, match='neither "basic_blocks".*"blocks"') as e:
        Module.from_json(_core(allocations=[]))
    assert e.value.path == "$.functions[0]"


def test_mixed_spellings_are_an_error_naming_both_paths() -> None:
    doc = _core(
        allocations=[
            {"name": "a", "dtype": "float32", "tensor_shape": [1, 1], "memorylocations": []},
            {"name": "b", "dtype": "float32", "tensor_shape": [1, 1], "locations": []},
        ],
        blocks=[],
    )
    with pytest.raises(BirJsonError, match="mixed spellings") as e:
        Module.from_json(doc)
    assert e.value.path == "$.functions[0].allocations[1].locations"
    assert "$.functions[0].allocations[0].memorylocations" in str(e.value)


def test_a_module_without_name_reads_as_empty_and_stays_without_it() -> None:
    doc = json.loads(example_paths()[0].read_text())
    del doc["name"]
    m = Module.from_json(compiler_twin(doc))
    assert m.name == ""
    assert "name" not in json.loads(m.to_json())
    with pytest.raises(BirJsonError, match='missing required key "name"'):
        Module.from_json(doc)  # lncsplit's spelling requires it


SCHEDULED = "compiler/scheduled/nc00/sg00/bir_debug.sg0000.after-lower_sync.before-lower_act.json"


def test_repeated_names_are_read_in_the_compiler_spelling_and_refused_where_names_must_be_unique() -> (
    None
):
    m = lncsplit.load(examples_dir() / SCHEDULED)
    assert m.spelling == "compiler"
    assert _instruction_names(m).count("barrier") == 2
    with pytest.raises(NeuronAssertion) as e:
        m.to_bytes(spelling="lncsplit")  # lncsplit's spelling has unique names
    assert e.value.code == 9010 and "barrier" in str(e.value)
    doc = json.loads(m.to_json())
    del doc["attributes"]["neuron_core_id"]
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.split([Module.from_json(doc)], 2)
    assert e.value.code == 9010 and "positions" in str(e.value)


def test_the_scheduled_dump_round_trips_its_queues_and_sync_info() -> None:
    raw = (examples_dir() / SCHEDULED).read_bytes()
    m = Module.from_json(raw)
    assert m.functions[0].name == "sg0000"
    again = json.loads(m.to_json())
    original = json.loads(raw)
    assert again["queues"] == original["queues"]
    mm = [i for b in again["functions"][0]["blocks"] for i in b["instructions"]]
    assert (
        mm[2]["sync_info"] == original["functions"][0]["blocks"][0]["instructions"][2]["sync_info"]
    )
    assert Module.from_json(m.to_bytes()).to_bytes() == m.to_bytes()
