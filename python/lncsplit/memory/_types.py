"""Structural types of the module views the memory model reads.

The memory model is pure Python over the Rust module's views
(``lncsplit.Module`` and friends). It is written against these protocols so it
also runs over any object with the same attribute names (the test fakes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class LocationLike(Protocol):
    """A memory location (``MemoryLocationView``): one physical placement."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def set_name(self) -> str: ...
    @property
    def written_by_another_core(self) -> bool | None: ...

    addr: int | None
    bank: int | None
    base: int | None
    allocated: bool | None
    is_shared_post_dram_alloc: bool | None
    remote_local_target: dict[str, Any] | None


class LocationSetLike(Protocol):
    """A memory location set (``MemoryLocationSetView``): a logical tensor."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str | None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def tensor_shape(self) -> Sequence[int]: ...
    @property
    def partition_dim(self) -> int | None: ...
    @property
    def addr_space(self) -> str | None: ...
    @property
    def partitions(self) -> int: ...
    @property
    def bytes_per_partition(self) -> int | None: ...
    @property
    def locations(self) -> Sequence[LocationLike]: ...


class ArgumentLike(Protocol):
    """An instruction argument (``ArgumentView``)."""

    @property
    def kind(self) -> str: ...
    @property
    def memsetref(self) -> str | None: ...
    @property
    def memref(self) -> str | None: ...


class InstructionLike(Protocol):
    """An instruction (``InstructionView``)."""

    @property
    def name(self) -> str: ...
    @property
    def opcode(self) -> str: ...
    @property
    def ins(self) -> Sequence[ArgumentLike]: ...
    @property
    def outs(self) -> Sequence[ArgumentLike]: ...


class FunctionLike(Protocol):
    """A function (``FunctionView``)."""

    @property
    def name(self) -> str: ...
    @property
    def allocations(self) -> Sequence[LocationSetLike]: ...
    def instructions(self, opcodes: Sequence[str] | None = None) -> Sequence[InstructionLike]: ...

    def accesses(
        self, opcodes: Sequence[str]
    ) -> Sequence[tuple[str, str, str | None, str | None, list[str]]]: ...

    def moved_bytes_per_partition(
        self, opcodes: Sequence[str]
    ) -> Sequence[tuple[str, str, str, int]]: ...


class ModuleLike(Protocol):
    """A module (``lncsplit.Module``)."""

    @property
    def name(self) -> str: ...
    @property
    def neuron_core_id(self) -> int | None: ...
    @property
    def arch(self) -> str: ...
    @property
    def functions(self) -> Sequence[FunctionLike]: ...


__all__ = [
    "ArgumentLike",
    "FunctionLike",
    "InstructionLike",
    "LocationLike",
    "LocationSetLike",
    "ModuleLike",
]
