"""pytest-benchmark suite for the BIR module model (not part of the normal run).

    maturin develop --release
    pytest benches/test_bench_bir.py --benchmark-enable --benchmark-group-by=group

Each group puts lncsplit next to the Python baseline on the same generated
module (``BIR_BENCH_MB`` MB of BIR-JSON, default 50).
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import orjson
import pytest
from lncsplit import Module
from lncsplit._core import generate_module

SIZE_MB = float(os.environ.get("BIR_BENCH_MB", "50"))
BYTES_PER_INSTRUCTION = 640


@pytest.fixture(scope="module")
def module() -> Module:
    return generate_module(1, max(1000, int(SIZE_MB * 1e6 / BYTES_PER_INSTRUCTION)), 2)


@pytest.fixture(scope="module")
def data(module: Module) -> bytes:
    return module.to_bytes()


@pytest.fixture(scope="module")
def as_dicts(data: bytes) -> Any:
    return orjson.loads(data)


def _run(benchmark: Any, fn: Any, rounds: int = 3) -> None:
    benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=0)


@pytest.mark.benchmark(group="load")
def test_load_lncsplit(benchmark: Any, data: bytes) -> None:
    _run(benchmark, lambda: Module.from_json(data))


@pytest.mark.benchmark(group="load")
def test_load_orjson(benchmark: Any, data: bytes) -> None:
    _run(benchmark, lambda: orjson.loads(data))


@pytest.mark.benchmark(group="load")
def test_load_json(benchmark: Any, data: bytes) -> None:
    text = data.decode()
    _run(benchmark, lambda: json.loads(text), rounds=2)


@pytest.mark.benchmark(group="dump")
def test_dump_lncsplit(benchmark: Any, module: Module) -> None:
    _run(benchmark, module.to_json)


@pytest.mark.benchmark(group="dump")
def test_dump_orjson(benchmark: Any, as_dicts: Any) -> None:
    _run(benchmark, lambda: orjson.dumps(as_dicts))


@pytest.mark.benchmark(group="clone")
def test_clone_structural(benchmark: Any, module: Module) -> None:
    _run(benchmark, module.clone, rounds=5)


@pytest.mark.benchmark(group="clone")
def test_clone_json(benchmark: Any, module: Module) -> None:
    _run(benchmark, lambda: module.clone("json"))


@pytest.mark.benchmark(group="clone")
def test_clone_orjson_round_trip(benchmark: Any, as_dicts: Any) -> None:
    _run(benchmark, lambda: orjson.loads(orjson.dumps(as_dicts)), rounds=2)


@pytest.mark.benchmark(group="clone")
def test_clone_deepcopy(benchmark: Any, as_dicts: Any) -> None:
    _run(benchmark, lambda: copy.deepcopy(as_dicts), rounds=1)
