"""How bulk commands read their inputs (issue 17, corpus I/O): a regular file
only, with one ``read`` into the thread's reused buffer, and the next unit's
file prefetched while this one is split."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from lncsplit import Module, _inputs
from lncsplit._inputs import InputError, load_input, prefetch, with_input
from lncsplit.corpus.executors.local import run_threads
from lncsplit.corpus.split_job import process_file
from lncsplit.corpus.unit import FileResult, Unit
from lncsplit.examples import example_paths


def small_module_dict() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(example_paths()[0]).read_bytes())
    return doc


def _write(path: Path, doc: dict[str, Any]) -> bytes:
    data = json.dumps(doc).encode()
    path.write_bytes(data)
    return data


def test_from_json_accepts_bytes_like_buffers() -> None:
    data = json.dumps(small_module_dict()).encode()
    want = Module.from_json(data).to_bytes()
    assert Module.from_json(bytearray(data)).to_bytes() == want
    assert Module.from_json(memoryview(data)).to_bytes() == want
    padded = bytearray(data + b"   junk")
    assert Module.from_json(memoryview(padded)[: len(data)]).to_bytes() == want


def test_a_regular_file_is_read_with_one_read_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _write(tmp_path / "m.json", small_module_dict())
    calls: list[int] = []
    real = os.readv

    def counting(fd: int, buffers: Any) -> int:
        calls.append(fd)
        return real(fd, buffers)

    monkeypatch.setattr(os, "readv", counting)
    module, size = with_input(str(tmp_path / "m.json"), Module.from_json)
    assert size == len(data) and len(calls) == 1
    assert module.to_bytes() == Module.from_json(data).to_bytes()


def test_the_read_buffer_is_reused_from_file_to_file(tmp_path: Path) -> None:
    big = small_module_dict()
    big["padding"] = "x" * 10_000
    _write(tmp_path / "big.json", big)
    small = _write(tmp_path / "small.json", small_module_dict())
    with_input(str(tmp_path / "big.json"), bytes)
    buf = _inputs._buffer.data
    # The small file's bytes are exactly its own, not the big one's tail.
    got, n = with_input(str(tmp_path / "small.json"), bytes)
    assert got == small and n == len(small)
    assert _inputs._buffer.data is buf


def test_a_file_that_grew_since_fstat_is_read_whole(tmp_path: Path) -> None:
    data = _write(tmp_path / "m.json", small_module_dict())
    fd = os.open(tmp_path / "m.json", os.O_RDONLY)
    try:
        buf = bytearray()
        # As if fstat had said the file was 10 bytes long.
        n = _inputs._read_into(fd, 10, buf)
    finally:
        os.close(fd)
    assert bytes(buf[:n]) == data


def test_a_file_too_big_for_the_reused_buffer_is_read_into_one_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _write(tmp_path / "m.json", small_module_dict())
    monkeypatch.setattr(_inputs, "KEEP_READ_BUFFER", 64)
    before = _inputs._buffer.data
    seen: list[type] = []

    def parse(b: memoryview | bytes) -> Module:
        seen.append(type(b))
        return Module.from_json(b)

    module, n = with_input(str(tmp_path / "m.json"), parse)
    assert seen == [bytes] and n == len(data)
    assert module.to_bytes() == Module.from_json(data).to_bytes()
    assert _inputs._buffer.data is before  # the reused buffer was not grown
    assert load_input(str(tmp_path / "m.json")).to_bytes() == module.to_bytes()


def test_a_big_file_that_grew_since_fstat_is_read_whole(tmp_path: Path) -> None:
    data = _write(tmp_path / "m.json", small_module_dict())
    fd = os.open(tmp_path / "m.json", os.O_RDONLY)
    try:
        got = _inputs._read_bytes(fd, 10)  # as if fstat had said 10 bytes
    finally:
        os.close(fd)
    assert got == data


def test_threads_each_read_into_their_own_buffer(tmp_path: Path) -> None:
    paths = [str(p) for p in example_paths()]
    want = {p: Module.from_json(Path(p).read_bytes()).to_bytes() for p in paths}
    got: dict[str, bytes] = {}
    errors: list[BaseException] = []

    def work(ps: list[str]) -> None:
        try:
            for _ in range(5):
                for p in ps:
                    got[p] = load_input(p).to_bytes()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(paths[k::2],)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and got == want


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    with pytest.raises(InputError, match="FIFO, not a regular file"):
        load_input(str(tmp_path / "pipe.json"))


def test_prefetch_never_raises_nor_blocks(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    prefetch(str(tmp_path / "pipe.json"))
    prefetch(str(tmp_path / "missing.json"))
    prefetch(str(tmp_path))


def test_the_thread_runner_prefetches_the_next_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    units = [Unit(str(tmp_path / f"m{i}.json"), f"m{i}") for i in range(4)]
    seen: list[str] = []
    monkeypatch.setattr("lncsplit.corpus.executors.local.prefetch", seen.append)
    results: dict[int, Any] = {}

    def job(unit: Unit) -> FileResult:
        return FileResult(input=unit.path)

    run_threads(units, job, 1, lambda i, r: results.__setitem__(i, r))
    assert seen == [u.path for u in units[1:]] and sorted(results) == [0, 1, 2, 3]
    seen.clear()
    run_threads(units, job, 2, lambda i, r: results.__setitem__(i, r))
    assert sorted(seen) == [u.path for u in units[2:]]


def test_from_json_parallel_false_reads_the_same_module_and_error() -> None:
    from lncsplit._core import generate_module

    big = generate_module(1, 6000, 2).to_bytes()  # arrays past the parallel threshold
    assert Module.from_json(big, parallel=False).to_bytes() == Module.from_json(big).to_bytes()
    bad = big[: len(big) // 2]
    with pytest.raises(Exception) as serial:
        Module.from_json(bad, parallel=False)
    with pytest.raises(Exception) as default:
        Module.from_json(bad)
    assert type(serial.value) is type(default.value)
    assert str(serial.value) == str(default.value)


@pytest.mark.parametrize("parallel", [True, False])
def test_a_split_on_one_core_reads_its_input_on_that_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool
) -> None:
    from lncsplit.pipeline import PassOptions

    _write(tmp_path / "m.json", small_module_dict())
    seen: list[bool] = []
    real = Module.from_json

    def spy(data: Any, parallel: bool = True) -> Module:
        seen.append(parallel)
        return real(data, parallel=parallel)

    monkeypatch.setattr(Module, "from_json", staticmethod(spy))
    res = process_file(
        str(tmp_path / "m.json"), tmp_path / "out", PassOptions(lnc_size=2, parallel=parallel)
    )
    assert res.ok, res.error
    assert seen == [parallel]
