"""pytest-benchmark suite for the linker (not part of the normal run).

    pytest benches/test_bench_link.py --benchmark-enable --benchmark-group-by=group

Group ``link``: ``link`` and ``unlink`` of a module split into 2 cores, and the
structural clone of that module they are measured against. Module size:
``SPLIT_BENCH_INSTRUCTIONS`` (default 200,000).
"""

from __future__ import annotations

import os
from typing import Any

import lncsplit
import pytest

# The size of `base` and `cores` (benches/conftest.py).
N = int(os.environ.get("SPLIT_BENCH_INSTRUCTIONS", "200000"))


@pytest.mark.benchmark(group="link")
def test_structural_clone_of_the_module(benchmark: Any, base: lncsplit.Module) -> None:
    benchmark(base.clone)


@pytest.mark.benchmark(group="link")
def test_link_2_cores(benchmark: Any, cores: list[lncsplit.Module]) -> None:
    benchmark.extra_info["instructions"] = N
    benchmark(lambda: lncsplit.link(cores))


@pytest.mark.benchmark(group="link")
def test_unlink_2_cores(benchmark: Any, cores: list[lncsplit.Module]) -> None:
    linked = lncsplit.link(cores)
    benchmark(lambda: lncsplit.unlink(linked))
