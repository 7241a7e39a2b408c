"""Atomic output files: a temporary name, fsync, rename, and cleanup on failure.

Every file lncsplit writes for a command (the per-core modules of a split, the
``--report`` JSON) goes through here, so a failed or killed run leaves whole
files or none (contract §5, §6). A leaf module: it imports nothing of lncsplit.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from collections.abc import Sequence

_CORE_FILE = re.compile(r"^nc(\d{2,})\.json$")

_tmp_counter = itertools.count()
_tmp_lock = threading.Lock()


def core_file_name(core: int) -> str:
    """``nc00.json``, ``nc01.json``, … (two digits, more past 99)."""
    return f"nc{core:02d}.json"


def core_index(name: str) -> int | None:
    """The core of a canonical core file name (``nc01.json`` → 1), else None.

    Only the names :func:`core_file_name` writes count: ``nc1.json`` or
    ``nc001.json`` are ordinary module files.
    """
    m = _CORE_FILE.match(name)
    if m is None:
        return None
    core = int(m.group(1))
    return core if core_file_name(core) == name else None


def tmp_name(final: str) -> str:
    """A hidden, unique temporary name beside ``final`` (discovery skips hidden files)."""
    with _tmp_lock:
        n = next(_tmp_counter)
    d, base = os.path.split(final)
    return os.path.join(d, f".{base}.{os.getpid()}.{threading.get_ident()}.{n}.tmp")


def fsync_dir(path: str) -> None:
    """fsync a directory so the renames in it are durable (best effort)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_fsync(path: str, data: bytes) -> None:
    """Create ``path`` (it must not exist), write ``data`` whole and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    final = os.fspath(path)
    tmp = tmp_name(final)
    try:
        write_fsync(tmp, data)
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _core_files(dirpath: str) -> list[str]:
    try:
        names = os.listdir(dirpath)
    except OSError:
        return []
    return [os.path.join(dirpath, n) for n in names if _CORE_FILE.match(n)]


def write_core_files(out_dir: str, blobs: Sequence[bytes]) -> list[str]:
    """Write ``blobs[c]`` to ``out_dir/ncCC.json`` for every core, all or nothing.

    Every core is written to a temporary file and fsynced before any is
    renamed into place; on failure everything written is removed and the
    error re-raised. Core files of an earlier run beyond ``len(blobs)`` are
    removed on success, so the directory holds exactly this run's cores.
    """
    if not os.path.isdir(out_dir):
        os.makedirs(out_dir, exist_ok=True)
    finals = [os.path.join(out_dir, core_file_name(c)) for c in range(len(blobs))]
    temps: list[str] = []
    renamed: list[str] = []
    try:
        for final, data in zip(finals, blobs, strict=True):
            tmp = tmp_name(final)
            temps.append(tmp)
            write_fsync(tmp, data)
        for tmp, final in zip(temps, finals, strict=True):
            os.replace(tmp, final)
            renamed.append(final)
        keep = set(finals)
        for stale in _core_files(out_dir):
            if stale not in keep:
                os.unlink(stale)
        fsync_dir(out_dir)
    except BaseException:
        for p in temps + renamed:
            try:
                os.unlink(p)
            except OSError:
                pass
        remove_outputs(out_dir)
        raise
    return finals


def remove_outputs(out_dir: str) -> None:
    """Remove every ``ncNN.json`` of ``out_dir`` and the directory if then empty."""
    for stale in _core_files(out_dir):
        try:
            os.unlink(stale)
        except OSError:
            pass
    try:
        os.rmdir(out_dir)
    except OSError:
        pass


__all__ = [
    "core_file_name",
    "core_index",
    "fsync_dir",
    "remove_outputs",
    "tmp_name",
    "write_core_files",
    "write_fsync",
    "write_file_atomic",
]
