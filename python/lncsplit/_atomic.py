"""Where and how lncsplit writes: atomic files, confined paths, locked output directories.

Every file lncsplit writes for a command (the per-core modules of a split,
the ``--report`` JSON, a ``--plot``…) goes through here, so that (contract
§5, §6):

- **a failed or killed run leaves whole files or none**: a file is written
  under a hidden temporary name (``.<name>.<pid>@<host>.<thread>.<n>.tmp``),
  then renamed into place (and fsynced first when :func:`durable`: see there). A temporary left by a killed process is
  removed the next time lncsplit writes into that directory
  (:func:`sweep_stale_temps`: only temporaries of processes of this host that
  no longer exist, so a concurrent run's are left alone);
- **two runs into one directory do not interleave**: a unit's directory is
  updated under an exclusive ``flock`` on the directory itself
  (:func:`locked_dir`), so a set of core files is always one run's;
- **nothing is created outside the output root**: a path taken from module
  content (an ``artifact_path``) is resolved under the root
  (:func:`resolve_under`: relative under it, absolute re-rooted, a ``..`` that
  leaves it or a symbolic link that leads out of it refused);
- **output options are checked before any work** (:func:`prepare_output_dir`,
  :func:`check_output_file`): a ``--out`` that is a file or cannot be written,
  a ``--report`` in a missing directory.

A leaf module: it imports nothing of lncsplit but, inside
:func:`write_module_atomic`, the compiled writer and the error classes.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from lncsplit._core import Module

_CORE_FILE = re.compile(r"^nc(\d{2,})\.json$")
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:63]
# .<base>.<pid>@<host>.<thread>.<n>.tmp (and the host-less form older versions wrote)
_TMP = re.compile(
    r"^\.(?P<base>.+?)\.(?P<pid>\d+)(?:@(?P<host>[A-Za-z0-9-]*))?\.(?:\d+\.)?\d+\.tmp$"
)

#: The linked module ``split --link`` writes beside a split output's core files.
LINKED_FILE = "linked.json"

_tmp_counter = itertools.count()
_tmp_lock = threading.Lock()


class OutputPathError(ValueError):
    """An output path that cannot be used: a usage error, found before any work."""


class PathEscapeError(ValueError):
    """A path from module content that would leave its output root."""


# ----------------------------------------------------------------------------- names


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
    """A hidden, unique temporary name beside ``final`` (discovery skips hidden files).

    It carries the writer's pid and host, so :func:`sweep_stale_temps` can
    tell a dead process's leftover from a live writer's file.
    """
    with _tmp_lock:
        n = next(_tmp_counter)
    d, base = os.path.split(final)
    name = f".{base}.{os.getpid()}@{_HOST}.{threading.get_ident()}.{n}.tmp"
    return os.path.join(d, name)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, someone else's
        return True
    return True


def sweep_stale_temps(dirpath: str, base: str | None = None) -> list[str]:
    """Remove the temporaries a killed lncsplit process left in ``dirpath``.

    Only names :func:`tmp_name` makes, of this host, whose process no longer
    exists (and, with ``base``, only those of that final name). Returns the
    paths removed.
    """
    return _sweep_names(dirpath, _listdir(dirpath), base)


def _listdir(dirpath: str) -> list[str]:
    try:
        return os.listdir(dirpath)
    except OSError:
        return []


def _sweep_names(dirpath: str, names: Sequence[str], base: str | None = None) -> list[str]:
    """:func:`sweep_stale_temps` over ``names``, a listing of ``dirpath``."""
    removed = []
    for name in names:
        if not name.startswith("."):
            continue  # every temporary is hidden: most names stop here
        m = _TMP.match(name)
        if m is None or (base is not None and m.group("base") != base):
            continue
        if m.group("host") not in (None, _HOST) or _pid_alive(int(m.group("pid"))):
            continue
        path = os.path.join(dirpath, name)
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed.append(path)
    return removed


# ----------------------------------------------------------------------------- writing

#: The environment variable behind :func:`durable` (``--fsync`` sets it).
FSYNC_ENV = "LNCSPLIT_FSYNC"


def durable() -> bool:
    """Whether writes are made durable: files fsynced before their rename, the directory
    after it.

    Off by default. Atomicity does not need it: a killed process (SIGKILL, Ctrl-C) leaves
    its written bytes in the page cache, so the temporary + rename already gives whole
    files or none, and a rerun sweeps the temporaries. fsync adds durability against a
    power loss or an OS crash, which compiler outputs (regenerable) rarely need, and it
    cost a third of a corpus split's time (three fsyncs per file, measured). ``--fsync``
    or ``LNCSPLIT_FSYNC=1`` turns it on; the variable reaches worker processes, and the
    Dask executor passes it to its tasks.
    """
    return bool(_thread.fsync) or os.environ.get(FSYNC_ENV, "") not in ("", "0")


def set_durable(on: bool = True) -> None:
    """Turn :func:`durable` on or off for this process and the workers it starts."""
    if on:
        os.environ[FSYNC_ENV] = "1"
    else:
        os.environ.pop(FSYNC_ENV, None)


class _ThreadDurability(threading.local):
    fsync = False


#: A per-thread request for durable writes (a Dask task of a ``--fsync`` run), so
#: that concurrent tasks of other runs on the same worker are not affected.
_thread = _ThreadDurability()


@contextlib.contextmanager
def durable_in_this_thread(on: bool) -> Iterator[None]:
    """Within the block, this thread's writes are durable when ``on`` (or when the
    process asks for it anyway)."""
    before = _thread.fsync
    _thread.fsync = on
    try:
        yield
    finally:
        _thread.fsync = before


def fsync_dir(path: str, durable_now: bool | None = None) -> None:
    """fsync a directory so the renames in it are durable (best effort; only when
    :func:`durable`, or ``durable_now`` when the caller asked already)."""
    if not (durable() if durable_now is None else durable_now):
        return
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


def write_fsync(path: str, data: bytes | memoryview, durable_now: bool | None = None) -> None:
    """Create ``path`` (it must not exist), write ``data`` whole, and fsync it when
    :func:`durable` (or ``durable_now``, when the caller asked already)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if durable() if durable_now is None else durable_now:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    The directory must exist. Stale temporaries of this name (a killed
    writer's) are removed first.
    """
    final = os.fspath(path)
    d, base = os.path.split(final)
    sweep_stale_temps(d or ".", base)
    tmp = tmp_name(final)
    try:
        write_fsync(tmp, data)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_module_atomic(
    module: Module,
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    version: int = 2,
    *,
    durable_now: bool | None = True,
    spelling: Literal["lncsplit", "compiler"] | None = None,
) -> None:
    """``lncsplit.dump``: write ``module`` to ``path`` through the one write policy.

    ``spelling`` (contract §1.7): the key names to write, lncsplit's dialect or the
    compiler's own; None writes the spelling the module was read in.

    The same temporary name and rename as every other file lncsplit writes
    (:func:`tmp_name`, stale temporaries of this name swept first), but the
    module is *streamed* into the temporary by the Rust writer in ~1 MB
    chunks (``_core.write_module_file``, the GIL released), never materialized
    whole. Durable by default (the file fsynced, then its directory), as
    ``lncsplit.dump`` has always been: a caller saving one module expects it
    on disk; ``durable_now=None`` follows :func:`durable` instead (``lncsplit
    gen``'s corpus, like every CLI output, fsyncs only on request). Errors
    are :class:`~lncsplit.errors.LncsplitIOError` with the ``errno`` and the
    matching ``OSError`` subclass, naming the target (or its missing
    directory), never the temporary; a failed write leaves no file. ``path``
    is a ``str``, ``bytes`` or ``os.PathLike``, as for ``lncsplit.load``.
    """
    from lncsplit._core import write_module_file
    from lncsplit._inputs import path_arg
    from lncsplit.errors import LncsplitIOError

    final = path_arg(path)
    d, base = os.path.split(final)
    if not base:
        raise LncsplitIOError(f"{final}: not a file path")
    sweep_stale_temps(d or ".", base)
    tmp = tmp_name(final)
    try:
        sync = durable() if durable_now is None else durable_now
        write_module_file(module, tmp, final, version, sync, spelling)
        try:
            os.replace(tmp, final)
        except OSError as e:
            raise LncsplitIOError(e.errno, e.strerror, final) from None
        fsync_dir(d or ".", sync)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_files_atomic(blobs: Mapping[str, bytes | memoryview | FileWriter]) -> list[str]:
    """Write several files of one unit (``linked.json`` and its ``tensor-map.json``…), all
    or nothing: their directories are made, locked (:func:`locked_dir`) and swept of a
    dead writer's temporaries of these names; every file goes to a temporary first, then
    all are renamed. On failure nothing of this call remains. The caller names the paths
    (from input paths and output options only, contract §6). A blob is the file's bytes or
    a :data:`FileWriter` (as for :func:`write_core_files`). Returns the paths."""
    dirs = sorted({os.path.dirname(f) or "." for f in blobs})
    with contextlib.ExitStack() as stack:
        for d in dirs:  # sorted: two writers lock in the same order
            stack.enter_context(locked_dir(d))
        for final in blobs:
            d, base = os.path.split(final)
            sweep_stale_temps(d or ".", base)
        temps: dict[str, str] = {}
        renamed: list[str] = []
        try:
            fsync = durable()
            for final, data in blobs.items():
                temps[final] = tmp_name(final)
                if callable(data):
                    data(temps[final], final, fsync)
                else:
                    write_fsync(temps[final], data, fsync)
            for final, tmp in temps.items():
                os.replace(tmp, final)
                renamed.append(final)
            for d in dirs:
                fsync_dir(d, fsync)
        except BaseException:
            for path in [*temps.values(), *renamed]:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
    return list(blobs)


def _core_files(dirpath: str, names: Sequence[str] | None = None) -> list[str]:
    """The outputs of a split in ``dirpath`` (or among ``names``, a listing of it):
    its core files and ``linked.json``."""
    if names is None:
        names = _listdir(dirpath)
    return [os.path.join(dirpath, n) for n in names if _CORE_FILE.match(n) or n == LINKED_FILE]


FileWriter = Callable[[str, str, bool], None]
"""``writer(tmp, final, fsync)``: streams one file's content into the new file ``tmp``
(``final`` names it in errors; ``fsync``: make it durable) — for content too big to hold."""


def write_core_files(
    out_dir: str,
    blobs: Sequence[bytes | memoryview | FileWriter],
    extra: Mapping[str, bytes | memoryview] | None = None,
) -> list[str]:
    """Write ``blobs[c]`` to ``out_dir/ncCC.json`` for every core, all or nothing.

    A blob is the file's bytes, or a :data:`FileWriter` that streams them into the
    temporary (the split of a big module: each core written, then freed).

    Under the directory's lock (:func:`locked_dir`): stale temporaries are
    swept, every core is written to a temporary file (fsynced when
    :func:`durable`) before any is renamed into place; on failure everything written is removed, with
    the core files of earlier runs (see :func:`remove_outputs`), and the
    error re-raised. Core files of an earlier run beyond ``len(blobs)`` are
    removed on success, so the directory holds exactly this run's cores.
    ``extra`` (``{"linked.json": bytes}`` for ``split --link``) is written in
    the same step; a ``linked.json`` of an earlier run not rewritten is removed.
    """
    extra = extra or {}
    finals = [os.path.join(out_dir, core_file_name(c)) for c in range(len(blobs))]
    finals += [os.path.join(out_dir, name) for name in extra]
    datas = [*blobs, *extra.values()]
    fsync = durable()
    with locked_dir(out_dir):
        # One listing, taken under the lock, serves the sweep and the removal
        # of an earlier run's extra cores: only lncsplit writes these names,
        # and every lncsplit writer of this directory waits for the lock.
        names = _listdir(out_dir)
        _sweep_names(out_dir, names)
        temps: list[str] = []
        try:
            for final, data in zip(finals, datas, strict=True):
                tmp = tmp_name(final)
                temps.append(tmp)
                if callable(data):
                    data(tmp, final, fsync)
                else:
                    write_fsync(tmp, data, fsync)
            for tmp, final in zip(temps, finals, strict=True):
                os.replace(tmp, final)
            keep = set(finals)
            for stale in _core_files(out_dir, names):
                if stale not in keep:
                    os.unlink(stale)
            fsync_dir(out_dir, fsync)
        except BaseException:
            for p in temps:
                with contextlib.suppress(OSError):
                    os.unlink(p)
            _remove_outputs_locked(out_dir)
            raise
    return finals


def remove_outputs(out_dir: str) -> None:
    """Remove every ``ncNN.json`` (and ``linked.json``) of ``out_dir`` (and
    stale temporaries), then the directory if it is empty. Takes the
    directory's lock; a missing directory is left missing."""
    with locked_dir(out_dir, create=False) as held:
        if held:
            sweep_stale_temps(out_dir)
            _remove_outputs_locked(out_dir)


def _remove_outputs_locked(out_dir: str) -> None:
    for stale in _core_files(out_dir):
        with contextlib.suppress(OSError):
            os.unlink(stale)
    with contextlib.suppress(OSError):
        os.rmdir(out_dir)


# ----------------------------------------------------------------------------- directories


def make_dirs(path: str) -> list[str]:
    """``mkdir -p path``; returns the directories this call created, outermost first.

    Raises :class:`NotADirectoryError` when ``path`` or an ancestor exists
    and is not a directory, and the ``OSError`` of a failed ``mkdir``.
    """
    missing: list[str] = []
    p = path
    while p and not os.path.isdir(p):
        if os.path.lexists(p) and not os.path.isdir(p):
            raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", p)
        missing.append(p)
        parent = os.path.dirname(p.rstrip("/"))
        if parent == p:
            break
        p = parent
    created: list[str] = []
    try:
        for d in reversed(missing):
            try:
                os.mkdir(d)
            except FileExistsError:
                if not os.path.isdir(d):
                    raise NotADirectoryError(
                        errno.ENOTDIR, "exists and is not a directory", d
                    ) from None
                continue  # a concurrent run made it
            created.append(d)
    except BaseException:
        remove_dirs(created)
        raise
    return created


def remove_dirs(created: Sequence[str]) -> None:
    """Remove directories :func:`make_dirs` created, innermost first, if still empty."""
    for d in reversed(created):
        with contextlib.suppress(OSError):
            os.rmdir(d)


@contextlib.contextmanager
def locked_dir(path: str, *, create: bool = True) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on directory ``path`` (made when missing and ``create``).

    Yields True while the lock is held on the directory that is at ``path``
    (re-checked after waiting: a directory removed or replaced meanwhile is
    retried), False when there is no directory and ``create`` is off. Where
    the filesystem has no ``flock`` the body runs unlocked.
    """
    import fcntl

    while True:
        if create:
            make_dirs(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            if create:
                continue  # removed between make_dirs and open: again
            yield False
            return
        try:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_dir(fd, path):
                yield True
                return
        finally:
            os.close(fd)  # closing releases the lock


def _same_dir(fd: int, path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    fst = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)


# ----------------------------------------------------------------------------- confinement


def resolve_under(root: str, path: str) -> str:
    """``path`` (from module content) as a path under ``root``.

    Relative paths go under ``root``, absolute ones are re-rooted there
    (``/a/b`` → ``root/a/b``); ``.`` and empty components are dropped; a
    ``..`` that would leave ``root``, a NUL byte, a component named like a
    core file (``nc00.json``, which would collide with a split's outputs),
    or an existing symbolic link on the way that leads out of ``root`` is a
    :class:`PathEscapeError`. Nothing is created.
    """
    if "\0" in path:
        raise PathEscapeError(f"{path!r} contains a NUL byte")
    parts: list[str] = []
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                raise PathEscapeError(f"{path!r} leaves {root} (a '..' above it)")
            parts.pop()
        elif core_index(comp) is not None:
            raise PathEscapeError(f"{path!r} names a core file ({comp}) as a directory")
        else:
            parts.append(comp)
    target = os.path.join(root, *parts)
    real_root = os.path.realpath(root)
    if not is_within(os.path.realpath(target), real_root):
        raise PathEscapeError(f"{path!r} leads out of {root} through a symbolic link")
    return target


def is_within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it (both already normalized)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def prepare_output_dir(path: str, *, create: bool = True) -> None:
    """Create the output root (``mkdir -p``) and check that files can be written in it.

    Raises :class:`OutputPathError` (one line, naming the path) when it is a
    file, cannot be created, or cannot be written — before any work starts.
    With ``create=False`` nothing is made: a missing directory's nearest
    existing ancestor must be a writable directory (it is made when written).
    """
    if os.path.lexists(path) and not os.path.isdir(path):
        raise OutputPathError(f"{path} exists and is not a directory")
    if not create and not os.path.isdir(path):
        _check_creatable(path)
        return
    try:
        make_dirs(path)
    except OSError as e:
        raise OutputPathError(f"cannot create {path}: {e.strerror or e}") from e
    probe = tmp_name(os.path.join(path, ".lncsplit-probe"))
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise OutputPathError(f"cannot write in {path}: {e.strerror or e}") from e
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def _check_creatable(path: str) -> None:
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        p = os.path.dirname(p)
    if not os.path.isdir(p):
        raise OutputPathError(f"cannot create {path}: {p} is not a directory")
    if not os.access(p, os.W_OK):
        raise OutputPathError(f"cannot create {path}: {p} is not writable")


def check_output_file(path: str) -> None:
    """An output file named by an option (``--report``, ``--plot``…): its
    directory must exist and be writable, and it must not be a directory.

    Raises :class:`OutputPathError` before any work starts; creates nothing.
    """
    d = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise OutputPathError(f"{path} is a directory")
    if not os.path.isdir(d):
        raise OutputPathError(f"{path}: directory {d} does not exist")
    if not os.access(d, os.W_OK):
        raise OutputPathError(f"{path}: directory {d} is not writable")


__all__ = [
    "LINKED_FILE",
    "OutputPathError",
    "PathEscapeError",
    "check_output_file",
    "core_file_name",
    "core_index",
    "FSYNC_ENV",
    "FileWriter",
    "durable",
    "durable_in_this_thread",
    "fsync_dir",
    "is_within",
    "locked_dir",
    "make_dirs",
    "prepare_output_dir",
    "remove_dirs",
    "remove_outputs",
    "resolve_under",
    "sweep_stale_temps",
    "tmp_name",
    "write_core_files",
    "write_file_atomic",
    "write_files_atomic",
    "set_durable",
    "write_fsync",
]
