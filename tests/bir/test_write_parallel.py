"""The parallel writers give the bytes of the sequential one (issue 17).

``to_json``/``to_bytes`` write a function with many instructions in parallel
runs across its blocks; ``_core.to_bytes_all`` writes the N cores of a split
at once (``lncsplit split`` uses it). ``lncsplit.dump`` streams the module
through the sequential writer: the reference here.
"""

from __future__ import annotations

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


def test_no_modules_write_no_bytes() -> None:
    assert _core.to_bytes_all([]) == []
