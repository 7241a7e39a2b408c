"""pytest-benchmark suite for bulk corpus splitting (group "corpus", small corpus).

Run: ``pytest benches/test_bench_corpus.py --benchmark-enable --benchmark-only``
(release build). The full 200 MB comparison is ``python benches/bench_corpus.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lncsplit.corpus import process_files
from lncsplit.pipeline import PassOptions

orjson = pytest.importorskip("orjson")
pytest.importorskip("pytest_benchmark")

FILES = 8
INSTRUCTIONS = 1500


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from lncsplit import _core

    d = tmp_path_factory.mktemp("corpus")
    gen: Any = getattr(_core, "generate_corpus")  # noqa: B009
    gen(str(d), FILES, INSTRUCTIONS, 2, 3)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _split(src: Path, out: Path, jobs: int, executor: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    report = process_files([src], out, PassOptions(lnc_size=2), jobs=jobs, executor=executor)  # type: ignore[arg-type]
    assert report.ok


def _mb(src: Path) -> float:
    return sum(p.stat().st_size for p in src.glob("*.json")) / 1e6


@pytest.mark.benchmark(group="corpus")
@pytest.mark.parametrize("jobs", [1, 2])
def test_split_corpus_threads(
    benchmark: Any, small_corpus: Path, tmp_path: Path, jobs: int
) -> None:
    benchmark.extra_info["mb"] = _mb(small_corpus)
    benchmark.pedantic(
        _split, args=(small_corpus, tmp_path / "out", jobs, "thread"), rounds=3, iterations=1
    )


@pytest.mark.benchmark(group="corpus")
def test_split_corpus_processes_jobs2(benchmark: Any, small_corpus: Path, tmp_path: Path) -> None:
    benchmark.extra_info["mb"] = _mb(small_corpus)
    benchmark.pedantic(
        _split, args=(small_corpus, tmp_path / "out", 2, "process"), rounds=2, iterations=1
    )


@pytest.mark.benchmark(group="corpus")
def test_orjson_loads_dumps_baseline(benchmark: Any, small_corpus: Path) -> None:
    paths = sorted(small_corpus.glob("*.json"))
    benchmark.extra_info["mb"] = _mb(small_corpus)

    def run() -> None:
        for p in paths:
            orjson.dumps(orjson.loads(p.read_bytes()))

    benchmark.pedantic(run, rounds=3, iterations=1)
