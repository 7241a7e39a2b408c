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
"""

from __future__ import annotations


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
    """Reading or writing a module file failed."""


__all__ = [
    "BirJsonError",
    "LncsplitError",
    "LncsplitIOError",
    "NeuronAssertion",
    "PelicanAssertion",
    "PelicanWireError",
]
