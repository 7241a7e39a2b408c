"""Benchmarks share the tests' reference implementations (``tests/python_peer.py``)."""

from __future__ import annotations

import os
import sys

_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
