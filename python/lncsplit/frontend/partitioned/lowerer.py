"""The walk: every instruction the ROOT needs, in HLO order, through its op's handler.

The ENTRY is lowered in text order (XLA prints operands before their users). Only what the
ROOT needs as data is lowered: an operand that is only a dynamic-slice start (a constant table,
``partition-id`` arithmetic) is read by :class:`StaticEval` instead. ``call`` and ``fusion``
inline their computation (a new :class:`Scope`). An opcode with no handler is a
:class:`LoweringError` naming it, the instruction and its line: nothing is skipped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lncsplit.arch import ArchGeometry

from ..hlo import HloInstruction
from ..lowering import LoweringError
from .builder import Builder
from .program import Program, where
from .scope import Op, Scope
from .static_eval import StaticEval
from .values import Buf, Value

__all__ = ["HANDLERS", "Handler", "Lowerer", "STATIC_OPERANDS"]

Handler = Callable[[Op], Value]

#: opcode → handler; filled by the op modules (see ``__init__``).
HANDLERS: dict[str, Handler] = {}

#: opcode → the first operand index from which operands are read statically (offsets).
STATIC_OPERANDS: dict[str, int] = {"dynamic-slice": 1, "dynamic-update-slice": 2}


def _needed(scope: Scope) -> set[str]:
    """Names the ROOT needs as data (operands read only as offsets are not)."""
    root = scope.comp.root
    if root is None:
        return set()
    needed = {root.name}
    for instr in reversed(scope.comp.instructions):
        if instr.name not in needed:
            continue
        first_static = STATIC_OPERANDS.get(instr.opcode, len(instr.operands))
        needed.update(instr.operands[:first_static])
    return needed


class Lowerer:
    """Lowers a :class:`Program` into a :class:`Builder`."""

    def __init__(self, program: Program, builder: Builder, geo: ArchGeometry) -> None:
        self.program = program
        self.builder = builder
        self.geo = geo
        self.n = program.n
        self.static = StaticEval(self.n)
        self._depth = 0

    def lower_scope(self, scope: Scope, params: Sequence[Value] | None = None) -> Value:
        """Lower ``scope``'s needed instructions; returns its ROOT's value."""
        root = scope.comp.root
        if root is None:
            raise LoweringError(f"computation %{scope.comp.name} has no instructions")
        needed = _needed(scope)
        for instr in scope.comp.instructions:
            if instr.name not in needed:
                continue
            if instr.opcode == "parameter":
                scope.values[instr.name] = self._parameter(scope, instr, params)
                continue
            handler = HANDLERS.get(instr.opcode)
            if handler is None:
                raise LoweringError(
                    f"{where(instr)}: {instr.opcode} is not an op lower_partitioned lowers "
                    f"(docs/frontend.md lists the ops): %{instr.name} = {instr.shape} "
                    f"{instr.opcode}(...) in %{scope.comp.name}"
                )
            self.builder.begin_op(scope.prefix + instr.name, where(instr))
            scope.values[instr.name] = handler(Op(self, scope, instr))
        return scope.values[root.name]

    @staticmethod
    def _parameter(scope: Scope, instr: HloInstruction, params: Sequence[Value] | None) -> Value:
        if params is None:
            raise LoweringError(f"{where(instr)}: a parameter of %{scope.comp.name}")
        k = int((instr.literal or "0").strip())
        if not 0 <= k < len(params):
            raise LoweringError(
                f"{where(instr)}: parameter({k}) of %{scope.comp.name}, called with "
                f"{len(params)} operand(s)"
            )
        return params[k]

    def inline(self, op: Op, computation: str) -> Value:
        """Lower ``computation`` with ``op``'s operands as its parameters."""
        comp = next((c for c in self.program.module.computations if c.name == computation), None)
        if comp is None:
            raise op.fail(f"calls %{computation}, which the module does not define")
        self._depth += 1
        if self._depth > 64:
            raise op.fail("calls nest more than 64 deep")
        try:
            scope = Scope(comp, f"{op.name}/", op.scope, list(op.instr.operands))
            return self.lower_scope(scope, [op.value(k) for k in range(len(op.instr.operands))])
        finally:
            self._depth -= 1


def leaves(value: Value) -> list[Buf]:
    """The arrays of a (possibly nested) tuple value, in order."""
    if isinstance(value, Buf):
        return [value]
    out: list[Buf] = []
    for v in value:
        out.extend(leaves(v))
    return out
