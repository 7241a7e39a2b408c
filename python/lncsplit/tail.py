"""Kept for this turn: the tail passes (80, 81) moved to :mod:`lncsplit.passes.tail`;
this module only re-exports them (their log keeps the logger ``lncsplit.tail``).
Import from the new home, or use :func:`lncsplit.lower_local_collectives` and
:func:`lncsplit.extend_shared_lifetimes`."""

from __future__ import annotations

from lncsplit.passes.tail import RENUMBER_LOG, extend_shared_lifetimes, lower_local_collectives

__all__ = ["RENUMBER_LOG", "extend_shared_lifetimes", "lower_local_collectives"]
