"""CLI / corpus tests: make ``cli_helpers`` importable and export its fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from cli_helpers import corpus, corrupt_corpus  # noqa: E402,F401
