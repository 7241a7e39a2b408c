"""Kept for this turn: bir_linker's wrapper moved to :mod:`lncsplit.passes.linker`; this
module only re-exports it. Import from the new home, or use :func:`lncsplit.link`,
:func:`lncsplit.unlink` and :func:`lncsplit.tensor_map`."""

from __future__ import annotations

from lncsplit.passes.linker import (
    describe_linked,
    is_linked,
    link,
    link_kernels,
    tensor_map,
    unlink,
)

__all__ = ["describe_linked", "is_linked", "link", "link_kernels", "tensor_map", "unlink"]
