"""The solver's question for one pair of accesses (contract §3.11), as the Rust sweep
writes it: a union of conjunctions of linear constraints over integers.

Output dims are ``[s1, s2, x, a_t…, b_t…]`` — the two symbolic cores (s1 < s2), the
common flat byte of the location, and the iteration of each side's loops; the other
variables (AP indices ``j``, the byte within an element ``r``, floor/mod quotients
``q``) are existential. The set is empty iff the pair cannot race; its lexicographic
minimum is the witness. :func:`isl_text` renders it in isl's syntax; the backends
(:mod:`.isl_backend`, and the test-only :mod:`.z3_backend`) answer the same three
questions of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Constraint:
    """``Σ coeff·var + k`` ``= 0`` (``eq``) or ``≥ 0``."""

    terms: tuple[tuple[str, int], ...]
    k: int
    eq: bool

    @staticmethod
    def from_json(d: dict[str, Any]) -> Constraint:
        return Constraint(tuple((str(v), int(c)) for v, c in d["t"]), int(d["k"]), bool(d["eq"]))

    def text(self) -> str:
        """The constraint in isl's syntax (``3*s1 - a_t0 + 5 >= 0``)."""
        parts: list[str] = []
        for v, c in self.terms:
            if c == 0:
                continue
            mag = "" if abs(c) == 1 else f"{abs(c)}*"
            sign = "-" if c < 0 else "+"
            parts.append(f"{sign} {mag}{v}" if parts else f"{'-' if c < 0 else ''}{mag}{v}")
        if self.k or not parts:
            parts.append(f"{'-' if self.k < 0 else '+'} {abs(self.k)}" if parts else str(self.k))
        return f"{' '.join(parts)} {'=' if self.eq else '>='} 0"


@dataclass(frozen=True)
class Query:
    """One pair's integer set: ``base ∧ (piece₁ ∨ piece₂ ∨ …)``."""

    dims: tuple[str, ...]
    exists: tuple[str, ...]
    base: tuple[Constraint, ...]
    pieces: tuple[tuple[Constraint, ...], ...]

    @staticmethod
    def from_json(d: dict[str, Any]) -> Query:
        return Query(
            tuple(d["dims"]),
            tuple(d["exists"]),
            tuple(Constraint.from_json(c) for c in d["base"]),
            tuple(tuple(Constraint.from_json(c) for c in p) for p in d["pieces"]),
        )


def _conj(cs: Sequence[Constraint]) -> str:
    return " and ".join(c.text() for c in cs) if cs else "true"


def isl_text(q: Query, extra: Sequence[Constraint] = ()) -> str:
    """The set in isl's notation (also the ``detail`` of an ``empty-set`` proof)."""
    body = _conj([*q.base, *extra])
    if q.pieces:
        body += " and (" + " or ".join(f"({_conj(p)})" for p in q.pieces) + ")"
    inner = f"exists ({', '.join(q.exists)} : {body})" if q.exists else body
    return f"{{ [{', '.join(q.dims)}] : {inner} }}"


@dataclass(frozen=True)
class Answer:
    """What a backend says of one query: empty, or the least s2 and the lexmin point
    under ``s2 ≤ bound``."""

    empty: bool
    s2_min: int | None = None
    point: tuple[int, ...] | None = None


class Backend(Protocol):
    """An exact integer-set solver."""

    name: str

    def is_empty(self, q: Query) -> bool: ...

    def least_s2(self, q: Query) -> int: ...

    def lexmin(self, q: Query, s2_max: int) -> tuple[int, ...]: ...


def s2_at_most(bound: int) -> Constraint:
    """``s2 ≤ bound``."""
    return Constraint((("s2", -1),), bound, False)


def solve(backend: Backend, q: Query, bound_for: Any) -> Answer:
    """Empty, or the least s2 and — with ``bound_for(s2_min)`` giving the witness N's
    greatest core (None: no valid N) — the lexmin point of ``[s1, s2, x, a_t…, b_t…]``."""
    if backend.is_empty(q):
        return Answer(True)
    s2 = backend.least_s2(q)
    bound = bound_for(s2)
    if bound is None:
        return Answer(False, s2, None)
    return Answer(False, s2, backend.lexmin(q, bound))
