"""View tests (explain, diff, memory maps, HTML report, lower): make ``views_helpers``
importable and export its fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from views_helpers import split_example_dirs  # noqa: E402, F401
