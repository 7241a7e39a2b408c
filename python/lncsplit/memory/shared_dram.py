"""Shared DRAM: place once on core 0, point every other core at it, then sync.

Two passes of the compiler's shared-DRAM cluster (neuronx-facts §6.4):

- :func:`allocate_shared_dram` — pipeline order 82
  (``coloring_allocator_dram_shared``): each shared DRAM tensor is placed once,
  on core 0; every other core gets ``remote_local_target = {name, core: 0}``
  instead of its own allocation.
- :func:`sync_shared_allocations` — order 83: every location with a remote
  target copies ``addr``, ``bank`` and ``base`` from it, so all cores agree on
  one physical address (the concretized lnc_verifier's 1195/1196/1197).

Shared region (lncsplit's choice, documented in ``docs/memory.md``): the
shared tensors live in the DRAM *Shared* address space, separate from each
core's private (Local) window. On core 0, per module, they are bump-allocated
from :data:`SHARED_REGION_BASE` (0) in function order then allocation order,
each start aligned to :data:`SHARED_REGION_ALIGN` (64 bytes, the DMA
descriptor alignment), each tensor taking at least one aligned slot so no two
shared tensors share an address. A shared location already placed on core 0
(``allocated`` with an ``addr``) keeps its address and the bump pointer starts
past the highest such end.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from lncsplit._core import FunctionView, MemoryLocationSetView, MemoryLocationView, Module
from lncsplit.errors import LncsplitError
from lncsplit.memory.checks import tensor_bytes

logger = logging.getLogger("lncsplit.memory")

SHARED_REGION_BASE = 0
"""First byte of the shared region (in the Shared DRAM address space)."""
SHARED_REGION_ALIGN = 64
"""Alignment of every shared tensor's start address."""
OWNER_CORE = 0
"""The core that owns (allocates) every shared DRAM tensor."""


class SharedAllocationError(LncsplitError):
    """A shared DRAM location cannot be resolved to an allocated remote target."""

    def __init__(
        self,
        message: str,
        *,
        module: str | None = None,
        core: int | None = None,
        function: str | None = None,
        location: str | None = None,
    ) -> None:
        self.message = message
        self.module = module
        self.core = core
        self.function = function
        self.location = location
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def _core_of(module: Module, index: int) -> int:
    c = module.neuron_core_id
    return index if c is None else c


def _by_core(core_modules: Sequence[Module]) -> dict[int, Module]:
    out: dict[int, Module] = {}
    for i, m in enumerate(core_modules):
        out.setdefault(_core_of(m, i), m)
    return out


def is_shared_dram(s: MemoryLocationSetView, loc: MemoryLocationView) -> bool:
    """A shared DRAM tensor: a DRAM location whose set is Shared or already flagged."""
    return loc.type == "DRAM" and (
        (s.addr_space or "Local") == "Shared" or bool(loc.is_shared_post_dram_alloc)
    )


def _shared_locations(fn: FunctionView) -> list[tuple[MemoryLocationSetView, MemoryLocationView]]:
    return [(s, loc) for s in fn.allocations for loc in s.locations if is_shared_dram(s, loc)]


def allocate_shared_dram(core_modules: Sequence[Module], lnc: int) -> None:
    """Order 82: place each shared DRAM tensor once on core 0; remote-target it elsewhere.

    ``core_modules`` are the N per-core modules of one split module (core ``c``
    is the module whose ``neuron_core_id`` is ``c``; index ``c`` when unset).

    On core 0 every shared DRAM location gets ``addr`` (bump allocation in the
    shared region), ``allocated = True`` and ``is_shared_post_dram_alloc =
    True``. On every other core each gets ``is_shared_post_dram_alloc = True``
    and ``remote_local_target = {"name": <its own name>, "core": 0}`` and no
    address; the core logs ``Skipping shared tensor allocations on core <c>,
    marking as remoteLocalTarget instead`` once.
    """
    del lnc  # every core but 0 defers to core 0 whatever N is
    cores = _by_core(core_modules)
    owner = cores.get(OWNER_CORE)
    if owner is not None:
        _place_on_owner(owner)
    for core in sorted(cores):
        if core != OWNER_CORE:
            _defer_to_owner(core, cores[core])


def _place_on_owner(owner: Module) -> None:
    """Bump-allocate core 0's unplaced shared tensors past its already placed ones."""
    pending: list[tuple[MemoryLocationSetView, MemoryLocationView]] = []
    top = SHARED_REGION_BASE
    for fn in owner.functions:
        for s, loc in _shared_locations(fn):
            if loc.allocated and loc.addr is not None:
                top = max(top, loc.addr + max(tensor_bytes(s) or 0, 1))
                loc.is_shared_post_dram_alloc = True
            else:
                pending.append((s, loc))
    top = _align(top, SHARED_REGION_ALIGN)
    for s, loc in pending:
        nbytes = tensor_bytes(s) or 0
        loc.addr = top
        loc.allocated = True
        loc.is_shared_post_dram_alloc = True
        logger.debug(
            "Allocated shared tensor %s on core %d at address %#x (%d bytes)",
            loc.name,
            OWNER_CORE,
            top,
            nbytes,
        )
        top = _align(top + max(nbytes, 1), SHARED_REGION_ALIGN)


def _defer_to_owner(core: int, module: Module) -> None:
    """Point every shared tensor of ``core`` at core 0's (logged once per core)."""
    marked = False
    for fn in module.functions:
        for _s, loc in _shared_locations(fn):
            if not marked:
                logger.info(
                    "Skipping shared tensor allocations on core %d, "
                    "marking as remoteLocalTarget instead",
                    core,
                )
                marked = True
            loc.is_shared_post_dram_alloc = True
            loc.remote_local_target = {"name": loc.name, "core": OWNER_CORE}


class _TargetIndex:
    """Lazy per-(core, function) name → location maps, built once per sync."""

    def __init__(self, cores: dict[int, Module]) -> None:
        self.cores = cores
        self._fns: dict[int, dict[str, FunctionView]] = {}
        self._locs: dict[tuple[int, str], dict[str, MemoryLocationView]] = {}

    def function(self, core: int, name: str) -> FunctionView | None:
        if core not in self._fns:
            self._fns[core] = {}
            for fn in self.cores[core].functions:
                self._fns[core].setdefault(fn.name, fn)
        return self._fns[core].get(name)

    def location(self, core: int, fn: FunctionView, name: str) -> MemoryLocationView | None:
        key = (core, fn.name)
        if key not in self._locs:
            table: dict[str, MemoryLocationView] = {}
            for s in fn.allocations:
                for loc in s.locations:
                    table.setdefault(loc.name, loc)
            self._locs[key] = table
        return self._locs[key].get(name)


def sync_shared_allocations(core_modules: Sequence[Module], lnc: int) -> None:
    """Order 83: copy addr, bank and base from each shared location's remote target.

    Skipped when ``lnc == 1``. For every core, function and location with
    ``is_shared_post_dram_alloc`` and a ``remote_local_target`` {name, core}:
    resolve the target (the function of the same name on the module of core
    ``core``, the location by name), copy its ``addr``, ``bank`` and ``base``,
    set ``allocated`` and log ``Assigned memloc <m> to address <a> based on its
    remote local target <t>``.

    Raises :class:`SharedAllocationError` when a target core, function or
    location is missing or the target is not allocated, and when a shared
    location on a core other than 0 has neither a remote target nor an address
    of its own. (Core 0's own shared locations have no target: they are the
    targets, and an unallocated one is reported when a peer resolves to it.)

    The address is logged with Python's ``%#x`` (``0x0`` for zero; C's
    printf would print ``0``).
    """
    if lnc == 1:
        return
    cores = _by_core(core_modules)
    index = _TargetIndex(cores)
    for core in sorted(cores):
        module = cores[core]
        for fn in module.functions:
            for s in fn.allocations:
                for loc in s.locations:
                    if loc.is_shared_post_dram_alloc:
                        _sync_location(index, _Site(module, core, fn, loc))


@dataclass(frozen=True)
class _Site:
    """One shared location being synced, for its error messages."""

    module: Module
    core: int
    fn: FunctionView
    loc: MemoryLocationView

    @property
    def where(self) -> str:
        return (
            f"memloc {self.loc.name!r} of function {self.fn.name!r} in module "
            f"{self.module.name!r} (core {self.core})"
        )

    def error(self, message: str) -> SharedAllocationError:
        return SharedAllocationError(
            message,
            module=self.module.name,
            core=self.core,
            function=self.fn.name,
            location=self.loc.name,
        )


def _sync_location(index: _TargetIndex, site: _Site) -> None:
    """Copy addr, bank and base from the location's remote target (see above)."""
    loc = site.loc
    rlt = loc.remote_local_target
    if rlt is None:
        if site.core == OWNER_CORE or (loc.allocated and loc.addr is not None):
            return  # the owner's own placement (checked via its peers)
        raise site.error(f"Shared {site.where} has no remote local target and no allocation")
    tname = str(rlt.get("name"))
    target = _resolve_target(index, site, tname, rlt.get("core"))
    loc.addr = target.addr
    loc.bank = target.bank
    loc.base = target.base
    loc.allocated = True
    logger.info(
        "Assigned memloc %s to address %#x based on its remote local target %s",
        loc.name,
        target.addr,
        tname,
    )


def _resolve_target(
    index: _TargetIndex, site: _Site, tname: str, tcore_raw: object
) -> MemoryLocationView:
    """The allocated location ``tname`` of the same function on core ``tcore_raw``."""
    tcore = tcore_raw if isinstance(tcore_raw, int) else -1
    target_module = index.cores.get(tcore)
    if target_module is None:
        raise site.error(
            f"Remote local target {tname!r} of {site.where} names core {tcore_raw!r}, "
            f"which is not among the {len(index.cores)} core modules"
        )
    tfn = index.function(tcore, site.fn.name)
    target = index.location(tcore, tfn, tname) if tfn is not None else None
    if target is None:
        missing = f"function {site.fn.name!r}" if tfn is None else f"memloc {tname!r}"
        raise site.error(
            f"Remote local target {tname!r} of {site.where} not found: core {tcore} "
            f"module {target_module.name!r} has no {missing}"
        )
    if not target.allocated or target.addr is None:
        raise site.error(
            f"Remote local target {tname!r} on core {tcore} of {site.where} is not allocated"
        )
    return target


__all__ = [
    "OWNER_CORE",
    "SHARED_REGION_ALIGN",
    "SHARED_REGION_BASE",
    "SharedAllocationError",
    "allocate_shared_dram",
    "is_shared_dram",
    "sync_shared_allocations",
]
