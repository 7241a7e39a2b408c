"""pytest-benchmark suite for the split (not part of the normal run).

    pytest benches/test_bench_split.py --benchmark-enable --benchmark-group-by=group

Groups: ``split`` (lncsplit split into 2 and 8 cores, the structural clone it
is built from, and the pure-Python peer), ``pipeline`` (the whole pass
pipeline). Module size: ``SPLIT_BENCH_INSTRUCTIONS`` (default 200,000).
"""

from __future__ import annotations

import json
import os
from typing import Any

import lncsplit
import pytest
import python_peer
from lncsplit._core import generate_module

N = int(os.environ.get("SPLIT_BENCH_INSTRUCTIONS", "200000"))


@pytest.fixture(scope="module")
def base() -> lncsplit.Module:
    return generate_module(7, N, 8)


def _fresh(base: lncsplit.Module) -> tuple[tuple[list[lncsplit.Module]], dict[str, Any]]:
    return ([base.clone()],), {}


@pytest.mark.benchmark(group="split")
def test_structural_clone(benchmark: Any, base: lncsplit.Module) -> None:
    benchmark(base.clone)


@pytest.mark.benchmark(group="split")
@pytest.mark.parametrize("cores", [2, 8])
def test_split(benchmark: Any, base: lncsplit.Module, cores: int) -> None:
    benchmark.extra_info["instructions"] = N
    benchmark.pedantic(
        lambda mods: lncsplit.split(mods, cores), setup=lambda: _fresh(base), rounds=5
    )


@pytest.mark.benchmark(group="split")
def test_python_peer_split_2(benchmark: Any, base: lncsplit.Module) -> None:
    text = base.to_bytes()
    benchmark.pedantic(
        lambda d: python_peer.split_dicts(d, 2), setup=lambda: ((json.loads(text),), {}), rounds=1
    )


@pytest.mark.benchmark(group="pipeline")
def test_run_pipeline_2(benchmark: Any) -> None:
    m = generate_module(7, N // 4, 2)
    opts = lncsplit.PassOptions(lnc_size=2)
    benchmark.pedantic(
        lambda mods: lncsplit.run_pipeline(mods, opts), setup=lambda: _fresh(m), rounds=3
    )
