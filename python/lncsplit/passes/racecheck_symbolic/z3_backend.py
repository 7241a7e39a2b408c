"""z3 answers the same queries as isl: the test-only second opinion (contract §3.11;
``benches/report.py`` compares the two). ``z3-solver`` is a test extra, not a
dependency of the package: importing this module without it raises ImportError.

Emptiness is ``unsat`` of the conjunction; the least s2 and the witness are z3's
``Optimize`` with lexicographic objectives (s1, s2, x, then the iterations).
"""

from __future__ import annotations

from typing import Any

import z3  # type: ignore[import-untyped]  # z3-solver ships no stubs

from lncsplit.passes.racecheck_symbolic.query import Constraint, Query, s2_at_most


def _formula(q: Query, extra: list[Constraint]) -> tuple[dict[str, Any], Any]:
    names = [*q.dims, *q.exists]
    v = {n: z3.Int(n) for n in names}

    def con(c: Constraint) -> Any:
        e = z3.Sum([coef * v[name] for name, coef in c.terms]) + c.k if c.terms else z3.IntVal(c.k)
        return e == 0 if c.eq else e >= 0

    body = [con(c) for c in [*q.base, *extra]]
    if q.pieces:
        body.append(
            z3.Or([z3.And([con(c) for c in p]) if p else z3.BoolVal(True) for p in q.pieces])
        )
    return v, z3.And(body)


class Z3Backend:
    """The second opinion: z3's integer arithmetic, exact like isl."""

    name = "z3"

    def is_empty(self, q: Query) -> bool:
        _, f = _formula(q, [])
        s = z3.Solver()
        s.add(f)
        r = s.check()
        if r == z3.unknown:
            raise RuntimeError(f"z3 could not decide the query: {s.reason_unknown()}")
        return bool(r == z3.unsat)

    def _lexmin(self, q: Query, extra: list[Constraint], order: list[str]) -> tuple[int, ...]:
        v, f = _formula(q, extra)
        o = z3.Optimize()
        o.set(priority="lex")
        o.add(f)
        for name in order:
            o.minimize(v[name])
        if o.check() != z3.sat:
            raise RuntimeError("z3 found no minimum of a non-empty query")
        m = o.model()
        return tuple(int(m.eval(v[n], model_completion=True).as_long()) for n in q.dims)

    def least_s2(self, q: Query) -> int:
        return self._lexmin(q, [], ["s2"])[1]

    def lexmin(self, q: Query, s2_max: int) -> tuple[int, ...]:
        return self._lexmin(q, [s2_at_most(s2_max)], list(q.dims))
