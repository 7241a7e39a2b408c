"""isl (through islpy) answers the symbolic race checker's queries — the default backend
(contract §3.11: integer sets are decided with isl).

Each query is parsed once as an isl set; emptiness is ``is_empty``, the least s2 the
lexicographic minimum of the set with s1 projected out, the witness the lexicographic
minimum of the set cut at ``s2 ≤ bound``.
"""

from __future__ import annotations

import islpy as isl

from lncsplit.passes.racecheck_symbolic.query import Query, isl_text, s2_at_most


def _point(s: isl.Set) -> tuple[int, ...]:
    p = s.lexmin().sample_point()
    n = p.get_space().dim(isl.dim_type.set)
    return tuple(int(p.get_coordinate_val(isl.dim_type.set, i).to_python()) for i in range(n))


class IslBackend:
    """The default backend: one ``isl.Context``; the set of the query last asked about is
    kept, since :func:`~.query.solve` asks up to three questions of one query in a row."""

    name = "isl"

    def __init__(self) -> None:
        self.ctx = isl.Context()
        self._last: tuple[Query, isl.Set] | None = None

    def _set(self, q: Query) -> isl.Set:
        # Compared by value, not id(): a freed query's id is reused by the next one.
        if self._last is not None and (self._last[0] is q or self._last[0] == q):
            return self._last[1]
        s = isl.Set.read_from_str(self.ctx, isl_text(q))
        self._last = (q, s)
        return s

    def is_empty(self, q: Query) -> bool:
        return bool(self._set(q).is_empty())

    def least_s2(self, q: Query) -> int:
        projected = self._set(q).project_out(isl.dim_type.set, 0, 1)
        return _point(projected)[0]

    def lexmin(self, q: Query, s2_max: int) -> tuple[int, ...]:
        cut = isl.Set.read_from_str(self.ctx, isl_text(q, [s2_at_most(s2_max)]))
        return _point(cut)
