"""The parallel writers give the bytes of the sequential one (issue 17).

``to_json``/``to_bytes`` write a function with many instructions in parallel
runs across its blocks; ``_core.to_bytes_all`` writes the N cores of a split
at once (``lncsplit split`` uses it). ``lncsplit.dump`` streams the module
through the sequential writer: the reference here.
"""

from __future__ import annotations

import json
import os
import tempfile

import lncsplit
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import _core
from lncsplit._core import generate_module

#: Top-level instructions of a function from which to_json writes in parallel
#: (``PAR_BLOCK`` in rust/src/bir/dump/mod.rs).
PAR_BLOCK = 16384


def _streamed(m: lncsplit.Module) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.json")
        lncsplit.dump(m, path)
        with open(path, "rb") as f:
            return f.read()


def test_a_big_function_written_in_parallel_runs_has_the_sequential_bytes() -> None:
    m = generate_module(3, 40000, 2)
    top = max(len(b.instructions) for f in m.functions for b in f.blocks)
    assert top >= PAR_BLOCK  # the parallel path is the one under test
    ref = _streamed(m)
    assert m.to_bytes() == ref
    assert m.to_json() == ref.decode()


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(1, 500),
    lnc=st.sampled_from([2, 3, 4]),
    parallel=st.booleans(),
)
def test_the_cores_written_at_once_equal_each_core_written_alone(
    seed: int, n: int, lnc: int, parallel: bool
) -> None:
    cores = lncsplit.split([generate_module(seed, n, lnc)], lnc)
    alone = [_streamed(c) for c in cores]
    assert _core.to_bytes_all(cores, 2, parallel) == alone
    assert _core.to_bytes_all(cores, version=2, parallel=not parallel) == alone
    buffers = _core.to_buffers_all(cores, 2, parallel)
    assert [bytes(b) for b in buffers] == alone
    assert [len(b) for b in buffers] == [len(a) for a in alone]


def test_no_modules_write_no_bytes() -> None:
    assert _core.to_bytes_all([]) == []
    assert _core.to_buffers_all([]) == []


def test_an_output_buffer_is_read_only_bytes_and_outlives_its_views() -> None:
    big = generate_module(3, 40000, 2)  # written in several chunks, joined once
    (buf,) = _core.to_buffers_all([big])
    view = memoryview(buf)
    assert view.readonly and view.format == "B" and view.nbytes == len(buf)
    try:
        view[0:1] = b"x"
    except TypeError:
        pass
    else:  # pragma: no cover - the failure under test
        raise AssertionError("an OutputBuffer must not be writable")
    del buf  # the view keeps the object alive
    assert view.tobytes() == big.to_bytes()
    with tempfile.TemporaryFile() as f:
        os.write(f.fileno(), view)
        f.seek(0)
        assert f.read() == big.to_bytes()


def _renamed(m: lncsplit.Module, name: str) -> lncsplit.Module:
    d = json.loads(m.to_json())
    d["name"] = name
    return lncsplit.Module.from_json(json.dumps(d, ensure_ascii=False))


def test_a_non_ascii_module_is_written_as_the_same_text_and_utf8_bytes() -> None:
    m = _renamed(generate_module(5, 40000, 2), "ядро-é-核")
    ref = _streamed(m)
    assert "ядро-é-核".encode() in ref
    assert m.to_bytes() == ref
    text = m.to_json()
    assert text == ref.decode()
    assert not text.isascii()
    assert json.loads(text)["name"] == "ядро-é-核"


def test_the_written_str_is_an_ordinary_ascii_str() -> None:
    m = generate_module(6, 40000, 2)
    text = m.to_json()
    assert text.isascii()
    assert len(text) == len(m.to_bytes())
    assert hash(text) == hash(text.encode().decode())
    assert text.encode() == m.to_bytes()
    assert text[-1] == "}" and text[0] == "{"


def test_a_small_module_is_written_as_str_and_bytes() -> None:
    m = generate_module(7, 1, 2)
    assert m.to_json().encode() == m.to_bytes() == _streamed(m)
