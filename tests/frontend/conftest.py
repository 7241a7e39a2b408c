"""Make ``lncsplit.frontend`` importable even when the compiled ``lncsplit._core`` is missing.

``python/lncsplit/__init__.py`` imports the Rust extension; when that import fails (not built
yet), a bare ``lncsplit`` package pointing at ``python/lncsplit`` is registered so the pure-Python
``lncsplit.frontend`` still loads.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

_PY = Path(__file__).resolve().parents[2] / "python"
for _p in (_PY, Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def _ensure_lncsplit_package() -> None:
    try:
        import lncsplit  # noqa: F401

        return
    except ImportError:
        pass
    for name in [m for m in sys.modules if m == "lncsplit" or m.startswith("lncsplit.")]:
        del sys.modules[name]
    pkg = types.ModuleType("lncsplit")
    pkg.__path__ = [str(_PY / "lncsplit")]
    pkg.__package__ = "lncsplit"
    sys.modules["lncsplit"] = pkg


_ensure_lncsplit_package()


def core_available() -> bool:
    """True when the compiled ``lncsplit._core`` can be imported."""
    try:
        import lncsplit._core  # noqa: F401
    except ImportError:
        return False
    return True
