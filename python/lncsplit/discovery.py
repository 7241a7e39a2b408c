"""Kept for this turn: discovery moved to :mod:`lncsplit.corpus.discovery`; this
module only re-exports it. Import from the new home."""

from __future__ import annotations

from lncsplit.corpus.discovery import (
    CoreSetError,
    InputConflictError,
    check_core_ids,
    core_set_unit,
    discover_units,
    error_unit,
    load_core_set,
)

__all__ = [
    "CoreSetError",
    "InputConflictError",
    "check_core_ids",
    "core_set_unit",
    "discover_units",
    "error_unit",
    "load_core_set",
]
