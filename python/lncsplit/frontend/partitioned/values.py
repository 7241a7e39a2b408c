"""What an HLO value is once lowered: a row-major array in a DRAM set (or a tuple of them).

Every array value lives in one DRAM memory location set, row-major from element 0 (contract
§3.9: layouts are ignored, every array is logical row-major). Values are immutable (HLO is SSA),
so a value that only renames the shape of another — reshape, copy, a default-layout bitcast, a
same-type convert — is the same buffer seen with other dims: :class:`Buf` is (set, dims, type),
and two of them may share a set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeAlias

from .builder import BIR_DTYPES, Access, Offset

__all__ = ["Buf", "Value", "full_pattern", "row_major_strides"]


def row_major_strides(dims: tuple[int, ...]) -> list[int]:
    """Element strides of a row-major array of ``dims``."""
    return [math.prod(dims[d + 1 :]) for d in range(len(dims))]


def full_pattern(dims: tuple[int, ...]) -> list[tuple[int, int]]:
    """The AP that walks a whole row-major array of ``dims`` in order."""
    if not dims:
        return [(1, 1)]
    return list(zip(row_major_strides(dims), dims, strict=True))


@dataclass(frozen=True)
class Buf:
    """An array value: DRAM set ``set`` holds it row-major; ``ty`` is the HLO element type."""

    set: str
    dims: tuple[int, ...]
    ty: str

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def dtype(self) -> str:
        """The BIR dtype (pred → uint8)."""
        return BIR_DTYPES[self.ty]

    @property
    def strides(self) -> list[int]:
        return row_major_strides(self.dims)

    def access(self, pattern: list[tuple[int, int]], element: Offset = 0) -> Access:
        """An AP over the buffer: ``pattern`` from flat element ``element``."""
        return Access(self.set, self.dtype, tuple(pattern), 0, element)

    def whole(self) -> Access:
        """The AP of the whole array, in row-major order."""
        return self.access(full_pattern(self.dims))

    def flat(self, start: int, count: int) -> Access:
        """``count`` consecutive elements from ``start``."""
        return self.access([(1, count)], start)


Value: TypeAlias = Buf | tuple["Value", ...]
