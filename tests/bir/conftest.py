"""Shared fixtures for the BIR module model tests."""

from __future__ import annotations

import copy
import os
import sys
from typing import Any

import pytest

# Let the test modules import the shared test data (pytest runs with
# --import-mode=importlib, which does not put test dirs on sys.path).
sys.path.insert(0, os.path.dirname(__file__))

from bir_testdata import small_module_dict  # noqa: E402


@pytest.fixture
def small() -> dict[str, Any]:
    return copy.deepcopy(small_module_dict())
