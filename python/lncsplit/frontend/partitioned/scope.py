"""One computation being lowered, and the context a handler lowers one instruction in.

A :class:`Scope` is a computation with its values: the ENTRY, or a computation a ``call`` or
``fusion`` inlines (its parameters are the caller's operands; what it emits is named
``<caller prefix><call name>/…``). An :class:`Op` is what an op handler gets: the instruction,
its operands' values, the builder, and ``fail`` — a :class:`LoweringError` naming the opcode,
the HLO instruction and its line (contract §3.9).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..hlo import HloComputation, HloInstruction
from ..lowering import LoweringError
from .builder import BIR_DTYPES, Builder
from .program import where
from .values import Buf, Value

if TYPE_CHECKING:
    from .lowerer import Lowerer

__all__ = ["Op", "Scope"]


@dataclass(eq=False)
class Scope:
    """A computation being lowered."""

    comp: HloComputation
    prefix: str
    caller: Scope | None = None
    args: list[str] = field(default_factory=list)
    values: dict[str, Value] = field(default_factory=dict)
    by_name: dict[str, HloInstruction] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {i.name: i for i in self.comp.instructions}

    def instruction(self, name: str) -> HloInstruction:
        try:
            return self.by_name[name]
        except KeyError:
            raise LoweringError(
                f"%{name} is used in computation %{self.comp.name} but not defined there"
            ) from None

    def parameter_ref(self, instr: HloInstruction) -> tuple[Scope, str] | None:
        """The caller's operand a parameter of an inlined computation stands for (None in the
        ENTRY: a parameter there is program input)."""
        if self.caller is None:
            return None
        k = int((instr.literal or "0").strip())
        if not 0 <= k < len(self.args):
            raise LoweringError(
                f"{where(instr)}: parameter({k}) of %{self.comp.name}, called with "
                f"{len(self.args)} operand(s)"
            )
        return self.caller, self.args[k]


@dataclass(eq=False)
class Op:
    """One HLO instruction being lowered."""

    lowerer: Lowerer
    scope: Scope
    instr: HloInstruction

    @property
    def b(self) -> Builder:
        return self.lowerer.builder

    @property
    def n(self) -> int:
        return self.lowerer.n

    @property
    def name(self) -> str:
        """The name what it emits starts with (the scope's prefix and the HLO name)."""
        return self.scope.prefix + self.instr.name

    @property
    def attrs(self) -> dict[str, str]:
        return self.instr.attributes

    def fail(self, message: str) -> LoweringError:
        """``%name (line L): <opcode>: message``."""
        return LoweringError(f"{where(self.instr)}: {self.instr.opcode}: {message}")

    def attr(self, key: str) -> str:
        v = self.instr.attributes.get(key)
        if v is None:
            raise self.fail(f"no {key}= attribute")
        return v

    def value(self, k: int) -> Value:
        name = self.instr.operands[k]
        try:
            return self.scope.values[name]
        except KeyError:
            raise self.fail(f"operand %{name} has no value (used before it is defined)") from None

    def buf(self, k: int) -> Buf:
        v = self.value(k)
        if not isinstance(v, Buf):
            raise self.fail(f"operand {k} (%{self.instr.operands[k]}) is a tuple, not an array")
        return v

    def bufs(self) -> list[Buf]:
        return [self.buf(k) for k in range(len(self.instr.operands))]

    def static(self, k: int) -> Any:
        """Operand k's per-core value when it is known before the run (else None)."""
        return self.lowerer.static.value(self.scope, self.instr.operands[k])

    @property
    def dims(self) -> tuple[int, ...]:
        return self.instr.shape.dims

    @property
    def ty(self) -> str:
        ty = self.instr.shape.dtype
        if self.instr.shape.is_tuple:
            raise self.fail("a tuple-shaped result where an array is needed")
        if ty not in BIR_DTYPES:
            raise self.fail(f"element type {ty!r} has no BIR dtype")
        return ty

    def result(self, dims: tuple[int, ...] | None = None, ty: str | None = None) -> Buf:
        """A fresh private DRAM buffer for the result (or for ``dims``/``ty``)."""
        d = self.dims if dims is None else dims
        t = self.ty if ty is None else ty
        return Buf(self.b.dram(self.name, BIR_DTYPES[t], d), d, t)

    def scratch(self, step: str, dims: tuple[int, ...], ty: str) -> Buf:
        """A private DRAM buffer for an intermediate of this op."""
        return Buf(self.b.dram(f"{self.name}.{step}", BIR_DTYPES[ty], dims), dims, ty)

    def const(self, step: str, values: np.ndarray, ty: str) -> Buf:
        """A ``Const`` set holding ``values`` (row-major)."""
        dims = tuple(values.shape)
        name = self.b.const(
            f"{self.name}.{step}" if step else self.name, BIR_DTYPES[ty], dims, values
        )
        return Buf(name, dims, ty)
