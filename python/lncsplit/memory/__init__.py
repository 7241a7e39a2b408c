"""The LNC memory model (seed 002, contract §3.4).

SBUF and PSUM are replicated: every core of a Logical NeuronCore owns the
full per-core geometry of its arch (never 1/N). DRAM is a private window per
core plus one shared region, placed once on core 0 and address-equalized on
every other core.

- :func:`geometry` — the per-generation table (:mod:`lncsplit.memory.arch`).
- :func:`allocate_shared_dram` (order 82) and :func:`sync_shared_allocations`
  (order 83) — the shared-DRAM passes.
- :func:`check_memory` — every check on concretized modules, as a
  :class:`MemoryReport` (never raises for violations).
- :func:`plot_report` — a per-core bar chart (needs matplotlib).
"""

from __future__ import annotations

from lncsplit.memory.arch import ArchGeometry, UnknownArchError, canonical_arch, geometry
from lncsplit.memory.checks import Rule, Violation
from lncsplit.memory.plot import PlotUnavailableError, plot_report
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
    "CoreUsage",
    "MemoryCheckError",
    "MemoryReport",
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
    "plot_report",
    "sync_shared_allocations",
]
