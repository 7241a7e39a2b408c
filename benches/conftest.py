"""Benchmarks share the tests' reference implementations (``tests/python_peer.py``) and two
fixtures: ``base``, the generated module of the benchmark file's size ``N`` (seed 7, ShardId
bound 2), and ``cores``, that module split into 2 (a file may define its own ``base``)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import lncsplit

_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


@pytest.fixture(scope="module")
def base(request: pytest.FixtureRequest) -> lncsplit.Module:
    from lncsplit._core import generate_module

    return generate_module(7, request.module.N, 2)


@pytest.fixture(scope="module")
def cores(base: lncsplit.Module) -> list[lncsplit.Module]:
    import lncsplit

    return lncsplit.split([base.clone()], 2)
