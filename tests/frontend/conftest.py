"""Shared set-up of the front-end tests: their helper modules live beside them.

The tests run against the installed ``lncsplit`` (never the source tree: a
spawned Dask worker inherits ``sys.path``, and the source tree has no compiled
``_core``).
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def core_available() -> bool:
    """True when the compiled ``lncsplit._core`` can be imported."""
    try:
        import lncsplit._core  # noqa: F401
    except ImportError:
        return False
    return True
