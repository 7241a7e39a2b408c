"""The LNC memory model (seed 002, contract §3.4).

SBUF and PSUM are replicated: every core of a Logical NeuronCore owns the
full per-core geometry of its arch (never 1/N). DRAM is a private window per
core plus one shared region, placed once on core 0 and address-equalized on
every other core.

- :func:`geometry` — the per-generation table (:mod:`lncsplit.arch`).
- :func:`allocate_shared_dram` (order 82) and :func:`sync_shared_allocations`
  (order 83) — the shared-DRAM passes.
- :func:`check_memory` — every check on concretized modules, as a
  :class:`MemoryReport` (never raises for violations).
- :func:`memory_maps` — where each allocation sits on each core (data).
- :func:`plot_memory` — the per-core memory maps and the summary chart (needs matplotlib);
  :func:`plot_report` — the summary chart alone.
"""

from __future__ import annotations

from lncsplit.arch import ArchGeometry, UnknownArchError, canonical_arch, geometry
from lncsplit.memory.checks import Rule, Violation
from lncsplit.memory.maps import CoreMap, Placement, memory_maps
from lncsplit.memory.plot import PlotUnavailableError, plot_memory, plot_report
from lncsplit.memory.report import (
    CoreUsage,
    MemoryCheckError,
    MemoryReport,
    check_collective_buffers,
    check_memory,
)
from lncsplit.memory.shared_dram import (
    SharedAllocationError,
    allocate_shared_dram,
    sync_shared_allocations,
)

__all__ = [
    "ArchGeometry",
    "CoreMap",
    "CoreUsage",
    "MemoryCheckError",
    "MemoryReport",
    "Placement",
    "PlotUnavailableError",
    "Rule",
    "SharedAllocationError",
    "UnknownArchError",
    "Violation",
    "allocate_shared_dram",
    "canonical_arch",
    "check_collective_buffers",
    "check_memory",
    "geometry",
    "memory_maps",
    "plot_memory",
    "plot_report",
    "sync_shared_allocations",
]
