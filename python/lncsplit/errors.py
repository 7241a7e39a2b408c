"""The lncsplit error family.

Every error lncsplit raises on bad input is a :class:`LncsplitError`. The
subclasses mirror the compiler's own failure kinds:

- :class:`PelicanAssertion` — a pelican expression check failed (exact compiler
  message in ``.message``, source location in ``.location``).
- :class:`NeuronAssertion` — a compiler assertion with its ErrorCode
  (``.code``), message and ``<file>.cpp:<line>`` location.
- :class:`BirJsonError` — malformed BIR-JSON; ``.path`` is the JSON path of the
  bad value (``$.functions[0].basic_blocks[1]...``).
- :class:`PelicanWireError` — a bad pelican expression on the wire: both a
  ``BirJsonError`` and a ``PelicanAssertion``.
- :class:`LncsplitIOError` — reading or writing a file failed; an ``OSError``
  with ``errno``, ``strerror`` and ``filename``, and also the ``OSError``
  subclass Python would raise for that errno (``except FileNotFoundError``
  catches a missing input).
"""

from __future__ import annotations

import os
from collections.abc import Sequence


class LncsplitError(Exception):
    """Base class of every error lncsplit raises on bad input."""


class PelicanAssertion(LncsplitError):
    """A pelican constructor or algebra check failed."""

    def __init__(self, message: str, location: str = "") -> None:
        self.message = message
        self.location = location
        super().__init__(message, location)

    def __str__(self) -> str:
        return f"Pelican exception: {self.message} at {self.location}"


class NeuronAssertion(LncsplitError):
    """A compiler assertion: ErrorCode, message and ``file.cpp:line``.

    ``message`` is the compiler's condition text (e.g.
    ``func0.getShardIds().size() == 1``); ``detail`` names the module, core,
    function or instruction involved.
    """

    def __init__(self, code: int, message: str, location: str = "", detail: str = "") -> None:
        self.code = code
        self.message = message
        self.location = location
        self.detail = detail
        super().__init__(code, message, location, detail)

    def __str__(self) -> str:
        tail = f" ({self.detail})" if self.detail else ""
        return f"NeuronAssertion {self.code}: {self.message} at {self.location}{tail}"


class BirJsonError(LncsplitError):
    """Malformed BIR-JSON, with the JSON path of the bad value."""

    def __init__(self, message: str, path: str = "$") -> None:
        self.message = message
        self.path = path if path.startswith("$") else "$" + path
        super().__init__(message, self.path)

    def __str__(self) -> str:
        return f"{self.message} (at {self.path})"


class PelicanWireError(BirJsonError, PelicanAssertion):
    """A bad pelican expression on the wire (both JSON and pelican error)."""

    def __init__(self, message: str, path: str = "$") -> None:
        BirJsonError.__init__(self, message, path)
        self.location = "QuasiAffineExpr.cpp"

    def __str__(self) -> str:
        return BirJsonError.__str__(self)


class LncsplitIOError(LncsplitError, OSError):
    """Reading or writing a module file failed.

    Built like ``OSError(errno, strerror, filename)``; for an errno Python maps
    to an ``OSError`` subclass (``ENOENT`` → ``FileNotFoundError``, …) the
    instance is the lncsplit class that is also that subclass
    (:class:`LncsplitFileNotFoundError`, …), as ``OSError(errno, …)`` itself
    does.
    """

    def __new__(cls, *args: object) -> LncsplitIOError:
        if cls is LncsplitIOError and len(args) >= 2 and isinstance(args[0], int):
            cls = _IO_SUBCLASSES.get(type(OSError(args[0], "")), cls)
        return super().__new__(cls, *args)


class LncsplitFileNotFoundError(LncsplitIOError, FileNotFoundError):
    """``ENOENT``: the file (or a directory on its path) does not exist."""


class LncsplitFileExistsError(LncsplitIOError, FileExistsError):
    """``EEXIST``."""


class LncsplitPermissionError(LncsplitIOError, PermissionError):
    """``EACCES``/``EPERM``."""


class LncsplitIsADirectoryError(LncsplitIOError, IsADirectoryError):
    """``EISDIR``: a directory where a module file was expected."""


class LncsplitNotADirectoryError(LncsplitIOError, NotADirectoryError):
    """``ENOTDIR``: a file where a directory was expected on the path."""


class LncsplitInterruptedError(LncsplitIOError, InterruptedError):
    """``EINTR``."""


class LncsplitBlockingIOError(LncsplitIOError, BlockingIOError):
    """``EAGAIN``."""


class LncsplitTimeoutError(LncsplitIOError, TimeoutError):
    """``ETIMEDOUT``."""


def os_error_message(e: OSError) -> str:
    """The one wording of a file that could not be read or written: ``PATH: no such file or
    directory`` (the path, then the system's reason in lower case, as ``cat`` and ``ls`` say
    it); ``str(e)`` when the error names no path."""
    if e.filename is None or not e.strerror:
        return str(e)
    reason = e.strerror[:1].lower() + e.strerror[1:]
    return f"{os.fsdecode(e.filename)}: {reason}"


def is_os_error_type(name: str) -> bool:
    """Whether ``name`` (an error's class name, as reports carry it) is an ``OSError``."""
    import builtins

    cls = getattr(builtins, name, None) or globals().get(name)
    return isinstance(cls, type) and issubclass(cls, OSError)


class InstructionNotFoundError(LncsplitError, LookupError):
    """No instruction of that name; ``.close`` lists close names (difflib).

    Raised by :func:`lncsplit.explain` and by the engine check's ``why``
    (:mod:`lncsplit.passes.enginecheck`)."""

    def __init__(self, name: str, module: str, close: Sequence[str]) -> None:
        self.name = name
        self.module = module
        self.close = list(close)
        hint = f"; close names: {', '.join(self.close)}" if self.close else "; no close name"
        super().__init__(f"no instruction named {name!r} in module {module}{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


#: The builtin ``OSError`` subclass of an errno → the lncsplit class that is also it.
_IO_SUBCLASSES: dict[type[OSError], type[LncsplitIOError]] = {
    FileNotFoundError: LncsplitFileNotFoundError,
    FileExistsError: LncsplitFileExistsError,
    PermissionError: LncsplitPermissionError,
    IsADirectoryError: LncsplitIsADirectoryError,
    NotADirectoryError: LncsplitNotADirectoryError,
    InterruptedError: LncsplitInterruptedError,
    BlockingIOError: LncsplitBlockingIOError,
    TimeoutError: LncsplitTimeoutError,
}


__all__ = [
    "BirJsonError",
    "InstructionNotFoundError",
    "LncsplitBlockingIOError",
    "LncsplitError",
    "LncsplitFileExistsError",
    "LncsplitFileNotFoundError",
    "LncsplitIOError",
    "LncsplitInterruptedError",
    "LncsplitIsADirectoryError",
    "LncsplitNotADirectoryError",
    "LncsplitPermissionError",
    "LncsplitTimeoutError",
    "NeuronAssertion",
    "PelicanAssertion",
    "PelicanWireError",
    "is_os_error_type",
    "os_error_message",
]
