"""SBUF tiles: how an array is cut into pieces the compute engines take (contract §3.9).

Compute engines read and write SBUF/PSUM only, at most 128 partitions at a time. An
elementwise op does not care how its elements are arranged, so its operands are cut *flat*:
element e of every operand and of the result is element e of the same piece. A piece is
``rows`` × ``cols`` consecutive elements (rows ≤ 128 partitions of ``cols`` elements), so its
DRAM side is the two-level AP ``[[cols, rows], [1, cols]]`` and its SBUF side the tile's first
``rows`` partitions. ``cols`` is chosen so the array fills the partitions (``ceil(E / 128)``)
and so every tile an op holds at once fits the SBUF (:func:`free_limit`).
"""

from __future__ import annotations

from dataclasses import dataclass

from lncsplit.arch import ArchGeometry

from .builder import Access, Builder

__all__ = ["MAX_PARTITIONS", "Piece", "Tile", "flat_pieces", "free_limit", "tile_cols"]

#: Partitions an engine instruction spans (SBUF has 128 on every arch).
MAX_PARTITIONS = 128
#: Elements per partition of one tile at most (a DMA of 8 KiB per partition for float32).
MAX_COLS = 2048


def free_limit(geo: ArchGeometry, tiles: int, elem_bytes: int = 8) -> int:
    """The largest tile width (a power of two ≤ :data:`MAX_COLS`) with which ``tiles`` tiles of
    ``elem_bytes`` elements fit beside each other in one partition of the SBUF."""
    budget = (geo.sb_size - geo.sb_reserved) // max(1, tiles)
    cols = MAX_COLS
    while cols > 1 and cols * elem_bytes > budget:
        cols //= 2
    return cols


def tile_cols(total: int, limit: int) -> int:
    """Columns per partition for a flat array of ``total`` elements."""
    return max(1, min(limit, -(-total // MAX_PARTITIONS)))


@dataclass(frozen=True)
class Piece:
    """``rows`` × ``cols`` consecutive elements from flat element ``start``."""

    start: int
    rows: int
    cols: int

    @property
    def count(self) -> int:
        return self.rows * self.cols

    def dram(self) -> list[tuple[int, int]]:
        """Its AP over a row-major DRAM buffer (from ``start``)."""
        return [(self.cols, self.rows), (1, self.cols)]


def flat_pieces(total: int, cols: int) -> list[Piece]:
    """Cut ``total`` elements into pieces of up to 128 × ``cols`` (a last short row on its own)."""
    out: list[Piece] = []
    cap = MAX_PARTITIONS * cols
    for start in range(0, total, cap):
        left = min(cap, total - start)
        rows, rest = divmod(left, cols)
        if rows:
            out.append(Piece(start, rows, cols))
        if rest:
            out.append(Piece(start + rows * cols, 1, rest))
    return out


@dataclass(frozen=True)
class Tile:
    """An SBUF tile set of ``partitions`` × ``cols`` elements of ``dtype``."""

    set: str
    dtype: str
    partitions: int
    cols: int

    @classmethod
    def new(cls, b: Builder, base: str, dtype: str, partitions: int, cols: int) -> Tile:
        return cls(b.sb(base, dtype, partitions, cols), dtype, partitions, cols)

    def ap(self, rows: int, cols: int, partition: int = 0, element: int = 0) -> Access:
        """The first ``rows`` partitions × ``cols`` elements (from ``partition``/``element``)."""
        return Access(self.set, self.dtype, ((self.cols, rows), (1, cols)), partition, element)

    def piece(self, p: Piece) -> Access:
        return self.ap(p.rows, p.cols)
