"""Make ``lncsplit`` importable from the source tree when it is not installed."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:
    import lncsplit  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, os.path.join(_HERE, "..", "..", "python"))
