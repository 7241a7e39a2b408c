"""pytest-benchmark suite of lncsplit.pelican (groups "intern", "eval_mask").

Not part of the normal test run::

    pytest benches/test_bench_pelican.py --benchmark-enable --benchmark-only
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")
sys.path.insert(0, os.path.dirname(__file__))

from bench_pelican_ratios import (  # noqa: E402
    _mask_workload,
    intern_rows,
    python_eval_mask_loop,
    python_intern,
)
from lncsplit.pelican import Context, eval_mask_batch  # noqa: E402

N = 200_000


@pytest.mark.benchmark(group="intern")
def test_intern_batch_rust(benchmark):  # type: ignore[no-untyped-def]
    ops, a, b, c = intern_rows(N)
    ids = benchmark(lambda: Context().intern_batch(ops, a, b, c))
    benchmark.extra_info["nodes"] = int(np.count_nonzero(ops))
    assert len(ids) == len(ops)


@pytest.mark.benchmark(group="intern")
def test_intern_python_dict(benchmark):  # type: ignore[no-untyped-def]
    ops, a, b, c = intern_rows(N)
    lists = (ops.tolist(), a.tolist(), b.tolist(), c.tolist())
    out = benchmark.pedantic(lambda: python_intern(*lists), rounds=3, iterations=1)
    assert len(out) == len(ops)


@pytest.mark.benchmark(group="eval_mask")
def test_eval_mask_batch_rust(benchmark):  # type: ignore[no-untyped-def]
    _, preds, _ = _mask_workload()
    cores = np.random.default_rng(0).integers(0, 4, N, dtype=np.int64)
    out = benchmark(lambda: eval_mask_batch(preds, cores, {"i": 3}))
    assert len(out) == N


@pytest.mark.benchmark(group="eval_mask")
def test_eval_mask_python_loop(benchmark):  # type: ignore[no-untyped-def]
    _, _, trees = _mask_workload()
    cores = np.random.default_rng(0).integers(0, 4, N, dtype=np.int64).tolist()
    out = benchmark.pedantic(
        lambda: python_eval_mask_loop(trees, cores, {"i": 3}), rounds=3, iterations=1
    )
    assert len(out) == N
