"""lncsplit.load / lncsplit.dump: file I/O, atomic writes."""

from __future__ import annotations

import errno
import json
import os
import pickle
from pathlib import Path
from typing import Literal

import lncsplit
import pytest
from bir_testdata import small_module_dict
from lncsplit import LncsplitError, Module
from lncsplit.errors import LncsplitIOError


def _m() -> Module:
    return Module.from_json(json.dumps(small_module_dict()))


def test_dump_then_load_round_trips(tmp_path: Path) -> None:
    m = _m()
    p = tmp_path / "m.json"
    lncsplit.dump(m, p)
    assert p.read_text() == m.to_json()
    assert lncsplit.load(p).to_json() == m.to_json()
    assert lncsplit.load(str(p)).to_json() == m.to_json()
    assert os.listdir(tmp_path) == ["m.json"]  # no temporary file left behind


def test_dump_overwrites_atomically(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_text("old")
    lncsplit.dump(_m(), p)
    assert json.loads(p.read_text())["name"] == "k_nc_symbolic"


def test_failing_dump_leaves_no_file(tmp_path: Path) -> None:
    m = _m()
    # v1 cannot express a Modulo over a non-affine ShardId term... use an
    # unwritable form: the CollectiveCompute rank ModuloKind numer is fine in
    # v1, but an IntRuntimeValue term is not.
    p = tmp_path / "m.json"
    with pytest.raises(LncsplitError):
        lncsplit.dump(m, p, version=1)
    assert os.listdir(tmp_path) == []
    p.write_text("keep me")
    with pytest.raises(LncsplitError):
        lncsplit.dump(m, p, version=1)
    assert p.read_text() == "keep me"
    assert os.listdir(tmp_path) == ["m.json"]


def test_dump_into_missing_directory_is_io_error(tmp_path: Path) -> None:
    p = tmp_path / "missing" / "m.json"
    with pytest.raises(LncsplitIOError) as ei:
        lncsplit.dump(_m(), p)
    assert str(tmp_path / "missing") in str(ei.value)
    assert isinstance(ei.value, OSError)
    assert not (tmp_path / "missing").exists()


def test_load_missing_file_is_io_error_naming_the_path(tmp_path: Path) -> None:
    p = tmp_path / "nope.json"
    with pytest.raises(LncsplitIOError) as ei:
        lncsplit.load(p)
    assert str(p) in str(ei.value)


def test_load_bad_file_is_bir_json_error(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('{"name": 1, "functions": []}')
    with pytest.raises(lncsplit.BirJsonError) as ei:
        lncsplit.load(p)
    assert ei.value.path == "$.name"


def test_to_bytes_equals_to_json_encoded() -> None:
    m = _m()
    assert m.to_bytes() == m.to_json().encode()
    assert m.to_bytes(version=2) == m.to_bytes()


def test_dump_into_missing_directory_names_that_directory(tmp_path: Path) -> None:
    # The error names the missing directory, not the temporary file the
    # atomic write would have created in it.
    missing = tmp_path / "missing"
    with pytest.raises(LncsplitIOError) as ei:
        lncsplit.dump(_m(), missing / "m.json")
    msg = str(ei.value)
    assert ei.value.filename == str(missing) and str(missing) in msg
    assert ".tmp" not in msg


def test_from_json_accepts_a_dict() -> None:
    d = small_module_dict()
    assert Module.from_json(d).to_json() == Module.from_json(json.dumps(d)).to_json()


def test_from_json_rejects_other_types_with_a_type_error() -> None:
    with pytest.raises(TypeError, match="str, bytes or dict"):
        Module.from_json(42)  # type: ignore[arg-type]


# -- I/O errors keep their kind: LncsplitIOError is also the matching OSError subclass -------------
def test_load_missing_file_is_file_not_found_with_errno(tmp_path: Path) -> None:
    p = tmp_path / "missing.json"
    with pytest.raises(FileNotFoundError) as ei:
        lncsplit.load(p)
    e = ei.value
    assert isinstance(e, LncsplitIOError) and isinstance(e, LncsplitError)
    assert e.errno == errno.ENOENT
    assert e.strerror == os.strerror(errno.ENOENT)
    assert e.filename == str(p)
    assert str(e) == f"[Errno {errno.ENOENT}] {os.strerror(errno.ENOENT)}: {str(p)!r}"


def test_load_relative_missing_file_names_it_as_given(tmp_path: Path) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(FileNotFoundError) as ei:
            lncsplit.load("missing.json")
    finally:
        os.chdir(cwd)
    assert ei.value.errno == errno.ENOENT and ei.value.filename == "missing.json"


def test_load_a_directory_is_is_a_directory_error(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError) as ei:
        lncsplit.load(tmp_path)
    assert isinstance(ei.value, LncsplitIOError) and ei.value.errno == errno.EISDIR


def test_dump_into_missing_directory_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as ei:
        lncsplit.dump(_m(), tmp_path / "missing" / "m.json")
    assert isinstance(ei.value, LncsplitIOError) and ei.value.errno == errno.ENOENT


def test_io_error_pickles_with_its_kind(tmp_path: Path) -> None:
    with pytest.raises(LncsplitIOError) as ei:
        lncsplit.load(tmp_path / "nope.json")
    again = pickle.loads(pickle.dumps(ei.value))
    assert type(again) is type(ei.value) and isinstance(again, FileNotFoundError)
    assert (again.errno, again.filename) == (ei.value.errno, ei.value.filename)


def test_io_error_without_errno_is_plain_lncsplit_io_error() -> None:
    e = LncsplitIOError("m.json: not a file path")
    assert type(e) is LncsplitIOError and e.errno is None and str(e) == "m.json: not a file path"
    assert not isinstance(e, FileNotFoundError)
    with pytest.raises(LncsplitIOError, match="not a file path"):
        lncsplit.dump(_m(), "/")


# -- one write policy (house §5.3): lncsplit.dump streams through _atomic's temporary and rename ---
def test_dump_sweeps_a_dead_writers_temporary_as_every_lncsplit_write_does(tmp_path: Path) -> None:
    # A temporary in _atomic's naming, left by a process that no longer exists.
    from lncsplit import _atomic

    stale = tmp_path / os.path.basename(_atomic.tmp_name(str(tmp_path / "m.json"))).replace(
        f".{os.getpid()}@", ".999999999@"
    )
    stale.write_text("half a module")
    lncsplit.dump(_m(), tmp_path / "m.json")
    assert sorted(os.listdir(tmp_path)) == ["m.json"]


def test_dump_streams_into_a_temporary_never_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lncsplit import _atomic, _core

    seen: list[tuple[str, str, bool]] = []
    real = _core.write_module_file

    def spy(
        module: Module,
        tmp: str,
        target: str,
        version: int = 2,
        fsync: bool = True,
        spelling: Literal["lncsplit", "compiler"] | None = None,
    ) -> None:
        seen.append((os.path.basename(tmp), os.path.basename(target), fsync))
        assert not (tmp_path / "m.json").exists()  # the target appears only by the rename
        real(module, tmp, target, version, fsync, spelling)

    monkeypatch.setattr(_core, "write_module_file", spy)
    lncsplit.dump(_m(), tmp_path / "m.json")
    ((tmp, target, fsync),) = seen
    assert tmp.startswith(".m.json.") and tmp.endswith(".tmp") and target == "m.json"
    assert fsync  # lncsplit.dump is durable, as documented
    assert _atomic.tmp_name("m.json").endswith(".tmp")
    assert os.listdir(tmp_path) == ["m.json"]
