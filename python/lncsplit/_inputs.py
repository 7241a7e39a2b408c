"""Reading inputs: the bottom floor every command and the front end read through.

Each input is read as a regular file only (contract §6): opened non-blocking
and checked with ``fstat`` before a byte is read, so a FIFO or a device that
replaced a file after discovery is refused (:class:`InputError`) without
blocking. :func:`load_input` is how every command reads a module,
:func:`with_input` hands a file's bytes to a parser without a fresh copy per
file, :func:`read_input` returns them, and :func:`prefetch` asks the kernel
to start reading the next one. The naming rules of inputs live here too:
:func:`strip_json`, :func:`input_stem`, :data:`HLO_SUFFIXES` and **the input
rule** (contract §5): an explicitly named HLO file (:func:`is_hlo_input`) is
lowered first (:func:`lower_input`) wherever a module is expected —
:func:`load_input` applies it, so every command that reads a module through
it takes the same inputs.

A leaf module: it imports only :mod:`lncsplit.errors` (and, when it parses,
the compiled model; when it lowers HLO, :mod:`lncsplit.frontend`).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lncsplit.errors import LncsplitError

if TYPE_CHECKING:
    from lncsplit._core import Module
    from lncsplit.frontend.lowering import LoweredHlo

T = TypeVar("T")


class InputError(LncsplitError):
    """An input path that is not read (contract §6): missing, not a regular
    file (a FIFO, socket or device), larger than ``--max-file-size``, or a
    symbolic link that leads out of the inputs. The message names the path."""


def strip_json(name: str) -> str:
    """``m.json`` → ``m`` (case-insensitive); other names unchanged."""
    return name[:-5] if name.lower().endswith(".json") and len(name) > 5 else name


#: File names read as HLO text and lowered first (contract §5: explicitly named inputs only).
HLO_SUFFIXES = (".hlo.txt", ".hlo")

#: What the first line of a ``*.txt`` HLO file starts with (XLA's dumps are ``*.txt``).
HLO_HEADER = b"HloModule"


def input_stem(name: str) -> str:
    """The output name of an explicitly named input: ``m.json``, ``m.hlo``, ``m.hlo.txt`` → ``m``."""
    low = name.lower()
    for suffix in HLO_SUFFIXES:
        if low.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return strip_json(name)


def _open_regular(path: str) -> tuple[int, int]:
    """Open an input that must be a regular file: ``(fd, size)``, blocking reads.

    Opened non-blocking and checked with ``fstat`` before reading, so a FIFO
    or a device that replaced the file after discovery is refused without
    blocking (contract §6). The caller closes ``fd``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            # what reading a directory raises everywhere else (open(), read())
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(not_regular_message(path, st.st_mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_input(path: str) -> bytes:
    """The bytes of an input file, which must be a regular file (see :func:`_open_regular`)."""
    fd, _size = _open_regular(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


class _ReadBuffer(threading.local):
    """The calling thread's input buffer, reused from file to file: a corpus
    job reads each file with one ``read`` into memory already faulted in,
    instead of a fresh ``bytes`` object per file."""

    def __init__(self) -> None:
        # Runs once in every thread that touches the object.
        self.data = bytearray()


_buffer = _ReadBuffer()

#: Inputs of at least this size are read into one fresh ``bytes``, freed as soon as the
#: module is parsed; smaller ones into the thread's reused buffer, never grown past it. A
#: big module's bytes thus never stay in memory for the rest of its split (they were 1× the
#: file of the CLI's peak when the reused buffer kept them; docs/performance.md).
KEEP_READ_BUFFER = 8 << 20


def _read_into(fd: int, size: int, buf: bytearray) -> int:
    """Read the whole file into ``buf`` (grown as needed); returns its length.

    Asks for one byte more than ``size``: a regular file that did not change
    since ``fstat`` is read with one system call (the short count is its end).
    """
    n = 0
    want = size + 1
    while True:
        if len(buf) < n + want:
            buf.extend(bytes(n + want - len(buf)))
        with memoryview(buf) as view:
            got = os.readv(fd, [view[n : n + want]])
        n += got
        if got < want:
            return n
        want = max(want, 1 << 20)  # the file grew since fstat: read on


def _read_bytes(fd: int, size: int) -> bytes:
    """The whole file as one fresh ``bytes`` (asks for one byte more than
    ``size``, as :func:`_read_into` does; a file that grew is read on)."""
    parts = []
    want = size + 1
    while True:
        got = os.read(fd, want)
        parts.append(got)
        if len(got) < want:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        want = max(want, 1 << 20)


def with_input(path: str, fn: Callable[[memoryview | bytes], T]) -> tuple[T, int]:
    """``fn`` of an input file's bytes (a regular file only): ``(result, size)``.

    The bytes are a view into this thread's reused read buffer, valid only
    while ``fn`` runs (``Module.from_json`` copies what it keeps). A file
    too big for the reused buffer (:data:`KEEP_READ_BUFFER`) is read into
    one fresh ``bytes`` instead, which ``Module.from_json`` parses in place:
    one buffer the kernel fills, where the reused path would zero a fresh
    bytearray and then copy it into Rust (measured on a 100 MB module:
    ``lncsplit info`` 0.60 s → 0.48 s against ``lncsplit.load``'s 0.44 s).
    """
    fd, size = _open_regular(path)
    if size >= KEEP_READ_BUFFER:
        try:
            whole = _read_bytes(fd, size)
        finally:
            os.close(fd)
        return fn(whole), len(whole)
    buf = _buffer.data
    try:
        n = _read_into(fd, size, buf)
    finally:
        os.close(fd)
    try:
        with memoryview(buf) as view, view[:n] as data:
            return fn(data), n
    finally:
        if len(buf) > KEEP_READ_BUFFER:
            _buffer.data = bytearray()


def prefetch(path: str) -> None:
    """Ask the kernel to start reading ``path`` now (``POSIX_FADV_WILLNEED``):
    the runner calls it for the next unit while this one is split, so a file
    not yet in the page cache is read from disk in the background. Never
    raises, never blocks (a non-regular file is left alone)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:  # pragma: no cover - not Linux
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """``"a FIFO"``, ``"a socket"``, ``"a character device"``… for an ``st_mode``."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def not_regular_message(path: str, mode: int) -> str:
    """The error of an input that is not a regular file."""
    return f"{path} is {file_kind(mode)}, not a regular file: not read"


def is_hlo_input(path: str | os.PathLike[str]) -> bool:
    """The input rule (contract §5): whether an input named explicitly is HLO text, lowered
    first wherever a module is expected — ``*.hlo`` or ``*.hlo.txt`` by name
    (case-insensitive), or a ``*.txt`` regular file whose first line starts with
    ``HloModule`` (how XLA names its dumps, ``module_0001.jit_f.….txt``). Directories are
    never searched for HLO (discovery yields ``*.json``). Never blocks: a FIFO or a device
    named ``*.txt`` is not opened for reading (it is not HLO; reading it as a module then
    refuses it)."""
    p = os.fspath(path)
    low = p.lower()
    if low.endswith(HLO_SUFFIXES):
        return True
    return low.endswith(".txt") and _first_line(p).startswith(HLO_HEADER)


def _first_line(path: str) -> bytes:
    """The first line of a regular file (without a UTF-8 byte-order mark and surrounding
    blanks), at most 4 KiB; empty when it cannot be read or is no regular file."""
    try:
        fd, _size = _open_regular(path)
    except (OSError, InputError):
        return b""
    try:
        head = os.read(fd, 4096)
    except OSError:
        return b""
    finally:
        os.close(fd)
    return head.split(b"\n", 1)[0].removeprefix(b"\xef\xbb\xbf").strip()


def lower_input(
    path: str | os.PathLike[str], lnc: int | None = None, arch: str | None = None
) -> LoweredHlo:
    """An HLO input lowered to one symbolic module: a module XLA partitioned whole (contract
    §3.9; N its ``num_partitions`` unless ``lnc`` is given), any other by its LNC sharding
    constraints (§3.5; N = ``lnc``, else the arch's ``logical_nc_config``, 2 on gen3). The one
    place commands lower an input; ``LoweredHlo.notes`` say what was and was not lowered."""
    from lncsplit.frontend import canonical_arch
    from lncsplit.frontend.xla_dump import lower_hlo_input

    return lower_hlo_input(path, lnc, arch=canonical_arch(arch or "gen3"))


def path_arg(path: object, name: str = "path") -> str:
    """A path argument as ``str``: a ``str``, ``bytes`` (decoded as the OS names it,
    ``os.fsdecode``) or ``os.PathLike`` — what Python's own message for a wrong path says is
    taken; anything else is a ``TypeError`` naming the argument (contract §4)."""
    try:
        return os.fsdecode(os.fspath(path))  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(
            f"{name} must be a str, bytes or os.PathLike (a file path), got {type(path).__name__}"
        ) from None


def load(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> Module:
    """``lncsplit.load``: read a module file (a regular file only, contract §6).

    Read through :func:`with_input` (``Module.from_json`` parses the bytes
    with the GIL released). Errors keep their kind: a missing file, a
    directory or another OS failure is :class:`~lncsplit.errors.LncsplitIOError`
    with its ``errno``, also the matching ``OSError`` subclass
    (``FileNotFoundError``, ``IsADirectoryError``, …); a FIFO, socket or device
    is a ``LncsplitIOError`` saying it is not a regular file (never opened
    for reading, never blocking); bad JSON is a ``BirJsonError``. ``path`` is a
    ``str``, ``bytes`` or ``os.PathLike`` (:func:`path_arg`).
    """
    from lncsplit._core import Module
    from lncsplit.errors import LncsplitIOError

    p = path_arg(path)
    try:
        return with_input(p, Module.from_json)[0]
    except InputError as e:
        raise LncsplitIOError(str(e)) from None
    except LncsplitError:
        raise
    except OSError as e:
        raise LncsplitIOError(e.errno, e.strerror, e.filename) from None


def load_input(path: str, *, lnc: int | None = None, arch: str | None = None) -> Module:
    """How every command reads a module: an HLO input (:func:`is_hlo_input`) is lowered first
    (:func:`lower_input`, for N = ``lnc``, else the arch's default); any other file is
    ``Module.from_json`` of its bytes (regular files only, read into the thread's reused
    buffer)."""
    if is_hlo_input(path):
        return lower_input(path, lnc, arch).module()  # type: ignore[no-any-return]
    from lncsplit._core import Module

    return with_input(path, Module.from_json)[0]


__all__ = [
    "HLO_HEADER",
    "HLO_SUFFIXES",
    "KEEP_READ_BUFFER",
    "InputError",
    "file_kind",
    "input_stem",
    "is_hlo_input",
    "load",
    "load_input",
    "lower_input",
    "not_regular_message",
    "path_arg",
    "prefetch",
    "read_input",
    "strip_json",
    "with_input",
]
