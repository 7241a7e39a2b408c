"""pytest-benchmark suite for lnc_barriercheck (not part of the normal run).

    pytest benches/test_bench_racecheck.py --benchmark-enable --benchmark-group-by=group

Group ``racecheck``: the split into 2 of the generated module and the race
check of its output, exact and interval. Module size:
``RACECHECK_BENCH_INSTRUCTIONS`` (default 200,000).
"""

from __future__ import annotations

import os
from typing import Any

import lncsplit
import pytest

# The size of `base` and `cores` (benches/conftest.py).
N = int(os.environ.get("RACECHECK_BENCH_INSTRUCTIONS", "200000"))


@pytest.mark.benchmark(group="racecheck")
def test_split_2(benchmark: Any, base: lncsplit.Module) -> None:
    benchmark.extra_info["instructions"] = N
    benchmark.pedantic(
        lambda mods: lncsplit.split(mods, 2), setup=lambda: (([base.clone()],), {}), rounds=5
    )


@pytest.mark.benchmark(group="racecheck")
@pytest.mark.parametrize("mode", ["exact", "interval"])
def test_racecheck(benchmark: Any, cores: list[lncsplit.Module], mode: str) -> None:
    benchmark.extra_info["instructions"] = N
    report = benchmark.pedantic(lambda: lncsplit.racecheck(cores, mode), rounds=5)  # type: ignore[arg-type]
    assert report.ok
