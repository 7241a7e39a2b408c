"""Pelican expressions: the affine index algebra of the Neuron compiler.

Every expression lives in a :class:`Context` (an arena with hash-consing):
structurally equal expressions are the same node, so ``a.id == b.id`` ⇔
``a == b``. Expressions of different contexts are never mixed (doing so raises
:class:`~lncsplit.errors.PelicanAssertion`).

Names:

- :class:`Context` — the arena; factories (``shard_id``, ``affine_iv``,
  ``aff_expr``, ``sum``, ``mult``, ``floordiv``, ``modulo``, ``ccdiv``, ...),
  :meth:`Context.from_json` (class *or* instance), ``intern_batch``.
- :class:`Expr` — one interned node: ``id``, ``kind``, ``kind_name``,
  ``children``, ``to_json``, ``eval``, ``update_shard_id``,
  ``is_legal_delinearized_address``, ``trip_count``/``infimum``/``supremum``.
- :class:`Predicate` — ``expr >= 0`` (``ge=True``) or ``expr == 0``.
- :func:`eval_mask`, :func:`eval_mask_batch` — an instruction's mask.

``Context.intern_batch(ops, a, b, c)`` row encoding (one node per row; a *ref*
is an existing id ``>= 0`` or an earlier row ``-(row + 1)``; AffExpr/Sum rows
are followed by ``a`` argument rows of op 0, whose result id is ``NO_ID``):

====  ===========  =====================  ========  ====================
op    node         a                      b         c
====  ===========  =====================  ========  ====================
0     argument     ref                    coeff     –
2     CCGetRank    iteration_id           channel   –
3     IndirectArg  arg_id                 –         –
12    SymbolicIdx  lo                     ub        step
13    ShardId      ub                     –         –
17    AffExpr      number of arg rows     –         constant
18    Sum          number of arg rows     –         –
23    Mult         ref                    scale     –
25    FloorDiv     ref                    denom     –
26    Modulo       ref                    denom     –
27    CCDiv        ref                    denom     replica_groups_id
28    CCMod        ref                    denom     replica_groups_id
====  ===========  =====================  ========  ====================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

from lncsplit import _core
from lncsplit._core import NO_ID, Expr, Predicate, eval_mask, eval_mask_batch

__all__ = [
    "NO_ID",
    "Context",
    "Expr",
    "Predicate",
    "eval_mask",
    "eval_mask_batch",
    "KIND_NAMES",
]

#: ExprKind code → name (neuronx-facts §1.2; OpaqueFn's 29 is lncsplit's choice).
KIND_NAMES: dict[int, str] = {
    2: "CCGetRank",
    3: "IndirectArg",
    6: "AffineIV",
    7: "IntRuntimeValue",
    9: "APIndex",
    10: "TiledAPIndex",
    12: "SymbolicIdx",
    13: "ShardId",
    17: "AffExpr",
    18: "Sum",
    20: "ICmp",
    23: "Mult",
    25: "FloorDiv",
    26: "Modulo",
    27: "CCDiv",
    28: "CCMod",
    29: "OpaqueFn",
}

_C = TypeVar("_C", bound="Context")
_FromJson = Callable[..., Expr]


class _FromJsonDescriptor(Generic[_C]):
    """``Context.from_json`` works on the class (a fresh context) and on an
    instance (reading into that context)."""

    @overload
    def __get__(self, obj: None, cls: type[_C]) -> Callable[..., Expr]: ...
    @overload
    def __get__(self, obj: _C, cls: type[_C] | None = None) -> Callable[..., Expr]: ...
    def __get__(self, obj: _C | None, cls: type[_C] | None = None) -> Callable[..., Expr]:
        if obj is not None:
            return obj._from_json
        assert cls is not None

        def from_json(
            obj_or_str: Any,
            version: int = 2,
            axes: Mapping[str, tuple[int, int, int]] | None = None,
        ) -> Expr:
            return cls()._from_json(obj_or_str, version, dict(axes) if axes is not None else None)

        from_json.__doc__ = Context._from_json.__doc__
        return from_json


class Context(_core.Context):
    """A pelican context: arena + interner of expressions.

    ``Context.from_json(obj_or_str, version=2, axes=None)`` reads one
    expression from a dict/list or a JSON ``str``/``bytes``. Called on the
    class it creates a fresh context; on an instance it reads into it.
    ``axes`` maps an ``AffIVKind`` axis name to ``(lo, ub, step)``; a name it
    does not list resolves to the context's latest axis of that name.
    """

    from_json: _FromJsonDescriptor[Context] = _FromJsonDescriptor()

    def intern_batch(
        self,
        ops: npt.ArrayLike,
        a: npt.ArrayLike,
        b: npt.ArrayLike,
        c: npt.ArrayLike,
    ) -> npt.NDArray[np.uint32]:
        """Intern one node per row (see the module docstring for the
        encoding); returns one id per row. The GIL is released."""
        return super().intern_batch(
            np.ascontiguousarray(ops, dtype=np.uint8),
            np.ascontiguousarray(a, dtype=np.int64),
            np.ascontiguousarray(b, dtype=np.int64),
            np.ascontiguousarray(c, dtype=np.int64),
        )
